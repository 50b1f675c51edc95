"""Rule groups: one per signal family, split past ``max_group_rules`` without ever putting a
recording in another group than an alert that reads it (Prometheus evaluates groups
concurrently, so a recording read across groups could be one interval stale)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from conftest import CliResult, write_tree

Cli = Callable[..., CliResult]

SPEC = """
    version: 1
    service: web
    max_group_rules: {cap}
    alerts:
      - {{signal: disk_utilization, threshold: 90%, for: 5m, severity: warning}}
      - {{signal: disk_utilization, name: DiskUtilizationCritical, threshold: 97%, for: 5m,
         severity: critical}}
      - {{signal: disk_await, threshold: 5ms, for: 5m, severity: warning}}
      - {{signal: cpu_iowait, threshold: 20%, for: 10m, severity: warning}}
      - {{signal: requests_waiting, threshold: 20, for: 5m, severity: warning}}
    """


def _layout(folder: Path) -> dict[str, list[str]]:
    data = yaml.safe_load((folder / "rules/prometheus/web.rules.yml").read_text())
    return {
        g["name"]: [r.get("record") or f"ALERT {r['alert']}" for r in g["rules"]]
        for g in data["groups"]
    }


# Cap 3: the shared %util recording keeps both of its alerts (3 rules). Cap 2: that unit is
# larger than the cap and stays whole. Either way the other recordings go with their alerts.
SPLIT = {
    "web-node": [
        "instance_device:node_disk_io_time_seconds:rate1m",
        "ALERT DiskUtilizationHigh",
        "ALERT DiskUtilizationCritical",
    ],
    "web-node-2": ["instance_device:node_disk_await_seconds:rate1m", "ALERT DiskAwaitHigh"],
    "web-node-3": ["instance:node_cpu_iowait:ratio_rate5m", "ALERT CpuIowaitHigh"],
    "web-vllm": ["ALERT RequestQueueBacklog"],
}
WHOLE = {
    "web-node": [
        "instance_device:node_disk_io_time_seconds:rate1m",
        "instance_device:node_disk_await_seconds:rate1m",
        "instance:node_cpu_iowait:ratio_rate5m",
        "ALERT DiskUtilizationHigh",
        "ALERT DiskUtilizationCritical",
        "ALERT DiskAwaitHigh",
        "ALERT CpuIowaitHigh",
    ],
    "web-vllm": ["ALERT RequestQueueBacklog"],
}


@pytest.mark.parametrize(
    ("cap", "expected"),
    [
        pytest.param(3, SPLIT, id="cap 3: the shared %util recording keeps both of its alerts"),
        pytest.param(2, SPLIT, id="cap 2: a unit larger than the cap stays whole"),
        pytest.param(
            100, WHOLE, id="a large cap: one group per family, every recording before the alerts"
        ),
    ],
)
@pytest.mark.slow
def test_groups_split_at_the_cap_and_pass_promtool(
    cap: int, expected: dict[str, list[str]], cli: Cli, in_tmp: Path
) -> None:
    write_tree(in_tmp, {"specs/web.yaml": SPEC.format(cap=cap)})
    result = cli("build")
    assert result.code == 0, result.err
    assert _layout(in_tmp) == expected
    data = yaml.safe_load((in_tmp / "rules/prometheus/web.rules.yml").read_text())
    for group in data["groups"]:
        recorded = {r.get("record") for r in group["rules"]}
        for rule in group["rules"]:
            read = set(re.findall(r"[a-z_]+:[a-z0-9_]+:[a-z0-9_]+", rule["expr"]))
            assert read <= recorded, f"{group['name']}: {rule} reads a recording of another group"


def test_a_cap_below_two_is_rejected(cli: Cli, in_tmp: Path) -> None:
    write_tree(in_tmp, {"specs/web.yaml": SPEC.format(cap=1)})
    result = cli("build")
    assert result.code == 2
    assert result.err.startswith(
        "specs/web.yaml:3:18: max_group_rules: must be at least 2 (got 1)\n"
    )
