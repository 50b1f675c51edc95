"""``rulegen repair``'s pure parts: the remote-write encoding, the range a hole needs, and the
base terms bridged across a raw scrape gap (the real server's answers are in
``test_slo_repair_prometheus.py``)."""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path

import pytest

from rulegen.core.diagnostics import FieldPath
from rulegen.errors import UsageError
from rulegen.generated import RecordingRule
from rulegen.repair.compute import Labels, Samples
from rulegen.repair.interpolate import bridged, reads_raw
from rulegen.repair.journal import Journal
from rulegen.repair.model import Hole, RawGap, Repair, SLOGroup
from rulegen.repair.plan import grid, repair_of, seconds
from rulegen.repair.remote import STALE_NAN, snappy_block, write_request
from rulegen.repair.write import exact_matchers
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


# --- the journal and the exact deletes ---------------------------------------------------------


def _journal(tmp_path: Path) -> Journal:
    group = _group()
    repair = Repair(group, (Hole(10 * MINUTE, 11 * MINUTE, MINUTE),), 10 * MINUTE, 20 * MINUTE,
                    (RawGap(9 * MINUTE, 12 * MINUTE),))  # fmt: skip
    return Journal.create(tmp_path, repair)


LABELS: Labels = (
    ("__name__", "slo:sli_total:increase5m"), ("service", "shop"), ("slo", "checkout"),
)  # fmt: skip


def test_a_journal_round_trips_its_plan_and_samples(tmp_path: Path) -> None:
    journal = _journal(tmp_path)
    assert journal.folder == tmp_path / "shop.checkout"
    found = Journal.find(tmp_path, _group())
    assert found is not None
    assert found.repair == journal.repair
    assert not journal.computed(0)
    samples = [(10 * MINUTE, 1.5), (11 * MINUTE, 0.1 + 0.2), (12 * MINUTE, STALE_NAN)]
    other: Labels = (*LABELS, ("cluster", "b"))
    chunks: list[Samples] = [
        {LABELS: samples[:2]},
        {LABELS: samples[2:], other: [(10 * MINUTE, 9.0)]},
    ]
    journal.store(0, iter(chunks), frozenset({"__name__", "service", "slo"}))
    assert journal.computed(0)
    assert journal.series(0) == [LABELS]  # the one with another label is not the SLO's
    back = list(journal.samples(0))
    assert [labels for labels, _ in back] == [LABELS, LABELS]
    values = [v for _, chunk in back for _, v in chunk]
    assert values[:2] == [1.5, 0.1 + 0.2]
    assert struct.pack("<d", values[2]) == struct.pack("<d", STALE_NAN)
    journal.mark_written(0)
    assert journal.written(0)
    (journal.folder / "notes.txt").write_text("the user's")
    journal.remove()
    assert Journal.find(tmp_path, _group()) is None
    assert sorted(p.name for p in journal.folder.iterdir()) == ["notes.txt"]


DAMAGED = [
    ("plan.json", b"{",
     "plan.json: the journal of an interrupted repair of shop/checkout is damaged: unreadable"),
    ("plan.json", b'{"format": 9}', "damaged: not a journal of this rulegen"),
    ("plan.json", b'{"format": 1, "start_ms": 1.5}', "damaged: start_ms is not a whole number"),
    ("plan.json", b'{"format": 1, "start_ms": 0, "end_ms": 60000, "holes": [[2, 1]], "gaps": []}',
     "damaged: holes is not a list of [start, end] pairs"),
    ("plan.json", b'{"format": 1, "start_ms": 0, "end_ms": 60001, "holes": [], "gaps": []}',
     "damaged: start_ms to end_ms is not a range of the group's evaluations"),
    ("plan.json", b'{"format": 1, "start_ms": 0, "end_ms": 60000, "holes": [], "gaps": [], '
     b'"service": "shop", "slo": "checkout", "rules": "0"}',
     "was made for other rules than the specs give now"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "body", "message"), DAMAGED, ids=[c[2][-40:] for c in DAMAGED])
def test_a_damaged_plan_is_one_line(tmp_path: Path, name: str, body: bytes, message: str) -> None:
    journal = _journal(tmp_path)
    (journal.folder / name).write_bytes(body)
    with pytest.raises(UsageError) as raised:
        Journal.find(tmp_path, _group())
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda b: b.replace(b"1.5", b"2.5"), "does not match the hash its index records"),
        (lambda b: b[:-1], "does not match the hash its index records"),
    ],
    ids=["a value changed", "cut short"],
)  # fmt: skip
def test_a_tampered_samples_file_is_refused_before_anything_is_read(
    tmp_path: Path, edit: Callable[[bytes], bytes], message: str
) -> None:
    journal = _journal(tmp_path)
    journal.store(
        0, iter([{LABELS: [(10 * MINUTE, 1.5)]}]), frozenset({"__name__", "service", "slo"})
    )
    path = journal.folder / "rule-000.samples"
    path.write_bytes(edit(path.read_bytes()))
    with pytest.raises(UsageError) as raised:
        list(journal.samples(0))
    assert message in str(raised.value)
    assert "remove " in str(raised.value)


def test_exact_matchers_exclude_the_same_series_with_more_labels() -> None:
    present = [dict(LABELS), {**dict(LABELS), "cluster": "b"}, {**dict(LABELS), "k8s.pod": "x"}]
    assert exact_matchers([LABELS], present) == [
        '{__name__="slo:sli_total:increase5m", service="shop", slo="checkout", cluster="", '
        '"k8s.pod"=""}'
    ]
