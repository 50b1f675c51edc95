"""``ha:`` → ``alertmanager/prometheus-alerting.yml``: the ``alerting:`` block every replica
of a Prometheus HA pair merges into its ``prometheus.yml``.

Why: the replicas evaluate the same rules on the same series and send the same alerts to
every Alertmanager peer, told apart only by their replica external label (Prometheus adds
its external labels to each alert it sends). Alertmanager knows an alert by its labels, so
without this block it holds one alert a replica: the group notifies again when the second
copy arrives, and a replica's restart resolves its copy. ``alert_relabel_configs`` run after
the external labels are added; a ``labeldrop`` of the replica label there makes the copies
one alert, and inhibitions, grouping and the notification log treat them as one.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rulegen.core.versions import PrometheusVersion
from rulegen.errors import Diagnostic
from rulegen.generated import AlertRule, ReplicaLabel, ServiceOutput
from rulegen.source.loader import Origin

FILE = "alertmanager/prometheus-alerting.yml"
DOCS = "docs/routing.md#high-availability"
# RE2's metacharacters: what Go's regexp.QuoteMeta escapes (a UTF-8 replica label of
# Prometheus 3, ``k8s.replica``, must match its dot literally).
_META = frozenset("\\.+*?()|[]{}^$")


def declared(services: Sequence[ServiceOutput]) -> list[tuple[ServiceOutput, ReplicaLabel]]:
    """The services whose spec declares ``ha``, with their replica label."""
    return [(s, s.ha) for s in services if s.ha is not None]


def quote_meta(text: str) -> str:
    """``text`` as an RE2 regex matching exactly it (Go's ``regexp.QuoteMeta``)."""
    return "".join("\\" + c if c in _META else c for c in text)


def alerting_block(labels: Sequence[str]) -> dict[str, Any]:
    """The ``alerting:`` block: one ``labeldrop`` of every replica label (an alternation
    when the specs declare several: one file serves every HA pair of the fleet)."""
    regex = "|".join(quote_meta(name) for name in sorted(set(labels)))
    drop = {"action": "labeldrop", "regex": regex}
    return {"alerting": {"alert_relabel_configs": [drop]}}


def comment(found: Sequence[tuple[PrometheusVersion, ReplicaLabel]]) -> str:
    """The lines after the header: what the file is for, how to merge it, what it needs
    beside it (the values of the replica label, every Alertmanager peer listed); ``found``:
    each declaring service's Prometheus version and replica label."""
    versions = " and ".join(str(v) for v in sorted({version for version, _ in found}))
    names = ", ".join(sorted({label.name for _, label in found}))
    text = (
        f"The alerting block of prometheus.yml for each replica of a Prometheus {versions} HA "
        f"pair (ha.replica_label: {names}). Merge it into every replica's prometheus.yml, "
        "whose global.external_labels give the replica label a value of its own (a, b): it "
        "drops that label from the alerts the replicas send, so that Alertmanager takes "
        "their copies of an alert for one. List every Alertmanager peer under "
        f"alerting.alertmanagers, not a load balancer ({DOCS})."
    )
    lines = textwrap.wrap(text, width=92, break_on_hyphens=False, break_long_words=False)
    return "".join(f"# {line}\n" for line in lines)


# One label an alert sets: (its name, the alert's name, where the alert is written).
LabelUse = tuple[str, str, Origin]


def label_uses(service: ServiceOutput) -> tuple[LabelUse, ...]:
    """Every label the service's alerts set: what ``carried`` reads, kept beside a packed
    service (so no service is unpacked for it)."""
    return tuple(
        (key, rule.alert, rule.origin) for rule in _alerts(service) for key, _ in rule.labels
    )


def dropped_labels(labels: Sequence[ReplicaLabel]) -> dict[str, ReplicaLabel]:
    """Each replica label the file drops, with the first declaration of it."""
    dropped: dict[str, ReplicaLabel] = {}
    for label in labels:
        dropped.setdefault(label.name, label)
    return dropped


def carried(uses: Iterable[LabelUse], dropped: Mapping[str, ReplicaLabel]) -> list[Diagnostic]:
    """The alerts of the HA services (``uses``: the labels they set) that carry a label the
    file drops (``dropped``: another spec's replica label, or one a custom alert or a label
    of its own sets): an error at the alert, naming where the replica label is declared."""
    out: list[Diagnostic] = []
    for key, alert, origin in uses:
        if key in dropped:
            where = dropped[key].origin.where()
            out.append(
                origin.diagnostic(
                    f"{alert} carries the label {key!r}, which ha.replica_label "
                    f"({where}) drops from every alert the replicas send: rename one"
                )
            )
    return out


def _alerts(service: ServiceOutput) -> list[AlertRule]:
    groups = [*service.groups, *(slo.group for slo in service.slos)]
    return [rule for group in groups for rule in group.rules if isinstance(rule, AlertRule)]
