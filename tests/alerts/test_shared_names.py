"""Custom alerts as Prometheus rule files have them: a warning/critical pair of one name, label
values that are Go templates, and a ``for`` longer than a day.

The pair is proved with the real promtool on a user test (``specs/tests/``) that the build
runs: the warning fires before the critical, both by their own ``for``, and the test fails
when the pair's ``for`` values are swapped. Templated labels are proved by an example whose
expected label is the template expanded, and whose test fails when the template changes.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import CliResult, promtool_test, rendered_rules, write_tree

Cli = Callable[..., CliResult]
NEEDS_PROMTOOL = pytest.mark.skipif(shutil.which("promtool") is None, reason="needs promtool")

PAIR = """
    version: 1
    service: web
    alerts:
      - signal: custom
        name: TargetDown
        expr: up == 0
        for: 2m
        severity: warning
        annotations: {}
      - signal: custom
        name: TargetDown
        expr: up == 0
        for: 10m
        severity: critical
        annotations: {}
      - signal: custom
        name: Underused
        expr: avg_over_time(up[1h]) < 0.1
        for: 1w
        keep_firing_for: 2d
        severity: info
    """
PAIR_TEST = """
    rule_files: [../prometheus/web.rules.yml]
    evaluation_interval: 1m
    tests:
      - name: the warning fires after 2m, the critical after 10m
        interval: 1m
        input_series:
          - series: 'up{job="a"}'
            values: '0x20'
        alert_rule_test:
          - eval_time: 1m
            alertname: TargetDown
          - eval_time: 5m
            alertname: TargetDown
            exp_alerts:
              - exp_labels: {job: a, service: web, severity: warning}
          - eval_time: 12m
            alertname: TargetDown
            exp_alerts:
              - exp_labels: {job: a, service: web, severity: warning}
              - exp_labels: {job: a, service: web, severity: critical}
    """


def _rules(cli: Cli, root: Path, spec: str) -> list[dict[str, Any]]:
    """``spec`` as ``ROOT/specs/web.yaml``, built in-process; its rules in file order."""
    write_tree(root, {"specs/web.yaml": spec})
    built = cli("build", "--no-validate", str(root / "specs"), "--out", str(root / "rules"))
    assert built.code == 0, built.err
    text = (root / "rules/prometheus/web.rules.yml").read_text()
    return [r for g in yaml.safe_load(text)["groups"] for r in g["rules"]]


def _strip_annotations(rules: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k != "annotations"} for r in rules]


def test_a_pair_of_one_name_is_two_rules_and_a_for_of_a_week_is_kept(
    cli: Cli, tmp_path: Path
) -> None:
    rules = _rules(cli, tmp_path, PAIR)
    assert _strip_annotations(rules) == [
        {"alert": "TargetDown", "expr": "up == 0", "for": "2m",
         "labels": {"service": "web", "severity": "warning"}},
        {"alert": "TargetDown", "expr": "up == 0", "for": "10m",
         "labels": {"service": "web", "severity": "critical"}},
        {"alert": "Underused", "expr": "avg_over_time(up[1h]) < 0.1", "for": "7d",
         "keep_firing_for": "2d", "labels": {"service": "web", "severity": "info"}},
    ]  # fmt: skip


def test_rulegen_diff_tells_the_pair_apart_by_severity(cli: Cli, in_tmp: Path) -> None:
    write_tree(in_tmp, {"old/web.yaml": PAIR, "specs/web.yaml": PAIR.replace("10m", "15m")})
    text = cli("diff", "--base-dir", "old")
    assert text.code == 0, text.err
    assert "  changed  TargetDown (critical)" in text.out.splitlines()
    assert "    for: 10m → 15m" in text.out.splitlines()
    data = json.loads(cli("diff", "--base-dir", "old", "--format", "json").out)
    alerts = {(a["alert"], a.get("severity")): a["change"] for a in data["services"][0]["alerts"]}
    assert alerts == {
        ("TargetDown", "critical"): "changed",
        ("TargetDown", "warning"): "unchanged",
        ("Underused", None): "unchanged",
    }


@NEEDS_PROMTOOL
@pytest.mark.slow
def test_the_pair_fires_by_its_own_for_under_the_build(cli: Cli, in_tmp: Path) -> None:
    write_tree(in_tmp, {"specs/web.yaml": PAIR, "specs/tests/pair.test.yml": PAIR_TEST})
    built = cli("build")
    assert built.code == 0, built.err
    assert "promtool test rules: 1 file(s) passed" in built.out
    swapped = PAIR.replace("for: 2m", "for: X").replace("for: 10m", "for: 2m")
    write_tree(in_tmp, {"specs/web.yaml": swapped.replace("for: X", "for: 10m")})
    assert cli("build").code == 1


TEMPLATED = """
    version: 1
    service: web
    alerts:
      - signal: custom
        name: TargetDown
        expr: up == 0
        severity: warning
        labels: {target: '{{ $labels.job }}/{{ $labels.instance }}'}
        annotations: {summary: '{{ $labels.instance }} is down'}
        examples:
          - series:
              - {series: 'up{job="api",instance="a:9100"}', values: '0x5'}
            fires_at: [2m]
            labels: {job: api, instance: 'a:9100'}
    """


def test_a_verbatim_alerts_labels_are_go_templates_and_other_labels_stay_text(
    cli: Cli, tmp_path: Path
) -> None:
    """With ``annotations:`` a custom alert is written as a rule file has it; without, its
    label values are text (escaped, so Prometheus prints them as written)."""
    literal = TEMPLATED.split("        annotations:")[0]
    templated = _rules(cli, tmp_path / "t", TEMPLATED)
    plain = _rules(cli, tmp_path / "p", literal)
    assert templated[0]["labels"]["target"] == "{{ $labels.job }}/{{ $labels.instance }}"
    assert plain[0]["labels"]["target"] == (
        '{{ "{" }}{ $labels.job }}/{{ "{" }}{ $labels.instance }}'
    )


@NEEDS_PROMTOOL
@pytest.mark.slow
def test_an_example_expects_the_expanded_label_and_fails_when_the_template_changes(
    tmp_path: Path,
) -> None:
    rules = rendered_rules(tmp_path, {"specs/web.yaml": TEMPLATED})
    test = rules / "tests/web.test.yml"
    assert "target: api/a:9100" in test.read_text()
    run = promtool_test(test)
    assert run.returncode == 0, run.stdout + run.stderr
    rule_file = rules / "prometheus/web.rules.yml"
    text = rule_file.read_text()
    edited = text.replace("{{ $labels.job }}/{{ $labels.instance }}", "{{ $labels.instance }}")
    assert edited != text
    rule_file.write_text(edited)
    run = promtool_test(test)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "alertname: TargetDown" in run.stdout + run.stderr
