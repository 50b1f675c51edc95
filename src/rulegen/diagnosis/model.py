"""Resolved diagnoses: every threshold exact, every recording and condition rendered.

Why: the rules, the annotations, the generated tests and the inhibitions all read the same
objects, so the evidence an alert checks is the evidence its description prints and its test
drives.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

from rulegen.core import promql
from rulegen.core.histograms import CLASSIC, HistogramKind
from rulegen.host import Host
from rulegen.source.loader import Origin

# The recordings a diagnosis reads, one value per host (and model, for vLLM series).
# ``gpu_health``: per GPU of a host, the new XID's code or 1 for a failed row remapping.
Quantity = Literal["ttft", "disk", "network", "throughput", "gpu", "waiting", "gpu_health"]
# Kinds and the alert each one raises.
ALERT_NAMES = {
    "ttft_disk_bound": "TTFTDiskBound",
    "throughput_network_bound": "ThroughputNetworkBound",
    "gpu_kernel_contention": "GpuKernelContention",
    "gpu_health": "GpuHealthDegraded",
}
# Catalog signals whose alerts a diagnosis explains (symptom or cause) on the same host.
EXPLAINS = {
    "ttft_disk_bound": (
        "ttft_latency", "e2e_latency", "disk_utilization", "disk_await", "disk_queue_depth",
        "cpu_iowait",
    ),
    "throughput_network_bound": (
        "network_saturation", "network_drops", "tcp_retransmits", "cpu_softirq", "e2e_latency",
    ),
    "gpu_kernel_contention": ("gpu_underutilized", "requests_waiting"),
    # a failing GPU slows or stops everything the host serves: its latency and throughput
    # pages, and the two signals that report the fault per GPU
    "gpu_health": (
        "ttft_latency", "e2e_latency", "itl_latency", "vllm_queue_time", "requests_waiting",
        "gpu_underutilized", "kv_cache_usage", "kv_cache_forecast", "vllm_preemptions",
        "gpu_xid_errors", "gpu_row_remap_failure",
    ),
}  # fmt: skip
# Kinds whose alert also holds back the other diagnoses of the same host (their evidence is
# a symptom of the fault: a failing GPU makes TTFT slow and GPUs idle whatever the disk does).
EXPLAINS_DIAGNOSES = ("gpu_health",)


@dataclass(frozen=True)
class Recording:
    """A host-level recording: its name, PromQL and the labels it keeps besides the host."""

    quantity: Quantity
    record: str
    expr: str
    by_model: bool


@dataclass(frozen=True)
class Evidence:
    """One fact on one host: ``quantity op threshold``; the first one is the alert's value."""

    quantity: Quantity
    about: str
    op: Literal[">", "<", "<="]
    threshold: Decimal
    unit: Literal["duration", "percent", "number"]
    recording: Recording


@dataclass(frozen=True)
class ResolvedDiagnosis:
    """One diagnosis of a service: its alert and what the tests need to drive it."""

    kind: str
    name: str
    service: str
    severity: str
    for_seconds: Decimal
    window_seconds: Decimal
    baseline_seconds: Decimal
    evidence: tuple[Evidence, ...]
    host: Host
    labels: tuple[tuple[str, str], ...]
    explains: tuple[str, ...]
    ttft_buckets: tuple[Decimal, ...]
    quantile: Decimal
    gpu_scale: Decimal
    link_speed: Decimal | None
    gpu_metric: str
    # Devices the tests put on each host: the one that carries the load, then an idle one.
    disk_devices: tuple[str, ...]
    nic_devices: tuple[str, ...]
    selectors: Mapping[str, tuple[promql.Matcher, ...]]
    origin: Origin
    runbook_url: str | None = None
    # Range selectors are left-open (Prometheus 3): what the tests' baseline mean reads
    left_open: bool = False
    # The tests are for vmalert's MetricsQL (no extrapolation, left-open windows)
    metricsql: bool = False
    # How the TTFT histogram is stored: classic ``_bucket`` series or NHCB
    ttft_histogram: HistogramKind = CLASSIC
    # gpu_health: the XIDs left out (None: none), and the uncorrectable rows that count
    ignore_xids: str | None = None
    uncorrectable_rows: Decimal = Decimal(512)

    @property
    def by_model(self) -> bool:
        """Whether the alert is per host and model (its first evidence is a vLLM quantity)."""
        return self.evidence[0].recording.by_model
