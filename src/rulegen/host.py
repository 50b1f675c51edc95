"""One host across exporters: the label that puts node, vLLM and DCGM series on the same machine.

Why a module of its own: a diagnosis joins its evidence on this label, and the threshold
alerts it explains must carry the same label for its inhibition to match them; both features
derive it here, so neither imports the other.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# A port is stripped from ``instance``: node_exporter (:9100), vLLM (:8000) and dcgm-exporter
# (:9400) on one machine then share ``host``. IPv6 targets keep their brackets.
HOST_FROM_INSTANCE = '"host", "$1", "instance", "(.+?)(?::[0-9]+)?"'
# Labels rulegen sets, or that tell series of one host apart (a host label must not).
RESERVED_HOST_LABELS = frozenset(
    {"service", "severity", "alertname", "alertstate", "le", "model_name", "diagnosis",
     "instance", "job", "device", "direction", "gpu", "UUID", "engine"}
)  # fmt: skip


@dataclass(frozen=True)
class Host:
    """How series of different exporters are put on one host: a shared label, or ``host``
    derived from ``instance`` without the port."""

    label: str
    derived: bool


def host_of(label: str | None) -> Host:
    """The spec's ``host_label``, or ``host`` derived from ``instance``."""
    return Host(label, False) if label else Host("host", True)


def with_host(host: Host, expr: str) -> str:
    """``expr`` with the host label on every series (derived from ``instance`` when needed)."""
    return f"label_replace({expr}, {HOST_FROM_INSTANCE})" if host.derived else expr


def host_from_instance(instance: str) -> str:
    """``instance`` without its port, as ``label_replace`` derives ``host`` in the rules."""
    found = re.fullmatch(r"(.+?)(?::[0-9]+)?", instance)
    return found.group(1) if found else ""
