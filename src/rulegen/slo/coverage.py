"""An exact model of the coverage recordings on raw series with a scrape gap.

Why: a generated test must give the exact count of base terms each window holds after a gap,
and that depends on Prometheus details the rules inherit: ``increase()`` needs two samples in
its range (both ends included, Prometheus 2.x); the 3.x base form (``rulegen.slo.rules``)
needs one evaluation step whose both ends find a sample within the lookback (left-open in
3.x: ``(t - 5m, t]``); and a recording that an evaluation no longer
produces gets a stale marker, so a later read at an offset finds nothing there (the lookback
bridges only evaluations that never happened, which promtool cannot skip). MetricsQL
(VictoriaMetrics, ``metricsql``) has its own rules: ``increase()`` answers as soon as its
window ``(k - base, k]`` holds one sample (a series' first counts from 0), and not for an
empty one; its selectors look back ``(k - 5m, k]``. Modelled here step by step, so the test
predicts what the rules record rather than restating them.
"""

from __future__ import annotations

from decimal import Decimal

from rulegen.slo.windows import Term, chain_of

Series = list[int | None]  # one value per evaluation, None where the recording has no sample
LOOKBACK = Decimal(300)  # Prometheus' default --query.lookback-delta


def term_counts(
    plan: dict[Decimal, tuple[Term, ...]],
    window: Decimal,
    scraped: tuple[bool, ...],
    step: Decimal,
    evaluated: tuple[bool, ...] | None = None,
    left_open: bool = False,
    grain: int = 1,
    metricsql: bool = False,
) -> dict[Decimal, Series]:
    """Every count recording of ``window``'s cascade at every instant ``step`` apart (one per
    raw sample), for raw samples present where ``scraped`` and rule evaluations where
    ``evaluated`` (every instant by default, as in promtool).

    An instant never evaluated has no sample, and a read there finds the latest evaluation up
    to the lookback earlier (what a Prometheus restart leaves); an evaluated instant whose
    result was empty holds a stale marker, and a read finds nothing.
    """
    ran = evaluated if evaluated is not None else (True,) * len(scraped)
    key = (tuple(plan.items()), window, scraped, step, ran, left_open, grain, metricsql)
    found = _COUNTS.get(key)
    if found is None:
        if len(_COUNTS) >= _MAX_COUNTS:
            _COUNTS.clear()
        found = _COUNTS[key] = _counts(plan, window, scraped, step, ran, left_open, grain,
                                       metricsql)  # fmt: skip
    return {w: list(series) for w, series in found.items()}  # the caller's own lists


# Why cached: every SLO of a fleet with the same windows, interval and Prometheus version
# models the same scrape gap (``slo.testgen``), and the model reads each term at each of
# thousands of instants. The key is every argument; the service and the SLO's names are
# not among them.
_COUNTS: dict[tuple[object, ...], dict[Decimal, tuple[int | None, ...]]] = {}
_MAX_COUNTS = 256


def _counts(
    plan: dict[Decimal, tuple[Term, ...]], window: Decimal, scraped: tuple[bool, ...],
    step: Decimal, ran: tuple[bool, ...], left_open: bool, grain: int, metricsql: bool,
) -> dict[Decimal, tuple[int | None, ...]]:  # fmt: skip
    """``term_counts`` computed (each series a tuple, so the cache cannot be changed)."""
    chain = chain_of(plan, window)
    base = chain[0]
    reach = int(base / step)
    counts: dict[Decimal, Series] = {}
    if metricsql:
        present = _metricsql(scraped, reach)
    elif left_open:
        present = _stepped(scraped, reach, step, grain)
    else:
        present = _ranged(scraped, reach)
    counts[base] = [1 if ran[k] and present[k] else None for k in range(len(scraped))]
    for w in chain[1:]:
        counts[w] = [
            _sum(counts, plan[w], k, step, ran, left_open or metricsql) if ran[k] else None
            for k in range(len(scraped))
        ]
    return {w: tuple(series) for w, series in counts.items()}


def _ranged(scraped: tuple[bool, ...], reach: int) -> list[bool]:
    """``increase(x[base])`` (2.x, both ends included): two samples in ``[k - reach, k]``."""
    return [sum(scraped[max(0, k - reach) : k + 1]) >= 2 for k in range(len(scraped))]


def _metricsql(scraped: tuple[bool, ...], reach: int) -> list[bool]:
    """MetricsQL's ``increase(x[base])`` (``rollupDelta``): a value whenever ``(k - reach, k]``
    holds a sample (a series' first counts from 0); none for an empty window, even with a
    sample just before it (``rollupConfig.doInternal`` takes the sample before the window
    only when one follows it, and an instant query reads nothing after ``k``)."""
    return [any(scraped[max(0, k - reach + 1) : k + 1]) for k in range(len(scraped))]


def _stepped(scraped: tuple[bool, ...], reach: int, step: Decimal, grain: int) -> list[bool]:
    """The 3.x steps (``grain`` instants each): some step ``j`` whose ends ``k - j·grain`` and
    ``k - (j + 1)·grain`` both see a sample within the lookback ``(i - 5m, i]`` (the same
    one too: a step between two reads of one sample adds 0, but is there)."""
    lookback = int(LOOKBACK / step)
    latest: list[int | None] = []
    last: int | None = None
    for i, here in enumerate(scraped):
        last = i if here else last
        latest.append(last if last is not None and i - last < lookback else None)
    ends = [(j * grain, (j + 1) * grain) for j in range(reach // grain)]
    return [
        any(
            k - back >= 0 and latest[k - now] is not None and latest[k - back] is not None
            for now, back in ends
        )
        for k in range(len(scraped))
    ]


def _sum(
    counts: dict[Decimal, Series],
    terms: tuple[Term, ...],
    k: int,
    step: Decimal,
    ran: tuple[bool, ...],
    left_open: bool = False,
) -> int | None:
    found = [_read(counts[t.window], k, t.offset, step, ran, left_open) for t in terms]
    present = [v for v in found if v is not None]
    return sum(present) if present else None


def _read(
    series: Series,
    k: int,
    offset: Decimal,
    step: Decimal,
    ran: tuple[bool, ...],
    left_open: bool = False,
) -> int | None:
    """The sample a selector ``offset`` back finds at instant ``k``: that of the latest
    evaluation within the lookback (a value, or a stale marker for an empty result); the
    lookback's far end is excluded from 3.x on."""
    at = k - int(offset / step)
    reach = int(LOOKBACK / step) - (1 if left_open else 0)
    for index in range(at, at - reach - 1, -1):
        if index < 0:
            return None
        if ran[index]:
            return series[index]
    return None
