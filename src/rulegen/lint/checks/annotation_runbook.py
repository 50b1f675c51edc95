"""``annotation/runbook``: alerts that reach on-call without a runbook."""

from __future__ import annotations

from rulegen.errors import Severity
from rulegen.lint.check import Check, Scope


def run(scope: Scope) -> None:
    """A spec with alerts, diagnoses or SLOs and no ``runbook_url`` anywhere: whoever is
    paged has no first step to follow. A warning when some of them page (critical, or the
    paging severities of the spec's ``severities:``), an info otherwise."""
    spec = scope.spec
    if any(slo.runbook_url for slo in spec.slos) or any(
        "runbook_url" in dict(a.annotations) for a in spec.alerts
    ):
        return
    paging = spec.severities.paging
    critical = [a.name for a in spec.alerts if a.severity in paging]
    critical += [d.name for d in spec.diagnoses if d.severity in paging]
    critical += [s.alert_name for s in spec.slos if any(a.severity in paging for a in s.alerts)]
    total = len(spec.alerts) + len(spec.diagnoses) + len(spec.slos)
    if not total:
        return
    severity: Severity = "warning" if critical else "info"
    word = "critical" if paging == {"critical"} else "paging"
    pages = f", {len(critical)} of them {word} ({', '.join(critical[:3])}…)" if critical else ""
    scope.report(
        (),
        f"no runbook_url: {total} alert(s) reach on-call without a runbook{pages}; set "
        "runbook_url (with {alert} for the alert's name)",
        severity,
    )


CHECK = Check(
    "annotation/runbook",
    "warning",
    "no `runbook_url` (info when no alert is critical)",
    run,
)
