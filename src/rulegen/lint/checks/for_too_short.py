"""``for/too-short``: a ``for`` shorter than two evaluation intervals."""

from __future__ import annotations

from rulegen.alerts.model import ResolvedAlert
from rulegen.diagnosis.model import ResolvedDiagnosis
from rulegen.lint.check import Check, Scope, fmt


def run(scope: Scope) -> None:
    """A ``for`` (of an alert, a diagnosis, an SLO's page, ticket or absent alert) above 0 and
    shorter than two evaluation intervals: Prometheus checks ``for`` only at evaluations, so
    the spec's number is not what runs, and the wait is too short to hold back the flapping a
    ``for`` is written for."""
    spec = scope.spec
    interval = spec.evaluation_interval
    rules: list[ResolvedAlert | ResolvedDiagnosis] = [*spec.alerts, *spec.diagnoses]
    entries = [(scope.field(r.origin.path, "for"), r.name, r.for_seconds) for r in rules]
    entries += [
        (slo.origin.path.child("alerting"), f"SLO {slo.name} {alert.key}", alert.for_seconds)
        for slo in spec.slos
        for alert in {a.key: a for a in slo.alerts}.values()  # a tier's own rule: same for
    ]
    entries += [
        (scope.field(s.absent.origin.path, "for"), f"SLO {s.name} absent", s.absent.for_seconds)
        for s in spec.slos
        if s.absent is not None
    ]
    for path, name, seconds in entries:
        if 0 < seconds < 2 * interval:
            scope.report(
                path,
                f"{name}: for {fmt(seconds)} is shorter than two evaluations "
                f"(evaluation_interval {fmt(interval)}): it behaves as no for at all; use at "
                f"least {fmt(2 * interval)} or 0s",
            )


CHECK = Check("for/too-short", "warning", "a `for` shorter than two evaluation intervals", run)
