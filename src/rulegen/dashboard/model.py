"""A dashboard as plain typed objects: rows of panels, each with its queries and threshold.

Why: the panels are decided from the resolved spec (which quantity an alert reads, its unit,
threshold and ``for``); the Grafana JSON is only a rendering of these objects.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

from rulegen.generated import Condition

# Dashboard variables that filter panels, in the order they appear.
FILTERS = ("instance", "host", "model_name", "device")


@dataclass(frozen=True)
class Query:
    """One PromQL target of a panel; ``$variables`` are Grafana's."""

    expr: str
    legend: str


@dataclass(frozen=True)
class Panel:
    """A time series or stat panel in a unit Grafana knows (``s``, ``percentunit``, ``Bps``).

    ``condition`` is the alert condition the panel explains: the renderer quotes its PromQL
    after the ``description`` (only a renderer writes an alert's PromQL).
    """

    kind: Literal["timeseries", "stat"]
    title: str
    description: str
    unit: str
    queries: tuple[Query, ...]
    thresholds: tuple[Decimal, ...] = ()
    links: tuple[tuple[str, str], ...] = ()
    width: int = 12
    condition: Condition | None = None


@dataclass(frozen=True)
class Row:
    """A row of panels (one signal family, the diagnoses, or one SLO)."""

    title: str
    panels: tuple[Panel, ...]


@dataclass(frozen=True)
class Dashboard:
    """One service's dashboard."""

    uid: str
    title: str
    service: str
    source: str
    filters: tuple[str, ...]
    rows: tuple[Row, ...]
    annotation: str
