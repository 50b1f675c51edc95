"""Model rule groups → the Prometheus rule-file structure (``groups:``).

Why here: this is the one place an alert's typed condition becomes PromQL text and its exact
seconds become Prometheus durations; the Operator, Thanos and Mimir targets, the dashboard's
descriptions and the backtest all call these functions, so every output writes one condition
the same way.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from rulegen import units
from rulegen.generated import (
    AlertRule,
    And,
    AnyOf,
    Comparison,
    Condition,
    Divided,
    Expression,
    HostFromInstance,
    Quantity,
    Recorded,
    RecordingRule,
    RuleGroup,
    Threshold,
    Verbatim,
    VersusBaseline,
)
from rulegen.host import HOST_FROM_INSTANCE


def rule_file(groups: tuple[RuleGroup, ...]) -> dict[str, Any]:
    """The data of one Prometheus rule file, keys in Prometheus' documented order."""
    return {"groups": [_group(g) for g in groups]}


def _group(group: RuleGroup) -> dict[str, Any]:
    rules: list[dict[str, Any]] = []
    for rule in group.rules:
        if isinstance(rule, AlertRule):
            data: dict[str, Any] = {"alert": rule.alert, "expr": condition_promql(rule.condition)}
            if rule.for_seconds:
                data["for"] = units.format_duration(rule.for_seconds)
            if rule.keep_firing_for_seconds:
                data["keep_firing_for"] = units.format_duration(rule.keep_firing_for_seconds)
            data["labels"] = dict(rule.labels)
            data["annotations"] = dict(rule.annotations)
        else:
            data = {"record": rule.record, "expr": rule.expr}
            if rule.labels:
                data["labels"] = dict(rule.labels)
        rules.append(data)
    out: dict[str, Any] = {
        "name": group.name,
        "interval": units.format_duration(group.interval_seconds),
    }
    if group.query_offset_seconds:
        out["query_offset"] = units.format_duration(group.query_offset_seconds)
    if group.labels:
        out["labels"] = dict(group.labels)
    out["rules"] = rules
    return out


def rule_expr(rule: RecordingRule | AlertRule) -> str:
    """The PromQL a rule evaluates, exactly as the rule file holds it."""
    return condition_promql(rule.condition) if isinstance(rule, AlertRule) else rule.expr


def condition_promql(condition: Condition) -> str:
    """An alert condition as PromQL: one comparison per line for compound conditions, each
    tier of an SLO alert indented in its own parentheses."""
    if isinstance(condition, Comparison):
        operand = _operand(condition.quantity)
        return f"{operand} {condition.op} {threshold_promql(condition.threshold)}"
    if isinstance(condition, And):
        on = "" if condition.on is None else f" on ({', '.join(condition.on)})"
        left = _and_operand(condition.left, right=False)
        return f"{left}\nand{on}\n{_and_operand(condition.right, right=True)}"
    if isinstance(condition, AnyOf):
        return "\nor\n".join(_block(c) for c in condition.conditions)
    if isinstance(condition, HostFromInstance):
        return f"label_replace({condition_promql(condition.condition)}, {HOST_FROM_INSTANCE})"
    return condition.promql


def quantity_promql(quantity: Quantity) -> str:
    """A quantity as PromQL on its own (what a backtest plots against the threshold)."""
    if isinstance(quantity, Recorded):
        if not quantity.matchers:
            return quantity.record
        return f"{quantity.record}{{{', '.join(m.render() for m in quantity.matchers)}}}"
    if isinstance(quantity, Divided):
        return f"{quantity_promql(quantity.dividend)} / {units.literal(quantity.divisor)}"
    if isinstance(quantity, VersusBaseline):
        current = quantity_promql(quantity.current)
        baseline = units.format_duration(quantity.baseline_seconds)
        offset = units.format_duration(quantity.offset_seconds)
        mean = f"avg_over_time({current}[{baseline}] offset {offset})"
        return f"(\n  {current}\n  / ({mean} > 0)\n)"
    return quantity.promql


def threshold_promql(threshold: Threshold) -> str:
    """The shortest exact PromQL number: ``0.005``, ``1e-06``, or ``(720 / 7)`` for a fraction
    with no finite decimal."""
    value = threshold.value
    if isinstance(value, Decimal):
        return units.literal(value)
    return units.fraction_literal(value)


def _operand(quantity: Quantity) -> str:
    """The quantity as the left side of a comparison: a catalog signal's expression in
    parentheses unless it is one token (``a or b > 1`` would compare ``b`` alone); the other
    kinds bind tighter than a comparison as written."""
    text = quantity_promql(quantity)
    if isinstance(quantity, Expression) and (" " in text or "\n" in text):
        return f"({text})"
    return text


def _and_operand(condition: Condition, *, right: bool) -> str:
    """An operand of ``and``: ``or`` and verbatim expressions bind looser and are grouped, as
    is a nested ``and`` on the right (``and`` groups to the left)."""
    if isinstance(condition, AnyOf):
        return _block(condition)
    if isinstance(condition, Verbatim) or (right and isinstance(condition, And)):
        return f"({condition_promql(condition)})"
    return condition_promql(condition)


def _block(condition: Condition) -> str:
    """``(`` and ``)`` on lines of their own around the condition, indented two spaces."""
    inner = "\n".join("  " + line for line in condition_promql(condition).splitlines())
    return f"(\n{inner}\n)"
