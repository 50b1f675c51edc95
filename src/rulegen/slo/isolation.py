"""Find, for one tier, traffic under which that tier alone fires its alert, at a time that
moves when the tier's factor moves.

Why: an outage fires the fastest tier first and hides the others, and tiers with the same
budget share (the two default ticket tiers) cross together. A test that proves each tier's
factor and windows in the *alert rule* needs traffic shaped for that tier: clean history,
sometimes a heavier clean stretch that only the longer windows see, then a burn just above the
tier's factor and below the next one. The search keeps the shortest candidate that the exact
model says isolates the tier and is sensitive to a 2% change of its factor.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import ROUND_CEILING, Decimal
from fractions import Fraction
from math import ceil

from rulegen.slo.model import ResolvedSLO, SLOAlert, Tier
from rulegen.slo.series import events_per_sample
from rulegen.slo.simulate import Phase, Traffic, alert_timeline, grain_of, holds_series

SENSITIVITY = (Fraction(98, 100), Fraction(102, 100))


@dataclass(frozen=True)
class Isolation:
    """Traffic under which only ``tier`` fires the alert, first at ``fires``."""

    traffic: Traffic
    burn: Decimal
    burn_start: Decimal
    fires: Decimal


# Why cached: a fleet's SLOs mostly share objective, tiers and intervals, and the search
# replays dozens of candidate traffics. The key holds every number the search reads.
_FOUND: dict[tuple[object, ...], Isolation | None] = {}
_MAX_FOUND = 1024


def isolate(slo: ResolvedSLO, alert: SLOAlert, tier: Tier, step: Decimal) -> Isolation | None:
    """The first candidate, shortest expected run first, that isolates ``tier``, or ``None``."""
    tiers = tuple((t.long, t.short, t.factor) for t in alert.tiers)
    key = (slo.budget, slo.min_traffic, alert.for_seconds, tiers, alert.tiers.index(tier), step)
    if key not in _FOUND:
        if len(_FOUND) >= _MAX_FOUND:
            _FOUND.clear()
        _FOUND[key] = _search(slo, alert, tier, step)
    return _FOUND[key]


def _search(slo: ResolvedSLO, alert: SLOAlert, tier: Tier, step: Decimal) -> Isolation | None:
    candidates = [
        (history, burn, dilution)
        for history in _histories(alert, tier, step)
        for burn in _burns(alert, tier)
        for dilution in (1, 4)
        if dilution == 1 or history > tier.long
    ]
    candidates.sort(key=lambda c: (_expected_length(tier, c[0], c[1]), c[2]))
    for history, burn, dilution in candidates:
        found = _try(slo, alert, tier, step, history, burn, dilution)
        if found is not None:
            return found
    return None


def _expected_length(tier: Tier, history: Decimal, burn: Decimal) -> Fraction:
    """History plus the time a steady burn takes to cross the tier on a full window."""
    return Fraction(history) + tier.factor * Fraction(tier.long) / Fraction(burn)


def _histories(alert: SLOAlert, tier: Tier, step: Decimal) -> list[Decimal]:
    longest = max(t.long for t in alert.tiers)
    options = {tier.long / 2, tier.long, min(2 * tier.long, longest), longest}
    return sorted(_on_grid(h, step) for h in options if h > 0)


def _on_grid(seconds: Decimal, step: Decimal) -> Decimal:
    return (seconds / step).to_integral_value(rounding=ROUND_CEILING) * step


def _burns(alert: SLOAlert, tier: Tier) -> list[Decimal]:
    """Burn rates above the tier's factor and below every higher factor of the alert."""
    higher = [t.factor for t in alert.tiers if t.factor > tier.factor]
    cap = min(higher) if higher else tier.factor * 3
    wanted = (
        cap * Fraction(19, 20),
        (tier.factor + cap) / 2,
        tier.factor * Fraction(5, 4),
        tier.factor * Fraction(11, 10),
    )
    out = []
    for target in wanted:
        burn = _round(target)
        if tier.factor < Fraction(burn) < cap and burn not in out:
            out.append(burn)
    return out


def _round(value: Fraction) -> Decimal:
    exact = Decimal(value.numerator) / Decimal(value.denominator)
    return exact.quantize(Decimal(1).scaleb(exact.adjusted() - 2))


def _try(
    slo: ResolvedSLO, alert: SLOAlert, tier: Tier, step: Decimal,
    history: Decimal, burn: Decimal, dilution: int,
) -> Isolation | None:  # fmt: skip
    ratio = Fraction(burn) * Fraction(slo.budget)
    scale = events_per_sample(slo.min_traffic, step, ratio)
    errors = ratio * scale
    reach = tier.factor * Fraction(tier.long) / Fraction(burn)
    burn_steps = int(ceil(reach / Fraction(step))) + int(ceil(tier.long / step))
    heavy = int((max(history - tier.long, Decimal(0))) / step) if dilution > 1 else 0
    phases = [
        Phase(heavy, scale * dilution, 0),
        Phase(int(history / step) - heavy, scale, 0),
        Phase(burn_steps, scale, int(errors)),
    ]
    traffic = Traffic.of(step, phases, grain_of(slo, step))
    fires = alert_timeline(slo, alert, traffic).first_firing(history)
    if fires is None or not alone(slo, alert, tier, traffic, fires):
        return None
    for factor in SENSITIVITY:
        moved = replace(tier, factor=tier.factor * factor)
        other = replace(alert, tiers=tuple(moved if t == tier else t for t in alert.tiers))
        if alert_timeline(slo, other, traffic).first_firing(history) == fires:
            return None
    return Isolation(traffic, burn, history, fires)


def alone(slo: ResolvedSLO, alert: SLOAlert, tier: Tier, traffic: Traffic, at: Decimal) -> bool:
    """``tier`` holds at ``at`` and no other tier of the alert holds at or before it."""
    last = int(at / traffic.step)
    if not holds_series(slo, tier, traffic)[last]:
        return False
    others = [holds_series(slo, t, traffic) for t in alert.tiers if t != tier]
    return not any(any(holds[: last + 1]) for holds in others)
