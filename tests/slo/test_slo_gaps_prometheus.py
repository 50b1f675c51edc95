"""SLO recordings with missed rule evaluations, on a real Prometheus: coverage and its alert.

Why a real Prometheus: promtool evaluates every rule at every step, so it cannot show what a
Prometheus restart does (evaluations that never happened, no stale markers, the lookback
bridging part of the hole). Here raw counters are backfilled for a day and a few hours, and
the SLO's recordings are backfilled level by level with ``promtool tsdb create-blocks-from
rules`` over the time before and after a 1-hour hole, so no evaluation happens in it, exactly
as if the rule group had stopped. The SLO's window is 1 day (its cascade 5m … 6h, 1d) to keep
the history short; the rules are the same as for 30 days, one level shorter.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest
import yaml
from conftest import rendered_rules
from support.prometheus import (
    NEEDS_PROMETHEUS,
    PrometheusServer,
    backfill_recordings,
    create_blocks_from_openmetrics,
    openmetrics,
    recording_levels,
    running,
)
from support.slo_gap import BURST, DAY, END, GAP, HOUR, OWN, PER_MINUTE, SPEC, STEP, T0

from rulegen.slo.coverage import term_counts
from rulegen.slo.windows import plan_windows

pytestmark = [pytest.mark.slow, NEEDS_PROMETHEUS]

# The timeline and the SLO (support/slo_gap.py); this test's burst has 10% errors.
WINDOWS = tuple(Decimal(w) for w in (300, 1800, 3600, 6 * 3600, DAY))  # the SLO's


def _counters() -> list[tuple[str, list[tuple[int, float]]]]:
    ok: list[tuple[int, float]] = []
    failed: list[tuple[int, float]] = []
    good = bad = 0
    for t in range(T0 - HOUR, END + 1, STEP):
        errors = PER_MINUTE // 10 if BURST[0] < t <= BURST[1] else 0
        good, bad = good + PER_MINUTE - errors, bad + errors
        ok.append((t, float(good)))
        failed.append((t, float(bad)))
    return [('http_requests_total{code="200"}', ok), ('http_requests_total{code="500"}', failed)]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusServer]:
    """A Prometheus with the raw counters and the SLO's recordings, none in the hole."""
    root = tmp_path_factory.mktemp("gaps")
    rules = rendered_rules(root / "build", {"specs/shop.yaml": SPEC})
    raw = root / "raw.om"
    raw.write_text(openmetrics(_counters()))
    data = root / "data"
    create_blocks_from_openmetrics(raw, data)
    levels = recording_levels(sorted((rules / "prometheus").glob("*.slo.*.rules.yml")))
    with running(data, root) as prometheus:
        for index, span in enumerate(((T0, GAP[0] - STEP), (GAP[1], END))):
            work = root / f"span{index}"
            work.mkdir()
            backfill_recordings(prometheus, levels, span, STEP, work)
        yield prometheus


def _value(server: PrometheusServer, expr: str, at: int) -> float | None:
    result = server.query(expr, at)["result"]
    assert len(result) <= 1, result
    return float(result[0]["value"][1]) if result else None


@pytest.fixture(scope="module")
def incomplete(server: PrometheusServer) -> str:
    """The expression of the ``SLORecordingsIncomplete`` alert, as rendered."""
    rules = Path(server.data_dir).parent / "build" / "rules" / "prometheus"
    group = yaml.safe_load((rules / "shop.slo.checkout.rules.yml").read_text())["groups"][0]
    alert = next(r for r in group["rules"] if r.get("alert") == "SLORecordingsIncomplete")
    assert alert["for"] == "3m"
    return str(alert["expr"])


def test_coverage_is_exactly_1_without_a_gap(server: PrometheusServer, incomplete: str) -> None:
    at = GAP[0] - 10 * 60  # a full day recorded, no hole yet
    assert _value(server, f"slo:sli_coverage:ratio{{{OWN}}}", at) == 1
    assert _value(server, incomplete, at) is None


def _model() -> list[int | None]:
    """The count of 5m terms the 1d window holds at every minute from the raw series' start,
    from ``rulegen.slo.coverage`` (evaluations from T0, none in the hole)."""
    instants = range(T0 - HOUR, END + 1, STEP)
    ran = tuple(t >= T0 and not GAP[0] <= t < GAP[1] for t in instants)
    plan = plan_windows(WINDOWS, Decimal(300))
    counts = term_counts(plan, Decimal(DAY), (True,) * len(ran), Decimal(STEP), ran)
    return counts[Decimal(DAY)]


def test_coverage_is_the_share_of_terms_the_hole_left_out(server: PrometheusServer) -> None:
    counts = _model()
    seen = []
    for at in range(GAP[1], END + 1, 10 * STEP):
        count = counts[(at - T0 + HOUR) // STEP] or 0
        got = _value(server, f"slo:sli_coverage:ratio{{{OWN}}}", at)
        seen.append(got)
        assert got == count / (DAY // 300), at - GAP[1]
    # an hour without evaluations leaves more than an hour out: coarse terms read at offsets
    # that fell in the hole drop their whole chunk
    assert min(v for v in seen if v is not None) < 1 - HOUR / DAY


def test_the_incomplete_alert_fires_after_the_gap(
    server: PrometheusServer, incomplete: str
) -> None:
    # for: 3m: the condition holds at every evaluation of the hour after the hole
    after = range(GAP[1] + STEP, GAP[1] + HOUR, STEP)
    assert all(_value(server, incomplete, at) is not None for at in after)


# --- fallbacks: a quiet 10-minute hole, a 7-day SLO ------------------------------------------

WEEK = 7 * DAY
QUIET = (T0 + 4 * DAY + 7 * HOUR, T0 + 4 * DAY + 7 * HOUR + 10 * 60)  # no evaluation, no error
LAST = T0 + WEEK + DAY  # the last day [LAST - 1d, LAST] reads the hole through the 3d terms
BURSTS = ((T0 + DAY + 3 * HOUR, 20), (T0 + 5 * DAY + 2 * HOUR, 30))  # (start, % errors) 1h each
WEEK_SPEC = SPEC.replace("window: 1d", "window: 7d").replace("checkout", "weekly")
WEEKLY = 'service="shop", slo="weekly"'


def _error_share(t: int) -> int:
    """Per-mille of failed requests in the minute ending at ``t``: 1% with two hour-long
    bursts, none around the hole."""
    if QUIET[0] - 30 * 60 < t <= QUIET[1] + 30 * 60:
        return 0
    return next((pct * 10 for start, pct in BURSTS if start < t <= start + HOUR), 10)


def _weekly_counters() -> tuple[list[tuple[str, list[tuple[int, float]]]], dict[int, float]]:
    """The raw counters, and the exact 7-day error ratio at every minute of the last day."""
    ok: list[tuple[int, float]] = []
    failed: list[tuple[int, float]] = []
    good = bad = 0
    cumulative: dict[int, tuple[int, int]] = {}
    for t in range(T0 - HOUR, LAST + 1, STEP):
        errors = PER_MINUTE * _error_share(t) // 1000
        good, bad = good + PER_MINUTE - errors, bad + errors
        ok.append((t, float(good)))
        failed.append((t, float(bad)))
        cumulative[t] = (good + bad, bad)
    exact = {}
    for t in range(LAST - DAY, LAST + 1, STEP):
        total = cumulative[t][0] - cumulative[t - WEEK][0]
        exact[t] = (cumulative[t][1] - cumulative[t - WEEK][1]) / total
    series = [('http_requests_total{code="200"}', ok), ('http_requests_total{code="500"}', failed)]
    return series, exact


@pytest.fixture(scope="module")
def weekly(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[PrometheusServer, dict[int, float], Path]]:
    """A Prometheus with 8 days of the weekly SLO's recordings, none in the quiet hole."""
    root = tmp_path_factory.mktemp("weekly")
    rules = rendered_rules(root / "build", {"specs/shop.yaml": WEEK_SPEC})
    series, exact = _weekly_counters()
    raw = root / "raw.om"
    raw.write_text(openmetrics(series))
    data = root / "data"
    create_blocks_from_openmetrics(raw, data)
    files = sorted((rules / "prometheus").glob("*.slo.*.rules.yml"))
    levels = recording_levels(files)
    with running(data, root) as prometheus:
        for index, span in enumerate(((T0, QUIET[0] - STEP), (QUIET[1], LAST))):
            work = root / f"span{index}"
            work.mkdir()
            backfill_recordings(prometheus, levels, span, STEP, work)
        yield prometheus, exact, files[0]


def _range(server: PrometheusServer, expr: str) -> dict[int, float]:
    params = {"query": expr, "start": str(LAST - DAY), "end": str(LAST), "step": str(STEP)}
    result = server.api("query_range", params)["result"]
    assert len(result) == 1, result
    return {int(t): float(v) for t, v in result[0]["values"]}


def _without_fallbacks(rule_file: Path, record: str) -> str:
    """The window's sum as it was before fallbacks: only the terms themselves."""
    group = yaml.safe_load(rule_file.read_text())["groups"][0]
    expr = next(r["expr"] for r in group["rules"] if r.get("record") == record)
    terms = [line.strip() for line in expr.splitlines() if line.startswith("  label_replace(slo")]
    return "sum by (service, slo) (" + " or ".join(terms) + ")"


def test_fallbacks_keep_every_minute_of_the_last_day_within_1_percent(
    weekly: tuple[PrometheusServer, dict[int, float], Path],
) -> None:
    server, exact, rule_file = weekly
    sli = _range(server, f"slo:sli_error:ratio_rate7d{{{WEEKLY}}}")
    assert sorted(sli) == sorted(exact)
    off = {t: sli[t] / exact[t] - 1 for t in exact}
    worst = max(off.values(), key=abs)
    assert all(abs(v) <= 0.01 for v in off.values()), f"worst {worst:+.3%}"
    # the hole does reach the last day: the terms alone miss a chunk for some minutes
    errors = _range(server, _without_fallbacks(rule_file, "slo:sli_errors:increase7d"))
    total = _range(server, _without_fallbacks(rule_file, "slo:sli_total:increase7d"))
    bare = {t: errors[t] / total[t] / exact[t] - 1 for t in exact if t in errors and t in total}
    assert max(abs(v) for v in bare.values()) > 0.05
