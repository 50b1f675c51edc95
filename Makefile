# rulegen developer tasks. `make help` lists them.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# pytest processes `make test` runs side by side (JOBS=1: one process): three on the 2-core
# machine, because about a third of the slow suite's wall time is spent waiting on servers
# (vmalert's replay delays, Alertmanager's group_wait, Prometheus starting), so a third process
# fills the core a waiting one leaves idle (JOBS=3: test-current 9 min, JOBS=2: 13-14 min,
# docs/dev/performance.md). Each runs whole test files, shared out by cost
# (tests/support/shards.py). `make test-fast` (CPU only, no waiting) runs one per core.
JOBS      ?= 3
FAST_JOBS ?= 2
# The tool stacks the suite runs on (docs/compatibility.md): the current one, Debian testing's
# Prometheus 3.5 LTS / Alertmanager 0.33 / VictoriaMetrics 1.145, fetched by .ci/fetch-stack
# into .tools/forky (never installed over the system's), first on PATH for `make build` and
# `make test-current`; and the system's (Debian bookworm: Prometheus 2.42), for `make
# test-bookworm`, with the specs the tests write declaring prometheus.version 2.42.
STACK     ?= forky
STACK_BIN := $(CURDIR)/.tools/$(STACK)/root/usr/bin
CURRENT   := PATH="$(STACK_BIN):$$PATH" RULEGEN_TEST_STACK=$(STACK)
# (the system stack: the 3.5 tools taken off PATH, should a shell have put them first)
BOOKWORM  := PATH="$(subst $(STACK_BIN):,,$(PATH))" RULEGEN_TEST_STACK=system RULEGEN_TEST_PROMETHEUS=2.42
# What the 2.x run proves again: every generated test's timing and mutation suite under closed
# ranges, the hand-written signal tests, the real servers (Prometheus, Alertmanager,
# VictoriaMetrics; the disk alerts on this host's own disk under fio, scraped from a real
# node_exporter: the system's when installed, else the one `make tools` fetched), the version
# checks. (The example's own build, the golden files and the committed rules/ declare 3.5:
# the 3.5 run checks them.)
BOOKWORM_TESTS := tests/alerts/test_generated_tests_catch_mutations.py \
  tests/alerts/test_signals_promtool.py tests/alerts/test_disk_alerts_real_host.py \
  tests/alerts/test_vllm_releases_prometheus.py tests/alerts/test_exporter_series_prometheus.py \
  tests/diagnosis/test_diagnosis_tests_catch_mutations.py tests/diagnosis/test_gpu_health.py \
  tests/slo/test_goodput.py \
  tests/slo/test_slo_tests_catch_mutations.py tests/slo/test_slo_fallbacks_catch_mutations.py \
  tests/slo/test_good_ratio_catch_mutations.py tests/slo/test_expression_slis_catch_mutations.py \
  tests/slo/test_slo_alerting.py tests/slo/test_slo_alerting_catch_mutations.py \
  tests/slo/test_slo_promtool.py tests/slo/test_slo_gaps_prometheus.py \
  tests/slo/test_slo_repair_prometheus.py tests/slo/test_repair_memory_prometheus.py \
  tests/backtest tests/routing tests/targets \
  tests/cli/test_prometheus_version.py tests/cli/test_junit.py tests/importer/test_import_roundtrip.py

# pytest in $(1) processes side by side (--shard i/$(1)) with the arguments $(2), in the
# environment $(3) (a tool stack's PATH and variables): the first
# prints as it goes (in colour on a terminal), the others' output follows, then one line adds
# up all of them (tests/support/shard_total.py: each process's "deselected" are the tests the
# others ran, not skipped ones). First the package is compiled to bytecode
# once (PYTHONDONTWRITEBYTECODE=1 environments otherwise compile it in every `rulegen`
# process the tests start; nothing is done when it is up to date).
define run_shards
	-@$(BIN)/python -m compileall -q src
	@status=0; logs=""; pids=""; first=$$(mktemp); rc=$$(mktemp); \
	trap 'kill $$pids 2>/dev/null; rm -f $$first $$rc $$logs; exit 130' INT TERM; \
	for i in $$(seq 2 $(1)); do \
	  log=$$(mktemp); logs="$$logs $$log"; \
	  $(3) $(BIN)/pytest -q $(2) --shard $$i/$(1) >$$log 2>&1 & pids="$$pids $$!"; \
	done; \
	colour=$$([ -t 1 ] && echo --color=yes); \
	{ $(3) $(BIN)/pytest -q $$colour $(2) --shard 1/$(1); echo $$? >$$rc; } 2>&1 | tee $$first; \
	[ "$$(cat $$rc)" = 0 ] || status=1; \
	for pid in $$pids; do wait $$pid || status=1; done; \
	for log in $$logs; do cat $$log; done; \
	$(BIN)/python tests/support/shard_total.py $$first $$logs; \
	rm -f $$first $$rc $$logs; \
	exit $$status
endef

.PHONY: help install tools build check test test-current test-bookworm test-faults test-long test-fast lint fmt typecheck update-golden check-rules schema pictures ci

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

$(BIN)/rulegen: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	@touch $@

install: $(BIN)/rulegen ## create the venv and install rulegen with its dev tools

tools: .tools/$(STACK)/env ## fetch the Prometheus 3.5 LTS tool stack into .tools/ (apt-get download, no install)

.tools/$(STACK)/env: .ci/fetch-stack
	bash .ci/fetch-stack $(STACK)

build: install tools ## build specs/ into rules/ with the 3.5 LTS tools (render + promtool check + promtool test)
	$(CURRENT) $(BIN)/rulegen build

check: install ## fail when the committed rules/ is stale
	$(BIN)/rulegen build --check

test: test-current test-bookworm ## the whole suite on the 3.5 LTS stack, then the tool tests on bookworm's 2.42

test-current: install tools ## the whole test suite on the 3.5 LTS stack, JOBS=2 processes at once
	$(call run_shards,$(JOBS),-m "not faults and not long",$(CURRENT))

test-bookworm: install ## the timing, mutation and real-server tests on the system's tools (Debian bookworm: Prometheus 2.42)
	$(call run_shards,$(JOBS),-m "slow and not faults and not long" $(BOOKWORM_TESTS),$(BOOKWORM))

# The repair broken at every step on a real Prometheus (tests/slo/test_repair_faults_prometheus.py,
# about 3 minutes a stack): apart from `make test` to keep that under its 15 minutes; CI runs both.
FAULT_TESTS := tests/slo/test_repair_faults_prometheus.py

test-faults: install tools ## rulegen repair killed, answered 500 and cut off at every step, on both stacks
	$(CURRENT) $(BIN)/pytest -q -m faults $(FAULT_TESTS)
	$(BOOKWORM) $(BIN)/pytest -q -m faults $(FAULT_TESTS)

# The SLO files' mutation suite on vmalert-tool (tests/targets/test_vmalert_tool_slo_mutations.py,
# about 3 minutes of two vmalert-tool processes) and the example's SLO history file on it (a
# minute or two of one vmalert-tool, tests/targets/test_vmalert_slo_tests.py): apart from
# `make test` for its 15 minutes; CI runs it. vmalert-tool ships from VictoriaMetrics 1.95, so only the 3.5 LTS stack has it.
LONG_TESTS := tests/targets/test_vmalert_tool_slo_mutations.py tests/cli/test_pre_commit.py \
  tests/targets/test_vmalert_slo_tests.py

test-long: install tools ## the SLO vmalert-tool mutation suite and pre-commit on an init'd repository (minutes of CPU), 3.5 LTS stack
	$(CURRENT) $(BIN)/pytest -q -m long $(LONG_TESTS)

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

check-rules: tools ## promtool check + test on the committed rules/ (the 3.5 LTS promtool)
	$(STACK_BIN)/promtool check rules rules/prometheus/*.yml
	cd rules && $(STACK_BIN)/promtool test rules tests/*.yml

# The example pictures of docs/backtest.md and docs/diff.md: their documented commands run on a
# real Prometheus this target starts on a synthetic history (tests/support/pictures.py); the
# slow tests that run the same commands check the committed pictures' text against theirs.
pictures: install tools ## make docs/img/*.svg again (the docs' example pictures, 3.5 LTS stack)
	$(CURRENT) $(BIN)/python tests/support/pictures.py docs/img

schema: install ## regenerate schema/*.schema.json (spec, routing and defaults files)
	@mkdir -p schema
	$(BIN)/rulegen schema > schema/rulegen.schema.json
	$(BIN)/rulegen schema --kind routing > schema/routing.schema.json
	$(BIN)/rulegen schema --kind defaults > schema/defaults.schema.json

ci: lint check test ## everything CI checks
