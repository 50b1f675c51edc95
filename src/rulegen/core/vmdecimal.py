"""The value VictoriaMetrics gives back for a float it stored: its decimal storage, exactly.

Why: VictoriaMetrics keeps every sample as an integer mantissa and a power of ten
(``lib/decimal``: ``FromFloat`` on the way in, ``ToFloat`` on the way out), rounding a value
like ``0.5333333334000001`` to about 12 significant digits (``0.5333333334``).
``vmalert-tool unittest`` compares the samples a query returns with the expected ones
exactly, so a generated test that reads a recording vmalert stored must expect the stored
value, not the float the rule computed. This is a line-by-line port of ``FromFloat`` and
``ToFloat`` (VictoriaMetrics v1.145.0, ``lib/decimal/decimal.go``), including Go's
``math.Pow10``, so that the result is bit for bit the one VictoriaMetrics returns.
"""

from __future__ import annotations

import math
from fractions import Fraction

_CONVERSION_PRECISION = 1e12
_BIG_PRECISION = 1e15
# Go's math.Ln2 / math.Ln10, a constant expression evaluated exactly, then rounded
_LOG10_2 = 0.30102999566398119521373889472449302676818988146210854131
_V_MAX = (1 << 63) - 3


def stored(value: float) -> float:
    """``ToFloat(FromFloat(value))``: what a query returns for ``value`` once stored."""
    if value == 0 or math.isnan(value) or math.isinf(value):
        return value
    mantissa, exponent = _positive_to_decimal(abs(value))
    mantissa = min(mantissa, _V_MAX)
    return _to_float(-mantissa if value < 0 else mantissa, exponent)


def _positive_to_decimal(f: float) -> tuple[int, int]:
    """``positiveFloatToDecimal``: integers below 2**55 exactly, the rest by the slow path."""
    if f < 2.0**64:
        u = int(f)
        if float(u) == f:
            if u < 1 << 55 and u % 10 != 0:
                return u, 0
            return _decimal_and_scale(u)
    return _slow(f)


def _decimal_and_scale(u: int) -> tuple[int, int]:
    scale = 0
    while u >= 1 << 55:
        u //= 10
        scale += 1
    if u % 10 != 0:
        return u, scale
    u //= 10
    scale += 1
    while u != 0 and u % 10 == 0:
        u //= 10
        scale += 1
    return u, scale


def _slow(f: float) -> tuple[int, int]:
    """``positiveFloatToDecimalSlow``: scale by 100 until the fraction is negligible."""
    scale = 0
    precision = _CONVERSION_PRECISION
    if f > 1e6 or f < 1e-6:
        if f > 1e6:
            precision = _BIG_PRECISION
        _, exp = math.frexp(f)
        exp = max(-1022, min(1023, exp))
        scale = int(float(exp) * _LOG10_2)  # Go's int16(): toward zero
        f *= _pow10(-scale)
    while f < precision:
        fraction, whole = math.modf(f)
        if fraction * precision < whole:
            f = whole
            break
        if (1 - fraction) * precision < whole:
            f = whole + 1
            break
        f *= 100
        scale -= 2
    u = int(f)
    if u % 10 != 0:
        return u, scale
    return u // 10, scale + 1


def _to_float(mantissa: int, exponent: int) -> float:
    """``ToFloat``: divide by the power of ten for negative exponents (more precise)."""
    f = float(mantissa)
    if exponent < 0:
        return f / _pow10(-exponent)
    return f * _pow10(exponent)


def _pow10(n: int) -> float:
    """Go's ``math.Pow10``: a product (or quotient) of two correctly rounded table entries."""
    if 0 <= n <= 308:
        return float(10 ** (32 * (n // 32))) * float(10 ** (n % 32))
    if -323 <= n < 0:
        m = -n
        return float(Fraction(1, 10 ** (32 * (m // 32)))) / float(10 ** (m % 32))
    return 0.0 if n < 0 else math.inf
