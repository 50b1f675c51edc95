"""Range queries against a Prometheus HTTP API, split into chunks the server accepts.

Why: Prometheus refuses a range query of more than 11,000 points per series, so a month at
15 s (172,800 points) is many queries; every failure the user can cause (a wrong URL, a
server that is down, a query the server rejects) becomes one ``UsageError`` line, never a
traceback. ``requests`` is imported lazily: only the backtest needs it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from rulegen import promql
from rulegen.backtest.replay import Labels
from rulegen.errors import ToolNotFoundError, UsageError

if TYPE_CHECKING:
    import requests

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


def _requests() -> Any:
    try:
        import requests
    except ImportError:
        raise ToolNotFoundError(
            "rulegen backtest needs the Python package requests: pip install requests"
        ) from None
    return requests


class QueryRejected(UsageError):
    """The server answered, and refused the query (bad PromQL, too many points, ...)."""


class Client:
    """One Prometheus (or compatible) query API; every error is a one-line ``UsageError``."""

    def __init__(self, url: str, timeout: float = 120.0, max_points: int = MAX_POINTS) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.max_points = max_points
        self._requests = _requests()
        self._session: requests.Session = self._requests.Session()

    def close(self) -> None:
        """Close the HTTP session."""
        self._session.close()

    def _get(self, path: str, params: Mapping[str, str | list[str]]) -> Any:
        """GET ``/api/v1/<path>`` and return ``data``, or raise ``UsageError``."""
        exceptions = self._requests.exceptions
        try:
            response = self._session.get(
                f"{self.url}/api/v1/{path}", params=params, timeout=self.timeout
            )
        except (exceptions.MissingSchema, exceptions.InvalidSchema, exceptions.InvalidURL):
            raise UsageError(
                f"--prometheus {self.url}: not a URL (expected http://host:9090)"
            ) from None
        except exceptions.Timeout:
            raise UsageError(
                f"Prometheus at {self.url} did not answer within {self.timeout:g}s"
            ) from None
        except exceptions.RequestException as exc:
            raise UsageError(f"cannot reach Prometheus at {self.url}: {_reason(exc)}") from None
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict) or "status" not in body:
            raise UsageError(
                f"{self.url} is not a Prometheus query API "
                f"(HTTP {response.status_code} from /api/v1/{path})"
            )
        if body["status"] != "success":
            error = " ".join(str(body.get("error", "unknown error")).split())
            raise QueryRejected(f"Prometheus at {self.url} rejected the query: {error}")
        return body.get("data")

    def check(self) -> None:
        """Fail early, with one line, when the server is not there."""
        self._get("query", {"query": "vector(1)"})

    def range_query(
        self, expr: str, times: Sequence[int], progress: Progress | None = None
    ) -> Samples:
        """``expr`` at every time of ``times`` (a regular grid), in chunks of ``max_points``."""
        out: Samples = {}
        if not times:
            return out
        step = times[1] - times[0] if len(times) > 1 else 1000
        for start, end in chunks(times, self.max_points):
            data = self._get(
                "query_range",
                {
                    "query": expr,
                    "start": _seconds(start),
                    "end": _seconds(end),
                    "step": _seconds(step),
                },
            )
            for series in _matrix(data):
                labels = tuple(sorted((str(k), str(v)) for k, v in series["metric"].items()))
                target = out.setdefault(labels, {})
                for stamp, value in series.get("values", ()):
                    target[round(float(stamp) * 1000)] = float(value)
            if progress is not None:
                progress(1)
        return out

    def has_series(self, selector: str, start_ms: int, end_ms: int) -> bool:
        """Whether any series matching ``selector`` has samples between the two times."""
        data = self._get(
            "series",
            {"match[]": [selector], "start": _seconds(start_ms), "end": _seconds(end_ms)},
        )
        return bool(data)


def _matrix(data: Any) -> Iterable[dict[str, Any]]:
    if not isinstance(data, dict) or data.get("resultType") != "matrix":
        kind = data.get("resultType") if isinstance(data, dict) else None
        raise UsageError(f"expected a range vector from query_range, got {kind}")
    result = data.get("result") or []
    return [s for s in result if isinstance(s, dict)]


def _reason(exc: Exception) -> str:
    """The short cause of a connection error (``Connection refused``), not urllib3's essay."""
    text = str(exc)
    errno = re.search(r"\[Errno -?\d+\] ([^'\")\]]+)", text)
    if errno:
        return errno.group(1).strip().rstrip(".")
    if "Name or service not known" in text or "nodename nor servname" in text:
        return "unknown host"
    return type(exc).__name__
