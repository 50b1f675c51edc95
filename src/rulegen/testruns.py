"""Generated test cases that cannot see each other's series, merged into one promtool test.

Why: promtool evaluates every rule of a test file at every evaluation step of every test
case, so twenty-four cases of a few minutes each cost twenty-four times the rule file's
evaluation over those minutes, while the same cases side by side in one test cost it once
(over the longest of them). Two cases may share a run only when neither's input series can
reach a rule the other checks: their input metrics are disjoint, and no input metric of one
is read, through any chain of recordings or ``ALERTS``, by an alert or expression the other
checks. Then every check sees exactly what it saw alone, so a merged run proves what the
cases proved (and a mutant that fires an alert on another case's series fails it too).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rulegen.core import promql
from rulegen.generated import (
    AlertRule,
    And,
    AnyOf,
    Comparison,
    Condition,
    Divided,
    HostFromInstance,
    Quantity,
    Recorded,
    RuleGroup,
    TestCase,
    VersusBaseline,
)

# ``name{…}`` or ``name``: the metric an input series feeds (anything else: unknown)
_SERIES_NAME = re.compile(r"\s*([A-Za-z_:][A-Za-z0-9_:]*)\s*(?:\{|$)")


@dataclass(frozen=True)
class _Member:
    case: TestCase
    feeds: frozenset[str]
    reads: frozenset[str]


def shared_runs(cases: Sequence[TestCase], groups: Sequence[RuleGroup]) -> tuple[TestCase, ...]:
    """``cases`` packed into as few promtool tests as their inputs allow, in order: each case
    joins the first run it cannot interfere with (same input interval), else starts one."""
    reads_of = _rule_reads(groups)
    runs: list[list[_Member]] = []
    for case in cases:
        member = _Member(case, _feeds(case), _closure(_case_reads(case), reads_of))
        run = next((r for r in runs if _fits(member, r)), None)
        if run is None:
            runs.append([member])
        else:
            run.append(member)
    return tuple(_merged([m.case for m in run]) for run in runs)


def _fits(member: _Member, run: list[_Member]) -> bool:
    if member.case.interval_seconds != run[0].case.interval_seconds:
        return False
    if promql.ANY_SERIES in member.feeds or promql.ANY_SERIES in member.reads:
        return False
    for other in run:
        if promql.ANY_SERIES in other.feeds or promql.ANY_SERIES in other.reads:
            return False
        if member.feeds & (other.feeds | other.reads) or other.feeds & member.reads:
            return False
    return True


def _merged(cases: list[TestCase]) -> TestCase:
    if len(cases) == 1:
        return cases[0]
    return TestCase(
        " | ".join(c.name for c in cases),
        cases[0].interval_seconds,
        tuple(s for c in cases for s in c.series),
        tuple(check for c in cases for check in c.alert_checks),
        tuple(check for c in cases for check in c.expr_checks),
        max(c.evaluations for c in cases),
    )


def _feeds(case: TestCase) -> frozenset[str]:
    names = set()
    for series in case.series:
        match = _SERIES_NAME.match(series.series)
        names.add(match.group(1) if match else promql.ANY_SERIES)
    return frozenset(names)


def _case_reads(case: TestCase) -> set[str]:
    reads = {f"ALERTS{{{check.alertname}}}" for check in case.alert_checks}
    for check in case.expr_checks:
        reads |= promql.metrics_read(check.expr)
    return reads


def _closure(start: set[str], reads_of: dict[str, frozenset[str]]) -> frozenset[str]:
    """Everything the names in ``start`` read, through recordings and alerts."""
    seen: set[str] = set()
    todo = list(start)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name == "ALERTS":  # the series of any alert: anything may reach them
            seen.add(promql.ANY_SERIES)
        todo.extend(reads_of.get(name, ()))
    return frozenset(seen)


def _rule_reads(groups: Sequence[RuleGroup]) -> dict[str, frozenset[str]]:
    """What each recording (by its name) and each alert (as ``ALERTS{name}``) reads; rules of
    one name read the union of what each reads."""
    reads: dict[str, set[str]] = {}
    for group in groups:
        for rule in group.rules:
            if isinstance(rule, AlertRule):
                key, found = f"ALERTS{{{rule.alert}}}", _condition_reads(rule.condition)
            else:
                key, found = rule.record, promql.metrics_read(rule.expr)
            reads.setdefault(key, set()).update(found)
    return {k: frozenset(v) for k, v in reads.items()}


def _condition_reads(condition: Condition) -> frozenset[str]:
    if isinstance(condition, Comparison):
        return _quantity_reads(condition.quantity)
    if isinstance(condition, And):
        return _condition_reads(condition.left) | _condition_reads(condition.right)
    if isinstance(condition, AnyOf):
        return _union(_condition_reads(c) for c in condition.conditions)
    if isinstance(condition, HostFromInstance):
        return _condition_reads(condition.condition)
    return promql.metrics_read(condition.promql)


def _quantity_reads(quantity: Quantity) -> frozenset[str]:
    if isinstance(quantity, Recorded):
        return frozenset({quantity.record})
    if isinstance(quantity, Divided):
        return frozenset({quantity.dividend.record})
    if isinstance(quantity, VersusBaseline):
        return frozenset({quantity.current.record})
    return promql.metrics_read(quantity.promql)


def _union(sets: Iterable[frozenset[str]]) -> frozenset[str]:
    out: frozenset[str] = frozenset()
    for item in sets:
        out |= item
    return out
