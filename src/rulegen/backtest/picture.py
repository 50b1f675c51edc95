"""What a backtest picture shows, decided without matplotlib: units, lines, spans, legend.

Why apart from the drawing (``plot``): everything a reader relies on (the threshold written
as the spec writes it, each label set's pending and firing spans, which series are shown
and what the legend calls them) is plain data here, computed from a replay and tested as
data, and the pictures of ``rulegen backtest`` and ``rulegen diff`` are made of the same
parts. Times are Unix ms; values are already in the axis's unit (``Scale``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import TYPE_CHECKING, Literal

from rulegen import units
from rulegen.backtest.replay import Labels, firing_steps
from rulegen.generated import And, Comparison, Condition, HostFromInstance, Threshold

if TYPE_CHECKING:
    from rulegen.backtest.targets import Report, Target

MAX_SERIES = 10
"""Past this many label sets a picture shows those that fired and the top of the rest."""
MAX_FIRED = 20
"""The most label sets that fired a picture shows (the longest firing first)."""
MAX_POINTS = 2000
"""Points drawn per line at most: longer series keep each bucket's lowest and highest value
(a peak never disappears), so a week at 15 s stays a light SVG."""
LABEL_WIDTH = 48
"""Longer legend entries and row names are cut with ``…``."""
OP_WORDS = {
    ">": "above", ">=": "at or above", "<": "below", "<=": "at or below",
    "==": "equal to", "!=": "not equal to",
}  # fmt: skip

SpanKind = Literal["pending", "firing"]
Tone = Literal["now", "before", "after"]


@dataclass(frozen=True)
class Span:
    """A stretch of one label set's alert state: ``pending`` (the condition holds, ``for``
    has not elapsed) or ``firing``, from its first evaluation to the first one it no longer
    holds (the range's end while it still does). ``changed``: a diff's episode the other
    version does not have."""

    kind: SpanKind
    start: int
    end: int
    changed: bool = False


@dataclass(frozen=True)
class Scale:
    """The y axis's unit: values are multiplied by ``factor`` and read ``<value><suffix>``."""

    factor: float
    suffix: str

    def tick(self, value: float) -> str:
        """``5ms``, ``95%``, ``14.4×``: a tick label in the axis's unit."""
        text = f"{value:.6g}"
        return f"{'0' if text == '-0' else text}{self.suffix}"


@dataclass(frozen=True)
class Curve:
    """One line: its legend ``name``, colour and dash pattern (indexes the drawing maps to
    its palettes), and its points (NaN where the series has no sample: a gap)."""

    name: str
    colour: int
    points: tuple[tuple[int, float], ...]
    style: int = 0


@dataclass(frozen=True)
class Level:
    """A threshold line at ``value`` (scaled), labelled ``text`` as the spec writes it."""

    value: float
    text: str
    tone: Tone = "now"


@dataclass(frozen=True)
class Row:
    """One row of the timeline under the lines: a label set's spans, in its line's colour
    (``None``: the colour of firing, when the lines are not label sets)."""

    name: str
    colour: int | None
    spans: tuple[Span, ...]


@dataclass(frozen=True)
class Picture:
    """Everything one picture shows."""

    title: str
    subtitle: str
    span: tuple[int, int]
    scale: Scale
    curves: tuple[Curve, ...]
    levels: tuple[Level, ...]
    rows: tuple[Row, ...]
    note: str = ""
    budget: tuple[Curve, ...] = ()
    budget_title: str = ""
    creator: str = "rulegen backtest"
    diff: bool = False


# --- units -----------------------------------------------------------------------------------


def scale_for(unit: str | None, magnitude: float) -> Scale:
    """The axis unit for values of a threshold ``unit`` around ``magnitude`` (the threshold,
    else the largest value): durations in ms, s, m or h, percentages in %, bandwidths in
    bits per second (Gbps, as the spec writes them), burn rates as multiples (×)."""
    size = abs(magnitude) if math.isfinite(magnitude) else 0.0
    if unit == "duration":
        for limit, factor, suffix in ((1.0, 1000.0, "ms"), (120.0, 1.0, "s"),
                                      (7200.0, 1 / 60, "m")):  # fmt: skip
            if size < limit:
                return Scale(factor, suffix)
        return Scale(1 / 3600, "h")
    if unit == "percent":
        return Scale(100.0, "%")
    if unit == "bandwidth":
        for bits, suffix in ((1e12, "Tbps"), (1e9, "Gbps"), (1e6, "Mbps"), (1e3, "Kbps")):
            if size * 8 >= bits:
                return Scale(8 / bits, suffix)
        return Scale(8.0, "bps")
    if unit == "ratio":
        return Scale(1.0, "×")
    if unit == "rate":
        return Scale(1.0, "/s")
    return Scale(1.0, "")


def threshold_text(threshold: Threshold) -> str:
    """A threshold as the spec writes it: ``5ms``, ``95%``, ``25Gbps``, ``64``; a burn
    factor as a multiple (``14.4×``), a traffic floor per second (``0.5/s``)."""
    value = threshold.value
    if isinstance(value, Fraction):
        number = f"{float(value):.4g}"
    elif threshold.unit in ("duration", "percent", "bandwidth", "number"):
        return units.format_human(value, threshold.unit)
    else:
        number = units.literal(value)
    return number + ("×" if threshold.unit == "ratio" else "/s" if threshold.unit == "rate" else "")


def number(threshold: Threshold) -> float:
    """A threshold's value as a float."""
    return float(threshold.value)


def leading_comparison(condition: Condition | None) -> Comparison | None:
    """The comparison whose values an expression returns: the condition itself, or the left
    end of ``a and b`` (a diagnosis's first evidence), through the host label."""
    while isinstance(condition, HostFromInstance | And):
        condition = condition.condition if isinstance(condition, HostFromInstance) else (
            condition.left)  # fmt: skip
    return condition if isinstance(condition, Comparison) else None


# --- words -----------------------------------------------------------------------------------


def _duration(ms: int) -> str:
    return units.format_duration(Decimal(ms) / 1000)


def title_parts(target: Target) -> list[str]:
    """The title's words in fixed places (an empty place is left out), so two versions'
    titles compare place by place: ``DiskAwaitHigh:``, ``await``, ``above``, ``5ms``,
    ``for 5m``, ``keep_firing_for 10m``."""
    wait = f"for {_duration(target.for_ms)}" if target.for_ms else ""
    keep = ""
    if target.keep_firing_for_ms:
        keep = f"keep_firing_for {_duration(target.keep_firing_for_ms)}"
    head = f"{target.alert}:"
    if target.tiers:
        tiers = ", or ".join(
            f"{threshold_text(t.factor)} over {' and '.join(t.windows)}" for t in target.tiers
        )
        return [head, target.subject or "burn rate", "above", tiers, wait, keep]
    compared = target.comparison
    if compared is not None:
        what = target.subject or "value"
        return [head, what, OP_WORDS[compared.op], threshold_text(compared.threshold), wait, keep]
    return [head, target.subject or "condition", "", "", wait, keep]


def title_of(target: Target) -> str:
    """``DiskAwaitHigh: await above 5ms for 5m``."""
    return " ".join(part for part in title_parts(target) if part)


def shorten(text: str, width: int = LABEL_WIDTH) -> str:
    """``text``, cut to ``width`` characters with ``…``."""
    return text if len(text) <= width else text[: width - 1] + "…"


def label_text(labels: Iterable[tuple[str, str]]) -> str:
    """``device=sda, instance=a:9100``."""
    return ", ".join(f"{k}={v}" for k, v in labels)


def split_labels(keys: Sequence[Labels]) -> tuple[Labels, dict[Labels, str]]:
    """The labels every key has with one value (said once, in the subtitle), and each key's
    others (its legend entry; empty when it has none)."""
    if not keys:
        return (), {}
    maps = [dict(key) for key in keys]
    common = tuple(
        (name, value)
        for name, value in keys[0]
        if all(other.get(name) == value for other in maps[1:])
    )
    shared = {name for name, _ in common}
    names = {key: label_text((k, v) for k, v in key if k not in shared) for key in keys}
    return common, names


def series_key(labels: Labels, own: Collection[str]) -> Labels:
    """A series' labels without the metric name and the rule's own labels (``severity``,
    ``team``): what tells the series of one alert apart, and joins its quantity's series
    with the alert's label sets."""
    return tuple((k, v) for k, v in labels if k != "__name__" and k not in own)


# --- spans -----------------------------------------------------------------------------------


def state_spans(
    times: Sequence[int],
    present: Mapping[Labels, Collection[int]],
    for_ms: int,
    keep_firing_for_ms: int,
    span: tuple[int, int],
) -> dict[Labels, list[Span]]:
    """Each label set's pending and firing spans inside ``span``, from the evaluations at
    which the expression returned it (``present``): Prometheus's state machine
    (``replay.firing_steps``), so the firing spans are exactly the replay's episodes."""
    index = {t: i for i, t in enumerate(times)}
    at: list[set[Labels]] = [set() for _ in times]
    for key, stamps in present.items():
        for t in stamps:
            if t in index:
                at[index[t]].add(key)
    firing = firing_steps(times, at, for_ms, keep_firing_for_ms)
    opened: dict[Labels, tuple[SpanKind, int]] = {}
    found: dict[Labels, list[Span]] = {}
    for t, now, fires in zip(times, at, firing, strict=True):
        states: dict[Labels, SpanKind] = dict.fromkeys(fires, "firing")
        for key in now:
            states.setdefault(key, "pending")
        for key in [k for k, (kind, _) in opened.items() if states.get(k) != kind]:
            kind, start = opened.pop(key)
            found.setdefault(key, []).append(Span(kind, start, t))
        for key, kind in states.items():
            opened.setdefault(key, (kind, t))
    for key, (kind, start) in opened.items():
        found.setdefault(key, []).append(Span(kind, start, max(span[1], start)))
    return {key: clipped for key, spans in found.items() if (clipped := _clip(spans, span))}


def _clip(spans: Iterable[Span], span: tuple[int, int]) -> list[Span]:
    """Spans inside ``span``: those over before it dropped, starts moved up to it."""
    start, end = span
    return [
        Span(s.kind, max(s.start, start), min(s.end, end), s.changed)
        for s in spans
        if s.end > start and s.start <= end
    ]


def mark_changed(mine: Sequence[Span], other: Sequence[Span]) -> tuple[Span, ...]:
    """``mine`` with each firing span the other version has not (same start and end) marked
    changed: an episode a diff makes appear, vanish, start or end elsewhere."""
    theirs = {(s.start, s.end) for s in other if s.kind == "firing"}
    return tuple(
        Span(s.kind, s.start, s.end, s.kind == "firing" and (s.start, s.end) not in theirs)
        for s in mine
    )


# --- series ----------------------------------------------------------------------------------


@dataclass
class Replayed:
    """One replay as its picture reads it: the lines per layer (``""``, or an SLO's window)
    and label set, each label set's spans, and how long each fired."""

    lines: dict[str, dict[Labels, dict[int, float]]]
    spans: dict[Labels, list[Span]]
    firing_ms: dict[Labels, int]
    shown: list[int]
    """The evaluation times inside the range."""


def replayed(report: Report) -> Replayed:
    """The lines, spans and firing times of one report, series keyed by ``series_key``."""
    target = report.target
    own = {name for name, _ in target.labels}
    start, end = report.span
    present: dict[Labels, set[int]] = {}
    for labels, samples in report.values.items():
        present.setdefault(series_key(labels, own), set()).update(samples)
    spans = state_spans(report.times, present, target.for_ms, target.keep_firing_for_ms,
                        report.span)  # fmt: skip
    firing_ms = {
        key: sum(s.end - s.start for s in found if s.kind == "firing")
        for key, found in spans.items()
    }
    if report.burns is not None:
        lines = {window: _keyed(samples, own) for window, samples in report.burns.items()}
    else:
        lines = {"": _keyed(report.quantity if report.quantity is not None else report.values,
                            own)}  # fmt: skip
    shown = [t for t in report.times if start <= t <= end]
    return Replayed(lines, spans, firing_ms, shown)


def _keyed(samples: Mapping[Labels, Mapping[int, float]], own: Collection[str]) -> dict[
        Labels, dict[int, float]]:  # fmt: skip
    out: dict[Labels, dict[int, float]] = {}
    for labels, values in samples.items():
        out.setdefault(series_key(labels, own), {}).update(values)
    return out


def peak(samples: Mapping[int, float], shown: Sequence[int], op: str | None) -> float:
    """A series' worst value in the range: its highest (its lowest, negated, for an alert
    on ``<``), so ranking by it puts the series nearest to firing first."""
    sign = -1.0 if op in ("<", "<=") else 1.0
    values = [sign * v for t in shown if (v := samples.get(t)) is not None and not math.isnan(v)]
    return max(values, default=-math.inf)


def choose(
    keys: Collection[Labels], firing_ms: Mapping[Labels, int], peaks: Mapping[Labels, float],
    limit: int = MAX_SERIES,
) -> tuple[list[Labels], int]:  # fmt: skip
    """The label sets a picture shows, sorted, and how many it leaves out: all of them up to
    ``limit``; past it, those that fired (the longest first, at most ``MAX_FIRED``) and the
    highest peaks of the rest up to ``limit``."""
    if len(keys) <= limit:
        return sorted(keys, key=natural), 0
    fired = sorted((k for k in keys if firing_ms.get(k)),
                   key=lambda k: (-firing_ms[k], natural(k)))  # fmt: skip
    chosen = fired[:MAX_FIRED]
    rest = sorted((k for k in keys if not firing_ms.get(k)),
                  key=lambda k: (-peaks.get(k, -math.inf), natural(k)))  # fmt: skip
    chosen += rest[: max(0, limit - len(chosen))]
    return sorted(chosen, key=natural), len(keys) - len(chosen)


def natural(labels: Labels) -> tuple[tuple[str, tuple[str | int, ...]], ...]:
    """A label set's sort key with the numbers in its values compared as numbers
    (``gpu-node-3`` before ``gpu-node-15``)."""
    return tuple(
        (name, tuple(int(part) if index % 2 else part
                     for index, part in enumerate(re.split(r"([0-9]+)", value))))
        for name, value in labels
    )  # fmt: skip


def left_out_note(count: int) -> str:
    """``+ 54 series not shown`` and why, on two lines (the legend's column is narrow)."""
    if not count:
        return ""
    return f"+ {count} series not shown\n(none fired; lower peaks)"


def points(samples: Mapping[int, float], shown: Sequence[int], factor: float,
           limit: int = MAX_POINTS) -> tuple[tuple[int, float], ...]:  # fmt: skip
    """A series at the range's evaluation times, scaled (NaN where it has no sample: a gap),
    thinned to ``limit`` points: each bucket's lowest and highest value, in time order (and
    a gap where the bucket has one)."""
    full = [(t, samples[t] * factor if t in samples else math.nan) for t in shown]
    if len(full) <= limit:
        return tuple(full)
    buckets = max(1, limit // 3)
    size = -(-len(full) // buckets)
    out: list[tuple[int, float]] = []
    for first in range(0, len(full), size):
        chunk = full[first : first + size]
        kept = [i for i, (_, v) in enumerate(chunk) if not math.isnan(v)]
        picks = set()
        if kept:
            picks.add(min(kept, key=lambda i: chunk[i][1]))
            picks.add(max(kept, key=lambda i: chunk[i][1]))
        gap = next((i for i, (_, v) in enumerate(chunk) if math.isnan(v)), None)
        if gap is not None:
            picks.add(gap)
        out.extend(chunk[i] for i in sorted(picks))
    return tuple(out)


def largest(lines: Iterable[Mapping[Labels, Mapping[int, float]]]) -> float:
    """The largest finite absolute value of any series (0 when there is none)."""
    values = [abs(v) for line in lines for s in line.values() for v in s.values()
              if math.isfinite(v)]  # fmt: skip
    return max(values, default=0.0)


# --- a backtest's picture --------------------------------------------------------------------


def backtest_picture(report: Report) -> Picture:
    """One alert's replay: its quantity per label set (an SLO alert's burn rate per window,
    with the budget left below), the threshold (the tiers' factors), and per label set its
    pending and firing spans in the colour of its line."""
    target = report.target
    seen = replayed(report)
    compared = target.comparison or leading_comparison(target.condition)
    op = compared.op if compared is not None else None
    keys = {k for line in seen.lines.values() for k in line} | set(seen.spans)
    peaks = {k: max((peak(line.get(k, {}), seen.shown, op) for line in seen.lines.values()),
                    default=-math.inf) for k in keys}  # fmt: skip
    shown, left_out = choose(keys, seen.firing_ms, peaks)
    common, names = split_labels(shown)
    levels, unit, magnitude = _levels(target)
    scale = scale_for(unit, magnitude if magnitude else largest(seen.lines.values()))
    what = target.subject if target.comparison is not None else "value where it holds"
    curves = _curves(seen, shown, names, scale, what)
    rows = _rows(seen.spans, shown, names, single=len(seen.lines) > 1 and len(shown) <= 1,
                 fallback=target.alert)  # fmt: skip
    budget, budget_title = _budget(report, seen, shown, names)
    return Picture(
        title=title_of(target),
        subtitle=_subtitle(report, common, len(keys)),
        span=report.span,
        scale=scale,
        curves=curves,
        levels=tuple(Level(v * scale.factor, text, tone) for v, text, tone in levels),
        rows=rows,
        note=left_out_note(left_out),
        budget=budget,
        budget_title=budget_title,
    )


def _levels(target: Target) -> tuple[list[tuple[float, str, Tone]], str | None, float]:
    """The threshold lines (unscaled), the threshold's unit and the largest threshold."""
    if target.tiers:
        lines: list[tuple[float, str, Tone]] = [
            (number(t.factor), f"{threshold_text(t.factor)} ({', '.join(t.windows)})", "now")
            for t in target.tiers
        ]
        return lines, "ratio", max(v for v, _, _ in lines)
    compared = target.comparison or leading_comparison(target.condition)
    if compared is None:
        return [], None, 0.0
    value = number(compared.threshold)
    if not math.isfinite(value):
        return [], compared.threshold.unit, 0.0
    return [(value, threshold_text(compared.threshold), "now")], compared.threshold.unit, value


def layer_names(lines: Mapping[str, object], key_name: str, layer: str, subject: str) -> str:
    """A line's legend entry: its layer (an SLO window) and its label set's own labels, or
    the subject when neither says anything."""
    parts = [p for p in (layer if len(lines) > 1 or layer else "", key_name) if p]
    return shorten(", ".join(parts) or subject or "value")


def _curves(seen: Replayed, shown: Sequence[Labels], names: Mapping[Labels, str], scale: Scale,
            subject: str) -> tuple[Curve, ...]:  # fmt: skip
    """A line per shown label set and layer: one label set's layers (an SLO's windows) in
    colours of their own; several label sets in theirs, each layer dashed its own way."""
    by_layer = len(shown) <= 1
    out = []
    for layer_index, (layer, line) in enumerate(seen.lines.items()):
        for key_index, key in enumerate(shown):
            if key not in line:
                continue
            colour = layer_index if by_layer else key_index
            style = 0 if by_layer else layer_index
            name = layer_names(seen.lines, names.get(key, ""), layer, subject)
            out.append(Curve(name, colour, points(line[key], seen.shown, scale.factor), style))
    return tuple(out)


def _rows(
    spans: Mapping[Labels, Sequence[Span]], shown: Sequence[Labels], names: Mapping[Labels, str],
    *, single: bool, fallback: str,
) -> tuple[Row, ...]:  # fmt: skip
    """A timeline row per shown label set with spans, in its line's colour (in the colour of
    firing when the lines are an SLO's windows, not label sets)."""
    return tuple(
        Row(shorten(names.get(key) or fallback), None if single else index, tuple(spans[key]))
        for index, key in enumerate(shown)
        if spans.get(key)
    )


def _subtitle(report: Report, common: Labels, total: int) -> str:
    """The labels all shown series share, then the range and what fired."""
    from rulegen.backtest.report import rfc3339

    start, end = report.span
    fired = sum(1 for s in report.summaries.values() if s.episodes)
    times = "time" if report.fired == 1 else "times"
    facts = (f"{rfc3339(start)} .. {rfc3339(end)}, every {_duration(report.step_ms)}: fired "
             f"{report.fired} {times}, {fired} of {total} series firing")  # fmt: skip
    if report.warning:
        facts += " (no data: see the report's warning)"
    labels = label_text(common)
    return f"{labels}\n{facts}" if labels else facts


def _budget(report: Report, seen: Replayed, shown: Sequence[Labels],
            names: Mapping[Labels, str]) -> tuple[tuple[Curve, ...], str]:  # fmt: skip
    """An SLO alert's error budget left over the range, per label set: from 100% at its
    start, each later evaluation spending its shortest window's burn rate × step / the SLO's
    window (the budget a steady traffic spends in that step)."""
    target = report.target
    if not target.burns or not target.slo_window_ms or not seen.lines:
        return (), ""
    window = min(seen.lines, key=lambda w: units.parse_duration(w))
    line = seen.lines[window]
    slo = _duration(target.slo_window_ms)
    out = []
    for index, key in enumerate(shown):
        samples = line.get(key)
        if samples is None:
            continue
        left, spent = {}, 0.0
        for t in seen.shown:
            burn = samples.get(t)
            if t > report.span[0] and burn is not None and math.isfinite(burn):
                spent += burn * report.step_ms / target.slo_window_ms
            left[t] = (1.0 - spent) * 100
        name = shorten(names.get(key) or f"budget left ({slo} SLO)")
        colour = index if len(shown) > 1 else 0
        out.append(Curve(name, colour, points(left, seen.shown, 1.0)))
    title = (f"error budget left of the {slo} window, counted from 100% at the range's start "
             f"(the {window} burn rate spent at every evaluation)")  # fmt: skip
    return tuple(out), title
