"""What the test generators of several features share: the error for a test that cannot be
built, and exact histogram values.

Why a module of its own: the threshold alerts' and the diagnoses' generated tests both drive
a latency histogram (``histogram_quantile``) and both report a test they cannot build the same
way; neither feature imports the other, so the shared piece lives below both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal

from rulegen import units
from rulegen.core.histograms import power_of_two_above, power_of_two_below

# Relative distance from a threshold below which a float computation may land on either side.
MARGIN = Decimal("0.000000001")


class SynthError(ValueError):
    """No test can be built for an alert or a diagnosis (unsatisfiable matchers, a recipe
    error, values that meet a threshold exactly).

    ``field`` names the spec key of the entry that causes it, when one does.
    """

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Plan:
    """Values of the quantity in the firing and the quiet case, and the histogram layout."""

    fire: Decimal
    quiet: Decimal
    fire_bucket: Decimal | None = None
    quiet_bucket: Decimal | None = None


def histogram_plan(bounds: tuple[Decimal, ...], threshold: Decimal, quantile: Decimal) -> Plan:
    """Put every observation in one bucket: above the threshold to fire, at or below it not to.

    Why: with all observations in (lower, upper], histogram_quantile returns exactly
    lower + (upper - lower) * quantile, so the expected value is known without float noise.
    """
    index = next(i for i, b in enumerate(bounds) if b >= threshold)
    if index + 1 < len(bounds):
        lower, upper = bounds[index], bounds[index + 1]
        fire, fire_bucket = lower + (upper - lower) * quantile, upper
    else:
        fire, fire_bucket = bounds[-1], bounds[-1] * 2
    quiet_index = max(i for i, b in enumerate(bounds) if b <= threshold)
    quiet_lower = bounds[quiet_index - 1] if quiet_index else Decimal(0)
    quiet_upper = bounds[quiet_index]
    quiet = quiet_lower + (quiet_upper - quiet_lower) * quantile
    for value in (fire, quiet):
        if abs(value - threshold) <= MARGIN * threshold:
            raise SynthError(
                f"quantile {units.literal(quantile)} puts the interpolated value on the threshold "
                "in float precision; use a quantile between 0.01 and 0.9999",
                "quantile",
            )
    return Plan(fire.normalize(), quiet.normalize(), fire_bucket, quiet_upper)


def exponential_plan(threshold: Decimal, quantile: Decimal) -> Plan:
    """``histogram_plan`` for an exponential native histogram (schema 0, bounds ``2**i``).

    Every observation goes in one bucket: ``(A, 2A]`` with ``A`` the power of two at or above
    the threshold to fire, ``(P/2, P]`` with ``P`` the one at or below it not to. Prometheus
    interpolates exponentially inside a bucket: the quantile is ``lower * 2**quantile`` (the
    float is what Go's ``math.Exp2`` computes; the tests compare it formatted to 4 digits).
    """
    above = power_of_two_above(threshold)
    below = power_of_two_below(threshold)
    fire = _exponential_quantile(above, quantile)
    quiet = _exponential_quantile(below / 2, quantile)
    if not fire > threshold >= quiet or abs(fire - threshold) <= MARGIN * threshold:
        raise SynthError(
            f"quantile {units.literal(quantile)} puts the interpolated value on the threshold "
            "in float precision; use a quantile between 0.01 and 0.9999",
            "quantile",
        )
    return Plan(fire, quiet, above * 2, below)


def _exponential_quantile(lower: Decimal, quantile: Decimal) -> Decimal:
    value = math.exp2(math.log2(float(lower)) + float(quantile))
    return Decimal(repr(value)).normalize()
