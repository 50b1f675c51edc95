"""Writing the repair: the server's capabilities checked first, then deletion of the
recordings the holes affect, then every recording re-evaluated and written back in order.

Why delete: Prometheus keeps the first sample of a timestamp, so a rewritten value would be
ignored, and a sample written after a hole was computed from a window that lacked it. Why
``clean_tombstones``: deleted ranges are masked until cleaned, the re-written samples too.
Why a probe series first: a server without the admin API, without the remote-write receiver
or with too short an out-of-order window would otherwise refuse the writes after the
deletion, leaving the SLO with less than it had.
"""

from __future__ import annotations

from rulegen.backtest.report import rfc3339
from rulegen.errors import UsageError
from rulegen.generated import RecordingRule
from rulegen.promapi.client import PostRefused, PrometheusAPI
from rulegen.repair.compute import Bridge, evaluate
from rulegen.repair.interpolate import bridged, reads_raw
from rulegen.repair.model import RawGap, Repair, SLOGroup
from rulegen.repair.plan import own, seconds
from rulegen.repair.remote import HEADERS, write_request

PROBE = "rulegen_repair_probe"
"""The series written and deleted again to check that the server takes old samples."""
MAX_SERIES_SAMPLES = 20_000  # samples per remote-write request


def check_server(client: PrometheusAPI, start_ms: int, end_ms: int) -> None:
    """One line, exit 2, nothing written, unless the server deletes series (admin API) and
    takes samples as old as ``start_ms`` after one at ``end_ms`` (remote-write receiver with
    an out-of-order window)."""
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
        _write(client, [(labels, [(end_ms, 0.0)])])
        _write(client, [(labels, [(start_ms, 0.0)])])
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


def _left(client: PrometheusAPI, repair: Repair) -> int:
    """Samples the deletion left in the range: Prometheus 2.42 does not delete samples of
    its out-of-order head (written by an earlier repair and not yet compacted into a block,
    about two hours), and ignores a second sample at their timestamps. One query per name:
    ``count_over_time`` drops the name, and two names with the same labels would clash."""
    span = f"[{repair.end_ms - repair.start_ms}ms] @ {seconds(repair.end_ms)}"
    left = 0
    for name in sorted({r.record for r in repair.group.recordings}):
        found = client.query(f"sum(count_over_time({own(repair.group, name)}{span}))")
        left += int(found[0].values[0][1]) if found else 0
    return left


def apply(client: PrometheusAPI, repair: Repair) -> tuple[int, int]:
    """Delete the SLO's recordings over the repair's range and write them again, rule by
    rule in group order; the number of samples written, and of samples the deletion could
    not remove (which keep their values)."""
    group = repair.group
    names = sorted({r.record for r in group.recordings})
    match = own(group, "").replace("{", '{__name__=~"' + "|".join(names) + '", ', 1)
    client.post(
        "admin/tsdb/delete_series",
        {"match[]": match, "start": seconds(repair.start_ms), "end": seconds(repair.end_ms)},
    )
    client.post("admin/tsdb/clean_tombstones", {})
    kept = _left(client, repair)
    written = 0
    for rule in group.recordings:
        bridge = None
        if repair.gaps and reads_raw(rule, group):
            bridge = _bridge(rule, group, repair.gaps)
        span = (repair.start_ms, repair.end_ms)
        found = evaluate(client, rule, span, group.interval_ms, bridge)
        batch: list[tuple[dict[str, str], list[tuple[int, float]]]] = []
        size = 0
        for labels, samples in sorted(found.items()):
            for index in range(0, len(samples), MAX_SERIES_SAMPLES):
                piece = samples[index : index + MAX_SERIES_SAMPLES]
                batch.append((dict(labels), piece))
                size += len(piece)
                if size >= MAX_SERIES_SAMPLES:
                    _write(client, batch)
                    batch, size = [], 0
                written += len(piece)
        if batch:
            _write(client, batch)
    return written, kept


def _bridge(rule: RecordingRule, group: SLOGroup, gaps: tuple[RawGap, ...]) -> Bridge:
    """The bridged expression of ``rule`` at an instant whose window touches a raw gap."""

    def at(ms: int) -> str | None:
        return next(
            (e for g in gaps if (e := bridged(rule, group.base_ms, g, ms)) is not None), None
        )

    return at
