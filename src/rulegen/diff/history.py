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
from rulegen.backtest.targets import Report
from rulegen.diff.compare import changed_keys
from rulegen.diff.facts import AlertKey
from rulegen.diff.model import Diff, History
from rulegen.diff.versions import Version

Where = tuple[str, AlertKey]  # (service, alert)


def backtest_diff(
    diff: Diff, old: Version, new: Version, client: Client, span: tuple[int, int],
    *, with_quantity: bool = False,
) -> dict[Where, tuple[Report | None, Report | None]]:  # fmt: skip
    """Fill in ``old``/``new`` of every alert that is not unchanged, and the diff's range;
    return both replays of each (with what a picture draws when ``with_quantity``)."""
    wanted = {(service, alert.key) for service, alert in changed_keys(diff)}
    before = _replay(client, old, wanted, span, diff.warnings, with_quantity)
    after = _replay(client, new, wanted, span, diff.warnings, with_quantity)
    replays: dict[Where, tuple[Report | None, Report | None]] = {}
    for service, alert in changed_keys(diff):
        where = (service, alert.key)
        old_one, new_one = before.get(where), after.get(where)
        alert.old = old_one[0] if old_one else None
        alert.new = new_one[0] if new_one else None
        alert.replayed = True
        replays[where] = (old_one[1] if old_one else None, new_one[1] if new_one else None)
    diff.span = span
    return replays


def _replay(
    client: Client,
    version: Version,
    wanted: set[Where],
    span: tuple[int, int],
    warnings: list[str],
    with_quantity: bool,
) -> dict[Where, tuple[History, Report]]:
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
    out: dict[Where, tuple[History, Report]] = {}
    for report in replay_build(client, result, span, alerts=names, with_quantity=with_quantity):
        target = report.target
        where = index.get((target.alert, target.group, target.labels))
        if where is None:
            continue  # an unchanged alert of the same name
        own = {name for name, _ in target.labels}
        label_sets = frozenset(
            tuple(pair for pair in labels if pair[0] not in own) for labels in report.summaries
        )
        summaries = report.summaries.values()
        history = History(
            sum(len(s.episodes) for s in summaries), sum(s.firing_ms for s in summaries),
            label_sets,
        )  # fmt: skip
        out[where] = (history, report)
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
