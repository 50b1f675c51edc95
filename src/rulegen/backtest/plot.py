"""One PNG per alert: the quantity, the threshold and the firing periods (optional matplotlib).

Why: a table says an alert fired 14 times; a picture says whether the threshold sits in the
noise. matplotlib is an optional extra (``pip install 'rulegen[plot]'``), imported only here
and only when ``--plot`` is asked for, so the rest of rulegen never pays for it. The figure
is drawn on an Agg canvas directly (no pyplot global state) at a fixed 1200x500 px.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

from rulegen.backtest.replay import Labels
from rulegen.errors import ToolNotFoundError

WIDTH, HEIGHT, DPI = 1200, 500, 100
MAX_LEGEND = 8


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


_DAY_MS = 86_400_000


def write_png(
    path: Path,
    title: str,
    quantity: Mapping[Labels, Mapping[int, float]],
    times: Sequence[int],
    threshold: float | None,
    firing: Sequence[tuple[int, int]],
) -> None:
    """Draw ``quantity`` over ``times`` (a line per label set, broken where a series has no
    sample), the threshold as a dashed line, and each ``(start, end)`` firing period (Unix
    ms) shaded; write a 1200x500 PNG to ``path``."""
    require_matplotlib()
    from matplotlib import dates
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(WIDTH / DPI, HEIGHT / DPI), dpi=DPI)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    # matplotlib's date numbers: days since its epoch (1970-01-01 unless configured)
    epoch = float(dates.date2num(datetime(1970, 1, 1, tzinfo=UTC)))  # type: ignore[no-untyped-call]

    def day(ms: int) -> float:
        return epoch + ms / _DAY_MS

    stamps = [day(t) for t in times]
    for index, (labels, samples) in enumerate(sorted(quantity.items())):
        values = [samples.get(t, math.nan) for t in times]
        name = ", ".join(f"{k}={v}" for k, v in labels if k != "__name__") or "{}"
        axes.plot(stamps, values, linewidth=1, label=name if index < MAX_LEGEND else None)
    for start, end in firing:
        axes.axvspan(day(start), day(end), color="tab:red", alpha=0.15, linewidth=0)
    if threshold is not None and math.isfinite(threshold):
        axes.axhline(threshold, color="tab:red", linestyle="--", linewidth=1, label="threshold")
    if len(stamps) > 1:
        axes.set_xlim(stamps[0], stamps[-1])
    axes.set_title(title, fontsize=10, loc="left")
    axes.set_xlabel("time (UTC)")
    axes.grid(True, alpha=0.3)
    if quantity or threshold is not None:
        axes.legend(loc="upper right", fontsize=7)
    locator = dates.AutoDateLocator()  # type: ignore[no-untyped-call]
    axes.xaxis.set_major_locator(locator)
    axes.xaxis.set_major_formatter(dates.ConciseDateFormatter(locator))  # type: ignore[no-untyped-call]
    temporary = path.with_name(f".{path.name}.rulegen-tmp")
    figure.savefig(temporary, dpi=DPI, format="png", metadata={"Software": SOFTWARE})
    temporary.replace(path)


# The PNG ``Software`` text of every plot: how a later run knows the file is its own.
SOFTWARE = "rulegen backtest"


def written_by_rulegen(path: Path) -> bool:
    """Whether ``path`` is a regular file holding a plot rulegen wrote (its PNG text says so)."""
    if path.is_symlink() or not path.is_file():
        return False
    with path.open("rb") as stream:
        head = stream.read(4096)
    return head.startswith(b"\x89PNG") and b"tEXtSoftware\x00" + SOFTWARE.encode() in head
