"""Which recordings to rewrite: each SLO's rule group, the holes in its base recording, and
the range of evaluations a hole affects.

Why the base recording: the group records it at every evaluation that happened (its value
reads raw series, and an empty one still leaves a stale marker), so an evaluation instant
without a sample is an evaluation Prometheus missed, and every longer window that reads that
instant, up to one SLO window (and a lookback) later, lacks its events.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

from rulegen import units
from rulegen.backtest.report import rfc3339
from rulegen.core import promql
from rulegen.errors import UsageError
from rulegen.generated import RecordingRule, SLOOutput
from rulegen.promapi.client import PrometheusAPI
from rulegen.repair.model import Hole, Repair, SLOGroup
from rulegen.slo.rules import TERMS, TOTAL

LOOKBACK_MS = 300_000  # Prometheus' default --query.lookback-delta
MAX_POINTS = 10_000  # points per range query, under the API's 11,000


def slo_group(service: str, slo: SLOOutput) -> SLOGroup:
    """The repair's view of one SLO's generated group: its windows read from the names."""
    recordings = tuple(r for r in slo.group.rules if isinstance(r, RecordingRule))
    totals = [r for r in recordings if r.record.startswith(TOTAL)]
    base_total = min(totals, key=lambda r: _window_ms(r.record, TOTAL))
    counts = [_window_ms(r.record, TERMS) for r in recordings if r.record.startswith(TERMS)]
    return SLOGroup(
        service, slo.name, int(slo.evaluation_interval_seconds * 1000),
        _window_ms(base_total.record, TOTAL), max(counts), recordings, base_total, slo.group_by,
    )  # fmt: skip


def _window_ms(record: str, prefix: str) -> int:
    return int(units.parse_duration(record[len(prefix) :]) * 1000)


def own(group: SLOGroup, metric: str) -> str:
    """A selector of the SLO's own series of ``metric``."""
    labels = f"service={promql.quote(group.service)}, slo={promql.quote(group.slo)}"
    return f"{metric}{{{labels}}}"


def grid(
    start_ms: int, end_ms: int, step_ms: int, points: int = MAX_POINTS
) -> list[tuple[int, int]]:
    """``[start, end]`` cut into range queries of at most ``points`` points each."""
    out = []
    while start_ms <= end_ms:
        last = min(end_ms, start_ms + (points - 1) * step_ms)
        out.append((start_ms, last))
        start_ms = last + step_ms
    return out


def seconds(ms: int) -> str:
    """Unix ms as the API's seconds (``1700000000.087``)."""
    return f"{ms // 1000}.{ms % 1000:03d}"


MAX_SPAN_EVALUATIONS = 1_000_000
"""The most evaluation instants one run scans per SLO (694 days of a 1-minute group, 115 days
of a 10-second one): the scan streams, but every slot is one point of a range query."""
LATE_EVALUATIONS = 3
"""Missing evaluations this close to now (plus a minute) may just be late, never a hole."""


def check_span(group: SLOGroup, span: tuple[int, int]) -> None:
    """One line, exit 2, for a span longer than ``MAX_SPAN_EVALUATIONS`` of ``group``."""
    count = (span[1] - span[0]) // group.interval_ms + 1
    if count > MAX_SPAN_EVALUATIONS:
        interval = units.format_duration(Decimal(group.interval_ms) / 1000)
        most = units.format_duration(Decimal(MAX_SPAN_EVALUATIONS * group.interval_ms) / 1000)
        raise UsageError(
            f"{group.name}: --from {rfc3339(span[0])} to {rfc3339(span[1])} is {count:,} "
            f"evaluations of its {interval} group, more than the {MAX_SPAN_EVALUATIONS:,} one "
            f"repair reads ({most}): give a later --from (default: one SLO window before --to)"
        )


def find_holes(
    client: PrometheusAPI, group: SLOGroup, span: tuple[int, int], now_ms: int
) -> list[Hole]:
    """Missed evaluations of ``group`` in ``span``: runs of interval-long slots without a
    base sample (or a sample of the group's last recording) after a slot with both (before
    the first the group was not deployed yet). A run that reaches the end of the span is a
    hole too where the raw series have data (an interrupted repair, or a group that stopped
    evaluating), except for its last slots within ``LATE_EVALUATIONS`` of ``now_ms``, where
    the group may just be late. The slots are read a range query at a time and only the
    runs are kept, so memory does not grow with the span."""
    step = group.interval_ms
    # ``[interval - 1ms]``: a range selector includes both ends, so each slot
    # ``(t - interval, t]`` holds exactly one evaluation of the group. The group's last
    # recording too: a repair cut short after the base level leaves it missing.
    base, final = (
        f"count(count_over_time({own(group, r.record)}[{step - 1}ms]))"
        for r in (group.base_total, group.recordings[-1])
    )
    expr = f"{base} and {final}"
    start = span[0] - span[0] % step
    runs: list[tuple[int, int]] = []
    first_missing: int | None = None
    started = False
    last_slot = start
    for first, last in grid(start, span[1], step):
        found = client.query_range(expr, seconds(first), seconds(last), f"{step / 1000:g}")
        seen = {round(t * 1000) for s in found for t, _ in s.values}
        for t in range(first, last + 1, step):
            last_slot = t
            if t in seen:
                if started and first_missing is not None:
                    runs.append((first_missing, t - step))
                started, first_missing = True, None
            elif started and first_missing is None:
                first_missing = t
    holes = [_hole(client, group, run) for run in runs]
    if first_missing is not None:
        trailing = _trailing(client, group, (first_missing, last_slot), now_ms)
        if trailing is not None:
            holes.append(_hole(client, group, trailing))
    return holes


def _trailing(
    client: PrometheusAPI, group: SLOGroup, run: tuple[int, int], now_ms: int
) -> tuple[int, int] | None:
    """The part of a run of empty slots reaching the end of the span that is a hole: up to
    the last slot where the raw series have data, and not within the late margin of now."""
    step = group.interval_ms
    last = min(run[1], now_ms - LATE_EVALUATIONS * step - 60_000)
    last -= (last - run[0]) % step
    if last < run[0]:
        return None
    newest: int | None = None
    for first, end in grid(run[0], last, step):
        found = client.query_range(
            f"count({group.base_total.expr})", seconds(first), seconds(end), f"{step / 1000:g}"
        )
        times = [round(t * 1000) for s in found for t, _ in s.values]
        newest = max(times, default=newest)
    if newest is None:
        return None
    return run[0], newest


def _hole(client: PrometheusAPI, group: SLOGroup, slots: tuple[int, int]) -> Hole:
    """The evaluation instants of a run of empty slots ``(t - interval, t]`` (its first and
    last slot): on the group's own phase, read from the timestamp of the last sample before
    them."""
    step = group.interval_ms
    before = slots[0] - step
    found = client.query(f"timestamp({own(group, group.base_total.record)})", before / 1000)
    if not found:
        raise UsageError(
            f"{group.name}: no {group.base_total.record} sample before {rfc3339(slots[0])}"
        )
    phase = round(found[0].values[0][1] * 1000) % step
    first = slots[0] - step + phase if phase else slots[0]
    last = slots[-1] - step + phase if phase else slots[-1]
    return Hole(first, last, step)


def repair_of(group: SLOGroup, holes: Sequence[Hole], end_ms: int) -> Repair | None:
    """The range to rewrite: from the first hole to where the last window reading one ends,
    on the group's grid, at most up to ``end_ms``."""
    if not holes:
        return None
    start = holes[0].first_ms
    reach = max(h.last_ms for h in holes) + group.window_ms + LOOKBACK_MS
    last = min(reach, end_ms)
    last -= (last - start) % group.interval_ms
    return Repair(group, tuple(holes), start, last)


def check_raw(client: PrometheusAPI, repair: Repair) -> None:
    """Every hole must be recoverable: the base window's raw read returns something in it."""
    group = repair.group
    for hole in repair.holes:
        step = f"{group.interval_ms / 1000:g}"
        expr = group.base_total.expr
        found = False
        for first, last in grid(hole.first_ms, hole.last_ms, group.interval_ms):
            if client.query_range(expr, seconds(first), seconds(last), step):
                found = True
                break
        if not found:
            raise UsageError(
                f"{group.name}: no raw data for the hole from {rfc3339(hole.first_ms)} to "
                f"{rfc3339(hole.last_ms)} ({group.base_total.record} reads nothing there: "
                "Prometheus did not scrape the raw series either); nothing written"
            )
