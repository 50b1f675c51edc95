"""Backtest speed on a fleet's history: `rulegen backtest` of the example spec against a real
Prometheus holding days of raw exporter series, against an anchor measured in the same run.

Run: .venv/bin/python benchmarks/backtest_history.py [--days 7] [--hosts 8] [--gpus 8]
     [--step 60] [--cache DIR | --no-cache] [--keep] [--no-fail] [--verbose] [--recorded]

Goal (issue "backtest speed"): a 7-day backtest of specs/llm-serving.yaml against a Prometheus
holding 7 days (+ the SLO history) of 1-minute raw series for 8 hosts x 8 GPUs finishes in
<= 60 s on the 2-core machine. Needs `prometheus` and `promtool` (2.x) on PATH; 127.0.0.1 only.

1. Data. Only raw exporter series, no recordings: node_exporter (:9100), dcgm-exporter
   (:9400), vLLM (:8000, with the weight-loading summary), smartctl_exporter (:9633) and the
   gRPC frontend (:9090) of hosts gpu-node-1..N, with exactly the labels the spec's selectors
   read (job, nvme/NIC device names, mode, gpu, model_name, le, grpc_service, grpc_code).
   Every series spans the backtest's days plus a 2 h lead; the series the SLOs read (the TTFT
   histogram, grpc_server_handled_total) also the 30-day SLO window and the 3-day longest tier
   before --from, for a backtest that evaluates the SLO window cascades from raw series.
   One sample per --step seconds; a diurnal load, host differences, seeded noise and seeded
   incidents (saturated disks with slow weight loads, NIC saturation, GPU contention, request
   queues, hot GPUs, NVLink peaks, prefix-cache misses, gRPC errors, fleet-wide TTFT and
   availability incidents) so that alerts fire a few times. Streamed as OpenMetrics to a file,
   turned into TSDB blocks with `promtool tsdb create-blocks-from openmetrics` and cached
   (keyed by the parameters and GENERATOR_VERSION) under --cache, default
   $XDG_CACHE_HOME/rulegen-bench or ~/.cache/rulegen-bench: generating takes minutes.
2. A Prometheus on a copy of the blocks (the cache stays as written; retention 10 years so
   no old block is deleted, the default lookback), checked: every raw selector of the spec's
   rules must have series (the SLO ones also at the start of their history).
3. The anchor: the least any backtest must do, reading every raw series the rules select once
   over the backtested days at --step (range queries of the plain selectors, one per metric
   name, through rulegen's own client); and, for scale, the server alone decoding the same
   samples (`count_over_time(selector[days])`, one number per series comes back).
4. `rulegen backtest specs/llm-serving.yaml --from --to --format json` (with --recorded: the
   same with `--recorded`), in-process through `rulegen.cli.run` in a child process (its peak
   RSS is its own), counting the requests and samples of every `rulegen.backtest.query.Client`
   and timing every HTTP request. Printed: wall time, queries, samples read, the time spent in
   requests and the slowest ones, alerts replayed and fired, peak RSS, ratios to the anchor,
   and PASS/FAIL against 60 s (exit 1 on FAIL unless --no-fail; 2 when the harness is wrong).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import math
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO
from unittest import mock

from rulegen import cli
from rulegen.backtest import command, query
from rulegen.build import build
from rulegen.catalog import load_catalog
from rulegen.core import promql
from rulegen.generated import AlertRule, RuleGroup
from rulegen.load import discover
from rulegen.promapi.client import PrometheusAPI
from rulegen.render.prometheus import condition_promql

# The real-Prometheus harness is the tests' (tests/support/prometheus.py), not rulegen's.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from support.prometheus import PrometheusServer, promtool

REPO = Path(__file__).resolve().parent.parent
SPEC = REPO / "specs" / "llm-serving.yaml"
SIGNALS = REPO / "signals"

GENERATOR_VERSION = 1
"""Part of the cache key: bump it whenever the generated data changes."""
SEED = 20261115
"""Seeds the traffic and the incidents; each series' own noise is seeded by its name."""
END = int(datetime(2026, 11, 15, tzinfo=UTC).timestamp())
"""--to of the backtest and the last sample. Fixed, so a cached history stays valid; the
data then fits in one 1458 h block (2026-09-19T18:00Z to 2026-11-19T12:00Z) for up to 14
--days, and promtool reads the OpenMetrics file once per block."""
DAY = 86_400
LEAD = 2 * 3600
"""Data before --from for every series: the 1 h average (offset 5m) of
ThroughputNetworkBound, the longest `for` (1 h, NvmeWearHigh), 5m windows."""
SLO_LEAD = 30 * DAY + 3 * DAY + LEAD
"""Data before --from for the SLOs' series: the longest SLO window (30d, availability; ttft
has 28d), the longest burn-rate tier (3d) and the lead."""
GOAL_SECONDS = 60.0
GOAL_SHAPE = {"days": 7, "hosts": 8, "gpus": 8, "step": 60}
BLOCK = "1458h"  # promtool's hidden --max-block-duration: one block for the whole history
CPUS = 4
NVME = ("nvme0n1", "nvme1n1")  # nvme0n1 holds the model weights
SMART = ("nvme0", "nvme1")  # smartctl_exporter names the controllers
BACKEND_NIC, FRONTEND_NIC = "enp65s0f0", "ens3"
BACKEND_SPEED = 12_500_000_000  # 100 Gbit/s in bytes/s; the frontend NIC has no speed file
FRONTEND_SPEED = 3_125_000_000  # 25 Gbit/s: the spec's `link_speed` of FrontendNicSaturated
NVLINK_BANDWIDTH = 600e9  # bytes/s, TX + RX (A100 NVLink3, the signal's default)
MODEL = "deepseek-v4"
GRPC_SERVICE = "inference.v1.Inference"
GRPC_METHODS = (("Generate", "unary", 0.35), ("GenerateStream", "server_stream", 0.65))
# code, share of calls in normal operation (the rest are OK); Unavailable grows in incidents
GRPC_CODES = (("InvalidArgument", 0.002), ("Unavailable", 0.0002), ("Internal", 0.0001),
              ("DeadlineExceeded", 0.0002))  # fmt: skip
TTFT_LE = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0,
           7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)  # fmt: skip
E2E_LE = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0,
          120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0)  # fmt: skip
# lognormal (median s, sigma) of TTFT: normal (p99 ~0.4 s, 0.4% over 500ms), slow host
# (disk saturated or requests queued), fleet-wide incident (43% over 500ms: burns 43x)
TTFT_STATES = ((0.08, 0.69), (0.3, 0.7), (0.45, 0.6))
E2E_STATES = ((6.0, 0.5), (25.0, 0.5), (11.0, 0.5))  # normal, queued, network-bound
# event kind → (chance per host and day, shortest and longest minutes)
EVENTS: dict[str, tuple[float, int, int]] = {
    "disk": (0.08, 20, 45),  # nvme0n1 saturated, TTFT slow, iowait, one slow weight load
    "reload": (0.03, 12, 25),  # weight reload loop: a load finishes every minute
    "network": (0.08, 20, 40),  # backend NIC > 85%, drops, retransmits, softirq, tokens halve
    "frontend": (0.05, 15, 30),  # frontend NIC transmit at 90% of 25 Gbit/s
    "contention": (0.06, 35, 60),  # GPUs at 25-40% while requests wait
    "queue": (0.06, 15, 30),  # 25-50 requests waiting, KV cache full, TTFT and e2e slow
    "thermal": (0.05, 10, 25),  # one GPU at 87-91°C
    "nvlink": (0.02, 15, 30),  # NVLink TX + RX at 93% on every GPU
    "prefix": (0.05, 20, 45),  # prefix-cache hit ratio 10-20%
    "grpc": (0.04, 10, 20),  # 20% of the host's gRPC calls Unavailable
}
FLEET_INCIDENT_MINUTES = 40  # fleet-wide TTFT and availability incidents, in the window and
# twice each in the SLO history (at fixed fractions of the span)


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- parameters


@dataclass(frozen=True)
class Params:
    """What the generated history depends on (the cache key)."""

    days: int
    hosts: int
    gpus: int
    step: int
    end: int = END
    seed: int = SEED
    version: int = GENERATOR_VERSION

    @property
    def start(self) -> int:
        """--from of the backtest."""
        return self.end - self.days * DAY

    @property
    def key(self) -> str:
        """A short hash of every parameter and the generator's version."""
        text = json.dumps(asdict(self), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @property
    def goal_shape(self) -> bool:
        """Whether this is the history the 60 s goal is stated for."""
        return all(getattr(self, name) == value for name, value in GOAL_SHAPE.items())


# --------------------------------------------------------------------------- synthetic data


def _lognormal_cdf(x: float, median: float, sigma: float) -> float:
    if math.isinf(x):
        return 1.0
    return 0.5 * math.erfc(-(math.log(x) - math.log(median)) / (sigma * math.sqrt(2)))


def _le(bound: float) -> str:
    """An ``le`` label as the Prometheus Python client writes it (``0.5``, ``1.0``, ``+Inf``)."""
    return "+Inf" if math.isinf(bound) else repr(bound)


@dataclass
class Host:
    """One machine's per-step state over the whole history (index 0 = the SLO lead's start).

    ``load`` is the diurnal traffic level (0.15-1.15); each event kind has an array that is 0
    outside its events and the event's level (a random draw) inside.
    """

    index: int
    load: list[float]
    requests: list[int]
    draw: list[float]
    events: dict[str, list[float]]
    hot_gpu: list[int]
    loads: dict[int, float] = field(default_factory=dict)  # step → seconds of the load ending
    fleet_ttft: bytearray = field(default_factory=bytearray)
    fleet_grpc: bytearray = field(default_factory=bytearray)

    @property
    def name(self) -> str:
        """``gpu-node-N``."""
        return f"gpu-node-{self.index + 1}"

    def ttft_state(self, k: int) -> int:
        """0 normal, 1 slow on this host, 2 the fleet-wide incident."""
        if self.fleet_ttft[k]:
            return 2
        return 1 if self.events["disk"][k] or self.events["queue"][k] else 0

    def e2e_state(self, k: int) -> int:
        """0 normal, 1 queued, 2 network-bound."""
        if self.events["queue"][k]:
            return 1
        return 2 if self.events["network"][k] else 0


class Timeline:
    """The sample times: every step from the SLO lead's start to the end."""

    def __init__(self, params: Params) -> None:
        self.step = params.step
        self.first = params.start - SLO_LEAD
        self.count = (params.end - self.first) // params.step + 1
        self.short = (params.start - LEAD - self.first) // params.step
        """Index of the first sample of the series that need only the lead."""
        self.stamps = [str(self.first + k * params.step) for k in range(self.count)]

    def index(self, t: int) -> int:
        """The step at or after Unix time ``t``."""
        return max(0, min(self.count, -(-(t - self.first) // self.step)))


def _diurnal(t: int) -> float:
    hour = (t % DAY) / 3600
    level = 0.15 + 0.85 * (0.5 - 0.5 * math.cos(2 * math.pi * (hour - 4) / 24))
    weekend = ((t // DAY) + 3) % 7 >= 5  # 1970-01-01 was a Thursday
    return level * (0.7 if weekend else 1.0)


def make_hosts(params: Params, line: Timeline) -> list[Host]:
    """Every host's traffic and events; the same for the same parameters."""
    fleet_ttft = bytearray(line.count)
    fleet_grpc = bytearray(line.count)
    span = params.end - line.first
    incident = FLEET_INCIDENT_MINUTES * 60
    window_ttft = params.start + int(params.days * DAY * 0.6) // 3600 * 3600 + 14 * 60
    window_grpc = params.start + int(params.days * DAY * 0.3) // 3600 * 3600 + 37 * 60
    for flags, starts in (
        (fleet_ttft, (line.first + span // 5, line.first + span // 2, window_ttft)),
        (fleet_grpc, (line.first + span // 4, line.first + span * 3 // 5, window_grpc)),
    ):
        for begin in starts:
            first, last = line.index(begin), line.index(begin + incident)
            flags[first:last] = b"\x01" * (last - first)
    diurnal = [_diurnal(line.first + k * params.step) for k in range(line.count)]
    hosts = []
    for index in range(params.hosts):
        rng = random.Random(f"{params.seed}-host-{index}")
        weight = 0.85 + 0.3 * rng.random()
        load = [level * weight * (1 + 0.04 * rng.gauss(0, 1)) for level in diurnal]
        per_step = 10.0 * params.step  # 10 requests/s per host at the busiest hour
        requests = [max(0, int(per_step * x + rng.random())) for x in load]
        draw = [rng.random() for _ in range(line.count)]
        host = Host(index, load, requests, draw, {}, [0] * line.count,
                    fleet_ttft=fleet_ttft, fleet_grpc=fleet_grpc)  # fmt: skip
        _add_events(host, rng, params, line)
        hosts.append(host)
    return hosts


def _add_events(host: Host, rng: random.Random, params: Params, line: Timeline) -> None:
    """Each event kind with its chance on each day of the history; and one event of each
    kind in the backtested range, on host (kind's number mod hosts), so that every kind
    happens at least once there whatever the draws."""
    days = -(-(params.end - line.first) // DAY)
    for number, (kind, (chance, shortest, longest)) in enumerate(EVENTS.items()):
        host.events[kind] = [0.0] * line.count
        for day in range(days):
            if rng.random() < chance:
                begin = line.first + day * DAY + rng.randrange(DAY // 60) * 60
                _event(host, kind, begin, rng.randint(shortest, longest), rng, params, line)
        if number % params.hosts == host.index:
            spacing = params.days * DAY // (len(EVENTS) + 1)
            begin = params.start + (number + 1) * spacing // 60 * 60
            _event(host, kind, begin, longest, rng, params, line)


def _event(host: Host, kind: str, begin: int, minutes: int, rng: random.Random, params: Params,
           line: Timeline) -> None:  # fmt: skip
    first, last = line.index(begin), line.index(begin + minutes * 60)
    level = max(rng.random(), 0.001)  # never 0: inside an event reads as true
    host.events[kind][first:last] = [level] * (last - first)
    if kind == "thermal":
        gpu = rng.randrange(params.gpus)
        host.hot_gpu[first:last] = [gpu] * (last - first)
    if kind == "disk" and last < line.count:  # the weight load it slowed down ends
        host.loads[last] = 90.0 + 150.0 * rng.random()
    if kind == "reload":  # a load finishes every minute
        for k in range(first, last, max(1, 60 // params.step)):
            host.loads[k] = 35.0 + 20.0 * rng.random()


Format = Callable[[float], str]


def _int(value: float) -> str:
    return str(int(value))


def _fixed(value: float) -> str:
    return f"{value:.3f}"


def _gauge(value: float) -> str:
    return f"{value:.4g}"


@dataclass
class Batch:
    """Series computed together (they share per-step quantities), written by metric name."""

    series: dict[str, list[tuple[dict[str, str], Sequence[float], Format]]] = field(
        default_factory=dict
    )

    def add(self, name: str, labels: dict[str, str], values: Sequence[float], fmt: Format) -> None:
        """One series: a value per step of the timeline."""
        self.series.setdefault(name, []).append((labels, values, fmt))


class Writer:
    """OpenMetrics to a stream: all series of one metric name together, each in time order;
    counts series and samples."""

    def __init__(self, out: TextIO, line: Timeline) -> None:
        self.out = out
        self.line = line
        self.series = 0
        self.samples = 0
        self.long_series = 0
        self.names: set[str] = set()

    def write(self, batch: Batch, long: bool = False) -> None:
        """Every series of ``batch``; only the steps from the lead on unless ``long`` (the
        series an SLO reads)."""
        first = 0 if long else self.line.short
        stamps = self.line.stamps
        for name, entries in batch.series.items():
            if name in self.names:
                raise RuntimeError(
                    f"{name} written in two batches: OpenMetrics needs them together"
                )
            self.names.add(name)
            for labels, values, fmt in entries:
                text = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
                prefix = f"{name}{{{text}}} "
                self.out.write(
                    "".join(
                        f"{prefix}{fmt(values[k])} {stamps[k]}\n" for k in range(first, len(stamps))
                    )
                )
                self.series += 1
                self.long_series += long
                self.samples += len(stamps) - first


def _total(increments: Sequence[float], start: float) -> list[float]:
    """A counter: ``start`` plus the running sum of the increments."""
    out = []
    total = start
    for inc in increments:
        total += inc
        out.append(total)
    return out


def _round(value: float, draw: float) -> int:
    """``value`` in whole units, rounded up with probability of its fraction."""
    return int(value + draw)


def node_cpu(hosts: Sequence[Host], step: int) -> Batch:
    """``node_cpu_seconds_total``: CPUS CPUs x 5 modes; iowait in disk events, softirq in
    network events."""
    batch = Batch()
    modes = ("idle", "iowait", "softirq", "system", "user")
    for host in hosts:
        ev = host.events
        rng = random.Random(f"cpu-{host.index}")
        for cpu in range(CPUS):
            jitter = 0.9 + 0.2 * rng.random()
            shares: list[list[float]] = [[], [], [], [], []]
            for k, load in enumerate(host.load):
                user = (0.10 + 0.30 * load) * jitter
                system = (0.04 + 0.04 * load) * jitter
                iowait = 0.005 + 0.3 * (ev["disk"][k] > 0) + 0.1 * (ev["reload"][k] > 0)
                network = ev["network"][k]
                softirq = 0.01 + 0.03 * load + (0.14 + 0.04 * network) * (network > 0)
                softirq += 0.03 * (ev["frontend"][k] > 0)
                idle = max(0.0, 1 - user - system - iowait - softirq)
                for row, share in zip(shares, (idle, iowait, softirq, system, user), strict=True):
                    row.append(share * step * (1 + 0.02 * (rng.random() - 0.5)))
            for mode, row in zip(modes, shares, strict=True):
                labels = {"instance": f"{host.name}:9100", "job": "node", "cpu": str(cpu),
                          "mode": mode}  # fmt: skip
                start = (4e6 if mode == "idle" else 2e5) * (1 + host.index % 3)
                batch.add("node_cpu_seconds_total", labels, _total(row, start), _fixed)
    return batch


def node_disks(hosts: Sequence[Host], step: int) -> Batch:
    """The six ``node_disk_*`` counters the disk signals read, per NVMe device: nvme0n1
    (the model weights) saturates in disk events (await 8-20 ms, %util ~99%, queue 70-110)."""
    batch = Batch()
    for host in hosts:
        ev = host.events
        for number, device in enumerate(NVME):
            rng = random.Random(f"disk-{host.index}-{device}")
            rows: dict[str, list[float]] = {
                "reads_completed": [], "writes_completed": [], "read_time_seconds": [],
                "write_time_seconds": [], "io_time_seconds": [], "io_time_weighted_seconds": [],
            }  # fmt: skip
            for k, load in enumerate(host.load):
                noise = 1 + 0.1 * (rng.random() - 0.5)
                reads = (300 + 900 * load) * noise * (0.4 if number else 1.0)
                writes = (150 + 400 * load) * noise
                wait = 0.0002 + 0.0004 * rng.random()
                util = min(0.9, (0.05 + 0.3 * load) * noise)
                queue = (0.3 + 2 * load) * noise
                saturated = number == 0 and ev["disk"][k] > 0
                if saturated:
                    reads, wait = 2500 * noise, 0.008 + 0.012 * ev["disk"][k]
                    util, queue = 0.985 + 0.015 * rng.random(), 70 + 40 * ev["disk"][k]
                elif number == 0 and ev["reload"][k] > 0:
                    reads, util, queue = 1800 * noise, 0.6 * noise, 8 * noise
                done_r, done_w = _round(reads * step, rng.random()), _round(writes * step, 0.5)
                rows["reads_completed"].append(done_r)
                rows["writes_completed"].append(done_w)
                rows["read_time_seconds"].append(done_r * wait)
                rows["write_time_seconds"].append(done_w * wait * 1.3)
                rows["io_time_seconds"].append(util * step)
                rows["io_time_weighted_seconds"].append(queue * step)
            labels = {"instance": f"{host.name}:9100", "job": "node", "device": device}
            for what, row in rows.items():
                fmt = _int if what.endswith("completed") else _fixed
                start = 1e7 * (host.index + 1) if fmt is _int else 1e4 * (host.index + 1)
                batch.add(f"node_disk_{what}_total", labels, _total(row, start), fmt)
    return batch


def node_network(hosts: Sequence[Host], step: int) -> Batch:
    """NIC counters (a 100 Gbit/s backend NIC with a speed file, a 25 Gbit/s frontend NIC
    without one), the backend NIC's speed, and the TCP segment counters."""
    batch = Batch()
    for host in hosts:
        ev = host.events
        base = {"instance": f"{host.name}:9100", "job": "node"}
        for device, speed in ((BACKEND_NIC, BACKEND_SPEED), (FRONTEND_NIC, FRONTEND_SPEED)):
            rng = random.Random(f"nic-{host.index}-{device}")
            rows: dict[str, list[float]] = {"receive_bytes": [], "transmit_bytes": [],
                                            "receive_packets": [], "receive_drop": []}  # fmt: skip
            for k, load in enumerate(host.load):
                noise = 1 + 0.1 * (rng.random() - 0.5)
                if device == BACKEND_NIC:
                    rx, tx = (0.10 + 0.35 * load) * noise, (0.08 + 0.30 * load) * noise
                    busy = ev["network"][k]
                    if busy:
                        rx = tx = 0.87 + 0.08 * busy
                    drop = 0.003 + 0.002 * busy if busy else 0.00001
                else:
                    rx, tx = (0.05 + 0.30 * load) * noise, (0.10 + 0.40 * load) * noise
                    if ev["frontend"][k]:
                        tx = 0.88 + 0.07 * ev["frontend"][k]
                    drop = 0.00001
                received = int(rx * speed * step)
                packets = _round(received / 1200, rng.random())
                rows["receive_bytes"].append(received)
                rows["transmit_bytes"].append(int(tx * speed * step))
                rows["receive_packets"].append(packets)
                rows["receive_drop"].append(_round(packets * drop, rng.random()))
            labels = {**base, "device": device}
            for what, row in rows.items():
                batch.add(f"node_network_{what}_total", labels, _total(row, 1e9), _int)
        speed_row = [float(BACKEND_SPEED)] * len(host.load)
        batch.add("node_network_speed_bytes", {**base, "device": BACKEND_NIC}, speed_row, _int)
        rng = random.Random(f"tcp-{host.index}")
        out_segs: list[float] = []
        retrans: list[float] = []
        for k, load in enumerate(host.load):
            segments = _round((40_000 + 160_000 * load) * step, rng.random())
            share = 0.02 + 0.01 * ev["network"][k] if ev["network"][k] else 0.0005
            out_segs.append(segments)
            retrans.append(_round(segments * share * (0.5 + rng.random()), rng.random()))
        batch.add("node_netstat_Tcp_OutSegs", base, _total(out_segs, 1e10), _int)
        batch.add("node_netstat_Tcp_RetransSegs", base, _total(retrans, 1e7), _int)
    return batch


def smartctl(hosts: Sequence[Host], worn: int) -> Batch:
    """``smartctl_device_percentage_used`` per NVMe controller; one drive of host ``worn``
    is past 80% (NvmeWearHigh fires once, for the whole range)."""
    batch = Batch()
    for host in hosts:
        for number, device in enumerate(SMART):
            used = 82.0 if (host.index, number) == (worn, 1) else 3.0 + 4 * host.index + number
            labels = {"instance": f"{host.name}:9633", "job": "smartctl", "device": device}
            batch.add("smartctl_device_percentage_used", labels, [used] * len(host.load), _int)
    return batch


def _histogram(
    batch: Batch,
    host: Host,
    metric: str,
    bounds: Sequence[float],
    states: Sequence[tuple[float, float]],
    state_of: Callable[[int], int],
) -> None:
    """A vLLM histogram (buckets, _count, _sum): each step's requests spread over the
    buckets by the lognormal of the step's state (one rounding draw per step for all
    buckets, so the cumulative buckets stay ordered)."""
    edges = (*bounds, math.inf)
    cdf = [[_lognormal_cdf(b, m, s) for b in edges] for m, s in states]
    means = [m * math.exp(s * s / 2) for m, s in states]
    labels = {"instance": f"{host.name}:8000", "job": "vllm", "model_name": MODEL, "engine": "0"}
    kinds = [state_of(k) for k in range(len(host.requests))]
    for i, bound in enumerate(edges):
        counts = [
            _round(n * cdf[s][i], u)
            for n, s, u in zip(host.requests, kinds, host.draw, strict=True)
        ]
        batch.add(f"{metric}_bucket", {**labels, "le": _le(bound)}, _total(counts, 0), _int)
    batch.add(f"{metric}_count", labels, _total(host.requests, 0), _int)
    sums = [n * means[s] for n, s in zip(host.requests, kinds, strict=True)]
    batch.add(f"{metric}_sum", labels, _total(sums, 0), _fixed)


def vllm_ttft(hosts: Sequence[Host]) -> Batch:
    """The TTFT histogram (the SLO and three alerts read it): the whole history."""
    batch = Batch()
    for host in hosts:
        _histogram(batch, host, "vllm:time_to_first_token_seconds", TTFT_LE, TTFT_STATES,
                   host.ttft_state)  # fmt: skip
    return batch


def vllm_e2e(hosts: Sequence[Host]) -> Batch:
    """The end-to-end latency histogram."""
    batch = Batch()
    for host in hosts:
        _histogram(batch, host, "vllm:e2e_request_latency_seconds", E2E_LE, E2E_STATES,
                   host.e2e_state)  # fmt: skip
    return batch


def vllm_engine(hosts: Sequence[Host]) -> Batch:
    """Prefix cache, KV cache, the waiting queue, generated tokens; and the weight-loading
    summary (``deepseek_weight_loading_seconds``) of the same server."""
    batch = Batch()
    for host in hosts:
        ev = host.events
        rng = random.Random(f"vllm-{host.index}")
        labels = {"instance": f"{host.name}:8000", "job": "vllm", "model_name": MODEL,
                  "engine": "0"}  # fmt: skip
        queries: list[float] = []
        hits: list[float] = []
        tokens: list[float] = []
        kv: list[float] = []
        waiting: list[float] = []
        loads: list[float] = []
        loaded: list[float] = []
        for k, (load, n) in enumerate(zip(host.load, host.requests, strict=True)):
            asked = _round(n * 1800 * (0.9 + 0.2 * rng.random()), rng.random())
            ratio = 0.1 + 0.1 * ev["prefix"][k] if ev["prefix"][k] else 0.5 + 0.15 * rng.random()
            queries.append(asked)
            hits.append(_round(asked * ratio, rng.random()))
            slow = 0.5 if ev["network"][k] else 1.0
            tokens.append(_round(n * 350 * slow * (0.95 + 0.1 * rng.random()), rng.random()))
            usage = min(0.93, 0.25 + 0.55 * load + 0.03 * rng.gauss(0, 1))
            queue = max(0.0, float(int(2 * load - 1 + rng.gauss(0, 1))))
            if ev["contention"][k]:
                queue = float(3 + int(9 * rng.random()))
            if ev["queue"][k]:
                usage, queue = 0.97 + 0.025 * rng.random(), float(25 + int(25 * ev["queue"][k]))
            kv.append(max(0.0, usage))
            waiting.append(queue)
            seconds = host.loads.get(k)
            loads.append(0 if seconds is None else 1)
            loaded.append(seconds or 0.0)
        batch.add("vllm:prefix_cache_queries_total", labels, _total(queries, 0), _int)
        batch.add("vllm:prefix_cache_hits_total", labels, _total(hits, 0), _int)
        batch.add("vllm:generation_tokens_total", labels, _total(tokens, 0), _int)
        batch.add("vllm:kv_cache_usage_perc", labels, kv, _gauge)
        batch.add("vllm:num_requests_waiting", labels, waiting, _int)
        server = {"instance": f"{host.name}:8000", "job": "vllm"}
        batch.add("deepseek_weight_loading_seconds_count", server, _total(loads, 1), _int)
        batch.add("deepseek_weight_loading_seconds_sum", server, _total(loaded, 48.2), _fixed)
    return batch


def dcgm(hosts: Sequence[Host], gpus: int) -> Batch:
    """dcgm-exporter gauges per GPU: utilisation, temperature, NVLink TX and RX bytes/s."""
    batch = Batch()
    for host in hosts:
        ev = host.events
        for gpu in range(gpus):
            rng = random.Random(f"gpu-{host.index}-{gpu}")
            digest = hashlib.sha256(f"{host.name}-{gpu}".encode()).hexdigest()
            uuid = "-".join(digest[a:b] for a, b in ((0, 8), (8, 12), (12, 16), (16, 20), (20, 32)))
            labels = {"instance": f"{host.name}:9400", "job": "dcgm", "gpu": str(gpu),
                      "UUID": f"GPU-{uuid}",
                      "device": f"nvidia{gpu}", "modelName": "NVIDIA A100-SXM4-80GB",
                      "Hostname": host.name}  # fmt: skip
            util: list[float] = []
            temp: list[float] = []
            tx: list[float] = []
            rx: list[float] = []
            for k, load in enumerate(host.load):
                busy = min(100.0, max(0.0, 55 + 40 * load + 4 * rng.gauss(0, 1)))
                if ev["contention"][k]:
                    busy = 25 + 15 * rng.random()
                heat = 50 + 25 * busy / 100 + rng.gauss(0, 1)
                if ev["thermal"][k] and host.hot_gpu[k] == gpu:
                    heat = 87 + 4 * rng.random()
                link = (0.05 + 0.15 * load) * (1 + 0.1 * rng.gauss(0, 1))
                if ev["nvlink"][k]:
                    link = 0.465 + 0.01 * rng.random()
                util.append(float(int(busy)))
                temp.append(float(int(heat)))
                tx.append(float(int(link * NVLINK_BANDWIDTH * (0.98 + 0.04 * rng.random()))))
                rx.append(float(int(link * NVLINK_BANDWIDTH)))
            batch.add("DCGM_FI_DEV_GPU_UTIL", labels, util, _int)
            batch.add("DCGM_FI_DEV_GPU_TEMP", labels, temp, _int)
            batch.add("DCGM_FI_PROF_NVLINK_TX_BYTES", labels, tx, _int)
            batch.add("DCGM_FI_PROF_NVLINK_RX_BYTES", labels, rx, _int)
    return batch


def grpc(hosts: Sequence[Host]) -> Batch:
    """``grpc_server_handled_total`` of the frontend (the availability SLO and
    GrpcErrorRatioHigh read it): the whole history. Each vLLM request is one call."""
    batch = Batch()
    for host in hosts:
        rng = random.Random(f"grpc-{host.index}")
        for method, kind, share in GRPC_METHODS:
            rows: dict[str, list[float]] = {"OK": [], **{code: [] for code, _ in GRPC_CODES}}
            for k, n in enumerate(host.requests):
                calls = _round(n * share, rng.random())
                extra = 0.03 if host.fleet_grpc[k] else 0.0
                extra += 0.2 if host.events["grpc"][k] else 0.0
                failed = 0
                for code, normal in GRPC_CODES:
                    ratio = normal + (extra if code == "Unavailable" else 0.0)
                    count = min(_round(calls * ratio, rng.random()), calls - failed)
                    rows[code].append(count)
                    failed += count
                rows["OK"].append(calls - failed)
            for code, row in rows.items():
                labels = {"instance": f"{host.name}:9090", "job": "inference-frontend",
                          "grpc_service": GRPC_SERVICE, "grpc_method": method,
                          "grpc_type": kind, "grpc_code": code}  # fmt: skip
                batch.add("grpc_server_handled_total", labels, _total(row, 0), _int)
    return batch


@dataclass
class History:
    """A generated TSDB and what it holds."""

    data: Path
    series: int
    samples: int
    long_series: int
    generate_seconds: float
    blocks_seconds: float
    openmetrics_bytes: int
    cached: bool = False


def write_history(params: Params, folder: Path) -> History:
    """Generate the OpenMetrics file in ``folder``, turn it into blocks in ``folder/data``,
    delete the file; returns the figures."""
    began = time.perf_counter()
    line = Timeline(params)
    hosts = make_hosts(params, line)
    source = folder / "history.om"
    with source.open("w", buffering=1 << 22) as out:
        writer = Writer(out, line)
        writer.write(node_cpu(hosts, params.step))
        writer.write(node_disks(hosts, params.step))
        writer.write(node_network(hosts, params.step))
        writer.write(smartctl(hosts, worn=min(4, params.hosts - 1)))
        writer.write(vllm_ttft(hosts), long=True)
        writer.write(vllm_e2e(hosts))
        writer.write(vllm_engine(hosts))
        writer.write(dcgm(hosts, params.gpus))
        writer.write(grpc(hosts), long=True)
        out.write("# EOF\n")
    generated = time.perf_counter() - began
    size = source.stat().st_size
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    _log(
        f"history: {writer.series:,} series, {writer.samples:,} samples, "
        f"{size / 2**30:.2f} GiB of OpenMetrics in {generated:.1f} s (peak RSS {peak:.0f} MB); "
        "promtool …"
    )
    began = time.perf_counter()
    data = folder / "data"
    promtool(["tsdb", "create-blocks-from", "openmetrics", "--quiet",
              f"--max-block-duration={BLOCK}", str(source), str(data)],
             folder, timeout=4 * 3600)  # fmt: skip
    blocks = time.perf_counter() - began
    source.unlink()
    tool_peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    _log(f"promtool: blocks in {blocks:.1f} s (peak RSS {tool_peak:.0f} MB, or this process's)")
    return History(data, writer.series, writer.samples, writer.long_series, generated, blocks,
                   size)  # fmt: skip


def estimated_bytes(params: Params) -> int:
    """About how large the OpenMetrics file gets (155 bytes a line), to check the disk."""
    short = CPUS * 5 + len(NVME) * 6 + 2 * 4 + 1 + 2 + len(SMART) + len(E2E_LE) + 3 + 5 + 2
    short += params.gpus * 4
    long = len(TTFT_LE) + 3 + len(GRPC_METHODS) * (len(GRPC_CODES) + 1)
    steps = (params.days * DAY + LEAD) // params.step + 1
    long_steps = (params.days * DAY + SLO_LEAD) // params.step + 1
    return 155 * params.hosts * (short * steps + long * long_steps)


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def cached_history(params: Params, root: Path | None) -> tuple[History, Path]:
    """The history for ``params``: from the cache under ``root``, else generated (into the
    cache, or with ``root`` None into a temporary folder). Returns it and its folder."""
    if root is not None:
        entry = root / f"backtest-history-{params.key}"
        info = entry / "history.json"
        if info.is_file():
            figures = json.loads(info.read_text())["history"]
            figures["data"] = entry / "data"
            return History(**{**figures, "cached": True}), entry
        root.mkdir(parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix=".building-", dir=root))
    else:
        folder = Path(tempfile.mkdtemp(prefix="backtest-history-gen-"))
    need = estimated_bytes(params)
    free = shutil.disk_usage(folder).free
    if free < 1.5 * need:
        shutil.rmtree(folder)
        raise SystemExit(
            f"not enough disk space in {folder.parent}: the OpenMetrics file needs about "
            f"{need / 2**30:.1f} GiB, {free / 2**30:.1f} GiB free (use --cache DIR elsewhere)"
        )
    _log(f"generating the history into {folder} (about {need / 2**30:.1f} GiB of OpenMetrics)")
    try:
        history = write_history(params, folder)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    if root is None:
        return history, folder
    figures = {k: v for k, v in asdict(history).items() if k not in ("data", "cached")}
    info_text = json.dumps({"params": asdict(params), "history": figures}, indent=2)
    (folder / "history.json").write_text(info_text + "\n")
    try:
        folder.rename(entry)
    except OSError:  # another run cached it meanwhile
        shutil.rmtree(folder)
    history.data = entry / "data"
    return history, entry


# --------------------------------------------------------------------------- what the rules read


@dataclass(frozen=True)
class Selector:
    """A raw-series selector of the spec's rules; ``slo`` when an SLO's rules read it."""

    name: str
    text: str
    slo: bool


def raw_selectors() -> list[Selector]:
    """Every selector of a raw series (not a recording) in the spec's rules, alerts included,
    from an in-memory build (the committed rules/ may be stale while specs/ changes)."""
    result = build(discover([SPEC]), load_catalog([SIGNALS]))
    groups: list[tuple[RuleGroup, bool]] = [(g, False) for s in result.services for g in s.groups]
    groups += [(slo.group, True) for s in result.services for slo in s.slos]
    recorded = {r.record for g, _ in groups for r in g.rules if not isinstance(r, AlertRule)}
    found: dict[str, Selector] = {}
    for group, slo in groups:
        for rule in group.rules:
            expr = condition_promql(rule.condition) if isinstance(rule, AlertRule) else rule.expr
            for name, text in promql.selectors(expr):
                if name not in recorded:
                    known = found.get(text)
                    found[text] = Selector(name, text, slo or (known is not None and known.slo))
    return sorted(found.values(), key=lambda s: (s.name, s.text))


def check_coverage(
    server: PrometheusServer, selectors: Sequence[Selector], params: Params
) -> list[tuple[Selector, int, int | None]]:
    """Per selector: the series with samples in the backtested range, and for an SLO's
    selector those with samples in the first hour of its history."""
    out = []
    window = params.days * DAY
    first = params.start - SLO_LEAD + 3600
    for selector in selectors:
        expr = f"count(count_over_time({selector.text}[{window}s]))"
        now = server.query(expr, params.end)["result"]
        series = int(float(now[0]["value"][1])) if now else 0
        early: int | None = None
        if selector.slo:
            back = server.query(f"count(count_over_time({selector.text}[3600s]))", first)
            early = int(float(back["result"][0]["value"][1])) if back["result"] else 0
        out.append((selector, series, early))
    return out


@dataclass
class Figures:
    """Wall time, requests and samples of one way of reading the history."""

    wall: float = 0.0
    queries: int = 0
    samples: int = 0
    series: int = 0


def anchor(url: str, selectors: Sequence[Selector], params: Params) -> Figures:
    """Read every raw series the rules select once over the range at --step: one range query
    (chunked as the backtest's) per metric name, its selectors joined with ``or``."""
    by_name: dict[str, list[str]] = {}
    for selector in selectors:
        by_name.setdefault(selector.name, []).append(selector.text)
    client = query.Client(url)
    times = query.grid(params.start * 1000, params.end * 1000, params.step * 1000)
    figures = Figures()
    began = time.perf_counter()
    for texts in by_name.values():
        figures.series += len(client.range_query(" or ".join(texts), times))
    figures.wall = time.perf_counter() - began
    figures.queries, figures.samples = client.queries, client.samples
    return figures


def server_anchor(server: PrometheusServer, selectors: Sequence[Selector], params: Params
                  ) -> Figures:  # fmt: skip
    """The server alone decoding every selected raw sample of the range once: one instant
    ``count_over_time(selector[range])`` per metric name (the answer is a number per series,
    the sum of which is the samples the server read)."""
    by_name: dict[str, list[str]] = {}
    for selector in selectors:
        by_name.setdefault(selector.name, []).append(selector.text)
    window = params.days * DAY
    figures = Figures()
    began = time.perf_counter()
    for texts in by_name.values():
        expr = " or ".join(f"count_over_time({text}[{window}s])" for text in texts)
        result = server.query(expr, params.end)["result"]
        figures.queries += 1
        figures.series += len(result)
        figures.samples += sum(int(float(item["value"][1])) for item in result)
    figures.wall = time.perf_counter() - began
    return figures


# --------------------------------------------------------------------------- the backtest


def run_backtest(url: str, start: int, end: int, extra: Sequence[str]) -> dict[str, Any]:
    """``rulegen backtest --format json`` in this process, counting every Client's requests
    and samples and timing the in-memory build of the specs; what the parent prints (run in
    a child process, so that its peak RSS is its own)."""
    clients: list[query.Client] = []
    original = query.Client.__init__

    def counting(self: query.Client, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        clients.append(self)

    building = [0.0]
    build_specs = getattr(command, "build", build)

    def timed_build(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return build_specs(*args, **kwargs)
        finally:
            building[0] += time.perf_counter() - began

    requests: list[tuple[float, str]] = []

    def timed(method: Callable[..., Any]) -> Callable[..., Any]:
        def call(self: PrometheusAPI, text: str, *args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return method(self, text, *args, **kwargs)
            finally:
                requests.append((time.perf_counter() - began, f"{method.__name__} {text}"))

        return call

    argv = ["backtest", str(SPEC), "--prometheus", url, "--from", str(start), "--to", str(end),
            "--format", "json", "--signals", str(SIGNALS), *extra]  # fmt: skip
    out = io.StringIO()
    with contextlib.ExitStack() as stack:
        stack.enter_context(mock.patch.object(query.Client, "__init__", counting))
        for name in ("query", "query_range", "series"):
            method = getattr(PrometheusAPI, name)
            stack.enter_context(mock.patch.object(PrometheusAPI, name, timed(method)))
        if hasattr(command, "build"):
            stack.enter_context(mock.patch.object(command, "build", timed_build))
        stack.enter_context(contextlib.redirect_stdout(out))
        began = time.perf_counter()
        code = cli.run(argv)
        wall = time.perf_counter() - began
    alerts: dict[str, dict[str, Any]] = {}
    for row in json.loads(out.getvalue()) if code == 0 else []:
        tier = row["rule_labels"].get("severity", "")
        key = f"{row['alert']}|{row['group']}|{json.dumps(row['rule_labels'], sort_keys=True)}"
        new = {"alert": row["alert"], "group": row["group"], "severity": tier, "fired": 0,
               "label_sets": 0, "firing_seconds": 0, "warning": row["warning"]}  # fmt: skip
        entry = alerts.setdefault(key, new)
        entry["fired"] += row["fired"]
        entry["label_sets"] += row["firing_seconds"] > 0
        entry["firing_seconds"] += row["firing_seconds"]
    return {
        "code": code,
        "wall": wall,
        "build": building[0],
        "clients": len(clients),
        "queries": sum(getattr(c, "queries", 0) for c in clients),
        "samples": sum(getattr(c, "samples", 0) for c in clients),
        # VmHWM, not ru_maxrss: Linux carries the forking parent's RSS over exec into that
        "peak_rss_mb": _peak_rss_mb(os.getpid()),
        "requests": len(requests),
        "in_requests": sum(seconds for seconds, _ in requests),
        "slowest": sorted(requests, reverse=True)[:5],
        "alerts": sorted(alerts.values(), key=lambda a: (a["alert"], a["group"], a["severity"])),
    }


def backtest_child(url: str, params: Params, extra: Sequence[str]) -> tuple[dict[str, Any], float]:
    """``run_backtest`` in a child process; its figures and the child's whole wall time."""
    began = time.perf_counter()
    argv = [sys.executable, __file__, "--child-backtest", url, str(params.start), str(params.end)]
    proc = subprocess.run(
        [*argv, *(f"--child-arg={arg}" for arg in extra)],
        capture_output=True, text=True, check=False, cwd=REPO,
    )  # fmt: skip
    elapsed = time.perf_counter() - began
    if proc.returncode != 0:
        raise RuntimeError(f"the backtest child exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    figures: dict[str, Any] = json.loads(proc.stdout)
    if figures["code"] != 0:
        raise RuntimeError(f"rulegen backtest exited {figures['code']}:\n{proc.stderr[-3000:]}")
    return figures, elapsed


# --------------------------------------------------------------------------- the run


def _peak_rss_mb(pid: int) -> float | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for text in status.splitlines():
        if text.startswith("VmHWM:"):
            return int(text.split()[1]) / 1024
    return None


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _when(t: int) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Run:
    """What one run measured."""

    ready: float = 0.0
    anchor: Figures = field(default_factory=Figures)
    server_anchor: Figures = field(default_factory=Figures)
    backtest: dict[str, Any] = field(default_factory=dict)
    process: float = 0.0
    server_rss_mb: float | None = None
    kept: str = ""


def print_history(history: History, params: Params, folder: Path) -> None:
    """The data's shape and what it cost to make."""
    per_host = (f"{CPUS} CPUs x 5 modes, {len(NVME)} NVMe drives, 2 NICs, {params.gpus} GPUs, "
                "a vLLM server, a gRPC frontend")  # fmt: skip
    print(
        f"history: {params.hosts} hosts ({per_host}); {history.series:,} raw series "
        f"({history.long_series:,} of them read by SLOs), {history.samples:,} samples every "
        f"{params.step}s\n  {params.days}d + {LEAD // 3600}h lead for every series, the SLO "
        f"series from {SLO_LEAD // DAY}d {SLO_LEAD % DAY // 3600}h before --from; "
        f"--from {_when(params.start)} --to {_when(params.end)}"
    )
    how = "cached" if history.cached else "generated now"
    print(
        f"  {how}: OpenMetrics {history.openmetrics_bytes / 2**30:.2f} GiB written in "
        f"{history.generate_seconds:.1f} s, promtool blocks in {history.blocks_seconds:.1f} s; "
        f"{folder} ({_du(folder) / 2**20:.0f} MiB)"
    )


def serve(history: History, params: Params, selectors: Sequence[Selector], args: argparse.Namespace
          ) -> Run:  # fmt: skip
    """Start Prometheus on a copy of the blocks (the cache stays as promtool wrote it), check
    the data, measure the anchor and the backtest; stop it unless ``--keep``."""
    workdir = Path(tempfile.mkdtemp(prefix="backtest-history-"))
    shutil.copytree(history.data, workdir / "data")
    server = PrometheusServer(workdir / "data", workdir, interval=params.step)
    run = Run()
    try:
        began = time.perf_counter()
        server.start()
        run.ready = time.perf_counter() - began
        version = query.Client(server.url).api.version()
        held = server.query('count({__name__=~".+"})', params.end)["result"]
        print(
            f"server: prometheus {version} at {server.url}, ready in {run.ready:.1f} s; "
            f"{int(float(held[0]['value'][1])) if held else 0:,} series at --to"
        )
        check(server, selectors, params, args.verbose)
        run.server_anchor = server_anchor(server, selectors, params)
        run.anchor = anchor(server.url, selectors, params)
        extra = ["--recorded"] if args.recorded else []
        run.backtest, run.process = backtest_child(server.url, params, extra)
        run.server_rss_mb = _peak_rss_mb(server.proc.pid) if server.proc else None
        if args.keep and server.proc is not None:
            run.kept = (
                f"left running (--keep): {server.url} (pid {server.proc.pid}), data in "
                f"{workdir}\n  rulegen backtest {SPEC.relative_to(REPO)} --prometheus "
                f"{server.url} --from {_when(params.start)} --to {_when(params.end)}\n"
                f"  stop it with: kill {server.proc.pid}; rm -r {workdir}"
            )
    finally:
        if not run.kept:
            server.stop()
            shutil.rmtree(workdir, ignore_errors=True)
    return run


def check(
    server: PrometheusServer, selectors: Sequence[Selector], params: Params, verbose: bool
) -> None:
    """Every raw selector of the rules must have series (RuntimeError otherwise: a selector
    without data is a bug of the generator)."""
    coverage = check_coverage(server, selectors, params)
    empty = [s.text for s, n, early in coverage if n == 0 or early == 0]
    print(
        f"coverage: {len(selectors)} raw selectors in the spec's rules "
        f"({sum(s.slo for s in selectors)} read by SLOs), "
        + ("every one with series" if not empty else f"{len(empty)} WITHOUT series")
    )
    for selector, series, early in coverage if verbose or empty else ():
        back = "" if early is None else f", {early} at the start of the SLO history"
        print(f"  {series:>4} series{back}: {selector.text}")
    if empty:
        raise RuntimeError("the generator misses series the rules read: " + ", ".join(empty))


def print_alerts(alerts: Sequence[dict[str, Any]]) -> None:
    """One line per alerting rule: episodes that began in the range, label sets that fired,
    firing time, and the backtest's warning if any."""
    print(f"  {'alert':<26} {'group':<30} {'severity':<8} {'fired':>5} {'sets':>4} "
          f"{'firing':>8}  warning")  # fmt: skip
    for a in alerts:
        warning = a["warning"] or ""
        note = warning if len(warning) <= 60 else warning[:57] + "..."
        print(
            f"  {a['alert']:<26} {a['group']:<30} {a['severity']:<8} {a['fired']:>5} "
            f"{a['label_sets']:>4} {a['firing_seconds'] / 3600:>7.1f}h  {note}"
        )
    warnings = sorted({a["warning"] for a in alerts if a["warning"]})
    for text in warnings[:2]:
        print(f"  warning: {text}")


def report(run: Run, params: Params) -> bool:
    """Print the backtest's figures against the anchor and the goal; True when met."""
    base, figures, inside = run.anchor, run.backtest, run.server_anchor
    print(
        f"anchor: every selected raw series once over {params.days}d at {params.step}s, range "
        f"queries of the plain selectors through rulegen's client: {base.wall:.2f} s, "
        f"{base.queries} queries, {base.samples:,} samples ({base.series:,} series)\n"
        f"  the server alone reading them (count_over_time): {inside.wall:.2f} s, "
        f"{inside.queries} queries, {inside.samples:,} samples"
    )
    alerts = figures["alerts"]
    fired = sum(a["firing_seconds"] > 0 for a in alerts)
    warned = sum(bool(a["warning"]) for a in alerts)
    wall = float(figures["wall"])
    print(
        f"backtest: {wall:.2f} s (building the specs in memory {figures['build']:.2f} s; "
        f"{run.process:.2f} s with the child process's start), {figures['queries']:,} "
        f"queries, {figures['samples']:,} samples read, peak RSS "
        f"{figures['peak_rss_mb'] or 0:.0f} MB (Prometheus: {run.server_rss_mb or 0:.0f} MB)"
        f"\n  {len(alerts)} alerting rules replayed, {fired} fired at least once, {warned} "
        "with a warning"
    )
    time_ratio = wall / base.wall if base.wall else math.inf
    sample_ratio = figures["samples"] / base.samples if base.samples else math.inf
    print(f"  vs the anchor: {time_ratio:.1f}x its time, {sample_ratio:.2f}x its samples")
    print(
        f"  {figures['requests']:,} HTTP requests took {figures['in_requests']:.2f} s (the "
        f"server's work and decoding the answers); the slowest:"
    )
    for seconds, text in figures["slowest"]:
        flat = " ".join(text.split())
        print(f"    {seconds:6.2f} s  {flat if len(flat) <= 110 else flat[:107] + '...'}")
    print_alerts(alerts)
    ok = wall <= GOAL_SECONDS
    shape = "" if params.goal_shape else " (stated for --days 7 --hosts 8 --gpus 8 --step 60)"
    verdict = "PASS" if ok else "FAIL"
    print(f"goal: a {params.days}-day backtest in <= {GOAL_SECONDS:.0f} s{shape}: {verdict} "
          f"({wall:.1f} s)")  # fmt: skip
    return ok


def measure(args: argparse.Namespace, params: Params) -> int:
    """Everything after the arguments; the exit status."""
    root = None if args.no_cache else args.cache
    before = _load()
    began = time.perf_counter()
    history, folder = cached_history(params, root)
    prepared = time.perf_counter() - began
    print_history(history, params, folder)
    try:
        run = serve(history, params, raw_selectors(), args)
    except RuntimeError as exc:
        print(f"harness error: {exc}")
        return 2
    finally:
        if root is None:
            shutil.rmtree(folder, ignore_errors=True)
    ok = report(run, params)
    print(f"load average: {before} before, {_load()} after (2 cores; other work on the machine "
          "slows every figure)")  # fmt: skip
    print(f"run: {time.perf_counter() - began:.0f} s in all (history ready in {prepared:.1f} s, "
          f"server in {run.ready:.1f} s)")  # fmt: skip
    if run.kept:
        print(run.kept)
    return 0 if ok or args.no_fail else 1


def main() -> int:
    """Parse the arguments and run (or, hidden, be the backtest's child process)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--days", type=int, default=7, help="backtested days (default 7)")
    parser.add_argument("--hosts", type=int, default=8, help="hosts (default 8)")
    parser.add_argument("--gpus", type=int, default=8, help="GPUs per host (default 8)")
    parser.add_argument("--step", type=int, default=60, help="seconds between samples (60)")
    cache_home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    parser.add_argument("--cache", type=Path, default=cache_home / "rulegen-bench",
                        metavar="DIR", help="where generated histories are kept "
                        "(default: %(default)s)")  # fmt: skip
    parser.add_argument("--no-cache", action="store_true", help="generate into a temporary folder")
    parser.add_argument("--keep", action="store_true", help="leave the server up, print its URL")
    parser.add_argument("--no-fail", action="store_true", help="exit 0 when the goal is missed")
    parser.add_argument("--verbose", action="store_true", help="print every selector's series")
    parser.add_argument("--recorded", action="store_true",
                        help="pass --recorded to the backtest (read deployed recordings: none "
                        "here, so it measures the queries alone)")  # fmt: skip
    parser.add_argument("--child-backtest", nargs=3, metavar=("URL", "FROM", "TO"),
                        help=argparse.SUPPRESS)  # fmt: skip
    parser.add_argument("--child-arg", action="append", default=[], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_backtest:
        url, start, end = args.child_backtest
        print(json.dumps(run_backtest(url, int(start), int(end), args.child_arg)))
        return 0
    if not (1 <= args.days <= 60 and args.hosts >= 1 and args.gpus >= 1):
        parser.error("--days must be 1-60, --hosts and --gpus at least 1")
    if args.step < 1 or 60 % args.step:
        parser.error("--step must divide 60")
    for tool in ("prometheus", "promtool"):
        if shutil.which(tool) is None:
            parser.error(f"{tool} not found on PATH (apt-get install prometheus)")
    return measure(args, Params(args.days, args.hosts, args.gpus, args.step))


if __name__ == "__main__":
    sys.exit(main())
