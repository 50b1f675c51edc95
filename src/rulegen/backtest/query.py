"""Range queries against a Prometheus HTTP API, split into chunks the server accepts.

Why: Prometheus refuses a range query of more than 11,000 points per series, so a month at
15 s (172,800 points) is many queries. The HTTP exchange itself (deadline, size cap, shape
checks, one-line errors) is ``rulegen.promapi``'s, shared with ``lint --prometheus``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from decimal import Decimal

from rulegen.backtest import PARALLEL, TIMEOUT
from rulegen.backtest.replay import Labels
from rulegen.core import promql
from rulegen.promapi.client import PrometheusAPI, Series

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


ASK_LESS = "a shorter range (--from/--to), a larger --step or fewer alerts (--alert NAME)"


class Client:
    """One Prometheus (or compatible) query API; every error is a one-line ``UsageError``."""

    def __init__(
        self,
        url: str,
        timeout: float = TIMEOUT,
        max_points: int = MAX_POINTS,
        parallel: int = PARALLEL,
    ) -> None:
        self.api = PrometheusAPI(url, timeout=timeout, ask_less=ASK_LESS)
        self.url = self.api.url
        self.max_points = max_points
        self.parallel = max(1, parallel)
        """Range-query chunks in flight at once: the server evaluates each on its own core."""
        self.queries = 0
        """Requests sent (range-query chunks, series lookups): what a benchmark reports."""
        self.samples = 0
        """Samples read from range-query answers."""

    def check(self) -> None:
        """Fail early, with one line, when the server is not there."""
        self.api.query("vector(1)")

    def range_query(
        self, expr: str, times: Sequence[int], progress: Progress | None = None
    ) -> Samples:
        """``expr`` at every time of ``times`` (a regular grid), in chunks of ``max_points``,
        up to ``parallel`` of them in flight at once."""
        parts = chunks(times, self.max_points) if times else []
        if self.parallel == 1 or len(parts) <= 1:
            out: Samples = {}
            self._merge(map(self._chunk(expr, times), parts), out, progress)
            return out
        with ThreadPoolExecutor(max_workers=min(self.parallel, len(parts))) as pool:
            return self.submit(pool, expr, times).result(progress)

    def submit(self, pool: Executor, expr: str, times: Sequence[int]) -> Pending:
        """Start ``expr`` at ``times`` in ``pool`` (a backtest asks for every alert at once,
        so the server is never idle while rulegen computes); ``Pending.result`` merges."""
        parts = chunks(times, self.max_points) if times else []
        one = self._chunk(expr, times)
        return Pending(self, [pool.submit(one, part) for part in parts])

    def _chunk(self, expr: str, times: Sequence[int]) -> Callable[[tuple[int, int]], list[Series]]:
        step = _seconds(times[1] - times[0] if len(times) > 1 else 1000)

        def one(chunk: tuple[int, int]) -> list[Series]:
            return self.api.query_range(expr, _seconds(chunk[0]), _seconds(chunk[1]), step)

        return one

    def _merge(
        self, answers: Iterable[list[Series]], out: Samples, progress: Progress | None
    ) -> None:
        for found in answers:
            self.queries += 1
            for series in found:
                self.samples += len(series.values)
                labels: Labels = tuple(sorted(series.metric.items()))
                target = out.setdefault(labels, {})
                for stamp, value in series.values:
                    target[round(stamp * 1000)] = value
            if progress is not None:
                progress(1)

    def has_series(self, selector: str, start_ms: int, end_ms: int) -> bool:
        """Whether any series matching ``selector`` has samples between the two times."""
        self.queries += 1
        return bool(self.api.series(selector, _seconds(start_ms), _seconds(end_ms)))


class Pending:
    """A range query in flight: its chunks' answers, merged in chunk order by ``result`` (so
    the result never depends on timing); a failing chunk cancels those not started yet."""

    def __init__(self, client: Client, futures: list[Future[list[Series]]]) -> None:
        self.client = client
        self.futures = futures

    def result(self, progress: Progress | None = None) -> Samples:
        """The merged answer (raises the first chunk's error)."""
        out: Samples = {}
        try:
            self.client._merge((f.result() for f in self.futures), out, progress)
        finally:
            self.cancel()
        return out

    def cancel(self) -> None:
        """Drop the chunks not started yet."""
        for future in self.futures:
            future.cancel()
