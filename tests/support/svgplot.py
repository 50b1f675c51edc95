"""Reading a picture rulegen drew back from its SVG, and replays built by hand to draw.

Why: the tests of ``rulegen backtest --plot`` and ``rulegen diff --plot`` check what the
picture shows (its text, and each span's edges turned back into times through the timeline's
own box), not what the code meant to draw.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from rulegen.backtest import plot
from rulegen.backtest.picture import Picture
from rulegen.backtest.replay import Labels, flap_window, replay, summarize
from rulegen.backtest.targets import Report, Target
from rulegen.generated import Comparison, Recorded, Threshold, ThresholdUnit

SVG = "{http://www.w3.org/2000/svg}"
MINUTE = 60_000


def comparison(op: str, value: str, unit: ThresholdUnit, record: str = "q") -> Comparison:
    return Comparison(Recorded(record), op, Threshold(Decimal(value), unit))  # type: ignore[arg-type]


def replayed_report(
    target: Target, quantity: Mapping[Labels, Mapping[int, float]], times: Sequence[int],
    span: tuple[int, int], passes: Callable[[float], bool],
) -> Report:  # fmt: skip
    """A report as ``session`` makes it: the alert's values are the quantity's samples that
    pass (with the rule's labels), episodes by the state machine."""
    values: dict[Labels, dict[int, float]] = {}
    for labels, samples in quantity.items():
        alert = tuple(sorted([*((k, v) for k, v in labels if k != "__name__"), *target.labels]))
        kept = {t: v for t, v in samples.items() if passes(v)}
        if kept:
            values[alert] = kept
    present = [{k for k, s in values.items() if t in s} for t in times]
    found = replay(times, present, target.for_ms, target.keep_firing_for_ms)
    flaps = flap_window(target.for_ms, target.step_ms)
    summaries = {k: s for k, runs in found.items()
                 if (s := summarize(runs, span[0], span[1], flaps)).episodes}  # fmt: skip
    return Report(target, span, target.step_ms, list(times), values, summaries,
                  quantity={k: dict(v) for k, v in quantity.items()},
                  comparison=target.comparison)  # fmt: skip


@dataclass
class Svg:
    """A picture's SVG: its text, the groups the drawing named (``plot``), their geometry."""

    root: ET.Element
    span: tuple[int, int]

    def texts(self) -> list[str]:
        return ["".join(e.itertext()) for e in self.root.iter(f"{SVG}text")]

    def group(self, gid: str) -> ET.Element | None:
        return next((g for g in self.root.iter(f"{SVG}g") if g.get("id") == gid), None)

    def ids(self, pattern: str) -> list[str]:
        return [i for g in self.root.iter(f"{SVG}g") if re.fullmatch(pattern, i := g.get("id", ""))]

    def box(self, gid: str) -> tuple[float, float]:
        """The left and right x of a group's first path (an axes' background, a span)."""
        group = self.group(gid)
        assert group is not None, gid
        path = next(group.iter(f"{SVG}path"))
        pairs = re.findall(r"(-?[0-9.]+) (-?[0-9.]+)", path.get("d", ""))
        xs = [float(x) for x, _ in pairs]
        return min(xs), max(xs)

    def style(self, gid: str) -> str:
        group = self.group(gid)
        assert group is not None, gid
        return next(group.iter(f"{SVG}path")).get("style", "")

    def time_span(self, gid: str) -> tuple[float, float]:
        """A span's start and end in minutes after the range's start, read off the picture
        through the timeline's box (which spans exactly the range)."""
        left, right = self.box("timeline-axes")
        x0, x1 = self.box(gid)
        minutes = (self.span[1] - self.span[0]) / MINUTE
        return ((x0 - left) / (right - left) * minutes, (x1 - left) / (right - left) * minutes)

    def rows(self) -> list[str]:
        """The timeline's row names, top first."""
        found = {int(i.split(":")[1]): i for i in self.ids(r"row:\d+")}
        out = []
        for index in sorted(found):
            group = self.group(found[index])
            assert group is not None
            out.append("".join(t for e in group.iter(f"{SVG}text") for t in e.itertext()))
        return out


def svg(picture: Picture, tmp_path: Path, name: str = "p.svg") -> Svg:
    """``picture`` written as an SVG in ``tmp_path`` and read back."""
    path = tmp_path / name
    plot.write(path, picture, "svg")
    return Svg(ET.parse(path).getroot(), picture.span)


def spans_of(read: Svg, row: int, kind: str) -> list[tuple[float, float]]:
    """A timeline row's spans of one kind, in order, in minutes after the range's start."""
    ids = sorted(read.ids(rf"{kind}:{row}:\d+"), key=lambda i: int(i.rsplit(":", 1)[1]))
    return [read.time_span(i) for i in ids]


def close(found: Sequence[tuple[float, float]], expected: Sequence[tuple[float, float]]) -> bool:
    """Within a tenth of a minute (the picture's coordinates are rounded to 1e-6 px)."""
    return len(found) == len(expected) and all(
        abs(a - c) < 0.1 and abs(b - d) < 0.1
        for (a, b), (c, d) in zip(found, expected, strict=True)
    )


def read_svg(path: Path, span: tuple[int, int]) -> Svg:
    """A written SVG of a picture of ``span`` (Unix ms)."""
    return Svg(ET.parse(path).getroot(), span)
