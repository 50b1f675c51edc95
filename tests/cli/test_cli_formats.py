"""``--format text|json|github`` on ``build`` and ``validate``: the same diagnostics, as text
(unchanged), one JSON document on stdout whatever the exit code, or GitHub annotations."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, SMOOTHING_REFUSED, CliResult, no_tools, run_rulegen, write_tree

Cli = Callable[..., CliResult]

BROKEN = """
    version: 1
    service: web
    alerts:
      - {signal: disk_utilization, threshold: 90%, severity: warning, bogus: 1}
    """
UNKNOWN_KEY = {
    "file": "specs/web.yaml", "line": 4, "column": 67, "code": "spec/unknown-key",
    "severity": "error", "path": "alerts[0].bogus", "message": "unknown key", "hint": "",
}  # fmt: skip
ANNOTATION = (
    "::error file=specs/web.yaml,line=4,col=67,title=rulegen spec/unknown-key::"
    "alerts[0].bogus: unknown key\n"
)
TRAILER = "rulegen: 1 error(s); nothing written"


def _copy_example(dest: Path) -> None:
    for name in ("specs", "signals", "rules"):
        shutil.copytree(REPO / name, dest / name)


@pytest.mark.parametrize(
    "argv",
    [("build", "--no-validate"), ("validate", "specs")],
    ids=["build", "validate"],
)
def test_a_spec_error_in_each_format(argv: tuple[str, ...], cli: Cli, in_tmp: Path) -> None:
    write_tree(in_tmp, {"specs/web.yaml": BROKEN})
    text = cli(*argv)
    assert (text.code, text.out, text.err.splitlines()) == (
        2, "", ["specs/web.yaml:4:67: alerts[0].bogus: unknown key", TRAILER]
    )  # fmt: skip
    as_json = cli(*argv, "--format", "json")
    assert (as_json.code, json.loads(as_json.out), as_json.err) == (
        2,
        [UNKNOWN_KEY],
        TRAILER + "\n",
    )
    github = cli(*argv, "--format=github")
    assert (github.code, github.out, github.err) == (2, ANNOTATION, TRAILER + "\n")
    assert not (in_tmp / "rules").exists()


def test_success_is_an_empty_list_and_the_summary_goes_to_stderr(cli: Cli, in_tmp: Path) -> None:
    write_tree(in_tmp, {"specs/web.yaml": BROKEN.replace(", bogus: 1", "")})
    built = cli("build", "--no-validate", "--format", "json")
    assert (built.code, built.out) == (0, "[]\n")
    assert built.err.splitlines()[-1].startswith("wrote ")
    valid = cli("validate", "specs", "--format", "json")
    assert (valid.code, valid.out, valid.err) == (0, "[]\n", "1 spec(s) valid\n")
    github = cli("validate", "specs", "--format", "github")
    assert (github.code, github.out, github.err) == (0, "1 spec(s) valid\n", "")


def test_check_reports_stale_files_as_diagnostics(cli: Cli, in_tmp: Path) -> None:
    _copy_example(in_tmp)
    clean = cli("build", "--check", "--no-validate", "--format", "json")
    assert (clean.code, clean.out, clean.err) == (0, "[]\n", "rules: up to date (20 files)\n")
    spec = in_tmp / "specs" / "llm-serving.yaml"
    spec.write_text(spec.read_text().replace("threshold: 5ms", "threshold: 7ms"))
    text = cli("build", "--check", "--no-validate")
    as_json = cli("build", "--check", "--no-validate", "--format", "json")
    assert as_json.code == text.code == 1
    found = json.loads(as_json.out)
    stale = [line.split(" ", 1)[1] for line in text.err.splitlines() if line.startswith("stale:")]
    assert [d["file"] for d in found] == stale
    assert {(d["code"], d["line"], d["hint"]) for d in found} == {
        ("output/stale", None, "run `rulegen build` and commit the result")
    }
    assert as_json.err.startswith(text.out)  # the diff, for people
    github = cli("build", "--check", "--no-validate", "--format", "github")
    assert github.out.startswith(text.out)
    assert f"::error file={stale[0]},title=rulegen output/stale::stale: " in github.out


@pytest.mark.parametrize(
    "argv",
    [("build", "--bogus", "--format", "json"), ("lint", "--format=json", "--timeout", "-1")],
    ids=["an unknown option", "a bad value"],
)
def test_a_usage_error_is_json_too(argv: tuple[str, ...], cli: Cli) -> None:
    result = cli(*argv)
    assert result.code == 2
    [found] = json.loads(result.out)
    assert (found["code"], found["file"], found["line"]) == ("usage", None, None)
    assert result.err == ""


PROMTOOL_REJECTS = """
    version: 1
    service: x
    alerts:
      - {signal: disk_await, threshold: 5ms, severity: warning}
      - signal: custom
        name: Smooth
        expr: double_exponential_smoothing(up[5m], 0.5, 0.5) > 1
        severity: info
    """


@pytest.mark.slow
def test_a_promtool_rejection_is_mapped_to_its_spec_line(cli: Cli, in_tmp: Path) -> None:
    write_tree(in_tmp, {"specs/a.yaml": PROMTOOL_REJECTS})
    message = "promtool: could not parse expression: 1:1: parse error: " + SMOOTHING_REFUSED
    as_json = cli("build", "--format", "json")
    assert (as_json.code, as_json.err) == (1, "rulegen: validation failed; nothing written\n")
    assert json.loads(as_json.out) == [
        {
            "file": "specs/a.yaml", "line": 5, "column": 5, "code": "promtool/check",
            "severity": "error", "path": "alerts[1]", "message": message, "hint": "",
        }
    ]  # fmt: skip
    github = cli("build", "--format", "github")
    assert github.code == 1
    assert github.out == (
        "::error file=specs/a.yaml,line=5,col=5,title=rulegen promtool/check::alerts[1]: "
        + message
        + "\n"
    )
    assert sorted(p.name for p in in_tmp.iterdir()) == ["specs"]


UP = """
    version: 1
    service: x
    alerts:
      - signal: custom
        name: TargetDown
        expr: up == 0
        severity: warning
    """
WRONG_TEST = """
    rule_files: [../prometheus/x.rules.yml]
    evaluation_interval: 1m
    tests:
      - name: a target up all along
        interval: 1m
        input_series:
          - series: 'up{job="a"}'
            values: '1x10'
        alert_rule_test:
          - eval_time: 5m
            alertname: TargetDown
            exp_alerts: [{exp_labels: {job: a}}]
    """


@pytest.mark.slow
def test_a_failed_promtool_test_is_mapped_to_its_alert(cli: Cli, in_tmp: Path) -> None:
    write_tree(in_tmp, {"specs/x.yaml": UP, "specs/tests/up.test.yml": WRONG_TEST})
    text = cli("build")
    assert text.code == 1
    # the position on a line of its own, above promtool's block kept whole
    assert text.err.splitlines()[:5] == [
        "promtool test rules failed:",
        "tests/up.test.yml: FAILED:",
        "specs/x.yaml:4:5: alerts[0]:",
        "      name: a target up all along,",
        "      alertname: TargetDown, time: 5m,",
    ]
    as_json = cli("build", "--format", "json")
    assert as_json.code == 1
    [found] = json.loads(as_json.out)
    expected: dict[str, Any] = {
        "file": "specs/x.yaml", "line": 4, "column": 5, "code": "promtool/test",
        "path": "alerts[0]",
    }  # fmt: skip
    assert {k: found[k] for k in expected} == expected
    assert found["message"].splitlines()[:2] == [
        "name: a target up all along,",
        "alertname: TargetDown, time: 5m,",
    ]


WRONG_EXAMPLE = """
    version: 1
    service: gpu
    alerts:
      - signal: custom
        name: GpuTemperatureHigh
        expr: DCGM_FI_DEV_GPU_TEMP > 85
        for: 5m
        severity: warning
        examples:
          - series: [{series: 'DCGM_FI_DEV_GPU_TEMP{gpu="0"}', values: '90x20'}]
            interval: 1m
            fires_at: [10m]
            labels: {gpu: "0"}
            value: 90
          - series: [{series: 'DCGM_FI_DEV_GPU_TEMP{gpu="0"}', values: '80x20'}]
            interval: 1m
            fires_at: [10m]
            labels: {gpu: "0"}
            value: 88
    """


@pytest.mark.slow
def test_a_failed_example_names_the_example(cli: Cli, in_tmp: Path) -> None:
    write_tree(in_tmp, {"specs/gpu.yaml": WRONG_EXAMPLE})
    text = cli("build")
    assert text.code == 1
    assert text.err.splitlines()[:5] == [
        "promtool test rules failed:",
        "tests/gpu.test.yml: FAILED:",
        "specs/gpu.yaml:15:9: alerts[0].examples[1]:",
        "      name: GpuTemperatureHigh: examples[1],",
        "      alertname: GpuTemperatureHigh, time: 10m,",
    ]
    [found] = json.loads(cli("build", "--format", "json").out)
    assert (found["line"], found["column"], found["path"]) == (15, 9, "alerts[0].examples[1]")


@pytest.mark.slow
def test_a_missing_promtool_is_json_with_exit_3(tmp_path: Path) -> None:
    _copy_example(tmp_path)
    venv_bin = no_tools(tmp_path)
    env = {"PATH": str(venv_bin), "RULEGEN_PROMTOOL": ""}
    result = run_rulegen("build", "--format", "json", cwd=tmp_path, env=env)
    assert result.code == 3, result.err
    [found] = json.loads(result.out)
    assert (found["code"], found["message"]) == (
        "tool/missing",
        "promtool not found; install it with: apt-get install prometheus (Debian/Ubuntu), or "
        "set RULEGEN_PROMTOOL",
    )
