"""``histogram/threshold``: a threshold an exponential native histogram cannot hold exactly.

Why: an exponential native histogram's bucket bounds are ``2**(k / 2**schema)``; of the
rational numbers only the powers of two (…, 0.25s, 0.5s, 1s, 2s, …) are bounds at every
schema. Any other threshold falls inside a bucket, and ``histogram_fraction`` (a latency
SLI) or ``histogram_quantile`` (a latency alert) interpolate inside it: an SLI whose good
events are an estimate, by up to the width of the bucket (9% at schema 3, client_golang's
default). NHCB and classic histograms are exact at their own ``le`` bounds, which rulegen
checks when it resolves the spec.
"""

from __future__ import annotations

from decimal import Decimal

from rulegen import units
from rulegen.core.histograms import (
    is_exponential_bound,
    power_of_two_above,
    power_of_two_below,
)
from rulegen.lint.check import Check, Scope
from rulegen.slo.model import GoodputSLI, histogram_reads


def _nearest(threshold: Decimal) -> str:
    below, above = power_of_two_below(threshold), power_of_two_above(threshold)
    return f"{units.format_latency(below)} or {units.format_latency(above)}"


def run(scope: Scope) -> None:
    """A latency SLI (or a goodput SLI's latency) or a histogram alert on an exponential
    native histogram (``histogram: native``) whose threshold is no power of two: the SLI
    counts the good events of the bucket holding the threshold by interpolation, an
    estimate, and the alert fires on an interpolated quantile."""
    for slo in scope.spec.slos:
        for index, sli in enumerate(histogram_reads(slo.sli)):
            if sli.histogram != "native" or is_exponential_bound(sli.threshold):
                continue
            where = (
                slo.origin.path.child("sli", "goodput", "latencies", index)
                if isinstance(slo.sli, GoodputSLI)
                else slo.origin.path.child("sli", "latency")
            )
            scope.report(
                scope.field(where, "threshold"),
                f"SLO {slo.name}: {units.format_latency(sli.threshold)} is no bucket bound "
                "of an exponential histogram: the good events are interpolated inside the "
                f"bucket holding it (nearest exact: {_nearest(sli.threshold)})",
            )
    for alert in scope.spec.alerts:
        if alert.histogram == "native" and not is_exponential_bound(alert.threshold):
            scope.report(
                scope.field(alert.origin.path, "threshold"),
                f"{alert.name}: {units.format_latency(alert.threshold)} is no bucket bound of an "
                "exponential histogram: the quantile it is compared with is interpolated "
                f"(nearest exact: {_nearest(alert.threshold)})",
            )


CHECK = Check(
    "histogram/threshold",
    "warning",
    "a threshold on an exponential native histogram that is not a bucket bound (a power of two)",
    run,
)
