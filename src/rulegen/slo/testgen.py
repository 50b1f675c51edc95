"""Generated promtool tests for an SLO: outage, slow burn, per-tier edges, zero traffic.

Why: burn-rate alerts are easy to get subtly wrong (a window one step short, a factor off by
the objective, a NaN on idle). Each scenario replays realistic history at the group's own
interval and checks, through ``ALERTS`` and each tier's condition, the exact evaluation at
which things change, predicted by ``rulegen.slo.simulate`` and bounded by the Workbook's
detection times.
"""

from __future__ import annotations

from dataclasses import replace
from decimal import ROUND_FLOOR, Decimal
from fractions import Fraction
from math import ceil, floor

from rulegen import gotemplate, units
from rulegen.core import promql
from rulegen.generated import AlertCheck, ExpectedAlert, ExprCheck, TestCase
from rulegen.slo.coverage import term_counts
from rulegen.slo.expression_tests import expression_tests
from rulegen.slo.isolation import alone, isolate
from rulegen.slo.model import (
    PAGE,
    TICKET,
    EventsSLI,
    GoodputSLI,
    RawSLI,
    ResolvedSLO,
    SLOAlert,
    Tier,
)
from rulegen.slo.resolve import base_window, windows_of
from rulegen.slo.rules import (
    BUDGET_LEFT,
    COVERAGE,
    CURRENT_BURN,
    ERRORS,
    OBJECTIVE,
    RATIO,
    TERMS,
    absent_annotations,
    alert_annotations,
    alert_labels,
    current_window,
    describe_tier,
    goodput_note,
    single_target_condition,
    tier_condition,
    window_name,
)
from rulegen.slo.series import SeriesMaker, events_per_sample
from rulegen.slo.simulate import (
    Phase,
    Traffic,
    alert_timeline,
    evaluations,
    grain_of,
    holds_series,
    onset,
    tier_holds,
)
from rulegen.slo.simulate import (
    ratio as window_ratio,
)
from rulegen.slo.windows import chain_of, plan_windows

COVERAGE_SPAN = Decimal(3600)  # the longest window the coverage test fills (promtool steps)
ABSENT_STEPS = 240  # the absent alert's ``for`` in steps at most, at the group's interval


def slo_tests(slo: ResolvedSLO) -> tuple[tuple[TestCase, ...], tuple[TestCase, ...]]:
    """Every scenario of one SLO: those stepped at the group's interval, and the long-history
    ones stepped at ``history_step`` (promtool evaluates every group at the test file's
    ``evaluation_interval``, so they go to a file of their own)."""
    if isinstance(slo.sli, EventsSLI | RawSLI):
        return expression_tests(slo), ()
    return _counter_tests(slo)


def _counter_tests(slo: ResolvedSLO) -> tuple[tuple[TestCase, ...], tuple[TestCase, ...]]:
    """The scenarios of an SLI of counters or histograms: raw series made for each burn."""
    series = SeriesMaker(slo)
    cases: list[TestCase] = []
    history: list[TestCase] = []
    slow_tier = _outage_and_slow_burn(slo, series, cases, history)
    for alert in slo.alerts:
        for tier in alert.tiers:
            if tier == slow_tier:
                continue  # the slow burn already fires the ticket through it alone
            alone = _tier_alone(slo, alert, tier, series)
            if alone is not None:
                (cases if alone.interval_seconds == slo.evaluation else history).append(alone)
    for tier in slo.tiers:
        cases.extend(_edges(slo, tier, series))
    if slo.min_traffic is not None and slo.alerts:
        cases.extend(_min_traffic(slo, slo.alerts[0], series))
    cases.append(_zero_traffic(slo, series))
    cases.append(_scrape_gap(slo, series))
    _goodput_cases(slo, series, cases, history)
    if slo.absent is not None:
        absent = _absent(slo, series)
        (cases if absent.interval_seconds == slo.evaluation else history).append(absent)
    return tuple(cases), tuple(history)


def _outage_and_slow_burn(
    slo: ResolvedSLO, series: SeriesMaker, cases: list[TestCase], history: list[TestCase]
) -> Tier | None:
    """The outage of the page and the slow burn of the ticket (each the first rule of its
    alert: a tier's alert of its own comes after it); the ticket's tier the slow burn fires
    alone, if any."""
    alerts: dict[str, SLOAlert] = {}
    for one in slo.alerts:
        alerts.setdefault(one.key, one)
    if PAGE in alerts:
        cases.append(_outage(slo, alerts[PAGE], series))
    if TICKET not in alerts:
        return None
    pages = tuple(a for a in slo.alerts if a.key == PAGE)
    slow = _slow_burn(slo, alerts[TICKET], pages, series)
    if slow is None:
        return None
    history.append(slow[0])
    return slow[1]


def _goodput_cases(
    slo: ResolvedSLO, series: SeriesMaker, cases: list[TestCase], history: list[TestCase]
) -> None:
    """A goodput SLI's own scenarios: its bound, and its alert against the worst target's."""
    sli = slo.sli
    if not isinstance(sli, GoodputSLI):
        return
    cases.append(_goodput_bound(slo, sli, series))
    worst = _goodput_worst(slo, sli, series)
    if worst is not None:
        (cases if worst.interval_seconds == slo.evaluation else history).append(worst)


def _goodput_bound(slo: ResolvedSLO, sli: GoodputSLI, series: SeriesMaker) -> TestCase:
    """The goodput SLI's errors are ``min(total, Σᵢ badᵢ)``, checked on the base window in
    three stretches of steady traffic: slow requests of each histogram that are other
    requests (the bound is reached: the SLI is the exact goodput), the same requests slow in
    every histogram (the SLI is the bound, counting each once per histogram), and more slow
    events than requests (no good request left, never a negative count)."""
    e = slo.evaluation
    span = base_window(windows_of(slo))
    width = _steps(e, span)
    length = width + 2
    n = _scale(slo, e)
    count = len(sli.latencies)
    stretches = (
        ("slow requests of each histogram are other requests: the SLI is exact",
         [n * (i + 1) // 100 for i in range(count)]),
        ("the same requests slow in every histogram: the SLI counts them once in each",
         [n * 3 // 100] * count),
        ("more slow events than requests: every request counts as bad, no fewer good than 0",
         [n * 6 // 10] * count),
    )  # fmt: skip
    bads: list[list[int]] = [[0] for _ in range(count)]
    for _, per_step in stretches:
        for index, bad in enumerate(per_step):
            last = bads[index][-1]
            bads[index].extend(last + bad * (k + 1) for k in range(length))
    total = tuple(n * k for k in range(3 * length + 1))
    errors = tuple(min(t, sum(b[k] for b in bads)) for k, t in enumerate(total))
    traffic = Traffic(e, total, errors, grain_of(slo, e))
    own, labels = _identity(slo), series.own_labels()
    checks = []
    for index, (why, _) in enumerate(stretches):
        k = (index + 1) * length
        added = total[k] - total[k - width]
        slow = sum(b[k] - b[k - width] for b in bads)
        counted = min(added, slow)
        at = _t(e * k)
        name = ERRORS + window_name(span)
        checks.append(ExprCheck(at, name + own, ((name + labels, str(counted)),),
                                f"{why}: {slow} slow events of {added} requests"))  # fmt: skip
        name = RATIO + window_name(span)
        ratio = repr(float(counted) / float(added))
        checks.append(ExprCheck(at, name + own, ((name + labels, ratio),), why))
    case = _case(f"{slo.name}: the goodput SLI is the lower bound total - sum of slow events",
                 traffic, series, checks)  # fmt: skip
    return replace(case, series=series.series(traffic, bads=tuple(tuple(b) for b in bads)))


def _goodput_worst(slo: ResolvedSLO, sli: GoodputSLI, series: SeriesMaker) -> TestCase | None:
    """Slow requests spread over the histograms (two thirds of them in the first): the
    goodput alert fires, and the same tiers on the first histogram alone (the worst single
    target's latency SLO) hold later, or never. Checked at build time on the exact model,
    and in the test on the raw series."""
    if not slo.alerts:
        return None
    alert = slo.alerts[0]
    longest = max(t.long for t in alert.tiers)
    step = slo.evaluation if longest <= 6 * 3600 else history_step(slo)
    budget = Fraction(slo.budget)
    lowest = min(t.factor for t in alert.tiers)
    ratio = min(2 * lowest * budget, (1 + lowest * budget) / 2)
    n = _scale(slo, step)
    per_step = min(n - 1, ceil(ratio * n))
    worst_burn = Fraction(per_step * 2, 3 * n) / budget
    burn = worst_burn if worst_burn > lowest else Fraction(per_step, n) / budget
    reach = max(t.factor * Fraction(t.long) / burn for t in alert.tiers)
    length = Decimal(ceil(reach / Fraction(step)) + 3) * step
    length += max(t.short for t in alert.tiers) + alert.for_seconds
    phases = [Phase(_steps(step, longest), n, 0), Phase(_steps(step, length), n, per_step)]
    traffic = Traffic.of(step, phases, grain_of(slo, step))
    count = len(sli.latencies)
    later = tuple(e // (3 * (count - 1)) for e in traffic.errors)
    first = tuple(e - later[k] * (count - 1) for k, e in enumerate(traffic.errors))
    single = Traffic(step, traffic.total, first, traffic.grain)
    fired = alert_timeline(slo, alert, traffic).first_firing(longest)
    if fired is None:
        raise AssertionError(f"{slo.name}: the goodput burn never fires the {alert.key}")
    alone = alert_timeline(slo, alert, single).first_firing()
    if alone is not None and alone < fired:
        raise AssertionError(f"{slo.name}: the worst single target fires before the goodput")
    holds = [any(h) for h in zip(*(holds_series(slo, t, single) for t in alert.tiers),
                                  strict=True)]  # fmt: skip
    target = sli.first
    expr = "count(" + " ".join(single_target_condition(slo, target, alert.tiers).split()) + ")"
    what = f"{target.metric} ≤ {units.format_latency(target.threshold)} alone"
    checks = _starts(series, alert, fired, step, f"slow requests from {_t(longest)}")
    checks.append(ExprCheck(_t(fired), expr, (), f"{what}: no tier holds yet"))
    began = next((i for i, h in enumerate(holds) if h), None)
    if began is None:
        checks.append(ExprCheck(_t(traffic.end), expr, (), f"{what}: no tier ever holds"))
    else:
        checks += [
            ExprCheck(_t(step * (began - 1)), expr, (), f"{what}: not yet"),
            ExprCheck(_t(step * began), expr, (("{}", "1"),), f"{what}: a tier holds, later"),
        ]
    name = (
        f"{slo.name}: the goodput {alert.key} fires no later than one on the worst single "
        f"target ({what})"
    )
    case = _case(name, traffic, series, checks)
    return replace(case, series=series.series(traffic, bads=(first, *(later,) * (count - 1))))


def _tier_alone(
    slo: ResolvedSLO, alert: SLOAlert, tier: Tier, series: SeriesMaker
) -> TestCase | None:
    """A burn just above this tier's factor (and below the next) fires the alert through this
    tier alone, at the predicted evaluation: a factor or window changed in the alert rule
    moves that evaluation."""
    coarse = history_step(slo)
    step = slo.evaluation if coarse / tier.long > Decimal("0.02") else coarse
    found = isolate(slo, alert, tier, step)
    if found is None:
        return None
    burn = units.literal(found.burn)
    checks = _starts(
        series, alert, found.fires, step, f"a {burn}x burn from {_t(found.burn_start)}"
    )
    checks.append(_tier_holds_at(slo, tier, found.fires, True, "this tier holds"))
    name = f"{slo.name}: the {alert.key} fires through tier {_name(tier)} alone at a {burn}x burn"
    annotated = _annotated(slo, series, found.traffic, found.fires)
    return _case(name, found.traffic, series, checks, annotated)


def _min_traffic(slo: ResolvedSLO, alert: SLOAlert, series: SeriesMaker) -> list[TestCase]:
    """A total outage below min_traffic never fires; just above it, it does."""
    assert slo.min_traffic is not None
    e = slo.evaluation
    per_step = Fraction(slo.min_traffic) * Fraction(e)
    below, above = floor(per_step * Fraction(95, 100)), ceil(per_step * Fraction(105, 100))
    if below < 1:
        return []
    warmup = max(t.short for t in alert.tiers) + 2 * e
    steps = _steps(e, warmup + max(t.short for t in alert.tiers))
    out = []
    for label, count in (("below", below), ("above", above)):
        traffic = Traffic.of(e, [Phase(steps, count, count)], grain_of(slo, e))
        fired = alert_timeline(slo, alert, traffic).first_firing()
        rate = f"{float(Fraction(count) / Fraction(e)):g} requests/s"
        if label == "below":
            if fired is not None:
                raise AssertionError(f"{slo.name}: an outage below min_traffic fires")
            checks = [_alert_at(series, alert, traffic.end, None, f"only {rate}: no alert")]
        else:
            if fired is None:
                raise AssertionError(f"{slo.name}: an outage above min_traffic never fires")
            checks = _starts(series, alert, fired, e, f"{rate}, all failing")
        name = f"{slo.name}: a total outage just {label} min_traffic ({rate})"
        out.append(_case(name, traffic, series, checks))
    return out


def history_step(slo: ResolvedSLO) -> Decimal:
    """The step of the long-history tests: the base window every SLO window is a sum of.

    Every window recording read at an offset falls on a multiple of it, so the rules compute at
    those times exactly what they compute when evaluated at the group's own interval; only the
    detection is seen at this coarser step (and predicted at it).
    """
    return base_window(windows_of(slo))


def _steps(step: Decimal, seconds: Decimal) -> int:
    return int(ceil(seconds / step))


def _scale(slo: ResolvedSLO, step: Decimal, *ratios: Fraction) -> int:
    return events_per_sample(slo.min_traffic, step, *ratios)


def _t(seconds: Decimal) -> str:
    return units.format_duration(seconds)


def _identity(slo: ResolvedSLO) -> str:
    return f"{{service={promql.quote(slo.service)}, slo={promql.quote(slo.name)}}}"


def _alert_at(
    series: SeriesMaker, alert: SLOAlert, at: Decimal, state: str | None, why: str
) -> ExprCheck:
    """``ALERTS`` of this SLO's alert at ``at``: exactly one series in ``state``, or none."""
    samples = () if state is None else ((series.alert_labels(alert, state), "1"),)
    return ExprCheck(_t(at), series.alert_query(alert), samples, why)


def _starts(
    series: SeriesMaker, alert: SLOAlert, at: Decimal, step: Decimal, why: str
) -> list[ExprCheck]:
    """The alert fires at ``at`` and not one evaluation earlier (pending then, with ``for``)."""
    before = None if alert.for_seconds == 0 else "pending"
    return [
        _alert_at(series, alert, at - step, before, "not firing one evaluation earlier"),
        _alert_at(series, alert, at, "firing", why),
    ]


def _tier_holds_at(slo: ResolvedSLO, tier: Tier, at: Decimal, holds: bool, why: str) -> ExprCheck:
    expr = "count(" + " ".join(tier_condition(slo, tier).split()) + ")"
    return ExprCheck(_t(at), expr, (("{}", "1"),) if holds else (), why)


def _tier_onset(
    slo: ResolvedSLO, tier: Tier, traffic: Traffic, after: Decimal, why: str
) -> list[ExprCheck]:
    """The tier's condition holds first at the predicted evaluation, not one earlier."""
    began = onset(slo, tier, traffic, after)
    if began is None:
        return []
    return [
        _tier_holds_at(slo, tier, began - traffic.step, False, f"tier {_name(tier)}: not yet"),
        _tier_holds_at(slo, tier, began, True, f"tier {_name(tier)}: {why}"),
    ]


def _name(tier: Tier) -> str:
    return f"{window_name(tier.long)}/{window_name(tier.short)}"


def _outage(slo: ResolvedSLO, alert: SLOAlert, series: SeriesMaker) -> TestCase:
    """Clean history as long as the longest page window, then every request fails, then none.

    The page must fire within the Workbook's detection time (budget share × SLO window / burn
    rate, the burn rate of a total outage being 1 / (1 − objective)) plus one evaluation, and
    resolve once the short windows no longer hold errors above the factor.
    """
    e = slo.evaluation
    n = _scale(slo, e)
    history = max(t.long for t in alert.tiers)
    detect = {t.index: t.factor * Fraction(slo.budget) * Fraction(t.long) for t in alert.tiers}
    outage = (Decimal(ceil(max(detect.values()) / Fraction(e))) + 2) * e + alert.for_seconds
    recover = max(t.short for t in alert.tiers) + alert.for_seconds + 3 * e
    traffic = Traffic.of(
        e,
        [
            Phase(_steps(e, history), n, 0),
            Phase(_steps(e, outage), n, n),
            Phase(_steps(e, recover), n, 0),
        ],
        grain_of(slo, e),
    )
    timeline = alert_timeline(slo, alert, traffic)
    fired = timeline.first_firing(history)
    bound = min(detect.values()) + Fraction(e) + Fraction(alert.for_seconds)
    if fired is None or Fraction(fired - history) > bound:
        raise AssertionError(f"{slo.name}: the outage page at {fired} misses {float(bound)}s")
    theory = f"{float(min(detect.values())):g}s"
    checks = _starts(
        series, alert, fired, e, f"outage from {_t(history)}: within {theory} + 1 eval"
    )
    for tier in alert.tiers:
        checks += _tier_onset(slo, tier, traffic, history, "detects the outage")
    recovered = history + outage
    resolved = timeline.resolved_after(recovered, evaluations(traffic))
    if resolved is None:
        raise AssertionError(f"{slo.name}: the page does not resolve after the outage")
    checks += [
        _alert_at(series, alert, resolved - e, "firing", "a short window still holds errors"),
        _alert_at(series, alert, resolved, None, f"short windows clean (recovery {_t(recovered)})"),
    ]
    annotated = _annotated(slo, series, traffic, fired)
    name = f"{slo.name}: a total outage pages, then resolves"
    return _case(name, traffic, series, checks, annotated)


def _slow_burn(
    slo: ResolvedSLO, ticket: SLOAlert, pages: tuple[SLOAlert, ...], series: SeriesMaker
) -> tuple[TestCase, Tier | None] | None:
    """Clean history as long as the longest ticket window, then a burn that only the ticket
    tier with the lowest factor reacts to (no page tier, no other ticket tier); returns the
    test and that tier when the model shows it fires alone."""
    burn = _slow_rate(ticket, tuple(t for page in pages for t in page.tiers))
    if burn is None:
        return None
    e = history_step(slo)
    ratio = Fraction(burn) * Fraction(slo.budget)
    n = _scale(slo, e, ratio)
    history = max(t.long for t in ticket.tiers)
    reach = max(t.factor * Fraction(t.long) / Fraction(burn) for t in ticket.tiers)
    length = Decimal(ceil(reach / Fraction(e)) + 2) * e + ticket.for_seconds
    errors = int(ratio * n)
    phases = [Phase(_steps(e, history), n, 0), Phase(_steps(e, length), n, errors)]
    traffic = Traffic.of(e, phases, grain_of(slo, e))
    fired = alert_timeline(slo, ticket, traffic).first_firing(history)
    if fired is None:
        raise AssertionError(f"{slo.name}: the slow burn never opens a ticket")
    rate = units.literal(burn)
    checks = _starts(series, ticket, fired, e, f"a {rate}x burn from {_t(history)} opens a ticket")
    for tier in ticket.tiers:
        checks += _tier_onset(slo, tier, traffic, history, f"holds under a {rate}x burn")
    lowest = min(ticket.tiers, key=lambda t: t.factor)
    isolated = lowest if alone(slo, ticket, lowest, traffic, fired) else None
    for page in pages:
        checks += [_alert_at(series, page, at, None, "no page") for at in (fired, traffic.end)]
        if any(any(holds_series(slo, t, traffic)) for t in page.tiers):
            raise AssertionError(f"{slo.name}: a page tier holds in the slow burn")
    name = f"{slo.name}: a {rate}x slow burn opens a ticket, no page"
    annotated = _annotated(slo, series, traffic, fired)
    return _case(name, traffic, series, checks, annotated), isolated


def _slow_rate(ticket: SLOAlert, page_tiers: tuple[Tier, ...]) -> Decimal | None:
    """A round burn rate above the lowest ticket factor, below the next ticket factor and
    below the lowest page factor: a slow burn that only one ticket tier notices."""
    factors = sorted({t.factor for t in ticket.tiers})
    low = factors[0] * Fraction(21, 20)
    caps = [*factors[1:], *(t.factor for t in page_tiers)] if page_tiers else factors[1:]
    target = low * 2 if not caps else min(caps) * Fraction(19, 20)
    if target <= low:
        return None
    for digits in range(2, 6):
        rounded = _round_down(target, digits)
        if Fraction(rounded) > low:
            return rounded
    return None


def _round_down(value: Fraction, digits: int) -> Decimal:
    exact = Decimal(value.numerator) / Decimal(value.denominator)
    quantum = Decimal(1).scaleb(exact.adjusted() - digits + 1)
    return exact.quantize(quantum, rounding=ROUND_FLOOR)


def _edges(slo: ResolvedSLO, tier: Tier, series: SeriesMaker) -> list[TestCase]:
    """A steady burn 1% under the tier's factor does not satisfy it; 1% over does."""
    threshold = tier.factor * Fraction(slo.budget)
    e = slo.evaluation
    n = _scale(slo, e)
    while threshold * n / 100 < 10:
        n *= 10
    at = base_window(windows_of(slo)) + e
    out = []
    for label, scale, rounding in (
        ("just under", Fraction(99, 100), floor),
        ("just over", Fraction(101, 100), ceil),
    ):
        errors = min(n, int(rounding(threshold * scale * n)))
        traffic = Traffic.of(e, [Phase(_steps(e, at), n, errors)], grain_of(slo, e))
        holds = tier_holds(slo, tier, traffic, at)
        if holds != (label == "just over"):
            raise AssertionError(f"{slo.name}: the burn {label} tier {_name(tier)} misbehaves")
        why = f"error ratio {errors}/{n} against the tier's {float(threshold):g}"
        name = f"{slo.name}: a burn {label} tier {_name(tier)} ({float(tier.factor):g}x)"
        out.append(_case(name, traffic, series, [_tier_holds_at(slo, tier, at, holds, why)]))
    return out


def _zero_traffic(slo: ResolvedSLO, series: SeriesMaker) -> TestCase:
    """No traffic yields no ratio, burn or alert (never NaN); after traffic stops the budget
    left stays where it was."""
    e = slo.evaluation
    current = current_window(slo)
    quiet = max(current, 2 * e)
    ratio = min(t.factor for t in slo.tiers) * Fraction(slo.budget) / 2 if slo.tiers else 0
    n = _scale(slo, e)
    while (ratio * n).denominator != 1 and n < 10**12:
        n *= 10
    idle, busy, after = _steps(e, quiet), _steps(e, 2 * quiet), _steps(e, 4 * quiet)
    phases = [Phase(idle, 0, 0), Phase(busy, n, int(ratio * n)), Phase(after, 0, 0)]
    traffic = Traffic.of(e, phases, grain_of(slo, e))
    first, stop, end = e * idle, e * (idle + busy), traffic.end
    own = _identity(slo)
    derived = f'{{__name__=~"{RATIO}.+|{BUDGET_LEFT}|{CURRENT_BURN}", {own[1:-1]}}}'
    budget = f"{BUDGET_LEFT}{own}"
    checks = [
        ExprCheck(_t(first), f"count({derived})", (), "no traffic yet: no ratio, burn, budget"),
        ExprCheck(_t(end), f"count({RATIO}{window_name(current)}{own})", (), "traffic stopped"),
        ExprCheck(
            _t(end),
            f"{budget} - {budget} offset {_t(end - stop)}",
            ((series.own_labels(), "0"),),
            "traffic stopped: the error budget left is unchanged",
        ),
        *_values_at(slo, series, traffic, stop),
    ]
    for alert in slo.alerts:
        checks += [
            _alert_at(series, alert, at, None, "no traffic, no alert") for at in (first, end)
        ]
    return _case(
        f"{slo.name}: zero traffic stays silent and keeps the budget", traffic, series, checks
    )


def _scrape_gap(slo: ResolvedSLO, series: SeriesMaker) -> TestCase:
    """A raw scrape gap leaves base terms out: the count of present terms of a window is full
    before the gap and short after it, and the coverage is exactly that count's share.

    The window checked is the SLO's own when promtool can fill it cheaply, else the longest
    window of its cascade up to ``COVERAGE_SPAN``; counts and coverage come from the model
    of ``rulegen.slo.coverage`` (stale markers included), never from the rules.
    """
    e = slo.evaluation
    plan = plan_windows(windows_of(slo), base_window(windows_of(slo)))
    chain = chain_of(plan, slo.window)
    base = chain[0]
    checked = max(w for w in chain if w <= max(COVERAGE_SPAN, base))
    full_at = _steps(e, checked + base)
    gap = range(full_at + 1, full_at + 1 + _steps(e, 4 * base))
    steps = gap.stop + _steps(e, checked)
    traffic = Traffic.of(e, [Phase(steps, _scale(slo, e), 0)], grain_of(slo, e))
    scraped = tuple(k not in gap for k in range(steps + 1))
    counts = term_counts(plan, slo.window, scraped, e, left_open=slo.left_open,
                         grain=grain_of(slo, e), metricsql=slo.metricsql)  # fmt: skip
    window = counts[checked]
    short_at = min(range(gap.start, steps + 1), key=lambda k: (window[k] or 0, k))
    terms = int(slo.window / base)
    own = _identity(slo)
    checks = []
    for k, why in ((full_at, "no gap yet"), (short_at, "terms the scrape gap left out")):
        count, covered = window[k] or 0, counts[slo.window][k] or 0
        value = units.literal(Decimal(count)) if window[k] is not None else None
        name = TERMS + window_name(checked)
        samples = ((name + own, value),) if value is not None else ()
        at = _t(e * k)
        checks.append(ExprCheck(at, name + own, samples, f"{why}: {count} of the terms"))
        ratio = repr(covered / terms) if covered != terms else "1"
        checks.append(ExprCheck(at, COVERAGE + own, ((COVERAGE + own, ratio),), f"{why}: coverage"))
    name = (
        f"{slo.name}: a {_t(e * len(gap))} scrape gap leaves terms of the "
        f"{window_name(checked)} window out (coverage below 1)"
    )
    return TestCase(
        name=name,
        interval_seconds=e,
        series=series.series(traffic, gap),
        alert_checks=(),
        expr_checks=tuple(checks),
        evaluations=len(evaluations(traffic)),
    )


def _values_at(
    slo: ResolvedSLO, series: SeriesMaker, traffic: Traffic, at: Decimal
) -> list[ExprCheck]:
    """Budget left, current burn rate and objective at ``at``, to the last bit (the same float
    operations as PromQL, so ``0.001`` written as ``0.002`` or a wrong window shows)."""
    budget = float(units.literal(slo.budget))
    whole = window_ratio(traffic, at, slo.window)
    current = window_ratio(traffic, at, current_window(slo))
    if whole is None or current is None:
        raise AssertionError(f"{slo.name}: no traffic where the budget is checked")
    own, labels = _identity(slo), series.own_labels()
    left, burn = repr(1 - whole / budget), repr(current / budget)
    return [
        ExprCheck(_t(at), BUDGET_LEFT + own, ((BUDGET_LEFT + labels, left),), "budget left"),
        ExprCheck(_t(at), CURRENT_BURN + own, ((CURRENT_BURN + labels, burn),), "current burn"),
        ExprCheck(
            _t(at), OBJECTIVE + own, ((OBJECTIVE + own, units.literal(slo.objective)),), "objective"
        ),
    ]


def _case(
    name: str, traffic: Traffic, series: SeriesMaker, checks: list[ExprCheck],
    alert_checks: tuple[AlertCheck, ...] = (),
) -> TestCase:  # fmt: skip
    return TestCase(
        name=name,
        interval_seconds=traffic.step,
        series=series.series(traffic),
        alert_checks=alert_checks,
        expr_checks=tuple(checks),
        evaluations=len(evaluations(traffic)),
    )


def _annotated(
    slo: ResolvedSLO, series: SeriesMaker, traffic: Traffic, at: Decimal
) -> tuple[AlertCheck, ...]:
    """Where the page or ticket has labels or annotations of its own (``alerting.page``,
    ``alerting.ticket``, a tier's): every burn-rate alert firing at ``at``, with its exact
    labels and annotations (promtool compares both whole), so each shows on its own alert
    and on no other. None otherwise (the ``ALERTS`` checks prove the labels)."""
    if not any(a.labels or a.annotations for a in slo.alerts):
        return ()
    firing = [a for a in slo.alerts if at in alert_timeline(slo, a, traffic).firing]
    expected = tuple(_burn_alert(slo, a, series, traffic, at) for a in firing)
    names = ", ".join(a.role for a in firing)
    return (AlertCheck(_t(at), slo.alert_name, expected, f"firing: {names}, each its own"),)


def _burn_alert(
    slo: ResolvedSLO, alert: SLOAlert, series: SeriesMaker, traffic: Traffic, at: Decimal
) -> ExpectedAlert:
    """The page or ticket as promtool shows it at ``at``: its labels, and its annotations
    as Prometheus expands them, the description's numbers from the exact model (the burn
    rate of the first tier firing, the tiers firing, the budget left and when it runs out)."""
    labels = {**dict(alert_labels(slo, alert)), **series.group}
    shown = {"service": slo.service, "slo": slo.name, **series.group}
    index = int(at / traffic.step)
    holding = [t for t in alert.tiers if holds_series(slo, t, traffic)[index]]
    budget = float(units.literal(slo.budget))
    burn = _ratio_at(slo, traffic, at, holding[0].long) / budget
    left = 1 - _ratio_at(slo, traffic, at, slo.window) / budget
    tiers = "".join(f" {describe_tier(t)}" for t in holding)
    if left > 0:
        runs_out = gotemplate.humanize_duration(left * float(units.literal(slo.window)) / burn)
        rest = f", exhausted in {runs_out} at this rate"
    else:
        rest = " (exhausted)"
    description = (
        f"Burn rate {burn:.3g}× the sustainable rate (long window of the first tier firing). "
        f"Tiers firing:{tiers}. Error budget left: {gotemplate.humanize_percentage(left)}{rest}."
    )
    annotations = []
    for key, text in alert_annotations(slo, alert):
        if key == "description":  # literal text: the goodput note is escaped
            text = description + goodput_note(slo)
        annotations.append((key, gotemplate.expand(text, shown, burn)))
    annotations += sorted(alert.annotations)
    return ExpectedAlert(tuple(sorted(labels.items())), tuple(annotations))


def _ratio_at(slo: ResolvedSLO, traffic: Traffic, at: Decimal, window: Decimal) -> float:
    found = window_ratio(traffic, at, window)
    if found is None:
        raise AssertionError(f"{slo.name}: no traffic in the {window_name(window)} window")
    return found


def _absent(slo: ResolvedSLO, series: SeriesMaker) -> TestCase:
    """``alerting.absent``: no series of the SLI's total at first, then its series, then a
    stale marker ends them (a target gone). The absent alert fires exactly ``for`` after the
    start and after the stale marker (pending one evaluation earlier), stays silent while the
    series exist, and fires with its exact labels and annotations.

    Stepped at the group's interval, or at the history step when ``for`` is longer than
    ``ABSENT_STEPS`` of it."""
    absent = slo.absent
    assert absent is not None
    e = slo.evaluation
    if _steps(e, absent.for_seconds) > ABSENT_STEPS:
        e = history_step(slo)
    wait = _steps(e, absent.for_seconds)
    before, present = wait + 2, 3
    traffic = Traffic.of(e, [Phase(present, _scale(slo, e), 0)], grain_of(slo, e))
    inputs = tuple(
        replace(s, values=f"_x{before} {s.values} stale") for s in series.series(traffic)
    )
    gone = e * (before + present + 1)  # the stale marker's sample
    checks: list[ExprCheck] = []
    for start, why in ((Decimal(0), "no series yet"), (gone, "the series ended (stale)")):
        fires = start + e * wait
        if wait:
            checks.append(_absent_at(series, fires - e, "pending", f"{why}: pending"))
        checks.append(_absent_at(series, fires, "firing", f"{why}: fires after for"))
        if start == 0:
            checks += [
                _absent_at(series, e * before, None, "the series appear: silent"),
                _absent_at(series, e * (before + present), None, "the series exist: silent"),
            ]
    fired = gone + e * wait
    expected = ExpectedAlert(series.absent_alert_labels(), _absent_annotations(slo))
    check = AlertCheck(_t(fired), absent.name, (expected,), "exact labels and annotations")
    name = (
        f"{slo.name}: the absent alert fires {_t(absent.for_seconds)} after the SLI's series "
        "are missing, and is silent while they exist"
    )
    return TestCase(
        name=name,
        interval_seconds=e,
        series=inputs,
        alert_checks=(check,),
        expr_checks=tuple(checks),
        evaluations=int(fired / e) + 1,
    )


def _absent_at(series: SeriesMaker, at: Decimal, state: str | None, why: str) -> ExprCheck:
    """``ALERTS`` of the absent alert at ``at``: exactly one series in ``state``, or none."""
    samples = () if state is None else ((series.absent_alert_series(state), "1"),)
    return ExprCheck(_t(at), series.absent_query(), samples, why)


def _absent_annotations(slo: ResolvedSLO) -> tuple[tuple[str, str], ...]:
    """The absent alert's annotations as Prometheus shows them: rulegen's literal text, and
    the user's own exactly as written."""
    absent = slo.absent
    assert absent is not None
    own = tuple((k, gotemplate.expand(v, {}, 1.0)) for k, v in absent_annotations(slo))
    return own + tuple(sorted(absent.annotations))
