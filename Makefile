# rulegen developer tasks. `make help` lists them.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# pytest processes `make test` and `make test-fast` run side by side, one per core (JOBS=1:
# one process); each runs whole test files, shared out by cost (tests/support/shards.py)
JOBS      ?= 2
FAST_JOBS ?= $(JOBS)

# pytest in $(1) processes side by side (--shard i/$(1)) with the arguments $(2): the first
# prints as it goes, the others' output follows. First the package is compiled to bytecode
# once (PYTHONDONTWRITEBYTECODE=1 environments otherwise compile it in every `rulegen`
# process the tests start; nothing is done when it is up to date).
define run_shards
	-@$(BIN)/python -m compileall -q src
	@status=0; logs=""; pids=""; \
	trap 'kill $$pids 2>/dev/null; exit 130' INT TERM; \
	for i in $$(seq 2 $(1)); do \
	  log=$$(mktemp); logs="$$logs $$log"; \
	  $(BIN)/pytest -q $(2) --shard $$i/$(1) >$$log 2>&1 & pids="$$pids $$!"; \
	done; \
	$(BIN)/pytest -q $(2) --shard 1/$(1) || status=1; \
	for pid in $$pids; do wait $$pid || status=1; done; \
	for log in $$logs; do cat $$log; rm -f $$log; done; \
	exit $$status
endef

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

test: install ## the whole test suite, JOBS=2 processes at once (needs promtool: apt-get install prometheus)
	$(call run_shards,$(JOBS),)

test-fast: install ## the tests not marked slow (no promtool, no servers), FAST_JOBS=2 at once
	$(call run_shards,$(FAST_JOBS),-m "not slow")

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

schema: install ## regenerate schema/*.schema.json (spec, routing and defaults files)
	@mkdir -p schema
	$(BIN)/rulegen schema > schema/rulegen.schema.json
	$(BIN)/rulegen schema --kind routing > schema/routing.schema.json
	$(BIN)/rulegen schema --kind defaults > schema/defaults.schema.json

ci: lint check test ## everything CI checks
