"""Model rule groups → the Prometheus rule-file structure (``groups:``)."""

from __future__ import annotations

from typing import Any

from rulegen.generated import AlertRule, RuleGroup


def rule_file(groups: tuple[RuleGroup, ...]) -> dict[str, Any]:
    """The data of one Prometheus rule file, keys in Prometheus' documented order."""
    return {"groups": [_group(g) for g in groups]}


def _group(group: RuleGroup) -> dict[str, Any]:
    rules: list[dict[str, Any]] = []
    for rule in group.rules:
        if isinstance(rule, AlertRule):
            data: dict[str, Any] = {"alert": rule.alert, "expr": rule.expr}
            if rule.for_:
                data["for"] = rule.for_
            data["labels"] = dict(rule.labels)
            data["annotations"] = dict(rule.annotations)
        else:
            data = {"record": rule.record, "expr": rule.expr}
            if rule.labels:
                data["labels"] = dict(rule.labels)
        rules.append(data)
    return {"name": group.name, "interval": group.interval, "rules": rules}
