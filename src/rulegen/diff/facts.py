"""One version of the specs as the diff compares it: every alert's fields, in the spec's units.

Why text in the spec's units: a reviewer reads ``threshold: 5ms → 10ms``, not ``0.005 → 0.01``,
and two versions that wrote the same value differently (``5ms`` and ``0.005s``) resolve to the
same exact number, so they print the same and compare equal. Each field is named as the spec
names it (``threshold``, ``for``, ``window``, ``objective``, ``min_traffic``); the labels and
annotations of the generated rule are ``labels.<name>`` and ``annotations.<name>``, and
``tiers[i]`` is the i-th tier of that page or ticket alert (its own tiers, in spec order, so
dropping a page tier does not renumber the ticket's).

The values come from the resolved spec (what the output model does not carry: window,
quantile, matchers, an SLO's objective and tiers) and from the generated rules (``for``,
labels, annotations: what Prometheus gets), never from parsing YAML or PromQL back.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import Any, Literal

from rulegen import units
from rulegen.alerts.model import ResolvedAlert
from rulegen.core import promql
from rulegen.dashboard.build import service_dashboard
from rulegen.dashboard.model import Dashboard, Panel
from rulegen.diagnosis.model import ResolvedDiagnosis
from rulegen.generated import AlertRule, RecordingRule, RuleGroup, ServiceOutput, Verbatim
from rulegen.pipeline.service import ResolvedSpec
from rulegen.render.prometheus import condition_promql, quantity_promql
from rulegen.routing.model import ResolvedRouting
from rulegen.slo.model import (
    EventsSLI,
    GoodputSLI,
    GoodRatioSLI,
    LatencySLI,
    RawSLI,
    ResolvedSLO,
    SLOAlert,
    total_series,
)

Kind = Literal["alert", "diagnosis", "slo"]

# A diagnosis's evidence, by the spec key that sets its threshold.
EVIDENCE_KEYS = {
    "ttft": "ttft",
    "disk": "disk_utilization",
    "network": "network_utilization",
    "throughput": "throughput",
    "gpu": "gpu_utilization",
    "waiting": "requests_waiting",
}
# Fields that do not change what the expression selects: a change of only these never
# explains a changed expression (see ``AlertFacts.definition``).
OUTSIDE_EXPR = frozenset({"for", "severity", "receivers", "evaluation_interval"})
# Labels shown as fields of their own (severity) or that name the alert (service, slo).
_OWN_LABELS = frozenset({"severity", "service", "slo"})


@dataclass(frozen=True, order=True)
class AlertKey:
    """Which alert an entry is, the same in both versions.

    An SLO's page and ticket alerts share one name (and every SLO's default name is
    ``ErrorBudgetBurn``), so an SLO alert is also keyed by its SLO and by ``page`` or
    ``ticket``; custom alerts that share a name (a warning/critical pair) by their severity;
    a diagnosis is kept apart from a signal alert of the same name.
    """

    alert: str
    kind: Kind = "alert"
    slo: str = ""
    alerting: str = ""

    def title(self) -> str:
        """``DiskAwaitHigh``, or ``ErrorBudgetBurn (slo availability, page)``."""
        if self.kind == "slo":
            return f"{self.alert} (slo {self.slo}, {self.alerting})"
        if self.alerting:
            return f"{self.alert} ({self.alerting})"
        return self.alert


@dataclass(frozen=True)
class AlertFacts:
    """One alert of one version.

    ``fields`` are the compared values as text, in display order; ``compare_as`` replaces a
    field's value for the comparison only (a custom alert's ``expr`` compares without its
    threshold, which is a field of its own). ``definition`` is the rule's PromQL and the
    recordings it reads: when it differs but no field that shapes the expression does, the
    diff reports ``expr`` (a signal definition or rulegen itself changed the rule).
    """

    key: AlertKey
    group: str
    labels: tuple[tuple[str, str], ...]
    fields: dict[str, str]
    expr: str
    definition: str
    compare_as: dict[str, str] = field(default_factory=dict)

    def compared(self, name: str) -> str | None:
        """The value a field is compared by (``None`` when this version has no such field)."""
        if name in self.compare_as:
            return self.compare_as[name]
        return self.fields.get(name)


@dataclass(frozen=True)
class ServiceFacts:
    """One service of one version: its alerts, recordings and dashboard panels."""

    service: str
    alerts: dict[AlertKey, AlertFacts]
    # (group, record, labels) → expression
    recordings: dict[tuple[str, str, tuple[tuple[str, str], ...]], str]
    # "row / title" (numbered when a title repeats in a row) → panel
    panels: dict[str, Panel]
    dashboard: Dashboard


def version_facts(
    services: Iterable[ServiceOutput],
    specs: Iterable[ResolvedSpec],
    routing: ResolvedRouting | None,
) -> dict[str, ServiceFacts]:
    """Every service of a build, by name."""
    resolved = {spec.service: spec for spec in specs}
    return {
        output.service: service_facts(output, resolved[output.service], routing)
        for output in services
    }


def service_facts(
    output: ServiceOutput, spec: ResolvedSpec, routing: ResolvedRouting | None
) -> ServiceFacts:
    """One service's facts from its generated rules and its resolved spec."""
    alerts: dict[AlertKey, AlertFacts] = {}
    by_name = {(a.name, a.severity): a for a in spec.alerts}
    shared = {name for name, _ in by_name if sum(n == name for n, _ in by_name) > 1}
    diagnoses = {d.name: d for d in spec.diagnoses}
    for index, group in enumerate(output.groups):
        # rule_groups() puts the diagnoses' group last, after the signal families
        diagnosis_group = bool(spec.diagnoses) and index == len(output.groups) - 1
        for rule in _alert_rules(group):
            if diagnosis_group and rule.alert in diagnoses:
                key = AlertKey(rule.alert, "diagnosis")
                own = _diagnosis_fields(diagnoses[rule.alert])
            else:
                severity = dict(rule.labels)["severity"]
                key = AlertKey(rule.alert, alerting=severity if rule.alert in shared else "")
                own = _alert_fields(by_name[(rule.alert, severity)])
            alerts[key] = _facts(key, group, rule, own, routing)
    for slo_output, slo in zip(output.slos, spec.slos, strict=True):
        # The burn alerts, one per SLOAlert; the coverage alert has no spec fields of its own
        # (its window's change shows in the SLO's recordings).
        rules = [r for r in _alert_rules(slo_output.group) if r.alert == slo.alert_name]
        for rule, alert in zip(rules, slo.alerts, strict=True):
            key = AlertKey(rule.alert, "slo", slo.name, alert.role)
            alerts[key] = _facts(key, slo_output.group, rule, _slo_fields(slo, alert), routing)
        if slo.absent is not None:
            rule = next(r for r in _alert_rules(slo_output.group) if r.alert == slo.absent.name)
            key = AlertKey(rule.alert, "slo", slo.name, "absent")
            fields = {"selector": total_series(slo.sli).render()}
            alerts[key] = _facts(key, slo_output.group, rule, (fields, {}), routing)
    recordings = {
        (group.name, rule.record, rule.labels): rule.expr
        for group in (*output.groups, *(s.group for s in output.slos))
        for rule in group.rules
        if isinstance(rule, RecordingRule)
    }
    # the same source in both versions: a dashboard differs only where its panels do
    dashboard = service_dashboard(spec, spec.service)
    return ServiceFacts(output.service, alerts, recordings, _panels(dashboard), dashboard)


def _alert_rules(group: RuleGroup) -> list[AlertRule]:
    return [rule for rule in group.rules if isinstance(rule, AlertRule)]


def _panels(dashboard: Dashboard) -> dict[str, Panel]:
    """Panels by ``row / title`` without the values titles end with (``DiskAwaitHigh (> 5ms
    for 5m)`` is ``DiskAwaitHigh``), so a panel whose threshold changed is changed, not
    removed and added; numbered when a name repeats."""
    out: dict[str, Panel] = {}
    for row in dashboard.rows:
        for panel in row.panels:
            base = f"{_stable(row.title)} / {_stable(panel.title)}"
            name, count = base, 2
            while name in out:
                name, count = f"{base} ({count})", count + 1
            out[name] = panel
    return out


def _stable(title: str) -> str:
    return re.sub(r"\s*\([^()]*\)$", "", title) or title


def _facts(
    key: AlertKey,
    group: RuleGroup,
    rule: AlertRule,
    own: tuple[dict[str, str], dict[str, str]],
    routing: ResolvedRouting | None,
) -> AlertFacts:
    """The fields every alert has (from its generated rule) around those of its kind."""
    fields, compare_as = own
    labels = dict(rule.labels)
    out = dict(fields)
    out["for"] = units.format_duration(rule.for_seconds)
    out["severity"] = labels.get("severity", "")
    out["evaluation_interval"] = units.format_duration(group.interval_seconds)
    for name, value in sorted(labels.items()):
        if name not in _OWN_LABELS:
            out[f"labels.{name}"] = value
    for name, value in rule.annotations:
        out[f"annotations.{name}"] = value
    if routing is not None:
        reached = routing.receivers_for({"alertname": rule.alert, **labels})
        out["receivers"] = ", ".join(reached)
    expr = condition_promql(rule.condition)
    return AlertFacts(key, group.name, rule.labels, out, expr, _definition(expr, group), compare_as)


def _definition(expr: str, group: RuleGroup) -> str:
    """The alert's expression and every recording of its group it reads, transitively."""
    recorded: dict[str, list[RecordingRule]] = {}
    for rule in group.rules:
        if isinstance(rule, RecordingRule):
            recorded.setdefault(rule.record, []).append(rule)
    seen: set[str] = set()
    pending = [name for name, _ in promql.selectors(expr)]
    lines = [expr]
    while pending:
        name = pending.pop()
        if name in seen or name not in recorded:
            continue
        seen.add(name)
        for rule in recorded[name]:
            lines.append(f"{rule.record} {rule.labels} = {rule.expr}")
            pending.extend(n for n, _ in promql.selectors(rule.expr))
    return "\n".join([lines[0], *sorted(lines[1:])])


# --- each kind's own fields -------------------------------------------------------------------


def _alert_fields(alert: ResolvedAlert) -> tuple[dict[str, str], dict[str, str]]:
    """A catalog signal's alert, or a custom alert (its ``expr``)."""
    signal = alert.signal
    if signal is None:
        fields: dict[str, str] = {}
        compare_as: dict[str, str] = {}
        reading = alert.condition.reading if isinstance(alert.condition, Verbatim) else None
        if reading is not None:
            fields["threshold"] = _number(reading.threshold.value)
            fields["comparison"] = reading.op
        fields["expr"] = alert.quantity
        if reading is not None:  # only the number changed: the threshold says it
            compare_as["expr"] = f"{quantity_promql(reading.quantity)} {reading.op}"
        return fields, compare_as
    fields = {
        "signal": signal.signal,
        "threshold": units.format_human(alert.threshold, signal.threshold.unit),
        "comparison": signal.threshold.op,
    }
    if alert.window is not None:
        fields["window"] = alert.window
    for name, value in sorted(alert.params.items()):
        if value is not None:
            fields[name] = _param_text(signal.params[name].type, value)
    if alert.selector_matchers:
        fields["matchers"] = ", ".join(m.render() for m in alert.selector_matchers)
    return fields, {}


def _number(value: Decimal | Fraction) -> str:
    return units.literal(value) if isinstance(value, Decimal) else units.fraction_literal(value)


def _param_text(kind: str, value: Any) -> str:
    """A signal parameter as a spec writes it: ``95%``, ``25Gbps``, ``5m``, ``0.99``."""
    if kind == "buckets":
        return ", ".join(units.literal(b) for b in value)
    if kind == "duration":
        return units.format_duration(value)
    if kind in ("percent", "bandwidth"):
        return units.format_human(value, kind)
    if isinstance(value, Decimal):
        return units.literal(value)
    return str(value)


def _diagnosis_fields(diagnosis: ResolvedDiagnosis) -> tuple[dict[str, str], dict[str, str]]:
    """A diagnosis: each piece of evidence's threshold by its spec key, windows, quantile."""
    fields = {"kind": diagnosis.kind}
    for item in diagnosis.evidence:
        if item.quantity == "gpu_health":
            # no threshold of its own (> 0): the keys that decide what counts as a fault
            fields["ignore_xids"] = diagnosis.ignore_xids or ""
            fields["uncorrectable_rows"] = units.literal(diagnosis.uncorrectable_rows)
            continue
        key = EVIDENCE_KEYS[item.quantity]
        fields[key] = units.format_human(item.threshold, item.unit)
    fields["window"] = units.format_duration(diagnosis.window_seconds)
    quantities = {item.quantity for item in diagnosis.evidence}
    if "ttft" in quantities:
        fields["quantile"] = units.literal(diagnosis.quantile)
    if "throughput" in quantities:
        fields["baseline"] = units.format_duration(diagnosis.baseline_seconds)
    if "network" in quantities and diagnosis.link_speed is not None:
        fields["link_speed"] = units.format_human(diagnosis.link_speed, "bandwidth")
    if "gpu" in quantities:
        fields["gpu_metric"] = diagnosis.gpu_metric
        fields["gpu_scale"] = units.literal(diagnosis.gpu_scale)
    return fields, {}


def _slo_fields(slo: ResolvedSLO, alert: SLOAlert) -> tuple[dict[str, str], dict[str, str]]:
    """An SLO's page or ticket alert: the SLO's objective, window and SLI, and its tiers."""
    fields = {
        "objective": f"{units.literal(slo.objective * 100)}%",
        "window": units.format_duration(slo.window),
    }
    fields.update(_sli_fields(slo))
    if slo.group_by:
        fields["group_by"] = ", ".join(slo.group_by)
    for index, tier in enumerate(alert.tiers):  # this alert's own tiers, in spec order
        where = f"tiers[{index}]"
        fields[f"{where}.long"] = units.format_duration(tier.long)
        fields[f"{where}.short"] = units.format_duration(tier.short)
        fields[f"{where}.budget"] = f"{units.literal(tier.budget_share * 100)}%"
        fields[f"{where}.factor"] = units.fraction_literal(tier.factor)
    if slo.min_traffic is not None:
        fields["min_traffic"] = units.literal(slo.min_traffic)
    return fields, {}


def _sli_fields(slo: ResolvedSLO) -> Mapping[str, str]:
    sli = slo.sli
    if isinstance(sli, GoodputSLI):
        out = {}
        for index, one in enumerate(sli.latencies):
            out[f"sli.goodput.latencies[{index}].metric"] = one.metric
            out[f"sli.goodput.latencies[{index}].threshold"] = units.format_latency(one.threshold)
        if sli.matchers:
            out["sli.goodput.matchers"] = ", ".join(m.render() for m in sli.matchers)
        return out
    if isinstance(sli, LatencySLI):
        out = {
            "sli.latency.metric": sli.metric,
            "sli.latency.threshold": units.format_latency(sli.threshold),
        }
        if sli.matchers:
            out["sli.latency.matchers"] = ", ".join(m.render() for m in sli.matchers)
        return out
    if isinstance(sli, GoodRatioSLI):
        return {"sli.ratio.good": sli.good.render(), "sli.ratio.total": sli.total.render()}
    if isinstance(sli, RawSLI):
        return {"sli.raw.error_ratio": sli.error_ratio.text}
    if isinstance(sli, EventsSLI):
        key = "sli.events.good" if sli.good else "sli.events.errors"
        return {key: sli.part.text, "sli.events.total": sli.total.text}
    return {"sli.ratio.errors": sli.errors.render(), "sli.ratio.total": sli.total.render()}
