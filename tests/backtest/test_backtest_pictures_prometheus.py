"""docs/backtest.md's picture, made by its command on a real Prometheus: ``rulegen backtest
specs/llm-serving.yaml --alert DiskAwaitHigh --plot DIR --plot-format svg`` over three hours of
four NVMe disks (``support/pictures.py``).

The picture must show what the replay's JSON says: a row per disk that was pending or fired,
one firing span per episode at its times, and before each a pending span of the alert's 5m
``for``; nvme0n1's three minutes above 5ms at 02:00 stay a pending span that never fires. Its
text (title, units, threshold, legend, rows) must be the committed picture's, so docs/img
cannot go stale unnoticed (``make pictures`` makes it again); the geometry may move by a
scrape between Prometheus 2.x and 3.x, the text may not.
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from typing import Any

import pytest
from conftest import REPO, copy_specs, run_rulegen
from support.pictures import (
    BACKTEST_ARGV,
    BACKTEST_PICTURE,
    DISK_END,
    DISK_STEP,
    T0,
    backfill,
    disk_series,
)
from support.prometheus import NEEDS_PROMETHEUS, running
from support.svgplot import Svg, read_svg, spans_of

pytestmark = [pytest.mark.slow, NEEDS_PROMETHEUS]
SPAN = (T0 * 1000, DISK_END * 1000)
FOR_MINUTES = 5


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Svg, list[dict[str, Any]]]:
    """The picture and the JSON rows of one run of the documented command."""
    root = tmp_path_factory.mktemp("pictures")
    copy_specs(REPO / "specs", root / "specs")
    shutil.copytree(REPO / "signals", root / "signals")
    (root / "history").mkdir()
    data = backfill(disk_series(), root / "history")
    with running(data, root / "history", DISK_STEP) as server:
        result = run_rulegen(*BACKTEST_ARGV, "--prometheus", server.url, "--plot", "pictures",
                             "--plot-format", "svg", "--format", "json", cwd=root)  # fmt: skip
    assert (result.code, result.err) == (0, ""), result.err
    assert [p.name for p in (root / "pictures").iterdir()] == [BACKTEST_PICTURE]
    return read_svg(root / "pictures" / BACKTEST_PICTURE, SPAN), json.loads(result.out)


def minutes(stamp: str) -> float:
    return (datetime.fromisoformat(stamp).timestamp() - T0) / 60


def test_a_firing_span_per_episode_and_a_pending_span_before_each(
    made: tuple[Svg, list[dict[str, Any]]],
) -> None:
    read, rows = made
    episodes = {
        row["labels"]["device"]: [(minutes(e["start"]), minutes(e["end"])) for e in row["episodes"]]
        for row in rows
        if row["episodes"]
    }
    assert sorted(episodes) == ["nvme0n1", "nvme1n1"]
    assert [len(found) for _, found in sorted(episodes.items())] == [1, 2]
    assert read.rows() == ["device=nvme0n1", "device=nvme1n1"]
    for index, device in enumerate(("nvme0n1", "nvme1n1")):
        firing = spans_of(read, index, "firing")
        assert len(firing) == len(episodes[device])
        for (start, end), (first, last) in zip(firing, episodes[device], strict=True):
            assert abs(start - first) < 0.01
            assert abs(end - last) < 0.01
        pending = spans_of(read, index, "pending")
        for start, _ in firing:  # `for` delays each firing by 5m of pending
            assert any(abs(e - start) < 0.01 and abs(e - s - FOR_MINUTES) < 0.01
                       for s, e in pending)  # fmt: skip
    # nvme0n1's three minutes at 02:00: pending, never firing
    assert any(s >= 120 and e <= 124 for s, e in spans_of(read, 0, "pending"))
    assert not any(120 <= s <= 124 for s, _ in spans_of(read, 0, "firing"))


def test_the_spec_s_words_and_units(made: tuple[Svg, list[dict[str, Any]]]) -> None:
    read, _ = made
    texts = read.texts()
    assert "DiskAwaitHigh: await above 5ms for 5m" in texts
    group = read.group("threshold-text:0")
    assert group is not None
    assert "".join(group.itertext()).strip() == "5ms"
    assert {"0ms", "8ms"} <= set(texts)
    legend = read.group("legend")
    assert legend is not None
    assert [t for t in legend.itertext() if t.strip()] == [
        f"device=nvme{i}n1" for i in range(4)
    ]  # fmt: skip
    assert "host=gpu-node-1, instance=gpu-node-1:9100, job=node" in texts


def test_the_committed_picture_is_up_to_date(made: tuple[Svg, list[dict[str, Any]]]) -> None:
    read, _ = made
    committed = read_svg(REPO / "docs" / "img" / BACKTEST_PICTURE, SPAN)
    assert read.texts() == committed.texts(), "docs/img is stale: run make pictures"
