"""Field checks shared by every resolver (service, alerts, SLOs, diagnoses, routing).

Why: every resolver reports errors the same way (all of them, each at its position, through
one ``Collector``) and parses durations and label sets with the same messages. ``lint``
reports its findings through the same collector.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from decimal import Decimal

from rulegen import units
from rulegen.core import diagnostics as codes
from rulegen.core import promql
from rulegen.errors import Diagnostic, FieldPath, Severity
from rulegen.source.loader import Origin, PathKey, Positions, Where

_INNER = re.compile(r"(\d+):(\d+): ")
RESERVED_LABELS = frozenset({"severity", "service", "alertname", "alertstate"})


class Collector:
    """Collects the diagnostics of one file (spec errors, lint findings), each at the position
    of the value it is about, so all of them are reported in one run."""

    def __init__(self, positions: Positions) -> None:
        self.positions = positions
        self.diagnostics: list[Diagnostic] = []

    def error(self, path: Where, message: str, code: str = codes.SPEC_VALUE) -> None:
        """A spec error at ``path``."""
        self.diagnostics.append(self.positions.diag(path, message, code=code))

    def promql_error(self, path: Where, error: str) -> None:
        """``invalid PromQL: <error>`` at ``path``, at the very character when the parser's
        error names one inside the expression (promtool's ``1:37: parse error: …``)."""
        message = f"invalid PromQL: {error}"
        found = _INNER.match(error)
        inner = self.positions.inner(path, int(found[1]), int(found[2])) if found else None
        if inner is None:
            self.error(path, message)
            return
        diagnostic = self.positions.diag(path, message)
        self.diagnostics.append(replace(diagnostic, line=inner[0], col=inner[1]))

    def add(self, path: Where, message: str, code: str, severity: Severity, hint: str = "") -> None:
        """A problem of any code and severity at ``path`` (a lint finding)."""
        file, line, col, text = self.positions.place(path, message)
        self.diagnostics.append(
            Diagnostic(file, line, col, FieldPath.of(path), text, code, severity, hint)
        )

    def field(self, base: Where, key: str | int) -> FieldPath:
        """``base`` then ``key`` when the file has that value, else ``base`` (a default has no
        line of its own)."""
        below = (*base, key)
        return FieldPath(below) if self.positions.has(below) else FieldPath.of(base)

    def origin(self, path: Where) -> Origin:
        """The position of ``path``, kept by what is resolved from it."""
        return self.positions.origin(path)


def duration(
    col: Collector,
    path: PathKey,
    text: object,
    *,
    positive: bool = False,
    most: Decimal | None = None,
) -> Decimal | None:
    if not isinstance(text, str):
        col.error(path, f"invalid duration {text!r} (expected Prometheus syntax like 30s, 5m, 1h)")
        return None
    try:
        value = units.parse_duration(text)
    except units.UnitError as exc:
        col.error(path, str(exc))
        return None
    if positive and value <= 0:
        col.error(path, f"must be longer than 0s (got {text!r})")
        return None
    if most is not None and value > most:
        limit = units.format_duration(most)
        col.error(path, f"must be at most {limit} (got {text!r})")
        return None
    return value


def labels(col: Collector, path: PathKey, labels: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    for key, value in labels.items():
        if value == "":
            col.error((*path, key), "label value must not be empty (Prometheus drops empty labels)")
        if not promql.LABEL_NAME.match(key) or key.startswith("__"):
            col.error(
                (*path, key), "invalid label name (expected [a-zA-Z_][a-zA-Z0-9_]*, no __ prefix)"
            )
        elif key in RESERVED_LABELS:
            col.error((*path, key), f"label {key!r} is set by rulegen and cannot be overridden")
    return tuple(sorted(labels.items()))
