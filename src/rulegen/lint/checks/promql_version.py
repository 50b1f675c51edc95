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
from typing import Any

import promql_parser

from rulegen.core.diagnostics import FieldPath
from rulegen.core.promql import LABEL_NAME as _LABEL
from rulegen.core.promql import METRIC_NAME as _METRIC
from rulegen.core.promql import UTF8_SINCE
from rulegen.core.versions import PrometheusVersion
from rulegen.lint.check import Check, Scope
from rulegen.pipeline.service import ResolvedSpec

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


def utf8_names(expr: str) -> list[str]:
    """The metric and label names of ``expr`` that only Prometheus 3's UTF-8 names allow
    (quoted: ``{"http.requests"}``, ``by ("k8s.pod")``), in order, each once."""
    found: dict[str, None] = {}

    def visit(node: Any) -> None:
        metrics, labels = _names(node)
        found.update((m, None) for m in metrics if not _METRIC.match(m))
        found.update((n, None) for n in labels if not _LABEL.match(n))

    try:
        promql_parser.walk(promql_parser.parse(expr), visit)
    except (ValueError, RuntimeError):
        return []  # not PromQL: the spec error says so
    return list(found)


def _names(node: Any) -> tuple[list[str], list[str]]:
    """The metric names and the label names one node writes (not its children's)."""
    if isinstance(node, promql_parser.VectorSelector):
        metrics = [node.name] if node.name else []
        labels = []
        for matcher in node.matchers.matchers:
            if matcher.name != "__name__":
                labels.append(matcher.name)
            elif str(matcher.op).endswith("Equal"):
                metrics.append(matcher.value)
        return metrics, labels
    if isinstance(node, promql_parser.AggregateExpr) and node.modifier is not None:
        return [], list(node.modifier.labels)
    if isinstance(node, promql_parser.BinaryExpr) and node.modifier is not None:
        matching = node.modifier.matching
        on = list(matching.labels) if matching is not None else []
        return [], [*on, *(node.modifier.group_labels or ())]
    return [], []


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
    """A custom alert or recording whose PromQL the declared Prometheus
    (``prometheus.version``) does not evaluate: a function added in a later release or still
    experimental there, or a quoted UTF-8 metric or label name before 3.0. Prometheus refuses
    the whole rule file at load (every rule of it stops), and promtool refuses it in the
    build."""
    declared = scope.spec.prometheus
    for name, path, expr in expressions(scope.spec):
        for function in calls(expr):
            why = problem(function, declared)
            if why is not None:
                scope.report(scope.field(path, "expr"), f"{name}: {why}")
        utf8 = utf8_names(expr) if (declared.major, declared.minor) < UTF8_SINCE else []
        if utf8:
            shown = ", ".join(f'"{n}"' for n in utf8)
            scope.report(
                scope.field(path, "expr"),
                f"{name}: the UTF-8 name(s) {shown} need Prometheus 3.0 or later (declared "
                f"{declared}), whose names may hold any character",
            )


CHECK = Check(
    "promql/version",
    "error",
    "PromQL the declared Prometheus does not evaluate (a function added later or experimental "
    "there, a UTF-8 name before 3.0)",
    run,
)
