"""Units: what users write → exact decimals, and back to short literals."""

from __future__ import annotations

from decimal import Decimal

import pytest

from rulegen import gotemplate, units


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30s", "30"), ("5m", "300"), ("1h30m", "5400"), ("1d", "86400"), ("500ms", "0.5")],
)
def test_prometheus_durations_parse_to_seconds(text: str, seconds: str) -> None:
    assert units.parse_duration(text) == Decimal(seconds)


@pytest.mark.parametrize("text", ["", "5", "5 minutes", "1.5m", "-1m", "m5"])
def test_invalid_durations_are_rejected(text: str) -> None:
    with pytest.raises(units.UnitError, match="invalid duration"):
        units.parse_duration(text)


@pytest.mark.parametrize(
    ("raw", "ratio"),
    [("80%", "0.8"), ("0.1%", "0.001"), (0.8, "0.8"), (1, "1"), ("99.9%", "0.999")],
)
def test_percentages_and_fractions_are_ratios(raw: object, ratio: str) -> None:
    assert units.parse_percent(raw) == Decimal(ratio)


@pytest.mark.parametrize(
    ("raw", "bytes_per_second"),
    [("100Gbps", "12500000000"), ("10Gbps", "1250000000"), ("25Gbit/s", "3125000000"),
     ("12.5GB/s", "12500000000"), (125000000, "125000000"), ("1Mbps", "125000")],
)  # fmt: skip
def test_link_speeds_are_bytes_per_second(raw: object, bytes_per_second: str) -> None:
    assert units.parse_bandwidth(raw) == Decimal(bytes_per_second)


@pytest.mark.parametrize(
    ("value", "text"),
    [("0.005", "0.005"), ("12500000000", "12500000000"), ("0.9990", "0.999"),
     ("0.000001", "0.000001"), ("14.4", "14.4"), ("1E-9", "0.000000001"), ("1E-12", "1e-12")],
)  # fmt: skip
def test_literals_are_short_and_exact(value: str, text: str) -> None:
    assert units.literal(Decimal(value)) == text


@pytest.mark.parametrize(
    ("func", "value", "text"),
    [
        (gotemplate.humanize_duration, 0.0055, "5.5ms"),
        (gotemplate.humanize_duration, 0.7000000000000002, "700ms"),
        (gotemplate.humanize_duration, 66.0, "1m 6s"),
        (gotemplate.humanize_duration, 90061.0, "1d 1h 1m 1s"),
        (gotemplate.humanize_duration, 1.5, "1.5s"),
        (gotemplate.humanize_percentage, 0.9750000000000001, "97.5%"),
        (gotemplate.humanize, 22.0, "22"),
        (gotemplate.humanize, 1234567.0, "1.235M"),
        (gotemplate.humanize, 0.0012, "1.2m"),
        (gotemplate.humanize1024, 2048.0, "2ki"),
    ],
)
def test_prometheus_humanize_functions_are_predicted(func: object, value: float, text: str) -> None:
    assert callable(func)
    assert func(value) == text


def test_unsupported_template_actions_are_refused() -> None:
    with pytest.raises(gotemplate.UnsupportedTemplate):
        gotemplate.expand("{{ range $labels }}x{{ end }}", {}, 1.0)
