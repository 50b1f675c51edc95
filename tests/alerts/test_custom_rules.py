"""Rules of your own: ``recordings:``, a custom alert's verbatim ``annotations:``,
``keep_firing_for``, ``group:``/``groups:`` and ``examples:``.

The error table gives every new spec error exactly (``FILE:LINE:COL: path: message``, exit 2,
nothing written); the rendering tests read the rule file's data; the promtool tests prove an
example's generated test passes on the rule as written and fails when its expression, its
threshold or its ``keep_firing_for`` is edited.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import REPO, CliResult, assert_rejected, example_spec, spec_errors, write_tree

from rulegen.build import build
from rulegen.catalog import load_catalog
from rulegen.load import SpecInputs

Cli = Callable[..., CliResult]
GOLDEN_SPEC = REPO / "tests" / "golden" / "custom-rules" / "specs" / "ops.yaml"


@dataclass(frozen=True)
class Case:
    behaviour: str
    spec: str
    stderr: tuple[str, ...]


CASES = [
    Case(
        "summary beside annotations is rejected, naming both fields",
        """
        version: 1
        service: web
        alerts:
          - signal: custom
            name: Down
            expr: up == 0
            severity: warning
            summary: 'down'
            annotations: {summary: '{{ $labels.instance }} down'}
        """,
        spec_errors(
            "specs/web.yaml:8:14: alerts[0].summary: summary and annotations cannot both be "
            "given: annotations sets every annotation as written (Go templates); write the "
            "summary there as annotations.summary"
        ),
    ),
    Case(
        "an annotation name that is not a label name is rejected",
        """
        version: 1
        service: web
        alerts:
          - signal: custom
            name: Down
            expr: up == 0
            severity: warning
            annotations: {bad-name: x}
        """,
        spec_errors(
            "specs/web.yaml:8:29: alerts[0].annotations.bad-name: invalid annotation name "
            "(expected [a-zA-Z_][a-zA-Z0-9_]*)"
        ),
    ),
    Case(
        "a custom alert's keep_firing_for and for must be durations of at most 365d",
        """
        version: 1
        service: web
        alerts:
          - {signal: custom, name: Down, expr: up == 0, severity: warning, keep_firing_for: 5}
          - {signal: custom, name: Down2, expr: up == 0, severity: warning, keep_firing_for: 53w}
          - {signal: custom, name: Down3, expr: up == 0, severity: warning, for: 366d}
        """,
        spec_errors(
            "specs/web.yaml:4:85: alerts[0].keep_firing_for: invalid duration 5 (expected "
            "Prometheus syntax like 30s, 5m, 1h)",
            "specs/web.yaml:5:86: alerts[1].keep_firing_for: must be at most 365d (got '53w')",
            "specs/web.yaml:6:74: alerts[2].for: must be at most 365d (got '366d')",
        ),
    ),
    Case(
        "recordings: names, PromQL, result type, labels and duplicates are checked",
        """
        version: 1
        service: web
        recordings:
          - {record: 'bad name', expr: 'sum(up)'}
          - {record: 'job:up:sum', expr: 'sum(up'}
          - {record: 'job:up:range', expr: 'up[5m]'}
          - {record: 'job:up:sum2', expr: 'sum(up)', labels: {service: x, __a: b, c: ''}}
          - {record: 'job:up:sum3', expr: 'sum(up)', labels: {a: b}}
          - {record: 'job:up:sum3', expr: 'sum by (job) (up)', labels: {a: b}}
        """,
        spec_errors(
            "specs/web.yaml:4:14: recordings[0].record: invalid metric name 'bad name' "
            "(expected [a-zA-Z_:][a-zA-Z0-9_:]*)",
            "specs/web.yaml:5:34: recordings[1].expr: invalid PromQL: unclosed left parenthesis",
            "specs/web.yaml:6:36: recordings[2].expr: must return an instant vector or a "
            "scalar, not a matrix",
            "specs/web.yaml:7:64: recordings[3].labels.service: label 'service' is set by "
            "rulegen and cannot be overridden",
            "specs/web.yaml:7:72: recordings[3].labels.__a: invalid label name (expected "
            "[a-zA-Z_][a-zA-Z0-9_]*, no __ prefix)",
            "specs/web.yaml:7:78: recordings[3].labels.c: label value must not be empty "
            "(Prometheus drops empty labels)",
            "specs/web.yaml:9:14: recordings[5].record: duplicate recording 'job:up:sum3' with "
            "the same labels (also recordings[4]): Prometheus would write one series twice",
        ),
    ),
    Case(
        "groups: an unused group, a zero interval, an empty or control-character name",
        """
        version: 1
        service: web
        groups:
          typo: {interval: 1m}
          used: {interval: 0s}
        recordings:
          - {record: 'a:b', expr: 'sum(up)', group: used}
          - {record: 'a:c', expr: 'sum(up)', group: ''}
          - {record: 'a:d', expr: 'sum(up)', group: "x\\ty"}
        """,
        spec_errors(
            "specs/web.yaml:4:9: groups.typo: no custom alert or recording names this group "
            "(group: 'typo')",
            "specs/web.yaml:5:20: groups.used.interval: must be longer than 0s (got '0s')",
            "specs/web.yaml:8:45: recordings[1].group: a rule group name must not be empty",
            "specs/web.yaml:9:45: recordings[2].group: a rule group name must not hold control "
            "characters",
        ),
    ),
    Case(
        "groups: query_offset and labels under a version that lacks them, bad labels",
        """
        version: 1
        service: web
        prometheus: {version: "2.42"}
        groups:
          late: {query_offset: 1m, labels: {tier: gold}}
          tagged: {query_offset: -1m, labels: {service: x, "a.b": c}}
        alerts:
          - {signal: custom, name: Down, group: late, expr: up == 0, severity: warning}
          - {signal: custom, name: Gone, group: tagged, expr: absent(up), severity: warning}
        """,
        spec_errors(
            "specs/web.yaml:5:24: groups.late.query_offset: needs Prometheus 2.53 or later "
            "(prometheus.version is 2.42)",
            "specs/web.yaml:5:36: groups.late.labels: needs Prometheus 3.0 or later "
            "(prometheus.version is 2.42)",
            "specs/web.yaml:6:26: groups.tagged.query_offset: needs Prometheus 2.53 or later "
            "(prometheus.version is 2.42)",
            "specs/web.yaml:6:26: groups.tagged.query_offset: invalid duration '-1m' (expected "
            "Prometheus syntax like 30s, 5m, 1h)",
            "specs/web.yaml:6:39: groups.tagged.labels: needs Prometheus 3.0 or later "
            "(prometheus.version is 2.42)",
            "specs/web.yaml:6:49: groups.tagged.labels.service: label 'service' is set by "
            "rulegen and cannot be overridden",
            'specs/web.yaml:6:59: groups.tagged.labels["a.b"]: invalid label name (expected '
            "[a-zA-Z_][a-zA-Z0-9_]*, no __ prefix)",
        ),
    ),
    Case(
        "a group named like a group rulegen generates is rejected at its group key",
        """
        version: 1
        service: web
        recordings:
          - {record: 'a:b', expr: 'sum(up)', group: web-custom}
        alerts:
          - {signal: custom, name: Down, expr: up == 0, severity: warning}
        """,
        spec_errors(
            "specs/web.yaml:4:45: recordings[0].group: rule group 'web-custom' is also the name "
            "of a rule group rulegen generates; rule group names must be unique across the build"
        ),
    ),
    Case(
        "examples: series, values, times, labels and value are checked",
        """
        version: 1
        service: web
        alerts:
          - signal: custom
            name: Down
            expr: up == 0
            for: 5m
            severity: warning
            annotations: {summary: 'down'}
            examples:
              - series: [{series: 'up{a=~"x"}', values: '1 2'}]
                fires_at: [1m]
              - series: [{series: 'up', values: '1 2 bad'}]
              - series: [{series: 'up', values: '0x10'}]
                fires_at: [6m, 7m]
                silent_at: [7m]
                labels: {__x: a, b: ''}
                value: abc
        """,
        spec_errors(
            "specs/web.yaml:11:27: alerts[0].examples[0].series[0].series: must be one series "
            """like name{label="value"} (got 'up{a=~"x"}')""",
            "specs/web.yaml:12:20: alerts[0].examples[0].fires_at[0]: 1m is before for (5m) has "
            "elapsed: the alert cannot fire yet",
            "specs/web.yaml:13:9: alerts[0].examples[1]: an example needs fires_at or silent_at "
            "(when it must fire, or not)",
            "specs/web.yaml:13:41: alerts[0].examples[1].series[0].values: 'bad' in '1 2 bad' "
            "is not promtool's expanding notation (e.g. '1 2 3', '0+10x100', '5x10', '_x3', "
            "'stale')",
            "specs/web.yaml:16:20: alerts[0].examples[2].silent_at: 7m is in both fires_at and "
            "silent_at",
            "specs/web.yaml:17:23: alerts[0].examples[2].labels.__x: invalid label name "
            "(expected [a-zA-Z_][a-zA-Z0-9_]*, no __ prefix)",
            "specs/web.yaml:17:29: alerts[0].examples[2].labels.b: label value must not be "
            "empty (Prometheus drops empty labels)",
            "specs/web.yaml:18:16: alerts[0].examples[2].value: expected a number, got 'abc'",
        ),
    ),
    Case(
        "an example of an alert whose text prints $value needs value:",
        """
        version: 1
        service: web
        alerts:
          - signal: custom
            name: Down
            expr: up == 0
            severity: warning
            examples:
              - series: [{series: 'up{a="x"}', values: '0x10'}]
                fires_at: [1m]
                labels: {a: x}
        """,
        spec_errors(
            "specs/web.yaml:9:9: alerts[0].examples[0]: the alert's annotations print $value: "
            "give value: (what the expression returns at fires_at), or test the alert in a "
            "promtool test of your own (specs/tests/) instead of examples"
        ),
    ),
    Case(
        "templates the examples cannot predict are rejected at their annotation",
        """
        version: 1
        service: web
        alerts:
          - signal: custom
            name: Down
            expr: up == 0 or absent(up)
            severity: warning
            annotations:
              summary: '{{ printf "%.2f" $value }} on {{ $labels.instance }}'
              description: '{{ $labels }}'
            examples:
              - series: [{series: 'up{a="x"}', values: '0x10'}]
                fires_at: [1m]
                labels: {a: x}
                value: 0
        """,
        spec_errors(
            "specs/web.yaml:9:16: alerts[0].annotations.summary: cannot predict template action "
            """{{ printf "%.2f" $value }}: the examples' tests need its exact text; test the """
            "alert in a promtool test of your own (specs/tests/) instead of examples",
            "specs/web.yaml:10:20: alerts[0].annotations.description: cannot predict "
            "{{ $labels }} for the examples (whether the expression keeps __name__ cannot be "
            "told from its text); test the alert in a promtool test of your own (specs/tests/) "
            "instead of examples",
        ),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.behaviour for c in CASES])
def test_broken_custom_rules_are_reported_exactly(case: Case, cli: Cli, in_tmp: Path) -> None:
    assert_rejected(in_tmp, cli, case.spec, case.stderr)


def test_a_group_name_taken_by_another_spec_is_rejected(cli: Cli, in_tmp: Path) -> None:
    write_tree(
        in_tmp,
        {
            "specs/a.yaml": """
            version: 1
            service: a
            recordings:
              - {record: 'a:b', expr: 'sum(up)', group: shared}
            """,
            "specs/b.yaml": """
            version: 1
            service: b
            recordings:
              - {record: 'a:b', expr: 'sum(up)', group: shared}
            """,
        },
    )
    result = cli("build", "--no-validate")
    assert (result.code, result.err.splitlines()) == (
        2,
        list(
            spec_errors(
                "specs/b.yaml:4:45: recordings[0].group: rule group 'shared' is also a rule "
                "group of service 'a'; rule group names must be unique across the build"
            )
        ),
    )
    assert not (in_tmp / "rules").exists()


# --- rendering --------------------------------------------------------------------------------


def _rendered(spec: str, tmp_path: Path) -> dict[str, Any]:
    path = write_tree(tmp_path, {"specs/web.yaml": spec}) / "specs" / "web.yaml"
    result = build(SpecInputs((path,), ()), load_catalog([]))
    data: dict[str, Any] = yaml.safe_load(result.files["prometheus/web.rules.yml"])
    return {g["name"]: g for g in data["groups"]}


SPEC = """
version: 1
service: web
labels: {team: infra}
runbook_url: https://runbooks.example.com/{alert}
groups:
  imported.rules: {interval: 2m}
recordings:
  - {record: 'job:up:sum', expr: "sum by (job)\\n  (up)\\n", labels: {b: '2', a: '1'}}
  - {record: 'job:up:avg', expr: avg(up), group: imported.rules}
alerts:
  - signal: custom
    name: Down
    expr: job:up:sum == 0
    keep_firing_for: 15m
    severity: critical
    annotations: {summary: '{{ $labels.job }} {{ humanize $value }}', runbook_url: 'x://{alert}'}
    group: imported.rules
  - {signal: custom, name: Plain, expr: up == 0, severity: info}
  - {signal: custom, name: Other, expr: up == 2, severity: info, group: other}
"""


def test_recordings_are_written_as_given_with_the_service_label(tmp_path: Path) -> None:
    groups = _rendered(SPEC, tmp_path)
    assert groups["web-custom"]["rules"][0] == {
        "record": "job:up:sum",
        "expr": "sum by (job)\n  (up)\n",
        "labels": {"a": "1", "b": "2", "service": "web"},
    }


def test_verbatim_annotations_are_exactly_the_map_and_keep_firing_for_is_written(
    tmp_path: Path,
) -> None:
    down = _rendered(SPEC, tmp_path)["imported.rules"]["rules"][1]
    assert down == {
        "alert": "Down",
        "expr": "job:up:sum == 0",
        "keep_firing_for": "15m",
        "labels": {"service": "web", "severity": "critical", "team": "infra"},
        "annotations": {
            "summary": "{{ $labels.job }} {{ humanize $value }}",
            "runbook_url": "x://{alert}",
        },
    }


def test_named_groups_follow_the_families_with_their_interval_recordings_first(
    tmp_path: Path,
) -> None:
    groups = _rendered(SPEC, tmp_path)
    assert [(n, g["interval"]) for n, g in groups.items()] == [
        ("web-custom", "30s"),
        ("imported.rules", "2m"),
        ("other", "30s"),
    ]
    assert [r.get("record") or r["alert"] for r in groups["imported.rules"]["rules"]] == [
        "job:up:avg",
        "Down",
    ]
    plain = groups["web-custom"]["rules"][1]
    assert plain["alert"] == "Plain"
    assert "keep_firing_for" not in plain
    assert set(plain["annotations"]) == {"summary", "description", "runbook_url"}


def test_a_recordings_only_spec_builds(tmp_path: Path) -> None:
    spec = "version: 1\nservice: web\nrecordings:\n  - {record: 'job:up:sum', expr: sum(up)}\n"
    assert list(_rendered(spec, tmp_path)) == ["web-custom"]


# --- examples under promtool --------------------------------------------------------------


def _built(spec: Path, folder: Path) -> Path:
    result = build(SpecInputs((spec,), ()), load_catalog([REPO / "signals"]))
    for name, text in result.files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def _promtool(folder: Path, test: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["promtool", "test", "rules", test], cwd=folder, capture_output=True, text=True,
        check=False, timeout=300,
    )  # fmt: skip


FS = 'node_filesystem_avail_bytes{mountpoint="/"}'
GPU = 'DCGM_FI_DEV_GPU_TEMP{job="dcgm"})'
MUTATIONS = [
    ("ops", "< 10\n", "< 4\n", "FilesystemAlmostFull"),
    ("ops", f"{FS} < 10", f"{FS} > 10", "FilesystemAlmostFull"),
    ("ops", "    keep_firing_for: 10m\n", "", "FilesystemAlmostFull"),
    ("ops", "    keep_firing_for: 10m\n", "    keep_firing_for: 15m\n", "FilesystemAlmostFull"),
    ("ops", "    for: 5m\n    keep", "    for: 6m\n    keep", "FilesystemAlmostFull"),
    ("ops", "job:up:sum == 0", "job:up:sum == 1", "JobDown"),
    ("ops", "expr: sum by (job) (up)", "expr: sum by (job) (up) + 1", "JobDown"),
    ("deepseek-v4", f"{GPU} > 85", f"{GPU} > 90", "GpuTemperatureHigh"),
    ("deepseek-v4", f"{GPU} > 85", f"{GPU} >= 85", "GpuTemperatureHigh"),
    (
        "deepseek-v4",
        "max by (instance, gpu) (DCGM",
        "max by (instance) (DCGM",
        "GpuTemperatureHigh",
    ),
]
IDS = [
    "the threshold below the example's value",
    "the comparison turned around",
    "keep_firing_for dropped",
    "keep_firing_for longer",
    "a longer for",
    "a recording-reading alert's comparison",
    "the recording it reads",
    "GpuTemperatureHigh's threshold above 88",
    "GpuTemperatureHigh's > turned into >=",
    "GpuTemperatureHigh without its gpu label",
]


@pytest.fixture(scope="module")
def built_examples(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The golden custom-rules spec and the repository's example spec, built (only the
    example's catalog alerts, diagnoses and SLOs are left out, to keep promtool quick)."""
    ops = _built(GOLDEN_SPEC, tmp_path_factory.mktemp("ops"))
    example = example_spec()  # with the keys it inherits from specs/defaults.yaml
    spec = {k: v for k, v in example.items() if k not in ("diagnoses", "slos")}
    spec["alerts"] = [a for a in example["alerts"] if a["signal"] == "custom"]
    folder = tmp_path_factory.mktemp("example")
    (folder / "spec.yaml").write_text(yaml.safe_dump(spec, allow_unicode=True))
    return {"ops": ops, "deepseek-v4": _built(folder / "spec.yaml", folder)}


@pytest.mark.skipif(shutil.which("promtool") is None, reason="needs promtool")
@pytest.mark.slow
def test_the_examples_pass_on_the_rules_as_written(built_examples: dict[str, Path]) -> None:
    for service, folder in built_examples.items():
        run = _promtool(folder, f"tests/{service}.test.yml")
        assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.skipif(shutil.which("promtool") is None, reason="needs promtool")
@pytest.mark.parametrize(("service", "old", "new", "alert"), MUTATIONS, ids=IDS)
@pytest.mark.slow
def test_an_edited_rule_fails_its_examples(
    service: str, old: str, new: str, alert: str, built_examples: dict[str, Path], tmp_path: Path
) -> None:
    folder = tmp_path / "out"
    shutil.copytree(built_examples[service], folder)
    rules = folder / "prometheus" / f"{service}.rules.yml"
    text = rules.read_text()
    assert text.count(old) == 1, old
    rules.write_text(text.replace(old, new))
    run = _promtool(folder, f"tests/{service}.test.yml")
    assert run.returncode == 1, run.stdout + run.stderr
    assert f"alertname: {alert}" in run.stdout + run.stderr
