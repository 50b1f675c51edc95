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


class DiagnosisBase(SpecBase):
    """Keys every diagnosis accepts: how its alert is named, labelled and delayed."""

    name: str | None = Field(default=None, pattern=ALERT_NAME)
    severity: Severity = None  # default: by kind, the declaration's paging one or not
    for_: Duration = Field(default="5m", alias="for")
    window: Duration = "5m"
    labels: dict[str, str] = {}


class TTFTDiskBound(DiagnosisBase):
    """TTFT quantile above ``ttft`` while the busiest disk of the same host is above
    ``disk_utilization`` (iostat %util)."""

    kind: Literal["ttft_disk_bound"]
    ttft: Duration = "500ms"
    quantile: Scalar = 0.99
    disk_utilization: Scalar = "70%"
    disk_devices: Regex = DISK_DEVICES


class ThroughputNetworkBound(DiagnosisBase):
    """Generation throughput below ``throughput`` of its baseline, the busiest physical NIC of
    the same host above ``network_utilization``, and TTFT still at or below ``ttft``."""

    kind: Literal["throughput_network_bound"]
    throughput: Scalar = "70%"
    baseline: Duration = "1h"
    network_utilization: Scalar = "80%"
    ttft: Duration = "500ms"
    quantile: Scalar = 0.99
    link_speed: Scalar = None
    virtual_devices: Regex = VIRTUAL_NICS


class GpuKernelContention(DiagnosisBase):
    """Mean GPU utilisation of a host below ``gpu_utilization`` while more than
    ``requests_waiting`` requests wait, and disk and network of the host are fine."""

    kind: Literal["gpu_kernel_contention"]
    gpu_utilization: Scalar = "50%"
    gpu_metric: str = "DCGM_FI_DEV_GPU_UTIL"
    gpu_scale: Scalar = 100
    requests_waiting: Scalar = 0
    disk_utilization: Scalar = "70%"
    disk_devices: Regex = DISK_DEVICES
    network_utilization: Scalar = "80%"
    link_speed: Scalar = None
    virtual_devices: Regex = VIRTUAL_NICS


class GpuHealth(DiagnosisBase):
    """A GPU of the host with a new XID error (as the ``gpu_xid_errors`` signal defines it:
    one it did not report ``window`` ago, ``ignore_xids`` left out) or a failed HBM row
    remapping (as ``gpu_row_remap_failure``: the failure flag, or ``uncorrectable_rows``).

    ``window`` is the XID's window (how long an XID stays new), not a rate window; ``for``
    defaults to 0s, as for the two signals: both are sticky gauges, not noisy rates.
    ``ignore_xids`` and ``uncorrectable_rows`` default to the signals' own defaults.
    """

    kind: Literal["gpu_health"]
    for_: Duration = Field(default="0s", alias="for")
    window: Duration = "1h"
    ignore_xids: Regex = None
    uncorrectable_rows: Scalar = None


DiagnosisSpec = Annotated[
    TTFTDiskBound | ThroughputNetworkBound | GpuKernelContention | GpuHealth,
    Field(discriminator="kind"),
]
