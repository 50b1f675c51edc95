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

from rulegen.alerts.model import NamedGroup, ResolvedAlert, ResolvedRecording
from rulegen.core import promql
from rulegen.generated import (
    AlertRule,
    Comparison,
    Condition,
    Expression,
    HostFromInstance,
    Recorded,
    RecordingRule,
    RuleGroup,
    Verbatim,
)

# A recording and every alert that reads it, or a lone alert: never split across groups.
_Unit = tuple[list[RecordingRule], list[AlertRule]]


def build_groups(
    service: str,
    alerts: tuple[ResolvedAlert, ...],
    evaluation: Decimal,
    family_order: tuple[str, ...],
    max_group_rules: int | None = None,
    recordings: tuple[ResolvedRecording, ...] = (),
    settings: tuple[NamedGroup, ...] = (),
) -> tuple[RuleGroup, ...]:
    """Group a service's alert rules by signal family: recordings first, then the alerts that
    read them; a family past ``max_group_rules`` rules is split. The user's own recordings
    join the custom alerts' group; rules that name a ``group`` go to that group (after the
    families), with the interval, ``query_offset`` and labels of ``settings`` (the spec's
    ``groups:``; else ``evaluation`` and none)."""
    named = [a for a in alerts if a.group is not None]
    alerts = tuple(a for a in alerts if a.group is None)
    by_family: dict[str, list[ResolvedAlert]] = {}
    for alert in alerts:
        by_family.setdefault(alert.signal.family if alert.signal else "custom", []).append(alert)
    own = tuple(r for r in recordings if r.group is None)
    order = [f for f in (*family_order, "custom") if f in by_family or (f == "custom" and own)]
    records = record_names(alerts)
    groups: list[RuleGroup] = []
    for family in order:
        family_units: dict[str, _Unit] = {}
        if family == "custom" and own:
            _user_unit(family_units, own, by_family.get("custom", []))
        for alert in by_family.get(family, []):
            key, recording, rule = _rules_of(service, alert, records)
            _unit_of(family_units, key, recording)[1].append(rule)
        name = f"{service}-{family}"
        unique = list({id(u): u for u in family_units.values()}.values())  # a shared unit once
        for index, chunk in enumerate(_pack(unique, max_group_rules)):
            suffix = f"-{index + 1}" if index else ""
            recordings_ = [r for unit in chunk for r in unit[0]]
            rules = [a for unit in chunk for a in unit[1]]
            groups.append(RuleGroup(name + suffix, evaluation, (*recordings_, *rules)))
    return (*groups, *_named_groups(service, named, recordings, settings, evaluation))


def _recording(recording: ResolvedRecording) -> RecordingRule:
    return RecordingRule(recording.record, recording.expr, recording.labels, recording.origin)


def _user_unit(
    units: dict[str, _Unit], recordings: tuple[ResolvedRecording, ...], alerts: list[ResolvedAlert]
) -> None:
    """The user's recordings of the custom group, and every custom alert that reads one of
    them, as one unit (``max_group_rules`` never separates them); the others stay alone."""
    names = {r.record for r in recordings}
    unit: _Unit = ([_recording(r) for r in recordings], [])
    units["user-recordings"] = unit
    for alert in alerts:
        if names & {name for name, _ in promql.selectors(alert.quantity)}:
            units[f"alert:{alert.name}"] = unit


def _named_groups(
    service: str,
    alerts: list[ResolvedAlert],
    recordings: tuple[ResolvedRecording, ...],
    settings: tuple[NamedGroup, ...],
    evaluation: Decimal,
) -> list[RuleGroup]:
    """The groups named by ``group:``: in the order of the spec's ``groups:``, then of first
    mention (recordings, then alerts); in each, its recordings, then its alerts, as written."""
    given = {g.name: g for g in settings}
    names = list(
        dict.fromkeys(
            [
                *given,
                *(r.group for r in recordings if r.group is not None),
                *(a.group for a in alerts if a.group is not None),
            ]
        )
    )
    out = []
    for name in names:
        own = [_recording(r) for r in recordings if r.group == name]
        rules = [_rules_of(service, a, {})[2] for a in alerts if a.group == name]
        group = given.get(name, NamedGroup(name, evaluation))
        members: tuple[RecordingRule | AlertRule, ...] = (*own, *rules)
        out.append(RuleGroup(name, group.interval, members, group.query_offset, group.labels))
    return out


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
        alert.name, condition, alert.for_seconds, alert.labels, alert.annotations, alert.origin,
        alert.keep_firing_for_seconds, subject_of(alert),
    )  # fmt: skip
    return key, recording, rule


SUBJECT_LENGTH = 48
"""A custom alert's quantity longer than this is no title: its subject is left empty."""


def subject_of(alert: ResolvedAlert) -> str:
    """What the alert watches, in the spec's words: a catalog signal's name without the word
    of its dashboard row or family (``disk_await`` in the Disk row is ``await``), a custom
    alert's compared PromQL when it is short (``vllm:num_requests_waiting``), else nothing."""
    signal = alert.signal
    if signal is not None:
        words = signal.signal.split("_")
        context = {signal.family.lower(), (signal.row or "").lower()}
        if len(words) > 1 and words[0] in context:
            words = words[1:]
        return " ".join(words)
    condition = alert.condition
    reading = condition.reading if isinstance(condition, Verbatim) else None
    if reading is not None and isinstance(reading.quantity, Expression):
        text = " ".join(reading.quantity.promql.replace("{}", "").split())
        if len(text) <= SUBJECT_LENGTH:
            return text
    return ""


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
