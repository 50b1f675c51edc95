"""Which kind of histogram a metric is stored as: classic, native with custom buckets, native.

Why one place: the same metric can arrive as ``_bucket``/``_count`` series (a classic
histogram), as one native histogram series with the classic bounds (NHCB, what Prometheus 3
makes of a classic histogram with ``convert_classic_histograms_to_nhcb``), or as an
exponential native histogram. Rules that read the wrong kind read nothing, so the spec says
which kind each exporter family (``histograms: {vllm: nhcb}``) or histogram metric is, and
every rule, test and dashboard that reads a histogram follows that one answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from rulegen.core.versions import PrometheusVersion

HistogramKind = Literal["classic", "nhcb", "native"]
CLASSIC: HistogramKind = "classic"
# Native histograms (and NHCB, which 3.0 introduced) are written for Prometheus 3.0 on: before
# it they were an experimental feature whose test notation and functions promtool 2.42 lacks.
NATIVE_SINCE = (3, 0)


@dataclass(frozen=True)
class Histograms:
    """The spec's ``histograms:`` choice: by family, by metric (a metric's own entry wins)."""

    families: tuple[tuple[str, HistogramKind], ...] = ()
    metrics: tuple[tuple[str, HistogramKind], ...] = ()

    @classmethod
    def of(
        cls, families: Mapping[str, HistogramKind], metrics: Mapping[str, HistogramKind]
    ) -> Histograms:
        """From checked entries: by family, by metric."""
        return cls(tuple(sorted(families.items())), tuple(sorted(metrics.items())))

    def kind(self, metric: str, family: str | None) -> HistogramKind:
        """How ``metric`` (a histogram's base name, of exporter ``family``) is stored."""
        for name, kind in self.metrics:
            if name == metric:
                return kind
        for name, kind in self.families:
            if name == family:
                return kind
        return CLASSIC


# No ``histograms:`` entry: every histogram is classic.
ALL_CLASSIC = Histograms()


def is_native(kind: HistogramKind) -> bool:
    """One series per histogram (``histogram_*`` functions), not ``_bucket`` series."""
    return kind != CLASSIC


def is_exponential_bound(value: Decimal) -> bool:
    """Whether ``value`` is a bucket bound of an exponential native histogram at any schema.

    The bounds of schema ``s`` are ``2**(k / 2**s)``; such a number is rational only when
    ``k / 2**s`` is a whole number, so the only thresholds every schema (and the generated
    tests' schema 0) has as a bound are the powers of two: 0.25s, 0.5s, 1s, 2s…
    """
    return value > 0 and power_of_two_below(value) == value


def native_problem(kind: HistogramKind, version: PrometheusVersion) -> str | None:
    """Why the declared Prometheus cannot take histograms of ``kind``, or None."""
    if not is_native(kind) or version.at_least(*NATIVE_SINCE):
        return None
    since = f"{NATIVE_SINCE[0]}.{NATIVE_SINCE[1]}"
    return f"{kind} histograms need Prometheus {since} or later (prometheus.version is {version})"


def power_of_two_below(value: Decimal) -> Decimal:
    """The largest power of two at most ``value`` (``value`` > 0)."""
    power = Decimal(1)
    while power > value:
        power /= 2
    while power * 2 <= value:
        power *= 2
    return power


def power_of_two_above(value: Decimal) -> Decimal:
    """The smallest power of two at least ``value`` (``value`` > 0)."""
    power = power_of_two_below(value)
    return power if power == value else power * 2
