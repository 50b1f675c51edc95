"""The command line end to end: build, --check, validate, schema, exit codes, atomic writes."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import (
    REPO,
    SMOOTHING_REFUSED,
    CliResult,
    ExampleBuild,
    copy_specs,
    no_tools,
    run_rulegen,
    write_tree,
)

Cli = Callable[..., CliResult]


def _copy_example(dest: Path) -> Path:
    copy_specs(REPO / "specs", dest / "specs")
    shutil.copytree(REPO / "signals", dest / "signals")
    shutil.copytree(REPO / "rules", dest / "rules")
    return dest


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.mark.slow
def test_build_regenerates_the_committed_rules_byte_for_byte(example_build: ExampleBuild) -> None:
    # The session's build of a copy of specs/ and signals/, with no rules/ and an empty cache.
    result = example_build.result
    assert result.code == 0, result.err
    assert "promtool test rules: 10 file(s) passed" in result.out
    assert "amtool routing tests: 56 passed" in result.out
    assert (
        "promtool check config: alertmanager/prometheus-alerting.yml ok (merged into a "
        "replica's prometheus.yml)" in result.out
    )
    assert _snapshot(example_build.root / "rules") == _snapshot(REPO / "rules")


def test_check_is_green_on_a_clean_tree(in_tmp: Path, cli: Cli) -> None:
    _copy_example(in_tmp)
    result = cli("build", "--check", "--no-validate")
    assert (result.code, result.out.strip()) == (0, "rules: up to date (20 files)")


def test_check_is_red_with_a_diff_after_editing_a_threshold(in_tmp: Path, cli: Cli) -> None:
    _copy_example(in_tmp)
    spec = in_tmp / "specs" / "llm-serving.yaml"
    spec.write_text(spec.read_text().replace("threshold: 5ms", "threshold: 7ms"))
    before = _snapshot(in_tmp / "rules")
    result = cli("build", "--check")
    assert result.code == 1
    assert (
        "-    expr: label_replace("
        'instance_device:node_disk_await_seconds:rate1m{service="deepseek-v4"}'
        ' > 0.005, "host", "$1", "instance", "(.+?)(?::[0-9]+)?")\n' in result.out
    )
    assert (
        "+    expr: label_replace("
        'instance_device:node_disk_await_seconds:rate1m{service="deepseek-v4"}'
        ' > 0.007, "host", "$1", "instance", "(.+?)(?::[0-9]+)?")\n' in result.out
    )
    assert result.out.startswith("--- a/rules/grafana/deepseek-v4.json\n")  # sorted paths
    assert "output is stale" in result.err
    assert _snapshot(in_tmp / "rules") == before


def test_check_reports_generated_files_a_build_would_remove_not_the_users(
    in_tmp: Path, cli: Cli
) -> None:
    _copy_example(in_tmp)
    (in_tmp / "rules" / "prometheus" / "mine.rules.yml").write_text("groups: []\n")
    assert cli("build", "--check", "--no-validate").code == 0
    slo = in_tmp / "specs" / "llm-serving.yaml"
    slo.write_text(slo.read_text().replace("  - name: ttft\n", "  - name: ttft2\n"))
    result = cli("build", "--check", "--no-validate")
    assert result.code == 1
    assert "--- a/rules/prometheus/deepseek-v4.slo.ttft.rules.yml\n+++ /dev/null" in result.out
    assert "extra: rules/prometheus/deepseek-v4.slo.ttft.rules.yml" in result.err.splitlines()
    assert "mine.rules.yml" not in result.out + result.err


def test_two_builds_write_identical_bytes(in_tmp: Path, cli: Cli) -> None:
    _copy_example(in_tmp)
    assert cli("build", "--no-validate", "--out", "a").code == 0
    assert cli("build", "--no-validate", "--out", "b").code == 0
    assert _snapshot(in_tmp / "a") == _snapshot(in_tmp / "b")


@pytest.mark.slow
def test_failing_user_test_exits_1_names_the_alert_and_writes_nothing(
    in_tmp: Path, cli: Cli, example_build: ExampleBuild
) -> None:
    # The session's test cache spares the example's SLO test files, which this edit leaves as
    # they passed there; the user test and the service's test file (its rules change) run.
    _copy_example(in_tmp)
    user_test = in_tmp / "specs" / "tests" / "gpu-temperature.test.yml"
    user_test.write_text(user_test.read_text().replace("at 88°C\n", "at 89°C\n"))
    spec = in_tmp / "specs" / "llm-serving.yaml"
    spec.write_text(spec.read_text().replace("threshold: 5ms", "threshold: 7ms"))
    before = _snapshot(in_tmp / "rules")
    result = cli("build", "--test-cache", str(example_build.cache))
    assert result.code == 1
    line = spec.read_text().splitlines().index("  - signal: custom") + 1
    # the alert's position on its own line, above promtool's block
    assert f"\nspecs/llm-serving.yaml:{line}:5: alerts[36]:\n" in result.err
    assert "alertname: GpuTemperatureHigh" in result.err
    assert result.err.rstrip().endswith("rulegen: validation failed; nothing written")
    assert _snapshot(in_tmp / "rules") == before
    assert not [p for p in in_tmp.iterdir() if p.name.startswith(".")]


@pytest.mark.slow
def test_promtool_rejection_is_mapped_to_the_spec_line(in_tmp: Path, cli: Cli) -> None:
    write_tree(
        in_tmp,
        {
            "specs/a.yaml": """
                version: 1
                service: x
                alerts:
                  - {signal: disk_await, threshold: 5ms, severity: warning}
                  - signal: custom
                    name: Smooth
                    expr: double_exponential_smoothing(up[5m], 0.5, 0.5) > 1
                    severity: info
            """,
        },
    )
    result = cli("build")
    assert result.code == 1
    assert result.err.splitlines() == [
        "promtool check rules failed:",
        "specs/a.yaml:5:5: alerts[1]: promtool: could not parse expression: 1:1: parse error: "
        + SMOOTHING_REFUSED,
        "rulegen: validation failed; nothing written",
    ]
    assert sorted(p.name for p in in_tmp.iterdir()) == ["specs"]


@pytest.mark.slow
def test_missing_promtool_exits_3_with_install_hint(tmp_path: Path) -> None:
    _copy_example(tmp_path)
    venv_bin = no_tools(tmp_path)
    result = run_rulegen("build", cwd=tmp_path, env={"PATH": str(venv_bin), "RULEGEN_PROMTOOL": ""})
    assert result.code == 3, result.err
    assert result.err.strip() == (
        "rulegen: error: promtool not found; install it with: apt-get install prometheus "
        "(Debian/Ubuntu), or set RULEGEN_PROMTOOL"
    )
    assert "Traceback" not in result.err


@pytest.mark.slow
def test_no_validate_builds_without_promtool(tmp_path: Path) -> None:
    _copy_example(tmp_path)
    venv_bin = no_tools(tmp_path)
    result = run_rulegen(
        "build", "--no-validate", "--out", "out", cwd=tmp_path, env={"PATH": str(venv_bin)}
    )
    assert result.code == 0, result.err
    assert (tmp_path / "out" / "prometheus" / "deepseek-v4.rules.yml").is_file()


def test_validate_checks_specs_and_writes_nothing(in_tmp: Path, cli: Cli) -> None:
    _copy_example(in_tmp)
    shutil.rmtree(in_tmp / "rules")
    result = cli("validate", "specs")
    assert (result.code, result.out.strip()) == (0, "1 spec(s) valid")
    assert not (in_tmp / "rules").exists()


def test_schema_is_json_schema_of_the_spec(cli: Cli) -> None:
    result = cli("schema")
    schema = json.loads(result.out)
    assert schema["title"] == "rulegen spec (version 1)"
    assert "Alert_disk_await" in schema["$defs"]
    assert set(schema["required"]) == {"version", "service"}
    assert {"alerts", "slos"} <= set(schema["properties"])


@pytest.mark.parametrize(
    ("kind", "file"),
    [("spec", "rulegen"), ("routing", "routing"), ("defaults", "defaults")],
)
def test_committed_schema_is_up_to_date(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, kind: str, file: str
) -> None:
    monkeypatch.chdir(REPO)
    result = cli("schema", "--kind", kind)
    assert result.out == (REPO / "schema" / f"{file}.schema.json").read_text(), "run make schema"


@pytest.mark.slow
def test_version_prints_and_exits_0() -> None:
    result = run_rulegen("--version", cwd=REPO)
    assert (result.code, result.out.strip()) == (0, "rulegen 0.1.0")


def test_usage_error_exits_2(cli: Cli) -> None:
    result = cli("build", "--bogus")
    assert result.code == 2
    assert result.err.strip() == "rulegen: error: unrecognized arguments: --bogus"


@pytest.mark.slow
def test_user_signals_folder_is_loaded_with_the_flag(in_tmp: Path, cli: Cli) -> None:
    write_tree(
        in_tmp,
        {
            "specs/a.yaml": """
                version: 1
                service: a
                alerts:
                  - {signal: nvlink_utilization, threshold: 90%, severity: info}
            """,
        },
    )
    missing = cli("build", "--no-validate")
    assert missing.code == 2
    assert "specs/a.yaml:4:14: alerts[0].signal: unknown signal 'nvlink_utilization'" in missing.err
    result = cli("build", "--signals", str(REPO / "signals"))
    assert result.code == 0, result.err
    rules = (in_tmp / "rules" / "prometheus" / "a.rules.yml").read_text()
    assert 'instance_gpu:dcgm_nvlink_bytes:utilization{service="a"} > 0.9' in rules


def test_out_pointing_at_a_file_is_a_usage_error(in_tmp: Path, cli: Cli) -> None:
    _copy_example(in_tmp)
    result = cli("build", "--out", "specs/llm-serving.yaml")
    assert (result.code, result.err.strip()) == (
        2,
        "rulegen: error: --out specs/llm-serving.yaml: exists and is not a directory",
    )


@pytest.mark.slow
def test_missing_amtool_exits_3_with_install_hint(
    in_tmp: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_tree(
        in_tmp,
        {
            "specs/web.yaml": "version: 1\nservice: web\nalerts:\n"
            "  - {signal: disk_await, threshold: 5ms, severity: warning}\n",
            "specs/routing.yaml": "version: 1\nrouting:\n  default_receiver: a\n"
            "  receivers: [{name: a, webhook: {url: 'http://sink.internal/a'}}]\n",
        },
    )
    missing = in_tmp / "no-amtool"
    monkeypatch.setenv("RULEGEN_AMTOOL", str(missing))
    result = cli("build")
    assert result.code == 3, result.err
    assert result.err.strip() == (
        f"rulegen: error: RULEGEN_AMTOOL={missing} does not exist; install it with: apt-get "
        "install prometheus-alertmanager (Debian/Ubuntu), or set RULEGEN_AMTOOL"
    )
    assert not (in_tmp / "rules").exists()


def test_an_unexpected_exception_is_one_line_and_exit_4(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(_args: object) -> int:
        raise KeyError("line one\nline two \x1b[2J")

    monkeypatch.setattr("rulegen.cli._schema", broken)
    result = cli("schema")
    assert (result.code, result.out) == (4, "")
    assert result.err == (
        "rulegen: internal error: KeyError: 'line one\\nline two \\x1b[2J' "
        "(run with --debug for the traceback)\n"
    )
    with pytest.raises(KeyError):
        cli("schema", "--debug")
