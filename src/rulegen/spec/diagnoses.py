"""The ``diagnoses:`` entries of a service spec: the incident decision tree, one kind each.

Why: each kind names a cause ("the disk", "the network", "GPU kernels") and the evidence that
proves it on one host; its keys are the thresholds of that evidence, with the defaults from the
users' incident notes, so the common case is one line (``- kind: ttft_disk_bound``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, WithJsonSchema

from rulegen.source.base import ALERT_NAME, Duration, Scalar, Severity, SpecBase

Regex = Annotated[Any, WithJsonSchema({"type": "string"})]
# Physical block devices: device-mapper, md, loop and zram devices repeat the I/O of others.
DISK_DEVICES = "nvme.+|sd[a-z]+|vd[a-z]+|xvd[a-z]+"
VIRTUAL_NICS = "lo|veth.*|docker.*|cni.*|flannel.*|cali.*|virbr.*|br-.*"


TTFT = "the time to first token (at quantile) above which requests start slowly, e.g. 500ms"
QUANTILE = "the TTFT quantile read, e.g. 0.99"
DISK = "a disk's %util (iostat) above which it is busy, e.g. 70%"
DISKS = "regex of the physical block devices read; default: nvme, sd, vd, xvd devices"
NIC = "a NIC's share of its link speed (either direction) above which it is busy, e.g. 80%"
SPEED = "the NICs' link speed, e.g. 25Gbps; default: node_network_speed_bytes (when > 0)"
VIRTUAL = "regex of the network devices that are never physical links (lo, veth.*, …)"


class DiagnosisBase(SpecBase):
    """Keys every diagnosis accepts: how its alert is named, labelled and delayed."""

    name: str | None = Field(
        default=None, pattern=ALERT_NAME, description="the alert's name; default: by kind"
    )
    severity: Severity = None  # default: by kind, the declaration's paging one or not
    for_: Duration = Field(
        default="5m", alias="for", description="how long the evidence must hold before it fires"
    )
    window: Duration = Field(default="5m", description="the rate window, a whole number of scrapes")
    labels: dict[str, str] = Field(default={}, description="extra labels of this alert")


class TTFTDiskBound(DiagnosisBase):
    """TTFT quantile above ``ttft`` while the busiest disk of the same host is above
    ``disk_utilization`` (iostat %util)."""

    kind: Literal["ttft_disk_bound"] = Field(description="slow TTFT while a disk is busy")
    ttft: Duration = Field(default="500ms", description=TTFT)
    quantile: Scalar = Field(default=0.99, description=QUANTILE)
    disk_utilization: Scalar = Field(default="70%", description=DISK)
    disk_devices: Regex = Field(default=DISK_DEVICES, description=DISKS)


class ThroughputNetworkBound(DiagnosisBase):
    """Generation throughput below ``throughput`` of its baseline, the busiest physical NIC of
    the same host above ``network_utilization``, and TTFT still at or below ``ttft``."""

    kind: Literal["throughput_network_bound"] = Field(
        description="low generation throughput while a NIC is busy"
    )
    throughput: Scalar = Field(
        default="70%", description="generation tokens/s below this share of its baseline mean"
    )
    baseline: Duration = Field(
        default="1h", description="the span before the current window whose mean is the baseline"
    )
    network_utilization: Scalar = Field(default="80%", description=NIC)
    ttft: Duration = Field(
        default="500ms", description="TTFT must be at or below this (requests still start fast)"
    )
    quantile: Scalar = Field(default=0.99, description=QUANTILE)
    link_speed: Scalar = Field(default=None, description=SPEED)
    virtual_devices: Regex = Field(default=VIRTUAL_NICS, description=VIRTUAL)


class GpuKernelContention(DiagnosisBase):
    """Mean GPU utilisation of a host below ``gpu_utilization`` while more than
    ``requests_waiting`` requests wait, and disk and network of the host are fine."""

    kind: Literal["gpu_kernel_contention"] = Field(
        description="idle GPUs while requests wait, disk and network fine"
    )
    gpu_utilization: Scalar = Field(
        default="50%", description="mean GPU utilisation of the host below which GPUs idle"
    )
    gpu_metric: str = Field(
        default="DCGM_FI_DEV_GPU_UTIL", description="the GPU utilisation gauge read"
    )
    gpu_scale: Scalar = Field(
        default=100, description="the value of gpu_metric at full utilisation (it is divided by it)"
    )
    requests_waiting: Scalar = Field(default=0, description="more requests than this must wait")
    disk_utilization: Scalar = Field(
        default="70%", description="the busiest disk's %util must be at or below this"
    )
    disk_devices: Regex = Field(default=DISK_DEVICES, description=DISKS)
    network_utilization: Scalar = Field(
        default="80%", description="the busiest NIC's share of its link speed must be at or below"
    )
    link_speed: Scalar = Field(default=None, description=SPEED)
    virtual_devices: Regex = Field(default=VIRTUAL_NICS, description=VIRTUAL)


class GpuHealth(DiagnosisBase):
    """A GPU of the host with a new XID error (as the ``gpu_xid_errors`` signal defines it:
    one it did not report ``window`` ago, ``ignore_xids`` left out) or a failed HBM row
    remapping (as ``gpu_row_remap_failure``: the failure flag, or ``uncorrectable_rows``).

    ``window`` is the XID's window (how long an XID stays new), not a rate window; ``for``
    defaults to 0s, as for the two signals: both are sticky gauges, not noisy rates.
    ``ignore_xids`` and ``uncorrectable_rows`` default to the signals' own defaults.
    """

    kind: Literal["gpu_health"] = Field(
        description="a GPU of the host with a new XID error or a failed row remapping"
    )
    for_: Duration = Field(
        default="0s", alias="for", description="how long the evidence must hold before it fires"
    )
    window: Duration = Field(
        default="1h", description="how long an XID stays new (at most 1h, longer than for)"
    )
    ignore_xids: Regex = Field(
        default=None,
        description='regex of XID codes left out; "": none; default: the gpu_xid_errors signal\'s',
    )
    uncorrectable_rows: Scalar = Field(
        default=None,
        description="uncorrectable remapped rows that count as failed; default: "
        "the gpu_row_remap_failure signal's (512)",
    )


DiagnosisSpec = Annotated[
    TTFTDiskBound | ThroughputNetworkBound | GpuKernelContention | GpuHealth,
    Field(discriminator="kind"),
]
