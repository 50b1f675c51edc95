"""The example pictures of docs/backtest.md and docs/diff.md: their histories and commands.

Run: ``make pictures`` (``python tests/support/pictures.py docs/img``, with prometheus and
promtool on PATH). Each history is backfilled into a real Prometheus started here, and the
command the page shows runs against it as a process, as a user would run it; the pictures it
writes are copied into the folder. The tests run the same commands
(``tests/backtest/test_backtest_pictures_prometheus.py``, ``tests/diff/test_diff_backtest.py``)
and check that the committed pictures say what a fresh run says (their text: the geometry
may move by a scrape between Prometheus versions).

- ``DiskAwaitHigh`` of specs/llm-serving.yaml (await above 5ms for 5m) over three hours of
  four NVMe disks of one host, at 15 s: nvme0n1 at 8 ms from 00:30 to 01:00 and for three
  minutes at 02:00 (pending, never firing: ``for`` is 5m), nvme1n1 at 7 ms from 00:40 to 01:15
  and from 02:20 to 02:40, nvme2n1 at 4 ms and nvme3n1 at 3 ms for a while (never above),
  around 2.5 ms otherwise.
- docs/diff.md's backtest example: two engines' request queues over three hours, one sample
  a minute (``tests/diff/test_diff_backtest.py`` works its figures out by hand).
"""

from __future__ import annotations

import math
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

if __name__ == "__main__":  # run as a script: the tests' folder is where ``support`` is
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from support.prometheus import create_blocks_from_openmetrics, openmetrics, running

REPO = Path(__file__).resolve().parent.parent.parent
T0 = 1767225600  # 2026-01-01T00:00:00Z

# --- DiskAwaitHigh -----------------------------------------------------------------------------

DISK_STEP = 15
DISK_LEAD = 10 * 60  # samples before --from: the 1m rate and the 5m ``for`` need them
DISK_END = T0 + 3 * 3600
DISK_INSTANCE = "gpu-node-1:9100"
# (device, await in seconds while high, [(first minute, last minute + 1), ...])
DISKS = (
    ("nvme0n1", 0.008, ((30, 60), (120, 123))),
    ("nvme1n1", 0.007, ((40, 75), (140, 160))),
    ("nvme2n1", 0.004, ((50, 90),)),
    ("nvme3n1", 0.003, ((60, 105),)),
)
READS, WRITES = 60, 40  # per second: 100 IOPS, above the signal's min_iops of 10
BACKTEST_ARGV = (
    "backtest", "specs/llm-serving.yaml", "--from", "2026-01-01T00:00:00Z",
    "--to", "2026-01-01T03:00:00Z", "--alert", "DiskAwaitHigh",
)  # fmt: skip
"""The documented command, but for ``--prometheus URL`` and ``--plot DIR --plot-format svg``."""
BACKTEST_PICTURE = "DiskAwaitHigh.svg"


def disk_await(index: int, minute: float) -> float:
    """One disk's await (seconds) at a minute from 00:00: high in its stretches, else a slow
    wave around 2.5 ms."""
    _, high, stretches = DISKS[index]
    if any(first <= minute < last for first, last in stretches):
        return high
    return 0.0025 + 0.0004 * math.sin(2 * math.pi * minute / 37 + index)


def disk_series() -> list[tuple[str, list[tuple[int, float]]]]:
    """node_exporter's four disk counters of each disk: per scrape, 900 reads and 600 writes
    taking the await of the scrape's interval each."""
    out = []
    for index, (device, _, _) in enumerate(DISKS):
        labels = f'{{device="{device}",instance="{DISK_INSTANCE}",job="node"}}'
        names = ("reads_completed", "writes_completed", "read_time_seconds", "write_time_seconds")
        counters: dict[str, list[tuple[int, float]]] = {name: [] for name in names}
        totals = dict.fromkeys(counters, 0.0)
        for t in range(T0 - DISK_LEAD, DISK_END + 1, DISK_STEP):
            seconds = disk_await(index, (t - DISK_STEP - T0) / 60)
            increments = {
                "reads_completed": READS * DISK_STEP, "writes_completed": WRITES * DISK_STEP,
                "read_time_seconds": READS * DISK_STEP * seconds,
                "write_time_seconds": WRITES * DISK_STEP * seconds,
            }  # fmt: skip
            for name, step in increments.items():
                if t > T0 - DISK_LEAD:
                    totals[name] += step
                counters[name].append((t, round(totals[name], 9)))
        out += [(f"node_disk_{name}_total{labels}", samples) for name, samples in counters.items()]
    return out


# --- the diff's request queues -------------------------------------------------------------

QUEUE_MINUTES = 180
QUEUE_END = T0 + (QUEUE_MINUTES - 1) * 60
QUEUE_GPU1 = 'vllm:num_requests_waiting{engine="0",instance="gpu-1:8000",model_name="m"}'
QUEUE_GPU2 = 'vllm:num_requests_waiting{engine="0",instance="gpu-2:8000",model_name="m"}'
QUEUE_BEFORE = """\
version: 1
service: queue
evaluation_interval: 1m
alerts:
  - {signal: requests_waiting, threshold: 10, for: 2m, severity: warning}
  - signal: custom
    name: QueueEmpty
    expr: 'vllm:num_requests_waiting < 1'
    for: 30m
    severity: info
"""
QUEUE_AFTER = """\
version: 1
service: queue
evaluation_interval: 1m
alerts:
  - {signal: requests_waiting, threshold: 30, for: 2m, severity: warning}
  - signal: custom
    name: QueueVeryDeep
    expr: 'vllm:num_requests_waiting > 35'
    for: 5m
    severity: critical
"""
DIFF_ARGV = ("diff", "--base-dir", "old", "--from", "2026-01-01T00:00:00Z", "--to",
             str(QUEUE_END))  # fmt: skip
"""The documented command, but for ``--prometheus URL`` and ``--plot DIR --plot-format svg``."""
DIFF_PICTURE = "queue.RequestQueueBacklog.svg"


def waiting(runs: Sequence[tuple[int, int, float]]) -> list[float]:
    """One value a minute: 0, except ``value`` from minute ``first`` to ``last``."""
    values = [0.0] * QUEUE_MINUTES
    for first, last, value in runs:
        values[first : last + 1] = [value] * (last - first + 1)
    return values


QUEUE_SERIES = {
    QUEUE_GPU1: waiting([(20, 29, 20), (60, 69, 20), (100, 114, 40)]),
    QUEUE_GPU2: waiting([(140, 149, 25)]),
}


def queue_series() -> list[tuple[str, list[tuple[int, float]]]]:
    return [
        (name, [(T0 + minute * 60, value) for minute, value in enumerate(values)])
        for name, values in QUEUE_SERIES.items()
    ]


# --- making them ---------------------------------------------------------------------------


def backfill(series: list[tuple[str, list[tuple[int, float]]]], workdir: Path) -> Path:
    """The series as TSDB blocks in ``workdir/data``; returns that folder."""
    source = workdir / "series.om"
    source.write_text(openmetrics(series))
    create_blocks_from_openmetrics(source, workdir / "data")
    return workdir / "data"


def rulegen(argv: Sequence[str], cwd: Path) -> None:
    """``rulegen ARGV`` as a process in ``cwd``; raise with its output when it fails."""
    proc = subprocess.run([sys.executable, "-m", "rulegen", *argv], cwd=cwd, capture_output=True,
                          text=True, check=False, timeout=600)  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"rulegen {' '.join(argv)} exited {proc.returncode}:\n{proc.stderr}")


def make_pictures(out: Path) -> list[Path]:
    """Both pictures, made by the documented commands, copied into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with tempfile.TemporaryDirectory(prefix="rulegen-pictures-") as folder:
        work = Path(folder)
        (work / "disk").mkdir()
        with running(backfill(disk_series(), work / "disk"), work / "disk", 15) as server:
            rulegen([*BACKTEST_ARGV, "--prometheus", server.url, "--plot", str(work / "b"),
                     "--plot-format", "svg"], REPO)  # fmt: skip
        (work / "queue" / "old").mkdir(parents=True)
        (work / "queue" / "specs").mkdir()
        (work / "queue" / "old" / "queue.yaml").write_text(QUEUE_BEFORE)
        (work / "queue" / "specs" / "queue.yaml").write_text(QUEUE_AFTER)
        with running(backfill(queue_series(), work / "queue"), work / "queue", 60) as server:
            rulegen([*DIFF_ARGV, "--prometheus", server.url, "--plot", str(work / "d"),
                     "--plot-format", "svg"], work / "queue")  # fmt: skip
        for source in (work / "b" / BACKTEST_PICTURE, work / "d" / DIFF_PICTURE):
            shutil.copyfile(source, out / source.name)
            written.append(out / source.name)
    return written


if __name__ == "__main__":
    for path in make_pictures(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/img")):
        sys.stdout.write(f"{path}\n")
