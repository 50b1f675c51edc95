"""Generated promtool tests of threshold alerts: synthetic series from the catalog's recipes,
checks at exact times.

Why: a threshold is only trustworthy when a test shows the alert stays silent below it, is
pending before ``for`` elapses, fires after it with exact labels and annotations, and ignores
the neutral cases (idle device, no traffic, virtual NIC). The series come from each signal's
recipe ("to get await q, do 1500 I/Os per scrape taking q seconds each"), never from the
rule's own expression, so a wrong expression fails its test.

Timing model (checked against promtool): counters start at 0 at t=0 and grow at a constant
slope; ``rate()`` over window w then reads slope * min(t, w) / w ("window" signals), ratios of
such rates are exact from the second sample ("ratio" signals), gauges from the first. A
forecast ("ramp" signals, ``predict_linear(g[w], lead)``) of a gauge growing from 0 at slope
q reads q * (t + lead) from the second sample: it never settles, so the slopes are chosen for
the alert to fire exactly ``for`` after it crosses, reading the planned values then.

MetricsQL (``vmalert=``, the tests ``vmalert-tool unittest`` runs): ``rate()`` does not
extrapolate; with no sample before its window it divides the change from the window's first
sample by the time between them (VictoriaMetrics' ``rollupDerivFast``), so a counter of
constant slope reads that slope exactly from the second sample: "window" signals do not ramp.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from typing import Any

from rulegen import gotemplate, units
from rulegen.alerts.custom import template_labels
from rulegen.alerts.model import ResolvedAlert, ResolvedExample
from rulegen.catalog.definition import HistogramDef, SeriesDef, SignalDef
from rulegen.core import promql
from rulegen.core.diagnostics import SPEC_TEST
from rulegen.core.histograms import is_native
from rulegen.core.nativeseries import Layout, growing
from rulegen.core.synthetic import (
    MARGIN,
    TEST_SCHEMA,
    Plan,
    SynthError,
    exponential_plan,
    histogram_plan,
)
from rulegen.errors import Diagnostic, SpecError
from rulegen.generated import AlertCheck, ExpectedAlert, ExprCheck, InputSeries, TestCase
from rulegen.host import host_from_instance
from rulegen.templating import TemplateFailure, evaluate, render_promql


@dataclass(frozen=True)
class Vmalert:
    """How vmalert labels an alert where Prometheus does otherwise (``rule/alerting.go``,
    ``toLabels``), for the tests ``vmalert-tool unittest`` runs.

    ``$labels`` in annotations is the result's labels (``__name__`` too) *plus* the rule's
    labels, the group labels, ``alertname`` and ``alertgroup`` (the result's win a clash); the
    alert's labels are the result's with the rule's and group's on top, and a result label
    they replace with another value is kept as ``exported_<name>``.
    """

    groups: Mapping[str, str]  # alert name → its rule group's name
    labels: Mapping[str, str]  # the group labels (targets.victoriametrics.labels)

    def template_labels(
        self, alert: str, series: Mapping[str, str], own: Mapping[str, str]
    ) -> dict[str, str]:
        added = {**own, **self.labels, "alertname": alert, "alertgroup": self.groups[alert]}
        return {**added, **series}

    def alert_labels(self, series: Mapping[str, str], own: Mapping[str, str]) -> dict[str, str]:
        out = {k: v for k, v in series.items() if k != "__name__"}
        for name, value in {**own, **self.labels}.items():
            if name in out and out[name] != value:
                out[f"exported_{name}"] = out[name]
            out[name] = value
        return out


class _Collision(Exception):
    """The chosen test value equals the threshold at an evaluation: try another one."""


@dataclass(frozen=True)
class _Scenario:
    name: str
    labels: dict[str, str]
    q: Decimal
    series: list[SeriesDef]
    histogram: HistogramDef | None


def build_tests(
    alerts: tuple[ResolvedAlert, ...],
    evaluation: Decimal,
    scrape: Decimal,
    host_label: str | None,
    vmalert: Vmalert | None = None,
    group_labels: Mapping[str, tuple[tuple[str, str], ...]] | None = None,
) -> tuple[TestCase, ...]:
    """One test case per catalog alert of a spec, and one per example of a custom alert;
    errors name the alert. With ``vmalert``: MetricsQL's timings and vmalert's labels.
    ``group_labels``: the labels of the named groups (``groups:``), by group name."""
    groups = group_labels or {}
    cases: list[TestCase] = []
    failures: list[Diagnostic] = []
    for alert in alerts:
        if alert.signal is None:
            cases.extend(
                example_test(alert, i, e, evaluation, vmalert, groups.get(alert.group or "", ()))
                for i, e in enumerate(alert.examples)
            )
            continue
        try:
            cases.append(alert_test(alert, evaluation, scrape, host_label, vmalert))
        except (SynthError, TemplateFailure) as exc:
            # a recipe can fail only with the spec's own values (a team's signal file)
            origin = alert.origin
            field = exc.field if isinstance(exc, SynthError) else ""
            path = origin.path.child(field) if field else origin.path
            message = f"cannot generate a test for {alert.name}: {exc}"
            failures.append(origin.diagnostic(message, SPEC_TEST, path=path))
    if failures:
        raise SpecError(failures)
    return tuple(cases)


def alert_test(
    alert: ResolvedAlert,
    evaluation: Decimal,
    scrape: Decimal,
    host_label: str | None = None,
    vmalert: Vmalert | None = None,
) -> TestCase:
    """The test case proving when ``alert`` fires and when it does not.

    With a ``host_label``, every series carries it (as relabelling at scrape time would).
    """
    signal = alert.signal
    assert signal is not None
    plan, timing = _plan_and_timing(alert, signal, evaluation, scrape, vmalert is not None)
    scenarios = _with_host_label(_scenarios(alert, signal, plan, timing.per), host_label)
    steps = int((timing.check + 2 * evaluation) / scrape) + 1
    series = tuple(s for sc in scenarios for s in _series(alert, sc, plan, scrape, steps))
    fire = scenarios[0]
    series_labels = _result_labels(alert, signal, fire, host_label)
    labels = _expected_labels(alert, series_labels, vmalert)
    # ``$labels`` in an annotation is the labels of the expression's series, not the alert's
    # own labels: a spec label the series do not carry expands to nothing in Prometheus.
    shown = (
        series_labels
        if vmalert is None
        else vmalert.template_labels(alert.name, series_labels, _own_labels(alert, series_labels))
    )
    annotations = tuple(
        (k, gotemplate.expand(v, shown, float(plan.fire))) for k, v in alert.annotations
    )
    expected = ExpectedAlert(tuple(sorted(labels.items())), annotations)
    checks, exprs = _checks(alert, timing, evaluation, expected, scenarios)
    neutral = ", ".join(s.name for s in scenarios[2:])
    fires = _value_text(signal, plan.fire)
    quiet = _value_text(signal, plan.quiet)
    after = f"after {units.format_duration(alert.for_seconds)}" if alert.for_seconds else "at once"
    name = f"{alert.name}: fires at {fires} {after}; silent at {quiet}"
    name += f" and for {neutral}" if neutral else ""
    evaluations = int(timing.check / evaluation) + 1
    return TestCase(name, scrape, series, checks, exprs, evaluations)


def _value_text(signal: SignalDef, value: Decimal) -> str:
    return units.format_human(value, signal.threshold.unit)


# --- values -----------------------------------------------------------------------------


_FACTORS = tuple(Decimal(f) for f in ("1.1", "1.2", "1.3", "1.5", "1.7", "2", "3"))
# Near a limit, each candidate takes its own point between threshold and limit (half way
# first): one point alone may print on a 4-digit rounding tie (94.05% → 97.025%).
_TOWARDS_LIMIT = tuple(Decimal(f) for f in ("0.5", "0.6", "0.4", "0.7", "0.3", "0.8", "0.2"))
QUIET = Decimal("0.9")


def _plan_and_timing(
    alert: ResolvedAlert, signal: SignalDef, evaluation: Decimal, scrape: Decimal, metricsql: bool
) -> tuple[Plan, _Timing]:
    """Pick test values whose ramp never lands exactly on the threshold at an evaluation."""
    collided = False
    for plan in _candidate_plans(alert, signal):
        exact = signal.test.integer  # a count is an exact float: no rounding to fear
        if not exact and not _prints_stably(plan.fire, signal.threshold.unit):
            if signal.test.histogram is not None:
                raise SynthError(
                    f"the test value {plan.fire} sits on a rounding tie of Prometheus' "
                    "4-digit formatting; move the threshold slightly",
                    "threshold",
                )
            continue
        try:
            return plan, _timing(alert, signal, plan.fire, evaluation, scrape, metricsql)
        except _Collision:
            collided = True
    if not collided:
        raise SynthError(
            "every test value sits on a rounding tie of Prometheus' 4-digit formatting; "
            "move the threshold slightly",
            "threshold",
        )
    raise SynthError(
        "every test value meets the threshold exactly at some evaluation; "
        "choose a different evaluation_interval or window"
    )


_FORMAT = {
    "duration": gotemplate.humanize_duration,
    "percent": gotemplate.humanize_percentage,
    "number": gotemplate.humanize,
    "bandwidth": gotemplate.humanize1024,
}


def _candidate_plans(alert: ResolvedAlert, signal: SignalDef) -> list[Plan]:
    """Test values to try in order; whole seconds get a half-second variant.

    Why: humanizeDuration truncates seconds, so 66 s may print as "1m 5s" when Prometheus
    computes 65.99999999; 66.5 s prints "1m 6s" either way.
    """
    plans = []
    for index, factor in enumerate(_FACTORS):
        plan = _plan(alert, signal, factor, _TOWARDS_LIMIT[index])
        plans.append(plan)
        firing_up = signal.threshold.op == ">" and signal.test.histogram is None
        if signal.threshold.unit == "duration" and plan.fire >= 1 and firing_up:
            plans.append(Plan(plan.fire + Decimal("0.5"), plan.quiet))
    return plans


def _prints_stably(value: Decimal, unit: str) -> bool:
    """Whether Prometheus prints the same text for the value one float ulp either way.

    Why: ``%.4g`` of a value such as 5.505 depends on the last bit of the float Prometheus
    computes, so the expected annotation would be a coin toss.
    """
    fmt = _FORMAT[unit]
    return fmt(float(value) * (1 + 1e-12)) == fmt(float(value) * (1 - 1e-12))


def _plan(alert: ResolvedAlert, signal: SignalDef, factor: Decimal, towards: Decimal) -> Plan:
    if signal.test.histogram is not None:
        if alert.histogram == "native":
            return exponential_plan(alert.threshold, alert.params["quantile"])
        return histogram_plan(alert.params["buckets"], alert.threshold, alert.params["quantile"])
    above = _above(alert.threshold, signal.test.max, signal.test.integer, factor, towards)
    below = _below(alert.threshold, signal.test.integer)
    return Plan(above, below) if signal.threshold.op == ">" else Plan(below, above)


def _above(
    threshold: Decimal, limit: Decimal | None, integer: bool, factor: Decimal, towards: Decimal
) -> Decimal:
    """``factor`` × the threshold, or, where that passes the signal's limit (a ratio of 1),
    the point ``towards`` of the way from the threshold to the limit."""
    if integer:
        return threshold.to_integral_value(ROUND_FLOOR) + (factor * 10 - 10).to_integral_value(
            ROUND_CEILING
        )
    value = threshold * factor if threshold > 0 else factor - 1
    if limit is not None and value >= limit:
        value = threshold + (limit - threshold) * towards
    return value.normalize()


def _below(threshold: Decimal, integer: bool) -> Decimal:
    """Just on the quiet side: 90 % of the threshold, or the threshold itself for counts."""
    if integer:
        return threshold.to_integral_value(ROUND_FLOOR)
    return (threshold * QUIET).normalize()


# --- timing -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Timing:
    active: Decimal
    fire: Decimal
    check: Decimal
    # "ramp": the planned values are read at ``check``; a scenario's slope q is its value / per
    per: Decimal | None = None


def _timing(
    alert: ResolvedAlert,
    signal: SignalDef,
    fire_value: Decimal,
    evaluation: Decimal,
    scrape: Decimal,
    metricsql: bool = False,
) -> _Timing:
    settle = signal.test.settle
    if settle == "ramp":
        return _ramp_timing(alert, signal, fire_value, evaluation, scrape)
    first = Decimal(0) if settle == "instant" else _grid(scrape, evaluation)
    window = alert.window_seconds
    ramps = settle == "window" and not metricsql
    t = first
    while True:
        ramp = min(t, window) / window if ramps else Decimal(1)
        value = fire_value * ramp
        margin = 0 if signal.test.integer else MARGIN * abs(alert.threshold)
        if abs(value - alert.threshold) <= margin:
            raise _Collision
        if (value > alert.threshold) if signal.threshold.op == ">" else (value < alert.threshold):
            break
        t += evaluation
        if t > window + 10 * evaluation + first:
            raise SynthError("the synthetic series never cross the threshold")
    steps = (alert.for_seconds / evaluation).to_integral_value(ROUND_CEILING)
    fire = t + steps * evaluation
    settled = _grid(window, evaluation) if ramps else fire
    return _Timing(t, fire, max(fire, settled))


def _ramp_timing(
    alert: ResolvedAlert,
    signal: SignalDef,
    fire_value: Decimal,
    evaluation: Decimal,
    scrape: Decimal,
) -> _Timing:
    """A forecast of a gauge growing from 0: with slope q it reads q * (t + lead) from the
    second sample on. The check time C is the first on the evaluation grid at which the
    firing scenario, reading ``fire_value`` at C (slope fire_value / (C + lead)), crossed
    the threshold exactly ``for`` before C; the quiet one, reading the quiet value at C, was
    below it all along. The rising value makes the check time the only one it reads."""
    assert signal.test.lead is not None
    lead = _number(evaluate(signal.test.lead, {**alert.params, "threshold": alert.threshold}))
    if lead < 0:
        raise SynthError(f"the forecast's lead {lead} is negative")
    numbers = (lead, fire_value, alert.threshold, alert.for_seconds, evaluation, scrape)
    key = tuple(map(str, numbers))  # 60 and 60.0 are equal, but print differently
    found = _RAMPS.get(key)
    if found is None:
        found = _RAMPS[key] = _ramp_search(*numbers)
    if found is _Collision:
        raise _Collision
    assert isinstance(found, _Timing)
    return found


# Why cached: a fleet's forecasts share their numbers, and the search below tries every
# evaluation up to a hundred ``for`` spans for each. Keyed by every number it reads.
_RAMPS: dict[tuple[str, ...], _Timing | type[_Collision]] = {}


def _ramp_search(
    lead: Decimal, fire_value: Decimal, threshold: Decimal, for_seconds: Decimal,
    evaluation: Decimal, scrape: Decimal,
) -> _Timing | type[_Collision]:  # fmt: skip
    """``_ramp_timing``'s search: the timing, or ``_Collision`` when every check time lands
    on the threshold."""
    first = _grid(scrape, evaluation)
    steps = (for_seconds / evaluation).to_integral_value(ROUND_CEILING)
    margin = MARGIN * abs(threshold)
    check = first + steps * evaluation
    limit = check + 100 * (steps + 1) * evaluation
    while check <= limit:
        t = first
        while True:
            value = fire_value * (t + lead) / (check + lead)
            if abs(value - threshold) <= margin:
                break  # lands on the threshold: try the next check time
            if value > threshold:
                if t + steps * evaluation == check:
                    return _Timing(t, check, check, check + lead)
                break
            t += evaluation
        check += evaluation
    return _Collision


def _grid(at_least: Decimal, evaluation: Decimal) -> Decimal:
    return (at_least / evaluation).to_integral_value(ROUND_CEILING) * evaluation


# --- scenarios and series ----------------------------------------------------------------


def _scenarios(
    alert: ResolvedAlert, signal: SignalDef, plan: Plan, per: Decimal | None = None
) -> list[_Scenario]:
    """The firing, quiet and neutral scenarios; ``per``: a forecast's values are reached at
    the check time by slopes value / per (``_ramp_timing``)."""
    test = signal.test
    context = _context(alert, plan)
    matchers = alert.selector_matchers
    vary = _vary_label(signal, matchers)
    base = dict(test.labels)
    fire = _labels_for(base, matchers, vary, 1)
    quiet = _labels_for(base, matchers, vary, 2)
    assert fire is not None
    assert quiet is not None
    fire_q, quiet_q = (
        (plan.fire, plan.quiet) if per is None else (plan.fire / per, plan.quiet / per)
    )
    out = [
        _Scenario("fires", fire, fire_q, test.series, test.histogram),
        _Scenario("quiet", quiet, quiet_q, test.series, test.histogram),
    ]
    for neutral in test.neutral:
        if neutral.when and not _truthy(neutral.when, context):
            continue
        own = {k: _render_label(v, context) for k, v in neutral.labels.items()}
        labels = _labels_for({**base, **own}, matchers, vary, len(out) + 1, fixed=set(own))
        if labels is None:
            continue  # the alert's own matchers exclude this case: it would prove nothing
        out.append(_Scenario(neutral.name, labels, Decimal(0), neutral.series, neutral.histogram))
    return out


def _vary_label(signal: SignalDef, matchers: tuple[promql.Matcher, ...]) -> str:
    """The label that tells scenarios apart: the first one no ``=`` matcher pins."""
    pinned = {m.name for m in matchers if m.op == "="}
    for label in (signal.test.vary, *signal.test.vary_alt):
        if label not in pinned:
            return label
    names = ", ".join((signal.test.vary, *signal.test.vary_alt))
    raise SynthError(f"the matchers pin {names}, which the test needs to vary", "matchers")


def _labels_for(
    base: Mapping[str, str],
    matchers: tuple[promql.Matcher, ...],
    vary: str,
    n: int,
    fixed: set[str] | None = None,
) -> dict[str, str] | None:
    """Scenario ``n``'s labels, accepted by every matcher; ``None`` if a fixed label is refused."""
    labels = dict(base)
    template = labels.get(vary, "")
    labels[vary] = template.replace("{n}", str(n)) if "{n}" in template else f"{template}-{n}"
    for name in sorted({m.name for m in matchers}):
        on_label = [m for m in matchers if m.name == name]
        current = labels.get(name, "")
        if all(_accepts(m, current) for m in on_label):
            continue
        if fixed and name in fixed:
            return None
        samples = [s for s in (_sample(m) for m in on_label) if s is not None]
        if name == vary:
            samples = [f"{s}{n}" for s in samples] + [f"{n}{s}" for s in samples]
        chosen = next((s for s in samples if all(_accepts(m, s) for m in on_label)), None)
        if chosen is None:
            rendered = ", ".join(m.render() for m in on_label)
            raise SynthError(f"cannot build a test series that matches {rendered}", "matchers")
        labels[name] = chosen
    # An empty value selects series without the label: Prometheus has no empty labels.
    return {k: v for k, v in labels.items() if v != ""}


def _render_label(value: str, context: Mapping[str, Any]) -> str:
    return render_promql(value, context) if "{{" in value else value


def _context(alert: ResolvedAlert, plan: Plan, q: Decimal | None = None) -> dict[str, Any]:
    return {
        **alert.params,
        "threshold": alert.threshold,
        "above": max(plan.fire, plan.quiet),
        "q": plan.fire if q is None else q,
    }


def _truthy(expression: str, context: Mapping[str, Any]) -> bool:
    try:
        return bool(evaluate(expression, context))
    except TemplateFailure as exc:
        raise SynthError(str(exc)) from None


def _accepts(matcher: promql.Matcher, value: str) -> bool:
    if matcher.op == "=":
        return value == matcher.value
    if matcher.op == "!=":
        return value != matcher.value
    found = promql.full_match(matcher.value, value)
    return found if matcher.op == "=~" else not found


def _sample(matcher: promql.Matcher) -> str | None:
    """A label value the matcher accepts: a fixed one for negative matchers, else from the regex."""
    if matcher.op in ("!=", "!~"):
        return "rulegen-test"
    if matcher.op == "=":
        return matcher.value
    return promql.regex_example(matcher.value)


def _series(
    alert: ResolvedAlert,
    scenario: _Scenario,
    plan: Plan,
    scrape: Decimal,
    steps: int,
) -> list[InputSeries]:
    context = _context(alert, plan, scenario.q)
    out = []
    for definition in scenario.series:
        if definition.when and not _truthy(definition.when, context):
            continue
        name = _name(definition.name, context)
        own = {k: _render_label(v, context) for k, v in definition.labels.items()}
        labels = {**scenario.labels, **own}
        values = _values(definition, context, scrape, steps)
        out.append(InputSeries(_selector(name, labels), values))
    if scenario.histogram is not None:
        out.extend(_histogram(alert, scenario, plan, context, steps))
    return out


def _name(template: str, context: Mapping[str, Any]) -> str:
    name = render_promql(template, context)
    if not promql.METRIC_NAME.match(name):
        raise SynthError(f"test series name {name!r} is not a metric name")
    return name


def _values(definition: SeriesDef, context: Mapping[str, Any], scrape: Decimal, steps: int) -> str:
    expression = definition.rate or definition.inc or definition.value or "0"
    number = _number(evaluate(expression, context))
    if definition.value is not None:
        return f"{units.literal(number)}+0x{steps}"
    increment = number * scrape if definition.rate is not None else number
    if increment < 0:
        raise SynthError(f"counter {definition.name} would decrease ({expression})")
    return f"0+{units.literal(increment)}x{steps}"


def _number(value: Any) -> Decimal:
    if isinstance(value, Decimal):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return Decimal(value)
    raise SynthError(f"a test recipe evaluated to {value!r}, not a number")


def _histogram(
    alert: ResolvedAlert, scenario: _Scenario, plan: Plan, context: Mapping[str, Any], steps: int
) -> list[InputSeries]:
    """The scenario's histogram: ``per_step`` observations a sample, all in the plan's bucket
    (its upper bound ``bucket``), as the kind of histogram the spec says the metric is."""
    assert scenario.histogram is not None
    metric = _name(scenario.histogram.metric, context)
    per_step = _number(evaluate(scenario.histogram.per_step, context))
    bucket = plan.fire_bucket if scenario.q == plan.fire else plan.quiet_bucket
    assert bucket is not None
    if is_native(alert.histogram):
        return [_native_histogram(alert, scenario, metric, per_step, bucket, steps)]
    bounds: tuple[Decimal, ...] = alert.params["buckets"]
    out = []
    for bound in bounds:
        count = per_step if bound >= bucket else Decimal(0)
        labels = {**scenario.labels, "le": repr(float(bound))}
        out.append(
            InputSeries(_selector(f"{metric}_bucket", labels), f"0+{units.literal(count)}x{steps}")
        )
    inf = {**scenario.labels, "le": "+Inf"}
    out.append(
        InputSeries(_selector(f"{metric}_bucket", inf), f"0+{units.literal(per_step)}x{steps}")
    )
    observed = per_step * (bucket if bucket <= bounds[-1] else bounds[-1] * 2)
    out.append(
        InputSeries(
            _selector(f"{metric}_count", scenario.labels), f"0+{units.literal(per_step)}x{steps}"
        )
    )
    out.append(
        InputSeries(
            _selector(f"{metric}_sum", scenario.labels), f"0+{units.literal(observed)}x{steps}"
        )
    )
    return out


def _native_histogram(
    alert: ResolvedAlert,
    scenario: _Scenario,
    metric: str,
    per_step: Decimal,
    bucket: Decimal,
    steps: int,
) -> InputSeries:
    """One native series: NHCB with the signal's bounds (``bucket`` the upper bound of the
    observations' bucket), or exponential with the one bucket of index ``bucket``."""
    if alert.histogram == "nhcb":
        bounds: tuple[Decimal, ...] = alert.params["buckets"]
        layout = Layout("nhcb", bounds)
        index = next((i for i, b in enumerate(bounds) if b >= bucket), len(bounds))
    else:
        layout, index = Layout("native", offset=int(bucket), schema=TEST_SCHEMA), 0
    return InputSeries(_selector(metric, scenario.labels), growing(layout, index, per_step, steps))


def _selector(name: str, labels: Mapping[str, str]) -> str:
    return promql.series_text(name, labels)


# --- expectations --------------------------------------------------------------------------


def _with_host_label(scenarios: list[_Scenario], host_label: str | None) -> list[_Scenario]:
    if host_label is None:
        return scenarios
    out = []
    for scenario in scenarios:
        host = host_from_instance(scenario.labels.get("instance", ""))
        labels = {**scenario.labels, host_label: host} if host else scenario.labels
        out.append(replace(scenario, labels=labels))
    return out


def _result_labels(
    alert: ResolvedAlert, signal: SignalDef, fire: _Scenario, host_label: str | None
) -> dict[str, str]:
    """The labels of the series the alert's expression returns for the firing scenario."""
    keep = signal.test.keep
    if keep is not None and host_label and "host_by" in signal.expr:
        keep = [*keep, host_label]
    series_labels = {
        k: v
        for k, v in fire.labels.items()
        if (keep is None or k in keep) and k not in signal.test.drop
    }
    series_labels.update(signal.test.add)
    if alert.host is not None and alert.host.derived:
        host = host_from_instance(series_labels.get("instance", ""))
        if host:
            series_labels[alert.host.label] = host
    if alert.record is not None:
        series_labels["service"] = dict(alert.labels)["service"]  # the recording's own label
    return series_labels


def _own_labels(
    alert: ResolvedAlert, series_labels: Mapping[str, str], value: float = math.nan
) -> dict[str, str]:
    """The rule's own labels, expanded (their templates see the series' labels)."""
    return {name: gotemplate.expand(text, series_labels, value) for name, text in alert.labels}


def _expected_labels(
    alert: ResolvedAlert, series_labels: dict[str, str], vmalert: Vmalert | None = None
) -> dict[str, str]:
    """The alert's labels: its series' labels, then its own (templates see the series')."""
    own = _own_labels(alert, series_labels)
    if vmalert is not None:
        return vmalert.alert_labels(series_labels, own)
    return {**series_labels, **own}


def _checks(
    alert: ResolvedAlert,
    timing: _Timing,
    evaluation: Decimal,
    expected: ExpectedAlert,
    scenarios: list[_Scenario],
) -> tuple[tuple[AlertCheck, ...], tuple[ExprCheck, ...]]:
    at = units.format_duration
    checks: list[AlertCheck] = []
    exprs: list[ExprCheck] = []
    others = ", ".join(s.name for s in scenarios[1:])
    if alert.for_seconds > 0:
        pending = dict(expected.labels) | {"alertname": alert.name, "alertstate": "pending"}
        exprs.append(
            ExprCheck(
                at(timing.active) if timing.active else "0s",
                f'ALERTS{{alertname="{alert.name}", alertstate="pending"}}',
                ((_selector("ALERTS", pending), "1"),),
                "pending as soon as the threshold is crossed; nothing else is pending",
            )
        )
        checks.append(
            AlertCheck(
                at(timing.fire - evaluation) if timing.fire > evaluation else "0s",
                alert.name, (), f"not firing before for ({at(alert.for_seconds)}) has elapsed",
            )
        )  # fmt: skip
    elif timing.active >= evaluation:
        checks.append(
            AlertCheck(
                at(timing.active - evaluation),
                alert.name,
                (),
                "not firing before the threshold is crossed",
            )
        )
    checks.append(
        AlertCheck(
            at(timing.check),
            alert.name,
            (expected,),
            f"fires with exact labels and annotations; silent for: {others}",
        )
    )
    return tuple(checks), tuple(exprs)


# --- examples of custom alerts ----------------------------------------------------------------


def example_test(
    alert: ResolvedAlert,
    index: int,
    example: ResolvedExample,
    evaluation: Decimal,
    vmalert: Vmalert | None = None,
    group_labels: tuple[tuple[str, str], ...] = (),
) -> TestCase:
    """A custom alert's example as a promtool test: at each ``fires_at`` exactly one alert of
    its name fires, with the example's result labels and the rule's own (over its group's
    ``labels``: Prometheus 3 adds them to every rule of the group, the rule's win), and its
    annotations as Prometheus expands them (``$labels`` are the result's, ``__name__``
    included when the expression keeps it); at each ``silent_at`` none fires.

    Why the rule's text is never read here beyond its name: the example is the user's word
    on what the expression does, so a wrong expression fails the test.
    """
    series_labels = template_labels(alert.quantity, example.labels)
    value = float(example.value) if example.value is not None else math.nan
    own = {**dict(group_labels), **_own_labels(alert, series_labels, value)}
    if vmalert is None:
        labels, shown = {**dict(example.labels), **own}, series_labels
    else:
        labels = vmalert.alert_labels(dict(example.labels), own)
        shown = vmalert.template_labels(alert.name, series_labels, own)
    annotations = tuple((k, gotemplate.expand(v, shown, value)) for k, v in alert.annotations)
    expected = ExpectedAlert(tuple(sorted(labels.items())), annotations)
    at = units.format_duration
    times = sorted([(t, True) for t in example.fires_at] + [(t, False) for t in example.silent_at])
    checks = tuple(
        AlertCheck(
            at(t), alert.name, (expected,) if fires else (),
            f"examples[{index}]: " + ("fires" if fires else "silent") + f" at {at(t)}",
        )
        for t, fires in times
    )  # fmt: skip
    series = tuple(InputSeries(name, values) for name, values in example.series)
    last = max((t for t, _ in times), default=Decimal(0))
    name = f"{alert.name}: examples[{index}]"
    return TestCase(name, example.interval_seconds, series, checks, (), int(last / evaluation) + 1)
