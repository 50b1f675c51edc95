"""A latency SLO on a native histogram with custom buckets (NHCB), on a real Prometheus 3.5.

Why a real server: promtool feeds NHCB samples written in its own notation; here Prometheus
makes them itself, from a classic histogram it scrapes with
``convert_classic_histograms_to_nhcb: true`` (and keeps the classic ``_bucket`` series too,
``always_scrape_classic_histograms: true``), exactly as a team that turns the conversion on
gets them. The same SLO built twice, once reading the classic series and once the NHCB one
(``sli.latency.histogram: nhcb``), must record the same SLI from the same scrapes: the same
event counts, the same error ratio, to the last bit.

The target is a small HTTP server on 127.0.0.1 whose histogram grows by 90 fast and 10 slow
requests per scrape; its counts are known, so the ratio is checked against 10% too.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from conftest import ON_PROMETHEUS_2, rendered_rules
from support.exposition import exporter
from support.prometheus import NEEDS_PROMETHEUS, PrometheusServer

pytestmark = [
    pytest.mark.slow,
    NEEDS_PROMETHEUS,
    pytest.mark.skipif(ON_PROMETHEUS_2, reason="native histograms are written for Prometheus 3"),
]

BOUNDS = (0.1, 0.25, 0.5, 1.0)
FAST, SLOW = 90, 10  # requests per scrape: in (0.1, 0.25] and in (0.5, 1]

SLO = """
  - name: {name}
    objective: 99%
    window: 7d
    sli:
      latency:
        metric: http_request_duration_seconds
        threshold: 250ms
        buckets: [0.1, 0.25, 0.5, 1]
        histogram: {kind}
    tiers:
      - {{long: 1h, short: 1m, budget: 2%, alert: page}}
"""
SPEC = (
    'version: 1\nservice: shop\nprometheus: {version: "3.5"}\n'
    "evaluation_interval: 2s\nscrape_interval: 1s\nslos:"
    + SLO.format(name="classic", kind="classic")
    + SLO.format(name="nhcb", kind="nhcb")
)


class _Histogram:
    """A classic histogram that grows by one batch of requests per scrape."""

    def __init__(self) -> None:
        self.scrapes = 0
        self.lock = threading.Lock()

    def exposition(self) -> bytes:
        with self.lock:
            self.scrapes += 1
            n = self.scrapes
        cumulative = {0.1: 0, 0.25: FAST * n, 0.5: FAST * n, 1.0: (FAST + SLOW) * n}
        lines = ["# TYPE http_request_duration_seconds histogram"]
        for bound in BOUNDS:
            lines.append(
                f'http_request_duration_seconds_bucket{{le="{bound}"}} {cumulative[bound]}'
            )
        lines.append(f'http_request_duration_seconds_bucket{{le="+Inf"}} {(FAST + SLOW) * n}')
        lines.append(f"http_request_duration_seconds_sum {0.2 * FAST * n + 0.8 * SLOW * n}")
        lines.append(f"http_request_duration_seconds_count {(FAST + SLOW) * n}")
        return ("\n".join(lines) + "\n").encode()


@pytest.fixture(scope="module")
def target() -> Iterator[str]:
    """The exporter on a free port of 127.0.0.1; its ``host:port``."""
    with exporter(_Histogram().exposition) as address:
        yield address


@pytest.fixture(scope="module")
def prometheus(target: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusServer]:
    """Prometheus 3.5 scraping the target every second, converting its histogram to NHCB,
    evaluating both SLOs' rules; after 40 s of scrapes."""
    root = tmp_path_factory.mktemp("nhcb")
    rules = rendered_rules(root / "build", {"specs/shop.yaml": SPEC})
    scrape = {
        "job_name": "app",
        "scrape_interval": "1s",
        "static_configs": [{"targets": [target]}],
        "convert_classic_histograms_to_nhcb": True,
        "always_scrape_classic_histograms": True,
    }
    server = PrometheusServer(
        root / "data", root, interval=1, scrape_configs=[scrape],
        flags=["--enable-feature=native-histograms"],
    )  # fmt: skip
    config = yaml.safe_load(server.config.read_text())
    config["rule_files"] = [str(p) for p in sorted((rules / "prometheus").glob("*.rules.yml"))]
    server.config.write_text(yaml.safe_dump(config))
    server.start()
    try:
        _wait_for_both(server)
        yield server
    finally:
        server.stop()


def _wait_for_both(server: PrometheusServer) -> None:
    """Until both SLOs have recorded their error ratios (their 1m base window reads 6 s
    back: the first value comes some seconds after the first scrape), then 10 s more."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        got = _values(server, 'slo:sli_error:ratio_rate7d{service="shop"}', time.time())
        if set(got) == {"classic", "nhcb"}:
            time.sleep(10)
            return
        time.sleep(1)
    raise AssertionError(f"the SLOs recorded no error ratio within 120 s: {server.log}")


def _values(server: PrometheusServer, expr: str, at: float) -> dict[str, float]:
    result = server.query(expr, at)["result"]
    return {r["metric"]["slo"]: float(r["value"][1]) for r in result}


def test_the_server_stores_both_the_classic_and_the_nhcb_histogram(
    prometheus: PrometheusServer,
) -> None:
    at = time.time()
    native = prometheus.query("histogram_count(http_request_duration_seconds)", at)["result"]
    classic = prometheus.query("http_request_duration_seconds_count", at)["result"]
    assert len(native) == 1
    assert len(classic) == 1
    assert float(native[0]["value"][1]) == float(classic[0]["value"][1]) > 0


def _base_expressions(server: PrometheusServer, slo: str) -> dict[str, str]:
    """The SLO's base window recordings as Prometheus loaded them: record name → query."""
    groups = server.api("rules", {})["groups"]
    group = next(g for g in groups if g["name"] == f"shop-slo-{slo}")
    return {r["name"]: r["query"] for r in group["rules"] if r["name"].endswith("increase1m")}


RECORDED_TOTAL = re.compile(r"sum\(slo:sli_total:increase1m\{[^}]*\}\)")


def _with_total_inlined(query: str, total: str) -> str:
    """``query`` reading the total's own expression instead of its recording. (Prometheus
    prints a loaded rule's matchers without the space the rendered file has after a comma;
    a first version matched the rendered text, replaced nothing and compared a recording's
    last value with raw series: it failed in CI one time in a few.)"""
    inlined, count = RECORDED_TOTAL.subn(lambda _: f"sum({total})", query)
    assert count == (1 if "slo:sli_total:increase1m" in query else 0), query
    return inlined


def test_the_nhcb_base_windows_count_what_the_classic_ones_do(
    prometheus: PrometheusServer,
) -> None:
    """The base recordings (the only ones that read raw series) evaluated at the same
    instants: the same event counts from the NHCB series as from the ``_bucket`` series.
    (The errors read the total just recorded, which at an instant of a query is that
    group's last evaluation: it is replaced by the total's own expression here.)"""
    classic, nhcb = _base_expressions(prometheus, "classic"), _base_expressions(prometheus, "nhcb")
    assert set(classic) == set(nhcb) == {"slo:sli_total:increase1m", "slo:sli_errors:increase1m"}
    now = time.time()
    for at in (now - 7.5, now - 4.25, now - 1):
        for name in classic:
            values = []
            for slo, queries in (("classic", classic), ("nhcb", nhcb)):
                query = _with_total_inlined(queries[name], queries["slo:sli_total:increase1m"])
                result = prometheus.query(query, at)["result"]
                assert len(result) == 1, (slo, name, result)
                values.append(float(result[0]["value"][1]))
            assert values[0] == values[1] > 0, (name, at, values)


@pytest.mark.parametrize(
    ("recording", "expected"),
    [("slo:sli_error:ratio_rate1m", 0.1), ("slo:sli_error:ratio_rate7d", 0.1),
     ("slo:error_budget_remaining:ratio", 1 - 0.1 / 0.01)],
)  # fmt: skip
def test_both_slos_record_the_share_of_slow_requests(
    prometheus: PrometheusServer, recording: str, expected: float
) -> None:
    got = _values(prometheus, f'{recording}{{service="shop"}}', time.time())
    assert got == {"classic": expected, "nhcb": expected}


def test_the_rules_read_no_bucket_series_for_the_nhcb_slo(prometheus: PrometheusServer) -> None:
    rules = Path(prometheus.data_dir).parent / "build" / "rules" / "prometheus"
    text = (rules / "shop.slo.nhcb.rules.yml").read_text()
    assert "_bucket" not in text
    assert "histogram_fraction(-Inf, 0.25, " in text
