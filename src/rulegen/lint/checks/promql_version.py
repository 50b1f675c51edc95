"""``promql/version``: PromQL the declared Prometheus does not evaluate.

Why a table: a function's life differs by release. ``histogram_avg`` arrived in 2.51,
``limitk`` in 2.54, ``double_exponential_smoothing`` in 3.0; an experimental one is refused
unless Prometheus runs with ``--enable-feature=promql-experimental-functions``, which promtool
cannot turn on for its checks. The table is read from Prometheus' ``promql/parser/functions.go``
(and its lexer for the aggregations) at every minor release from 2.42 to 3.5. (``holt_winters``,
removed in 3.0, is refused by rulegen's PromQL parser, which knows 3.x's functions, before
any lint check runs.)
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from rulegen.core.diagnostics import FieldPath
from rulegen.core.versions import PrometheusVersion
from rulegen.lint.check import Check, Scope
from rulegen.service import ResolvedSpec

FLAG = "--enable-feature=promql-experimental-functions"


@dataclass(frozen=True)
class Life:
    """When a function (or aggregation) exists, and from when it is no longer
    experimental (``None``: still experimental in 3.5)."""

    added: tuple[int, int]
    stable: tuple[int, int] | None


LIVES: dict[str, Life] = {
    "double_exponential_smoothing": Life((3, 0), None),
    "histogram_avg": Life((2, 51), (2, 51)),
    "histogram_stddev": Life((2, 47), (2, 47)),
    "histogram_stdvar": Life((2, 47), (2, 47)),
    "info": Life((2, 55), None),
    "mad_over_time": Life((2, 49), None),
    "sort_by_label": Life((2, 49), None),
    "sort_by_label_desc": Life((2, 49), None),
    "ts_of_last_over_time": Life((3, 5), None),
    "ts_of_max_over_time": Life((3, 5), None),
    "ts_of_min_over_time": Life((3, 5), None),
    "limitk": Life((2, 54), None),
    "limit_ratio": Life((2, 54), None),
}  # fmt: skip

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_CALL = re.compile(
    r"(?<![\w:])(" + "|".join(LIVES) + r")\s*(?:\(|\b(?:by|without)\b)", re.IGNORECASE
)


def calls(expr: str) -> list[str]:
    """The functions and aggregations of ``LIVES`` that ``expr`` calls (outside strings,
    so a label value that spells one is not a call), in order, each once."""
    bare = _STRING.sub('""', expr)
    return list(dict.fromkeys(m.group(1).lower() for m in _CALL.finditer(bare)))


def problem(name: str, declared: PrometheusVersion) -> str | None:
    """Why the declared Prometheus does not evaluate ``name``, or ``None`` when it does."""
    life = LIVES[name]
    have = (declared.major, declared.minor)
    if have < life.added:
        return f"{name} needs Prometheus {_shown(life.added)} or later (declared {declared})"
    if life.stable is None or have < life.stable:
        return (
            f"{name} is experimental in Prometheus {declared}: Prometheus refuses it unless "
            f"started with {FLAG}, and promtool refuses it"
        )
    return None


def _shown(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


def expressions(spec: ResolvedSpec) -> Iterator[tuple[str, FieldPath, str]]:
    """(rule name, spec path, PromQL) of everything the user wrote as PromQL: custom alerts'
    ``expr``, recordings' ``expr`` (catalog signals are rulegen's, written for every
    version)."""
    for alert in spec.alerts:
        if alert.signal is None:
            yield alert.name, alert.origin.path, alert.quantity
    for recording in spec.recordings:
        yield recording.record, recording.origin.path, recording.expr


def run(scope: Scope) -> None:
    """A custom alert or recording whose PromQL calls a function the declared Prometheus
    (``prometheus.version``) does not evaluate: one added in a later release, or one still
    experimental there. Prometheus refuses the whole rule file at load (every rule of it
    stops), and promtool refuses it in the build."""
    declared = scope.spec.prometheus
    for name, path, expr in expressions(scope.spec):
        for function in calls(expr):
            why = problem(function, declared)
            if why is not None:
                scope.report(scope.field(path, "expr"), f"{name}: {why}")


CHECK = Check(
    "promql/version",
    "error",
    "PromQL the declared Prometheus does not evaluate (a function added later, or "
    "experimental there)",
    run,
)
