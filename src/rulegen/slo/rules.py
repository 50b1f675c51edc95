"""A resolved SLO → one rule group: window recordings, SLI, budget, burn rate, alerts.

Why one group: Prometheus evaluates a group's rules in order at one timestamp, so the alerts
read recordings made in the same evaluation, never one interval late.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache

from rulegen import gotemplate, units
from rulegen.core import promql
from rulegen.generated import (
    AlertRule,
    And,
    AnyOf,
    Comparison,
    Condition,
    Divided,
    Expression,
    Recorded,
    RecordingRule,
    RuleGroup,
    Threshold,
    Verbatim,
)
from rulegen.slo.model import (
    EventsSLI,
    GoodputSLI,
    GoodRatioSLI,
    LatencySLI,
    RawSLI,
    ResolvedSLO,
    SLOAlert,
    Tier,
    total_series,
)
from rulegen.slo.resolve import INCOMPLETE_ALERT, base_window, format_fraction, windows_of
from rulegen.slo.windows import LOOKBACK, Term, base_steps, chain_of, fallback, plan_windows
from rulegen.templating import go_escape

ERRORS, TOTAL, RATIO = (
    "slo:sli_errors:increase",
    "slo:sli_total:increase",
    "slo:sli_error:ratio_rate",
)
BUDGET_LEFT = "slo:error_budget_remaining:ratio"
CURRENT_BURN = "slo:current_burn_rate:ratio"
OBJECTIVE = "slo:objective:ratio"
TERMS = "slo:sli_terms:count"
COVERAGE = "slo:sli_coverage:ratio"
INCOMPLETE = INCOMPLETE_ALERT
INCOMPLETE_EVALUATIONS = 3  # the alert's ``for``, in evaluations: one missed one is noise


def window_name(seconds: Decimal) -> str:
    """``300`` → ``5m``: the suffix of a window's recording names."""
    return units.format_duration(seconds)


def own_selector(slo: ResolvedSLO, metric: str) -> str:
    """A selector of this SLO's own recording (its service and slo labels)."""
    return f"{metric}{{{_own_matchers(slo.service, slo.name)}}}"


@lru_cache(maxsize=256)  # an SLO's rules read its own recordings hundreds of times
def _own_matchers(service: str, name: str) -> str:
    return f"service={promql.quote(service)}, slo={promql.quote(name)}"


def current_window(slo: ResolvedSLO) -> Decimal:
    """The window of the "current" burn rate: the shortest short window of the tiers."""
    return min((t.short for t in slo.tiers), default=base_window(windows_of(slo)))


def ratio_windows(slo: ResolvedSLO) -> tuple[Decimal, ...]:
    """Windows with an error-ratio recording: those alerts read, the current one, the SLO's."""
    found = {slo.window, current_window(slo)}
    for tier in slo.tiers:
        found.update((tier.long, tier.short))
    return tuple(sorted(found))


def slo_group(slo: ResolvedSLO) -> RuleGroup:
    """Every rule of one SLO, in evaluation order."""
    own = (("service", slo.service), ("slo", slo.name))
    rules: list[RecordingRule | AlertRule] = []
    if isinstance(slo.sli, EventsSLI | RawSLI):
        rules.extend(_expression_recordings(slo, slo.sli, own))
    else:
        plan = plan_windows(windows_of(slo), base_window(windows_of(slo)))
        keep = ("service", "slo", *slo.group_by)
        for window, terms in plan.items():
            for metric in (TOTAL, ERRORS):
                expr = (
                    _base(slo, metric, window)
                    if not terms
                    else _sum_of(slo, metric, terms, keep, plan)
                )
                rules.append(RecordingRule(metric + window_name(window), expr, own, slo.origin))
        rules.extend(_coverage(slo, plan, own))
    for window in ratio_windows(slo) if not isinstance(slo.sli, EventsSLI | RawSLI) else ():
        name = window_name(window)
        expr = f"{own_selector(slo, ERRORS + name)}\n/\n({own_selector(slo, TOTAL + name)} > 0)"
        rules.append(RecordingRule(RATIO + name, expr, own, slo.origin))
    budget = units.literal(slo.budget)
    ratio_slo = own_selector(slo, RATIO + window_name(slo.window))
    rules.append(RecordingRule(BUDGET_LEFT, f"1 - {ratio_slo} / {budget}", own, slo.origin))
    current = own_selector(slo, RATIO + window_name(current_window(slo)))
    rules.append(RecordingRule(CURRENT_BURN, f"{current} / {budget}", own, slo.origin))
    rules.append(
        RecordingRule(OBJECTIVE, f"vector({units.literal(slo.objective)})", own, slo.origin)
    )
    rules.extend(_alert(slo, alert) for alert in slo.alerts)
    if slo.absent is not None:
        rules.append(absent_alert(slo))
    if not isinstance(slo.sli, EventsSLI | RawSLI):  # no cascade: no terms to miss
        rules.append(_incomplete_alert(slo))
    return RuleGroup(group_name(slo), slo.evaluation, tuple(rules))


def _expression_recordings(
    slo: ResolvedSLO, sli: EventsSLI | RawSLI, own: tuple[tuple[str, str], ...]
) -> list[RecordingRule]:
    """An expression SLI's query rendered once per window the alerts read (no cascade: its
    sums hold for counters only), summed per ``group_by`` so that the recordings carry the
    SLO's labels alone, as every SLI's do. Events: the total, the errors (total − good, or
    the errors query, none being zero errors) and their ratio; raw: the error ratio itself.

    The SLO window (the budget's, read by no alert) is the mean of the shortest window's
    ratio over it, as Sloth computes its period ratio: the query over 30 days would be a 30d
    subquery at every evaluation (86,400 points at 30s; beyond what promtool's unit tests let
    a query load, so no test could run), while the mean reads one recorded series."""
    out = []
    for window in expression_windows(slo):
        name = window_name(window)
        if isinstance(sli, RawSLI):
            expr = _sum(slo, sli.error_ratio.at(name))
            out.append(RecordingRule(RATIO + name, expr, own, slo.origin))
            continue
        total = _sum(slo, sli.total.at(name))
        recorded = _sum(slo, own_selector(slo, TOTAL + name))
        part = _sum(slo, sli.part.at(name))
        if sli.good:
            errors = f"clamp_min(\n  {recorded}\n  -\n  {part},\n  0\n)"
        else:
            errors = f"{part}\nor\n0 * {recorded}"
        out.append(RecordingRule(TOTAL + name, total, own, slo.origin))
        out.append(RecordingRule(ERRORS + name, errors, own, slo.origin))
        ratio = f"{own_selector(slo, ERRORS + name)}\n/\n({own_selector(slo, TOTAL + name)} > 0)"
        out.append(RecordingRule(RATIO + name, ratio, own, slo.origin))
    if slo.window not in expression_windows(slo):
        shortest = own_selector(slo, RATIO + window_name(current_window(slo)))
        mean = f"avg_over_time({shortest}[{window_name(slo.window)}])"
        out.append(RecordingRule(RATIO + window_name(slo.window), mean, own, slo.origin))
    return out


def expression_windows(slo: ResolvedSLO) -> tuple[Decimal, ...]:
    """The windows an expression SLI's query is rendered over: those the alerts and the
    current burn read (the SLO window only when a tier reads it too)."""
    found = {current_window(slo)}
    for tier in slo.tiers:
        found.update((tier.long, tier.short))
    return tuple(sorted(found))


def group_name(slo: ResolvedSLO) -> str:
    """The name of the SLO's rule group (``<service>-slo-<name>``)."""
    return f"{slo.service}-slo-{slo.name}"


def _sum(slo: ResolvedSLO, inner: str) -> str:
    """``sum(inner)``, per group_by label when the SLO has them."""
    if slo.group_by:
        return f"sum by ({promql.label_list(slo.group_by)}) ({inner})"
    return f"sum({inner})"


def _base(slo: ResolvedSLO, metric: str, window: Decimal) -> str:
    """The base window: the only recordings that read raw series, each series once."""
    span = window_name(window)
    sli = slo.sli
    assert not isinstance(sli, EventsSLI | RawSLI), "expression SLIs have no cascade (slo_group)"
    if metric == TOTAL:
        first = sli.first if isinstance(sli, GoodputSLI) else sli
        total = _native_total(first) if isinstance(first, LatencySLI) and first.native else None
        return _sum(slo, _increase(slo, total or _Counter(sli.total.render()), window))
    # The errors reuse the total just recorded (same group, same evaluation), not a second
    # scan of the raw series.
    recorded = _sum(slo, own_selector(slo, TOTAL + span))
    if isinstance(sli, GoodputSLI):
        return _goodput_errors(slo, sli, window, recorded)
    if isinstance(sli, LatencySLI | GoodRatioSLI):
        if isinstance(sli, LatencySLI) and sli.native:
            counter = _native_good(sli)
        else:
            counter = _Counter(sli.good.render())
        good = _sum(slo, _increase(slo, counter, window))
        # count and bucket come from one scrape; the clamp only guards odd resets (and, for
        # good events of another family, a good counter scraped ahead of its total).
        return f"clamp_min(\n  {recorded}\n  -\n  {good},\n  0\n)"
    errors = _sum(slo, _increase(slo, _Counter(sli.errors.render()), window))
    # No error series yet is zero errors, not a missing SLI.
    return f"{errors}\nor\n0 * {recorded}"


def _goodput_errors(slo: ResolvedSLO, sli: GoodputSLI, window: Decimal, recorded: str) -> str:
    """``min(total, Σᵢ badᵢ)``: the errors of the goodput SLI's lower bound.

    ``badᵢ`` is what histogram ``i`` counted slower than its threshold in the window (the
    first one's count is the recorded total; each clamped at 0 against odd resets). A request
    slow in several histograms is counted once per histogram, so the sum is at least the
    requests slow in any (equal when no request is slow in two), and capped at the total:
    the good events are ``max(0, total − Σᵢ badᵢ)``, the exact lower bound
    ``Σᵢ goodᵢ − (n − 1)·total`` of the requests that met every target (docs/slos.md#goodput).
    A histogram with no series yet counts no bad event, as a ratio SLI's missing errors.
    """
    terms = []
    for index, one in enumerate(sli.latencies):
        pad = "  " if index == 0 else "    "
        inner = pad + "  "
        counter = _native_good(one) if one.native else _Counter(one.good.render())
        good = _indent(_sum(slo, _increase(slo, counter, window)), len(inner))
        if index == 0:
            count = recorded
        else:
            total = _native_total(one) if one.native else _Counter(one.total.render())
            count = _indent(_sum(slo, _increase(slo, total, window)), len(inner))
        bad = f"{pad}clamp_min(\n{inner}{count}\n{inner}-\n{inner}{good},\n{inner}0\n{pad})"
        if index:
            bad = f"  (\n{bad}\n    or\n    0 * {recorded}\n  )"
        terms.append(bad)
    total_bad = "\n  +\n".join(terms)
    return f"(\n{total_bad}\n) <= {recorded}\nor\n{recorded}"


def _indent(text: str, spaces: int) -> str:
    """``text`` with every line after the first indented by ``spaces``."""
    return text.replace("\n", "\n" + " " * spaces)


@dataclass(frozen=True)
class _Counter:
    """A counter the base window adds up: a counter series, or (``native``) what a native
    histogram series counts, ``native`` a template of one histogram value ``{h}``."""

    selector: str
    native: str = ""

    def at(self, offset: Decimal) -> str:
        """The counter's value ``offset`` seconds ago."""
        read = _at(self.selector, offset)
        return self.native.format(h=read) if self.native else read

    def increase(self, window: Decimal) -> str:
        """``increase()`` over ``window`` (the 2.x form; native histograms are 3.x only)."""
        assert not self.native, "native histograms are written for Prometheus 3 (resolve)"
        return f"increase({self.selector}[{window_name(window)}])"


def _native_total(sli: LatencySLI) -> _Counter:
    """The events a native histogram counted: ``histogram_count``."""
    return _Counter(sli.series.render(), "histogram_count({h})")


def _native_good(sli: LatencySLI) -> _Counter:
    """The events at most ``threshold`` long a native histogram counted.

    ``histogram_fraction(-Inf, T, h)`` is exact when ``T`` is a bucket bound (an NHCB's
    classic bound; a power of two for exponential buckets), and interpolated inside the
    bucket otherwise. Times the count it is the whole number of those events in float
    arithmetic (``3/7 * 7`` may come out a hair off), which ``round`` makes exact again, so
    the cascade's sums stay the exact counts they are for a classic ``le`` bucket.
    A histogram that has counted nothing yet has no fraction (NaN): it counts 0 good events,
    as its ``le`` bucket would, or the step to its first events would lose their good ones.
    """
    bound = units.literal(sli.threshold)
    fraction = f"round(histogram_fraction(-Inf, {bound}, {{h}}) * histogram_count({{h}}))"
    return _Counter(sli.series.render(), f"({fraction} >= 0 or histogram_count({{h}}) == 0)")


STEP_LABEL = "slo_step"


def _increase(slo: ResolvedSLO, counter: _Counter, window: Decimal) -> str:
    """What each counter series added in the base ``window`` ending now, exactly.

    Prometheus 2.x: ``increase(counter[window])``. Its range includes both ends, so on
    scrapes that fall on the evaluations consecutive base windows share their boundary
    sample and tile time without extrapolation: the cascade's sums are exact counts.

    Prometheus 3.x selects ``(t - window, t]``: the boundary sample is gone, and
    ``increase()`` extrapolates the rest of the window from the samples it has, which is
    off whenever traffic changes inside it (a 30-day SLI 0.07% low on the benchmark's
    traffic). So the 3.x form adds up the counter's steps from one evaluation to the next,
    ``now - one evaluation ago``, each read as the latest sample (no range, nothing to
    extrapolate; the differences telescope into exactly last - first). Up to
    ``MAX_STEPS`` steps, and one for a window longer than the lookback
    (``rulegen.slo.windows.base_steps``). A step that went down
    is a counter reset and counts the value after it, as ``increase()`` does; a step without
    its earlier sample (a new series) counts nothing, as ``increase()`` ignores a series'
    first sample. Each step is tagged apart (``slo_step``) so that ``or`` keeps them all.
    """
    if not slo.left_open:
        return counter.increase(window)
    count, step = base_steps(window, slo.evaluation)
    if count == 1:
        now, before = counter.at(Decimal(0)), counter.at(step)
        return f"\n  {now} - {before} >= 0\n  or\n  {now} < {before}\n"
    parts = []
    for index in range(count):
        now = counter.at(step * index)
        before = counter.at(step * (index + 1))
        added = f"{now} - {before} >= 0 or {now} < {before}"
        parts.append(f'  label_replace({added}, "{STEP_LABEL}", "{index}", "", "")')
    return "\n" + "\n  or\n".join(parts) + "\n"


def _at(selector: str, offset: Decimal) -> str:
    return f"{selector} offset {units.format_duration(offset)}" if offset else selector


def _sum_of(
    slo: ResolvedSLO,
    metric: str,
    terms: tuple[Term, ...],
    keep: tuple[str, ...],
    plan: dict[Decimal, tuple[Term, ...]] | None = None,
) -> str:
    """A window as the union of its terms (each tagged apart), summed per ``keep`` labels;
    with ``plan``, a coarse term read at an offset falls back to the finer recordings of its
    chunk."""
    parts = []
    for index, term in enumerate(terms):
        parts.append(f"  {_tagged(_read(slo, metric, term), index)}")
        finer = fallback(plan, term, slo.window) if plan is not None else ()
        if finer and plan is not None:
            parts.append(_fallback(slo, metric, term, finer, keep, index, min(plan)))
    return f"sum by ({promql.label_list(keep)}) (\n" + "\n  or\n".join(parts) + "\n)"


def _read(slo: ResolvedSLO, metric: str, term: Term) -> str:
    selector = own_selector(slo, metric + window_name(term.window))
    if term.offset:
        selector += f" offset {units.format_duration(term.offset)}"
    return selector


def _tagged(expr: str, index: int) -> str:
    return f'label_replace({expr}, "slo_term", "{index}", "", "")'


def _fallback(
    slo: ResolvedSLO,
    metric: str,
    term: Term,
    finer: tuple[Term, ...],
    keep: tuple[str, ...],
    index: int,
    base: Decimal,
) -> str:
    """``term``'s chunk from the finer recordings it is the sum of, when ``term`` is missing.

    The newest finer piece ends at the same instant as ``term``, so it fell in the same hole:
    it is read one lookback later when missing (the first evaluation after the bridged part
    of the hole; a shift of at most 5 minutes of a multi-hour chunk), and only if the group
    ran when the piece begins (its base total was recorded then: a window still filling up
    after a deployment is not a hole, and must not count a piece twice).
    """
    newest = finer[0]
    # 3.x's lookback leaves out a sample exactly 5m old: its bridge ends one evaluation
    # sooner, so its first instant after the bridge is one evaluation nearer the hole's start
    reach = LOOKBACK + (slo.evaluation if slo.left_open else 0)
    later = Term(newest.window, newest.offset - reach)
    began = Term(base, term.offset + newest.window)  # the base total, made first
    ran = _read(slo, TOTAL, began)
    first = (
        f"label_replace(\n        {_read(slo, metric, newest)}\n        or\n"
        f"        ({_read(slo, metric, later)} and on () {ran}),\n"
        '        "slo_term", "0", "", ""\n      )'
    )
    lines = [f"      {first}"]
    lines.extend(
        f"      {_tagged(_read(slo, metric, t), i)}" for i, t in enumerate(finer[1:], start=1)
    )
    body = "\n      or\n".join(lines)
    # the stored term this chunk stands in for carries the ruler's own labels (vmalert's group
    # labels): kept here too, or ``or`` would not match the two and count the chunk twice
    kept = (*keep, *(name for name in slo.stored_labels if name not in keep))
    inner = f"    sum by ({promql.label_list(kept)}) (\n{body}\n    )"
    return f'  label_replace(\n{inner},\n    "slo_term", "{index}", "", ""\n  )'


def _coverage(
    slo: ResolvedSLO, plan: dict[Decimal, tuple[Term, ...]], own: tuple[tuple[str, str], ...]
) -> list[RecordingRule]:
    """Counts of present base terms along the SLO window's cascade, and their share.

    Why a cascade of counts: the window sums read one sample per term, so a term missing
    (evaluations Prometheus missed, raw series not scraped) silently leaves its events out.
    Counting a 1 per present base term, summed exactly like the increases (same offsets),
    says how much of the window the SLI holds for a few samples per evaluation,
    where a range read over the window would cost every sample of it.
    """
    chain = chain_of(plan, slo.window)
    base = chain[0]
    keep = ("service", "slo")
    total = own_selector(slo, TOTAL + window_name(base))
    rules = [RecordingRule(TERMS + window_name(base), f"clamp_max(count({total}), 1)", own,
                           slo.origin)]  # fmt: skip
    for window in chain[1:]:
        expr = _sum_of(slo, TERMS, plan[window], keep)
        rules.append(RecordingRule(TERMS + window_name(window), expr, own, slo.origin))
    count = own_selector(slo, TERMS + window_name(slo.window))
    terms = units.literal(slo.window / base)
    expr = f"(\n  sum({count})\n  or\n  vector(0)\n)\n/ {terms}"
    rules.append(RecordingRule(COVERAGE, expr, own, slo.origin))
    return rules


def _incomplete_alert(slo: ResolvedSLO) -> AlertRule:
    """Coverage below 1 once the window has run longer than itself (a new SLO's window is
    not yet full, and that is not a hole): the SLI, budget and burn rates miss events."""
    labels = dict(slo.labels)
    labels.update(severity=slo.incomplete_severity, service=slo.service, slo=slo.name)
    span = window_name(slo.window)
    incomplete = Comparison(own_recording(slo, COVERAGE), "<", Threshold(Decimal(1), "ratio"))
    running = Comparison(
        Expression(f"{own_selector(slo, OBJECTIVE)} offset {span}"),
        ">",
        Threshold(Decimal(0), "ratio"),
    )
    seconds = units.literal(slo.window)
    summary = go_escape(f"{slo.service}: SLO {slo.name} misses part of its {span} window")
    description = (
        "Only {{ $value | humanizePercentage }} of the "
        + go_escape(span)
        + " window is recorded: its events of about "
        + f'{{{{ with query (printf "(1 - %v) * {seconds}" $value) }}}}'
        + "{{ . | first | value | humanizeDuration }}{{ end }} are missing from the SLI, the "
        + "error budget and the burn rates (rule evaluations Prometheus missed, or raw series "
        + "it did not scrape). Re-record them from the raw series with rulegen repair "
        + "(rulegen docs: slos.md, Repair)."
    )
    out = [("summary", summary), ("description", description)]
    if slo.runbook_url:
        out.append(("runbook_url", go_escape(slo.runbook_url.replace("{alert}", INCOMPLETE))))
    return AlertRule(
        INCOMPLETE,
        And(incomplete, running),
        slo.evaluation * INCOMPLETE_EVALUATIONS,
        tuple((k, go_escape(v)) for k, v in sorted(labels.items())),
        tuple(out),
        slo.origin,
    )


def tier_condition(slo: ResolvedSLO, tier: Tier, pick: Callable[[str], str] | None = None) -> str:
    """The PromQL that is non-empty while ``tier`` burns too fast (min_traffic included), as
    text: what a generated test's check and an annotation's ``query`` evaluate (the latter
    selects with Go-template placeholders, ``pick``, which no typed matcher can hold). The
    rule's own condition is ``tier_alert_condition``; a unit test holds the two equal."""
    select = pick or (lambda metric: own_selector(slo, metric))
    budget = units.literal(slo.budget)
    factor = format_fraction(tier.factor)
    lines = [
        f"{select(RATIO + window_name(tier.long))} / {budget} > {factor}",
        f"{select(RATIO + window_name(tier.short))} / {budget} > {factor}",
    ]
    if slo.min_traffic is not None:
        per_second = f"{select(TOTAL + window_name(tier.short))} / {units.literal(tier.short)}"
        lines.append(f"{per_second} >= {units.literal(slo.min_traffic)}")
    return "\nand\n".join(lines)


def single_target_condition(slo: ResolvedSLO, one: LatencySLI, tiers: tuple[Tier, ...]) -> str:
    """What the tiers of a latency SLO on ``one`` alone (one latency of a goodput SLI) would
    compute, from the raw series: each window's counts as instant reads ``x - x offset W``
    (exact on samples at every evaluation, on 2.x and 3.x alike), then PromQL's float
    operations in the order the SLO's rules do them. For the goodput tests' comparison with
    the worst single target (``rulegen.slo.testgen``)."""
    good = _native_good(one) if one.native else _Counter(one.good.render())
    count = _native_total(one) if one.native else _Counter(one.total.render())

    def events(counter: _Counter, window: Decimal) -> str:
        return _sum(slo, f"{counter.at(Decimal(0))} - {counter.at(window)}")

    def burn(window: Decimal, factor: str) -> str:
        total = events(count, window)
        bad = f"({total} - {events(good, window)})"
        return f"({bad} / {total}) / {units.literal(slo.budget)} > {factor}"

    alternatives = []
    for tier in tiers:
        factor = format_fraction(tier.factor)
        parts = [burn(tier.long, factor), burn(tier.short, factor)]
        if slo.min_traffic is not None:
            per_second = f"{events(count, tier.short)} / {units.literal(tier.short)}"
            parts.append(f"{per_second} >= {units.literal(slo.min_traffic)}")
        alternatives.append("(" + " and ".join(parts) + ")")
    return " or ".join(alternatives)


def own_recording(slo: ResolvedSLO, metric: str) -> Recorded:
    """This SLO's own recording (its service and slo labels), as ``own_selector`` writes it."""
    own = (promql.Matcher("service", "=", slo.service), promql.Matcher("slo", "=", slo.name))
    return Recorded(metric, own)


def tier_alert_condition(slo: ResolvedSLO, tier: Tier) -> Condition:
    """``tier`` burns too fast: both windows' burn rates above the tier's factor, and, with
    ``min_traffic``, enough events per second in the short window."""
    factor = Threshold(units.exact_number(tier.factor), "ratio")

    def burn(window: Decimal) -> Comparison:
        ratio = own_recording(slo, RATIO + window_name(window))
        return Comparison(Divided(ratio, slo.budget), ">", factor)

    condition: Condition = And(burn(tier.long), burn(tier.short))
    if slo.min_traffic is not None:
        events = Divided(own_recording(slo, TOTAL + window_name(tier.short)), tier.short)
        enough = Comparison(events, ">=", Threshold(slo.min_traffic, "rate"))
        condition = And(condition, enough)
    return condition


def alert_condition(slo: ResolvedSLO, alert: SLOAlert) -> Condition:
    """Any tier of the alert: ``(tier) or (tier)``; one tier alone."""
    tiers = tuple(tier_alert_condition(slo, tier) for tier in alert.tiers)
    return tiers[0] if len(tiers) == 1 else AnyOf(tiers)


def _alert(slo: ResolvedSLO, alert: SLOAlert) -> AlertRule:
    return AlertRule(
        slo.alert_name,
        alert_condition(slo, alert),
        alert.for_seconds,
        tuple((k, go_escape(v)) for k, v in alert_labels(slo, alert)),
        alert_annotations(slo, alert) + own_annotations(alert.annotations),
        slo.origin,
        subject=f"{alert.role} burn rate",
    )


def alert_labels(slo: ResolvedSLO, alert: SLOAlert) -> tuple[tuple[str, str], ...]:
    """The rule labels of a page or ticket alert (as written, before escaping): the SLO's,
    the alert's own over them, then severity, service and slo."""
    labels = dict(slo.labels)
    labels.update(alert.labels)
    labels.update(severity=alert.severity, service=slo.service, slo=slo.name)
    return tuple(sorted(labels.items()))


def own_annotations(annotations: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """A user's annotations of an SLO alert, after rulegen's: literal text (escaped as
    ``alerting.labels`` values are), in name order."""
    return tuple((k, go_escape(v)) for k, v in sorted(annotations))


def absent_labels(slo: ResolvedSLO) -> tuple[tuple[str, str], ...]:
    """The rule labels of the absent alert (as written, before escaping)."""
    assert slo.absent is not None
    labels = dict(slo.labels)
    labels.update(slo.absent.labels)
    labels.update(severity=slo.absent.severity, service=slo.service, slo=slo.name)
    return tuple(sorted(labels.items()))


def absent_alert(slo: ResolvedSLO) -> AlertRule:
    """``absent(<the SLI's total series>) == 1`` for ``alerting.absent.for``: the SLI has no
    data, so its burn rates have none and no burn-rate alert can fire (Pyrra's absent alert).
    One per SLO: for a ``group_by`` SLO it fires when no series of any group is left."""
    absent = slo.absent
    assert absent is not None
    selector = total_series(slo.sli).render()
    # written as is: the generic comparison would wrap the call in parentheses
    reading = Comparison(Expression(f"absent({selector})"), "==", Threshold(Decimal(1), "number"))
    return AlertRule(
        absent.name,
        Verbatim(f"absent({selector}) == 1", reading),
        absent.for_seconds,
        tuple((k, go_escape(v)) for k, v in absent_labels(slo)),
        absent_annotations(slo) + own_annotations(absent.annotations),
        absent.origin,
    )


def absent_annotations(slo: ResolvedSLO) -> tuple[tuple[str, str], ...]:
    """Summary, description and runbook of the absent alert: literal text, no template."""
    absent = slo.absent
    assert absent is not None
    selector = total_series(slo.sli).render()
    wait = units.format_duration(absent.for_seconds)
    summary = f"{slo.service}: SLO {slo.name} has no data"
    description = (
        f"No series of {selector} for {wait}: the SLI counts no events, so its error budget "
        f"and burn rates have no value and {slo.alert_name} cannot fire. Check the target's "
        "scrape and the SLI's selector (rulegen docs: slos.md, Absent)."
    )
    out = [("summary", go_escape(summary)), ("description", go_escape(description))]
    if slo.runbook_url:
        out.append(("runbook_url", go_escape(slo.runbook_url.replace("{alert}", absent.name))))
    return tuple(out)


def describe_tier(tier: Tier) -> str:
    """``1h/5m (2% of the budget in 1h, burn rate above 14.4×)``."""
    share = units.literal(tier.budget_share * 100)
    return (
        f"{window_name(tier.long)}/{window_name(tier.short)} ({share}% of the budget in "
        f"{window_name(tier.long)}, burn rate above {_factor_text(tier.factor)}×)"
    )


def _factor_text(factor: Fraction) -> str:
    text = format_fraction(factor)
    return text if not text.startswith("(") else f"{float(factor):.4g}"


def alert_annotations(slo: ResolvedSLO, alert: SLOAlert) -> tuple[tuple[str, str], ...]:
    """Summary, description (tiers firing, burn rate, budget left, time left), runbook.

    The description asks Prometheus (``query``) which tiers hold and how much budget is left
    for this alert's own series, so it is right even when several tiers fire at once.
    """
    scope = "".join(f" {g}={{{{ {gotemplate.label_ref(g)} }}}}" for g in slo.group_by)
    objective = units.literal(slo.objective * 100)
    summary = go_escape(
        f"{slo.service}: SLO {slo.name} ({objective}% over {window_name(slo.window)}) is burning "
        "its error budget"
    ) + (f" for{scope}" if scope else "")
    tiers = "".join(
        f"{{{{ if {_query(slo, _condition_of(slo, tier))} }}}} "
        f"{go_escape(describe_tier(tier))}{{{{ end }}}}"
        for tier in alert.tiers
    )
    seconds = units.literal(slo.window)
    left = _query(slo, lambda pick: pick(BUDGET_LEFT))
    description = (
        'Burn rate {{ $value | printf "%.3g" }}× the sustainable rate (long window of the '
        f"first tier firing). Tiers firing:{tiers}. "
        f"{{{{ with {left} }}}}{{{{ $left := . | first | value }}}}"
        "Error budget left: {{ $left | humanizePercentage }}"
        "{{ if gt $left 0.0 }}, exhausted in "
        f'{{{{ with query (printf "%v * {seconds} / %v" $left $value) }}}}'
        "{{ . | first | value | humanizeDuration }}{{ end }} at this rate"
        "{{ else }} (exhausted){{ end }}.{{ end }}"
    ) + goodput_note(slo)
    out = [("summary", summary), ("description", description)]
    if slo.description:
        out.append(("slo_description", go_escape(slo.description)))
    if slo.runbook_url:
        out.append(("runbook_url", go_escape(slo.runbook_url.replace("{alert}", slo.alert_name))))
    return tuple(out)


def goodput_note(slo: ResolvedSLO) -> str:
    """For a goodput SLI, what its ratio is: a lower bound of goodput (escaped text)."""
    sli = slo.sli
    if not isinstance(sli, GoodputSLI):
        return ""
    targets = ", ".join(
        f"{one.metric} ≤ {units.format_latency(one.threshold)}" for one in sli.latencies
    )
    return go_escape(
        f" The SLI is a lower bound of goodput (requests that met every target: {targets}): "
        "the histograms are separate, so a request slow in several counts once in each, and "
        "goodput is at least the total minus the slow requests of every histogram (rulegen "
        "docs: slos.md, Goodput)."
    )


def replay_safe_group(slo: ResolvedSLO, group: RuleGroup) -> RuleGroup:
    """``group`` (this SLO's) with alert descriptions that do not call ``query``.

    Why: vmalert 1.79's replay mode (``-replay.timeFrom``) refuses a rule file whose
    annotations use the ``query`` template function, which the SLO alerts' descriptions call
    to list the firing tiers and the budget left; 1.145 replays them. The replay-safe text
    names the alert's tiers and the recording that holds the budget left instead
    (``targets.victoriametrics.replay_safe``, docs/victoriametrics.md).
    """
    burn = iter(slo.alerts)  # the burn-rate rules, in the group's order
    rules: list[RecordingRule | AlertRule] = []
    for rule in group.rules:
        if isinstance(rule, AlertRule):
            if rule.alert == INCOMPLETE:
                rule = replace(rule, annotations=_safe(rule, _incomplete_text(slo)))
            elif rule.alert == slo.alert_name:
                rule = replace(rule, annotations=_safe(rule, _burn_text(slo, next(burn))))
        rules.append(rule)
    return replace(group, rules=tuple(rules))


def _safe(rule: AlertRule, description: str) -> tuple[tuple[str, str], ...]:
    return tuple((k, description if k == "description" else v) for k, v in rule.annotations)


def _burn_text(slo: ResolvedSLO, alert: SLOAlert) -> str:
    tiers = "; ".join(describe_tier(t) for t in alert.tiers)
    left = own_selector(slo, BUDGET_LEFT)
    return (
        'Burn rate {{ $value | printf "%.3g" }}× the sustainable rate (long window of the '
        + go_escape(f"first tier firing). Tiers of this alert: {tiers}. Error budget left: {left}.")
        + goodput_note(slo)
    )


def _incomplete_text(slo: ResolvedSLO) -> str:
    span = window_name(slo.window)
    return (
        "Only {{ $value | humanizePercentage }} of the "
        + go_escape(span)
        + " window is recorded: the rest of its events are missing from the SLI, the error "
        "budget and the burn rates (rule evaluations that did not run, or raw series that were "
        "not scraped). Re-record them from the raw series with rulegen repair (rulegen docs: "
        "slos.md, Repair)."
    )


def _condition_of(slo: ResolvedSLO, tier: Tier) -> Callable[[Callable[[str], str]], str]:
    def build(pick: Callable[[str], str]) -> str:
        return tier_condition(slo, tier, pick)

    return build


def _query(slo: ResolvedSLO, build: Callable[[Callable[[str], str]], str]) -> str:
    """A Go-template ``query`` call on PromQL built for the alert's own series.

    The SLO's group_by labels come from ``$labels`` through printf ``%q`` (a Go-quoted string is
    a valid PromQL string), so no label value is ever pasted into the template text.
    """
    extra = "".join(
        f", {promql.label_name(g)}=%[{i}]q" for i, g in enumerate(slo.group_by, start=1)
    )
    identity = f"service={promql.quote(slo.service)}, slo={promql.quote(slo.name)}"
    text = " ".join(build(lambda metric: f"{metric}{{{identity}{extra}}}").split())
    if not slo.group_by:
        return f"query `{text}`"
    args = " ".join(gotemplate.label_arg(g) for g in slo.group_by)
    return f"query (printf `{text}` {args})"
