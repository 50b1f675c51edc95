"""UTF-8 metric and label names (Prometheus 3): an SLI selector ``{"http.requests.total", …}``,
a latency SLI on an OpenTelemetry histogram (``http.server.request.duration``, classic and
NHCB, matched on ``"http.route"``), a family's ``selectors:`` with a quoted label name, an
alert's ``matchers:`` and an SLO's ``group_by: [k8s.pod]`` are written quoted wherever rulegen
writes them (rules, generated test series), and the generated tests pass on promtool 3.x.
The group_by label reaches the alerts' annotations (``{{ index $labels "k8s.pod" }}``, which
promtool renders as the predictor says), the Alertmanager inhibition's ``equal`` and the
routing file's ``group_by`` (amtool 0.33 loads them in its default and UTF-8 strict modes, not
in classic mode). Under a 2.x declaration they are spec errors (the SLO spec-error table).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ON_PROMETHEUS_2, CliResult, promtool_test, run_rulegen, write_tree

from rulegen import gotemplate
from rulegen.validate import amtool

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("promtool") is None, reason="needs promtool"),
    pytest.mark.skipif(ON_PROMETHEUS_2, reason="UTF-8 names need Prometheus 3"),
    pytest.mark.skipif(
        shutil.which("amtool") is None or not amtool.matcher_modes(amtool.build_info()),
        reason="UTF-8 label names in alertmanager.yml need amtool 0.27 or later",
    ),
]

SPEC = """\
version: 1
service: web
prometheus: {version: "3.5"}
evaluation_interval: 1m
scrape_interval: 15s
selectors: {node: 'job="node", "k8s.cluster"="prod"'}
alerts:
  - {signal: disk_utilization, threshold: 90%, severity: warning, matchers: '"disk.class"="nvme"'}
slos:
  - name: api
    objective: 99.9%
    sli:
      ratio:
        errors: '{"http.requests.total", "http.status"=~"5.."}'
        total: '{"http.requests.total"}'
    group_by: [k8s.pod]
  - name: duration
    objective: 99%
    window: 7d
    sli:
      latency:
        metric: http.server.request.duration
        threshold: 500ms
        buckets: [0.1, 0.5, 1, 5]
        matchers: '"http.route"="/api"'
    alerting: {ticket: {enabled: false}}
  - name: duration-nhcb
    objective: 99%
    window: 7d
    sli:
      latency:
        metric: http.server.request.duration
        threshold: 500ms
        buckets: [0.1, 0.5, 1, 5]
        histogram: nhcb
        matchers: '"http.route"="/api"'
    alerting: {ticket: {enabled: false}}
"""
ROUTING = """\
version: 1
routing:
  default_receiver: a
  group_by: [alertname, service, k8s.pod]
  receivers:
    - name: a
      webhook: {url: 'http://sink.internal/hook'}
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, CliResult]:
    """The spec and the routing file built once, validated (promtool, amtool)."""
    root = write_tree(
        tmp_path_factory.mktemp("utf8"), {"specs/web.yaml": SPEC, "specs/routing.yaml": ROUTING}
    )
    return root, run_rulegen("build", cwd=root)


def test_utf8_names_are_quoted_in_rules_and_tests_and_promtool_passes(
    built: tuple[Path, CliResult],
) -> None:
    root, result = built
    assert result.code == 0, result.err
    assert "promtool test rules: 7 file(s) passed" in result.out
    rules = (root / "rules/prometheus/web.rules.yml").read_text()
    assert 'rate(node_disk_io_time_seconds_total{job="node", "k8s.cluster"="prod", ' in rules
    assert '"disk.class"="nvme"' in rules
    slo = (root / "rules/prometheus/web.slo.api.rules.yml").read_text()
    assert '{"http.requests.total", "http.status"=~"5.."}' in slo
    series = [
        s["series"]
        for name in ("web.test.yml", "web.slo.api.test.yml")
        for t in yaml.safe_load((root / "rules/tests" / name).read_text())["tests"]
        for s in t["input_series"]
    ]
    assert any(s.startswith('{"http.requests.total", "http.status"="5') for s in series)
    assert any('"k8s.cluster"="prod"' in s and '"disk.class"="nvme"' in s for s in series)
    classic = (root / "rules/prometheus/web.slo.duration.rules.yml").read_text()
    assert '{"http.server.request.duration_bucket", "http.route"="/api", le="0.5"}' in classic
    native = (root / "rules/prometheus/web.slo.duration-nhcb.rules.yml").read_text()
    assert (
        'histogram_fraction(-Inf, 0.5, {"http.server.request.duration", "http.route"="/api"}'
        in native
    )
    latency = [
        s["series"]
        for name in ("web.slo.duration.test.yml", "web.slo.duration-nhcb.test.yml")
        for t in yaml.safe_load((root / "rules/tests" / name).read_text())["tests"]
        for s in t["input_series"]
    ]
    assert '{"http.server.request.duration_bucket", "http.route"="/api", le="0.5"}' in latency
    assert '{"http.server.request.duration", "http.route"="/api"}' in latency


def test_a_utf8_group_by_label_is_quoted_and_its_tests_pass(built: tuple[Path, CliResult]) -> None:
    root, result = built
    assert result.code == 0, result.err  # the generated tests of the SLO passed (promtool 3.5)
    rules = (root / "rules/prometheus/web.slo.api.rules.yml").read_text()
    assert 'sum by ("k8s.pod") (' in rules
    assert 'sum by (service, slo, "k8s.pod") (' in rules
    assert "by (k8s.pod" not in rules
    assert ", k8s.pod" not in rules
    tests = yaml.safe_load((root / "rules/tests/web.slo.api.test.yml").read_text())["tests"]
    series = [s["series"] for t in tests for s in t["input_series"]]
    assert all('"k8s.pod"="rulegen-a"' in s for s in series)
    firing = [
        sample["labels"]
        for t in tests
        for check in t["promql_expr_test"]
        for sample in check["exp_samples"]
        if sample["labels"].startswith("ALERTS{")
    ]
    assert firing
    assert all('"k8s.pod"="rulegen-a"' in labels for labels in firing)


def _page_alert(root: Path) -> dict[str, Any]:
    groups = yaml.safe_load((root / "rules/prometheus/web.slo.api.rules.yml").read_text())
    rules = groups["groups"][0]["rules"]
    return next(r for r in rules if r.get("labels", {}).get("severity") == "critical")


def test_annotations_read_the_utf8_group_by_label_as_prometheus_renders_it(
    built: tuple[Path, CliResult],
) -> None:
    # The SLO's page alert as generated, on recordings given as input series: pod p-1 burns
    # 20x in the 1h/5m tier (not 6h/30m) with half its budget left; p-2 does not burn, with
    # 90% left. The summary names the pod through ``index $labels "k8s.pod"`` (as the
    # predictor says), and the description's queries select the pod's own recordings.
    root, result = built
    assert result.code == 0, result.err
    alert = _page_alert(root)
    summary = alert["annotations"]["summary"]
    assert 'k8s.pod={{ index $labels "k8s.pod" }}' in summary
    assert '(index $labels "k8s.pod")' in alert["annotations"]["description"]
    folder = root / "annotations"
    folder.mkdir()
    (folder / "alert.rules.yml").write_text(
        yaml.safe_dump({"groups": [{"name": "page", "rules": [alert]}]}, allow_unicode=True)
    )
    values = {
        "p-1": {"rate1h": 0.02, "rate5m": 0.02, "rate6h": 0.002, "rate30m": 0.002, "left": 0.5},
        "p-2": {"rate1h": 0.0001, "rate5m": 0.0001, "rate6h": 0.0, "rate30m": 0.0, "left": 0.9},
    }
    series = []
    for pod, numbers in values.items():
        own = f'service="web", slo="api", "k8s.pod"="{pod}"'
        for key, number in numbers.items():
            metric = f"slo:sli_error:ratio_{key}"
            if key == "left":
                metric = "slo:error_budget_remaining:ratio"
            series.append({"series": f"{metric}{{{own}}}", "values": f"{number}x10"})
    labels = {"k8s.pod": "p-1", "service": "web", "severity": "critical", "slo": "api"}
    expected_summary = gotemplate.expand(summary, labels, 20.0)
    assert expected_summary.endswith("is burning its error budget for k8s.pod=p-1")
    description = (
        "Burn rate 20× the sustainable rate (long window of the first tier firing). Tiers "
        "firing: 1h/5m (2% of the budget in 1h, burn rate above 14.4×). Error budget left: "
        "50%, exhausted in 18h 0m 0s at this rate."
    )
    test = {
        "rule_files": ["alert.rules.yml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": series,
                "alert_rule_test": [
                    {
                        "eval_time": "5m",
                        "alertname": alert["alert"],
                        "exp_alerts": [
                            {
                                "exp_labels": labels,
                                "exp_annotations": {
                                    "summary": expected_summary,
                                    "description": description,
                                },
                            }
                        ],
                    }
                ],
            }
        ],
    }
    (folder / "alert.test.yml").write_text(yaml.safe_dump(test, allow_unicode=True))
    ran = promtool_test(folder / "alert.test.yml")
    assert ran.returncode == 0, ran.stdout + ran.stderr


def test_the_utf8_group_by_label_reaches_alertmanager_and_amtool_loads_it(
    built: tuple[Path, CliResult],
) -> None:
    # amtool 0.27 on (0.33 here) takes UTF-8 label names in group_by and an inhibition's
    # equal in its default and UTF-8 strict modes; classic mode refuses them, which the build
    # says in a warning (a team that runs the classic parser must rename the label)
    root, result = built
    assert result.code == 0, result.err
    config = yaml.safe_load((root / "rules/alertmanager/alertmanager.yml").read_text())
    assert config["route"]["group_by"] == ["alertname", "service", "k8s.pod"]
    assert [r["equal"] for r in config["inhibit_rules"]] == [["service", "slo", "k8s.pod"]]
    assert "amtool check-config: alertmanager.yml ok (and with utf8-strict-mode)" in result.out
    assert (
        "warning: alertmanager/alertmanager.yml does not load in Alertmanager's classic-mode "
        "(--enable-feature=classic-mode)" in result.out
    )
    assert 'invalid label name "k8s.pod"' in result.out
    rules = root / "rules"
    assert amtool.check_config("alertmanager/alertmanager.yml", rules).ok
    assert amtool.check_config("alertmanager/alertmanager.yml", rules, "utf8-strict-mode").ok
    classic = amtool.check_config("alertmanager/alertmanager.yml", rules, "classic-mode")
    assert not classic.ok
