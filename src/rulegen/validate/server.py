"""The Prometheus server a command reads, checked against the version the specs declare.

Why: ``backtest``, ``diff --prometheus``, ``lint --prometheus`` and ``repair`` evaluate the
generated rules on a real server. Rules written for Prometheus 3's left-open ranges and read
by a 2.x server (or the other way round) give other values than they would where they run:
a backtest would replay episodes that never fire there, a repair would record values the
rules never record. As for promtool (``rulegen.build.refuse_other_semantics``), the command
says so in one line per spec, naming both versions and the setting to change (exit 2)
before it asks or writes anything. A server that does not say its version (VictoriaMetrics,
Thanos, Mimir answer ``/api/v1/status/buildinfo`` otherwise or not at all) is not checked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from rulegen.core import diagnostics as codes
from rulegen.core import versions
from rulegen.core.diagnostics import Diagnostic, FieldPath
from rulegen.errors import SpecError
from rulegen.promapi.client import PrometheusAPI
from rulegen.source.loader import Origin

WHERE = ("prometheus", "version")


@dataclass(frozen=True)
class Declared:
    """One spec's declared Prometheus, and where it says so (``None``: the default)."""

    source: str
    version: versions.PrometheusVersion
    origin: Origin | None


class Declaring(Protocol):
    """A spec built (``ServiceOutput``) or resolved (``ResolvedSpec``): what it declares."""

    @property
    def source(self) -> str: ...
    @property
    def prometheus(self) -> versions.PrometheusVersion: ...
    @property
    def prometheus_origin(self) -> Origin | None: ...


def declared_by(services: Sequence[Declaring]) -> list[Declared]:
    """What each spec declares."""
    return [Declared(s.source, s.prometheus, s.prometheus_origin) for s in services]


def server_version(api: PrometheusAPI) -> tuple[int, int, int] | None:
    """The server's ``MAJOR.MINOR.PATCH``, ``None`` when it does not say (or says something
    that is not a Prometheus version)."""
    text = api.version()
    if text is None:
        return None
    return versions.tool_version(f"version {text.strip().lstrip('v')}")


def mismatches(
    declared: Sequence[Declared], api: PrometheusAPI, found: tuple[int, int, int] | None
) -> list[Diagnostic]:
    """One diagnostic per spec whose declared Prometheus evaluates otherwise than the server
    of version ``found`` (none when the version is unknown)."""
    if found is None:
        return []
    shown = ".".join(map(str, found))
    problems = []
    for spec in declared:
        if versions.same_semantics(spec.version, found):
            continue
        wanted = "3.x" if spec.version.left_open_ranges else "2.x"
        message = (
            f"declares Prometheus {spec.version} ({spec.version.semantics} range selectors) "
            f"but the Prometheus at {api.url} is {shown}, which evaluates the rules "
            f'otherwise: set prometheus.version to "{found[0]}.{found[1]}", or point '
            f"--prometheus at a Prometheus {wanted}"
        )
        if spec.origin is None:
            where = FieldPath(WHERE)
            problems.append(Diagnostic(spec.source, 0, 0, where, message, codes.TOOL_VERSION))
        else:
            problems.append(spec.origin.diagnostic(message, codes.TOOL_VERSION))
    return problems


def refuse_other_server(declared: Sequence[Declared], api: PrometheusAPI) -> None:
    """``SpecError`` (exit 2) when a spec's declared Prometheus evaluates otherwise than the
    server at ``api``; nothing when they agree or the server does not say its version."""
    problems = mismatches(declared, api, server_version(api))
    if problems:
        raise SpecError(problems)
