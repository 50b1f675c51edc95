"""The routing spec → ``ResolvedRouting``: receivers known and unique, matchers valid,
secrets only by file.

Why: a typo in a receiver name or a label silently sends a page to nobody; an inline secret
ends up in a committed file. Both are spec errors at their position (inline secrets are found
by ``routing.secrets`` in the file's data, before this step; here they are only kept out).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rulegen import units
from rulegen.core import diagnostics as codes
from rulegen.core import promql
from rulegen.routing.model import Inhibit, Receiver, ResolvedRouting, Route, RoutingTest
from rulegen.routing.secrets import file_option
from rulegen.source.fields import Collector, duration
from rulegen.source.loader import PathKey
from rulegen.source.severities import Severities, check, declaration

INTEGRATIONS = {
    "webhook": "webhook_configs",
    "pagerduty": "pagerduty_configs",
    "slack": "slack_configs",
    "email": "email_configs",
}


# What a Slack message says when the routing file does not say: each alert's summary and
# description (Alertmanager's default text is empty, so the description reached nobody).
SLACK_TEXT = (
    "{{ range .Alerts }}*{{ .Annotations.summary }}*\n{{ .Annotations.description }}\n"
    "{{ if .Annotations.runbook_url }}Runbook: {{ .Annotations.runbook_url }}\n{{ end }}"
    "{{ end }}"
)
# The base file's ``global`` keys that stand for a receiver's own secret file.
GLOBAL_FILES = {"slack": "slack_api_url_file"}


def resolve_routing(
    col: Collector, spec: Any, base_global: Mapping[str, Any] | None = None
) -> ResolvedRouting | None:
    """Resolve the routing section; errors go to ``col``. ``base_global`` is the base file's
    ``global`` section: a secret file set there (``slack_api_url_file``) is every receiver's
    default, as Alertmanager reads it."""
    routing = spec.routing
    before = len(col.diagnostics)
    severities = declaration(col, ("routing", "severities"), routing.severities)
    receivers = _receivers(col, routing.receivers, base_global or {})
    names = {r.name for r in receivers}
    _known(col, ("routing", "default_receiver"), routing.default_receiver, names)
    routes = tuple(
        _route(col, ("routing", "routes", i), r, names) for i, r in enumerate(routing.routes)
    )
    inhibits = tuple(
        _inhibit(col, ("routing", "inhibit", i), r) for i, r in enumerate(routing.inhibit)
    )
    tests = tuple(
        _test(col, ("routing", "tests", i), t, names) for i, t in enumerate(routing.tests)
    )
    timings = {
        key: duration(col, ("routing", key), getattr(routing, key), positive=True)
        for key in ("group_wait", "group_interval", "repeat_interval")
    }
    for index, label in enumerate(routing.group_by):
        _label(col, ("routing", "group_by", index), label)
    if severities is not None:
        _declared(col, routing, severities)
    wait, interval, repeat = (
        timings[k] for k in ("group_wait", "group_interval", "repeat_interval")
    )
    if len(col.diagnostics) > before or wait is None or interval is None or repeat is None:
        return None
    return ResolvedRouting(
        source=col.positions.file,
        base=routing.base,
        group_by=tuple(routing.group_by),
        group_wait=units.format_duration(wait),
        group_interval=units.format_duration(interval),
        repeat_interval=units.format_duration(repeat),
        default_receiver=routing.default_receiver,
        receivers=receivers,
        routes=routes,
        inhibits=inhibits,
        tests=tests,
        severities=severities,
    )


def _declared(col: Collector, routing: Any, severities: Severities) -> None:
    """The ``severity`` values the routes (``match``), inhibitions and tests name must be
    declared: a typo there would route or hold back nothing, silently."""
    places: list[tuple[PathKey, dict[str, str]]] = []
    stack: list[tuple[PathKey, Any]] = [
        (("routing", "routes", i), r) for i, r in enumerate(routing.routes)
    ]
    while stack:
        path, route = stack.pop(0)
        places.append(((*path, "match"), route.match))
        stack.extend(((*path, "routes", i), r) for i, r in enumerate(route.routes))
    for index, rule in enumerate(routing.inhibit):
        path = ("routing", "inhibit", index)
        places += [((*path, "source"), rule.source), ((*path, "target"), rule.target)]
    places += [(("routing", "tests", i, "labels"), t.labels) for i, t in enumerate(routing.tests)]
    for path, labels in places:
        if "severity" in labels:
            check(col, (*path, "severity"), labels["severity"], severities)


def _receivers(
    col: Collector, specs: list[Any], base_global: Mapping[str, Any]
) -> tuple[Receiver, ...]:
    out: list[Receiver] = []
    seen: dict[str, int] = {}
    for index, spec in enumerate(specs):
        path: PathKey = ("routing", "receivers", index)
        if spec.name in seen:
            col.error(
                (*path, "name"),
                f"duplicate receiver {spec.name!r} (also receivers[{seen[spec.name]}])",
            )
            continue
        seen[spec.name] = index
        kinds = [k for k in INTEGRATIONS if getattr(spec, k) is not None]
        if spec.discard:
            if kinds:
                col.error((*path, "discard"), f"a receiver that discards takes no integration "
                          f"(got {', '.join(kinds)})")  # fmt: skip
            out.append(Receiver(spec.name, "", {}))
            continue
        if not kinds:
            col.add(path, f"needs exactly one of {', '.join(INTEGRATIONS)} (got none)",
                    codes.SPEC_VALUE, "error", "discard: true makes a receiver that drops "
                    "what reaches it")  # fmt: skip
            continue
        if len(kinds) != 1:
            col.error(path, f"needs exactly one of {', '.join(INTEGRATIONS)} (got "
                      f"{', '.join(kinds)})")  # fmt: skip
            continue
        kind = kinds[0]
        config = getattr(spec, kind).model_dump(exclude_none=True)
        # inline secrets are reported by ``secrets.find_secrets`` and never written
        secrets = {f: config.pop(f) for f in list(config) if file_option(INTEGRATIONS[kind], f)}
        inline = any(value != "" for value in secrets.values())
        if (
            kind == "pagerduty"
            and not inline
            and not {"routing_key_file", "service_key_file"} & set(config)
        ):
            col.error(
                (*path, kind), "routing_key_file: required field is missing (or service_key_file)"
            )
        inherited = GLOBAL_FILES.get(kind) in base_global
        if kind == "slack" and not inline and "api_url_file" not in config and not inherited:
            col.error(
                (*path, kind),
                "api_url_file: required field is missing (or global.slack_api_url_file in "
                "the base file)",
            )
        if kind == "slack":
            config.setdefault("text", SLACK_TEXT)
        out.append(Receiver(spec.name, INTEGRATIONS[kind], config))
    return tuple(out)


def _known(col: Collector, path: PathKey, name: str, names: set[str]) -> None:
    if name not in names:
        known = ", ".join(sorted(names)) or "none"
        col.error(path, f"unknown receiver {name!r} (receivers: {known})")


def _label(col: Collector, path: PathKey, name: str) -> None:
    """A label name of ``group_by`` or ``equal``: a UTF-8 one (``k8s.pod``, an SLO's
    ``group_by`` under Prometheus 3) too, which Alertmanager 0.27 and later takes in its
    default and UTF-8 strict modes (``amtool check-config`` says so for the others)."""
    if not (promql.LABEL_NAME.match(name) or promql.writable_label(name)):
        col.error(path, f"invalid label name {name!r}")


def _matchers_ok(col: Collector, before: int) -> bool:
    return len(col.diagnostics) == before


def _matchers(
    col: Collector, path: PathKey, equal: dict[str, str], regex: dict[str, str]
) -> tuple[promql.Matcher, ...]:
    out: list[promql.Matcher] = []
    for key, items, op in (("match", equal, "="), ("match_re", regex, "=~")):
        for name, value in items.items():
            if not promql.LABEL_NAME.match(name):
                where = (*path, key, name)
                col.diagnostics.append(
                    col.positions.diag(where, f"invalid label name {name!r}", key=True)
                )
                continue
            if op == "=~":
                try:
                    promql.parse_matchers(f"{name}=~{promql.quote(value)}")
                except ValueError as exc:
                    col.error((*path, key, name), str(exc))
                    continue
            out.append(promql.Matcher(name, op, value))
    return tuple(out)


def _route(col: Collector, path: PathKey, spec: Any, names: set[str]) -> Route:
    before = len(col.diagnostics)
    matchers = _matchers(col, path, spec.match, spec.match_re)
    if not matchers and _matchers_ok(col, before):
        col.error(
            path,
            "needs at least one label in match or match_re "
            "(a catch-all route hides the ones after it)",
        )
    _known(col, (*path, "receiver"), spec.receiver, names)
    for index, label in enumerate(spec.group_by or ()):
        _label(col, (*path, "group_by", index), label)
    children = tuple(_route(col, (*path, "routes", i), r, names) for i, r in enumerate(spec.routes))
    line, column = col.positions.at(path)
    shown = f"{col.positions.file}:{line}:{column}: routing." + ".".join(
        str(p) if isinstance(p, str) else f"[{p}]" for p in path[1:]
    ).replace(".[", "[")
    return Route(
        matchers,
        spec.receiver,
        spec.continue_,
        tuple(spec.group_by) if spec.group_by is not None else None,
        children,
        shown,
    )


def _inhibit(col: Collector, path: PathKey, spec: Any) -> Inhibit:
    for index, label in enumerate(spec.equal):
        _label(col, (*path, "equal", index), label)
    source = _matchers(col, (*path, "source"), spec.source, {})
    target = _matchers(col, (*path, "target"), spec.target, {})
    return Inhibit(source, target, tuple(spec.equal))


def _test(col: Collector, path: PathKey, spec: Any, names: set[str]) -> RoutingTest:
    for index, name in enumerate(spec.receivers):
        _known(col, (*path, "receivers", index), name, names)
    origin = col.origin(path)
    return RoutingTest(tuple(sorted(spec.labels.items())), tuple(spec.receivers), origin)
