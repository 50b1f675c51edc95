"""Model rule groups → Thanos Ruler rule files, and the rules a partial response makes wrong.

Why: Thanos Ruler evaluates through the Querier, which with ``partial_response_strategy:
warn`` answers with whatever the stores that responded hold; ``partial_response_flags`` names
the rules whose result is then wrong rather than merely missing.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, NamedTuple

import promql_parser

from rulegen.core import promql
from rulegen.generated import AlertRule, RecordingRule, RuleGroup
from rulegen.render.operator import PARTIAL_RESPONSE_STRATEGIES, with_strategy
from rulegen.render.prometheus import rule_expr, rule_file

ABSENT = "absent(): a series held by a store that does not answer reads as absent"
UNLESS = (
    "unless: series of the right operand held by a store that does not answer are missing, "
    "so the left operand's series they should remove are kept"
)
OR_FALLBACK = (
    "or with a constant fallback: when the store of the left operand does not answer, "
    "the fallback value stands in for it"
)
AGGREGATION = (
    "{clause} drops instance, so a group can combine series held by different stores: "
    "with a store down it returns the aggregate of the stores that answered as if complete"
)
LOW_COMPARISON = " (compared with < or <=, a partial {op} reads low and fires)"
READS_FLAGGED = "reads recordings flagged here, computed from partial data: {records}"

_LOW_WHEN_PARTIAL = ("sum", "count", "group", "count_values")


class Flag(NamedTuple):
    """A rule Thanos Ruler can evaluate wrongly when a store does not answer (``warn``)."""

    group: str
    rule: str
    reason: str


def thanos_rule_file(
    groups: Sequence[RuleGroup],
    partial_response_strategy: str | Mapping[str, str] | None,
    store_labels: Collection[str] = ("instance",),
) -> tuple[dict[str, Any], list[Flag]]:
    """A Thanos Ruler rule file and the rules it evaluates wrongly on a partial response.

    ``partial_response_strategy`` is one strategy for every group, or one per group name
    (groups not named get none, i.e. Thanos' default, ``abort``). The key is written after
    ``interval``. Flags are returned only for rules of ``warn`` groups, and for rules of any
    group that read a recording flagged in a ``warn`` group: under ``abort`` a failed store
    fails the evaluation instead of producing a wrong result.
    """
    strategies = _strategies(groups, partial_response_strategy)
    data = rule_file(tuple(groups))
    data["groups"] = [
        with_strategy([_for_thanos(group)], strategies.get(group["name"]))[0]
        for group in data["groups"]
    ]
    warn = {name for name, strategy in strategies.items() if strategy == "warn"}
    offsets = [
        Flag(g.name, "query_offset", NO_QUERY_OFFSET) for g in groups if g.query_offset_seconds
    ]
    return data, [*offsets, *partial_response_flags(groups, warn, store_labels)]


NO_QUERY_OFFSET = "Thanos Ruler has no query_offset: the group is written without it"


def _for_thanos(group: dict[str, Any]) -> dict[str, Any]:
    """A group as Thanos Ruler evaluates it: no ``query_offset`` (it has none), and the
    group ``labels`` (which it ignores) written into each rule, the rule's own winning."""
    out = {k: v for k, v in group.items() if k not in ("query_offset", "labels")}
    labels = group.get("labels") or {}
    if labels:
        out["rules"] = [dict(r, labels={**labels, **(r.get("labels") or {})}) for r in out["rules"]]
    return out


def _strategies(
    groups: Sequence[RuleGroup], strategy: str | Mapping[str, str] | None
) -> dict[str, str]:
    if strategy is None:
        return {}
    if isinstance(strategy, str):
        chosen = dict.fromkeys((g.name for g in groups), strategy)
    else:
        unknown = sorted(set(strategy) - {g.name for g in groups})
        if unknown:
            raise ValueError(f"partial_response_strategy for unknown groups: {unknown}")
        chosen = dict(strategy)
    for name, value in chosen.items():
        if value not in PARTIAL_RESPONSE_STRATEGIES:
            raise ValueError(
                f"group {name}: partial_response_strategy must be warn or abort (got {value!r})"
            )
    return chosen


def partial_response_flags(
    groups: Sequence[RuleGroup],
    warn_groups: Collection[str] | None = None,
    store_labels: Collection[str] = ("instance",),
) -> list[Flag]:
    """The rules whose result is wrong (not merely missing) when a store does not answer.

    With ``partial_response_strategy: warn`` Thanos' Querier drops the series of a store that
    fails and answers with the rest. A rule that reads plain series per instance then loses
    exactly the series of that store (no result, as with a scrape failure); these rules
    instead turn the gap into a result, and are flagged with one reason each:

    - ``absent()`` / ``absent_over_time()``: the missing series read as absent: it fires.
    - ``a unless b``: ``b``'s missing series no longer remove ``a``'s: it fires.
    - ``a or <constant>`` (``vector(c)``, ``0 * x``): the constant stands in for ``a``.
    - an aggregation whose groups can combine series of several instances: ``by (...)``
      without any of ``store_labels``, ``without (...)`` naming one of them, or no clause.
      Series of one scrape target (``instance``) live in one Prometheus and so in one
      store; any wider group (``by (host)`` too: the targets of one host may be scraped by
      different Prometheus shards) can mix stores and silently covers only those that
      answered. Under a ``<``/``<=`` comparison (or the right side of ``>``/``>=``) a
      partial ``sum``/``count`` reads low, so the rule fires; otherwise it can miss or
      misreport. Pass ``store_labels=("instance", "cluster")`` when each store holds whole
      clusters. Assumption: raw series carry ``instance`` (every scraped series does).
    - reading a recording flagged by these rules (same name, and no equality matcher that
      contradicts the recording's static labels), transitively: the stored values are wrong.

    ``warn_groups`` limits the first four to the named groups (``None``: every group).
    Returns one flag per flagged rule (its reasons joined by ``; ``), in group and rule order.
    """
    labels = frozenset(store_labels)
    direct: dict[int, list[str]] = {}
    for group in groups:
        if warn_groups is None or group.name in warn_groups:
            for rule in group.rules:
                found: list[str] = []
                _visit(promql_parser.parse(rule_expr(rule)), False, labels, found)
                direct[id(rule)] = list(dict.fromkeys(found))
    reads = _propagate(groups, {key for key, reasons in direct.items() if reasons})
    flags: list[Flag] = []
    for group in groups:
        for rule in group.rules:
            reasons = direct.get(id(rule), [])
            if reads.get(id(rule)):
                reasons = [*reasons, READS_FLAGGED.format(records=", ".join(reads[id(rule)]))]
            if reasons:
                name = rule.record if isinstance(rule, RecordingRule) else rule.alert
                flags.append(Flag(group.name, name, "; ".join(reasons)))
    return flags


def _propagate(groups: Sequence[RuleGroup], flagged: set[int]) -> dict[int, list[str]]:
    """For each rule (by ``id``), the flagged recordings it reads, until nothing changes."""
    selectors = {id(rule): _selectors(rule_expr(rule)) for group in groups for rule in group.rules}
    rules = [rule for group in groups for rule in group.rules]
    reads: dict[int, list[str]] = {}
    changed = True
    while changed:
        recordings = [
            r
            for r in rules
            if isinstance(r, RecordingRule) and (id(r) in flagged or reads.get(id(r)))
        ]
        before = dict(reads)
        reads = {id(rule): _reads(rule, selectors[id(rule)], recordings) for rule in rules}
        changed = reads != before
    return reads


def _selectors(expr: str) -> list[Any]:
    """Every vector selector of ``expr`` (``walk`` visits those of range selectors too)."""
    found: list[Any] = []

    def collect(node: Any) -> None:
        if isinstance(node, promql_parser.VectorSelector):
            found.append(node)

    promql_parser.walk(promql_parser.parse(expr), collect)
    return found


def _reads(
    rule: RecordingRule | AlertRule, selectors: Sequence[Any], flagged: Sequence[RecordingRule]
) -> list[str]:
    """Names of the flagged recordings ``rule`` reads (sorted, without duplicates)."""
    out: set[str] = set()
    for selector in selectors:
        equal = {
            m.name: m.value for m in selector.matchers.matchers if str(m.op) == "MatchOp.Equal"
        }
        for record in flagged:
            if record is rule or selector.name != record.record:
                continue
            if all(equal.get(k, v) == v for k, v in record.labels):
                out.add(record.record)
    return sorted(out)


def _visit(node: Any, low: bool, store_labels: frozenset[str], found: list[str]) -> None:
    """Collect the partial-response reasons of ``node``; ``low``: a ``<`` compares it."""
    if isinstance(node, promql_parser.AggregateExpr):
        _visit_aggregation(node, low, store_labels, found)
        _visit(node.expr, low, store_labels, found)
        if isinstance(node.param, promql_parser.Expr):
            _visit(node.param, False, store_labels, found)
    elif isinstance(node, promql_parser.Call):
        if node.func.name in ("absent", "absent_over_time"):
            found.append(ABSENT)
        for arg in node.args:
            _visit(arg, low, store_labels, found)
    elif isinstance(node, promql_parser.BinaryExpr):
        op = str(node.op).lower()
        if op == "unless":
            found.append(UNLESS)
        if op == "or" and _constant(node.rhs):
            found.append(OR_FALLBACK)
        filtering = node.modifier is None or not node.modifier.return_bool
        _visit(node.lhs, low or (filtering and op in ("<", "<=")), store_labels, found)
        _visit(node.rhs, low or (filtering and op in (">", ">=")), store_labels, found)
    elif isinstance(
        node, promql_parser.ParenExpr | promql_parser.UnaryExpr | promql_parser.SubqueryExpr
    ):
        _visit(node.expr, low, store_labels, found)


def _visit_aggregation(
    node: Any, low: bool, store_labels: frozenset[str], found: list[str]
) -> None:
    op = str(node.op).lower()
    modifier = node.modifier
    if modifier is None:
        clause, spans = op, True
    elif modifier.type == promql_parser.AggModifierType.Without:
        clause = f"{op} without ({promql.label_list(modifier.labels)})"
        spans = bool(store_labels & set(modifier.labels))
    else:
        clause = f"{op} by ({promql.label_list(modifier.labels)})"
        spans = not store_labels & set(modifier.labels)
    if spans:
        reason = AGGREGATION.format(clause=clause)
        if low and op in _LOW_WHEN_PARTIAL:
            reason += LOW_COMPARISON.format(op=op)
        found.append(reason)


def _constant(node: Any) -> bool:
    """A vector that exists whatever the stores answer: ``vector(c)``, ``0 * x``."""
    while isinstance(node, promql_parser.ParenExpr):
        node = node.expr
    if isinstance(node, promql_parser.Call):
        return bool(node.func.name == "vector")
    if isinstance(node, promql_parser.BinaryExpr) and str(node.op) == "*":
        return any(
            isinstance(side, promql_parser.NumberLiteral) and side.val == 0
            for side in (node.lhs, node.rhs)
        )
    return False
