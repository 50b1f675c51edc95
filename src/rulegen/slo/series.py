"""Input series for an SLO's generated tests: label sets the SLI's selectors accept.

Why: a test is only as good as its series; these are built from the selectors themselves
(successful events get a label value the errors selector refuses), never from the rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache

from rulegen.core import promql
from rulegen.core.histograms import power_of_two_above, power_of_two_below
from rulegen.core.nativeseries import Layout, exponential_index
from rulegen.core.nativeseries import expanding as native_expanding
from rulegen.generated import InputSeries
from rulegen.slo.model import (
    SLI,
    GoodputSLI,
    GoodRatioSLI,
    LatencySLI,
    RatioSLI,
    ResolvedSLO,
    SLOAlert,
    total_series,
)
from rulegen.slo.rules import absent_labels
from rulegen.slo.simulate import Traffic


class SLOTestError(ValueError):
    """No test can be built for an SLO (selectors no series can satisfy, no room for a burn)."""


def events_per_sample(min_traffic: Decimal | None, step: Decimal, *ratios: Fraction) -> int:
    """Events per sample: a power of ten that makes every error count whole and traffic
    comfortably above ``min_traffic``."""
    need = Fraction(0)
    if min_traffic is not None:
        need = Fraction(min_traffic) * Fraction(step) * 2
    for exponent in range(3, 13):
        n: int = 10**exponent
        if n >= need and all((r * n).denominator == 1 for r in ratios):
            return n
    raise SLOTestError("the error ratios of the test need more than 1e12 events per sample")


class SeriesMaker:
    """Input series for the SLI: label sets that the selectors accept (or reject) as needed."""

    def __init__(self, slo: ResolvedSLO) -> None:
        self.slo = slo
        self.group = {name: _group_value(slo, name) for name in slo.group_by}

    def series(
        self, traffic: Traffic, gap: range = range(0), bads: tuple[tuple[int, ...], ...] = ()
    ) -> tuple[InputSeries, ...]:
        """promtool series carrying ``traffic`` through the SLI's selectors; the samples of
        ``gap`` (indices) are not scraped (``_``), the counters counting on through it.

        A goodput SLI's histograms share the total; ``bads`` gives each one's cumulative
        slow events (default ``goodput_split``: the errors spread over the histograms, no
        request slow in two, so the SLI's lower bound is the traffic's exact errors)."""
        key = (repr(self.slo.sli), tuple(self.group.items()), traffic, gap, bads)
        found = _MADE.get(key)
        if found is None:
            if len(_MADE) >= _MAX_MADE:
                _MADE.clear()
            found = _MADE[key] = _Maker(self.slo.sli, self.group).series(traffic, gap, bads)
        return found

    def alert_labels(self, alert: SLOAlert, state: str) -> str:
        """The ``ALERTS`` series of this SLO's alert in ``state``."""
        labels = dict(self.slo.labels)
        labels.update(alert.labels)
        labels.update(self.group)
        labels.update(
            alertname=self.slo.alert_name, alertstate=state, severity=alert.severity,
            service=self.slo.service, slo=self.slo.name,
        )  # fmt: skip
        return _selector("ALERTS", labels)

    def alert_query(self, alert: SLOAlert) -> str:
        """``ALERTS`` of this SLO's alert, in any state: with its own labels, and without
        those only another rule of its name and severity has (a tier's alert of its own), so
        that exactly its series answer."""
        labels = {
            "alertname": self.slo.alert_name, "service": self.slo.service,
            "severity": alert.severity, "slo": self.slo.name,
        }  # fmt: skip
        own = dict(alert.labels)
        labels.update(own)
        siblings = [a for a in self.slo.alerts if a.severity == alert.severity and a != alert]
        missing = sorted({k for a in siblings for k, _ in a.labels if k not in own})
        labels.update({k: "" for k in missing})
        return _selector("ALERTS", labels)

    def absent_alert_labels(self) -> tuple[tuple[str, str], ...]:
        """The absent alert's labels: those ``absent()`` takes from the total selector's
        equality matchers, the rule's over them."""
        assert self.slo.absent is not None
        labels = absent_result_labels(total_series(self.slo.sli).matchers)
        labels.update(absent_labels(self.slo))
        return tuple(sorted(labels.items()))

    def absent_alert_series(self, state: str) -> str:
        """The ``ALERTS`` series of the absent alert in ``state``."""
        assert self.slo.absent is not None
        labels = dict(self.absent_alert_labels())
        labels.update(alertname=self.slo.absent.name, alertstate=state)
        return _selector("ALERTS", labels)

    def absent_query(self) -> str:
        """``ALERTS`` of the absent alert, in any state."""
        assert self.slo.absent is not None
        labels = {
            "alertname": self.slo.absent.name, "service": self.slo.service,
            "slo": self.slo.name,
        }  # fmt: skip
        return _selector("ALERTS", labels)

    def own_labels(self) -> str:
        """The label set of this SLO's recordings (an arithmetic result drops the name)."""
        return _selector("", {"service": self.slo.service, "slo": self.slo.name, **self.group})


# ``SeriesMaker.series`` by everything it reads (the SLI by its repr: ``0.5`` and ``0.50``
# are equal but print differently): a fleet's SLOs share their SLIs and scenarios.
_MADE: dict[tuple[object, ...], tuple[InputSeries, ...]] = {}
_MAX_MADE = 512


class _Maker:
    """``SeriesMaker.series`` of one SLI and group: what it reads is all it is given (the
    SLI and the group's label values), so its result can be shared by every SLO with them."""

    def __init__(self, sli: SLI, group: Mapping[str, str]) -> None:
        self.sli = sli
        self.group = dict(group)

    def series(
        self, traffic: Traffic, gap: range, bads: tuple[tuple[int, ...], ...]
    ) -> tuple[InputSeries, ...]:
        sli = self.sli
        if isinstance(sli, GoodputSLI):
            split = bads or goodput_split(traffic.errors, len(sli.latencies))
            out: list[InputSeries] = []
            for one, bad in zip(sli.latencies, split, strict=True):
                part = Traffic(traffic.step, traffic.total, bad, traffic.grain)
                out.extend(self._histogram(one, part, gap))
            return tuple(out)
        if isinstance(sli, LatencySLI):
            return self._histogram(sli, traffic, gap)
        return tuple(InputSeries(s.series, _blank(s.values, gap)) for s in self._series(traffic))

    def _histogram(self, sli: LatencySLI, traffic: Traffic, gap: range) -> tuple[InputSeries, ...]:
        if sli.native:
            return (self._native(sli, traffic, gap),)
        labels = _satisfy(sli.matchers, dict(self.group))
        good = tuple(t - e for t, e in zip(traffic.total, traffic.errors, strict=True))
        bound = promql.go_float(float(sli.threshold))
        made = (
            _input(f"{sli.metric}_bucket", {**labels, "le": bound}, good),
            _input(f"{sli.metric}_bucket", {**labels, "le": "+Inf"}, traffic.total),
            _input(f"{sli.metric}_count", labels, traffic.total),
        )
        return tuple(InputSeries(s.series, _blank(s.values, gap)) for s in made)

    def _native(self, sli: LatencySLI, traffic: Traffic, gap: range) -> InputSeries:
        """One native histogram series: the good events in a bucket at or below the
        threshold, the others in one above it (``rulegen.core.nativeseries``)."""
        layout, good, bad = native_layout(sli)
        samples: list[tuple[Decimal, ...] | None] = []
        for index, (total, errors) in enumerate(zip(traffic.total, traffic.errors, strict=True)):
            if index in gap:
                samples.append(None)
                continue
            counts = [Decimal(0)] * layout.size
            counts[good], counts[bad] = Decimal(total - errors), Decimal(errors)
            samples.append(tuple(counts))
        labels = _satisfy(sli.matchers, dict(self.group))
        return InputSeries(_selector(sli.metric, labels), native_expanding(layout, samples))

    def _series(self, traffic: Traffic) -> tuple[InputSeries, ...]:
        sli = self.sli
        good = tuple(t - e for t, e in zip(traffic.total, traffic.errors, strict=True))
        if isinstance(sli, GoodRatioSLI):
            return self._good_ratio(sli, traffic, good)
        assert isinstance(sli, RatioSLI)
        return self._ratio(sli, traffic, good)

    def _good_ratio(
        self, sli: GoodRatioSLI, traffic: Traffic, good: tuple[int, ...]
    ) -> tuple[InputSeries, ...]:
        """The good counter and the total one: of one metric, a good series and one of
        errors (the total's series are both); of two, one series each, the good one with the
        labels both selectors accept (it counts a subset of the total's events)."""
        if sli.good.metric == sli.total.metric:
            fine = _satisfy((*sli.good.matchers, *sli.total.matchers), dict(self.group))
            bad = promql.refused(sli.good.matchers, sli.total.matchers, fine)
            if bad is None:
                raise SLOTestError(
                    "no label value that the total selector accepts and good refuses"
                )
            return (
                _input(sli.good.metric, fine, good),
                _input(sli.total.metric, bad, traffic.errors),
            )
        total_labels = _satisfy(sli.total.matchers, dict(self.group))
        good_labels = _satisfy(sli.good.matchers, dict(total_labels))
        return (
            _input(sli.total.metric, total_labels, traffic.total),
            _input(sli.good.metric, good_labels, good),
        )

    def _ratio(
        self, sli: RatioSLI, traffic: Traffic, good: tuple[int, ...]
    ) -> tuple[InputSeries, ...]:
        bad = _satisfy((*sli.errors.matchers, *sli.total.matchers), dict(self.group))
        if sli.errors.metric == sli.total.metric:
            if not all(promql.accepts(m, bad.get(m.name, "")) for m in sli.total.matchers):
                raise SLOTestError("no series matches both the errors and the total selector")
            ok = _good_labels(sli, bad)
            return (
                _input(sli.total.metric, ok, good),
                _input(sli.errors.metric, bad, traffic.errors),
            )
        total_labels = _satisfy(sli.total.matchers, dict(self.group))
        return (
            _input(sli.total.metric, total_labels, traffic.total),
            _input(sli.errors.metric, bad, traffic.errors),
        )


def absent_result_labels(matchers: tuple[promql.Matcher, ...]) -> dict[str, str]:
    """The labels of ``absent(selector)``'s one sample: each label the selector's matchers
    pin with ``=`` to a value (a label pinned twice is left out), as Prometheus and MetricsQL
    give them."""
    pinned = [m for m in matchers if m.op == "=" and m.name != "__name__" and m.value]
    names = [m.name for m in pinned]
    return {m.name: m.value for m in pinned if names.count(m.name) == 1}


def native_layout(sli: LatencySLI) -> tuple[Layout, int, int]:
    """The buckets of an SLO test's native histogram, and the buckets of the good and the
    bad events: the bucket just at or below the threshold and the one just above it, so
    that a threshold moved either way (in the rules) moves events across it.

    NHCB: bounds ``T/2, T, 2T``, good events in ``(T/2, T]``, bad in ``(T, 2T]``.
    Exponential (schema 0): good events in the bucket whose upper bound is the power of two
    at or below ``T``, bad in the one just above the power of two at or above it (so no
    observation shares a bucket with a threshold that is not a bound).
    """
    if sli.histogram == "nhcb":
        threshold = sli.threshold
        return Layout("nhcb", (threshold / 2, threshold, threshold * 2)), 1, 2
    good = exponential_index(power_of_two_below(sli.threshold))
    bad = exponential_index(power_of_two_above(sli.threshold) * 2)
    return Layout("native", offset=good, width=bad - good + 1), 0, bad - good


def goodput_split(errors: tuple[int, ...], count: int) -> tuple[tuple[int, ...], ...]:
    """Cumulative errors spread over ``count`` histograms as no request slow in two of them:
    the later ones ``⌊errors / count⌋`` each, the first the rest. Every part is a counter
    (never decreasing) and they add up to ``errors`` at every sample, so every window's
    ``Σᵢ badᵢ`` is its errors exactly: the goodput SLI's bound is reached."""
    later = tuple(e // count for e in errors)
    first = tuple(e - later[k] * (count - 1) for k, e in enumerate(errors))
    return (first, *(later,) * (count - 1))


def _group_value(slo: ResolvedSLO, name: str) -> str:
    matchers = _selector_matchers(slo)
    return _satisfy(tuple(m for m in matchers if m.name == name), {name: "rulegen-a"})[name]


def _selector_matchers(slo: ResolvedSLO) -> tuple[promql.Matcher, ...]:
    sli = slo.sli
    if isinstance(sli, GoodputSLI):
        return tuple(m for one in sli.latencies for m in one.matchers)
    if isinstance(sli, LatencySLI):
        return sli.matchers
    if isinstance(sli, GoodRatioSLI):
        return (*sli.good.matchers, *sli.total.matchers)
    if isinstance(sli, RatioSLI):
        return (*sli.errors.matchers, *sli.total.matchers)
    return ()  # an expression SLI's own test series carry their labels


def _satisfy(matchers: tuple[promql.Matcher, ...], labels: dict[str, str]) -> dict[str, str]:
    try:
        return promql.satisfy(matchers, labels)
    except ValueError as exc:
        raise SLOTestError(f"cannot build a test series: {exc}") from None


def _good_labels(sli: RatioSLI, bad: dict[str, str]) -> dict[str, str]:
    """Labels of successful events: accepted by the total selector, refused by the errors one."""
    good = promql.refused(sli.errors.matchers, sli.total.matchers, bad)
    if good is None:
        raise SLOTestError("no label value that the total selector accepts and errors refuses")
    return good


def _selector(name: str, labels: Mapping[str, str]) -> str:
    return promql.series_text(name, labels)


def _input(metric: str, labels: Mapping[str, str], values: tuple[int, ...]) -> InputSeries:
    return InputSeries(_selector(metric, labels), expanding(values))


def _blank(values: str, gap: range) -> str:
    """``values`` (expanding notation) with the samples of ``gap`` missing."""
    if not gap:
        return values
    counters = _expand(values)
    before, after = counters[: gap.start], counters[gap.stop :]
    parts = [expanding(before)] if before else []
    parts.append(f"_x{len(gap)}")
    if after:
        parts.append(expanding(after))
    return " ".join(parts)


def _expand(values: str) -> tuple[int, ...]:
    """The counters of ``a+bxn`` tokens (what ``expanding`` writes) one by one."""
    out: list[int] = []
    for token in values.split():
        start, rest = token.split("+")
        step, count = rest.split("x")
        out.extend(int(start) + int(step) * i for i in range(int(count) + 1))
    return tuple(out)


@lru_cache(maxsize=1024)  # the same counters recur in every service sharing the SLO's numbers
def expanding(values: tuple[int, ...]) -> str:
    """promtool's expanding notation for a counter: ``0+100x360 36000+0x60``."""
    parts: list[str] = []
    index = 0
    while index < len(values):
        step = values[index + 1] - values[index] if index + 1 < len(values) else 0
        end = index
        while end + 1 < len(values) and values[end + 1] - values[end] == step:
            end += 1
        parts.append(f"{values[index]}+{step}x{end - index}")
        index = end + 1
    return " ".join(parts)
