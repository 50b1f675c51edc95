# rulegen developer tasks. `make help` lists them.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# pytest processes `make test-fast` runs side by side, one per core (FAST_JOBS=1: one process)
FAST_JOBS ?= 2

.PHONY: help install build check test test-fast lint fmt typecheck update-golden check-rules schema ci

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

$(BIN)/rulegen: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	@touch $@

install: $(BIN)/rulegen ## create the venv and install rulegen with its dev tools

build: install ## build specs/ into rules/ (render + promtool check + promtool test)
	$(BIN)/rulegen build

check: install ## fail when the committed rules/ is stale
	$(BIN)/rulegen build --check

test: install ## the whole test suite (needs promtool: apt-get install prometheus)
	$(BIN)/pytest -q

test-fast: install ## the tests not marked slow (no promtool, no servers), FAST_JOBS=2 at once
	@status=0; logs=""; pids=""; \
	for i in $$(seq 2 $(FAST_JOBS)); do \
	  log=$$(mktemp); logs="$$logs $$log"; \
	  $(BIN)/pytest -q -m "not slow" --shard $$i/$(FAST_JOBS) >$$log 2>&1 & pids="$$pids $$!"; \
	done; \
	$(BIN)/pytest -q -m "not slow" --shard 1/$(FAST_JOBS) || status=1; \
	for pid in $$pids; do wait $$pid || status=1; done; \
	for log in $$logs; do cat $$log; rm -f $$log; done; \
	exit $$status

lint: install ## ruff + mypy --strict
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy

fmt: install ## format the code
	$(BIN)/ruff format src tests benchmarks
	$(BIN)/ruff check --fix src tests benchmarks

typecheck: install ## mypy --strict
	$(BIN)/mypy

update-golden: install ## rewrite tests/golden/*/expected from the current output
	$(BIN)/pytest -q tests/output/test_golden.py --update-golden

check-rules: ## promtool check + test on the committed rules/
	promtool check rules rules/prometheus/*.yml
	cd rules && promtool test rules tests/*.yml

schema: install ## regenerate schema/rulegen.schema.json
	@mkdir -p schema
	$(BIN)/rulegen schema > schema/rulegen.schema.json

ci: lint check test ## everything CI checks
