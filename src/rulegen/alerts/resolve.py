"""The spec's ``alerts:`` entries → ``ResolvedAlert``: thresholds in their unit, defaults of
the catalog signal filled, labels merged, PromQL rendered and checked.

Why: the spec is for users (shorthands, optional keys); this stage makes every value of an
alert explicit, collecting every semantic error with its position before giving up, and
bounds what a generated test would have to evaluate.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from typing import Any

import promql_parser

from rulegen import gotemplate, units
from rulegen.alerts.custom import ExampleContext, examples, group_name, verbatim_annotations
from rulegen.alerts.model import ResolvedAlert
from rulegen.catalog import Catalog, SignalDef
from rulegen.catalog.vllm import VllmVersion, adapt, bucket_checks
from rulegen.core import promql
from rulegen.core.histograms import ALL_CLASSIC, CLASSIC, HistogramKind, Histograms, is_native
from rulegen.generated import Comparison, Expression, Operator, Recorded, Threshold, Verbatim
from rulegen.source.fields import Collector, duration
from rulegen.source.fields import labels as label_set
from rulegen.source.loader import PathKey
from rulegen.source.severities import DEFAULT as DEFAULT_SEVERITIES
from rulegen.source.severities import Severities, check
from rulegen.templating import (
    TemplateFailure,
    go_escape,
    plain_key,
    render_promql,
    render_text,
    user_text,
)

# Limits that keep every alert testable: a generated promtool test evaluates the whole rule
# file at each evaluation up to window + for, so these bound its run time.
MAX_FOR = Decimal(86400)
# A custom alert has no generated test beyond its examples (bounded by their own times), so
# its ``for`` may be as long as a rule file's: a week-long "underutilised" alert is common.
MAX_CUSTOM_FOR = Decimal(365 * 86400)
MAX_WINDOW = Decimal(86400)
MAX_EVALUATIONS = 20_000
MAX_DURATION_THRESHOLD = Decimal(365 * 86400)
MAX_THRESHOLD = Decimal(10) ** 15
# ``{labels.__name__}``: Prometheus drops every ``__`` label from an alert's labels.
_INTERNAL_LABEL = re.compile(r"\{labels\.__[A-Za-z0-9_]*\}")
# The comparisons a custom alert's threshold is read from (``==`` and ``!=`` draw no line).
_ORDERINGS: dict[str, Operator] = {">": ">", "<": "<", ">=": ">=", "<=": "<="}
_VALUE_ACTION = {
    "duration": "{{ $value | humanizeDuration }}",
    "percent": "{{ $value | humanizePercentage }}",
    "number": "{{ $value | humanize }}",
    "bandwidth": "{{ $value | humanize1024 }}B/s",
    "bytes": "{{ $value | humanize1024 }}B",
}
# Labels that tell one firing instance of a custom alert from another, when its expression
# keeps the labels of the series it reads (no aggregation names them).
IDENTITY_LABELS = ("instance", "pod", "container", "namespace", "node", "gpu", "device",
                   "model_name")  # fmt: skip


def resolve_alerts(
    col: Collector,
    spec: Any,
    spec_labels: tuple[tuple[str, str], ...],
    intervals: tuple[Decimal, Decimal],
    selectors: Mapping[str, tuple[promql.Matcher, ...]],
    catalog: Catalog,
    histograms: Histograms = ALL_CLASSIC,
    vllm: VllmVersion | None = None,
    severities: Severities = DEFAULT_SEVERITIES,
) -> list[ResolvedAlert]:
    """Every alert of a spec, each checked at its position (errors go to ``col``); vLLM
    signals read the metrics of the ``vllm`` release (``rulegen.catalog.vllm``), severities
    are the declared ones (``rulegen.source.severities``)."""
    alerts: list[ResolvedAlert] = []
    names: dict[str, list[tuple[int, Any]]] = {}
    for index, alert in enumerate(spec.alerts or ()):
        path: PathKey = ("alerts", index)
        if not check(col, (*path, "severity"), alert.severity, severities):
            # the rest of the entry is still checked, the value as text standing in
            alert = alert.model_copy(update={"severity": str(alert.severity)})
        signal = None if alert.signal == "custom" else catalog.signals[alert.signal]
        name = alert.name or (signal.alert if signal else "")
        if not _unique_name(col, path, alert, name, names.setdefault(name, [])):
            continue
        names[name].append((index, alert))
        context = _AlertContext(col, path, spec, name, spec_labels, *intervals)
        resolved = (
            _custom(context, alert)
            if signal is None
            else _catalog(context, alert, signal, selectors, histograms, vllm)
        )
        if resolved is not None:
            alerts.append(resolved)
    _shared_names_have_no_examples(col, names)
    return alerts


def _unique_name(
    col: Collector, path: PathKey, alert: Any, name: str, earlier: list[tuple[int, Any]]
) -> bool:
    """Whether an alert's name is free: unique, or shared only by custom alerts of other
    severities (a warning/critical pair, as Prometheus rule files have them)."""
    if not earlier:
        return True
    index, first = earlier[0]
    where = (*path, "name") if alert.name else (*path, "signal")
    custom = alert.signal == "custom" and all(a.signal == "custom" for _, a in earlier)
    if not custom:
        col.error(
            where,
            f"duplicate alert name {name!r} (also used by alerts[{index}]); "
            "give one of them a unique name",
        )
        return False
    same = [i for i, a in earlier if a.severity == alert.severity]
    if same:
        col.error(
            where,
            f"duplicate alert name {name!r} with severity {alert.severity} (also used by "
            f"alerts[{same[0]}]); custom alerts may share a name only with another severity",
        )
        return False
    return True


def _shared_names_have_no_examples(col: Collector, names: dict[str, list[tuple[int, Any]]]) -> None:
    """promtool checks every alert of a name at once, so an example of one alert of a
    warning/critical pair would also have to predict the other: refused, with the way out."""
    for name, alerts in names.items():
        if len(alerts) < 2:
            continue
        for index, alert in alerts:
            if alert.examples:
                others = ", ".join(f"alerts[{i}]" for i, _ in alerts if i != index)
                col.error(
                    ("alerts", index, "examples"),
                    f"{name} shares its name with {others}: promtool checks every alert of a "
                    "name at once, so examples cannot test one of them; test them together "
                    "in a promtool test of your own (specs/tests/)",
                )


def recipe_labels(signal: SignalDef) -> set[str]:
    """Every label the series of a signal's generated tests carry (or its histogram's ``le``)."""
    test = signal.test
    names = {*test.labels, *test.vary_alt, *(test.keep or ()), *test.add, *test.drop}
    scenarios = [test.series, *(n.series for n in test.neutral)]
    names.update(k for n in test.neutral for k in n.labels)
    names.update(k for series in scenarios for s in series for k in s.labels)
    if test.histogram is not None:
        names.add("le")
    return names


@dataclass
class _AlertContext:
    col: Collector
    path: PathKey
    spec: Any
    name: str
    spec_labels: tuple[tuple[str, str], ...]
    evaluation: Decimal
    scrape: Decimal


def _final_labels(ctx: _AlertContext, alert: Any) -> tuple[tuple[str, str], ...]:
    """The spec's labels, the alert's, severity and service, escaped for Go templates but for
    the alert's own labels of a verbatim custom alert (one with ``annotations:``), which are
    Go templates as in a Prometheus rule file."""
    verbatim = alert.signal == "custom" and alert.annotations is not None
    own = label_set(ctx.col, (*ctx.path, "labels"), alert.labels)
    merged = {k: go_escape(v) for k, v in ctx.spec_labels}
    merged.update((k, v if verbatim else go_escape(v)) for k, v in own)
    merged["severity"] = go_escape(alert.severity)
    merged["service"] = go_escape(ctx.spec.service)
    return tuple(sorted(merged.items()))


def _annotations(
    ctx: _AlertContext, alert: Any, defaults: tuple[str, str], values: Mapping[str, str], unit: str
) -> tuple[tuple[str, str], ...]:
    action = _VALUE_ACTION.get(unit, "{{ $value }}")
    out = []
    for key, default in zip(("summary", "description"), defaults, strict=True):
        text = getattr(alert, key)
        internal = _INTERNAL_LABEL.search(text) if text else None
        if internal is not None:
            ctx.col.error(
                (*ctx.path, key),
                f"placeholder {internal.group()} names a label no alert carries: labels "
                "starting with __ are reserved for Prometheus' internal use",
            )
            out.append((key, default))
            continue
        try:
            out.append((key, user_text(text, values, action) if text else default))
        except ValueError as exc:
            ctx.col.error((*ctx.path, key), str(exc))
            out.append((key, default))
    if ctx.spec.runbook_url:
        out.append(("runbook_url", go_escape(ctx.spec.runbook_url.replace("{alert}", ctx.name))))
    return tuple(out)


def _custom(ctx: _AlertContext, alert: Any) -> ResolvedAlert | None:
    col, path = ctx.col, ctx.path
    before = len(col.diagnostics)
    error = promql.syntax_error(alert.expr)
    if error is not None:
        col.promql_error((*path, "expr"), error)
    elif (kind := promql.result_type(alert.expr)) != "vector":
        error = f"must return an instant vector, not a {kind} (an alert needs series to fire)"
        col.error((*path, "expr"), error)
    for_text = alert.for_ if alert.for_ is not None else "0s"
    for_seconds = duration(col, (*path, "for"), for_text, most=MAX_CUSTOM_FOR)
    keep: Decimal | None = Decimal(0)
    if alert.keep_firing_for is not None:
        keep = duration(col, (*path, "keep_firing_for"), alert.keep_firing_for, most=MAX_CUSTOM_FOR)
    labels = _final_labels(ctx, alert)
    if alert.annotations is not None:
        annotations = verbatim_annotations(col, path, alert)
    else:
        values = {"alert": ctx.name, "service": ctx.spec.service, "for": str(for_text)}
        defaults = _custom_texts(ctx, alert, None if error else for_seconds)
        annotations = _annotations(ctx, alert, defaults, values, alert.unit or "raw")
    group = group_name(col, (*path, "group"), alert.group)
    if error is not None or for_seconds is None or keep is None or len(col.diagnostics) > before:
        return None
    expr = " ".join(alert.expr.split()) if "\n" not in alert.expr.strip() else alert.expr.strip()
    context = ExampleContext(
        col, path, alert, expr, for_seconds, annotations, ctx.evaluation, ctx.scrape, labels
    )
    found = examples(context)
    if found is None:
        return None
    return ResolvedAlert(
        ctx.name, None, alert.severity, Decimal(0), for_seconds, None, Decimal(0), {}, (),
        expr, None, Verbatim(expr, _reading(expr)), labels, annotations, col.origin(path),
        keep_firing_for_seconds=keep, group=group,
        group_origin=col.origin((*path, "group")) if group is not None else None,
        examples=found,
    )  # fmt: skip


def _custom_texts(ctx: _AlertContext, alert: Any, for_seconds: Decimal | None) -> tuple[str, str]:
    """A custom alert's default summary and description, for whoever is paged at 3 am.

    The summary names the alert and the labels that identify the instance (those an
    aggregation keeps, else the usual identity labels the series carry); the description
    prints the value (humanized in the alert's ``unit``), every label as ``name=value``, the
    ``for`` and the runbook.
    """
    try:
        grouped = promql.grouped_labels(alert.expr) if for_seconds is not None else ()
    except ValueError:
        grouped = ()
    names = IDENTITY_LABELS if grouped is None else grouped
    identity = gotemplate.label_pairs(names, keep=True) if names else ""
    held = f" for {units.format_duration(for_seconds)}" if for_seconds else ""
    runbook = ctx.spec.runbook_url
    after = f"){held}." + (f" Runbook: {runbook.replace('{alert}', ctx.name)}" if runbook else "")
    description = (
        go_escape(f"{ctx.name} ({ctx.spec.service}) is at ")
        + _VALUE_ACTION.get(alert.unit or "", "{{ $value }}")
        + " (labels:"
        + gotemplate.label_pairs(("__name__",), keep=False)
        + go_escape(after)
    )
    return go_escape(ctx.name) + identity, description


@lru_cache(maxsize=8192)  # pure, and a fleet asks the same questions
def _reading(expr: str) -> Comparison | None:
    """What a custom alert's PromQL compares when it is ``X > 85`` (no ``bool``; also inside
    ``label_replace(...)``): ``X`` as the parser writes it, the operator, the number.

    Why here: the user's text is read once, as the spec is resolved; the rules keep it
    verbatim and everything after reads the typed comparison.
    """
    parsed = promql_parser.parse(expr)
    if isinstance(parsed, promql_parser.Call) and parsed.func.name == "label_replace":
        parsed = parsed.args[0]
    if not isinstance(parsed, promql_parser.BinaryExpr) or parsed.modifier is not None:
        return None
    op = _ORDERINGS.get(str(parsed.op))
    if op is None or not isinstance(parsed.rhs, promql_parser.NumberLiteral):
        return None
    number = Decimal(repr(parsed.rhs.val)).normalize()
    quantity = str(parsed.lhs)
    if promql.check_syntax(quantity) is not None:
        # the parser's printer drops the quotes of UTF-8 names (``by ("k8s.pod")`` comes
        # out ``by (k8s.pod)``): no reading rather than a dashboard query that cannot run
        return None
    return Comparison(Expression(quantity), op, Threshold(number, "number"))


def _beyond_max(
    col: Collector, path: PathKey, raw: object, value: Decimal, signal: SignalDef
) -> bool:
    """A threshold the signal's quantity can never pass (an error at ``path``); a bare ``1``
    on a percentage is told apart: 100% or, more likely, meant as 1%."""
    bounds, unit = signal.threshold, signal.threshold.unit
    if bounds.max is None or (value < bounds.max if bounds.op == ">" else value <= bounds.max):
        return False
    shown = units.format_human
    if unit == "percent" and _bare_one(raw):
        col.error(path, f"a bare 1 is the ratio 1, i.e. 100%, which {signal.signal} can "
                  f"never exceed: write 1% or 0.01 for one percent (got {raw})")  # fmt: skip
        return True
    limit = "below" if bounds.op == ">" else "at most"
    col.error(
        path,
        f"must be {limit} {shown(bounds.max, unit)} (got {raw}); "
        f"{signal.signal} can never exceed {shown(bounds.max, unit)}",
    )
    return True


def _bare_one(raw: object) -> bool:
    """``1`` written without a unit where a percentage is read: 100%, or meant as 1%?"""
    text = str(raw).strip() if isinstance(raw, int | float | str) else ""
    return not isinstance(raw, bool) and text in ("1", "1.0")


def _catalog(
    ctx: _AlertContext,
    alert: Any,
    signal: SignalDef,
    selectors: Mapping[str, tuple[promql.Matcher, ...]],
    histograms: Histograms,
    vllm: VllmVersion | None = None,
) -> ResolvedAlert | None:
    col, path = ctx.col, ctx.path
    before = len(col.diagnostics)
    given = frozenset(k for k in signal.params if getattr(alert, k) is not None)
    adapted = adapt(signal, vllm, given)
    if isinstance(adapted, str):
        col.error((*path, "signal"), adapted)
        return None
    signal = adapted
    threshold = _threshold(col, (*path, "threshold"), alert.threshold, signal)
    for_text = alert.for_ if alert.for_ is not None else signal.defaults.for_
    for_seconds = duration(col, (*path, "for"), for_text, most=MAX_FOR)
    window, window_seconds = _window(ctx, alert.window, signal)
    params = _params(col, path, alert, signal)
    matchers: tuple[promql.Matcher, ...] = ()
    if alert.matchers:
        try:
            matchers = promql.parse_matchers(alert.matchers)
        except ValueError as exc:
            col.error((*path, "matchers"), str(exc))
    labels = _final_labels(ctx, alert)
    if len(col.diagnostics) > before or threshold is None or for_seconds is None:
        return None
    if (window_seconds + for_seconds) / ctx.evaluation > MAX_EVALUATIONS:
        col.error(
            (*path, "for"),
            f"window + for spans more than {MAX_EVALUATIONS} evaluations at evaluation_interval "
            f"{units.format_duration(ctx.evaluation)}; its generated test would not finish",
        )
        return None
    kind = _histogram_kind(ctx, signal, params, histograms)
    if kind is None:
        return None
    if "buckets" in params and kind != "native":
        _check_every_release(col, path, signal, params, threshold, vllm, given)
    every = _every_family(selectors, matchers) if reads_every_family(signal) else ()
    all_matchers = _own_family(selectors, signal, every) + matchers
    fixed = {"window": window, **params}
    rendered = _render_expressions(ctx, signal, fixed, all_matchers, kind, every)
    if rendered is None:
        return None
    quantity, record = rendered
    values = {
        "threshold": units.format_human(threshold, signal.threshold.unit),
        "for": units.format_duration(for_seconds),
        "window": window or "",
        "alert": ctx.name,
        "service": ctx.spec.service,
    }
    defaults = _default_texts(ctx, signal, {**values, **fixed})
    if defaults is None:
        return None
    annotations = _annotations(ctx, alert, defaults, values, signal.threshold.unit)
    compared = Recorded(record) if record is not None else Expression(quantity)
    limit = Threshold(threshold, signal.threshold.unit)
    condition = Comparison(compared, signal.threshold.op, limit)
    return ResolvedAlert(
        ctx.name, signal, alert.severity, threshold, for_seconds, window, window_seconds,
        params, all_matchers, quantity, record, condition, labels, annotations,
        col.origin(path), histogram=kind, family_selectors=every,
    )  # fmt: skip


def _histogram_kind(
    ctx: _AlertContext, signal: SignalDef, params: Mapping[str, Any], histograms: Histograms
) -> HistogramKind | None:
    """How the histogram this signal reads is stored; None (an error) when the spec says
    native and the signal has no expression for one."""
    if signal.test.histogram is None or not isinstance(params.get("metric"), str):
        return CLASSIC
    kind = histograms.kind(params["metric"], signal.family)
    if is_native(kind) and signal.native_expr is None:
        ctx.col.error(
            ctx.path,
            f"signal {signal.signal} ({signal.source}) reads classic histograms only (no "
            f"native_expr), but histograms: makes {params['metric']} {kind}",
        )
        return None
    return kind


def _expr_of(signal: SignalDef, kind: HistogramKind) -> str:
    """The signal's PromQL template for the histogram kind its metric is stored as."""
    if is_native(kind) and signal.native_expr is not None:
        return signal.native_expr
    return signal.expr


def _render_expressions(
    ctx: _AlertContext,
    signal: SignalDef,
    fixed: Mapping[str, Any],
    matchers: tuple[promql.Matcher, ...],
    kind: HistogramKind,
    every: tuple[tuple[promql.Matcher, ...], ...] = (),
) -> tuple[str, str | None] | None:
    """The signal's quantity and recording name, checked as PromQL before promtool sees them."""
    col, path = ctx.col, ctx.path
    try:
        # ``host_by`` keeps a relabelled host label through a signal's aggregations, so its
        # alerts can be matched with a diagnosis on the same host.
        host_by = f", {ctx.spec.host_label}" if ctx.spec.host_label else ""
        quantity = _quantity(_expr_of(signal, kind), fixed, matchers, every, host_by)
        record = render_promql(signal.record, fixed) if signal.record else None
    except TemplateFailure as exc:
        col.error(path, f"signal {signal.signal} ({signal.source}): {exc}")
        return None
    error = promql.syntax_error(quantity)
    if error is not None:
        col.error(path, f"signal {signal.signal} renders invalid PromQL ({error}): {quantity!r}")
        return None
    if record is not None and not promql.METRIC_NAME.match(record):
        col.error(path, f"signal {signal.signal} renders an invalid record name {record!r}")
        return None
    return quantity, record


def render_quantity(
    alert: ResolvedAlert, extra: tuple[promql.Matcher, ...], host_label: str | None
) -> str:
    """The alert's quantity with ``extra`` matchers on every selector (a dashboard's filters).

    Only for catalog alerts; the template rendered before, so it cannot fail now.
    """
    signal = alert.signal
    assert signal is not None
    fixed = {"window": alert.window, **alert.params}
    host_by = f", {host_label}" if host_label else ""
    every = tuple(family + extra for family in alert.family_selectors)
    matchers = alert.selector_matchers + extra
    return _quantity(_expr_of(signal, alert.histogram), fixed, matchers, every, host_by)


def _quantity(
    template: str,
    fixed: Mapping[str, Any],
    matchers: tuple[promql.Matcher, ...],
    every: tuple[tuple[promql.Matcher, ...], ...],
    host_by: str,
) -> str:
    """A signal's expression with ``sel()`` of ``matchers`` and ``sel_each()`` of ``every``.

    Remembered by those and the plain values (the template memo leaves contexts holding
    functions alone): a fleet's services render the same catalog expressions with the same
    selectors, for their rules and again for their dashboards."""
    plain = plain_key(fixed)
    key = None if plain is None else (template, plain, matchers, every, host_by)
    found = _QUANTITIES.get(key) if key is not None else None
    if found is None:
        context = {**fixed, "sel": _sel(matchers), "sel_each": _sel_each(every), "host_by": host_by}
        found = render_promql(template, context)
        if key is not None:
            if len(_QUANTITIES) >= 4096:
                _QUANTITIES.clear()
            _QUANTITIES[key] = found
    return found


_QUANTITIES: dict[object, str] = {}


def _default_texts(
    ctx: _AlertContext, signal: SignalDef, context: Mapping[str, Any]
) -> tuple[str, str] | None:
    """The catalog's summary and description for this alert (Go templates for Prometheus)."""
    text_context = {**context, "value": _VALUE_ACTION[signal.threshold.unit]}
    if context.get("quantile") is not None:
        text_context["quantile_name"] = "p" + units.literal(context["quantile"] * 100)
    try:
        return (
            render_text(signal.summary, text_context),
            render_text(signal.description, text_context),
        )
    except TemplateFailure as exc:
        ctx.col.error(ctx.path, f"signal {signal.signal} ({signal.source}): {exc}")
        return None


def _sel(matchers: tuple[promql.Matcher, ...]) -> Any:
    def sel(*fixed: str) -> str:
        parts = [*fixed, *(m.render() for m in matchers)]
        return "{" + ", ".join(parts) + "}" if parts else ""

    return sel


def reads_every_family(signal: SignalDef) -> bool:
    """Whether the signal's template reads every family of the spec (``sel_each()``)."""
    return any("sel_each" in text for text in (signal.expr, signal.native_expr or ""))


def _own_family(
    selectors: Mapping[str, tuple[promql.Matcher, ...]],
    signal: SignalDef,
    every: tuple[tuple[promql.Matcher, ...], ...],
) -> tuple[promql.Matcher, ...]:
    """The selector of the signal's family (what ``sel()`` and its generated test read); for
    a signal reading every family, the first family's when the spec has none for its own, so
    the test's series match one of the rendered selectors."""
    own = selectors.get(signal.family)
    if own is None and every:
        own = selectors[sorted(selectors)[0]]
    return own or ()


def _every_family(
    selectors: Mapping[str, tuple[promql.Matcher, ...]], matchers: tuple[promql.Matcher, ...]
) -> tuple[tuple[promql.Matcher, ...], ...]:
    """The matchers of every family of the spec's ``selectors:`` (by family name; two
    families with the same matchers once), each with the alert's own ``matchers``."""
    out: dict[tuple[str, ...], tuple[promql.Matcher, ...]] = {}
    for family in sorted(selectors):
        both = selectors[family] + matchers
        out.setdefault(tuple(m.render() for m in both), both)
    return tuple(out.values())


def _sel_each(every: tuple[tuple[promql.Matcher, ...], ...]) -> Any:
    """``sel_each(*fixed)``: one selector text per family of the spec's ``selectors:`` (a
    signal that reads every exporter, such as ``up``); none is an error naming the field,
    since reading every job Prometheus scrapes would page this service for all others."""

    def sel_each(*fixed: str) -> list[str]:
        if not every:
            raise TemplateFailure(
                "it reads every exporter family of the spec's selectors:, and the spec has "
                "none; add selectors: (e.g. node: 'job=\"node\"', vllm: 'job=\"vllm\"')"
            )
        return [_sel(family)(*fixed) for family in every]

    return sel_each


def _threshold(col: Collector, path: PathKey, raw: object, signal: SignalDef) -> Decimal | None:
    unit = signal.threshold.unit
    try:
        if unit == "duration":
            if not isinstance(raw, str):
                raise units.UnitError(f"expected a duration like 5ms or 2s, got {raw!r}")
            value = units.parse_latency(raw)
        elif unit == "percent":
            value = units.parse_percent(raw)
        elif unit == "bandwidth":
            value = units.parse_bandwidth(raw)
        else:
            value = units.parse_number(raw)
    except units.UnitError as exc:
        col.error(path, str(exc))
        return None
    bounds = signal.threshold
    shown = units.format_human
    largest = MAX_DURATION_THRESHOLD if unit == "duration" else MAX_THRESHOLD
    if abs(value) > largest:
        col.error(path, f"must be at most {shown(largest, unit)} (got {raw})")
        return None
    if bounds.min is not None and value < bounds.min:
        col.error(path, f"must be at least {shown(bounds.min, unit)} (got {raw})")
        return None
    if _beyond_max(col, path, raw, value, signal):
        return None
    if bounds.op == "<" and value <= 0:
        col.error(path, f"must be above 0 (got {raw}); a '<' alert at 0 can never fire")
        return None
    return value


def _window(ctx: _AlertContext, raw: object, signal: SignalDef) -> tuple[str | None, Decimal]:
    col, path = ctx.col, (*ctx.path, "window")
    if signal.defaults.window is None:
        if raw is not None:
            col.error(path, f"signal {signal.signal} reads a gauge and takes no window")
        return None, Decimal(0)
    text = raw if raw is not None else signal.defaults.window
    where = path if raw is not None else ctx.path
    seconds = duration(col, where, text, positive=True, most=MAX_WINDOW)
    if seconds is None:
        return None, Decimal(0)
    if seconds != seconds.to_integral_value():
        col.error(where, "must be a whole number of seconds")
    elif seconds < 2 * ctx.scrape:
        col.error(
            where,
            f"window {units.format_duration(seconds)} holds fewer than two scrapes at "
            f"scrape_interval {units.format_duration(ctx.scrape)}: the alert could never fire",
        )
    return units.format_duration(seconds), seconds


def _params(col: Collector, path: PathKey, alert: Any, signal: SignalDef) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, definition in sorted(signal.params.items()):
        raw = getattr(alert, key)
        given = raw is not None
        value = raw if given else definition.default
        where = (*path, key) if given else path
        if value is None:
            out[key] = None
            continue
        try:
            out[key] = _param_value(definition.type, value)
        except (units.UnitError, ValueError) as exc:
            col.error(where, f"{key}: {exc}" if not given else str(exc))
            continue
        number = out[key]
        if isinstance(number, Decimal) and abs(number) > MAX_THRESHOLD:
            col.error(where, f"must be at most {units.literal(MAX_THRESHOLD)} (got {raw})")
        elif isinstance(number, Decimal):
            if definition.min is not None and number <= definition.min:
                col.error(where, f"must be above {units.literal(definition.min)} (got {raw})")
            if definition.max is not None and number >= definition.max:
                col.error(where, f"must be below {units.literal(definition.max)} (got {raw})")
    return out


def _param_value(kind: str, value: Any) -> Any:
    if kind == "metric":
        if not isinstance(value, str) or not promql.METRIC_NAME.match(value):
            raise ValueError(f"invalid metric name {value!r}")
        return value
    if kind == "regex":
        if not isinstance(value, str):
            raise ValueError(f"expected a regex string, got {value!r}")
        try:
            re.compile(promql.python_regex(value))
        except re.error as exc:
            raise ValueError(f"invalid regex {value!r}: {exc}") from None
        return value
    if kind == "buckets":
        if not isinstance(value, list):
            raise ValueError("must be a list of bucket bounds (numbers)")
        bounds = [units.parse_number(v) for v in value]
        if not bounds or any(b <= a for a, b in zip(bounds, bounds[1:], strict=False)):
            raise ValueError("must be a non-empty, strictly increasing list of numbers")
        return tuple(bounds)
    if kind == "duration":
        return units.parse_duration(str(value))
    parser = {
        "number": units.parse_number,
        "percent": units.parse_percent,
        "bandwidth": units.parse_bandwidth,
    }[kind]
    return parser(value)


def _check_every_release(
    col: Collector,
    path: PathKey,
    signal: SignalDef,
    params: Mapping[str, Any],
    threshold: Decimal,
    vllm: VllmVersion | None,
    given: frozenset[str],
) -> None:
    """The threshold against the buckets of the declared vLLM release, or of every release
    when none is declared (the narrowest range wins; the message names the releases whose
    bound it is when they are not all alike); else against the ``buckets`` param."""
    releases = bucket_checks(signal.signal, vllm, given)
    if not releases:
        _check_buckets(col, path, params["buckets"], threshold, "")
        return
    largest = min(bounds[-1] for _, bounds in releases)
    smallest = max(bounds[0] for _, bounds in releases)
    edge = [largest, smallest][threshold < smallest]
    at = -1 if threshold >= largest else 0
    having = [where for where, bounds in releases if bounds[at] == edge]
    where = "" if len(having) == len(releases) else ", ".join(having)
    if where and vllm is None:  # every release may be scraped: say how to leave some out
        where += "; declare vllm: {version: …} if none is scraped"
    _check_buckets(col, path, (smallest, largest), threshold, where)


def _check_buckets(
    col: Collector, path: PathKey, bounds: tuple[Decimal, ...], threshold: Decimal, where: str
) -> bool:
    """Whether ``threshold`` lies inside the histogram's bucket bounds (``where``: the vLLM
    releases they are from, when they depend on the release); an error at the threshold if not."""
    of = f" ({where})" if where else ""
    if threshold >= bounds[-1]:
        col.error(
            (*path, "threshold"),
            f"must be below the largest bucket bound {units.literal(bounds[-1])}s{of}: "
            "histogram_quantile never returns more, so the alert could never fire",
        )
        return False
    if threshold < bounds[0]:
        col.error(
            (*path, "threshold"),
            f"must be at least the smallest bucket bound {units.literal(bounds[0])}s{of}",
        )
        return False
    return True
