"""The resolved routing tree → the data of ``alertmanager.yml`` and of its routing tests.

Why in ``rulegen.routing``: only routing reads or writes this data (the loader checks a base
file against ``OWNED_KEYS``, the output module fills it in), so the package owns it and the
renderers of rule files never import routing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rulegen.routing.model import Inhibit, ResolvedRouting, Route

OWNED_KEYS = ("route", "receivers", "inhibit_rules")


def alertmanager_config(
    routing: ResolvedRouting, inhibits: tuple[Inhibit, ...], base: Mapping[str, Any]
) -> dict[str, Any]:
    """The whole config: the base file's keys (``global``, ``templates`` …) plus rulegen's."""
    root: dict[str, Any] = {
        "receiver": routing.default_receiver,
        "group_by": list(routing.group_by),
        "group_wait": routing.group_wait,
        "group_interval": routing.group_interval,
        "repeat_interval": routing.repeat_interval,
    }
    if routing.routes:
        root["routes"] = [_route(r) for r in routing.routes]
    data = {k: v for k, v in base.items() if k not in OWNED_KEYS}
    data["route"] = root
    data["receivers"] = [
        {"name": r.name, r.integration: [dict(r.config)]} if r.integration else {"name": r.name}
        for r in routing.receivers
    ]
    rules = [*routing.inhibits, *inhibits]
    if rules:
        data["inhibit_rules"] = [_inhibit(i) for i in rules]
    return data


def _route(route: Route) -> dict[str, Any]:
    out: dict[str, Any] = {
        "matchers": [m.render() for m in route.matchers],
        "receiver": route.receiver,
    }
    if route.group_by is not None:
        out["group_by"] = list(route.group_by)
    if route.continue_:
        out["continue"] = True
    if route.routes:
        out["routes"] = [_route(r) for r in route.routes]
    return out


def _inhibit(rule: Inhibit) -> dict[str, Any]:
    out: dict[str, Any] = {
        "source_matchers": [m.render() for m in rule.source],
        "target_matchers": [m.render() for m in rule.target],
    }
    if rule.equal:
        out["equal"] = list(rule.equal)
    return out


def routing_tests(cases: list[tuple[str, Mapping[str, str], tuple[str, ...]]]) -> dict[str, Any]:
    """The routing tests rulegen runs with ``amtool config routes test``, one per label set."""
    return {
        "tests": [
            {"name": name, "labels": dict(sorted(labels.items())), "receivers": list(receivers)}
            for name, labels, receivers in cases
        ]
    }
