"""``selector/unscoped``: an alert, recording or SLI reads a metric with no label matcher."""

from __future__ import annotations

from collections.abc import Iterator

import promql_parser

from rulegen.errors import FieldPath
from rulegen.lint.check import Check, Scope
from rulegen.lint.checks.series_missing import reads, selectors_of

FAMILY_HINT = (
    "add the spec's selectors: for the metric's family (e.g. vllm: 'job=\"vllm\"') or a "
    "matcher of its own"
)
OWN_HINT = 'give it a label matcher in the expression (e.g. up{job="web"})'


def run(scope: Scope) -> None:
    """An alert (catalog or custom), recording, diagnosis or SLO that reads a metric with no
    label matcher at all (``vllm:request_success_total``, not
    ``vllm:request_success_total{job="vllm"}``; ``up == 0``): it counts that metric's series
    from every service and target Prometheus scrapes, so another service's errors page this
    one. ``service:`` scopes nothing by itself; the spec's ``selectors:`` do, for catalog
    signals and SLIs of a known family; a custom ``expr`` needs a matcher of its own. The
    spec's own recordings, read by name, are not reported (rulegen writes them)."""
    own = {r.record for r in scope.spec.recordings}
    found: dict[tuple[str, FieldPath, str], list[str]] = {}
    for name, path, selector, hint in _reads(scope):
        metric, scoped = _read(selector)
        if metric in own or scoped:
            continue
        metrics = found.setdefault((name, path, hint), [])
        if metric not in metrics:
            metrics.append(metric)
    for (name, path, hint), metrics in found.items():
        scope.report(
            path,
            f"{name}: reads {', '.join(metrics)} with no label matcher, so it counts the series "
            f"of every service and target; {hint}",
        )


def _reads(scope: Scope) -> Iterator[tuple[str, FieldPath, str, str]]:
    """(rule name, spec path, selector, how to scope it) of everything the spec reads: what
    ``series/missing`` asks the server for, and the spec's own recordings' expressions."""
    custom = {a.name for a in scope.spec.alerts if a.signal is None}
    for name, path, operands in reads(scope.spec):
        hint = OWN_HINT if name in custom else FAMILY_HINT
        for operand in operands:
            for selector in operand:
                yield name, path, selector, hint
    for recording in scope.spec.recordings:
        for selector in selectors_of(recording.expr):
            yield recording.record, recording.origin.path, selector, OWN_HINT


def _read(selector: str) -> tuple[str, bool]:
    """The metric a selector reads and whether it has a label matcher (``name{}``, as the
    parser writes an unscoped one, has none; ``{"k8s.name"}`` names its metric inside)."""
    parsed = promql_parser.parse(selector)
    if not isinstance(parsed, promql_parser.VectorSelector):
        return selector, True  # not a plain selector: nothing to say about it
    matchers = [m for m in parsed.matchers.matchers if m.name != "__name__"]
    named = [m.value for m in parsed.matchers.matchers if m.name == "__name__"]
    metric = parsed.name or (named[0] if named else selector)
    return str(metric), bool(matchers or parsed.matchers.or_matchers)


CHECK = Check(
    "selector/unscoped",
    "warning",
    "an alert, recording or SLI reads a metric with no label matcher (every service's series)",
    run,
)
