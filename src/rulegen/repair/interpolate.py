"""The base window over a raw scrape gap: counters interpolated linearly across it.

Why: when Prometheus itself was down, the raw series have no sample in the hole either, and
``increase(x[5m])`` has nothing to read there (fewer than two samples), or reads one side of
the gap only at its edges. The counters kept counting, though: the first sample after the gap
holds every event of it. Each base term that touches the gap is therefore rewritten, per
evaluation instant, as the real increase over the part of its window outside the gap plus the
gap's increase (first sample after minus last before: ``increase(x[b - a] @ b)``, exact) in
proportion to the part inside, so the terms of any window that spans the gap add up to its
events exactly, spread evenly across it.

The Prometheus 3 base form (``rulegen.slo.rules``) has no ``increase()``: it adds up steps
``x offset i - x offset i+1``, each what the counter added over one slice of the window. A
step that touches the gap is rewritten the same way, with differences of instant reads
(``x @ b - x @ a``) for the increases, as the step itself reads the counter: nothing to
extrapolate, and a range selector would drop the sample at ``a`` (left-open since 3.0).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeGuard

import promql_parser

from rulegen.backtest.syntax import Node, duration_ms, parse, selector_text, to_text
from rulegen.generated import RecordingRule
from rulegen.promapi.client import PrometheusAPI
from rulegen.repair.model import Hole, RawGap, SLOGroup
from rulegen.repair.plan import LOOKBACK_MS, grid, seconds


@dataclass(frozen=True)
class _Step:
    """A step of the Prometheus 3 base form, ``x offset n - x offset o >= 0 or x offset n <
    x offset o``: what counter ``selector`` added over ``(t - older_ms, t - newer_ms]``."""

    selector: str
    newer_ms: int
    older_ms: int


def _step(node: Node) -> _Step | None:
    """``node`` as a step, or ``None`` when it is something else."""
    if not (isinstance(node, promql_parser.BinaryExpr) and str(node.op) == "or"):
        return None
    test, reset = node.lhs, node.rhs
    if not (_is_binary(test, ">=") and _is_binary(reset, "<")):
        return None
    difference = test.lhs
    if not (_is_binary(difference, "-") and _is_zero(test.rhs)):
        return None
    now, before = difference.lhs, difference.rhs
    if not (
        isinstance(now, promql_parser.VectorSelector)
        and isinstance(before, promql_parser.VectorSelector)
    ):
        return None
    selector = selector_text(now, with_offset=False)
    newer, older = duration_ms(now.offset), duration_ms(before.offset)
    same = selector == selector_text(before, with_offset=False)
    if not same or older <= newer or to_text(reset) != to_text(_compare(now, before)):
        return None
    return _Step(selector, newer, older)


def _is_binary(node: Node, op: str) -> TypeGuard[promql_parser.BinaryExpr]:
    return (
        isinstance(node, promql_parser.BinaryExpr) and str(node.op) == op and node.modifier is None
    )


def _is_zero(node: Node) -> bool:
    return isinstance(node, promql_parser.NumberLiteral) and node.val == 0


def _compare(now: Node, before: Node) -> Node:
    return parse(f"{selector_text(now)} < {selector_text(before)}")


def _raw_reads(node: Node, window_ms: int) -> list[Node]:
    """The base window's raw reads in a tree: its ``increase(x[window])`` calls (Prometheus
    2 form) and its steps (Prometheus 3 form)."""
    found = []
    stack = [node]
    while stack:
        current = stack.pop()
        if _is_raw_increase(current, window_ms) or _step(current) is not None:
            found.append(current)
            continue
        for name in ("expr", "lhs", "rhs", "param", "args"):
            child = getattr(current, name, None)
            if isinstance(child, list):
                stack.extend(child)
            elif child is not None and not isinstance(child, str | int | float):
                stack.append(child)
    return found


def _is_raw_increase(node: Node, window_ms: int) -> bool:
    if not isinstance(node, promql_parser.Call) or node.func.name != "increase":
        return False
    matrix = node.args[0]
    return (
        isinstance(matrix, promql_parser.MatrixSelector)
        and duration_ms(matrix.range) == window_ms
        and matrix.vector_selector.offset is None
    )


def reads_raw(rule: RecordingRule, group: SLOGroup) -> bool:
    """Whether ``rule`` is one of the base window's, which read raw counters."""
    return bool(_raw_reads(parse(rule.expr), group.base_ms))


def _counters(rule: RecordingRule, window_ms: int) -> list[str]:
    """The raw counters (selectors) the base window's reads of ``rule`` read."""
    out = []
    for node in _raw_reads(parse(rule.expr), window_ms):
        step = _step(node)
        text = step.selector if step else selector_text(node.args[0].vector_selector)
        if text not in out:
            out.append(text)
    return out


def find_gaps(client: PrometheusAPI, group: SLOGroup, holes: tuple[Hole, ...]) -> list[RawGap]:
    """The raw scrape gaps inside ``holes``: where the base total's own expression reads
    nothing, bounded by the raw samples on either side (of the total's series)."""
    rule = group.base_total
    selectors = _counters(rule, group.base_ms)
    step = group.interval_ms
    gaps = []
    for hole in holes:
        present: set[int] = set()
        for first, last in grid(hole.first_ms, hole.last_ms, step):
            for series in client.query_range(
                rule.expr, seconds(first), seconds(last), f"{step / 1000:g}"
            ):
                present.update(round(t * 1000) for t, _ in series.values)
        missing = [t for t in range(hole.first_ms, hole.last_ms + 1, step) if t not in present]
        if not missing:
            continue
        after = _last_before(client, selectors, missing[0], group.base_ms + step)
        before = _stamp(client, "min", selectors, missing[-1])
        if after is not None and before is not None and before > after:
            gaps.append(RawGap(after, before))
    return gaps


def _last_before(
    client: PrometheusAPI, selectors: list[str], at_ms: int, reach_ms: int
) -> int | None:
    """The latest raw sample's time up to ``at_ms``, over the series. The base window may
    read samples up to ``reach_ms`` (plus the lookback) before an evaluation, so the first
    evaluation that reads nothing can be well past the last sample (the Prometheus 3 form's
    oldest step reads one window back): read ``timestamp()`` at every evaluation in between."""
    start, step = at_ms - reach_ms - LOOKBACK_MS, min(LOOKBACK_MS, reach_ms) // 2
    found = [
        round(value * 1000)
        for selector in selectors
        for series in client.query_range(
            f"max(timestamp({selector}))", seconds(start), seconds(at_ms), f"{step / 1000:g}"
        )
        for _, value in series.values
    ]
    return max(found) if found else None


def _stamp(client: PrometheusAPI, how: str, selectors: list[str], at_ms: int) -> int | None:
    """The latest raw sample's time at ``at_ms`` (within the lookback), over the series."""
    found = [
        round(s.values[0][1] * 1000)
        for selector in selectors
        for s in client.query(f"{how}(timestamp({selector}))", at_ms / 1000)
    ]
    if not found:
        return None
    return max(found) if how == "max" else min(found)


def bridged(rule: RecordingRule, window_ms: int, gap: RawGap, at_ms: int) -> str | None:
    """``rule``'s expression at ``at_ms`` with each raw increase bridged across ``gap``;
    ``None`` when its window does not touch the gap (the rule's own value is exact)."""
    a, b, start = gap.after_ms, gap.before_ms, at_ms - window_ms
    if at_ms <= a or start >= b or (start <= a and at_ms >= b):
        return None  # no part of the window in the gap, or samples on both sides of it

    def replace(node: Node) -> str | None:
        if (step := _step(node)) is not None:
            return _bridged_step(step, gap, at_ms)
        if not _is_raw_increase(node, window_ms):
            return None
        selector = selector_text(node.args[0].vector_selector)
        whole = f"increase({selector}[{b - a}ms] @ {seconds(b)})"
        inside = (min(at_ms, b) - max(start, a)) / (b - a)
        part = f"({whole} * {inside!r})"
        if start < a:  # the real increase before the gap, when the window starts before it
            real = f"increase({selector}[{a - start}ms] @ {seconds(a)})"
            return f"(({real} + {part}) or {part})"
        if at_ms > b:  # and after it
            real = f"increase({selector}[{at_ms - b}ms] @ {seconds(at_ms)})"
            return f"(({real} + {part}) or {part})"
        return part

    return to_text(parse(rule.expr), replace)


def _bridged_step(step: _Step, gap: RawGap, at_ms: int) -> str | None:
    """A Prometheus 3 step over ``(u0, u1]`` bridged across ``gap`` ``(a, b)``: the real
    increase outside the gap plus the gap's in proportion to the part inside; ``None`` when
    the step does not overlap the gap or reads both its sides (then its value is exact)."""
    a, b = gap.after_ms, gap.before_ms
    u0, u1 = at_ms - step.older_ms, at_ms - step.newer_ms
    if u1 <= a or u0 >= b or (u0 <= a and u1 >= b):
        return None
    inside = (min(u1, b) - max(u0, a)) / (b - a)
    part = f"({_added(step.selector, a, b)} * {inside!r})"
    if u0 < a:
        return f"(({_added(step.selector, u0, a)} + {part}) or {part})"
    if u1 > b:
        return f"(({_added(step.selector, b, u1)} + {part}) or {part})"
    return part


def _added(selector: str, start_ms: int, end_ms: int) -> str:
    """What a counter added from ``start_ms`` to ``end_ms``, as a step reads it: the latest
    samples at both instants, the later one alone after a reset, nothing for a series new
    since ``start_ms``."""
    now, before = f"{selector} @ {seconds(end_ms)}", f"{selector} @ {seconds(start_ms)}"
    return f"({now} - {before} >= 0 or {now} < {before})"
