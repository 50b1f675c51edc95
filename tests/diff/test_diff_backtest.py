"""``rulegen diff --prometheus``: both versions of each changed alert replayed over history
backfilled into a real ``prometheus``, episodes and firing time before → after, and the label
sets that start or stop firing; in text, markdown and JSON; and ``--plot``, docs/diff.md's
picture.

The series (``QUEUE_SERIES`` in ``support/pictures.py``, which also makes the docs' picture)
are one sample a minute for three hours, raw only (the alerts read raw series, so the result
does not depend on how a backtest finds recordings). The expected figures are worked out by
hand from them, not taken from the replay:

- ``RequestQueueBacklog`` (``> 10`` for 2m, raised to ``> 30``): gpu-1 holds 20 for minutes
  20–29 and 60–69 and 40 for 100–114, gpu-2 holds 25 for 140–149. A run of n minutes fires
  from its third minute to the minute after it (n − 2 minutes): before, 8 + 8 + 13 + 8 = 37m
  in 4 episodes; after, only gpu-1's 40 (13m), and gpu-2 stops firing.
- ``QueueEmpty`` (``< 1`` for 30m, removed): gpu-1's idle stretch from minute 115 fires from
  145 to the end of the range at 179 (34m, open); gpu-2's from 0 to 139 fires from 30 to 140
  (110m): 2 episodes, 2h24m.
- ``QueueVeryDeep`` (``> 35`` for 5m, added): gpu-1's 40 fires from 105 to 115: 1 episode, 10m;
  gpu-1 starts firing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import REPO, CliResult, write_tree
from support.pictures import (
    DIFF_ARGV,
    DIFF_PICTURE,
    QUEUE_AFTER,
    QUEUE_BEFORE,
    QUEUE_END,
    T0,
    backfill,
    queue_series,
)
from support.prometheus import NEEDS_PROMETHEUS, running
from support.svgplot import close, read_svg, spans_of

pytestmark = [pytest.mark.slow, NEEDS_PROMETHEUS]
Cli = Callable[..., CliResult]

END = QUEUE_END
BEFORE, AFTER = QUEUE_BEFORE, QUEUE_AFTER  # the series: support/pictures.py (QUEUE_SERIES)


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    workdir = tmp_path_factory.mktemp("diff-backtest")
    with running(backfill(queue_series(), workdir), workdir, 60) as server:
        yield server.url


def backtest_diff(cli: Cli, root: Path, url: str, *argv: str) -> str:
    write_tree(root, {"old/queue.yaml": BEFORE, "specs/queue.yaml": AFTER})
    result = cli("diff", "--base-dir", "old", "--prometheus", url,
                 "--from", "2026-01-01T00:00:00Z", "--to", str(END), *argv)  # fmt: skip
    assert (result.code, result.err) == (0, ""), result.err
    return result.out


TEXT = """\
queue: 1 alert changed, 1 added, 1 removed
  changed  RequestQueueBacklog
    threshold: 10 → 30
    annotations.description: …threshold is 10 for 2m. → …threshold is 30 for 2m.
  added    QueueVeryDeep: threshold 35, for 5m, severity critical
  removed  QueueEmpty: threshold 1, for 30m, severity info
  dashboard panels: 1 changed (vLLM / RequestQueueBacklog), 1 added (Custom / QueueVeryDeep), \
1 removed (Custom / QueueEmpty)
  backtest 2026-01-01T00:00:00Z .. 2026-01-01T02:59:00Z, before → after:
    RequestQueueBacklog{service=queue}: 4 episodes, 37m → 1 episode, 13m
      stops firing: {engine=0, instance=gpu-2:8000, model_name=m}
    QueueVeryDeep{service=queue}: (none) → 1 episode, 10m
      starts firing: {engine=0, instance=gpu-1:8000, model_name=m}
    QueueEmpty{service=queue}: 2 episodes, 2h24m → (none)
      stops firing: {engine=0, instance=gpu-1:8000, model_name=m}
      stops firing: {engine=0, instance=gpu-2:8000, model_name=m}

1 service changed; 1 alert changed, 1 added, 1 removed (base: old)
"""


def test_text_shows_episodes_and_firing_time_before_and_after(
    prometheus: str, in_tmp: Path, cli: Cli
) -> None:
    assert backtest_diff(cli, in_tmp, prometheus) == TEXT


def test_the_docs_show_what_the_command_prints() -> None:
    page = (REPO / "docs" / "diff.md").read_text(encoding="utf-8")
    for spec in (BEFORE, AFTER):
        assert spec in page
    assert TEXT in page


def test_json_has_both_replays_and_the_label_sets(prometheus: str, in_tmp: Path, cli: Cli) -> None:
    document = json.loads(backtest_diff(cli, in_tmp, prometheus, "--format", "json"))
    assert document["backtest"] == {"from": "2026-01-01T00:00:00Z", "to": "2026-01-01T02:59:00Z"}
    gpu1 = {"engine": "0", "instance": "gpu-1:8000", "model_name": "m"}
    gpu2 = {**gpu1, "instance": "gpu-2:8000"}
    found = {a["alert"]: (a["change"], a["backtest"]) for a in document["services"][0]["alerts"]}
    assert found == {
        "RequestQueueBacklog": ("changed", {
            "old": {"episodes": 4, "firing_seconds": 37 * 60},
            "new": {"episodes": 1, "firing_seconds": 13 * 60},
            "starts_firing": [], "stops_firing": [gpu2],
        }),
        "QueueVeryDeep": ("added", {
            "old": None, "new": {"episodes": 1, "firing_seconds": 10 * 60},
            "starts_firing": [gpu1], "stops_firing": [],
        }),
        "QueueEmpty": ("removed", {
            "old": {"episodes": 2, "firing_seconds": 144 * 60}, "new": None,
            "starts_firing": [], "stops_firing": [gpu1, gpu2],
        }),
    }  # fmt: skip


def test_markdown_has_a_backtest_column(prometheus: str, in_tmp: Path, cli: Cli) -> None:
    out = backtest_diff(cli, in_tmp, prometheus, "--format", "markdown")
    assert "| alert | change | what changed | backtest |" in out
    assert (
        "| `RequestQueueBacklog` | changed | `threshold`: `10` → `30`<br>"
        "`annotations.description`: `…threshold is 10 for 2m.` → `…threshold is 30 for 2m.` | "
        "4 episodes, 37m → 1 episode, 13m<br>stops firing: "
        "`{engine=0, instance=gpu-2:8000, model_name=m}` |"
    ) in out.splitlines()
    assert "Backtest over 2026-01-01T00:00:00Z .. 2026-01-01T02:59:00Z: episodes and firing " in out


def test_an_unchanged_alert_is_not_replayed(prometheus: str, in_tmp: Path, cli: Cli) -> None:
    """Only the edited alert is replayed: the other one's rule is the same in both versions."""
    after = BEFORE.replace("threshold: 10", "threshold: 30")
    write_tree(in_tmp, {"old/queue.yaml": BEFORE, "specs/queue.yaml": after})
    result = cli("diff", "--base-dir", "old", "--prometheus", prometheus, "--format", "json",
                 "--from", "2026-01-01T00:00:00Z", "--to", str(END))  # fmt: skip
    alerts = {a["alert"]: a for a in json.loads(result.out)["services"][0]["alerts"]}
    assert alerts["QueueEmpty"]["change"] == "unchanged"
    assert "backtest" not in alerts["QueueEmpty"]
    assert alerts["RequestQueueBacklog"]["backtest"]["new"] == {
        "episodes": 1,
        "firing_seconds": 13 * 60,
    }


def test_an_unreachable_server_is_one_line(in_tmp: Path, cli: Cli) -> None:
    write_tree(in_tmp, {"old/queue.yaml": BEFORE, "specs/queue.yaml": AFTER})
    result = cli("diff", "--base-dir", "old", "--prometheus", "http://127.0.0.1:9",
                 "--from", "0", "--to", "60")  # fmt: skip
    assert (result.code, result.out) == (2, "")
    assert result.err == (
        "rulegen: error: cannot reach Prometheus at http://127.0.0.1:9: Connection refused\n"
    )


def test_a_replay_warning_names_the_version_and_the_alert(
    prometheus: str, in_tmp: Path, cli: Cli
) -> None:
    """An alert that reads a series the server does not have cannot fire in either replay:
    each version's warning says so on stderr (their wording is the backtest's)."""
    spec = BEFORE + "  - {signal: custom, name: Ghost, expr: 'ghost_metric > 1', severity: info}\n"
    write_tree(in_tmp, {"old/queue.yaml": spec, "specs/queue.yaml": spec.replace("> 1'", "> 2'")})
    result = cli("diff", "--base-dir", "old", "--prometheus", prometheus,
                 "--from", "2026-01-01T00:00:00Z", "--to", str(END))  # fmt: skip
    assert result.code == 0
    base, current = result.err.splitlines()
    assert base.startswith("rulegen: warning: base (old): Ghost (queue): ")
    assert current.startswith("rulegen: warning: current: Ghost (queue): ")
    assert "ghost_metric" in base
    assert "ghost_metric" in current
    assert "    Ghost{service=queue}: 0 episodes, 0s → 0 episodes, 0s\n" in result.out


def test_plot_shows_both_thresholds_and_each_version_s_episodes(
    prometheus: str, in_tmp: Path, cli: Cli
) -> None:
    """docs/diff.md's command with ``--plot``: a picture per replayed alert; the changed one
    with both thresholds and a row per engine and version, its spans at the times worked out
    above (firing from a run's third minute to the minute after it), the episodes that only
    the base has outlined; its text is the committed picture's (docs/img)."""
    write_tree(in_tmp, {"old/queue.yaml": BEFORE, "specs/queue.yaml": AFTER})
    result = cli(*DIFF_ARGV, "--prometheus", prometheus, "--plot", "pictures",
                 "--plot-format", "svg")  # fmt: skip
    assert (result.code, result.err) == (0, ""), result.err
    assert result.out == TEXT
    assert sorted(p.name for p in (in_tmp / "pictures").iterdir()) == [
        "queue.QueueEmpty.svg", "queue.QueueVeryDeep.svg", "queue.RequestQueueBacklog.svg",
    ]  # fmt: skip
    read = read_svg(in_tmp / "pictures" / DIFF_PICTURE, (T0 * 1000, END * 1000))
    texts = read.texts()
    assert "RequestQueueBacklog: requests waiting above 10 → 30 for 2m" in texts
    assert {"before: 10", "after: 30"} <= set(texts)
    assert read.rows() == [
        "instance=gpu-1:8000 (before)", "instance=gpu-1:8000 (after)",
        "instance=gpu-2:8000 (before)", "instance=gpu-2:8000 (after)",
    ]  # fmt: skip
    assert close(spans_of(read, 0, "firing"), [(22, 30), (62, 70), (102, 115)])
    assert close(spans_of(read, 0, "pending"), [(20, 22), (60, 62), (100, 102)])
    assert close(spans_of(read, 1, "firing"), [(102, 115)])
    assert close(spans_of(read, 2, "firing"), [(142, 150)])
    assert not spans_of(read, 3, "firing")
    outlined = {i for i in read.ids(r"firing:\d+:\d+") if "stroke: #000000" in read.style(i)}
    assert outlined == {"firing:0:0", "firing:0:1", "firing:2:0"}
    committed = read_svg(REPO / "docs" / "img" / DIFF_PICTURE, (T0 * 1000, END * 1000))
    assert texts == committed.texts(), "docs/img is stale: make pictures"
    added = read_svg(in_tmp / "pictures" / "queue.QueueVeryDeep.svg", (T0 * 1000, END * 1000))
    assert "QueueVeryDeep (added): vllm:num_requests_waiting above 35 for 5m" in added.texts()
