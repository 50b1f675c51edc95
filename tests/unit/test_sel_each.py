"""``sel_each()``: a catalog template reads every exporter family of the spec's ``selectors:``
(``scrape_down`` reads ``up`` of node, vLLM and dcgm-exporter targets alike), while ``sel()``
stays the signal's own family.

Why: ``up`` belongs to no exporter; an alert on it must cover each job the spec scrapes, and
only those (``up`` of every job would page this service for every other one).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rulegen.alerts.model import ResolvedAlert
from rulegen.alerts.resolve import render_quantity
from rulegen.catalog import load_catalog
from rulegen.core import promql
from rulegen.errors import SpecError
from rulegen.load import load_specs

HEAD = """\
version: 1
service: sig
evaluation_interval: 15s
scrape_interval: 15s
"""


def _alert(tmp_path: Path, selectors: str, alert: str) -> ResolvedAlert:
    spec = tmp_path / "sig.yaml"
    spec.write_text(f"{HEAD}{selectors}alerts:\n  - {alert}\n", "utf-8")
    (resolved,) = load_specs([spec], load_catalog())
    (only,) = resolved.alerts
    return only


def test_every_family_of_the_selectors_is_read_with_the_alerts_matchers(tmp_path: Path) -> None:
    selectors = (
        "selectors:\n  vllm: 'job=\"vllm\"'\n  node: 'job=\"node\"'\n  dcgm: 'job=\"dcgm\"'\n"
    )
    alert = _alert(
        tmp_path, selectors,
        "{signal: scrape_down, threshold: 0%, severity: critical, "
        "matchers: 'instance=~\"gpu-node-.+\"'}",
    )  # fmt: skip
    assert alert.quantity == (
        "1 - (\n"
        '  avg_over_time(up{job="dcgm", instance=~"gpu-node-.+"}[5m])\n'
        '  or avg_over_time(up{job="node", instance=~"gpu-node-.+"}[5m])\n'
        '  or avg_over_time(up{job="vllm", instance=~"gpu-node-.+"}[5m])\n'
        ")"
    )
    # the generated test writes series for the signal's own family (node)
    shown = [m.render() for m in alert.selector_matchers]
    assert shown == ['job="node"', 'instance=~"gpu-node-.+"']


def test_families_with_the_same_selector_are_read_once(tmp_path: Path) -> None:
    selectors = "selectors:\n  node: 'cluster=\"a\"'\n  vllm: 'cluster=\"a\"'\n"
    alert = _alert(tmp_path, selectors, "{signal: scrape_down, threshold: 0%, severity: info}")
    assert alert.quantity.count("up{") == 1
    assert 'up{cluster="a"}' in alert.quantity


def test_without_the_own_family_the_test_series_match_another_selector(tmp_path: Path) -> None:
    selectors = "selectors:\n  vllm: 'job=\"vllm\"'\n"
    alert = _alert(tmp_path, selectors, "{signal: scrape_down, threshold: 0%, severity: info}")
    assert 'up{job="vllm"}' in alert.quantity
    assert [m.render() for m in alert.selector_matchers] == ['job="vllm"']


def test_a_spec_without_selectors_is_an_error_naming_the_field(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as raised:
        _alert(tmp_path, "", "{signal: scrape_down, threshold: 0%, severity: info}")
    (diagnostic,) = raised.value.diagnostics
    assert "scrape_down" in diagnostic.message
    assert "the spec has none; add selectors:" in diagnostic.message


def test_dashboard_filters_reach_every_familys_selector(tmp_path: Path) -> None:
    selectors = "selectors:\n  node: 'job=\"node\"'\n  vllm: 'job=\"vllm\"'\n"
    alert = _alert(tmp_path, selectors, "{signal: scrape_down, threshold: 0%, severity: info}")
    extra = (promql.Matcher("instance", "=~", "$instance"),)
    text = render_quantity(alert, extra, None)
    assert 'up{job="node", instance=~"$instance"}' in text
    assert 'up{job="vllm", instance=~"$instance"}' in text


def test_sel_stays_the_signals_own_family(tmp_path: Path) -> None:
    selectors = "selectors:\n  node: 'job=\"node\"'\n  vllm: 'job=\"vllm\"'\n"
    alert = _alert(tmp_path, selectors, "{signal: cpu_pressure, threshold: 50%, severity: info}")
    assert alert.quantity == ('rate(node_pressure_cpu_waiting_seconds_total{job="node"}[5m])')
    assert alert.family_selectors == ()
