"""The mutants of one catalog alert's rule file that its generated tests must kill, shared by
the promtool suite (``tests/alerts/test_generated_tests_catch_mutations.py``) and the
vmalert-tool one (``tests/targets/test_vmalert_tool_catches_mutations.py``).

Why one place: both suites claim the same mutations ("the same alerts, the same mutants"),
so they must make them the same way: the threshold moved past the firing value (x2 for `>`)
or past the quiet value (x0.8), and a `for` 30 s longer (added when the alert has none).
"""

from __future__ import annotations

import re
from decimal import Decimal

import yaml

from rulegen.units import format_duration, literal, parse_duration

# The example's catalog alerts, each built alone for a suite.
NAMES = [
    "CpuIowaitHigh", "CpuSoftirqHigh", "DiskAwaitHigh", "DiskQueueDepthHigh",
    "DiskUtilizationHigh", "FilesystemFreeSpaceLow", "FrontendNicSaturated",
    "GpuMemoryUsageHigh", "GpuPowerHigh", "GpuRowRemapFailure", "GpuUnderutilized",
    "GpuXidError", "GrpcErrorRatioHigh", "InterTokenLatencyHigh", "IoPressureHigh",
    "KVCacheFullSoon", "KVCacheUsageHigh", "MemoryPressureHigh", "ModelWeightLoadingBusy",
    "ModelWeightLoadingSlow", "NetworkInterfaceSaturated", "NetworkReceiveDrops",
    "NvlinkUtilizationHigh", "NvmeWearHigh", "PcieReplaysHigh", "PrefixCacheHitRateLow",
    "RequestErrorRatioHigh", "RequestLatencyHigh", "RequestPreemptionsHigh",
    "RequestQueueBacklog", "RequestQueueTimeHigh", "ScrapeTargetDown", "SoftnetPacketDrops",
    "TTFTLatencyHigh", "TcpListenQueueDrops", "TcpRetransmitsHigh",
]  # fmt: skip
DIRECTIONS = ("away", "toward")  # past the firing value, past the quiet value


def alert_of(text: str) -> tuple[str, str]:
    """The expression and ``for`` of the only alert of a rule file."""
    data = yaml.safe_load(text)
    rule = [r for g in data["groups"] for r in g["rules"] if "alert" in r][0]
    return str(rule["expr"]), str(rule.get("for", "0s"))


def threshold(expr: str) -> tuple[str, Decimal]:
    """The comparison the expression ends with."""
    match = re.search(r" ([<>]) ([0-9.e-]+)$", expr)
    assert match, expr
    return match.group(1), Decimal(match.group(2))


def moved_threshold(text: str, direction: str) -> str:
    """The rule file with the alert's threshold moved ``direction`` (``DIRECTIONS``)."""
    op, value = threshold(alert_of(text)[0])
    grow = (direction == "away") == (op == ">")
    moved = value * 2 if grow else value * Decimal("0.8")
    if value == 0:
        moved = Decimal(1) if grow else Decimal(-1)
    mutated = text.replace(f"{op} {literal(value)}\n", f"{op} {literal(moved)}\n", 1)
    assert mutated != text
    return mutated


def longer_for(text: str) -> str:
    """The rule file with the alert's ``for`` 30 s longer (written when it has none)."""
    current = alert_of(text)[1]
    longer = format_duration(parse_duration(current) + 30)
    if current == "0s":
        head, block = text.split("  - alert: ", 1)
        block = block.replace("    labels:\n", f"    for: {longer}\n    labels:\n", 1)
        mutated = f"{head}  - alert: {block}"
    else:
        mutated = text.replace(f"    for: {current}\n", f"    for: {longer}\n", 1)
    assert mutated != text
    return mutated
