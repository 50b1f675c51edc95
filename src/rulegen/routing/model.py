"""The resolved routing tree: plain objects, matchers parsed, secrets only as file paths."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rulegen.core import promql
from rulegen.source.loader import Origin
from rulegen.source.severities import Severities


@dataclass(frozen=True)
class Receiver:
    """A receiver: its name and its one Alertmanager integration (``webhook_configs`` …);
    ``integration`` is empty for one that discards what reaches it (``discard: true``)."""

    name: str
    integration: str
    config: Mapping[str, Any]


@dataclass(frozen=True)
class Route:
    """A route: every matcher must accept the alert's labels."""

    matchers: tuple[promql.Matcher, ...]
    receiver: str
    continue_: bool
    group_by: tuple[str, ...] | None
    routes: tuple[Route, ...]
    path: str

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether an alert with ``labels`` enters this route."""
        return all(promql.accepts(m, labels.get(m.name, "")) for m in self.matchers)


@dataclass(frozen=True)
class Inhibit:
    """An inhibition rule."""

    source: tuple[promql.Matcher, ...]
    target: tuple[promql.Matcher, ...]
    equal: tuple[str, ...]


@dataclass(frozen=True)
class RoutingTest:
    """A label set and the receivers it must reach, in tree order."""

    labels: tuple[tuple[str, str], ...]
    receivers: tuple[str, ...]
    origin: Origin


@dataclass(frozen=True)
class ResolvedRouting:
    """Everything rulegen writes into ``alertmanager.yml``, plus the user's routing tests."""

    source: str
    base: str | None
    group_by: tuple[str, ...]
    group_wait: str
    group_interval: str
    repeat_interval: str
    default_receiver: str
    receivers: tuple[Receiver, ...]
    routes: tuple[Route, ...]
    inhibits: tuple[Inhibit, ...]
    tests: tuple[RoutingTest, ...]
    # the routing file's ``severities:`` (None: not declared there)
    severities: Severities | None = None

    def receivers_for(self, labels: Mapping[str, str]) -> tuple[str, ...]:
        """The receivers an alert reaches, as Alertmanager walks the tree (``continue``)."""
        return _walk(self.routes, self.default_receiver, labels)

    def routes_reached(self, labels: Mapping[str, str]) -> set[str]:
        """Paths of every route the alert enters."""
        found: set[str] = set()
        _visit(self.routes, labels, found)
        return found


def _walk(routes: tuple[Route, ...], own: str, labels: Mapping[str, str]) -> tuple[str, ...]:
    out: list[str] = []
    for route in routes:
        if not route.matches(labels):
            continue
        out.extend(_walk(route.routes, route.receiver, labels))
        if not route.continue_:
            break
    return tuple(out) if out else (own,)


def _visit(routes: tuple[Route, ...], labels: Mapping[str, str], found: set[str]) -> None:
    for route in routes:
        if not route.matches(labels):
            continue
        found.add(route.path)
        _visit(route.routes, labels, found)
        if not route.continue_:
            break
