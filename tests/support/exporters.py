"""Exporter label sets and promtool series builders for hand-written signal tests.

Why a module of its own: the hand-written cases of each exporter family live in their own
files (``tests/alerts/signal_cases_*.py``) beside ``test_signals_promtool.py``, and all of
them write series with the labels the exporters really emit, made in one place.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

Series = tuple[str, str]
"""One promtool input series: (series selector, values in expanding notation)."""


# --- exporter label sets and series builders -------------------------------------------------


def node(n: int, **extra: str) -> dict[str, str]:
    """node_exporter on gpu-node-<n>: target labels plus the metric's own (device, cpu, mode)."""
    return {"instance": f"gpu-node-{n}:9100", "job": "node", **extra}


def vllm(n: int, engine: str = "0", model: str = "deepseek-v4") -> dict[str, str]:
    """vLLM's /metrics on gpu-node-<n>: every engine metric has model_name and engine."""
    return {"engine": engine, "instance": f"gpu-node-{n}:8000", "job": "vllm", "model_name": model}


def loader(n: int) -> dict[str, str]:
    """The team's weight-loading histogram, served on vLLM's /metrics port of gpu-node-<n>."""
    return {"instance": f"gpu-node-{n}:8000", "job": "vllm"}


_A100_BUS = ("07", "0F", "47", "4E", "87", "90", "B7", "BD")


def dcgm(n: int, gpu: int) -> dict[str, str]:
    """dcgm-exporter (tag 4.5.3-4.8.2) on gpu-node-<n>, one of the 8 A100s of a DGX-style node."""
    return {
        "Hostname": f"gpu-node-{n}",
        "UUID": f"GPU-{n:04x}{gpu:04x}-5b1e-4c2d-9a7f-{n:06x}{gpu:06x}",
        "device": f"nvidia{gpu}",
        "gpu": str(gpu),
        "instance": f"gpu-node-{n}:9400",
        "job": "dcgm",
        "modelName": "NVIDIA A100-SXM4-80GB",
        "pci_bus_id": f"00000000:{_A100_BUS[gpu]}:00.0",
    }


def grpc(code: str, method: str, frontend: int = 1, **extra: str) -> dict[str, str]:
    """go-grpc-prometheus server metrics of the inference frontend."""
    labels = {
        "grpc_code": code,
        "grpc_method": method,
        "grpc_service": "inference.v1.Inference",
        "grpc_type": "unary",
        "instance": f"frontend-{frontend}:9090",
        "job": "frontend",
    }
    return {**labels, **extra}


def series(metric: str, values: str, labels: Mapping[str, str]) -> Series:
    """``metric{labels}`` (sorted, as promtool prints them) with its values."""
    body = ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()))
    return f"{metric}{{{body}}}", values


TTFT_BOUNDS = (
    "0.001", "0.005", "0.01", "0.02", "0.04", "0.06", "0.08", "0.1", "0.25", "0.5", "0.75",
    "1.0", "2.5", "5.0", "7.5", "10.0", "20.0", "40.0", "80.0", "160.0", "640.0", "2560.0",
)  # fmt: skip
E2E_BOUNDS = (
    "0.3", "0.5", "0.8", "1.0", "1.5", "2.0", "2.5", "5.0", "10.0", "15.0", "20.0", "30.0",
    "40.0", "50.0", "60.0", "120.0", "240.0", "480.0", "960.0", "1920.0", "7680.0",
)  # fmt: skip


def histogram(
    metric: str,
    bounds: Sequence[str],
    per_scrape: Mapping[str, int],
    steps: int,
    labels: Mapping[str, str],
) -> list[Series]:
    """The _bucket, _count and _sum series of a histogram seeing the same requests every scrape.

    ``per_scrape`` maps some bucket bounds to the cumulative number of requests at or below
    them per scrape; a bound not listed has the count of the nearest listed bound below it (0
    before the first), so ``{"0.5": 95, "0.75": 100}`` means 95 requests ≤ 0.5 s and 5 in
    (0.5 s, 0.75 s]. ``_sum`` counts each request at its bucket's upper bound.
    """
    out: list[Series] = []
    cumulative = 0
    total = 0.0
    for bound in bounds:
        new = per_scrape.get(bound, cumulative)
        total += (new - cumulative) * float(bound)
        cumulative = new
        out.append(series(f"{metric}_bucket", f"0+{cumulative}x{steps}", {**labels, "le": bound}))
    out.append(series(f"{metric}_bucket", f"0+{cumulative}x{steps}", {**labels, "le": "+Inf"}))
    out.append(series(f"{metric}_count", f"0+{cumulative}x{steps}", labels))
    out.append(series(f"{metric}_sum", f"0+{total:g}x{steps}", labels))
    return out


def reload_loop(load_seconds: int, labels: Mapping[str, str], samples: int = 61) -> list[Series]:
    """A loader that finishes one ``load_seconds`` load every minute (every 4th scrape)."""
    done = [(i + 1) // 4 for i in range(samples)]
    metric = "deepseek_weight_loading_seconds"
    return [
        series(f"{metric}_sum", " ".join(str(load_seconds * d) for d in done), labels),
        series(f"{metric}_count", " ".join(str(d) for d in done), labels),
    ]


# --- the cases ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One spec (its ``alerts:`` list) and one hand-written promtool test group."""

    alerts: str
    input_series: Sequence[Series]
    checks: str  # YAML: alert_rule_test and/or promql_expr_test of the test group
    interval: str = "15s"
    extra_rules: str | None = None  # a hand-written rule file next to the test (rules/tests/)
