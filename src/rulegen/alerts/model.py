"""Resolved threshold alerts: every value explicit, ready for rules, tests and the dashboard.

Why: the spec's alert entries accept shorthands and defaults (a catalog signal's window and
``for``, a unit-typed threshold); ``rulegen.alerts.resolve`` turns each into one of these, so
the rule builder, the test generator and the dashboard read the same exact values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from rulegen.catalog import SignalDef
from rulegen.core import promql
from rulegen.core.histograms import CLASSIC, HistogramKind
from rulegen.generated import Comparison, Verbatim
from rulegen.host import Host
from rulegen.source.loader import Origin


@dataclass(frozen=True)
class ResolvedAlert:
    """One alert with every value explicit, ready for rules and test synthesis."""

    name: str
    signal: SignalDef | None
    severity: str
    threshold: Decimal
    for_seconds: Decimal
    window: str | None
    window_seconds: Decimal
    params: Mapping[str, Any]
    selector_matchers: tuple[promql.Matcher, ...]
    quantity: str
    record: str | None
    # What the alert compares: a catalog alert's ``quantity`` (or the recording ``record``
    # named in the catalog, before the rules give it this service's selector) against its
    # threshold, or a custom alert's own PromQL.
    condition: Comparison | Verbatim
    labels: tuple[tuple[str, str], ...]
    annotations: tuple[tuple[str, str], ...]
    origin: Origin
    # Set when a diagnosis explains this alert: it then carries the host label it inhibits on.
    host: Host | None = None
    # A custom alert's own: how long it keeps firing after its condition ends, the rule
    # group it asks for (with where ``group:`` is written), and its examples.
    keep_firing_for_seconds: Decimal = Decimal(0)
    group: str | None = None
    group_origin: Origin | None = None
    examples: tuple[ResolvedExample, ...] = ()
    # How the histogram a catalog signal reads is stored (``histograms:``): its rules and
    # tests read ``_bucket`` series (classic) or one native histogram series.
    histogram: HistogramKind = CLASSIC
    # A catalog signal that reads every exporter family (``sel_each()``, e.g. ``up``): the
    # matchers of each family of the spec's ``selectors:``, with the alert's own matchers.
    family_selectors: tuple[tuple[promql.Matcher, ...], ...] = ()

    @property
    def histogram_metric(self) -> str | None:
        """The histogram a catalog signal reads (its ``metric`` parameter), if it reads one."""
        if self.signal is None or self.signal.test.histogram is None:
            return None
        metric = self.params.get("metric")
        return metric if isinstance(metric, str) else None


@dataclass(frozen=True)
class ResolvedExample:
    """A custom alert's example: input series, and the times it must fire and must not.

    ``labels`` are the labels of the expression's result (what ``$labels`` shows; the alert
    adds its own); ``value`` is the expression's value at ``fires_at`` when the annotations
    print ``$value``.
    """

    series: tuple[tuple[str, str], ...]
    interval_seconds: Decimal
    fires_at: tuple[Decimal, ...]
    silent_at: tuple[Decimal, ...]
    labels: tuple[tuple[str, str], ...]
    value: Decimal | None
    origin: Origin


@dataclass(frozen=True)
class NamedGroup:
    """A rule group of ``groups:``: its interval, ``query_offset`` (0: none) and labels."""

    name: str
    interval: Decimal
    query_offset: Decimal = Decimal(0)
    labels: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class ResolvedRecording:
    """A user's own recording rule: the expression as written, its labels with ``service``,
    and the rule group it asks for (``None``: the service's ``<service>-custom`` group)."""

    record: str
    expr: str
    labels: tuple[tuple[str, str], ...]
    group: str | None
    origin: Origin
    group_origin: Origin | None = None
