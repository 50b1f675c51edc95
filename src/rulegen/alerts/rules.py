"""Resolved threshold alerts → rule groups: one group per signal family, recordings before alerts.

Why: Prometheus evaluates groups concurrently and the rules of a group one after another, so
a group per family keeps a recording and the alert that reads it in evaluation order, while
families run side by side; a cap on rules per group (``max_group_rules``) splits a large family
without ever separating a recording from an alert that reads it.
"""

from __future__ import annotations

import re
from dataclasses import replace
from decimal import Decimal

from rulegen import promql
from rulegen.alerts.model import ResolvedAlert
from rulegen.generated import (
    AlertRule,
    Comparison,
    Condition,
    HostFromInstance,
    Recorded,
    RecordingRule,
    RuleGroup,
)

# A recording and every alert that reads it, or a lone alert: never split across groups.
_Unit = tuple[list[RecordingRule], list[AlertRule]]


def build_groups(
    service: str,
    alerts: tuple[ResolvedAlert, ...],
    evaluation: Decimal,
    family_order: tuple[str, ...],
    max_group_rules: int | None = None,
) -> tuple[RuleGroup, ...]:
    """Group a service's alert rules by signal family: recordings first, then the alerts that
    read them; a family past ``max_group_rules`` rules is split."""
    by_family: dict[str, list[ResolvedAlert]] = {}
    for alert in alerts:
        by_family.setdefault(alert.signal.family if alert.signal else "custom", []).append(alert)
    order = [f for f in (*family_order, "custom") if f in by_family]
    records = record_names(alerts)
    groups: list[RuleGroup] = []
    for family in order:
        family_units: dict[str, _Unit] = {}
        for alert in by_family[family]:
            key, recording, rule = _rules_of(service, alert, records)
            _unit_of(family_units, key, recording)[1].append(rule)
        name = f"{service}-{family}"
        for index, chunk in enumerate(_pack(list(family_units.values()), max_group_rules)):
            suffix = f"-{index + 1}" if index else ""
            recordings = [r for unit in chunk for r in unit[0]]
            rules = [a for unit in chunk for a in unit[1]]
            groups.append(RuleGroup(name + suffix, evaluation, (*recordings, *rules)))
    return tuple(groups)


def _rules_of(
    service: str, alert: ResolvedAlert, records: dict[str, str]
) -> tuple[str, RecordingRule | None, AlertRule]:
    """The alert's rule, the recording it reads (if any), and the key of their unit."""
    condition: Condition = alert.condition
    key = f"alert:{alert.name}"
    recording = None
    if alert.record is not None:
        # The service label keeps two services' recordings (and a mixin's recording of
        # the same name) apart; the alert reads only its own.
        name = records[alert.name]
        own = (("service", service),)
        recording = RecordingRule(name, alert.quantity, own, alert.origin)
        assert isinstance(condition, Comparison)  # a catalog alert's (only those record)
        selector = Recorded(name, (promql.Matcher("service", "=", service),))
        condition = replace(condition, quantity=selector)
        key = f"record:{name}"
    if alert.host is not None and alert.host.derived:
        condition = HostFromInstance(condition)
    rule = AlertRule(
        alert.name, condition, alert.for_seconds, alert.labels, alert.annotations, alert.origin
    )
    return key, recording, rule


def _unit_of(units: dict[str, _Unit], key: str, recording: RecordingRule | None) -> _Unit:
    """The unit (a recording and every alert that reads it, or a lone alert) for ``key``."""
    if key not in units:
        units[key] = ([recording] if recording is not None else [], [])
    return units[key]


def _pack(units: list[_Unit], cap: int | None) -> list[list[_Unit]]:
    """Units in order, into chunks of at most ``cap`` rules (a larger unit stays whole)."""
    if cap is None:
        return [units]
    chunks: list[list[_Unit]] = [[]]
    size = 0
    for unit in units:
        count = len(unit[0]) + len(unit[1])
        if chunks[-1] and size + count > cap:
            chunks.append([])
            size = 0
        chunks[-1].append(unit)
        size += count
    return chunks


def record_names(alerts: tuple[ResolvedAlert, ...]) -> dict[str, str]:
    """A recording name per alert: shared when the expression is the same, suffixed when not."""
    expr_of: dict[str, str] = {}
    names: dict[str, str] = {}
    for alert in alerts:
        if alert.record is None:
            continue
        name = alert.record
        if expr_of.setdefault(name, alert.quantity) != alert.quantity:
            snake = re.sub(r"(?<!^)(?=[A-Z])", "_", alert.name).lower()
            name = f"{alert.record}_{snake}"
            count = 1
            while expr_of.setdefault(name, alert.quantity) != alert.quantity:
                count += 1
                name = f"{alert.record}_{snake}_{count}"
        names[alert.name] = name
    return names
