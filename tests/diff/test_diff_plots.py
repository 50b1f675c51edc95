"""``rulegen diff --plot`` pictures read back from their SVG: both thresholds, a row of spans per
version and label set, the episodes only one version has outlined; the title says what the
edit changed. The replays are built in Python (``tests/diff/test_diff_backtest.py`` runs the
command on a real Prometheus).
"""

from __future__ import annotations

from pathlib import Path

from support.svgplot import MINUTE, close, comparison, replayed_report, spans_of, svg

from rulegen.backtest.replay import Labels
from rulegen.backtest.targets import Report, Target
from rulegen.diff.facts import AlertKey
from rulegen.diff.model import AlertDiff
from rulegen.diff.plots import diff_picture, plot_stem

T0 = 1767225600_000  # 2026-01-01T00:00:00Z


def queue_report(threshold: str) -> Report:
    """docs/diff.md's queues: gpu-1 at 20 twice and 40 once, gpu-2 at 25 once."""
    compared = comparison(">", threshold, "number", "vllm:num_requests_waiting")
    target = Target("RequestQueueBacklog", "queue-vllm", f"x > {threshold}", 2 * MINUTE,
                    MINUTE, (("service", "queue"), ("severity", "warning")),
                    comparison=compared, condition=compared,
                    subject="requests waiting")  # fmt: skip
    span = (T0, T0 + 179 * MINUTE)
    times = list(range(T0 - 3 * MINUTE, span[1] + 1, MINUTE))
    runs = {"gpu-1:8000": [(20, 29, 20.0), (60, 69, 20.0), (100, 114, 40.0)],
            "gpu-2:8000": [(140, 149, 25.0)]}  # fmt: skip
    quantity: dict[Labels, dict[int, float]] = {}
    for instance, stretches in runs.items():
        labels: Labels = (("__name__", "vllm:num_requests_waiting"), ("engine", "0"),
                  ("instance", instance), ("model_name", "m"))  # fmt: skip
        quantity[labels] = {
            t: next((v for a, b, v in stretches if a <= (t - T0) / MINUTE <= b), 0.0) for t in times
        }
    limit = float(threshold)
    return replayed_report(target, quantity, times, span, lambda v: v > limit)


def test_a_diff_shows_both_thresholds_and_marks_the_changed_episodes(tmp_path: Path) -> None:
    """10 → 30: gpu-1's two runs at 20 and gpu-2's at 25 stop firing (outlined in the before
    rows); the run at 40 fires in both versions (not outlined)."""
    alert = AlertDiff(AlertKey("RequestQueueBacklog"), "changed", ())
    picture = diff_picture(alert, (queue_report("10"), queue_report("30")), "old")
    read = svg(picture, tmp_path)
    texts = read.texts()
    assert "RequestQueueBacklog: requests waiting above 10 → 30 for 2m" in texts
    assert {"before: 10", "after: 30"} <= set(texts)
    assert read.ids(r"threshold:\d+") == ["threshold:0", "threshold:1"]
    assert read.rows() == [
        "instance=gpu-1:8000 (before)", "instance=gpu-1:8000 (after)",
        "instance=gpu-2:8000 (before)", "instance=gpu-2:8000 (after)",
    ]  # fmt: skip
    assert close(spans_of(read, 0, "firing"), [(22, 30), (62, 70), (102, 115)])
    assert close(spans_of(read, 1, "firing"), [(102, 115)])
    assert close(spans_of(read, 2, "firing"), [(142, 150)])
    assert not spans_of(read, 3, "firing")
    outlined = {i for i in read.ids(r"firing:\d+:\d+") if "stroke: #000000" in read.style(i)}
    assert outlined == {"firing:0:0", "firing:0:1", "firing:2:0"}
    # one line per engine: the quantity is the same in both versions
    assert [c.name for c in picture.curves] == ["instance=gpu-1:8000", "instance=gpu-2:8000"]
    assert picture.subtitle == (
        "engine=0, model_name=m\n2026-01-01T00:00:00Z .. 2026-01-01T02:59:00Z: before (old) "
        "4 episodes, 37m → after 1 episode, 13m"
    )


def test_an_added_alert_has_one_threshold_and_says_so() -> None:
    alert = AlertDiff(AlertKey("RequestQueueBacklog"), "added", ())
    picture = diff_picture(alert, (None, queue_report("30")), "HEAD")
    assert picture.title == "RequestQueueBacklog (added): requests waiting above 30 for 2m"
    assert [level.text for level in picture.levels] == ["30"]
    assert all(span.changed for row in picture.rows for span in row.spans if span.kind == "firing")


def test_diff_plot_names() -> None:
    assert plot_stem("queue", AlertKey("RequestQueueBacklog")) == "queue.RequestQueueBacklog"
    key = AlertKey("ErrorBudgetBurn", "slo", "availability", "page")
    assert plot_stem("api/v1", key) == "api-v1.ErrorBudgetBurn.availability.page"
    assert plot_stem("s", AlertKey("Disk", alerting="critical")) == "s.Disk.critical"
    assert plot_stem("s", AlertKey("TTFTDiskBound", "diagnosis")) == "s.TTFTDiskBound.diagnosis"
