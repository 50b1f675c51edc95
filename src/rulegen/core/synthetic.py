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


# The schema of an alert test's exponential histogram: client_golang's default bucket factor
# 1.1 gives schema 3, buckets 9% wide, so the firing and the quiet value sit within ~19% of
# the threshold and a threshold moved by a fifth either way fails the test.
TEST_SCHEMA = 3


def exponential_plan(threshold: Decimal, quantile: Decimal) -> Plan:
    """``histogram_plan`` for an exponential native histogram (schema ``TEST_SCHEMA``).

    Every observation goes in one bucket ``(lower, upper]``: the first whose quantile is
    above the threshold to fire, the one below it not to. Prometheus interpolates
    exponentially inside a bucket: the quantile is ``lower * 2**(quantile / 2**schema)``
    (Go's ``math.Exp2``; the tests compare it formatted to 4 digits). ``fire_bucket`` and
    ``quiet_bucket`` are the buckets' indices.
    """
    width = 2**TEST_SCHEMA
    index = math.floor(math.log2(float(threshold)) * width) - 1
    while _exponential_quantile(index - 1, quantile) <= threshold:
        index += 1
    fire, quiet = (
        _exponential_quantile(index - 1, quantile),
        _exponential_quantile(index - 2, quantile),
    )
    if min(fire - threshold, threshold - quiet) <= MARGIN * threshold:
        raise SynthError(
            f"quantile {units.literal(quantile)} puts the interpolated value on the threshold "
            "in float precision; use a quantile between 0.01 and 0.9999",
            "quantile",
        )
    return Plan(fire, quiet, Decimal(index), Decimal(index - 1))


def _exponential_quantile(lower_index: int, quantile: Decimal) -> Decimal:
    """The quantile of a histogram whose observations all sit in the bucket above bound
    ``lower_index`` (schema ``TEST_SCHEMA``)."""
    width = 2**TEST_SCHEMA
    value = math.exp2((lower_index + float(quantile)) / width)
    return Decimal(repr(value)).normalize()
