"""Range queries against a Prometheus HTTP API, split into chunks the server accepts.

Why: Prometheus refuses a range query of more than 11,000 points per series, so a month at
15 s (172,800 points) is many queries. The HTTP exchange itself (deadline, size cap, shape
checks, one-line errors) is ``rulegen.promapi``'s, shared with ``lint --prometheus``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from decimal import Decimal

from rulegen import promql
from rulegen.backtest.replay import Labels
from rulegen.promapi import PrometheusAPI

MAX_POINTS = 11_000  # the query API's limit of points per series
Samples = dict[Labels, dict[int, float]]
"""Query results: label set (``__name__`` included when kept) → Unix ms → value."""
Progress = Callable[[int], None]
"""Called once per finished chunk with the number of chunks just done (1)."""


def grid(start_ms: int, end_ms: int, step_ms: int) -> list[int]:
    """The evaluation times: the multiples of the step from ``start_ms`` to ``end_ms``.

    Why multiples: promtool steps from 0 and backfilled recordings are stamped on them, so a
    replay lines up with both. A live server runs each group at a fixed offset inside the
    interval instead, so a live alert may change state up to one interval apart.
    """
    first = -(-start_ms // step_ms) * step_ms
    return list(range(first, end_ms + 1, step_ms))


def grid_size(start_ms: int, end_ms: int, step_ms: int) -> int:
    """``len(grid(start_ms, end_ms, step_ms))``, without building the list."""
    first = -(-start_ms // step_ms) * step_ms
    return 0 if first > end_ms else (end_ms - first) // step_ms + 1


def chunks(times: Sequence[int], max_points: int = MAX_POINTS) -> list[tuple[int, int]]:
    """``(start, end)`` of consecutive range queries of at most ``max_points`` steps each."""
    return [
        (times[i], times[min(i + max_points, len(times)) - 1])
        for i in range(0, len(times), max_points)
    ]


def selectors(expr: str) -> list[tuple[str, str]]:
    """``(metric name, selector text)`` of every vector selector an expression reads."""
    return promql.selectors(expr)


def _seconds(ms: int) -> str:
    return str(Decimal(ms) / 1000)


TIMEOUT = 120.0
"""The default deadline of each request (``--timeout``), in seconds."""
ASK_LESS = "a shorter range (--from/--to), a larger --step or fewer alerts (--alert NAME)"


class Client:
    """One Prometheus (or compatible) query API; every error is a one-line ``UsageError``."""

    def __init__(self, url: str, timeout: float = TIMEOUT, max_points: int = MAX_POINTS) -> None:
        self.api = PrometheusAPI(url, timeout=timeout, ask_less=ASK_LESS)
        self.url = self.api.url
        self.max_points = max_points

    def check(self) -> None:
        """Fail early, with one line, when the server is not there."""
        self.api.query("vector(1)")

    def range_query(
        self, expr: str, times: Sequence[int], progress: Progress | None = None
    ) -> Samples:
        """``expr`` at every time of ``times`` (a regular grid), in chunks of ``max_points``."""
        out: Samples = {}
        if not times:
            return out
        step = times[1] - times[0] if len(times) > 1 else 1000
        for start, end in chunks(times, self.max_points):
            found = self.api.query_range(expr, _seconds(start), _seconds(end), _seconds(step))
            for series in found:
                labels: Labels = tuple(sorted(series.metric.items()))
                target = out.setdefault(labels, {})
                for stamp, value in series.values:
                    target[round(stamp * 1000)] = value
            if progress is not None:
                progress(1)
        return out

    def has_series(self, selector: str, start_ms: int, end_ms: int) -> bool:
        """Whether any series matching ``selector`` has samples between the two times."""
        return bool(self.api.series(selector, _seconds(start_ms), _seconds(end_ms)))
