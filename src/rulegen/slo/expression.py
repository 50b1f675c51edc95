"""Expression SLIs (``events``, ``raw``): PromQL queries with a ``{{.window}}`` placeholder.

Why: the SLIs teams write in Sloth are often not "a counter over a counter": events counted
from a gauge through a subquery, a raw error ratio of ``sum_over_time`` over
``count_over_time``. rulegen renders such a query once per window the rules need (the SLO
window, each tier's windows) instead of adding it up in the exact cascade, whose sums only
hold for counters. A query that is a plain ``sum [by (…)] (rate|increase(SELECTOR[{{.window}}]))``
is turned back into a ratio SLI, so it keeps the cheap exact cascade (docs/slos.md).
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any

import promql_parser

from rulegen.core import promql
from rulegen.core.versions import PrometheusVersion
from rulegen.slo.model import (
    WINDOW,
    EventsSLI,
    GoodRatioSLI,
    Query,
    RatioSLI,
    RawSLI,
    Selector,
    TestSeries,
)
from rulegen.source.fields import Collector
from rulegen.source.loader import PathKey

PLACEHOLDER = re.compile(r"\{\{\s*\.window\s*\}\}")
SAMPLE_WINDOW = "5m"  # the window a query is checked with
_COUNTER_STEP = re.compile(r"^\+\s*([0-9.eE+-]+)$")


def resolve_events(
    col: Collector, path: PathKey, spec: Any, version: PrometheusVersion
) -> EventsSLI | RatioSLI | GoodRatioSLI | None:
    """``errors`` (or ``good``) and ``total`` queries; a plain pair becomes a ratio SLI."""
    if (spec.errors is None) == (spec.good is None):
        found = "both" if spec.errors is not None else "neither"
        col.error(path, f"needs exactly one of errors and good beside total (got {found})")
        return None
    key = "errors" if spec.errors is not None else "good"
    part = _query(col, (*path, key), getattr(spec, key))
    total = _query(col, (*path, "total"), spec.total)
    test = _test(col, (*path, "test"), spec.test)
    if part is None or total is None or (spec.test is not None and test is None):
        return None
    plain = _plain_ratio(part, total, key == "good", version)
    if plain is not None:
        return plain
    return EventsSLI(part, total, key == "good", test)


def resolve_raw(col: Collector, path: PathKey, spec: Any) -> RawSLI | None:
    """The ``error_ratio`` query."""
    ratio = _query(col, (*path, "error_ratio"), spec.error_ratio)
    test = _test(col, (*path, "test"), spec.test)
    if ratio is None or (spec.test is not None and test is None):
        return None
    return RawSLI(ratio, test)


def _query(col: Collector, path: PathKey, text: str) -> Query | None:
    """A query that parses, returns an instant vector, and takes its window."""
    if not PLACEHOLDER.search(text):
        col.error(path, "must contain {{.window}} where the window goes (Sloth's placeholder), "
                  "e.g. sum(rate(x[{{.window}}]))")  # fmt: skip
        return None
    query = Query(PLACEHOLDER.sub(WINDOW, text))
    sample = query.at(SAMPLE_WINDOW)
    problem = promql.syntax_error(sample)
    if problem is not None:
        col.error(path, f"invalid PromQL (with the window {SAMPLE_WINDOW}): {problem}")
        return None
    kind = promql.result_type(sample)
    if kind != "vector":
        col.error(path, f"must return an instant vector (got a {kind})")
        return None
    return query


def _plain_ratio(
    part: Query, total: Query, good: bool, version: PrometheusVersion
) -> RatioSLI | GoodRatioSLI | None:
    """``sum(rate(A[{{.window}}]))`` over ``sum(rate(B[{{.window}}]))`` (no ``by``, or the same
    ``by`` on both, which the SLO's ``group_by`` keeps anyway): the counters themselves."""
    first, second = _plain_counter(part), _plain_counter(total)
    if first is None or second is None or first[1] != second[1]:
        return None
    if promql.utf8_refusal(first[0].metric, first[0].matchers, version) or promql.utf8_refusal(
        second[0].metric, second[0].matchers, version
    ):
        return None
    return GoodRatioSLI(first[0], second[0]) if good else RatioSLI(first[0], second[0])


def _plain_counter(query: Query) -> tuple[Selector, tuple[str, ...]] | None:
    """``sum [by (…)] (rate|increase(SELECTOR[{{.window}}]))``: the selector and ``by``."""
    try:
        node = promql_parser.parse(query.at(SAMPLE_WINDOW))
    except (ValueError, RuntimeError):  # pragma: no cover - checked by _query
        return None
    if not isinstance(node, promql_parser.AggregateExpr) or str(node.op) != "sum":
        return None
    by: tuple[str, ...] = ()
    if node.modifier is not None:
        if "By" not in str(node.modifier.type):
            return None
        by = tuple(sorted(node.modifier.labels))
    call = node.expr
    if not isinstance(call, promql_parser.Call) or call.func.name not in ("rate", "increase"):
        return None
    ranged = call.args[0]
    if not isinstance(ranged, promql_parser.MatrixSelector):
        return None
    if query.text.count(WINDOW) != 1 or f"[{WINDOW}]" not in query.text.replace(" ", ""):
        return None
    vector = ranged.vector_selector
    if vector.offset is not None or vector.at is not None:
        return None
    try:
        metric, matchers = promql.parse_selector(str(vector))
    except ValueError:
        return None
    return Selector(metric, matchers), by


def _test(col: Collector, path: PathKey, spec: Any) -> TestSeries | None:
    """The test series: valid series keys, numbers or ``+N`` counter steps."""
    if spec is None:
        return None
    before = len(col.diagnostics)
    counters: set[str] = set()
    phases: dict[str, tuple[tuple[str, Decimal], ...]] = {}
    for phase in ("good", "bad"):
        values: list[tuple[str, Decimal]] = []
        for key, raw in getattr(spec, phase).items():
            where = (*path, phase, key)
            try:
                metric, matchers = promql.parse_selector(key)
            except ValueError as exc:
                col.error(where, f'must be a series like name{{a="b"}}: {exc}')
                continue
            if any(m.op != "=" for m in matchers):
                col.error(where, "a test series has label values (=), not matchers")
                continue
            value = _value(col, where, raw)
            if value is None:
                continue
            if value[1]:
                counters.add(promql.series_text(metric, {m.name: m.value for m in matchers}))
            values.append((promql.series_text(metric, {m.name: m.value for m in matchers}),
                           value[0]))  # fmt: skip
        if not getattr(spec, phase):
            col.error((*path, phase), "needs at least one series")
        phases[phase] = tuple(sorted(values))
    if len(col.diagnostics) > before:
        return None
    return TestSeries(phases["good"], phases["bad"], frozenset(counters))


def _value(col: Collector, path: PathKey, raw: object) -> tuple[Decimal, bool] | None:
    """A gauge's number, or ``+N`` (a counter growing by N each scrape)."""
    text = str(raw).strip()
    step = _COUNTER_STEP.match(text)
    try:
        value = Decimal(step.group(1) if step else text)
    except InvalidOperation:
        value = Decimal("NaN")
    if isinstance(raw, bool) or not value.is_finite() or (step is not None and value < 0):
        col.error(path, f"must be a number, or +N for a counter growing by N a scrape "
                  f"(got {raw!r})")  # fmt: skip
        return None
    return value, step is not None
