"""A newcomer's first spec (issue 20): each stumble of a first hour, from the user's side.

Each test writes the files a new user would write, runs the ``rulegen`` command they would run
(in-process, so no tool starts), and checks the exit code and the exact message: what the user
sees is the contract. The numbers in the ids are the stumbles of the issue.
"""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import jsonschema
import pytest
import yaml
from conftest import REPO, CliResult, run_rulegen, spec_errors, write_tree

Cli = Callable[..., CliResult]

# --- 1. units: the same kind of number means the same thing in every field ----------------

UNITS = [
    pytest.param(
        """
        version: 1
        service: vllm
        alerts:
          - {signal: kv_cache_usage, threshold: 90, severity: warning}
        """,
        "specs/vllm.yaml:4:41: alerts[0].threshold: a bare number is not a percentage: "
        "write 90% or 0.9 (got 90)",
        id="1: a bare 90 on a percent signal is refused with the fix spelled out",
    ),
    pytest.param(
        """
        version: 1
        service: vllm
        slos:
          - name: availability
            objective: 99.5
            sli: {ratio: {errors: 'vllm:request_success_total{finished_reason="abort"}',
                          total: 'vllm:request_success_total'}}
        """,
        "specs/vllm.yaml:5:16: slos[0].objective: a bare number is not a percentage: "
        "write 99.5% or 0.995 (got 99.5)",
        id="1: a bare objective 99.5 gets the same error and hint as a threshold",
    ),
]


@pytest.mark.parametrize(("spec", "error"), UNITS)
def test_a_bare_number_in_a_percent_field_is_one_error_with_its_fix(
    in_tmp: Path, cli: Cli, spec: str, error: str
) -> None:
    write_tree(in_tmp, {"specs/vllm.yaml": spec})
    result = cli("validate", "specs")
    assert (result.code, result.err.splitlines()) == (2, list(spec_errors(error)))


@pytest.mark.parametrize("objective", ["99.5%", "0.995"])
def test_the_documented_objective_forms_stay_valid(in_tmp: Path, cli: Cli, objective: str) -> None:
    write_tree(in_tmp, {"specs/vllm.yaml": f"""
        version: 1
        service: vllm
        slos:
          - name: availability
            objective: {objective}
            sli: {{ratio: {{errors: 'vllm:request_success_total{{finished_reason="abort"}}',
                           total: 'vllm:request_success_total'}}}}
        """})  # fmt: skip
    result = cli("validate", "specs")
    assert (result.code, result.err) == (0, ""), result.err


# --- 3. errors: all of them in one run, in file order, with the key that was meant ---------

ERRORS = [
    pytest.param(
        {
            "specs/vllm.yaml": """
                version: 1
                service: vllm
                evaluation_interval: 30
                alerts: []
                """
        },
        [
            "specs/vllm.yaml:3:22: evaluation_interval: invalid duration 30 (expected "
            "Prometheus syntax like 30s, 5m, 1h)",
            "specs/vllm.yaml:4:9: alerts: must not be empty",
        ],
        id="3: alerts: [] does not hide a bad evaluation_interval",
    ),
    pytest.param(
        {
            "specs/vllm.yaml": """
                version: 1
                service: vllm
                alerts:
                  - {signal: kv_cache_usage, treshold: 90%, severity: warning}
                """
        },
        [
            "specs/vllm.yaml:4:5: alerts[0]: threshold: required field is missing",
            'specs/vllm.yaml:4:30: alerts[0].treshold: unknown key; did you mean "threshold"?',
        ],
        id="3: a typo'd key names the key that was meant",
    ),
    pytest.param(
        {
            "specs/vllm.yaml": """
                version: 1
                service: vLLM
                alerts:
                  - {signal: kv_cache_usage, threshold: 90, severity: page}
                """
        },
        [
            "specs/vllm.yaml:2:10: service: must match ^[a-z0-9][a-z0-9-]*$ (got 'vLLM')",
            "specs/vllm.yaml:4:41: alerts[0].threshold: a bare number is not a percentage: "
            "write 90% or 0.9 (got 90)",
            "specs/vllm.yaml:4:55: alerts[0].severity: must be 'critical', 'warning' or 'info' "
            "(got 'page')",
        ],
        id="3: a refused name or severity hides none of the entry's other errors",
    ),
    pytest.param(
        {
            "specs/a.yaml": """
                version: 1
                service: a
                scrape_interval: 15
                alerts:
                  - {signal: kv_cache_usage, threshold: 90%, severity: urgent}
                  - {signal: disk_await, threshold: fast, severity: warning}
                slos:
                  - name: availability
                    objective: 99.5
                    window: 28
                    sli: {ratio: {errors: e_total, total: t_total}}
                    alerting: {pgae: {severity: critical}}
                """,
            "specs/b.yaml": """
                version: 1
                service: b
                alerts:
                  - {signal: disk_await, threshold: 5ms, severity: warning, fro: 5m}
                """,
        },
        [
            "specs/a.yaml:3:18: scrape_interval: invalid duration 15 (expected Prometheus "
            "syntax like 30s, 5m, 1h)",
            "specs/a.yaml:5:56: alerts[0].severity: must be 'critical', 'warning' or 'info' "
            "(got 'urgent')",
            "specs/a.yaml:6:37: alerts[1].threshold: invalid duration 'fast' (expected a "
            "latency like 5ms, 500ms, 2s)",
            "specs/a.yaml:9:16: slos[0].objective: a bare number is not a percentage: "
            "write 99.5% or 0.995 (got 99.5)",
            "specs/a.yaml:10:13: slos[0].window: invalid duration 28 (expected Prometheus "
            "syntax like 30s, 5m, 1h)",
            'specs/a.yaml:12:16: slos[0].alerting.pgae: unknown key; did you mean "page"?',
            'specs/b.yaml:4:61: alerts[0].fro: unknown key; did you mean "for"?',
        ],
        id="3: structural and semantic errors of every file come in one run, in file order",
    ),
]


@pytest.mark.parametrize(("files", "errors"), ERRORS)
def test_every_error_of_every_file_in_one_run(
    in_tmp: Path, cli: Cli, files: dict[str, str], errors: list[str]
) -> None:
    write_tree(in_tmp, files)
    result = cli("validate", "specs")
    assert (result.code, result.err.splitlines()) == (2, list(spec_errors(*errors)))


# --- 4. a custom alert's default text is useful at 3 am ----------------------------------

GPU_SPEC = """
    version: 1
    service: gpu-fleet
    runbook_url: https://runbooks.example.com/{alert}
    alerts:
      - signal: custom
        name: GpuTemperatureHigh
        expr: DCGM_FI_DEV_GPU_TEMP > 85
        for: 5m
        severity: warning
        examples:
          - series:
              - {series: 'DCGM_FI_DEV_GPU_TEMP{gpu="0",instance="a"}', values: '90x10'}
            fires_at: [5m]
            labels: {gpu: '0', instance: a}
            value: 90
      - signal: custom
        name: KvCacheFull
        expr: max by (model_name) (vllm:gpu_cache_usage_perc) > 0.95
        unit: percent
        severity: critical
        examples:
          - series:
              - {series: 'vllm:gpu_cache_usage_perc{model_name="llama",pod="p"}', values: '0.97x4'}
            fires_at: [1m]
            labels: {model_name: llama}
            value: 0.97
"""


def test_a_custom_alerts_default_text_names_the_instance_value_for_and_runbook(
    in_tmp: Path, cli: Cli
) -> None:
    write_tree(in_tmp, {"specs/gpu.yaml": GPU_SPEC})
    result = cli("build", "--no-validate")
    assert result.code == 0, result.err
    # the generated test holds the text Prometheus prints (promtool checks it in the goldens)
    tests = yaml.safe_load((in_tmp / "rules/tests/gpu-fleet.test.yml").read_text())
    texts = {
        alert["exp_annotations"]["summary"]: alert["exp_annotations"]["description"]
        for case in tests["tests"]
        for check in case.get("alert_rule_test", [])
        for alert in check["exp_alerts"]
    }
    assert texts == {
        "GpuTemperatureHigh gpu=0 instance=a": "GpuTemperatureHigh (gpu-fleet) is at 90 "
        "(labels: gpu=0 instance=a) for 5m. "
        "Runbook: https://runbooks.example.com/GpuTemperatureHigh",
        "KvCacheFull model_name=llama": "KvCacheFull (gpu-fleet) is at 97% "
        "(labels: model_name=llama). Runbook: https://runbooks.example.com/KvCacheFull",
    }


# --- 6. the command line meets a newcomer where they are -------------------------------------


def test_validate_reads_specs_by_default_like_build(in_tmp: Path, cli: Cli) -> None:
    write_tree(in_tmp, {"specs/vllm.yaml": GPU_SPEC})
    result = cli("validate")
    assert (result.code, result.out, result.err) == (0, "1 spec(s) valid\n", "")


@pytest.mark.usefixtures("in_tmp")
def test_dash_reads_a_spec_from_stdin_named_stdin_in_messages(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = b"version: 1\nservice: x\nalerts:\n  - {signal: kv_cache_usage, threshold: 90}\n"
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(spec)))
    result = cli("validate", "-")
    assert (result.code, result.err.splitlines()) == (
        2,
        list(spec_errors(
            "<stdin>:4:5: alerts[0]: severity: required field is missing",
            "<stdin>:4:41: alerts[0].threshold: a bare number is not a percentage: "
            "write 90% or 0.9 (got 90)",
        )),
    )  # fmt: skip


def test_bare_rulegen_prints_usage_and_exits_2(cli: Cli) -> None:
    result = cli()
    assert result.code == 2
    assert result.err.startswith("usage: rulegen")
    assert "validate" in result.err
    assert result.err.endswith("rulegen: error: a command is required\n")


@pytest.mark.parametrize("value", ["-7d", "now", "yesterday"])
def test_relative_times_pass_the_command_line(cli: Cli, value: str) -> None:
    # the range is read, then refused for its order: --from and --to are the same now
    result = cli("backtest", "--prometheus", "http://127.0.0.1:1", "--from", value, "--to", value)
    assert (result.code, result.err) == (
        2,
        f"rulegen: error: --from {value} must be before --to {value}\n",
    )


SCHEMAS = [("spec", "specs/llm-serving.yaml"), ("routing", "specs/routing.yaml"),
           ("defaults", "specs/defaults.yaml")]  # fmt: skip


@pytest.mark.parametrize(("kind", "example"), SCHEMAS, ids=[k for k, _ in SCHEMAS])
def test_each_file_kind_has_a_json_schema_its_example_passes(
    cli: Cli, kind: str, example: str
) -> None:
    result = cli("schema", "--kind", kind)
    schema = json.loads(result.out)
    validator = jsonschema.Draft202012Validator(schema)
    assert list(validator.iter_errors(yaml.safe_load((REPO / example).read_text()))) == []
    # and it is the kind's own schema: a typo'd top-level key is refused
    assert list(validator.iter_errors({"version": 1, "routnig": {}}))


# --- 5. routing: the base file's defaults, readable messages, tests and reports --------------

ROUTED_SPEC = """
    version: 1
    service: vllm
    slos:
      - name: availability
        objective: 99.5%
        sli: {ratio: {errors: 'vllm:request_success_total{finished_reason="abort"}',
                      total: 'vllm:request_success_total'}}
      - name: latency
        objective: 99%
        sli: {latency: {metric: 'vllm:time_to_first_token_seconds', threshold: 2.5s}}
    """
ROUTING = """
    version: 1
    routing:
      base: alertmanager/base.yml
      default_receiver: chat
      receivers:
        - name: chat
          slack: {channel: '#vllm'}
        - name: pager
          pagerduty:
            routing_key_file: /etc/alertmanager/secrets/pagerduty
            description: '{{ .CommonAnnotations.summary }}'
            severity: '{{ .CommonLabels.severity }}'
      routes:
        - match: {severity: critical}
          receiver: pager
    """
BASE = """
    global:
      slack_api_url_file: /etc/alertmanager/secrets/slack
    """


def test_routing_takes_the_base_files_secret_file_and_says_what_fired(
    in_tmp: Path, cli: Cli
) -> None:
    write_tree(in_tmp, {"specs/vllm.yaml": ROUTED_SPEC, "specs/routing.yaml": ROUTING,
                        "specs/alertmanager/base.yml": BASE})  # fmt: skip
    result = cli("build", "--no-validate")
    assert result.code == 0, result.err
    config = yaml.safe_load((in_tmp / "rules/alertmanager/alertmanager.yml").read_text())
    receivers = {r["name"]: r for r in config["receivers"]}
    slack = receivers["chat"]["slack_configs"][0]
    assert "api_url_file" not in slack  # Alertmanager takes global.slack_api_url_file
    assert slack["text"].startswith("{{ range .Alerts }}*{{ .Annotations.summary }}*\n")
    assert "{{ .Annotations.description }}" in slack["text"]
    pager = receivers["pager"]["pagerduty_configs"][0]
    assert (pager["description"], pager["severity"]) == (
        "{{ .CommonAnnotations.summary }}",
        "{{ .CommonLabels.severity }}",
    )
    tests = yaml.safe_load((in_tmp / "rules/alertmanager/routing-tests.yml").read_text())
    names = [t["name"] for t in tests["tests"]]
    assert len(names) == len(set(names))
    assert "vllm/ErrorBudgetBurn/critical{slo=latency}" in names


def test_a_slack_receiver_without_any_secret_file_still_names_both_ways(
    in_tmp: Path, cli: Cli
) -> None:
    routing = ROUTING.replace("      base: alertmanager/base.yml\n", "")
    write_tree(in_tmp, {"specs/vllm.yaml": ROUTED_SPEC, "specs/routing.yaml": routing})
    result = cli("validate")
    assert (result.code, result.err.splitlines()) == (2, list(spec_errors(
        "specs/routing.yaml:6:14: routing.receivers[0].slack: api_url_file: required field is "
        "missing (or global.slack_api_url_file in the base file)"
    )))  # fmt: skip


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("amtool") is None, reason="needs amtool")
def test_a_continue_route_that_passes_no_generated_alert_on_is_reported(tmp_path: Path) -> None:
    write_tree(tmp_path, {
        "specs/up.yaml": """
            version: 1
            service: up
            alerts:
              - {signal: custom, name: Down, expr: up == 0, severity: critical}
            """,
        "specs/routing.yaml": """
            version: 1
            routing:
              default_receiver: hook
              receivers:
                - {name: hook, webhook: {url: 'http://sink.internal/hook'}}
                - {name: pager, webhook: {url: 'http://pager.internal/hook'}}
              routes:
                - {match: {severity: critical}, receiver: pager, continue: true}
                - {match: {team: storage}, receiver: hook}
            """,
    })  # fmt: skip
    result = run_rulegen("build", "--no-validate", cwd=tmp_path)
    assert result.code == 0, result.err
    result = run_rulegen("build", "--check", cwd=tmp_path)
    warnings = [line for line in result.out.splitlines() if line.startswith("warning: ")]
    assert warnings == [
        "warning: specs/routing.yaml:9:7: routing.routes[1]: no generated alert reaches this route",
        "warning: specs/routing.yaml:8:7: routing.routes[0]: continue: true passes no "
        "generated alert on to a later route (none of the alerts that enter it matches a "
        "route after it)",
    ]


# --- 2. scope: an SLI reads its service's series, and lint says when nothing scopes one ------

SCOPED = """
    version: 1
    service: vllm
    runbook_url: https://runbooks.example.com/{alert}
    selectors: {vllm: 'job="vllm"'}
    slos:
      - name: availability
        objective: 99.5%
        sli:
          ratio:
            errors: 'vllm:request_success_total{finished_reason="abort"}'
            total: 'vllm:request_success_total'
    """


@pytest.mark.parametrize(
    ("opt_out", "expected"),
    [
        pytest.param(
            "", 'vllm:request_success_total{job="vllm"} - ', id="2: the family's selectors"
        ),
        pytest.param(
            "\n          selectors: false", "vllm:request_success_total - ", id="2: an SLI opts out"
        ),
    ],
)
def test_an_sli_gets_the_selectors_of_its_metrics_family(
    in_tmp: Path, cli: Cli, opt_out: str, expected: str
) -> None:
    spec = SCOPED.replace("\n          ratio:", opt_out + "\n          ratio:")
    write_tree(in_tmp, {"specs/vllm.yaml": spec})
    result = cli("build", "--no-validate")
    assert result.code == 0, result.err
    rules = (in_tmp / "rules/prometheus/vllm.slo.availability.rules.yml").read_text()
    # the base window's first step reads the total counter as the SLI names it
    assert f"label_replace({expected}" in rules


def test_lint_warns_about_an_sli_that_nothing_scopes(in_tmp: Path, cli: Cli) -> None:
    write_tree(
        in_tmp, {"specs/vllm.yaml": SCOPED.replace("    selectors: {vllm: 'job=\"vllm\"'}\n", "")}
    )
    result = cli("lint")
    assert (result.code, result.out) == (
        0,
        "specs/vllm.yaml:8:7: [selector/unscoped] warning: ErrorBudgetBurn: reads "
        "vllm:request_success_total with no label matcher, so it counts the series of every "
        "service and target; add the spec's selectors: for the metric's family (e.g. vllm: "
        "'job=\"vllm\"') or a matcher of its own\n",
    )
