"""Parsing and printing of the spec's units: durations, percentages, bandwidths, numbers.

Why: every threshold is kept as an exact ``Decimal`` so that what the user wrote (``5ms``,
``80%``) comes out as a short exact literal in PromQL (``0.005``, ``0.8``), never as float noise.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from fractions import Fraction

_DURATION_UNITS: dict[str, Decimal] = {
    "y": Decimal(365 * 24 * 3600),
    "w": Decimal(7 * 24 * 3600),
    "d": Decimal(24 * 3600),
    "h": Decimal(3600),
    "m": Decimal(60),
    "s": Decimal(1),
    "ms": Decimal("0.001"),
}
_PROM_DURATION = re.compile(r"^((\d+)y)?((\d+)w)?((\d+)d)?((\d+)h)?((\d+)m)?((\d+)s)?((\d+)ms)?$")
LATENCY = re.compile(r"^(\d+(?:\.\d+)?)(us|µs|ms|s|m|h)$")
_LATENCY_UNITS = {
    "us": Decimal("0.000001"),
    "µs": Decimal("0.000001"),
    "ms": Decimal("0.001"),
    "s": Decimal(1),
    "m": Decimal(60),
    "h": Decimal(3600),
}
_BANDWIDTH = re.compile(r"^(\d+(?:\.\d+)?)\s*([KMGT]?)(bps|bit/s|Bps|B/s)$")
_SI = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}


class UnitError(ValueError):
    """A value that does not parse in the unit a field expects."""


class BarePercentError(UnitError):
    """A bare number above 1 where a percentage is expected: its message spells out the fix."""


def parse_duration(text: str) -> Decimal:
    """Prometheus duration syntax (``30s``, ``5m``, ``1h30m``) to seconds."""
    match = _PROM_DURATION.match(text)
    if not text or match is None:
        raise UnitError(f"invalid duration {text!r} (expected Prometheus syntax like 30s, 5m, 1h)")
    total = Decimal(0)
    for unit, group in zip(
        ("y", "w", "d", "h", "m", "s", "ms"), (2, 4, 6, 8, 10, 12, 14), strict=True
    ):
        if match.group(group):
            total += Decimal(match.group(group)) * _DURATION_UNITS[unit]
    return total


def parse_latency(text: str) -> Decimal:
    """A latency threshold (``5ms``, ``0.5s``, ``2s``; decimals allowed) to seconds."""
    match = LATENCY.match(text.strip())
    if match is None:
        try:
            return parse_duration(text)
        except UnitError:
            raise UnitError(
                f"invalid duration {text!r} (expected a latency like 5ms, 500ms, 2s)"
            ) from None
    return Decimal(match.group(1)) * _LATENCY_UNITS[match.group(2)]


def parse_percent(value: object) -> Decimal:
    """``80%`` or a fraction ``0.8`` to a ratio (0.8).

    A bare number above 1 (``90``) is refused, never guessed: read as a fraction it is 9000%,
    read as a percentage it contradicts ``0.9``. Every percent field, the SLO objective
    included, goes through :func:`bare_percent_hint` so the fix reads the same everywhere.
    """
    if isinstance(value, bool):
        raise UnitError(f"expected a percentage like 80% or a fraction like 0.8, got {value!r}")
    if isinstance(value, int | float):
        return _fraction(_decimal(repr(value)), value)
    if isinstance(value, str):
        text = value.strip()
        if text.endswith("%"):
            return _decimal(text[:-1].strip()) / 100
        return _fraction(_decimal(text), value)
    raise UnitError(f"expected a percentage like 80% or a fraction like 0.8, got {value!r}")


def bare_percent_hint(number: Decimal, raw: object) -> str:
    """The one message for a bare number above 1 where a percentage is expected."""
    shown = format(number.normalize(), "f")
    fraction = format((number / 100).normalize(), "f")
    got = raw if isinstance(raw, str) else repr(raw)
    return f"a bare number is not a percentage: write {shown}% or {fraction} (got {got})"


def _fraction(number: Decimal, raw: object) -> Decimal:
    if number > 1:
        raise BarePercentError(bare_percent_hint(number, raw))
    return number


def parse_number(value: object) -> Decimal:
    """A plain number (int, float or numeric string)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise UnitError(f"expected a number, got {value!r}")
    return _decimal(str(value) if isinstance(value, str) else repr(value))


def parse_bandwidth(value: object) -> Decimal:
    """``100Gbps``/``25Gbit/s`` (bits) or ``12.5GB/s``/a number (bytes) to bytes per second."""
    if isinstance(value, bool):
        raise UnitError(f"expected a link speed like 100Gbps, got {value!r}")
    if isinstance(value, int | float):
        return _decimal(repr(value))
    if not isinstance(value, str):
        raise UnitError(f"expected a link speed like 100Gbps, got {value!r}")
    match = _BANDWIDTH.match(value.strip())
    if match is None:
        try:
            return _decimal(value)
        except UnitError:
            raise UnitError(
                f"invalid link speed {value!r} (expected 10Gbps, 25Gbit/s, 12.5GB/s or bytes/s)"
            ) from None
    amount = Decimal(match.group(1)) * _SI[match.group(2)]
    return amount / 8 if match.group(3) in ("bps", "bit/s") else amount


def _decimal(text: str) -> Decimal:
    try:
        result = Decimal(text)
    except InvalidOperation:
        raise UnitError(f"expected a number, got {text!r}") from None
    if not result.is_finite():
        raise UnitError(f"expected a finite number, got {text!r}")
    return result


def literal(value: Decimal) -> str:
    """The shortest exact PromQL literal for a Decimal (``0.005``, ``12500000000``, ``1e-06``)."""
    normal = value.normalize()
    if normal == normal.to_integral_value():
        return str(int(normal))
    text = format(normal, "f")
    if len(text) > 12:
        text = format(normal, "e").replace("E", "e")
    return text


def fraction_literal(value: Fraction) -> str:
    """An exact PromQL number for a fraction: the shortest decimal when there is one
    (``72/5`` → ``14.4``), else ``(p / q)`` (``720/7`` → ``(720 / 7)``)."""
    denominator = value.denominator
    for prime in (2, 5):
        while denominator % prime == 0:
            denominator //= prime
    if denominator == 1:
        return literal(Decimal(value.numerator) / Decimal(value.denominator))
    return f"({value.numerator} / {value.denominator})"


def exact_number(value: Fraction) -> Decimal | Fraction:
    """``value`` as a ``Decimal`` when one holds it exactly (``72/5`` → ``14.4``), else the
    fraction itself (``720/7``): a threshold stays exact either way."""
    decimal = Decimal(value.numerator) / Decimal(value.denominator)
    return decimal if Fraction(decimal) == value else value


def format_duration(seconds: Decimal) -> str:
    """Seconds to the shortest Prometheus duration (``90`` → ``1m30s``, ``0.5`` → ``500ms``).

    Remembered: an SLO's rules and tests name the same few windows and times thousands of
    times (the text depends on the value only, so ``60`` and ``60.0`` share an entry)."""
    found = _DURATIONS.get(seconds)
    if found is None:
        if len(_DURATIONS) >= 100_000:
            _DURATIONS.clear()
        found = _DURATIONS[seconds] = _duration_text(seconds)
    return found


_DURATIONS: dict[Decimal, str] = {}


def _duration_text(seconds: Decimal) -> str:
    if seconds <= 0:
        return "0s"
    millis = int(seconds * 1000)
    parts: list[str] = []
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000), ("ms", 1)):
        count, millis = divmod(millis, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts) or "0s"  # below a millisecond: Prometheus' resolution


def format_human(value: Decimal, unit: str) -> str:
    """How a threshold reads in annotations: ``5ms``, ``80%``, ``100Gbps``, ``10``."""
    if unit == "duration":
        return format_latency(value)
    if unit == "percent":
        return f"{literal(value * 100)}%"
    if unit == "bandwidth":
        return f"{literal(value * 8 / 10**9)}Gbps"
    return literal(value)


def format_latency(seconds: Decimal) -> str:
    """A latency the way people write it: ``5ms``, ``500ms``, ``2s``, ``1.5s``, ``5m``."""
    if seconds < 1:
        return f"{literal(seconds * 1000)}ms"
    if seconds < 60 or seconds != seconds.to_integral_value():
        return f"{literal(seconds)}s"
    return format_duration(seconds)
