"""UTF-8 metric and label names (Prometheus 3): an SLI selector ``{"http.requests.total", …}``,
a latency SLI on an OpenTelemetry histogram (``http.server.request.duration``, classic and
NHCB, matched on ``"http.route"``), a family's ``selectors:`` with a quoted label name and an
alert's ``matchers:`` are written
quoted wherever rulegen writes them (rules, generated test series), and the generated tests
pass on promtool 3.x. Under a 2.x declaration they are spec errors (the SLO spec-error table).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from conftest import ON_PROMETHEUS_2, run_rulegen, write_tree

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("promtool") is None, reason="needs promtool"),
    pytest.mark.skipif(ON_PROMETHEUS_2, reason="UTF-8 names need Prometheus 3"),
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


def test_utf8_names_are_quoted_in_rules_and_tests_and_promtool_passes(tmp_path: Path) -> None:
    root = write_tree(tmp_path, {"specs/web.yaml": SPEC})
    result = run_rulegen("build", cwd=root)
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
