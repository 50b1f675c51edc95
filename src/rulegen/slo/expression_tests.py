"""Generated promtool tests of an expression SLI (``events``, ``raw``), on the spec's own
test series.

Why: rulegen cannot know what an arbitrary query counts, so it cannot make raw series for a
given error ratio as it does for counters and histograms. The spec says instead what the raw
series look like when every event is good and when every event is bad (``sli.*.test``); the
generated test scrapes the good ones, then the bad ones, and checks what holds for any
correct SLI on them: the error ratio of the shortest window is exactly 0 while all is good
(and the budget left exactly 1), exactly 1 once that window holds only bad samples, no alert
fires while all is good, and each alert fires during the total outage no later than its
earliest tier could on a ratio rising from 0 to 1 over its long window (plus ``for``, and two
evaluations and a scrape of slack). A query with the wrong window, errors and total swapped,
or a factor far off fails it; a factor nudged within that slack does not (docs/slos.md).
"""

from __future__ import annotations

from decimal import ROUND_CEILING, Decimal
from fractions import Fraction

from rulegen import units
from rulegen.core import promql
from rulegen.generated import ExprCheck, InputSeries, TestCase
from rulegen.slo.model import EventsSLI, RawSLI, ResolvedSLO, SLOAlert, TestSeries
from rulegen.slo.rules import BUDGET_LEFT, RATIO, current_window, expression_windows, window_name
from rulegen.slo.series import SLOTestError


def expression_tests(slo: ResolvedSLO) -> tuple[TestCase, ...]:
    """The good-then-bad test of an expression SLI, or none without test series."""
    sli = slo.sli
    assert isinstance(sli, EventsSLI | RawSLI)
    if sli.test is None:
        return ()
    _check_points(slo, sli)
    e = slo.evaluation
    shortest = current_window(slo)
    good_for = _ceil(shortest + 2 * e, e)  # a whole shortest window of good samples
    lag = _lag(slo, sli)
    # a whole shortest window of bad samples, seen by subqueries one step late
    bad_at = good_for + _ceil(shortest + 2 * e + lag, e)
    fires = {alert.key: good_for + _fires_by(slo, alert, lag) for alert in slo.alerts}
    checked = [a for a in slo.alerts if slo.min_traffic is None]
    end = max([bad_at, *(fires[a.key] for a in checked)])
    ratio = f"{RATIO}{window_name(shortest)}{_own(slo)}"
    checks = [
        ExprCheck(_t(good_for - e), f"max({ratio})", (("{}", "0"),), "all good: no error"),
        ExprCheck(_t(good_for - e), f"min({BUDGET_LEFT}{_own(slo)})", (("{}", "1"),),
                  "all good: the whole budget is left"),  # fmt: skip
        ExprCheck(_t(bad_at), f"min({ratio})", (("{}", "1"),),
                  f"a {window_name(shortest)} window of bad samples only: every event an error"),
    ]  # fmt: skip
    for alert in checked:
        query = _alerts(slo, alert)
        checks.append(ExprCheck(_t(good_for - e), query, (), f"all good: no {alert.key}"))
        firing = query.replace("}", ', alertstate="firing"}', 1)
        checks.append(
            ExprCheck(_t(fires[alert.key]), f"max({firing})", (("{}", "1"),),
                      f"a total outage from {_t(good_for)}: the {alert.key} fires by then")
        )  # fmt: skip
    steps = int(end / e) + 1
    good_steps = int(good_for / e)
    name = (
        f"{slo.name}: the spec's good series give no error, its bad series fire each alert in time"
    )
    return (
        TestCase(name, e, _series(sli.test, good_steps, steps - good_steps), (), tuple(checks),
                 steps),
    )  # fmt: skip


def _check_points(slo: ResolvedSLO, sli: EventsSLI | RawSLI) -> None:
    """promtool's unit tests cap a query's samples (``PROMTOOL_MAX_SAMPLES``): a subquery
    with more points fails every evaluation of its rule there, so no test could run."""
    queries = (sli.error_ratio,) if isinstance(sli, RawSLI) else (sli.part, sli.total)
    for window in expression_windows(slo):
        for query in queries:
            points = promql.subquery_points(query.at(window_name(window)), float(slo.evaluation))
            if points > promql.PROMTOOL_MAX_SAMPLES:
                raise SLOTestError(
                    f"its query's subquery over {window_name(window)} evaluates {points:,} "
                    f"points, beyond the {promql.PROMTOOL_MAX_SAMPLES:,} promtool's unit tests "
                    "let one query load: give the subquery a resolution "
                    "([{{.window}}:5m]) or leave out sli.*.test (no generated test)"
                )


def _lag(slo: ResolvedSLO, sli: EventsSLI | RawSLI) -> Decimal:
    """How late the queries may see a change: their coarsest subquery resolution."""
    queries = (sli.error_ratio,) if isinstance(sli, RawSLI) else (sli.part, sli.total)
    sample = window_name(current_window(slo))
    steps = [promql.subquery_step(q.at(sample), float(slo.evaluation)) for q in queries]
    return Decimal(str(max(steps)))


def _fires_by(slo: ResolvedSLO, alert: SLOAlert, lag: Decimal) -> Decimal:
    """The latest time after a total outage starts by which ``alert`` must fire: its fastest
    tier's long window holding ``factor × budget`` errors on a ratio rising linearly (the
    short window fills faster), then ``for``, and as slack two evaluations, a scrape and two
    of the queries' subquery steps (``lag``: a step sees the outage a step late, and holds a
    step's worth of it)."""
    fastest = min(Fraction(t.factor) * Fraction(slo.budget) * Fraction(t.long) for t in alert.tiers)
    slack = 2 * slo.evaluation + slo.scrape + alert.for_seconds + 2 * lag
    return _ceil(Decimal(fastest.numerator) / Decimal(fastest.denominator) + slack,
                 slo.evaluation)  # fmt: skip


def _series(test: TestSeries, good: int, bad: int) -> tuple[InputSeries, ...]:
    """Each series of the test: ``good`` samples of its good value (or none), then ``bad``
    of its bad value (or none); a counter grows by its value each sample, continuing."""
    goods, bads = dict(test.good), dict(test.bad)
    out = []
    for key in sorted({*goods, *bads}):
        counter = key in test.counters
        start = Decimal(0)
        parts = []
        for values, count in ((goods, good), (bads, bad)):
            value = values.get(key)
            if value is None:
                parts.append(f"_x{count}")
            elif counter:
                parts.append(f"{_n(start + value)}+{_n(value)}x{count - 1}")
                start += value * count
            else:
                parts.append(f"{_n(value)}+0x{count - 1}")
        out.append(InputSeries(key, " ".join(parts)))
    return tuple(out)


def _alerts(slo: ResolvedSLO, alert: SLOAlert) -> str:
    labels = {"alertname": slo.alert_name, "service": slo.service, "severity": alert.severity,
              "slo": slo.name}  # fmt: skip
    return promql.series_text("ALERTS", labels)


def _own(slo: ResolvedSLO) -> str:
    return f"{{service={promql.quote(slo.service)}, slo={promql.quote(slo.name)}}}"


def _ceil(seconds: Decimal, step: Decimal) -> Decimal:
    return (seconds / step).to_integral_value(rounding=ROUND_CEILING) * step


def _n(value: Decimal) -> str:
    return units.literal(value)


def _t(seconds: Decimal) -> str:
    return units.format_duration(seconds)
