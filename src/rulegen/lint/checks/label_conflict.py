"""``label/conflict``: a label that overwrites a label of the alert's series."""

from __future__ import annotations

from rulegen.lint.check import Check, Scope


def run(scope: Scope) -> None:
    """A spec or alert label named like a label of the alert's series (``instance``,
    ``device``), or a diagnosis label named like the host label it names: it overwrites
    that label, so every series' alert gets the same identity and Alertmanager merges them
    into one."""
    spec = scope.spec
    for alert in spec.alerts:
        if alert.signal is None:
            continue
        series = set(alert.signal.series_labels())
        for name in sorted(dict(alert.labels).keys() & series):
            where = alert.origin.path.child("labels", name)
            scope.report(
                where if scope.positions.has(where) else ("labels", name),
                f"{alert.name}: label {name!r} overwrites the series label of the same name "
                f"({', '.join(sorted(series))}): all its alerts get one identity and "
                "Alertmanager merges them; rename the label",
            )
    for diagnosis in spec.diagnoses:
        keep = (
            {diagnosis.host.label, "model_name"} if diagnosis.by_model else {diagnosis.host.label}
        )
        if diagnosis.kind == "gpu_health":
            keep |= {"gpu", "xid", "fault"}  # which GPU, which XID: what the page names
        for name in sorted(dict(diagnosis.labels).keys() & keep):
            scope.report(
                diagnosis.origin.path.child("labels", name),
                f"{diagnosis.name}: label {name!r} overwrites the {name} the diagnosis names",
            )


CHECK = Check(
    "label/conflict",
    "error",
    "a spec or alert label named like a label of the alert's series",
    run,
)
