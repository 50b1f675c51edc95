"""``rulegen init [DIR]``: the files of a starter monitoring repository.

Why: the README's examples live inside rulegen's own repository; a team starting its own needs
the layout (``specs/``, a routing file, a user test, CI and pre-commit) that builds and passes
its tests as generated, so the first edit starts from green. The files are plain text here
(no package data to install); ``tests/cli/test_init.py`` builds and lints what they make.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

SPEC = """\
# yaml-language-server: $schema=../schema/rulegen.schema.json
# A service spec: thresholds and SLOs of one service, in the units people use. `rulegen build`
# turns it into Prometheus rules, promtool tests, Alertmanager routing and a Grafana dashboard
# in rules/; the reference is docs/spec.md of rulegen.
version: 1
service: vllm-chat                     # the label service="vllm-chat" on every rule
labels: {team: inference}              # on every alert: route on it in routing.yaml
runbook_url: https://runbooks.example.com/{alert}
evaluation_interval: 30s
scrape_interval: 15s
# The vLLM release you run: the vLLM alerts read its metric names and histogram buckets
# (vLLM renames metrics between releases). Remove it during an upgrade: the rules then read
# the old and the new names (docs/signals.md#vllm-versions).
vllm: {version: "0.34"}

# The series of each exporter family this service reads. Catalog alerts of a family and SLIs
# on its metrics get these matchers, so this service never counts another's series
# (`rulegen lint` warns about a selector with no matcher at all).
selectors:
  vllm: 'job="vllm", model_name="chat"'
  dcgm: 'job="dcgm"'

alerts:
  # Catalog signals (`rulegen schema` and docs/signals.md list them). Percentages are written
  # 90% or 0.9; a bare 90 is an error that says so.
  - signal: ttft_latency               # p99 time to first token
    threshold: 2.5s                    # a bucket bound of the histogram
    severity: critical
  - signal: kv_cache_usage
    threshold: 90%
    severity: warning
  - signal: requests_waiting
    threshold: 50
    severity: warning
  # Your own PromQL. Without summary/description rulegen writes useful defaults: the alert and
  # the labels of the firing GPU, its value in `unit`, the `for` and the runbook.
  - signal: custom
    name: GpuTemperatureHigh
    expr: 'max by (instance, gpu) (DCGM_FI_DEV_GPU_TEMP{job="dcgm"}) > 85'
    for: 5m
    severity: warning
    # examples become generated promtool tests; specs/tests/ holds a test of your own too
    examples:
      - series:
          - series: 'DCGM_FI_DEV_GPU_TEMP{job="dcgm",instance="gpu-1:9400",gpu="0"}'
            values: '90x12'
        fires_at: [5m]
        silent_at: [4m]
        labels: {instance: 'gpu-1:9400', gpu: '0'}
        value: 90

slos:
  # Errors over total, both counters (rulegen adds the increase()); the objective as 99.5%.
  - name: availability
    objective: 99.5%
    window: 28d
    sli:
      ratio:
        errors: 'vllm:request_success_total{finished_reason=~"error|abort"}'   # error: 0.13 on
        total: 'vllm:request_success_total'
  # Requests slower than a bucket bound are the errors.
  - name: ttft
    objective: 99%
    window: 28d
    sli:
      latency:
        metric: 'vllm:time_to_first_token_seconds'
        threshold: 2.5s
"""

ROUTING = """\
# yaml-language-server: $schema=../schema/routing.schema.json
# Alertmanager routing for every service spec: rulegen writes rules/alertmanager/ from it and
# checks with amtool where each generated alert is delivered. Secrets are read from files
# only (the paths on the Alertmanager host); an inline key is an error.
version: 1
routing:
  base: alertmanager/base.yml          # global settings rulegen does not own
  group_by: [alertname, service]
  default_receiver: team-chat
  receivers:
    - name: team-chat
      slack: {channel: '#inference-alerts'}   # URL from global.slack_api_url_file
    - name: pager
      pagerduty:
        routing_key_file: /etc/alertmanager/secrets/pagerduty
        severity: '{{ .CommonLabels.severity }}'
  routes:
    - match: {severity: critical}
      receiver: pager
  tests:                               # labels → the receivers they must reach, in order
    - labels: {severity: critical, service: vllm-chat}
      receivers: [pager]
    - labels: {severity: warning, service: vllm-chat}
      receivers: [team-chat]
"""

BASE = """\
# The Alertmanager settings rulegen does not own (route, receivers and inhibit_rules come from
# specs/routing.yaml). Secrets by file here too.
global:
  slack_api_url_file: /etc/alertmanager/secrets/slack
templates: []
"""

USER_TEST = """\
# A promtool test of your own: rulegen copies specs/tests/ into rules/tests/ and runs it with
# the generated tests, so rule_files is relative to rules/tests/.
rule_files:
  - ../prometheus/vllm-chat.rules.yml
evaluation_interval: 30s
tests:
  - name: GpuTemperatureHigh fires per GPU after 5m above 85, not for a GPU at 85
    interval: 30s
    input_series:
      - series: 'DCGM_FI_DEV_GPU_TEMP{job="dcgm",instance="gpu-1:9400",gpu="0"}'
        values: '88x20'
      - series: 'DCGM_FI_DEV_GPU_TEMP{job="dcgm",instance="gpu-1:9400",gpu="1"}'
        values: '85x20'
    alert_rule_test:
      - eval_time: 4m30s
        alertname: GpuTemperatureHigh
        exp_alerts: []
      - eval_time: 5m
        alertname: GpuTemperatureHigh
        exp_alerts:
          - exp_labels:
              {gpu: "0", instance: "gpu-1:9400", service: vllm-chat, severity: warning,
               team: inference}
            exp_annotations:
              summary: GpuTemperatureHigh gpu=0 instance=gpu-1:9400
              description: >-
                GpuTemperatureHigh (vllm-chat) is at 88 (labels: gpu=0 instance=gpu-1:9400)
                for 5m. Runbook: https://runbooks.example.com/GpuTemperatureHigh
              runbook_url: https://runbooks.example.com/GpuTemperatureHigh
"""

MAKEFILE = """\
# rulegen monitoring repository: specs/ in, rules/ out (committed, checked in CI).
# .rulegen-cache/ keeps the checks that passed (ignored by git, safe to delete): a build after
# an edit reruns only the promtool tests of what changed. `make help` lists the targets.
.PHONY: build check lint test help

build: ## render, validate (promtool, amtool) and write rules/
\trulegen build --test-cache .rulegen-cache

check: ## exit 1 with a diff when the committed rules/ is stale
\trulegen build --check --test-cache .rulegen-cache

lint: ## the specs' intent: unscoped selectors, missing runbooks, unreachable tiers...
\trulegen lint

test: check lint ## what CI runs

help: ## list the targets
\t@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-6s %s\\n", $$1, $$2}'
"""

CI = """\
# GitHub Actions: one validated build checks that the committed rules/ is what specs/ generates
# (every promtool and amtool test included), with rulegen's test cache kept between runs.
name: rules
on:
  pull_request:
  push:
    branches: [main]
jobs:
  rules:
    runs-on: ubuntu-24.04
    steps:
      - uses: actions/checkout@v4
      - run: sudo apt-get update && sudo apt-get install -y prometheus prometheus-alertmanager
      - run: pip install "rulegen @ git+https://github.com/<your-org>/rulegen"
      - id: tools  # rulegen's version (and commit), promtool's and amtool's: part of the cache key
        run: |
          v=$( (pip freeze | grep rulegen; promtool --version; amtool --version) 2>&1 | sha256sum)
          echo "key=${v:0:16}" >> "$GITHUB_OUTPUT"
      - id: cache
        uses: actions/cache/restore@v4
        with:
          path: .rulegen-cache
          key: rulegen-${{ steps.tools.outputs.key }}-${{ hashFiles('specs/**', 'signals/**') }}
          restore-keys: |
            rulegen-${{ steps.tools.outputs.key }}-
            rulegen-
      # The only validation step; pull requests use the cache but write nothing into it.
      - run: >-
          rulegen build --check --format github --test-cache .rulegen-cache
          ${{ github.event_name == 'pull_request' && '--read-only' || '' }}
      - if: github.event_name == 'push' && steps.cache.outputs.cache-hit != 'true'
        uses: actions/cache/save@v4
        with:
          path: .rulegen-cache
          key: ${{ steps.cache.outputs.cache-primary-key }}
      - run: rulegen lint --format github
"""

PRE_COMMIT = """\
# pre-commit install: build --check and lint before each commit (needs promtool and amtool);
# .rulegen-cache/ (ignored by git) keeps the tests that passed, so a commit reruns only
# the promtool tests of what it changes.
repos:
  - repo: local  # the rulegen installed on the machine (pip/pipx above); no release tag needed
    hooks:
      - id: rulegen-build-check
        name: rulegen build --check (rules/ matches specs/)
        entry: rulegen build --check --test-cache .rulegen-cache
        language: system
        pass_filenames: false
        files: ^(specs|signals|templates|rules)/
      - id: rulegen-lint
        name: rulegen lint (the specs' intent)
        entry: rulegen lint
        language: system
        pass_filenames: false
        files: ^(specs|signals|templates)/
"""

GITIGNORE = """\
# rulegen's test cache (make build, make check, the pre-commit hook): the checks that passed
# and each service's rendered files, under the hashes of their inputs; safe to delete.
.rulegen-cache/
# rulegen repair's journal (docs/slos.md of rulegen)
.rulegen-repair/
"""

README = """\
# Monitoring rules

Made by `rulegen init`. Edit `specs/`, run `make build`, commit `specs/` and `rules/`
together; CI (`.github/workflows/rules.yml`) and the pre-commit hook run
`rulegen build --check` (every promtool and amtool test) and `rulegen lint`.

- `specs/vllm-chat.yaml`: a service spec (alerts and SLOs)
- `specs/routing.yaml`, `specs/alertmanager/base.yml`: Alertmanager routing
- `specs/tests/`: promtool tests of your own, run with the generated ones
- `rules/`: generated, do not edit
- `schema/`: JSON Schemas for your editor (the first line of each file names one)
- `.rulegen-cache/`: the tests that passed, so a build reruns only what changed (not committed)
"""


def starter_files(schemas: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Every file of a starter repository by its relative path; ``schemas`` are the JSON
    Schemas by file kind (``spec``, ``routing``, ``defaults``), written to ``schema/``."""
    files = {
        "README.md": README,
        "Makefile": MAKEFILE,
        ".github/workflows/rules.yml": CI,
        ".pre-commit-config.yaml": PRE_COMMIT,
        ".gitignore": GITIGNORE,
        "specs/vllm-chat.yaml": SPEC,
        "specs/routing.yaml": ROUTING,
        "specs/alertmanager/base.yml": BASE,
        "specs/tests/gpu-temperature.test.yml": USER_TEST,
    }
    names = {"spec": "rulegen", "routing": "routing", "defaults": "defaults"}
    for kind, schema in schemas.items():
        files[f"schema/{names[kind]}.schema.json"] = json.dumps(schema, indent=2, sort_keys=True)
    return files
