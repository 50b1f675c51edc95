"""``rulegen repair``'s pure parts: the remote-write encoding, the range a hole needs, and the
base terms bridged across a raw scrape gap (the real server's answers are in
``test_slo_repair_prometheus.py``)."""

from __future__ import annotations

import struct

import pytest

from rulegen.core.diagnostics import FieldPath
from rulegen.generated import RecordingRule
from rulegen.repair.interpolate import bridged, reads_raw
from rulegen.repair.model import Hole, RawGap, SLOGroup
from rulegen.repair.plan import grid, repair_of, seconds
from rulegen.repair.remote import snappy_block, write_request
from rulegen.source.loader import Origin

MINUTE, WINDOW = 60_000, 300_000


def _unsnappy(block: bytes) -> bytes:
    """A literal-only snappy block decoded (the only kind ``snappy_block`` writes)."""
    length, shift, index = 0, 0, 0
    while True:
        byte = block[index]
        index += 1
        length |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            break
    out = bytearray()
    while index < len(block):
        tag = block[index]
        assert tag & 3 == 0  # a literal
        size = tag >> 2
        index += 1
        if size >= 60:
            extra = size - 59
            size = int.from_bytes(block[index : index + extra], "little")
            index += extra
        out += block[index : index + size + 1]
        index += size + 1
    assert len(out) == length
    return bytes(out)


@pytest.mark.parametrize("size", [0, 1, 60, 61, 256, 257, 65536, 65537, 200_000])
def test_snappy_blocks_round_trip(size: int) -> None:
    data = bytes(i % 251 for i in range(size))
    assert _unsnappy(snappy_block(data)) == data


def test_a_write_request_is_the_protobuf_prometheus_reads() -> None:
    body = _unsnappy(write_request([({"__name__": "a", "b": "c"}, [(1000, 1.0)])]))
    name = b"\x0a\x08__name__\x12\x01a"
    label_b = b"\x0a\x01b\x12\x01c"
    sample = b"\x09" + struct.pack("<d", 1.0) + b"\x10\xe8\x07"
    series = (
        b"\x0a" + bytes([len(name)]) + name + b"\x0a" + bytes([len(label_b)]) + label_b
        + b"\x12" + bytes([len(sample)]) + sample
    )  # fmt: skip
    assert body == b"\x0a" + bytes([len(series)]) + series


def _group() -> SLOGroup:
    total = RecordingRule(
        "slo:sli_total:increase5m",
        'sum(increase(x_total{job="a"}[5m]))',
        (),
        Origin("s", 1, 1, FieldPath()),
    )
    return SLOGroup("shop", "checkout", MINUTE, WINDOW, 86_400_000, (total,), total)


def test_a_hole_is_rewritten_up_to_one_window_and_a_lookback_after_it() -> None:
    group = _group()
    hole = Hole(10 * MINUTE, 69 * MINUTE, MINUTE)
    assert hole.evaluations == 60
    repair = repair_of(group, (hole,), 10**12)
    assert repair is not None
    assert (repair.start_ms, repair.end_ms) == (10 * MINUTE, 69 * MINUTE + 86_400_000 + WINDOW)
    # --to cuts it, on the group's grid
    cut = repair_of(group, (hole,), 100 * MINUTE + 30_000)
    assert cut is not None
    assert cut.end_ms == 100 * MINUTE
    assert repair_of(group, (), 10**12) is None


def test_range_queries_stay_under_the_points_limit() -> None:
    chunks = grid(0, 25_000 * MINUTE, MINUTE)
    assert chunks[0] == (0, 9_999 * MINUTE)
    assert chunks[-1][1] == 25_000 * MINUTE
    assert sum((b - a) // MINUTE + 1 for a, b in chunks) == 25_001
    assert seconds(1_700_000_000_087) == "1700000000.087"


def test_base_terms_are_bridged_across_a_raw_gap() -> None:
    group = _group()
    rule = group.base_total
    assert reads_raw(rule, group)
    gap = RawGap(60 * MINUTE, 120 * MINUTE)  # 1h without raw samples
    selector = 'x_total{job="a"}'
    whole = f"increase({selector}[3600000ms] @ 7200.000)"
    # untouched: before the gap, after its window, and a window holding both sides
    assert bridged(rule, WINDOW, gap, 60 * MINUTE) is None
    assert bridged(rule, WINDOW, gap, 125 * MINUTE) is None
    assert bridged(rule, WINDOW, RawGap(60 * MINUTE, 62 * MINUTE), 64 * MINUTE) is None
    # inside: the gap's increase in proportion
    assert bridged(rule, WINDOW, gap, 90 * MINUTE) == f"sum (({whole} * {5 / 60!r}))"
    # straddling its start: the real increase before it, plus the part inside
    before = f"increase({selector}[120000ms] @ 3600.000)"
    part = f"({whole} * {3 / 60!r})"
    assert bridged(rule, WINDOW, gap, 63 * MINUTE) == f"sum ((({before} + {part}) or {part}))"
    # straddling its end: the part inside, plus the real increase after it
    after = f"increase({selector}[120000ms] @ 7320.000)"
    assert bridged(rule, WINDOW, gap, 122 * MINUTE) == f"sum ((({after} + {part}) or {part}))"


def _stepped_group() -> SLOGroup:
    """The Prometheus 3 base form of ``_group``'s total: five one-minute steps."""
    x = 'x_total{job="a"}'

    def step(i: int) -> str:
        now = f"{x} offset {i}m" if i else x
        before = f"{x} offset {i + 1}m"
        added = f"{now} - {before} >= 0 or {now} < {before}"
        return f'label_replace({added}, "slo_step", "{i}", "", "")'

    expr = "sum(\n" + "\n  or\n".join(step(i) for i in range(5)) + "\n)"
    total = RecordingRule("slo:sli_total:increase5m", expr, (), Origin("s", 1, 1, FieldPath()))
    return SLOGroup("shop", "checkout", MINUTE, WINDOW, 86_400_000, (total,), total)


def _added(start_s: int, end_s: int) -> str:
    now, before = f'x_total{{job="a"}} @ {end_s}.000', f'x_total{{job="a"}} @ {start_s}.000'
    return f"({now} - {before} >= 0 or {now} < {before})"


def test_prometheus_3_steps_are_bridged_across_a_raw_gap() -> None:
    group = _stepped_group()
    rule = group.base_total
    assert reads_raw(rule, group)
    gap = RawGap(60 * MINUTE, 120 * MINUTE)
    whole = _added(3600, 7200)
    assert bridged(rule, WINDOW, gap, 60 * MINUTE) is None
    assert bridged(rule, WINDOW, gap, 125 * MINUTE) is None
    assert bridged(rule, WINDOW, RawGap(60 * MINUTE, 62 * MINUTE), 64 * MINUTE) is None
    # inside the gap: every step one minute of the gap's increase, tags kept
    text = bridged(rule, WINDOW, gap, 90 * MINUTE)
    assert text is not None
    part = f"({whole} * {1 / 60!r})"
    assert text.count(part) == 5
    assert text.count('"slo_step"') == 5
    assert "offset" not in text
    # straddling its start at 62m: steps (61m, 62m] and (60m, 61m] in the gap, the three
    # before it read as they are
    text = bridged(rule, WINDOW, gap, 62 * MINUTE)
    assert text is not None
    assert text.count(part) == 2
    assert text.count("offset") == 3 * 4
    # a step across the gap's start: the real part before it plus the part inside
    half = RawGap(60 * MINUTE + 30_000, 120 * MINUTE)
    text = bridged(rule, WINDOW, half, 61 * MINUTE)
    assert text is not None
    inside = f"({_added(3630, 7200)} * {30 / 3570!r})"
    assert f"(({_added(3600, 3630)} + {inside}) or {inside})" in text
    # and across its end
    text = bridged(rule, WINDOW, RawGap(60 * MINUTE, 120 * MINUTE + 30_000), 121 * MINUTE)
    assert text is not None
    inside = f"({_added(3600, 7230)} * {30 / 3630!r})"
    assert f"(({_added(7230, 7260)} + {inside}) or {inside})" in text


def test_a_difference_of_two_counters_is_not_a_step() -> None:
    rule = RecordingRule(
        "r",
        "sum(a offset 1m - b offset 2m >= 0 or a offset 1m < b offset 2m)",
        (),
        Origin("s", 1, 1, FieldPath()),
    )
    group = SLOGroup("shop", "checkout", MINUTE, WINDOW, 86_400_000, (rule,), rule)
    assert not reads_raw(rule, group)
