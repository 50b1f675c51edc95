"""Routing → ``alertmanager/alertmanager.yml`` and its routing tests, and what to report.

Why: the config and the tests are built from the same resolved tree and from every alert the
service specs generate, so a renamed label that strands an alert is caught at build time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rulegen.core import promql
from rulegen.generated import AlertRule, ServiceOutput
from rulegen.routing.config import alertmanager_config, routing_tests
from rulegen.routing.model import Inhibit, ResolvedRouting, Route
from rulegen.source.loader import Origin

CONFIG = "alertmanager/alertmanager.yml"
TESTS = "alertmanager/routing-tests.yml"


@dataclass(frozen=True)
class RoutingOutput:
    """The routing files' data and what the build should tell the user."""

    config: dict[str, Any]
    tests: dict[str, Any]
    cases: list[tuple[str, Mapping[str, str], tuple[str, ...]]]
    reports: list[str] = field(default_factory=list)
    origins: dict[str, Origin] = field(default_factory=dict)  # a user test's spec position


def generated_alerts(services: Sequence[ServiceOutput]) -> list[tuple[str, dict[str, str]]]:
    """Every alert rule the specs generate, with the labels known before it fires."""
    out: list[tuple[str, dict[str, str]]] = []
    for service in services:
        groups = [*service.groups, *(s.group for s in service.slos)]
        for group in groups:
            for rule in group.rules:
                if isinstance(rule, AlertRule) and not any("{{" in v for _, v in rule.labels):
                    labels = {"alertname": rule.alert, **dict(rule.labels)}
                    out.append((f"{service.service}/{rule.alert}/{labels['severity']}", labels))
    return _unique(out)


def _unique(alerts: list[tuple[str, dict[str, str]]]) -> list[tuple[str, dict[str, str]]]:
    """Each test its own name: alerts that share service, name and severity (the burn-rate
    alerts of two SLOs) are told apart by the labels in which they differ."""
    by_name: dict[str, list[dict[str, str]]] = {}
    for name, labels in alerts:
        by_name.setdefault(name, []).append(labels)
    out: list[tuple[str, dict[str, str]]] = []
    for name, labels in alerts:
        same = by_name[name]
        if len(same) > 1:
            keys = sorted({k for other in same for k in other if other.get(k) != labels.get(k)})
            name = name + "{" + ",".join(f"{k}={labels.get(k, '')}" for k in keys) + "}"
        out.append((name, labels))
    return out


def slo_inhibits(services: Sequence[ServiceOutput]) -> tuple[Inhibit, ...]:
    """While an SLO's page fires, its ticket for the same SLO and series stays quiet."""
    out: list[Inhibit] = []
    for service in services:
        for slo in service.slos:
            alerts = [r for r in slo.group.rules if isinstance(r, AlertRule)]
            # The burn-rate alerts come first and share a name (``alert_keys`` says which is
            # the page and which the ticket: a tier's alert of its own shares their labels but
            # its own); the absent and the recordings-incomplete alerts inhibit nothing.
            alerts = [a for a in alerts if a.alert == alerts[0].alert]
            first: dict[str, AlertRule] = {}
            for key, rule in zip(slo.alert_keys, alerts, strict=False):
                first.setdefault(key, rule)
            if "page" not in first or "ticket" not in first:
                continue
            alerts = [first["page"], first["ticket"]]
            page, ticket = (dict(a.labels) for a in alerts)

            def pick(labels: dict[str, str], name: str) -> tuple[promql.Matcher, ...]:
                keys = ("service", "slo", "severity")
                return (
                    promql.Matcher("alertname", "=", name),
                    *(promql.Matcher(k, "=", labels[k]) for k in keys),
                )

            out.append(
                Inhibit(
                    pick(page, alerts[0].alert),
                    pick(ticket, alerts[1].alert),
                    ("service", "slo", *slo.group_by),
                )
            )
    return tuple(out)


def diagnosis_inhibits(services: Sequence[ServiceOutput]) -> tuple[Inhibit, ...]:
    """While a diagnosis fires, the symptom and cause alerts it explains stay quiet for the
    same host: one page that names the cause instead of several that each tell a part."""
    out: list[Inhibit] = []
    for service in services:
        for explanation in service.explanations:
            own = promql.Matcher("service", "=", service.service)
            names = "|".join(explanation.explains)  # alert names: no regex metacharacters
            out.append(
                Inhibit(
                    (promql.Matcher("alertname", "=", explanation.alert), own),
                    (promql.Matcher("alertname", "=~", names), own),
                    (explanation.host_label,),
                )
            )
    return tuple(out)


def routing_output(
    routing: ResolvedRouting, base: Mapping[str, Any], services: Sequence[ServiceOutput]
) -> RoutingOutput:
    """The config, the routing tests (generated and the user's), and the reports."""
    config = alertmanager_config(
        routing, slo_inhibits(services) + diagnosis_inhibits(services), base
    )
    alerts = generated_alerts(services)
    origins = {f"{t.origin.where()}: routing test": t.origin for t in routing.tests}
    cases: list[tuple[str, Mapping[str, str], tuple[str, ...]]] = [
        (name, dict(t.labels), t.receivers) for name, t in zip(origins, routing.tests, strict=True)
    ]
    cases += [(name, labels, routing.receivers_for(labels)) for name, labels in alerts]
    return RoutingOutput(config, routing_tests(cases), cases, _reports(routing, alerts), origins)


def _reports(routing: ResolvedRouting, alerts: list[tuple[str, dict[str, str]]]) -> list[str]:
    """Routes no generated alert reaches; alerts stranded on the default receiver although a
    route for their team exists."""
    reached: set[str] = set()
    for _, labels in alerts:
        reached |= routing.routes_reached(labels)
    out = [
        f"{path}: no generated alert reaches this route"
        for path in _paths(routing)
        if path not in reached
    ]
    paths = [routing.routes_reached(labels) for _, labels in alerts]
    out += _idle_continues(routing.routes, [a[1] for a in alerts], paths)
    teams = {
        m.value
        for route in routing.routes
        for m in route.matchers
        if m.name == "team" and m.op == "="
    }
    for name, labels in alerts:
        team = labels.get("team")
        if team in teams and routing.receivers_for(labels) == (routing.default_receiver,):
            out.append(
                f"{name}: reaches only the default receiver although a route for team {team} exists"
            )
    return out


def _idle_continues(
    routes: tuple[Route, ...], alerts: list[dict[str, str]], paths: list[set[str]]
) -> list[str]:
    """Routes with ``continue: true`` that pass no generated alert on: every alert that
    enters one matches no route after it, so the ``continue`` (often meant to copy a page to
    a second receiver) does nothing for the alerts the specs generate."""
    out: list[str] = []
    for index, route in enumerate(routes):
        later = routes[index + 1 :]  # none after the last: its continue passes to nothing
        entered = [labels for labels, seen in zip(alerts, paths, strict=True) if route.path in seen]
        passes = any(other.matches(labels) for labels in entered for other in later)
        if route.continue_ and entered and not passes:
            out.append(
                f"{route.path}: continue: true passes no generated alert on to a later "
                "route (none of the alerts that enter it matches a route after it)"
            )
        out += _idle_continues(route.routes, alerts, paths)
    return out


def _paths(routing: ResolvedRouting) -> list[str]:
    out: list[str] = []
    stack = list(routing.routes)
    while stack:
        route = stack.pop(0)
        out.append(route.path)
        stack.extend(route.routes)
    return out
