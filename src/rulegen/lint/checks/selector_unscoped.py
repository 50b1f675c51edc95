"""``selector/unscoped``: an alert or SLI reads a metric with no label matcher at all."""

from __future__ import annotations

from rulegen.lint.check import Check, Scope
from rulegen.lint.checks.series_missing import reads


def run(scope: Scope) -> None:
    """An alert, diagnosis or SLO that reads a metric with no label matcher at all
    (``vllm:request_success_total``, not ``vllm:request_success_total{job="vllm"}``): it
    counts that metric's series from every service and target Prometheus scrapes, so another
    service's errors page this one. ``service:`` scopes nothing by itself; the spec's
    ``selectors:`` do, for catalog signals and for SLIs of a known family."""
    seen: set[tuple[str, str]] = set()
    every = ((n, p, s) for n, p, operands in reads(scope.spec) for o in operands for s in o)
    for name, path, selector in every:
        if "{" in selector or (name, selector) in seen:
            continue
        seen.add((name, selector))
        scope.report(
            path,
            f"{name}: reads {selector} with no label matcher, so it counts the series of "
            "every service and target; add the spec's selectors: for the metric's family "
            "(e.g. vllm: 'job=\"vllm\"') or a matcher of its own",
        )


CHECK = Check(
    "selector/unscoped",
    "warning",
    "an alert or SLI reads a metric with no label matcher (every service's series)",
    run,
)
