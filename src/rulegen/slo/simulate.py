"""An exact model of what an SLO's rules compute on synthetic counters, to predict alert times.

Why: a generated test must say *when* an alert fires and resolves, not just that it does.
The rules sum window recordings read at offsets, so on counters that start at 0 and are
sampled at every evaluation, a window of length ``W`` at time ``t`` holds exactly
``C(t) - C(max(0, t - W))``: ``increase()`` neither extrapolates past a first sample of 0
nor past a sample at the window's end. Ratios are computed in float64 in the same order as
PromQL does, so predicted comparisons are bit-for-bit those of Prometheus.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache
from itertools import accumulate, chain, repeat

from rulegen.slo.model import ResolvedSLO, SLOAlert, Tier
from rulegen.slo.resolve import base_window, format_fraction, windows_of
from rulegen.slo.windows import base_steps


@dataclass(frozen=True)
class Phase:
    """A stretch of constant traffic: events and errors added at every sample."""

    steps: int
    total: int
    errors: int


@dataclass(frozen=True)
class Traffic:
    """Cumulative counters at every sample (sample ``k`` is at ``k × step`` seconds)."""

    step: Decimal
    total: tuple[int, ...]
    errors: tuple[int, ...]
    # Samples per step of the base recordings' form: 1 for ``increase()`` (2.x), which counts
    # from a series' first sample; the 3.x form counts whole steps only, so while a window
    # still reaches before the first sample it starts at the first step boundary
    # (``rulegen.slo.windows.base_steps``).
    grain: int = 1

    @classmethod
    def of(cls, step: Decimal, phases: list[Phase], grain: int = 1) -> Traffic:
        """Counters that start at 0 and grow phase by phase."""
        total = chain.from_iterable(repeat(p.total, max(0, p.steps)) for p in phases)
        errors = chain.from_iterable(repeat(p.errors, max(0, p.steps)) for p in phases)
        return cls(
            step, tuple(accumulate(total, initial=0)), tuple(accumulate(errors, initial=0)),
            grain,
        )  # fmt: skip

    @property
    def end(self) -> Decimal:
        """The time of the last sample."""
        return self.step * (len(self.total) - 1)

    def window(self, counter: tuple[int, ...], at: Decimal, seconds: Decimal) -> int:
        """Events counted by a window recording of ``seconds`` at time ``at``."""
        now = int(at / self.step)
        return counter[now] - counter[now - _reach(now, int(seconds / self.step), self.grain)]


def _reach(now: int, span: int, grain: int) -> int:
    """Samples back to where a window of ``span`` samples at sample ``now`` starts counting."""
    return min(span, now // grain * grain)


def ratio(traffic: Traffic, at: Decimal, seconds: Decimal) -> float | None:
    """``slo:sli_error:ratio_rate<W>`` at ``at``, or None where the rule yields nothing."""
    if at < traffic.step * traffic.grain:
        return None
    total = traffic.window(traffic.total, at, seconds)
    if total <= 0:
        return None
    return float(traffic.window(traffic.errors, at, seconds)) / float(total)


def tier_holds(slo: ResolvedSLO, tier: Tier, traffic: Traffic, at: Decimal) -> bool:
    """Whether the tier's condition is non-empty at ``at`` (the float comparisons of PromQL)."""
    return holds_series(slo, tier, traffic)[int(at / traffic.step)]


def holds_series(slo: ResolvedSLO, tier: Tier, traffic: Traffic) -> tuple[bool, ...]:
    """Whether the tier's condition holds at every sample (= evaluation) of the traffic.

    Integer window arithmetic on the counters, then the float operations of PromQL in its
    order: ``errors / total``, ``/ budget``, ``> factor``; ``total / seconds >= min_traffic``.
    """
    return _holds(slo.budget, slo.min_traffic, tier.long, tier.short, tier.factor, traffic)


# Why cached: a fleet's SLOs mostly share objective and tiers, so the same traffic is replayed
# against the same numbers once per service otherwise. The key is every number the result
# depends on, nothing else (no service, name or position).
@lru_cache(maxsize=4096)
def _holds(
    budget_ratio: Decimal, min_traffic: Decimal | None, long_window: Decimal,
    short_window: Decimal, factor_value: Fraction, traffic: Traffic,
) -> tuple[bool, ...]:  # fmt: skip
    budget, factor = float(budget_ratio), _factor(factor_value)
    long, short = int(long_window / traffic.step), int(short_window / traffic.step)
    minimum = None if min_traffic is None else float(min_traffic)
    seconds = float(short_window)
    g = traffic.grain
    windows = zip(
        _windowed(traffic.total, long, g), _windowed(traffic.errors, long, g),
        _windowed(traffic.total, short, g), _windowed(traffic.errors, short, g), strict=True,
    )  # fmt: skip
    out = [False] * len(traffic.total)
    for i, (long_total, long_errors, short_total, short_errors) in enumerate(windows):
        if i == 0 or long_total <= 0 or short_total <= 0:
            continue
        long_ratio = float(long_errors) / float(long_total)
        short_ratio = float(short_errors) / float(short_total)
        if not (long_ratio / budget > factor and short_ratio / budget > factor):
            continue
        out[i] = minimum is None or float(short_total) / seconds >= minimum
    return tuple(out)


def _windowed(counter: tuple[int, ...], steps: int, grain: int = 1) -> list[int]:
    """``counter[i] - counter[max(0, i - steps)]`` at every sample: a window recording (0
    where it has nothing to count yet; with ``grain``, from the first step boundary)."""
    if grain == 1:
        head = [value - counter[0] for value in counter[:steps]]
    else:
        head = [
            value - counter[i - _reach(i, steps, grain)] for i, value in enumerate(counter[:steps])
        ]
    return head + [now - then for now, then in zip(counter[steps:], counter, strict=False)]


def grain_of(slo: ResolvedSLO, step: Decimal) -> int:
    """``Traffic.grain`` for this SLO's rules, on samples ``step`` apart."""
    if not slo.left_open:
        return 1
    _, length = base_steps(base_window(windows_of(slo)), slo.evaluation)
    return max(1, int(length / step))


def _factor(value: Fraction) -> float:
    """The factor as PromQL reads the literal rulegen prints: a decimal, or ``(p / q)``."""
    text = format_fraction(value)
    if text.startswith("("):
        numerator, denominator = text.strip("()").split(" / ")
        return float(numerator) / float(denominator)
    return float(text)


@dataclass(frozen=True)
class Timeline:
    """Evaluation times (seconds) at which an alert is firing."""

    firing: tuple[Decimal, ...]

    def first_firing(self, after: Decimal = Decimal(-1)) -> Decimal | None:
        """The first time the alert fires after ``after``."""
        return next((t for t in self.firing if t > after), None)

    def resolved_after(self, start: Decimal, times: tuple[Decimal, ...]) -> Decimal | None:
        """The first evaluation after ``start`` at which it no longer fires."""
        firing = set(self.firing)
        return next((t for t in times if t > start and t not in firing), None)


@lru_cache(maxsize=1024)
def evaluations(traffic: Traffic) -> tuple[Decimal, ...]:
    """Every evaluation time within the traffic's span: tests evaluate at every sample."""
    count = int(traffic.end / traffic.step)
    return tuple(traffic.step * i for i in range(count + 1))


def alert_timeline(slo: ResolvedSLO, alert: SLOAlert, traffic: Traffic) -> Timeline:
    """Replay the alert's state machine (inactive → pending → firing) over the traffic; only
    the firing times are kept (the generated tests check when an alert fires and resolves)."""
    return _timeline(slo.budget, slo.min_traffic, alert.for_seconds, _tiers(alert), traffic)


def _tiers(alert: SLOAlert) -> tuple[tuple[Decimal, Decimal, Fraction], ...]:
    return tuple((t.long, t.short, t.factor) for t in alert.tiers)


@lru_cache(maxsize=4096)
def _timeline(
    budget: Decimal, min_traffic: Decimal | None, for_seconds: Decimal,
    tiers: tuple[tuple[Decimal, Decimal, Fraction], ...], traffic: Traffic,
) -> Timeline:  # fmt: skip
    series = [_holds(budget, min_traffic, *tier, traffic) for tier in tiers]
    firing: list[Decimal] = []
    active_since: Decimal | None = None
    times = evaluations(traffic)
    holding_at = map(any, zip(*series, strict=True)) if series else [False] * len(times)
    for at, holding in zip(times, holding_at, strict=True):
        if holding:
            active_since = at if active_since is None else active_since
            if at - active_since >= for_seconds:
                firing.append(at)
        else:
            active_since = None
    return Timeline(tuple(firing))


def onset(slo: ResolvedSLO, tier: Tier, traffic: Traffic, after: Decimal) -> Decimal | None:
    """The first evaluation after ``after`` at which the tier's condition holds."""
    holds = holds_series(slo, tier, traffic)
    # evaluation ``i`` is at ``step * i`` (exact decimals): the first after ``after`` is the
    # next whole multiple, and from there the first that holds (searched in C)
    first = int(after // traffic.step) + 1 if after >= 0 else 0
    try:
        return evaluations(traffic)[holds.index(True, first)]
    except ValueError:
        return None
