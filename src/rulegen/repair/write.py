"""Writing the repair: the server's capabilities checked first, then, rule by rule in
group order, the rule's replacement computed and journaled, its old samples deleted, the
replacement written back.

Why delete: Prometheus keeps the first sample of a timestamp, so a rewritten value would be
ignored, and a sample written after a hole was computed from a window that lacked it. Why
``clean_tombstones``: deleted ranges are masked until cleaned, the re-written samples too.
Why rule by rule: a rule reads only the rules before it, so its replacement can be computed
(and stored in the journal) before a single one of its samples is deleted; at any instant at
most one rule's range is deleted, and the journal holds what goes back there. Why exact
deletes: a recording with more labels (the same rules' results remote-written from another
cluster) matches the SLO's own labels too; only the label sets the repair writes are deleted,
each named label by label and every other label present required empty. Why a probe series
first: a server without the admin API, without the remote-write receiver or with too short an
out-of-order window would otherwise refuse the writes after the deletion. The probe's samples
are staleness markers, invisible to every query: Prometheus does not delete samples of its
out-of-order head, so a probe with values would stay readable until compacted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial

from rulegen.backtest.report import rfc3339
from rulegen.core import promql
from rulegen.errors import UsageError
from rulegen.generated import RecordingRule
from rulegen.promapi.client import PostRefused, PrometheusAPI
from rulegen.repair.compute import Bridge, Labels, Samples, evaluate
from rulegen.repair.interpolate import bridged, reads_raw
from rulegen.repair.journal import Journal
from rulegen.repair.model import RawGap, Repair, SLOGroup
from rulegen.repair.plan import own, seconds
from rulegen.repair.remote import HEADERS, STALE_NAN, write_request

PROBE = "rulegen_repair_probe"
"""The series written and deleted again to check that the server takes old samples."""
MAX_SERIES_SAMPLES = 20_000  # samples per remote-write request


def check_server(client: PrometheusAPI, start_ms: int, end_ms: int) -> None:
    """One line, exit 2, nothing written, unless the server deletes series (admin API) and
    takes samples as old as ``start_ms`` after one at ``end_ms`` (remote-write receiver with
    an out-of-order window). The probe's samples are staleness markers (never read by a
    query) and are deleted again."""
    probe = f'{PROBE}{{job="rulegen"}}'
    try:
        client.post("admin/tsdb/delete_series", {"match[]": probe})
    except PostRefused as exc:
        raise UsageError(
            f"{client.url} does not let rulegen delete series (start Prometheus with "
            f"--web.enable-admin-api): {_reason(exc)}; nothing written"
        ) from None
    labels = {"__name__": PROBE, "job": "rulegen"}
    try:
        _write(client, [(labels, [(end_ms, STALE_NAN)])])
        _write(client, [(labels, [(start_ms, STALE_NAN)])])
    except PostRefused as exc:
        _drop_probe(client)
        if exc.status == 404:  # what 2.42 answers with the receiver off
            raise UsageError(
                f"{client.url} does not take remote writes (start Prometheus with "
                f"--web.enable-remote-write-receiver): {_reason(exc)}; nothing written"
            ) from None
        raise UsageError(
            f"{client.url} refuses samples as old as {rfc3339(start_ms)} (set storage: tsdb: "
            "out_of_order_time_window: in its configuration to more than the age of the "
            f"oldest hole): {_reason(exc)}; nothing written"
        ) from None
    _drop_probe(client)


def _drop_probe(client: PrometheusAPI) -> None:
    client.post("admin/tsdb/delete_series", {"match[]": f'{PROBE}{{job="rulegen"}}'})
    client.post("admin/tsdb/clean_tombstones", {})


def _reason(exc: UsageError) -> str:
    text = str(exc)
    return text.split(": ", 1)[1] if ": " in text else text


def _write(
    client: PrometheusAPI, series: list[tuple[dict[str, str], list[tuple[int, float]]]]
) -> None:
    client.post("write", {}, write_request(series), HEADERS)


def owned_names(rule: RecordingRule, group: SLOGroup) -> frozenset[str]:
    """The label names a series of ``rule`` recorded by the SLO's own group can carry: a
    series with any other label (``cluster``, added by the remote write that brought it
    from another server) is someone else's, never deleted or written."""
    return frozenset({"__name__", "service", "slo", *(k for k, _ in rule.labels), *group.group_by})


def exact_matchers(wanted: Iterable[Labels], present: Sequence[dict[str, str]]) -> list[str]:
    """One selector per label set of ``wanted`` that matches that series only among
    ``present`` (the series of the name in the range): each of its labels equal, and every
    other label name any present series carries required empty."""
    names = {name for labels in present for name in labels}
    out = []
    for labels in wanted:
        mine = dict(labels)
        matchers = [f"{promql.label_name(k)}={promql.quote(v)}" for k, v in sorted(mine.items())]
        matchers += [f'{promql.label_name(k)}=""' for k in sorted(names - mine.keys())]
        out.append("{" + ", ".join(matchers) + "}")
    return out


DELETE_BATCH = 50  # selectors per delete_series request


def _delete(client: PrometheusAPI, journal: Journal, index: int) -> list[Labels]:
    """Delete, over the repair's range, the samples of the series rule ``index`` rewrites
    that exist there: exactly those label sets (then clean the tombstones)."""
    repair = journal.repair
    rule = repair.group.recordings[index]
    span = (seconds(repair.start_ms), seconds(repair.end_ms))
    present = client.series(own(repair.group, rule.record), *span)
    existing = {tuple(sorted(labels.items())) for labels in present}
    wanted = [labels for labels in journal.series(index) if labels in existing]
    selectors = exact_matchers(wanted, present)
    for start in range(0, len(selectors), DELETE_BATCH):
        batch = selectors[start : start + DELETE_BATCH]
        client.post(
            "admin/tsdb/delete_series", {"match[]": batch, "start": span[0], "end": span[1]}
        )
    if selectors:
        client.post("admin/tsdb/clean_tombstones", {})
    return wanted


def _left(client: PrometheusAPI, repair: Repair, rule: RecordingRule, deleted: list[Labels]) -> int:
    """Samples the deletion left in the range: Prometheus does not delete samples of its
    out-of-order head (written by an earlier repair and not yet compacted into a block,
    about two hours), and ignores a second sample at their timestamps."""
    if not deleted:
        return 0
    span = f"[{repair.end_ms - repair.start_ms}ms] @ {seconds(repair.end_ms)}"
    found = client.query(f"count_over_time({own(repair.group, rule.record)}{span})")
    mine = {tuple(sorted((k, v) for k, v in labels if k != "__name__")) for labels in deleted}
    left = 0
    for series in found:
        if tuple(sorted(series.metric.items())) in mine:
            left += int(series.values[0][1])
    return left


def _write_back(client: PrometheusAPI, journal: Journal, index: int) -> int:
    """Write rule ``index``'s journaled replacement, in requests of at most
    ``MAX_SERIES_SAMPLES`` samples; the number written."""
    batch: list[tuple[dict[str, str], list[tuple[int, float]]]] = []
    size = written = 0
    for labels, samples in journal.samples(index):
        for start in range(0, len(samples), MAX_SERIES_SAMPLES):
            piece = samples[start : start + MAX_SERIES_SAMPLES]
            batch.append((dict(labels), piece))
            size += len(piece)
            written += len(piece)
            if size >= MAX_SERIES_SAMPLES:
                _write(client, batch)
                batch, size = [], 0
    if batch:
        _write(client, batch)
    return written


def apply(client: PrometheusAPI, journal: Journal) -> tuple[int, int]:
    """Rewrite the journal's repair rule by rule in group order, skipping the rules it
    records as written: compute and store the replacement, delete the old samples, write
    the replacement, mark it written. The number of samples written, and of samples the
    deletion could not remove (which keep their values). (``command`` turns a failure into
    the line that says what may be deleted and how to finish.)"""
    repair = journal.repair
    written = kept = 0
    for index, rule in enumerate(repair.group.recordings):
        if journal.written(index):
            continue
        if not journal.computed(index):
            chunks, owned = _replacement(client, journal, rule)  # a generator: lazy
            _journaled(journal, rule, partial(journal.store, index, chunks, owned))
        deleted = _delete(client, journal, index)
        kept += _left(client, repair, rule, deleted)
        written += _write_back(client, journal, index)
        _journaled(journal, rule, partial(journal.mark_written, index))
    return written, kept


def _replacement(
    client: PrometheusAPI, journal: Journal, rule: RecordingRule
) -> tuple[Iterator[Samples], frozenset[str]]:
    """``rule``'s replacement over the repair's range, chunk by chunk (raw gaps bridged),
    and the label names its series may carry."""
    repair, group = journal.repair, journal.repair.group
    bridge = _bridge(rule, group, repair.gaps) if repair.gaps and reads_raw(rule, group) else None
    span = (repair.start_ms, repair.end_ms)
    return evaluate(client, rule, span, group.interval_ms, bridge), owned_names(rule, group)


def _journaled(journal: Journal, rule: RecordingRule, write: Callable[[], None]) -> None:
    """A write to the journal; a disk that refuses it is one line, not a traceback."""
    try:
        write()
    except OSError as exc:
        raise UsageError(
            f"{journal.folder}: cannot write the repair's journal at {rule.record}: "
            f"{exc.strerror or exc}"
        ) from None


def _bridge(rule: RecordingRule, group: SLOGroup, gaps: tuple[RawGap, ...]) -> Bridge:
    """The bridged expression of ``rule`` at an instant whose window touches a raw gap."""

    def at(ms: int) -> str | None:
        return next(
            (e for g in gaps if (e := bridged(rule, group.base_ms, g, ms)) is not None), None
        )

    return at
