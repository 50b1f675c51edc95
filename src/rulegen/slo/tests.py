"""Generated promtool tests for an SLO: outage, slow burn, per-tier edges, zero traffic.

Why: burn-rate alerts are easy to get subtly wrong (a window one step short, a factor off by
the objective, a NaN on idle). Each scenario replays realistic history at the group's own
interval and checks, through ``ALERTS`` and each tier's condition, the exact evaluation at
which things change, predicted by ``rulegen.slo.simulate`` and bounded by the Workbook's
detection times.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import ROUND_FLOOR, Decimal
from fractions import Fraction
from math import ceil, floor

from rulegen import promql, units
from rulegen.model import ExprCheck, InputSeries, TestCase
from rulegen.slo.model import PAGE, TICKET, LatencySLI, RatioSLI, ResolvedSLO, SLOAlert, Tier
from rulegen.slo.resolve import base_window, windows_of
from rulegen.slo.rules import BUDGET_LEFT, CURRENT_BURN, RATIO, tier_condition, window_name
from rulegen.slo.simulate import Phase, Traffic, alert_timeline, evaluations, onset, tier_holds


class SLOTestError(ValueError):
    """No test can be built for an SLO (selectors no series can satisfy, no room for a burn)."""


_GOOD_VALUES = ("OK", "200", "ok", "success", "2xx", "rulegen-good", "0", "a")


def slo_tests(slo: ResolvedSLO) -> tuple[tuple[TestCase, ...], tuple[TestCase, ...]]:
    """Every scenario of one SLO: those stepped at the group's interval, and the long-history
    ones stepped at ``history_step`` (promtool evaluates every group at the test file's
    ``evaluation_interval``, so they go to a file of their own)."""
    series = _SeriesMaker(slo)
    cases: list[TestCase] = []
    history: list[TestCase] = []
    alerts = {a.key: a for a in slo.alerts}
    if PAGE in alerts:
        cases.append(_outage(slo, alerts[PAGE], series))
    if TICKET in alerts:
        slow = _slow_burn(slo, alerts[TICKET], alerts.get(PAGE), series)
        if slow is not None:
            history.append(slow)
    for tier in slo.tiers:
        cases.extend(_edges(slo, tier, series))
    cases.append(_zero_traffic(slo, series))
    return tuple(cases), tuple(history)


def history_step(slo: ResolvedSLO) -> Decimal:
    """The step of the long-history tests: the base window every SLO window is a sum of.

    Every window recording read at an offset falls on a multiple of it, so the rules compute at
    those times exactly what they compute when evaluated at the group's own interval; only the
    detection is seen at this coarser step (and predicted at it).
    """
    return base_window(windows_of(slo))


class _SeriesMaker:
    """Input series for the SLI: label sets that the selectors accept (or reject) as needed."""

    def __init__(self, slo: ResolvedSLO) -> None:
        self.slo = slo
        self.group = {name: _group_value(slo, name) for name in slo.group_by}

    def series(self, traffic: Traffic) -> tuple[InputSeries, ...]:
        """promtool series carrying ``traffic`` through the SLI's selectors."""
        sli = self.slo.sli
        good = tuple(t - e for t, e in zip(traffic.total, traffic.errors, strict=True))
        if isinstance(sli, LatencySLI):
            labels = _satisfy(sli.matchers, dict(self.group))
            bound = promql.go_float(float(sli.threshold))
            return (
                _input(f"{sli.metric}_bucket", {**labels, "le": bound}, good),
                _input(f"{sli.metric}_bucket", {**labels, "le": "+Inf"}, traffic.total),
                _input(f"{sli.metric}_count", labels, traffic.total),
            )
        return self._ratio(sli, traffic, good)

    def _ratio(
        self, sli: RatioSLI, traffic: Traffic, good: tuple[int, ...]
    ) -> tuple[InputSeries, ...]:
        bad = _satisfy((*sli.errors.matchers, *sli.total.matchers), dict(self.group))
        if sli.errors.metric == sli.total.metric:
            if not all(_accepts(m, bad.get(m.name, "")) for m in sli.total.matchers):
                raise SLOTestError("no series matches both the errors and the total selector")
            ok = _good_labels(sli, bad)
            return (
                _input(sli.total.metric, ok, good),
                _input(sli.errors.metric, bad, traffic.errors),
            )
        total_labels = _satisfy(sli.total.matchers, dict(self.group))
        return (
            _input(sli.total.metric, total_labels, traffic.total),
            _input(sli.errors.metric, bad, traffic.errors),
        )

    def alert_labels(self, alert: SLOAlert, state: str) -> str:
        """The ``ALERTS`` series of this SLO's alert in ``state``."""
        labels = dict(self.slo.labels)
        labels.update(self.group)
        labels.update(
            alertname=self.slo.alert_name, alertstate=state, severity=alert.severity,
            service=self.slo.service, slo=self.slo.name,
        )  # fmt: skip
        return _selector("ALERTS", labels)

    def own_labels(self) -> str:
        """The label set of this SLO's recordings (an arithmetic result drops the name)."""
        return _selector("", {"service": self.slo.service, "slo": self.slo.name, **self.group})


def _group_value(slo: ResolvedSLO, name: str) -> str:
    matchers = _selector_matchers(slo)
    return _satisfy(tuple(m for m in matchers if m.name == name), {name: "rulegen-a"})[name]


def _selector_matchers(slo: ResolvedSLO) -> tuple[promql.Matcher, ...]:
    sli = slo.sli
    if isinstance(sli, LatencySLI):
        return sli.matchers
    return (*sli.errors.matchers, *sli.total.matchers)


def _accepts(matcher: promql.Matcher, value: str) -> bool:
    if matcher.op == "=":
        return value == matcher.value
    if matcher.op == "!=":
        return value != matcher.value
    found = promql.full_match(matcher.value, value)
    return found if matcher.op == "=~" else not found


def _candidates(matchers: Iterable[promql.Matcher]) -> list[str]:
    out: list[str] = []
    for m in matchers:
        if m.op == "=":
            out.append(m.value)
        elif m.op == "=~" and (example := promql.regex_example(m.value)) is not None:
            out.append(example)
    return [*out, "rulegen-test", *_GOOD_VALUES]


def _satisfy(matchers: tuple[promql.Matcher, ...], labels: dict[str, str]) -> dict[str, str]:
    """``labels`` completed so that every matcher accepts them."""
    for name in sorted({m.name for m in matchers}):
        own = [m for m in matchers if m.name == name]
        if all(_accepts(m, labels.get(name, "")) for m in own):
            continue
        chosen = next((v for v in _candidates(own) if all(_accepts(m, v) for m in own)), None)
        if chosen is None:
            shown = ", ".join(m.render() for m in own)
            raise SLOTestError(f"cannot build a test series that matches {shown}")
        labels[name] = chosen
    return {k: v for k, v in labels.items() if v != ""}


def _good_labels(sli: RatioSLI, bad: dict[str, str]) -> dict[str, str]:
    """Labels of successful events: accepted by the total selector, refused by the errors one."""
    for matcher in sli.errors.matchers:
        on_total = [m for m in sli.total.matchers if m.name == matcher.name]
        for value in _candidates(on_total):
            if not _accepts(matcher, value) and all(_accepts(m, value) for m in on_total):
                return {k: v for k, v in {**bad, matcher.name: value}.items() if v != ""}
    raise SLOTestError("cannot build a successful-event series: no label value that the total "
                       "selector accepts and the errors selector refuses")  # fmt: skip


def _selector(name: str, labels: Mapping[str, str]) -> str:
    inner = ", ".join(f"{k}={promql.quote(v)}" for k, v in sorted(labels.items()))
    return f"{name}{{{inner}}}"


def _input(metric: str, labels: Mapping[str, str], values: tuple[int, ...]) -> InputSeries:
    return InputSeries(_selector(metric, labels), expanding(values))


def expanding(values: tuple[int, ...]) -> str:
    """promtool's expanding notation for a counter: ``0+100x360 36000+0x60``."""
    parts: list[str] = []
    index = 0
    while index < len(values):
        step = values[index + 1] - values[index] if index + 1 < len(values) else 0
        end = index
        while end + 1 < len(values) and values[end + 1] - values[end] == step:
            end += 1
        parts.append(f"{values[index]}+{step}x{end - index}")
        index = end + 1
    return " ".join(parts)


# --- scenarios -------------------------------------------------------------------------------


def _steps(step: Decimal, seconds: Decimal) -> int:
    return int(ceil(seconds / step))


def _scale(slo: ResolvedSLO, step: Decimal, *ratios: Fraction) -> int:
    """Events per sample: a power of ten that makes every error count whole and traffic
    comfortably above ``min_traffic``."""
    need = Fraction(0)
    if slo.min_traffic is not None:
        need = Fraction(slo.min_traffic) * Fraction(step) * 2
    for exponent in range(3, 13):
        n: int = 10**exponent
        if n >= need and all((r * n).denominator == 1 for r in ratios):
            return n
    raise SLOTestError("the error ratios of the test need more than 1e12 events per sample")


def _t(seconds: Decimal) -> str:
    return units.format_duration(seconds)


def _alert_checks(
    series: _SeriesMaker, alert: SLOAlert, at: Decimal, state: str | None, why: str
) -> ExprCheck:
    query = (
        series.alert_labels(alert, "").replace(', alertstate=""', "").replace('alertstate="", ', "")
    )
    samples = () if state is None else ((series.alert_labels(alert, state), "1"),)
    return ExprCheck(_t(at), query, samples, why)


def _tier_check(slo: ResolvedSLO, tier: Tier, at: Decimal, holds: bool, why: str) -> ExprCheck:
    expr = "count(" + " ".join(tier_condition(slo, tier).split()) + ")"
    return ExprCheck(_t(at), expr, (("{}", "1"),) if holds else (), why)


def _describe(tier: Tier) -> str:
    return f"{window_name(tier.long)}/{window_name(tier.short)}"


def _outage(slo: ResolvedSLO, alert: SLOAlert, series: _SeriesMaker) -> TestCase:
    """Clean history as long as the longest page window, then every request fails."""
    history = max(t.long for t in alert.tiers)
    e = slo.evaluation
    n = _scale(slo, e)
    detect = {
        t.index: Fraction(t.factor) * Fraction(slo.budget) * Fraction(t.long) for t in alert.tiers
    }
    outage = Decimal(ceil(max(detect.values()) / Fraction(e)) + 1) * e + alert.for_seconds + e
    recover = max(t.short for t in alert.tiers) + alert.for_seconds + 3 * e
    phases = [
        Phase(_steps(e, history), n, 0),
        Phase(_steps(e, outage), n, n),
        Phase(_steps(e, recover), n, 0),
    ]
    traffic = Traffic.of(e, phases)
    start = history
    timeline = alert_timeline(slo, alert, traffic)
    fired = timeline.first_firing(start)
    theory = min(detect.values())
    if fired is None or Fraction(fired - start) > theory + Fraction(e) + Fraction(
        alert.for_seconds
    ):
        raise AssertionError(f"{slo.name}: outage page at {fired} misses the detection bound")
    checks = [
        _alert_checks(series, alert, fired - e, None if alert.for_seconds == 0 else "pending",
                      "not yet firing one evaluation before"),
        _alert_checks(series, alert, fired, "firing",
                      f"total outage from {_t(start)}: pages within {float(theory):g}s "
                      "(budget share x SLO window / burn rate) + one evaluation"),
    ]  # fmt: skip
    for tier in alert.tiers:
        began = onset(slo, tier, traffic, start)
        if began is None:
            raise AssertionError(f"{slo.name}: tier {_describe(tier)} never holds in the outage")
        checks.append(_tier_check(slo, tier, began - e, False, f"tier {_describe(tier)} not yet"))
        checks.append(
            _tier_check(slo, tier, began, True, f"tier {_describe(tier)} detects the outage")
        )
    recovered = start + outage
    resolved = timeline.resolved_after(recovered, evaluations(traffic))
    if resolved is None:
        raise AssertionError(f"{slo.name}: the page does not resolve after the outage")
    checks.append(
        _alert_checks(
            series, alert, resolved - e, "firing", "still firing while a short window holds errors"
        )
    )
    checks.append(
        _alert_checks(
            series,
            alert,
            resolved,
            None,
            f"resolved once the short windows are clean (traffic recovered at {_t(recovered)})",
        )
    )
    return _case(slo, f"{slo.name}: a total outage pages, then resolves", traffic, series, checks)


def _slow_burn(
    slo: ResolvedSLO, ticket: SLOAlert, page: SLOAlert | None, series: _SeriesMaker
) -> TestCase | None:
    """Clean history as long as the longest ticket window, then a burn no page tier reacts to."""
    burn = _slow_rate(ticket, page)
    if burn is None:
        return None
    e = history_step(slo)
    ratio = Fraction(burn) * Fraction(slo.budget)
    n = _scale(slo, e, ratio)
    history = max(t.long for t in ticket.tiers)
    reach = max(Fraction(t.factor) * Fraction(t.long) / Fraction(burn) for t in ticket.tiers)
    length = Decimal(ceil(reach / Fraction(e)) + 2) * e + ticket.for_seconds
    traffic = Traffic.of(
        e, [Phase(_steps(e, history), n, 0), Phase(_steps(e, length), n, int(ratio * n))]
    )
    timeline = alert_timeline(slo, ticket, traffic)
    fired = timeline.first_firing(history)
    if fired is None:
        raise AssertionError(f"{slo.name}: the slow burn never opens a ticket")
    checks = [
        _alert_checks(series, ticket, fired - e, None if ticket.for_seconds == 0 else "pending", "no ticket yet"),
        _alert_checks(series, ticket, fired, "firing", f"a {units.literal(burn)}x burn opens a ticket"),
    ]  # fmt: skip
    for tier in ticket.tiers:
        began = onset(slo, tier, traffic, history)
        if began is not None:
            checks.append(
                _tier_check(slo, tier, began - e, False, f"tier {_describe(tier)} not yet")
            )
            checks.append(_tier_check(slo, tier, began, True, f"tier {_describe(tier)} fires"))
    if page is not None:
        for at in (fired, traffic.end):
            checks.append(_alert_checks(series, page, at, None, "no page for a slow burn"))
        for tier in page.tiers:
            if any(tier_holds(slo, tier, traffic, t) for t in evaluations(traffic)):
                raise AssertionError(
                    f"{slo.name}: page tier {_describe(tier)} holds in the slow burn"
                )
    return _case(
        slo,
        f"{slo.name}: a {units.literal(burn)}x slow burn opens a ticket, no page",
        traffic,
        series,
        checks,
    )


def _slow_rate(ticket: SLOAlert, page: SLOAlert | None) -> Decimal | None:
    """A round burn rate above the lowest ticket factor and below the lowest page factor."""
    low = min(Fraction(t.factor) for t in ticket.tiers) * Fraction(21, 20)
    high = min((Fraction(t.factor) for t in page.tiers), default=None) if page else None
    target = low * 2 if high is None else high * Fraction(19, 20)
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


def _edges(slo: ResolvedSLO, tier: Tier, series: _SeriesMaker) -> list[TestCase]:
    """A steady burn 1% under the tier's factor does not satisfy it; 1% over does."""
    threshold = Fraction(tier.factor) * Fraction(slo.budget)
    e = slo.evaluation
    out = []
    for label, scale, rounding in (
        ("just under", Fraction(99, 100), floor),
        ("just over", Fraction(101, 100), ceil),
    ):
        n = _scale(slo, e)
        while threshold * n * Fraction(1, 100) < 10:
            n *= 10
        errors = min(n, int(rounding(threshold * scale * n)))
        at = base_window(windows_of(slo)) + e
        traffic = Traffic.of(e, [Phase(_steps(e, at), n, errors)])
        holds = tier_holds(slo, tier, traffic, at)
        if holds != (label == "just over"):
            raise AssertionError(f"{slo.name}: {label} edge of {_describe(tier)} misbehaves")
        factor = units.literal(Decimal(scale.numerator) / scale.denominator)
        checks = [
            _tier_check(
                slo, tier, at, holds, f"{factor} x the tier's error ratio {float(threshold):g}"
            )
        ]
        out.append(
            _case(
                slo,
                f"{slo.name}: a burn {label} tier {_describe(tier)} ({float(tier.factor):g}x)",
                traffic,
                series,
                checks,
            )
        )
    return out


def _zero_traffic(slo: ResolvedSLO, series: _SeriesMaker) -> TestCase:
    """No traffic yields no ratio, no burn, no alert; after traffic stops the budget holds."""
    e = slo.evaluation
    base = min(w for w in (slo.window, *(t.short for t in slo.tiers)))
    quiet = max(base, 2 * e)
    lowest = min((Fraction(t.factor) for t in slo.tiers), default=Fraction(1))
    ratio = lowest * Fraction(slo.budget) / 2
    n = _scale(slo, e)
    while (ratio * n).denominator != 1 and n < 10**12:
        n *= 10
    errors = int(ratio * n)
    idle, busy, after = _steps(e, quiet), _steps(e, 2 * quiet), _steps(e, 4 * quiet)
    traffic = Traffic.of(e, [Phase(idle, 0, 0), Phase(busy, n, errors), Phase(after, 0, 0)])
    first, stop, end = e * idle, e * (idle + busy), traffic.end
    outputs = f'{{__name__=~"{RATIO}.+|{BUDGET_LEFT}|{CURRENT_BURN}", service={promql.quote(slo.service)}, slo={promql.quote(slo.name)}}}'
    own = f"{{service={promql.quote(slo.service)}, slo={promql.quote(slo.name)}}}"
    checks = [
        ExprCheck(
            _t(first),
            f"count({outputs})",
            (),
            "no traffic yet: no ratio, burn or budget (never NaN)",
        )
    ]
    for alert in slo.alerts:
        checks.extend(
            _alert_checks(series, alert, at, None, "no traffic, no alert") for at in (first, end)
        )
    checks.append(
        ExprCheck(
            _t(end),
            f"count({RATIO}{window_name(base)}{own})",
            (),
            "traffic stopped: no short-window ratio",
        )
    )
    checks.append(
        ExprCheck(
            _t(end), f"{BUDGET_LEFT}{own} - {BUDGET_LEFT}{own} offset {_t(end - stop)}",
            ((series.own_labels(), "0"),), "traffic stopped: the error budget left is unchanged",
        )
    )  # fmt: skip
    return _case(
        slo, f"{slo.name}: zero traffic stays silent and keeps the budget", traffic, series, checks
    )


def _case(
    slo: ResolvedSLO, name: str, traffic: Traffic, series: _SeriesMaker, checks: list[ExprCheck]
) -> TestCase:
    return TestCase(
        name=name,
        interval=units.format_duration(traffic.step),
        series=series.series(traffic),
        alert_checks=(),
        expr_checks=tuple(checks),
        evaluations=len(evaluations(traffic)),
    )
