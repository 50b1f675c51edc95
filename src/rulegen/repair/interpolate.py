"""The base window over a raw scrape gap: counters interpolated linearly across it.

Why: when Prometheus itself was down, the raw series have no sample in the hole either, and
``increase(x[5m])`` has nothing to read there (fewer than two samples), or reads one side of
the gap only at its edges. The counters kept counting, though: the first sample after the gap
holds every event of it. Each base term that touches the gap is therefore rewritten, per
evaluation instant, as the real increase over the part of its window outside the gap plus the
gap's increase (first sample after minus last before: ``increase(x[b - a] @ b)``, exact) in
proportion to the part inside, so the terms of any window that spans the gap add up to its
events exactly, spread evenly across it.
"""

from __future__ import annotations

import promql_parser

from rulegen.backtest.syntax import Node, duration_ms, parse, selector_text, to_text
from rulegen.generated import RecordingRule
from rulegen.promapi.client import PrometheusAPI
from rulegen.repair.model import Hole, RawGap, SLOGroup
from rulegen.repair.plan import grid, seconds


def _raw_increases(node: Node, window_ms: int) -> list[Node]:
    """The ``increase(x[window])`` calls of a tree (the base window's raw reads)."""
    found = []
    stack = [node]
    while stack:
        current = stack.pop()
        if _is_raw_increase(current, window_ms):
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
    return bool(_raw_increases(parse(rule.expr), group.base_ms))


def find_gaps(client: PrometheusAPI, group: SLOGroup, holes: tuple[Hole, ...]) -> list[RawGap]:
    """The raw scrape gaps inside ``holes``: where the base total's own expression reads
    nothing, bounded by the raw samples on either side (of the total's series)."""
    rule = group.base_total
    selectors = [
        selector_text(n.args[0].vector_selector)
        for n in _raw_increases(parse(rule.expr), group.base_ms)
    ]
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
        after = _stamp(client, "max", selectors, missing[0])
        before = _stamp(client, "min", selectors, missing[-1])
        if after is not None and before is not None and before > after:
            gaps.append(RawGap(after, before))
    return gaps


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
