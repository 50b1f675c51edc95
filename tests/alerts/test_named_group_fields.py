"""A named group's ``query_offset`` (Prometheus 2.53+) and ``labels`` (3.0+): written in the
rule file, honoured by promtool's run of the examples (the alert sees its series an offset
late; the group's labels join the alert's, the rule's own win), carried to every target.
The version refusals are in ``test_custom_rules.py``'s table.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import ON_PROMETHEUS_2, run_rulegen, write_tree

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("promtool") is None, reason="needs promtool"),
    pytest.mark.skipif(ON_PROMETHEUS_2, reason="group labels need Prometheus 3"),
]

SPEC = """\
version: 1
service: web
prometheus: {{version: "3.5"}}
evaluation_interval: 30s
scrape_interval: 15s
groups:
  delayed: {{interval: 30s{offset}, labels: {{tier: gold, team: web}}}}
alerts:
  - signal: custom
    name: JobDown
    group: delayed
    expr: up{{job="web"}} == 0
    for: 1m
    severity: critical
    labels: {{team: sre}}
    examples:
      - series:
          - {{series: 'up{{job="web", instance="a"}}', values: "1 1 1 1 0 0 0 0 0 0 0 0 0 0 0 0"}}
        interval: 15s
        labels: {{job: web, instance: a}}
        value: 0
        fires_at: [{fires}]
        silent_at: [{silent}]
"""
# down from 60s, for 1m: fires at 2m; seen 1m late with query_offset: 1m, at 3m
DELAYED = SPEC.format(offset=", query_offset: 1m", fires="3m", silent="2m30s")
PLAIN = SPEC.format(offset="", fires="2m", silent="1m30s")


def _build(root: Path, spec: str, *targets: str) -> Path:
    write_tree(root, {"specs/web.yaml": spec})
    argv = [a for t in targets for a in ("--target", t)]
    result = run_rulegen("build", *argv, cwd=root)
    assert result.code == 0, result.err
    return root / "rules"


def test_the_offset_and_labels_are_written_and_promtool_honours_them(tmp_path: Path) -> None:
    rules = _build(tmp_path, DELAYED, "thanos", "victoriametrics")
    group = yaml.safe_load((rules / "prometheus/web.rules.yml").read_text())["groups"][0]
    assert list(group)[:4] == ["name", "interval", "query_offset", "labels"]
    assert (group["query_offset"], group["labels"]) == ("1m", {"team": "web", "tier": "gold"})
    tests = yaml.safe_load((rules / "tests/web.test.yml").read_text())
    fired = tests["tests"][0]["alert_rule_test"][-1]["exp_alerts"][0]["exp_labels"]
    assert (fired["team"], fired["tier"]) == ("sre", "gold")  # the rule's label wins
    # without the offset in the file, the examples (written for it) fail
    path = rules / "prometheus/web.rules.yml"
    path.write_text(path.read_text().replace("  query_offset: 1m\n", ""))
    proc = subprocess.run(
        ["promtool", "test", "rules", "tests/web.test.yml"],
        cwd=rules, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "JobDown" in proc.stdout + proc.stderr
    # Thanos Ruler has neither: labels into the rules, no offset; vmalert: eval_delay
    thanos = yaml.safe_load((rules / "thanos/web.rules.yml").read_text())["groups"][0]
    assert "query_offset" not in thanos
    assert "labels" not in thanos
    assert thanos["rules"][0]["labels"]["tier"] == "gold"
    assert thanos["rules"][0]["labels"]["team"] == "sre"
    vm = yaml.safe_load((rules / "victoriametrics/web.rules.yml").read_text())["groups"][0]
    assert vm["eval_delay"] == "1m"
    assert vm["rules"][0]["labels"]["tier"] == "gold"
    assert not (rules / "victoriametrics/tests").exists()  # vmalert-tool has no eval_delay


def test_group_labels_reach_vmalert_and_its_tests_pass(tmp_path: Path) -> None:
    if shutil.which("vmalert-tool") is None:
        pytest.skip("vmalert-tool (VictoriaMetrics 1.95+)")
    rules = _build(tmp_path, PLAIN, "victoriametrics")
    tests = yaml.safe_load((rules / "victoriametrics/tests/web.test.yml").read_text())
    fired = tests["tests"][0]["alert_rule_test"][-1]["exp_alerts"][0]["exp_labels"]
    assert (fired["team"], fired["tier"]) == ("sre", "gold")
