"""Backtest pictures read back from their SVG: the spec's units and words, one firing span per
episode per label set at its times, pending spans where ``for`` delays firing, a legend of the
labels that differ; an SLO alert's burn rates against its tiers (a diff's pictures:
``tests/diff/test_diff_plots.py``).

The replays are built here in Python (the replay itself is proven against promtool in
``test_backtest_promtool``), so these tests need no server and take well under a second
each. Every span is found by the id the drawing gives it (``firing:<row>:<n>``) and its
edges are turned back into times through the timeline's own box: a span drawn at the wrong
time fails, not only a missing one.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path

import pytest
from support.svgplot import MINUTE, SVG, close, comparison, replayed_report, spans_of, svg

from rulegen.backtest import plot
from rulegen.backtest.picture import (
    Scale,
    Span,
    backtest_picture,
    choose,
    points,
    scale_for,
    split_labels,
    state_spans,
    threshold_text,
    title_of,
)
from rulegen.backtest.replay import Labels, flap_window, replay, summarize
from rulegen.backtest.report import write_plots
from rulegen.backtest.targets import Burn, Report, Target, TierLine
from rulegen.generated import Comparison, Expression, Threshold, ThresholdUnit

T0 = 1767225600_000  # 2026-01-01T00:00:00Z
STEP = 15_000
SPAN = (T0, T0 + 180 * MINUTE)
DISK_RULE = (("service", "deepseek-v4"), ("severity", "warning"), ("team", "storage"))
HOST = (("instance", "gpu-node-1:9100"), ("job", "node"))
# (device, await while high, [(first minute, last minute + 1)]): docs/backtest.md's example
DISKS = (
    ("nvme0n1", 0.008, ((30, 60), (120, 123))),
    ("nvme1n1", 0.007, ((40, 75), (140, 160))),
    ("nvme2n1", 0.004, ((50, 90),)),
    ("nvme3n1", 0.003, ((60, 105),)),
)


def disk_report(disks: Sequence[tuple[str, float, Sequence[tuple[int, int]]]] = DISKS) -> Report:
    compared = comparison(
        ">", "0.005", "duration", "instance_device:node_disk_await_seconds:rate1m"
    )
    target = Target("DiskAwaitHigh", "deepseek-v4-node", "x > 0.005", 5 * MINUTE, STEP,
                    DISK_RULE, comparison=compared, condition=compared,
                    subject="await")  # fmt: skip
    times = list(range(T0 - 6 * MINUTE, SPAN[1] + 1, STEP))
    quantity: dict[Labels, dict[int, float]] = {}
    for index, (device, high, stretches) in enumerate(disks):
        labels = (("__name__", "instance_device:node_disk_await_seconds:rate1m"),
                  ("device", device), *HOST)  # fmt: skip
        samples = {}
        for t in times:
            minute = (t - T0) / MINUTE
            inside = any(first <= minute < last for first, last in stretches)
            samples[t] = high if inside else 0.0025 + 0.0004 * math.sin(minute / 6 + index)
        quantity[labels] = samples
    return replayed_report(target, quantity, times, SPAN, lambda v: v > 0.005)


# --- the disk example ------------------------------------------------------------------------


def test_units_title_and_threshold_as_the_spec_writes_them(tmp_path: Path) -> None:
    read = svg(backtest_picture(disk_report()), tmp_path)
    texts = read.texts()
    assert "DiskAwaitHigh: await above 5ms for 5m" in texts
    assert texts.count("5ms") == 2  # the threshold's label and the 5 ms tick
    group = read.group("threshold-text:0")
    assert group is not None
    assert "".join(group.itertext()).strip() == "5ms"
    ticks = [t for t in texts if re.fullmatch(r"[0-9.]+ms", t)]
    assert {"0ms", "8ms"} <= set(ticks)  # the axis in ms, not 0.008
    assert not any(re.fullmatch(r"0\.00[0-9]+", t) for t in texts)


def test_one_firing_span_per_episode_per_label_set_at_its_times(tmp_path: Path) -> None:
    """nvme0n1 is above 5ms from 00:30 to 01:00: pending 5m, firing from 00:35 until the first
    evaluation below (01:00); its three minutes at 02:00 stay pending. nvme1n1 fires twice.
    The disks at 4 and 3 ms get no row."""
    report = disk_report()
    read = svg(backtest_picture(report), tmp_path)
    assert read.rows() == ["device=nvme0n1", "device=nvme1n1"]
    assert close(spans_of(read, 0, "firing"), [(35, 60)])
    assert close(spans_of(read, 0, "pending"), [(30, 35), (120, 123)])
    assert close(spans_of(read, 1, "firing"), [(45, 75), (145, 160)])
    assert close(spans_of(read, 1, "pending"), [(40, 45), (140, 145)])
    assert not read.ids(r"(firing|pending):[23]:\d+")
    # the same episodes as the replay's report
    episodes = sorted(
        ((e.start - T0) / MINUTE, (e.end - T0) / MINUTE)
        for s in report.summaries.values() for e in s.episodes if e.end is not None
    )  # fmt: skip
    assert episodes == [(35, 60), (45, 75), (145, 160)]


def test_spans_are_in_the_colour_of_their_line(tmp_path: Path) -> None:
    read = svg(backtest_picture(disk_report()), tmp_path)

    def colour(style: str, what: str) -> str:
        found = re.search(rf"(?:^|;)\s*{what}:\s*(#[0-9a-f]{{6}})", style)
        assert found is not None, style
        return found.group(1)

    for row in (0, 1):
        line = colour(read.style(f"line:{row}"), "stroke")
        assert colour(read.style(f"firing:{row}:0"), "fill") == line
        assert colour(read.style(f"pending:{row}:0"), "fill") == line
    assert colour(read.style("line:0"), "stroke") != colour(read.style("line:1"), "stroke")


def test_the_legend_shows_only_the_labels_that_differ(tmp_path: Path) -> None:
    read = svg(backtest_picture(disk_report()), tmp_path)
    legend = read.group("legend")
    assert legend is not None
    entries = ["".join(e.itertext()) for e in legend.iter(f"{SVG}text")]
    assert entries == ["device=nvme0n1", "device=nvme1n1", "device=nvme2n1", "device=nvme3n1"]
    subtitle = [t for t in read.texts() if "instance=" in t]
    # said once, the rule's own labels (service, severity, team) left out
    assert subtitle == ["instance=gpu-node-1:9100, job=node"]


def test_a_single_series_is_named_by_its_subject() -> None:
    picture = backtest_picture(disk_report(DISKS[:1]))
    assert [c.name for c in picture.curves] == ["await"]
    assert [r.name for r in picture.rows] == ["DiskAwaitHigh"]
    assert picture.subtitle.startswith("device=nvme0n1, instance=gpu-node-1:9100, job=node\n")


def test_past_ten_series_the_fired_and_the_highest_peaks_are_shown(tmp_path: Path) -> None:
    """14 disks: the two that fire and the eight highest of the rest; four are counted."""
    disks = [(f"sd{i:02d}", 0.003 + i * 0.0001, ((100, 102),)) for i in range(12)]
    disks += [("fires-a", 0.009, ((10, 40),)), ("fires-b", 0.006, ((50, 70),))]
    picture = backtest_picture(disk_report(disks))
    shown = [c.name for c in picture.curves]
    assert shown == ["device=fires-a", "device=fires-b",
                     *(f"device=sd{i:02d}" for i in range(4, 12))]  # fmt: skip
    assert picture.note == "+ 4 series not shown\n(none fired; lower peaks)"
    note = svg(picture, tmp_path).group("note")
    assert note is not None
    assert [t.strip() for t in note.itertext() if t.strip()] == picture.note.splitlines()


def test_keep_firing_for_keeps_a_span_firing() -> None:
    """A firing alert whose condition ends keeps firing for keep_firing_for; a condition that
    comes back within it continues the same span."""
    times = list(range(0, 20 * MINUTE + 1, MINUTE))
    holds = {t for t in times if 2 * MINUTE <= t < 6 * MINUTE or 8 * MINUTE <= t < 9 * MINUTE}
    present: dict[Labels, set[int]] = {(("a", "1"),): holds}
    found = state_spans(times, present, MINUTE, 3 * MINUTE, (0, 20 * MINUTE))
    assert found[(("a", "1"),)] == [
        Span("pending", 2 * MINUTE, 3 * MINUTE),
        Span("firing", 3 * MINUTE, 12 * MINUTE),
    ]


# --- units and words --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("unit", "value", "text"),
    [("duration", "0.005", "5ms"), ("duration", "60", "1m"), ("percent", "0.95", "95%"),
     ("bandwidth", "3125000000", "25Gbps"), ("number", "64", "64"), ("ratio", "14.4", "14.4×"),
     ("rate", "0.5", "0.5/s")],
)  # fmt: skip
def test_threshold_text(unit: ThresholdUnit, value: str, text: str) -> None:
    assert threshold_text(Threshold(Decimal(value), unit)) == text


@pytest.mark.parametrize(
    ("unit", "magnitude", "scale"),
    [("duration", 0.005, Scale(1000.0, "ms")), ("duration", 30.0, Scale(1.0, "s")),
     ("duration", 600.0, Scale(1 / 60, "m")), ("duration", 9000.0, Scale(1 / 3600, "h")),
     ("percent", 0.95, Scale(100.0, "%")), ("bandwidth", 3.125e9, Scale(8 / 1e9, "Gbps")),
     ("bandwidth", 1e6, Scale(8 / 1e6, "Mbps")), ("ratio", 14.4, Scale(1.0, "×")),
     ("number", 64.0, Scale(1.0, ""))],
)  # fmt: skip
def test_axis_units(unit: str, magnitude: float, scale: Scale) -> None:
    assert scale_for(unit, magnitude) == scale


def test_titles_of_other_alerts() -> None:
    custom = Comparison(
        Expression("vllm:num_requests_waiting"), ">", Threshold(Decimal(35), "number")
    )
    target = Target("QueueVeryDeep", "g", "x", 5 * MINUTE, STEP, comparison=custom,
                    subject="vllm:num_requests_waiting",
                    keep_firing_for_ms=10 * MINUTE)  # fmt: skip
    assert title_of(target) == (
        "QueueVeryDeep: vllm:num_requests_waiting above 35 for 5m keep_firing_for 10m"
    )
    low = comparison("<", "0.1", "percent")
    free = Target(
        "FilesystemSpaceLow", "g", "x", 0, STEP, comparison=low, subject="filesystem free"
    )
    assert title_of(free) == "FilesystemSpaceLow: filesystem free below 10%"
    compound = Target("TTFTDiskBound", "g", "x", 5 * MINUTE, STEP, subject="ttft disk bound")
    assert title_of(compound) == "TTFTDiskBound: ttft disk bound for 5m"


def test_labels_common_to_all_series_are_said_once() -> None:
    keys = [
        (("a", "1"), ("b", "x")),
        (("a", "2"), ("b", "x")),
        (("a", "3"), ("b", "x"), ("c", "y")),
    ]
    common, names = split_labels(keys)
    assert common == (("b", "x"),)
    assert [names[k] for k in keys] == ["a=1", "a=2", "a=3, c=y"]


def test_choose_keeps_every_series_that_fired_first() -> None:
    keys: list[Labels] = [(("i", str(i)),) for i in range(30)]
    firing = {keys[i]: 1000 * (i + 1) for i in range(25)}
    peaks = {k: 1.0 for k in keys}
    shown, left_out = choose(keys, firing, peaks)
    assert (len(shown), left_out) == (20, 10)  # at most 20 that fired: the longest
    assert set(shown) == set(keys[5:25])


def test_long_series_are_thinned_without_losing_a_peak() -> None:
    times = list(range(40_000))
    samples = {t: 1.0 for t in times if t % 1000}
    samples[12_345] = 99.0
    thinned = points(samples, times, 1.0)
    assert len(thinned) <= 2000
    values = [v for _, v in thinned]
    assert 99.0 in values
    assert any(math.isnan(v) for v in values)  # the gaps stay gaps
    assert [t for t, _ in thinned] == sorted(t for t, _ in thinned)


# --- an SLO alert ----------------------------------------------------------------------------


def slo_report() -> Report:
    """A page alert with tiers 1h/5m at 14.4 and 6h/30m at 6 over one day: the 5m burn rate
    is 2 all day but for 20 minutes at 30 from 06:00, when the 1h one is 20."""
    span = (T0, T0 + 24 * 60 * MINUTE)
    times = list(range(T0 - 60 * MINUTE, span[1] + 1, MINUTE))
    labels: Labels = (("service", "api"), ("slo", "availability"))

    def burn(high: float, low: float, first: int, last: int) -> dict[int, float]:
        return {t: high if first <= (t - T0) / MINUTE < last else low for t in times}

    burns = {
        "1h": {labels: burn(20, 2, 360, 400)}, "5m": {labels: burn(30, 2, 360, 380)},
        "6h": {labels: burn(4, 2, 360, 720)}, "30m": {labels: burn(10, 2, 360, 390)},
    }  # fmt: skip
    rule = (*labels, ("severity", "critical"))
    fires = {t: 1.0 for t in times if 360 <= (t - T0) / MINUTE < 380}
    found = replay(times, [{rule} if t in fires else set() for t in times], 0)
    summaries = {
        k: summarize(v, span[0], span[1], flap_window(0, MINUTE)) for k, v in found.items()
    }
    tiers = (TierLine(("1h", "5m"), Threshold(Decimal("14.4"), "ratio")),
             TierLine(("6h", "30m"), Threshold(Decimal(6), "ratio")))  # fmt: skip
    target = Target("AvailabilityBudgetBurn", "api-slo-availability", "x", 0, MINUTE, rule,
                    subject="page burn rate", burns=tuple(Burn(w, w) for w in burns),
                    tiers=tiers, slo_window_ms=30 * 24 * 60 * MINUTE)  # fmt: skip
    return Report(target, span, MINUTE, times, {rule: fires}, summaries, burns=burns)


def test_an_slo_alert_shows_each_window_against_its_tier(tmp_path: Path) -> None:
    picture = backtest_picture(slo_report())
    assert picture.title == (
        "AvailabilityBudgetBurn: page burn rate above 14.4× over 1h and 5m, or 6× over 6h and 30m"
    )
    assert [c.name for c in picture.curves] == ["1h", "5m", "6h", "30m"]
    assert len({c.colour for c in picture.curves}) == 4
    read = svg(picture, tmp_path)
    texts = read.texts()
    assert {"14.4× (1h, 5m)", "6× (6h, 30m)"} <= set(texts)
    assert "20×" in texts  # the axis in multiples of the budget's rate
    assert read.rows() == ["AvailabilityBudgetBurn"]
    assert close(spans_of(read, 0, "firing"), [(360, 380)])
    assert read.group("budget-axes") is not None


def test_the_budget_left_spends_the_shortest_window_s_burn_rate() -> None:
    """From 100% at 00:00, a burn rate of 2 for a day spends 2 days of a 30-day budget
    (6.67%); the 20 minutes at 30 spend 28 minutes' worth more (20 × 28 / 43200 = 1.3%)."""
    (budget,) = backtest_picture(slo_report()).budget
    assert budget.points[0][1] == 100
    assert budget.points[1][1] == pytest.approx(100 - 2 / 43200 * 100)
    spent = (1440 * 2 + 20 * 28) / 43200 * 100
    assert budget.points[-1][1] == pytest.approx(100 - spent)


# --- files -----------------------------------------------------------------------------------


def test_svg_is_deterministic_and_marked_as_rulegen_s(tmp_path: Path) -> None:
    picture = backtest_picture(disk_report())
    plot.write(tmp_path / "a.svg", picture, "svg")
    plot.write(tmp_path / "b.svg", picture, "svg")
    data = (tmp_path / "a.svg").read_bytes()
    assert data == (tmp_path / "b.svg").read_bytes()
    assert b"<dc:date>" not in data
    assert b"<dc:title>rulegen backtest</dc:title>" in data
    assert plot.written_by_rulegen(tmp_path / "a.svg")
    (tmp_path / "mine.svg").write_bytes(data.replace(b"rulegen backtest", b"Inkscape"))
    assert not plot.written_by_rulegen(tmp_path / "mine.svg")


def test_png_is_1200_px_wide(tmp_path: Path) -> None:
    """The PNG's signature and IHDR: 1200 px wide, taller with more timeline rows."""
    sizes = []
    for disks in (DISKS[2:3], DISKS[:1], DISKS):  # no row, one row, two rows
        path = tmp_path / "a.png"
        plot.write(path, backtest_picture(disk_report(disks)), "png")
        data = path.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        assert data[12:16] == b"IHDR"
        sizes.append(struct.unpack(">II", data[16:24]))
        assert plot.written_by_rulegen(path)
    assert [width for width, _ in sizes] == [1200] * 3
    assert sizes[0][1] == sizes[1][1] == 500
    assert sizes[2][1] > 500


def test_write_plots_in_either_format(tmp_path: Path) -> None:
    report = disk_report()
    assert write_plots([report], tmp_path, "svg") == [tmp_path / "DiskAwaitHigh.svg"]
    assert write_plots([report], tmp_path) == [tmp_path / "DiskAwaitHigh.png"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["DiskAwaitHigh.png", "DiskAwaitHigh.svg"]


def test_series_are_ordered_by_the_numbers_in_their_labels() -> None:
    keys: list[Labels] = [(("instance", f"gpu-node-{n}:9100"),) for n in (15, 3, 100, 21)]
    shown, _ = choose(keys, {}, {})
    assert [dict(k)["instance"] for k in shown] == [
        "gpu-node-3:9100", "gpu-node-15:9100", "gpu-node-21:9100", "gpu-node-100:9100",
    ]  # fmt: skip
