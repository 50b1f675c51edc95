"""``rulegen diff --plot DIR``: a picture per replayed alert, before and after on one set of axes.

Why: "4 episodes, 37m → 1 episode, 13m" says that an edit matters, not where. The picture
shows the quantity once (twice, the base's dashed, when the edit changed what the alert
reads), both thresholds, and per label set a row of spans for each version, the episodes
that only one version has outlined. It is made of the backtest's parts (``picture``) and
drawn by the backtest's ``plot``; this module only decides what goes where.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal
from pathlib import Path

from rulegen import units
from rulegen.backtest import plot
from rulegen.backtest.picture import (
    Curve,
    Level,
    Picture,
    Replayed,
    Row,
    Span,
    Tone,
    choose,
    largest,
    layer_names,
    leading_comparison,
    left_out_note,
    mark_changed,
    peak,
    points,
    replayed,
    scale_for,
    shorten,
    split_labels,
    threshold_text,
    title_parts,
)
from rulegen.backtest.replay import Labels
from rulegen.backtest.report import refuse_foreign, rfc3339
from rulegen.backtest.targets import Report, Target
from rulegen.diff.facts import AlertKey
from rulegen.diff.model import AlertDiff, Diff

Pair = tuple[Report | None, Report | None]
"""An alert's replay in the base and in the current version (``None``: not in it)."""
VERSIONS: tuple[Tone, Tone] = ("before", "after")


def plot_stem(service: str, key: AlertKey) -> str:
    """``queue.RequestQueueBacklog``, ``checkout.ErrorBudgetBurn.availability.page``: one
    file name per service and alert, safe on any file system."""
    parts = [service, key.alert]
    if key.kind == "slo":
        parts += [key.slo, key.alerting]
    elif key.alerting:
        parts.append(key.alerting)
    if key.kind == "diagnosis":
        parts.append("diagnosis")
    return ".".join(re.sub(r"[^A-Za-z0-9_-]+", "-", part) for part in parts)


def write_diff_plots(
    diff: Diff, replays: Mapping[tuple[str, AlertKey], Pair], folder: Path, fmt: str
) -> list[Path]:
    """A picture per replayed alert of ``diff`` in ``folder`` (``plot_stem``.``fmt``), none
    written when one of them would overwrite a file rulegen did not write."""
    chosen: list[tuple[Path, AlertDiff, Pair]] = []
    for service in diff.services:
        for alert in service.alerts:
            pair = replays.get((service.service, alert.key))
            if alert.replayed and pair is not None and (pair[0] or pair[1]):
                path = folder / f"{plot_stem(service.service, alert.key)}.{fmt}"
                chosen.append((path, alert, pair))
    refuse_foreign(folder, [path for path, _, _ in chosen])
    for path, alert, pair in chosen:
        plot.write(path, diff_picture(alert, pair, diff.base), fmt)
    return [path for path, _, _ in chosen]


def diff_picture(alert: AlertDiff, pair: Pair, base: str) -> Picture:
    """Both replays of one alert on the same axes (see the module's docstring)."""
    old, new = pair
    main = new or old
    assert main is not None
    views = {tone: replayed(r) for tone, r in zip(VERSIONS, pair, strict=True) if r is not None}
    compared = main.target.comparison or leading_comparison(main.target.condition)
    op = compared.op if compared is not None else None
    keys: set[Labels] = set()
    firing: dict[Labels, int] = {}
    peaks: dict[Labels, float] = {}
    for view in views.values():
        for key in {k for line in view.lines.values() for k in line} | set(view.spans):
            keys.add(key)
            firing[key] = max(firing.get(key, 0), view.firing_ms.get(key, 0))
            found = [peak(line.get(key, {}), view.shown, op) for line in view.lines.values()]
            peaks[key] = max([peaks.get(key, -math.inf), *found])
    shown, left_out = choose(keys, firing, peaks)
    common, names = split_labels(shown)
    levels, unit, magnitude = _levels(old, new)
    lines = [line for view in views.values() for line in view.lines.values()]
    scale = scale_for(unit, magnitude or largest(lines))
    same = old is not None and new is not None and old.target.plotted() == new.target.plotted()
    what = main.target.subject if main.target.comparison is not None else "value where it holds"
    curves = _curves(views, shown, names, scale.factor, what, same)
    fallback = main.target.alert
    rows = _rows(views, shown, names, single=len(shown) <= 1 and bool(main.target.burns),
                 fallback=fallback)  # fmt: skip
    return Picture(
        title=_title(alert, old, new),
        subtitle=_subtitle(pair, common, base),
        span=main.span,
        scale=scale,
        curves=curves,
        levels=tuple(Level(v * scale.factor, text, tone) for v, text, tone in levels),
        rows=rows,
        note=left_out_note(left_out),
        creator="rulegen diff",
        diff=True,
    )


def _thresholds(target: Target) -> list[tuple[float, str]]:
    """A version's threshold lines (unscaled): its tiers' factors, or its one threshold."""
    if target.tiers:
        return [(float(t.factor.value), f"{threshold_text(t.factor)} ({', '.join(t.windows)})")
                for t in target.tiers]  # fmt: skip
    compared = target.comparison or leading_comparison(target.condition)
    if compared is None or not math.isfinite(float(compared.threshold.value)):
        return []
    return [(float(compared.threshold.value), threshold_text(compared.threshold))]


def _levels(old: Report | None, new: Report | None) -> tuple[
        list[tuple[float, str, Tone]], str | None, float]:  # fmt: skip
    """Both versions' thresholds, ``before: 10`` and ``after: 30``; one line when the edit
    left them as they were."""
    before = _thresholds(old.target) if old is not None else []
    after = _thresholds(new.target) if new is not None else []
    lines: list[tuple[float, str, Tone]]
    if before == after or old is None or new is None:
        lines = [(v, text, "now") for v, text in before or after]
    else:
        lines = [(v, f"before: {text}", "before") for v, text in before]
        lines += [(v, f"after: {text}", "after") for v, text in after]
    main = new or old
    assert main is not None
    compared = main.target.comparison or leading_comparison(main.target.condition)
    unit = "ratio" if main.target.tiers else compared.threshold.unit if compared else None
    return lines, unit, max((v for v, _, _ in lines), default=0.0)


def _curves(views: Mapping[Tone, Replayed], shown: Sequence[Labels], names: Mapping[Labels, str],
            factor: float, subject: str, same: bool) -> tuple[Curve, ...]:  # fmt: skip
    """The current version's lines; the base's too, dashed, when it read something else."""
    out = []
    by_layer = len(shown) <= 1
    for tone in ("after", "before"):
        view = views.get(tone)
        if view is None or (tone == "before" and same and "after" in views):
            continue
        dashed = tone == "before" and "after" in views
        for layer_index, (layer, line) in enumerate(view.lines.items()):
            for key_index, key in enumerate(shown):
                if key not in line:
                    continue
                name = layer_names(view.lines, names.get(key, ""), layer, subject)
                if not same and len(views) > 1:
                    name = shorten(f"{name} ({tone})")
                style = (0 if by_layer else layer_index) + (1 if dashed else 0)
                colour = layer_index if by_layer else key_index
                out.append(Curve(name, colour, points(line[key], view.shown, factor), style))
    return tuple(out)


def _rows(views: Mapping[Tone, Replayed], shown: Sequence[Labels], names: Mapping[Labels, str],
          *, single: bool, fallback: str) -> tuple[Row, ...]:  # fmt: skip
    """Per label set that was pending or firing in either version, a row per version; the
    firing spans the other version has not are marked changed."""
    out = []
    for index, key in enumerate(shown):
        found = {tone: list(v.spans.get(key, ())) for tone, v in views.items()}
        if not any(found.values()):
            continue
        for tone in VERSIONS:
            mine: list[Span] = found.get(tone, [])
            other = found.get("after" if tone == "before" else "before", [])
            name = f"{names.get(key) or fallback} ({tone})"
            out.append(Row(shorten(name), None if single else index, mark_changed(mine, other)))
    return tuple(out)


def _title(alert: AlertDiff, old: Report | None, new: Report | None) -> str:
    """``RequestQueueBacklog: requests waiting above 10 → 30 for 2m``: each place of the
    title that the edit changed reads ``before → after``."""
    head = f"{alert.key.title()}:"
    if old is None or new is None:
        present = new or old
        assert present is not None
        parts = title_parts(present.target)
        parts[0] = f"{alert.key.title()} ({'added' if old is None else 'removed'}):"
        return " ".join(p for p in parts if p)
    before, after = title_parts(old.target), title_parts(new.target)
    defaults = {4: "for 0s", 5: "keep_firing_for 0s"}
    parts = [head]
    for index, (a, b) in enumerate(zip(before, after, strict=True)):
        if index == 0:
            continue
        if a == b:
            parts.append(a)
            continue
        a, b = a or defaults.get(index, "(none)"), b or defaults.get(index, "(none)")
        parts.append(_changed(a, b))
    return " ".join(p for p in parts if p)


def _changed(before: str, after: str) -> str:
    """``10 → 30``; ``for 2m → 5m`` (a shared first word said once)."""
    first_a, _, rest_a = before.partition(" ")
    first_b, _, rest_b = after.partition(" ")
    if rest_a and rest_b and first_a == first_b:
        return f"{first_a} {rest_a} → {rest_b}"
    return f"{before} → {after}"


def _history(report: Report | None) -> str:
    if report is None:
        return "(none)"
    episodes = sum(len(s.episodes) for s in report.summaries.values())
    firing = sum(s.firing_ms for s in report.summaries.values())
    noun = "episode" if episodes == 1 else "episodes"
    return f"{episodes} {noun}, {units.format_duration(Decimal(firing) / 1000)}"


def _subtitle(pair: Pair, common: Labels, base: str) -> str:
    old, new = pair
    main = new or old
    assert main is not None
    start, end = main.span
    facts = (f"{rfc3339(start)} .. {rfc3339(end)}: before ({base}) {_history(old)} → after "
             f"{_history(new)}")  # fmt: skip
    labels = ", ".join(f"{k}={v}" for k, v in common)
    return f"{labels}\n{facts}" if labels else facts
