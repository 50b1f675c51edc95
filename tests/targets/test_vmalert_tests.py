"""The VictoriaMetrics target's generated tests: the ``vmalert-tool unittest`` file written
beside the vmalert rules (its format, the labels vmalert adds, MetricsQL's timings), how a
build runs it and reports a failure, and the inlined reads that carry the group labels.

The mutation suite of the same tests is ``test_vmalert_tool_catches_mutations.py``.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import REPO, write_tree
from support.vmtool import NEEDS_VMALERT_TOOL

from rulegen.build import build
from rulegen.catalog import load_catalog
from rulegen.errors import ValidationFailed
from rulegen.load import discover
from rulegen.render.victoriametrics import inline_group
from rulegen.validate import vmalert
from rulegen.validate.targets import run_vmalert_tests

GOLDEN = REPO / "tests" / "golden" / "example-targets" / "expected" / "victoriametrics"


SPEC = """\
version: 1
service: web
evaluation_interval: 15s
scrape_interval: 15s
targets:
  victoriametrics: {labels: {ruler: vm-a}}
alerts:
  - {signal: disk_utilization, threshold: 90%, for: 1m, severity: warning}
  - signal: custom
    name: JobDown
    expr: up{job="web"} == 0
    for: 1m
    severity: critical
    examples:
      - series: [{series: 'up{job="web", instance="a"}', values: "1 1 0 0 0 0 0 0"}]
        interval: 15s
        labels: {job: web, instance: a}
        value: 0
        fires_at: [90s]
        silent_at: [60s]
"""


def _golden_tests() -> dict[str, Any]:
    data = yaml.safe_load((GOLDEN / "tests" / "deepseek-v4.test.yml").read_text())
    assert isinstance(data, dict)
    return data


def test_the_example_file_is_vmalert_tools_format() -> None:
    data = _golden_tests()
    assert data["rule_files"] == ["../deepseek-v4.rules.yml"]
    rules = yaml.safe_load((GOLDEN / "deepseek-v4.rules.yml").read_text())
    group_of = {r["alert"]: g["name"] for g in rules["groups"] for r in g["rules"] if "alert" in r}
    checks = [c for t in data["tests"] for c in t["alert_rule_test"]]
    assert checks
    assert all(c["groupname"] == group_of[c["alertname"]] for c in checks)
    for check in checks:  # the example's group label, on every expected alert
        assert all(a["exp_labels"]["ruler"] == "vmalert" for a in check["exp_alerts"])
    assert not [t for t in data["tests"] if "promql_expr_test" in t]
    samples = [s for t in data["tests"] for c in t["metricsql_expr_test"] for s in c["exp_samples"]]
    assert samples
    for sample in samples:  # vmalert's ALERTS series carry the group's name and labels
        assert 'alertgroup="deepseek-v4-' in sample["labels"]
        assert 'ruler="vmalert"' in sample["labels"]


def test_rates_fire_earlier_than_on_prometheus_by_their_missing_ramp() -> None:
    """MetricsQL's rate() reads a constant slope from the second sample: DiskUtilizationHigh
    (rate over 1m, for 1m, 15s scrapes) fires 1m15s after its series start, where promtool's
    test, whose rate ramps up over the first minute, expects 2m."""
    vm = [c for t in _golden_tests()["tests"] for c in t["alert_rule_test"]]
    promtool = yaml.safe_load((REPO / "rules/tests/deepseek-v4.test.yml").read_text())
    ours = [c for t in promtool["tests"] for c in t["alert_rule_test"]]

    def fires(checks: list[dict[str, Any]]) -> list[str]:
        return [c["eval_time"] for c in checks if c["alertname"] == "DiskUtilizationHigh"]

    assert fires(vm) == ["1m", "1m15s"]
    assert fires(ours) == ["1m45s", "2m"]


def test_an_inlined_read_carries_the_group_labels_of_the_stored_series() -> None:
    rules: list[dict[str, Any]] = [
        {"record": "a:rate5m", "expr": "sum(rate(c[5m]))", "labels": {"service": "web"}},
        {"alert": "Drop", "expr": 'a:rate5m{service="web"} / a:rate5m{service="web"} offset 1h'},
    ]
    alert = inline_group(rules, group_labels={"ruler": "vm-a", "service": "ignored"})[1]
    assert alert["expr"].splitlines()[-1] == (
        'label_set(sum(rate(c[5m])), "ruler", "vm-a", "service", "ignored")'
        ' / a:rate5m{service="web"} offset 1h'
    )


def test_a_spec_writes_its_vmalert_tests_beside_the_rules(in_tmp: Path) -> None:
    write_tree(in_tmp, {"specs/web.yaml": SPEC})
    result = build(discover([in_tmp / "specs"]), load_catalog(), targets=("victoriametrics",))
    data = yaml.safe_load(result.files["victoriametrics/tests/web.test.yml"])
    assert data["rule_files"] == ["../web.rules.yml"]
    names = {c["alertname"] for t in data["tests"] for c in t["alert_rule_test"]}
    assert names == {"DiskUtilizationHigh", "JobDown"}
    example = [
        c for t in data["tests"] for c in t["alert_rule_test"] if c["alertname"] == "JobDown"
    ]
    assert [c["eval_time"] for c in example] == ["1m", "1m30s"]
    assert example[1]["exp_alerts"][0]["exp_labels"]["ruler"] == "vm-a"
    assert (
        "victoriametrics/tests/web.test.yml"
        not in build(discover([in_tmp / "specs"]), load_catalog()).files
    )


FAILED_REPORT = textwrap.dedent("""\


    Unit Testing:  victoriametrics/tests/web.test.yml
    FAILED
    failed to run unit test for file "victoriametrics/tests/web.test.yml": \n\
    [
    testGroupName: DiskUtilizationHigh: fires at 99% after 1m; silent at 81%,
        groupname: web-node, alertname: DiskUtilizationHigh, time: 1m0s, \n\
            exp:[], \n\
            got:[
                0:
                  Labels:{alertgroup="web-node", alertname="DiskUtilizationHigh"}
                ] \n\
    testGroupName: DiskUtilizationHigh: fires at 99% after 1m; silent at 81%,
        expr: "ALERTS{alertname=\\"DiskUtilizationHigh\\"}", time: 15s,
            exp: {__name__="ALERTS"} 1E+00
            got: nil]2026/12/03 17:33:34 unittest failed
    """)


def test_a_failure_report_is_one_line_per_failed_check() -> None:
    assert vmalert.failures(FAILED_REPORT) == [
        "groupname: web-node, alertname: DiskUtilizationHigh, time: 1m0s, exp:[], got:[ 0: "
        'Labels:{alertgroup="web-node", alertname="DiskUtilizationHigh"} ]',
        'expr: "ALERTS{alertname=\\"DiskUtilizationHigh\\"}", time: 15s, exp: '
        '{__name__="ALERTS"} 1E+00 got: nil',
    ]


def test_without_vmalert_tool_the_tests_are_written_and_not_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RULEGEN_VMALERT_TOOL", str(tmp_path / "missing"))
    summary = run_vmalert_tests(tmp_path, {"victoriametrics/tests/web.test.yml": ""})
    assert summary == [
        "warning: 1 victoriametrics test file(s) not run: RULEGEN_VMALERT_TOOL="
        f"{tmp_path / 'missing'} does not exist; {vmalert.TOOL_HINT}"
    ]
    assert run_vmalert_tests(tmp_path, {"victoriametrics/web.rules.yml": ""}) == []


@pytest.mark.slow
@NEEDS_VMALERT_TOOL
def test_a_build_runs_the_tests_and_reports_each_failed_check(in_tmp: Path) -> None:
    write_tree(in_tmp, {"specs/web.yaml": SPEC})
    result = build(discover([in_tmp / "specs"]), load_catalog(), targets=("victoriametrics",))
    out = in_tmp / "out"
    for name, text in result.files.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(text)
    assert run_vmalert_tests(out, result.files) == [
        "vmalert-tool unittest: 1 victoriametrics test file(s) passed"
    ]
    rules = out / "victoriametrics/web.rules.yml"
    rules.write_text(rules.read_text().replace("> 0.9\n", "> 0.995\n", 1))
    with pytest.raises(ValidationFailed) as failed:
        run_vmalert_tests(out, result.files)
    lines = [(d.file, d.code, d.message.split(", exp:")[0]) for d in failed.value.diagnostics]
    where = ("victoriametrics/tests/web.test.yml", "vmalert/unittest")
    assert lines == [
        (*where, "groupname: web-node, alertname: DiskUtilizationHigh, time: 1m15s"),
        (
            *where,
            'expr: "ALERTS{alertname=\\"DiskUtilizationHigh\\", alertstate=\\"pending\\"}", '
            "time: 15s",
        ),
    ]
