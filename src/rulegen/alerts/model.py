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

from rulegen import promql
from rulegen.catalog import SignalDef
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
