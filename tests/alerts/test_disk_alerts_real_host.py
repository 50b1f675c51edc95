"""The disk alerts on this machine's own disk: a real node_exporter, a real Prometheus, fio.

Why: the promtool tests (``test_signals_promtool.py``, the generated ones) prove the rules
against series written by hand. This proves the other half on a real host: that what a real
node_exporter exports for a real block device, rated by the recordings of ``disk_utilization``,
``disk_queue_depth`` and ``disk_await``, is iostat's %util, aqu-sz and await as computed
independently from
``/proc/diskstats`` over the same window, and that both alerts go pending, then firing, under
real load.

How: the block device backing the test's temporary folder (``st_dev`` →
``/sys/dev/block/MAJ:MIN``, its whole disk when it is a partition; /var/tmp when the folder is
on tmpfs or overlay) scopes a spec with a 10s window, ``for: 5s`` and thresholds low enough
for fio (30 %, a queue of 1), built by ``rulegen build --no-validate``. node_exporter (the
diskstats collector alone) and Prometheus (scraping it and evaluating the rules every second)
run on free 127.0.0.1 ports; a bounded fio run (random 4 KiB direct reads, queue depth 8,
20 s, a 128 MiB file) loads the disk while a thread samples ``/proc/diskstats`` every 0.1 s
and the test polls ``ALERTS``. Each recording evaluated at ``T`` whose window
``(T - 10s, T]`` lies inside the steady part of the run (2 s after fio starts to 1 s before it
ends) must be within 10 % of Δio_ticks / Δt (%util), Δtime_in_queue / Δt (aqu-sz) and
Δ(read + write ms) / Δ(reads + writes) (await) between ``T - 10s`` and ``T``, interpolated from
those samples. Skipped, with the reason, when no such
folder is on a block device that /proc/diskstats and node_exporter report and that takes
O_DIRECT, or when fio makes the disk less than 1.5 times as busy as the thresholds.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from conftest import CliResult, write_tree
from support.node_exporter import NEEDS_NODE_EXPORTER, node_exporter
from support.prometheus import NEEDS_PROMETHEUS, PrometheusServer

Cli = Callable[..., CliResult]
LOG = logging.getLogger(__name__)  # the figures: pytest shows them on failure, or with
# -o log_cli=true --log-cli-level=INFO


FIO = shutil.which("fio")

pytestmark = [
    pytest.mark.slow,
    NEEDS_PROMETHEUS,
    NEEDS_NODE_EXPORTER,
    pytest.mark.skipif(FIO is None, reason="needs fio (the Debian package fio)"),
]

SERVICE = "host-disk"
WINDOW = 10  # seconds: the recordings' rate window
FOR = 5  # seconds
UTIL = 0.30  # DiskUtilizationHigh's threshold (30 %)
QUEUE = 1.0  # DiskQueueDepthHigh's threshold
TOLERANCE = 0.10  # recorded vs /proc/diskstats, relative
FIO_SECONDS = 20
FILE_MIB = 128
SETTLE = 2.0  # seconds from fio's start before its load is steady (its start-up)
UTIL_RECORD = "instance_device:node_disk_io_time_seconds:rate10s"
QUEUE_RECORD = "instance_device:node_disk_io_time_weighted_seconds:rate10s"
AWAIT_RECORD = "instance_device:node_disk_await_seconds:rate10s"
ALERTS = ("DiskUtilizationHigh", "DiskQueueDepthHigh")

SPEC = """
    version: 1
    service: host-disk
    evaluation_interval: 1s
    scrape_interval: 1s
    selectors: {{node: 'job="node"'}}
    alerts:
      - {{signal: disk_utilization, threshold: 30%, window: 10s, for: 5s, severity: warning,
         matchers: 'device="{device}"'}}
      - {{signal: disk_queue_depth, threshold: 1, window: 10s, for: 5s, severity: warning,
         matchers: 'device="{device}"'}}
      # recorded only, compared with iostat's await (its threshold is out of fio's reach)
      - {{signal: disk_await, threshold: 10s, window: 10s, severity: info,
         matchers: 'device="{device}"'}}
    """


# --- the device under the test's folder and its /proc/diskstats counters -----------------------


def backing_disk(folder: Path) -> str | None:
    """The kernel's name of the whole disk that holds ``folder`` (``vda`` for ``vda1``,
    ``dm-0`` for an LVM volume), or None on a filesystem with no block device (tmpfs,
    overlay, btrfs' anonymous device numbers)."""
    dev = folder.stat().st_dev
    node = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
    if not node.exists():
        return None
    real = node.resolve()
    if (real / "partition").exists():
        real = real.parent
    return real.name


Counters = tuple[int, int, int, int]
"""io_ticks and time_in_queue (weighted) in ms; reads + writes completed; their time in ms."""


def diskstats(device: str) -> Counters | None:
    """``device``'s counters from /proc/diskstats (fields 1, 4, 5, 8, 10 and 11 after the
    name: Documentation/admin-guide/iostats.rst)."""
    with Path("/proc/diskstats").open(encoding="ascii") as stats:
        for line in stats:
            fields = line.split()
            if len(fields) >= 14 and fields[2] == device:
                done = int(fields[3]) + int(fields[7])
                return int(fields[12]), int(fields[13]), done, int(fields[6]) + int(fields[10])
    return None


@dataclass
class Sampler:
    """/proc/diskstats of one device every 0.1 s, with Unix times, in a thread."""

    device: str
    samples: list[tuple[float, Counters]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            before = time.time()
            counters = diskstats(self.device)
            assert counters is not None
            self.samples.append(((before + time.time()) / 2, counters))

    @contextmanager
    def running(self) -> Iterator[Sampler]:
        thread = threading.Thread(target=self._run, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            thread.join()

    def at(self, t: float) -> tuple[float, ...]:
        """The counters at ``t``, interpolated between the samples around it."""
        for (t0, c0), (t1, c1) in pairwise(self.samples):
            if t0 <= t <= t1:
                f = (t - t0) / (t1 - t0) if t1 > t0 else 0.0
                return tuple(a + f * (b - a) for a, b in zip(c0, c1, strict=True))
        raise ValueError(f"no samples around {t}")

    def rates(self, start: float, end: float) -> tuple[float, float, float]:
        """%util (0-1), aqu-sz and await (s) over ``[start, end]``, as iostat computes them."""
        (ticks0, queue0, done0, spent0), (ticks1, queue1, done1, spent1) = (
            self.at(start), self.at(end),
        )  # fmt: skip
        elapsed_ms = (end - start) * 1000
        await_s = (spent1 - spent0) / 1000 / (done1 - done0) if done1 > done0 else 0.0
        return (ticks1 - ticks0) / elapsed_ms, (queue1 - queue0) / elapsed_ms, await_s


@dataclass
class Workdir:
    """A folder for fio's file on a block device node_exporter reports, and that device."""

    folder: Path
    device: str


def _accepts_o_direct(folder: Path) -> bool:
    probe = folder / "o_direct_probe"
    try:
        fd = os.open(probe, os.O_CREAT | os.O_WRONLY | os.O_DIRECT, 0o600)
    except OSError:
        return False
    finally:
        probe.unlink(missing_ok=True)
    os.close(fd)
    return True


@contextmanager
def disk_workdir(tmp_path: Path) -> Iterator[Workdir]:
    """The test's tmp folder, else a folder in /var/tmp (disk-backed where /tmp is tmpfs):
    the first on a block device in /proc/diskstats that takes O_DIRECT and fio's file."""
    reasons = []
    with ExitStack() as stack:
        for base in (tmp_path, Path("/var/tmp")):
            if not base.is_dir():
                continue
            folder = base / "fio" if base == tmp_path else None
            if folder is None:
                try:
                    folder = Path(tempfile.mkdtemp(prefix="rulegen-fio-", dir=base))
                except OSError as err:
                    reasons.append(f"{base}: {err}")
                    continue
                stack.callback(shutil.rmtree, folder, True)
            else:
                folder.mkdir()
            device = backing_disk(folder)
            if device is None:
                reasons.append(f"{folder} is on no block device")
            elif diskstats(device) is None:
                reasons.append(f"{folder} is on {device}, which /proc/diskstats lacks")
            elif shutil.disk_usage(folder).free < 4 * FILE_MIB << 20:
                reasons.append(f"{folder}: less than {4 * FILE_MIB} MiB free")
            elif not _accepts_o_direct(folder):
                reasons.append(f"{folder} ({device}) refuses O_DIRECT")
            else:
                yield Workdir(folder, device)
                return
        pytest.skip("no folder on a disk fio can load: " + "; ".join(reasons))


# --- the processes -----------------------------------------------------------------------------


def exported(address: str, device: str) -> bool:
    """Whether node_exporter exports both disk counters of ``device``."""
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=5) as response:
        text = response.read().decode()
    return all(
        f'{name}{{device="{device}"}}' in text
        for name in ("node_disk_io_time_seconds_total", "node_disk_io_time_weighted_seconds_total")
    )


def fio_command(folder: Path) -> list[str]:
    """Random 4 KiB direct reads at queue depth 8 for FIO_SECONDS: libaio when this fio has
    it, else 8 psync jobs (the same depth)."""
    assert FIO is not None
    engines = subprocess.run(
        [FIO, "--enghelp"], capture_output=True, text=True, check=False, timeout=30
    ).stdout
    engine = (
        ["--ioengine=libaio", "--iodepth=8"]
        if "libaio" in engines
        else ["--ioengine=psync", "--numjobs=8", "--group_reporting"]
    )
    return [
        FIO, "--name=rulegen-disk-alerts", f"--filename={folder / 'load'}",
        f"--size={FILE_MIB}M", "--rw=randread", "--bs=4k", "--direct=1", *engine,
        "--time_based", f"--runtime={FIO_SECONDS}s", "--output-format=json",
        f"--output={folder / 'fio.json'}",
    ]  # fmt: skip


def stop(proc: subprocess.Popen[str]) -> None:
    """Kill ``proc`` if it still runs (a failed test leaves no fio behind)."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def write_file(path: Path, mib: int) -> None:
    """``mib`` MiB of random bytes, on the disk (not sparse, not only in the page cache)."""
    with path.open("wb") as out:
        for _ in range(mib // 8):
            out.write(os.urandom(8 << 20))
        out.flush()
        os.fsync(out.fileno())


# --- what Prometheus recorded ------------------------------------------------------------------


def samples(server: PrometheusServer, selector: str, since: float, at: float) -> list[Any]:
    """Every series of ``selector`` from ``since`` to ``at``: ``[{metric, values}]``."""
    span = int(at - since) + 2
    result: list[Any] = server.query(f"{selector}[{span}s]", at)["result"]
    return result


def wait_until(what: str, check: Callable[[], bool], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"{what}: not within {seconds}s"
        time.sleep(0.25)


def test_disk_alerts_fire_on_this_host_and_the_recordings_read_what_iostat_reads(
    cli: Cli, in_tmp: Path
) -> None:
    started = time.monotonic()
    with ExitStack() as stack:
        disk = stack.enter_context(disk_workdir(in_tmp))
        device = disk.device
        write_tree(in_tmp, {"specs/host.yaml": SPEC.format(device=device)})
        built = cli("build", "--no-validate")
        assert built.code == 0, built.err
        rules = in_tmp / "rules" / "prometheus" / f"{SERVICE}.rules.yml"
        assert UTIL_RECORD in rules.read_text()
        assert QUEUE_RECORD in rules.read_text()
        assert AWAIT_RECORD in rules.read_text()

        write_file(disk.folder / "load", FILE_MIB)
        address = stack.enter_context(node_exporter(in_tmp, ["diskstats"]))
        if not exported(address, device):
            pytest.skip(f"node_exporter exports no disk counters for {device}")
        (in_tmp / "data").mkdir()
        scrape = {"job_name": "node", "static_configs": [{"targets": [address]}]}
        server = PrometheusServer(in_tmp / "data", in_tmp, 1, [scrape], rule_files=[rules])
        stack.callback(server.stop)
        server.start()
        up = f'up{{job="node",instance="{address}"}} == 1'
        wait_until("a scrape", lambda: bool(server.query(up, time.time())["result"]), 30)

        # fio's bounded run, /proc/diskstats sampled and the alerts' states polled meanwhile
        seen: dict[tuple[str, str], float] = {}
        alerts = f'ALERTS{{service="{SERVICE}",device="{device}"}}'
        with Sampler(device).running() as sampler:
            fio_start = time.time()
            fio = subprocess.Popen(fio_command(disk.folder), stderr=subprocess.PIPE, text=True)
            stack.callback(stop, fio)
            while fio.poll() is None:
                for series in server.query(alerts, time.time())["result"]:
                    key = (series["metric"]["alertname"], series["metric"]["alertstate"])
                    seen.setdefault(key, time.time())
                time.sleep(0.25)
            fio_end = time.time()
            _, fio_err = fio.communicate()
            assert fio.returncode == 0, fio_err
            time.sleep(1.5)  # Prometheus' evaluations up to fio's end
        end = time.time()
        check(server, sampler, disk, address, (fio_start, fio_end, end), seen)
    LOG.info("wall time %.1fs", time.monotonic() - started)


def check(
    server: PrometheusServer,
    sampler: Sampler,
    disk: Workdir,
    address: str,
    times: tuple[float, float, float],
    seen: dict[tuple[str, str], float],
) -> None:
    """The recordings against /proc/diskstats, then the alerts' states (see the docstring)."""
    fio_start, fio_end, end = times
    device = disk.device
    # steady load: from SETTLE after fio's start to a second before it ended
    steady = (fio_start + SETTLE, fio_end - 1.0)
    util, queue, _ = sampler.rates(*steady)
    fio_util = json.loads((disk.folder / "fio.json").read_text()).get("disk_util", [])
    if util < 1.5 * UTIL or queue < 1.5 * QUEUE:
        pytest.skip(
            f"fio made {device} only {util:.0%} busy with {queue:.2f} requests queued "
            f"(the test needs {1.5 * UTIL:.0%} and {1.5 * QUEUE:.1f})"
        )

    # 1. the recordings equal iostat's figures over the same windows, within 10 %
    report = [f"{device}: fio {FIO_SECONDS}s, steady {util:.1%} util, aqu-sz {queue:.2f}; "
              f"fio's own util {[d.get('util') for d in fio_util]}"]  # fmt: skip
    compared = 0
    for record, index in ((UTIL_RECORD, 0), (QUEUE_RECORD, 1), (AWAIT_RECORD, 2)):
        [series] = samples(server, f'{record}{{device="{device}"}}', fio_start - WINDOW, end)
        assert series["metric"] == {
            "__name__": record, "device": device, "instance": address, "job": "node",
            "service": SERVICE,
        }  # fmt: skip
        for at, value in series["values"]:
            if at - WINDOW < steady[0] or at > steady[1]:
                continue
            recorded, mine = float(value), sampler.rates(at - WINDOW, at)[index]
            report.append(f"{record} @{at - fio_start:5.1f}s: {recorded:.4g} vs {mine:.4g} "
                          f"({recorded / mine - 1:+.1%})")  # fmt: skip
            assert abs(recorded - mine) <= TOLERANCE * mine, "\n".join(report)
            compared += 1
    LOG.info("%s", "\n".join(report))
    assert compared >= 3 * 3, "\n".join(report)  # at least three windows of each

    # 2. both alerts went pending, then firing `for` later, during the run, with their labels
    history = samples(server, f'ALERTS{{service="{SERVICE}",device="{device}"}}',
                      fio_start - WINDOW, end)  # fmt: skip
    for alertname in ALERTS:
        first: dict[str, float] = {}
        for series in history:
            labels = series["metric"]
            if labels["alertname"] == alertname:
                first[labels["alertstate"]] = float(series["values"][0][0])
                assert labels == {
                    "__name__": "ALERTS", "alertname": alertname,
                    "alertstate": labels["alertstate"], "device": device,
                    "instance": address, "job": "node", "service": SERVICE,
                    "severity": "warning",
                }  # fmt: skip
        assert set(first) == {"pending", "firing"}, (alertname, history)
        assert FOR <= first["firing"] - first["pending"] < FOR + 3, (alertname, first)
        assert fio_start < first["firing"] < fio_end, (alertname, first, fio_start, fio_end)
        # and polled as it happened: pending seen before firing
        pending, firing = seen.get((alertname, "pending")), seen.get((alertname, "firing"))
        assert pending is not None, seen
        assert firing is not None, seen
        assert pending < firing, seen
        LOG.info("%s: pending at %.1fs, firing at %.1fs after fio's start (seen at %.1fs, "
                 "%.1fs)", alertname, first["pending"] - fio_start, first["firing"] - fio_start,
                 pending - fio_start, firing - fio_start)  # fmt: skip
