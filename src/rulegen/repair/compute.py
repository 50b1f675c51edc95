"""One recording rule re-evaluated over a range, as the rule manager would have recorded it.

Why range queries: a range query at step ``interval`` on the group's phase evaluates the
rule's own expression at each instant the group evaluates, on the server's engine, so the
value is the rule's (fallbacks, ``or``, extrapolation included). The recordings it reads
must already hold their repaired samples: the caller writes rule by rule, in group order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from rulegen.generated import RecordingRule
from rulegen.promapi.client import PrometheusAPI
from rulegen.repair.plan import grid, seconds
from rulegen.repair.remote import STALE_NAN

Labels = tuple[tuple[str, str], ...]
Samples = dict[Labels, list[tuple[int, float]]]
Bridge = Callable[[int], str | None]  # an instant (ms) → the expression to evaluate there


def recorded(labels: Mapping[str, str], rule: RecordingRule) -> Labels:
    """The labels the rule manager gives a result: its own minus the name, the rule's
    labels over them, the rule's name."""
    out = {k: v for k, v in labels.items() if k != "__name__"}
    out.update(rule.labels)
    out["__name__"] = rule.record
    return tuple(sorted(out.items()))


CHUNK_POINTS = 2_000
"""Evaluation instants per range query of a rule: what one chunk holds in memory (times the
series the rule records)."""


def evaluate(
    client: PrometheusAPI,
    rule: RecordingRule,
    span: tuple[int, int],
    step_ms: int,
    bridge: Bridge | None = None,
) -> Iterator[Samples]:
    """``rule``'s samples at every ``step_ms`` over ``span`` (ms, inclusive), a chunk of
    ``CHUNK_POINTS`` instants at a time, with a staleness marker where a series stops (an
    evaluation whose result lacks it, within the span). Where ``bridge`` gives another
    expression for an instant (a raw scrape gap), that instant is evaluated from it instead.
    Why chunks: a repair's range can be a whole SLO window of a 10-second group; one chunk
    at a time (written to the journal) keeps memory flat."""
    previous: set[Labels] = set()  # the series present at the last instant before the chunk
    for first, last in grid(*span, step_ms, CHUNK_POINTS):
        out = _chunk(client, rule, (first, last), step_ms, bridge)
        stopped = {k for k in previous if not (k in out and out[k][0][0] == first)}
        previous = set()
        for labels, samples in out.items():
            times = {t for t, _ in samples}
            stops = [t + step_ms for t in times if t + step_ms <= last and t + step_ms not in times]
            if last in times:
                previous.add(labels)
            samples.extend((t, STALE_NAN) for t in stops)
        for labels in stopped:
            out.setdefault(labels, []).append((first, STALE_NAN))
        for samples in out.values():
            samples.sort(key=lambda sample: sample[0])
        yield out


def _chunk(
    client: PrometheusAPI,
    rule: RecordingRule,
    span: tuple[int, int],
    step_ms: int,
    bridge: Bridge | None,
) -> Samples:
    first, last = span
    out: Samples = {}
    found = client.query_range(rule.expr, seconds(first), seconds(last), f"{step_ms / 1000:g}")
    for series in found:
        samples = out.setdefault(recorded(series.metric, rule), [])
        samples.extend((round(t * 1000), v) for t, v in series.values)
    for at in range(first, last + 1, step_ms):
        expr = bridge(at) if bridge is not None else None
        if expr is None:
            continue
        for samples in out.values():
            samples[:] = [(t, v) for t, v in samples if t != at]
        for series in client.query(expr, at / 1000):
            out.setdefault(recorded(series.metric, rule), []).append((at, series.values[0][1]))
    for samples in out.values():
        samples.sort(key=lambda sample: sample[0])
    return {labels: samples for labels, samples in out.items() if samples}
