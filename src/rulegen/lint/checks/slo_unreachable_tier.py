"""``slo/unreachable-tier``: a burn-rate tier that needs most events to fail."""

from __future__ import annotations

from decimal import Decimal

from rulegen import units
from rulegen.lint.check import Check, Scope, fmt


def run(scope: Scope) -> None:
    """A burn-rate tier of an SLO that fires only when more than 50 % of events fail (its
    burn-rate factor times the error budget): a partial outage, the common kind, never
    reaches it, so the tier pages for total outages only."""
    for slo in scope.spec.slos:
        for tier in slo.tiers:
            needed = Decimal(tier.factor.numerator) / Decimal(tier.factor.denominator) * slo.budget
            if needed > Decimal("0.5"):
                scope.report(
                    tier.origin.path,
                    f"SLO {slo.name}: tier {fmt(tier.long)}/{fmt(tier.short)} fires only when "
                    f"more than {units.literal(needed * 100)}% of events fail (burn rate "
                    f"{float(tier.factor):.4g}× a {units.literal(slo.budget * 100)}% budget): "
                    "a partial outage never reaches it; use a longer window or a smaller "
                    "budget share",
                )


CHECK = Check(
    "slo/unreachable-tier",
    "warning",
    "a burn-rate tier that needs more than 50 % of events to fail",
    run,
)
