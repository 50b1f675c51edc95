"""``slo/retention``: an SLO that reads more history than Prometheus keeps."""

from __future__ import annotations

from rulegen.lint.check import Check, Scope, fmt


def run(scope: Scope) -> None:
    """An SLO window or burn-rate tier window longer than the spec's ``retention:``: the SLI
    and the error budget are computed over whatever history is left, silently less than the
    window the SLO promises."""
    retention = scope.spec.retention
    if retention is None:
        return
    for slo in scope.spec.slos:
        longest = max((slo.window, *(t.long for t in slo.tiers)))
        if longest > retention:
            scope.report(
                scope.field(slo.origin.path, "window"),
                f"SLO {slo.name}: reads {fmt(longest)} of history but Prometheus keeps "
                f"{fmt(retention)} (retention): the SLI and budget silently cover less than "
                "the window",
            )


CHECK = Check(
    "slo/retention",
    "error",
    "an SLO window or tier window longer than the spec's `retention:`",
    run,
)
