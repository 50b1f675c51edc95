"""``rulegen.units``: what users write (``1h30m``, ``80%``, ``25Gbit/s``) ↔ exact decimals.

Every value is a ``Decimal`` so that a threshold comes out of PromQL as the short literal the
user meant; the round trips below are what keep golden files free of float noise.
``tests/unit/test_units.py`` has the first cases; these tables pin every unit and every error.
"""

from __future__ import annotations

import re
from decimal import Decimal
from fractions import Fraction

import pytest

from rulegen import units
from rulegen.units import UnitError

DURATIONS = [
    # (behaviour, text, seconds)
    ("zero seconds is zero", "0s", "0"),
    ("a year is 365 days", "1y", "31536000"),
    ("a week is seven days", "1w", "604800"),
    ("milliseconds are exact fractions", "250ms", "0.25"),
    ("a duration with mixed units is parsed exactly", "1y2w3d4h5m6s7ms", "33019506.007"),
    ("seconds over a minute are not carried", "90s", "90"),
    ("hours and minutes add up", "1h30m", "5400"),
]


@pytest.mark.parametrize(
    ("text", "seconds"), [c[1:] for c in DURATIONS], ids=[c[0] for c in DURATIONS]
)
def test_prometheus_durations_parse_to_exact_seconds(text: str, seconds: str) -> None:
    assert units.parse_duration(text) == Decimal(seconds)


BAD_DURATIONS = [
    # (behaviour, text)
    ("an empty duration is rejected", ""),
    ("a number without a unit is rejected", "5"),
    ("units out of order are rejected", "30s5m"),
    ("an upper-case unit is rejected", "5M"),
    ("a space between parts is rejected", "1h 30m"),
    ("a fraction is rejected", "1.5m"),
    ("a negative duration is rejected", "-1m"),
    ("a unit before its number is rejected", "m5"),
]


@pytest.mark.parametrize("text", [c[1] for c in BAD_DURATIONS], ids=[c[0] for c in BAD_DURATIONS])
def test_invalid_durations_are_rejected_with_the_expected_syntax(text: str) -> None:
    expected = f"invalid duration {text!r} (expected Prometheus syntax like 30s, 5m, 1h)"
    with pytest.raises(UnitError, match=re.escape(expected)):
        units.parse_duration(text)


LATENCIES = [
    # (behaviour, text, seconds)
    ("milliseconds", "5ms", "0.005"),
    ("decimal seconds", "0.5s", "0.5"),
    ("microseconds written us", "250us", "0.00025"),
    ("microseconds written µs", "250µs", "0.00025"),
    ("decimal minutes", "1.5m", "90"),
    ("hours", "1h", "3600"),
    ("a Prometheus duration with several units", "1h30m", "5400"),
    ("blanks around the value", " 5ms ", "0.005"),
]


@pytest.mark.parametrize(
    ("text", "seconds"), [c[1:] for c in LATENCIES], ids=[c[0] for c in LATENCIES]
)
def test_latencies_parse_to_seconds(text: str, seconds: str) -> None:
    assert units.parse_latency(text) == Decimal(seconds)


@pytest.mark.parametrize(
    "text",
    ["5", "abc", "-5ms", "5 ms"],
    ids=[
        "a latency needs a unit",
        "a word is not a latency",
        "a negative latency is rejected",
        "a space before the unit is rejected",
    ],
)
def test_invalid_latencies_are_rejected_with_an_example(text: str) -> None:
    expected = f"invalid duration {text!r} (expected a latency like 5ms, 500ms, 2s)"
    with pytest.raises(UnitError, match=re.escape(expected)):
        units.parse_latency(text)


PERCENTS = [
    # (behaviour, raw, ratio)
    ("a percentage is a ratio", "80%", "0.8"),
    ("blanks around the number and the sign are ignored", " 80 % ", "0.8"),
    ("a tenth of a percent is exact", "0.1%", "0.001"),
    ("a fraction as text is taken as is", "0.8", "0.8"),
    ("a float fraction is exact", 0.8, "0.8"),
    ("an integer is a ratio of one", 1, "1"),
]


@pytest.mark.parametrize(("raw", "ratio"), [c[1:] for c in PERCENTS], ids=[c[0] for c in PERCENTS])
def test_percentages_and_fractions_parse_to_ratios(raw: object, ratio: str) -> None:
    assert units.parse_percent(raw) == Decimal(ratio)


BAD_PERCENTS = [
    # (behaviour, raw, message)
    ("a boolean is not a percentage", True, "expected a percentage like 80% or a fraction"),
    ("null is not a percentage", None, "expected a percentage like 80% or a fraction"),
    ("a list is not a percentage", [1], "expected a percentage like 80% or a fraction"),
    ("a word with a percent sign is not a number", "abc%", "expected a number, got 'abc'"),
    ("NaN is not finite", "nan", "expected a finite number, got 'nan'"),
    ("infinity is not finite", "inf%", "expected a finite number, got 'inf'"),
]


@pytest.mark.parametrize(
    ("raw", "message"), [c[1:] for c in BAD_PERCENTS], ids=[c[0] for c in BAD_PERCENTS]
)
def test_invalid_percentages_are_rejected(raw: object, message: str) -> None:
    with pytest.raises(UnitError, match=re.escape(message)):
        units.parse_percent(raw)


NUMBERS = [
    # (behaviour, raw, number)
    ("an integer", 5, "5"),
    ("a float keeps its shortest decimal form", 0.1, "0.1"),
    ("numeric text", "5.5", "5.5"),
    ("numeric text with blanks", " 7 ", "7"),
    ("an exponent", "1e3", "1000"),
]


@pytest.mark.parametrize(("raw", "number"), [c[1:] for c in NUMBERS], ids=[c[0] for c in NUMBERS])
def test_plain_numbers_parse_exactly(raw: object, number: str) -> None:
    assert units.parse_number(raw) == Decimal(number)


@pytest.mark.parametrize(
    ("raw", "message"),
    [(True, "expected a number, got True"), (None, "expected a number, got None"),
     ("x", "expected a number, got 'x'"), ("Infinity", "expected a finite number")],
    ids=["a boolean is not a number", "null is not a number", "a word is not a number",
         "infinity is not a finite number"],
)  # fmt: skip
def test_invalid_numbers_are_rejected(raw: object, message: str) -> None:
    with pytest.raises(UnitError, match=re.escape(message)):
        units.parse_number(raw)


BANDWIDTHS = [
    # (behaviour, raw, bytes per second)
    ("gigabits per second are divided by eight", "100Gbps", "12500000000"),
    ("terabits per second", "1Tbps", "125000000000"),
    ("bit/s is the same as bps", "25Gbit/s", "3125000000"),
    ("a space before the unit is allowed", "1 Gbps", "125000000"),
    ("plain bits per second", "8bps", "1"),
    ("kilobytes per second are not divided", "1KB/s", "1000"),
    ("Bps means bytes", "12.5GBps", "12500000000"),
    ("numeric text is bytes per second", "1000", "1000"),
    ("a number is bytes per second", 1.5, "1.5"),
]


@pytest.mark.parametrize(
    ("raw", "per_second"), [c[1:] for c in BANDWIDTHS], ids=[c[0] for c in BANDWIDTHS]
)
def test_link_speeds_parse_to_bytes_per_second(raw: object, per_second: str) -> None:
    assert units.parse_bandwidth(raw) == Decimal(per_second)


BAD_BANDWIDTHS = [
    # (behaviour, raw, message)
    ("a boolean is not a link speed", True, "expected a link speed like 100Gbps, got True"),
    ("null is not a link speed", None, "expected a link speed like 100Gbps, got None"),
    ("a word is not a link speed", "fast", "invalid link speed 'fast' (expected 10Gbps"),
    ("SI prefixes are upper case", "100gbps", "invalid link speed '100gbps'"),
    ("a negative link speed is rejected", "-1Gbps", "invalid link speed '-1Gbps'"),
]


@pytest.mark.parametrize(
    ("raw", "message"), [c[1:] for c in BAD_BANDWIDTHS], ids=[c[0] for c in BAD_BANDWIDTHS]
)
def test_invalid_link_speeds_are_rejected(raw: object, message: str) -> None:
    with pytest.raises(UnitError, match=re.escape(message)):
        units.parse_bandwidth(raw)


def test_a_unit_error_is_a_value_error() -> None:
    assert issubclass(UnitError, ValueError)


LITERALS = [
    # (behaviour, value, literal)
    ("zero", "0", "0"),
    ("a negative integer", "-1", "-1"),
    ("an integer in exponent form is written out", "1E+3", "1000"),
    ("trailing zeros are dropped", "1.50", "1.5"),
    ("a small fraction is written out", "1E-6", "0.000001"),
    ("a fraction with many digits is written out up to 12 characters", "123456.789", "123456.789"),
    ("a longer one switches to an exponent", "12345678.9012", "1.23456789012e+7"),
    ("a tiny one switches to an exponent", "1E-12", "1e-12"),
    ("a negative fraction", "-0.5", "-0.5"),
]


@pytest.mark.parametrize(("value", "text"), [c[1:] for c in LITERALS], ids=[c[0] for c in LITERALS])
def test_literals_are_short_and_exact(value: str, text: str) -> None:
    assert units.literal(Decimal(value)) == text


@pytest.mark.parametrize(
    "value",
    ["0.005", "12500000000", "0.999", "14.4", "1E-12", "12345678.9012", "-0.5", "3.14159265358979"],
)
def test_a_literal_reads_back_as_the_same_number(value: str) -> None:
    assert Decimal(units.literal(Decimal(value))) == Decimal(value)


FORMATTED_DURATIONS = [
    # (behaviour, seconds, text)
    ("zero is 0s", "0", "0s"),
    ("a negative duration is 0s", "-1", "0s"),
    ("half a second is milliseconds", "0.5", "500ms"),
    ("ninety seconds carry into minutes", "90", "1m30s"),
    ("an hour is 1h", "3600", "1h"),
    ("a week is written in days", "604800", "7d"),
    ("every unit down to milliseconds", "90061.5", "1d1h1m1s500ms"),
]


@pytest.mark.parametrize(
    ("seconds", "text"),
    [c[1:] for c in FORMATTED_DURATIONS],
    ids=[c[0] for c in FORMATTED_DURATIONS],
)
def test_durations_format_as_the_shortest_prometheus_duration(seconds: str, text: str) -> None:
    assert units.format_duration(Decimal(seconds)) == text


@pytest.mark.parametrize("text", ["30s", "5m", "1h30m", "1d", "7d", "500ms", "2d3h4m5s6ms"])
def test_a_formatted_duration_parses_back_to_the_same_seconds(text: str) -> None:
    seconds = units.parse_duration(text)
    assert units.parse_duration(units.format_duration(seconds)) == seconds


LATENCY_TEXT = [
    # (behaviour, seconds, text)
    ("under a second is milliseconds", "0.005", "5ms"),
    ("below a millisecond stays in milliseconds", "0.0000005", "0.0005ms"),
    ("whole seconds", "1", "1s"),
    ("fractional seconds", "1.5", "1.5s"),
    ("fractional seconds over a minute stay seconds", "59.5", "59.5s"),
    ("whole minutes are a duration", "300", "5m"),
    ("minutes and seconds", "90", "1m30s"),
]


@pytest.mark.parametrize(
    ("seconds", "text"), [c[1:] for c in LATENCY_TEXT], ids=[c[0] for c in LATENCY_TEXT]
)
def test_latencies_format_the_way_people_write_them(seconds: str, text: str) -> None:
    assert units.format_latency(Decimal(seconds)) == text


@pytest.mark.parametrize("text", ["5ms", "500ms", "2s", "1.5s", "5m", "1h", "250us"])
def test_a_formatted_latency_parses_back_to_the_same_seconds(text: str) -> None:
    seconds = units.parse_latency(text)
    assert units.parse_latency(units.format_latency(seconds)) == seconds


HUMAN = [
    # (behaviour, value, unit, text)
    ("a latency threshold", "0.005", "duration", "5ms"),
    ("a percentage threshold", "0.8", "percent", "80%"),
    ("a fractional percentage", "0.999", "percent", "99.9%"),
    ("a link speed in Gbps", "12500000000", "bandwidth", "100Gbps"),
    ("a plain count", "10", "count", "10"),
]


@pytest.mark.parametrize(
    ("value", "unit", "text"), [c[1:] for c in HUMAN], ids=[c[0] for c in HUMAN]
)
def test_thresholds_read_naturally_in_annotations(value: str, unit: str, text: str) -> None:
    assert units.format_human(Decimal(value), unit) == text


@pytest.mark.parametrize(
    ("parse", "unit", "raw"),
    [(units.parse_percent, "percent", "99.95%"), (units.parse_bandwidth, "bandwidth", "25Gbps"),
     (units.parse_latency, "duration", "750ms"), (units.parse_number, "count", "3")],
    ids=["a percentage", "a link speed", "a latency", "a count"],
)  # fmt: skip
def test_a_human_threshold_parses_back_to_the_same_value(
    parse: object, unit: str, raw: str
) -> None:
    assert callable(parse)
    value = parse(raw)
    assert parse(units.format_human(value, unit)) == value


FRACTIONS = [
    # (behaviour, numerator, denominator, literal)
    ("a fraction with a finite decimal is that decimal", 72, 5, "14.4"),
    ("a whole fraction is an integer", 10, 2, "5"),
    ("a power of two in the denominator is still exact", 1, 8, "0.125"),
    ("a repeating decimal stays a division", 720, 7, "(720 / 7)"),
    ("a third stays a division", 1, 3, "(1 / 3)"),
]


@pytest.mark.parametrize(
    ("numerator", "denominator", "text"), [c[1:] for c in FRACTIONS], ids=[c[0] for c in FRACTIONS]
)
def test_fractions_are_exact_promql_numbers(numerator: int, denominator: int, text: str) -> None:
    assert units.fraction_literal(Fraction(numerator, denominator)) == text


@pytest.mark.parametrize(
    ("value", "exact"),
    [(Fraction(72, 5), Decimal("14.4")), (Fraction(720, 7), Fraction(720, 7))],
    ids=["a fraction a decimal holds becomes that decimal", "any other fraction stays one"],
)
def test_exact_number_keeps_a_threshold_exact(value: Fraction, exact: Decimal | Fraction) -> None:
    result = units.exact_number(value)
    assert result == exact
    assert type(result) is type(exact)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(Decimal("0.0001"), "0s"), (Decimal("0.001"), "1ms"), (Decimal("0.0019"), "1ms")],
    ids=[
        "a duration below Prometheus' millisecond resolution is 0s, never empty",
        "one millisecond is 1ms",
        "fractions of a millisecond are dropped",
    ],
)
def test_durations_are_formatted_at_millisecond_resolution(seconds: Decimal, text: str) -> None:
    assert units.format_duration(seconds) == text
