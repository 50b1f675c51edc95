"""Two versions' facts → a ``Diff``: per service and alert, added, removed, changed or unchanged.

Why pure: the whole decision of what changed is here, on plain facts, so it is table-tested
without git, promtool or a server; the command only gathers the facts and prints the result.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from rulegen.diff.facts import OUTSIDE_EXPR, AlertFacts, AlertKey, ServiceFacts
from rulegen.diff.model import CHANGES, AlertDiff, Change, Diff, FieldChange, Names, ServiceDiff


def compare(old: Mapping[str, ServiceFacts], new: Mapping[str, ServiceFacts], base: str) -> Diff:
    """The diff of every service of both versions, services by name."""
    services = [_service(name, old.get(name), new.get(name)) for name in sorted({*old, *new})]
    return Diff(base, services)


def _service(name: str, old: ServiceFacts | None, new: ServiceFacts | None) -> ServiceDiff:
    before = old.alerts if old else {}
    after = new.alerts if new else {}
    alerts = [_alert(key, before.get(key), after.get(key)) for key in {*before, *after}]
    order = {change: index for index, change in enumerate(CHANGES)}
    alerts.sort(key=lambda a: (order[a.change], a.key))
    recordings = _names(_by_name(old), _by_name(new))
    panels = _names(old.panels if old else {}, new.panels if new else {})
    dashboard = (old.dashboard if old else None) != (new.dashboard if new else None)
    change: Change = "added" if old is None else "removed" if new is None else "unchanged"
    if change == "unchanged" and (
        recordings or panels or dashboard or any(a.change != "unchanged" for a in alerts)
    ):
        change = "changed"
    return ServiceDiff(name, change, alerts, recordings, panels, dashboard)


def _by_name(facts: ServiceFacts | None) -> dict[str, tuple[str, ...]]:
    """Recording rules by name (labels included), every definition of one name together."""
    out: dict[str, list[str]] = {}
    for key, expr in (facts.recordings if facts else {}).items():
        out.setdefault(_recording_name(key), []).append(expr)
    return {name: tuple(sorted(exprs)) for name, exprs in out.items()}


def _recording_name(key: tuple[str, str, tuple[tuple[str, str], ...]]) -> str:
    """``record``, with its labels besides ``service``: what a reviewer recognises."""
    _, record, labels = key
    shown = [f"{k}={v}" for k, v in labels if k != "service"]  # the service is the block's
    return record + "{" + ", ".join(shown) + "}" if shown else record


def _names(old: Mapping[str, object], new: Mapping[str, object]) -> Names:
    """Added, removed and changed names, each sorted."""
    return Names(
        tuple(sorted(set(new) - set(old))),
        tuple(sorted(set(old) - set(new))),
        tuple(sorted(n for n in set(old) & set(new) if old[n] != new[n])),
    )


def _alert(key: AlertKey, old: AlertFacts | None, new: AlertFacts | None) -> AlertDiff:
    if old is None or new is None:
        present = new if old is None else old
        assert present is not None
        fields = tuple(
            FieldChange(name, None if old is None else value, value if old is None else None)
            for name, value in present.fields.items()
        )
        return AlertDiff(key, "added" if old is None else "removed", fields)
    names = merged_order(list(old.fields), list(new.fields))
    changes = [
        FieldChange(name, old.fields.get(name), new.fields.get(name))
        for name in names
        if old.compared(name) != new.compared(name)
    ]
    if old.definition != new.definition and not any(_shapes_expr(c.name) for c in changes):
        # no field explains it: a signal definition (or rulegen) changed the rule, or only a
        # recording it reads; then the values include those recordings
        same = old.expr == new.expr
        before, after = (old.definition, new.definition) if same else (old.expr, new.expr)
        changes.append(FieldChange("expr", before, after))
    return AlertDiff(key, "changed" if changes else "unchanged", tuple(changes))


def _shapes_expr(name: str) -> bool:
    """Whether a field's change can explain a change of the alert's expression."""
    return name not in OUTSIDE_EXPR and not name.startswith(("labels.", "annotations."))


def merged_order(old: Sequence[str], new: Sequence[str]) -> list[str]:
    """Every name of both lists: the new order, a name only in ``old`` placed after the name
    it followed there (so a removed ``window`` stays next to ``threshold``)."""
    out = list(new)
    for index, name in enumerate(old):
        if name in out:
            continue
        before = next((out.index(p) + 1 for p in reversed(old[:index]) if p in out), 0)
        out.insert(before, name)
    return out


def changed_keys(diff: Diff) -> Iterable[tuple[str, AlertDiff]]:
    """Every alert that is not unchanged, with its service: what a backtest replays."""
    for service in diff.services:
        for alert in service.alerts:
            if alert.change != "unchanged":
                yield service.service, alert
