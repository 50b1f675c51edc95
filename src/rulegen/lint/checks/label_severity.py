"""``label/severity``: severities that lose a page."""

from __future__ import annotations

from rulegen.lint.check import Check, Scope


def run(scope: Scope) -> None:
    """A diagnosis that holds back an alert more severe than itself (while it fires,
    Alertmanager inhibits that alert on its host, so the page is lost): an error. An SLO
    whose ticket is more severe than its page (the escalation is inverted, and with a
    routing file the page inhibits the ticket): a warning. More severe is earlier in the
    spec's ``severities:`` (critical, warning, info by default)."""
    spec = scope.spec
    rank = spec.severities.rank
    for diagnosis in spec.diagnoses:
        # the alerts it explains, and the other diagnoses it holds back (gpu_health)
        held = {a.name: a.severity for a in spec.alerts if a.name in diagnosis.explains}
        held.update({d.name: d.severity for d in spec.diagnoses if d.name in diagnosis.explains})
        for name, severity in held.items():
            if rank(severity) > rank(diagnosis.severity):
                scope.report(
                    scope.field(diagnosis.origin.path, "severity"),
                    f"{diagnosis.name} ({diagnosis.severity}) holds back {name} "
                    f"({severity}) on its host: while the diagnosis fires, that page is "
                    f"lost; give the diagnosis severity {severity}",
                )
    for slo in spec.slos:
        severities = {a.key: a.severity for a in slo.alerts}
        page, ticket = severities.get("page"), severities.get("ticket")
        if page and ticket and rank(ticket) > rank(page):
            scope.report(
                slo.origin.path.child("alerting"),
                f"SLO {slo.name}: the ticket ({ticket}) is more severe than the page ({page})",
                "warning",
            )


CHECK = Check(
    "label/severity",
    "error",
    "a diagnosis that holds back a more severe alert; an SLO ticket more severe than its page "
    "(warning)",
    run,
)
