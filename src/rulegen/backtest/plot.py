"""A ``Picture`` drawn with matplotlib (an optional extra) as PNG or SVG.

Why: a table says an alert fired 14 times; a picture says whether the threshold sits in the
noise, which series fired and for how long each was pending. What the picture shows is
decided in ``picture``; this module only lays it out. matplotlib is imported only here and
only when ``--plot`` is asked for (``pip install 'rulegen[plot]'``), so the rest of rulegen
never pays for it. The figure is drawn on its own canvas (no pyplot global state), 1200 px
wide, as tall as its timeline needs. An SVG keeps its text as text (``svg.fonttype: none``:
searchable, readable by a screen reader) and is the same bytes for the same picture (no date,
a fixed hash salt); every span is a group whose id says what it is (``firing:2:0``: row 2's
first firing span), so a test can read the picture back.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rulegen.backtest.picture import Curve, Picture
from rulegen.errors import ToolNotFoundError

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

WIDTH, DPI = 1200, 100
# Heights in px: the title and subtitle, the lines, a timeline row, the budget panel.
HEADER, MAIN, ROW, BUDGET, BOTTOM, GAP = 86, 300, 22, 130, 46, 34
MIN_HEIGHT = 500
LEFT, RIGHT = 74, 300  # px: the y tick labels; the legend and row names on the right
STYLES = ("-", "--", ":", "-.")
FIRING = "tab:red"
TONES = {"now": ("black", "--"), "before": ("tab:gray", ":"), "after": ("black", "--")}
# What marks the files rulegen wrote: a PNG's ``Software`` text, an SVG's ``dc:creator``
# (``Picture.creator``: ``rulegen backtest``, ``rulegen diff``) start with it.
MARK = "rulegen "
_DAY_MS = 86_400_000


def require_matplotlib() -> None:
    """Raise ``ToolNotFoundError`` (exit 3) with the install line when matplotlib is missing."""
    try:
        found = importlib.util.find_spec("matplotlib") is not None
    except (ImportError, ValueError):
        found = False
    if found:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            found = False
    if not found:
        raise ToolNotFoundError(
            "--plot needs matplotlib: pip install 'rulegen[plot]' (or pip install matplotlib)"
        )


def write(path: Path, picture: Picture, fmt: str = "png") -> None:
    """Draw ``picture`` and write it to ``path`` as ``fmt`` (``png`` or ``svg``), through a
    temporary file so a reader never sees half a picture."""
    require_matplotlib()
    import matplotlib

    figure = draw(picture)
    temporary = path.with_name(f".{path.name}.rulegen-tmp")
    if fmt == "svg":
        with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "rulegen"}):
            figure.savefig(temporary, dpi=DPI, format="svg",
                           metadata={"Date": None, "Creator": picture.creator})  # fmt: skip
    else:
        figure.savefig(temporary, dpi=DPI, format="png", metadata={"Software": picture.creator})
    temporary.replace(path)


def written_by_rulegen(path: Path) -> bool:
    """Whether ``path`` is a regular file holding a picture rulegen wrote (its PNG text or
    its SVG metadata says so)."""
    if path.is_symlink() or not path.is_file():
        return False
    with path.open("rb") as stream:
        head = stream.read(4096)
    if head.startswith(b"\x89PNG"):
        return b"tEXtSoftware\x00" + MARK.encode() in head
    return b"<svg" in head and b"<dc:title>" + MARK.encode() in head


# --- layout ----------------------------------------------------------------------------------


def _main_height(picture: Picture) -> int:
    """The lines' panel: ``MAIN`` px, taller when there is no timeline below it (the
    picture is never less than ``MIN_HEIGHT`` px tall)."""
    rows = len(picture.rows)
    timeline = (rows * ROW + 12 + GAP) if rows else 0
    budget = (BUDGET + GAP) if picture.budget else 0
    return max(MAIN, MIN_HEIGHT - HEADER - timeline - budget - BOTTOM)


def _height(picture: Picture) -> int:
    rows = len(picture.rows)
    timeline = (rows * ROW + 12 + GAP) if rows else 0
    budget = (BUDGET + GAP) if picture.budget else 0
    return HEADER + _main_height(picture) + timeline + budget + BOTTOM


def draw(picture: Picture) -> Figure:
    """The figure: title and subtitle, the lines with their thresholds and legend, the
    timeline of spans, and an SLO's budget panel."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    height = _height(picture)
    figure = Figure(figsize=(WIDTH / DPI, height / DPI), dpi=DPI)
    FigureCanvasAgg(figure)
    palette = _palette(picture)
    left, width = LEFT / WIDTH, (WIDTH - LEFT - RIGHT) / WIDTH

    def box(top: int, size: int) -> tuple[float, float, float, float]:
        return (left, 1 - (top + size) / height, width, size / height)

    figure.text(LEFT / WIDTH, 1 - 14 / height, picture.title, fontsize=13, weight="bold",
                va="top", ha="left", gid="title")  # fmt: skip
    figure.text(LEFT / WIDTH, 1 - 40 / height, picture.subtitle, fontsize=8.5, va="top",
                ha="left", color="#444444", linespacing=1.5, gid="subtitle")  # fmt: skip
    main_px = _main_height(picture)
    main = figure.add_axes(box(HEADER, main_px))
    main.patch.set_gid("lines-axes")
    stack = [main]
    _lines(main, picture, palette)
    top = HEADER + main_px + GAP
    if picture.rows:
        timeline = figure.add_axes(box(top, len(picture.rows) * ROW + 12), sharex=main)
        timeline.patch.set_gid("timeline-axes")
        _timeline(timeline, picture, palette)
        stack.append(timeline)
        top += len(picture.rows) * ROW + 12 + GAP
    if picture.budget:
        budget = figure.add_axes(box(top, BUDGET), sharex=main)
        budget.patch.set_gid("budget-axes")
        _budget(budget, picture, palette)
        stack.append(budget)
    _time_axis(stack, picture)
    return figure


def _palette(picture: Picture) -> list[Any]:
    """tab10, or tab20 when more colours are needed."""
    from matplotlib import colormaps

    used = [c.colour for c in (*picture.curves, *picture.budget)]
    used += [r.colour for r in picture.rows if r.colour is not None]
    needed = 1 + max(used, default=0)
    colours: list[Any] = list(colormaps["tab10" if needed <= 10 else "tab20"].colors)  # type: ignore[attr-defined]
    return colours


_EPOCH: list[float] = []


def _day(ms: int) -> float:
    """Unix ms → matplotlib's date number (days since its epoch: 1970-01-01 unless a
    matplotlibrc says otherwise)."""
    if not _EPOCH:
        from matplotlib import dates

        _EPOCH.append(float(dates.date2num(datetime(1970, 1, 1, tzinfo=UTC))))  # type: ignore[no-untyped-call]
    return _EPOCH[0] + ms / _DAY_MS


def _curve(axes: Axes, curve: Curve, colour: Any, gid: str) -> None:
    xs = [_day(t) for t, _ in curve.points]
    ys = [v for _, v in curve.points]
    axes.plot(xs, ys, color=colour, linewidth=1.3, linestyle=STYLES[curve.style % len(STYLES)],
              label=curve.name, gid=gid)  # fmt: skip


def _lines(axes: Axes, picture: Picture, palette: Sequence[Any]) -> None:
    """The lines, the thresholds with their labels, the legend and the note of series left
    out, in the column right of the axes."""
    for index, curve in enumerate(picture.curves):
        _curve(axes, curve, palette[curve.colour % len(palette)], f"line:{index}")
    values = [v for c in picture.curves for _, v in c.points if math.isfinite(v)]
    values += [level.value for level in picture.levels]
    low, high = min(values, default=0.0), max(values, default=1.0)
    low = min(low, 0.0)
    high = high if high > low else low + 1.0
    axes.set_ylim(low, high + (high - low) * 0.12)
    for index, level in enumerate(picture.levels):
        colour, style = TONES[level.tone]
        axes.axhline(level.value, color=colour, linestyle=style, linewidth=1.2,
                     gid=f"threshold:{index}")  # fmt: skip
        axes.annotate(level.text, xy=(1.0, level.value), xycoords=("axes fraction", "data"),
                      xytext=(-6, 3), textcoords="offset points", ha="right", va="bottom",
                      fontsize=9, color=colour, weight="bold", gid=f"threshold-text:{index}",
                      bbox={"boxstyle": "square,pad=0.15", "facecolor": "white",
                            "edgecolor": "none", "alpha": 0.8})  # fmt: skip
    axes.yaxis.set_major_formatter(_formatter(picture))
    axes.grid(True, alpha=0.3)
    if not picture.curves:
        axes.text(0.5, 0.5, "no data in the range", transform=axes.transAxes, ha="center",
                  va="center", color="#666666")  # fmt: skip
    if picture.curves:
        legend = axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8,
                             frameon=False, borderaxespad=0.0)  # fmt: skip
        legend.set_gid("legend")
    if picture.note:
        axes.text(1.01, 0.0, picture.note, transform=axes.transAxes, ha="left", va="bottom",
                  fontsize=8, color="#444444", gid="note")  # fmt: skip


def _formatter(picture: Picture) -> Any:
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda value, _position: picture.scale.tick(value))


def _timeline(axes: Axes, picture: Picture, palette: Sequence[Any]) -> None:
    """A row per label set: pending spans pale and thin, firing spans solid, a diff's
    changed episodes outlined; row names on the right, in their line's colour."""
    from matplotlib.patches import Patch

    count = len(picture.rows)
    for index, row in enumerate(picture.rows):
        y = count - 1 - index
        colour = FIRING if row.colour is None else palette[row.colour % len(palette)]
        numbers = {"pending": 0, "firing": 0}
        for span in row.spans:
            _bar(axes, y, span.start, span.end, colour, span.kind, span.changed,
                 f"{span.kind}:{index}:{numbers[span.kind]}")  # fmt: skip
            numbers[span.kind] += 1
    axes.set_ylim(-0.6, count - 0.4)
    axes.set_yticks(range(count))
    axes.set_yticklabels([row.name for row in reversed(picture.rows)], fontsize=8)
    axes.yaxis.tick_right()
    for label, row, index in zip(axes.get_yticklabels(), reversed(picture.rows),
                                 range(count - 1, -1, -1), strict=True):  # fmt: skip
        label.set_color(FIRING if row.colour is None else palette[row.colour % len(palette)])
        label.set_gid(f"row:{index}")
    axes.tick_params(axis="y", length=0)
    axes.grid(True, axis="x", alpha=0.3)
    keys = [Patch(facecolor="#555555", label="firing")]
    if any(span.kind == "pending" for row in picture.rows for span in row.spans):
        keys.insert(0, Patch(facecolor="#888888", alpha=0.4, label="pending (for not elapsed)"))
    if picture.diff:
        keys.append(Patch(facecolor="white", edgecolor="black", linewidth=1.6,
                          label="episode only in this version"))  # fmt: skip
    legend = axes.legend(handles=keys, loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=3,
                         fontsize=8, frameon=False, borderaxespad=0.2)  # fmt: skip
    legend.set_gid("timeline-legend")


def _bar(axes: Axes, y: int, start: int, end: int, colour: Any, kind: str, changed: bool,
         gid: str) -> None:  # fmt: skip
    pending = kind == "pending"
    bars = axes.barh(
        y, _day(end) - _day(start), left=_day(start), height=0.36 if pending else 0.62,
        color=colour, alpha=0.4 if pending else 0.95,
        edgecolor="black" if changed else colour, linewidth=1.8 if changed else 0.0,
    )  # fmt: skip
    for patch in bars.patches:
        patch.set_gid(gid)


def _budget(axes: Axes, picture: Picture, palette: Sequence[Any]) -> None:
    for index, curve in enumerate(picture.budget):
        _curve(axes, curve, palette[curve.colour % len(palette)], f"budget:{index}")
    values = [v for c in picture.budget for _, v in c.points if math.isfinite(v)]
    axes.set_ylim(min(0.0, *values) if values else 0.0, 105.0)
    axes.axhline(0.0, color="black", linewidth=0.8)
    from matplotlib.ticker import FuncFormatter

    axes.yaxis.set_major_formatter(FuncFormatter(lambda value, _position: f"{value:.6g}%"))
    axes.set_title(picture.budget_title, fontsize=8.5, loc="left", color="#444444")
    axes.grid(True, alpha=0.3)


def _time_axis(stack: Sequence[Axes], picture: Picture) -> None:
    """Dates on the lowest panel only, all panels over exactly the range."""
    from matplotlib import dates

    start, end = picture.span
    stack[0].set_xlim(_day(start), _day(end) if end > start else _day(start) + 1 / 1440)
    locator = dates.AutoDateLocator()  # type: ignore[no-untyped-call]
    formatter = dates.ConciseDateFormatter(locator, tz=UTC)  # type: ignore[no-untyped-call]
    for axes in stack:
        axes.xaxis.set_major_locator(locator)
        axes.xaxis.set_major_formatter(formatter)
        axes.tick_params(axis="x", labelbottom=axes is stack[-1])
    stack[-1].set_xlabel("time (UTC)", fontsize=9)
