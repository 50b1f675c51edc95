"""Both versions of every changed, added or removed alert, replayed over a Prometheus's history.

Why only those: an unchanged alert has the same rule (and recordings) in both versions, so
both replays would be the same; replaying it would only cost queries, and a fleet has
thousands. The replay itself is ``rulegen backtest``'s (``replay_build``): the rules of each
version are evaluated over the same raw series, so the difference is the edit's alone.
"""

from __future__ import annotations

from dataclasses import replace

from rulegen.backtest.query import Client
from rulegen.backtest.report import rfc3339
from rulegen.backtest.session import replay_build
from rulegen.diff.compare import changed_keys
from rulegen.diff.facts import AlertKey
from rulegen.diff.model import Diff, History
from rulegen.diff.versions import Version

Where = tuple[str, AlertKey]  # (service, alert)


def backtest_diff(
    diff: Diff, old: Version, new: Version, client: Client, span: tuple[int, int]
) -> None:
    """Fill in ``old``/``new`` of every alert that is not unchanged, and the diff's range."""
    wanted = {(service, alert.key) for service, alert in changed_keys(diff)}
    before = _replay(client, old, wanted, span, diff.warnings)
    after = _replay(client, new, wanted, span, diff.warnings)
    for service, alert in changed_keys(diff):
        alert.old = before.get((service, alert.key))
        alert.new = after.get((service, alert.key))
        alert.replayed = True
    diff.span = span


def _replay(
    client: Client,
    version: Version,
    wanted: set[Where],
    span: tuple[int, int],
    warnings: list[str],
) -> dict[Where, History]:
    """The replay of ``version``'s alerts among ``wanted``, by service and alert."""
    index: dict[tuple[str, str, tuple[tuple[str, str], ...]], Where] = {}
    for service, facts in version.facts.items():
        for key, alert in facts.alerts.items():
            if (service, key) in wanted:
                index[(key.alert, alert.group, alert.labels)] = (service, key)
    if not index:
        return {}
    services = {service for service, _ in index.values()}
    result = replace(
        version.result, services=[s for s in version.result.services if s.service in services]
    )
    names = sorted({alert for alert, _, _ in index})
    out: dict[Where, History] = {}
    for report in replay_build(client, result, span, alerts=names):
        target = report.target
        where = index.get((target.alert, target.group, target.labels))
        if where is None:
            continue  # an unchanged alert of the same name
        own = {name for name, _ in target.labels}
        label_sets = frozenset(
            tuple(pair for pair in labels if pair[0] not in own) for labels in report.summaries
        )
        summaries = report.summaries.values()
        out[where] = History(
            sum(len(s.episodes) for s in summaries), sum(s.firing_ms for s in summaries),
            label_sets,
        )  # fmt: skip
        title = f"{version.label}: {where[1].title()} ({where[0]})"
        if report.warning:
            warnings.append(f"{title}: {report.warning}")
        if report.partial_until is not None and report.history_from is not None:
            warnings.append(
                f"{title}: partial before {rfc3339(min(report.partial_until, span[1]))}: the "
                f"server's history starts at {rfc3339(report.history_from)}, later than the "
                "rules' windows reach back"
            )
    return out
