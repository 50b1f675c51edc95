"""The one client of the Prometheus HTTP API, shared by ``lint --prometheus``, ``backtest``
and ``repair`` (the only one that POSTs: admin deletions and remote writes).

Why one client: both commands talk to a server the user points at, so both need the same
guards, and each guard written twice drifts (lint used to print urllib3's whole essay where
backtest printed one line). Every request here:

- ends at a **total deadline** (connect, headers and the whole body: ``timeout`` seconds),
  however slowly the server trickles bytes;
- reads at most ``max_bytes`` (``MAX_BYTES``, 64 MiB) of answer;
- fails with **one line** (``UsageError``, exit 2) naming the URL, never with a traceback; the
  URL's ``user:password@`` is redacted in every message (it is sent as HTTP basic auth);
- treats the answer as **hostile until checked**: the JSON shape of every endpoint used
  (``query``, ``query_range``, ``series``, ``targets``) is validated before any field is read,
  and callers get typed values (``Series``, ``ScrapeTarget``), never raw JSON.

Why ``http.client`` and not ``requests``: requests' timeout bounds each socket read, not the
exchange, so a server that sends a byte every few seconds, or a chunked body that never ends,
holds it forever. Here a ``threading.Timer`` shuts the socket down at the deadline, wherever
the exchange is blocked (connect, TLS handshake, headers, body), and the body is read in
``read1`` chunks against a byte counter. Only name resolution (the system resolver) is outside
the deadline. No ``Accept-Encoding`` is sent, so what is counted is what is parsed.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import math
import re
import socket
import ssl
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TypeVar
from urllib.parse import quote, unquote, urlencode, urlsplit

from rulegen import units
from rulegen.core.urls import secret_parameter
from rulegen.errors import UsageError
from rulegen.promapi import MAX_BYTES

SHOWN_CHARS = 200
"""How much of an error body a message shows (escaped)."""
MAX_TIMESTAMP = 253_402_300_799.0  # 9999-12-31T23:59:59Z, the last second a datetime holds
_READ_SIZE = 64 * 1024
_T = TypeVar("_T")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|NaN|[+-]?Inf")


class QueryRejected(UsageError):
    """The server answered, and refused the request (bad PromQL, too many points, ...)."""


class PostRefused(UsageError):
    """The server answered a POST with an error status (``status``): an endpoint switched
    off (404, 503) or samples it does not take (400)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Series:
    """One series of a ``vector`` or ``matrix`` answer: its labels and float samples
    (Unix seconds, value)."""

    metric: Mapping[str, str]
    values: Sequence[tuple[float, float]]


@dataclass(frozen=True)
class ScrapeTarget:
    """One active target of ``/api/v1/targets``; ``scrape_interval`` is ``None`` when the
    server does not say (Prometheus before 2.33)."""

    labels: Mapping[str, str]
    scrape_pool: str
    scrape_interval: Decimal | None


# --- text shown to the user ------------------------------------------------------------------


def shown(text: str, limit: int = SHOWN_CHARS) -> str:
    """``text`` safe for one terminal line: control and other non-printable characters
    escaped (``\\x1b``, ``\\n``, ``\\u202e``), cut after ``limit`` characters (``…``)."""
    cut = text[:limit]
    out = "".join(c if c.isprintable() else repr(c)[1:-1] for c in cut)
    return out + "…" if len(text) > limit else out


REDACTED = "REDACTED"


def redact(url: str) -> str:
    """``url`` without its ``user:password@`` and with the value of every query parameter
    that may hold a secret (``?token=…``, ``&api_key=…``, ``client_secret=…``) replaced by
    ``REDACTED``, whatever else it holds, escaped. Why the query too: a token in the query
    string is as much a credential as a password, and it ends up in CI logs."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    at = rest.rfind("@", 0, end)
    if at >= 0:
        rest = rest[at + 1 :]
    return shown(scheme + sep + _redact_query(rest), 500)


def _redact_query(rest: str) -> str:
    """``host/path?query#fragment`` with the secret parameters' values of the query and of
    the fragment (``#access_token=…``, as OAuth implicit flows write it) redacted."""
    head, mark, query = rest.partition("?")
    query, hash_mark, fragment = query.partition("#")
    if not mark:
        head, hash_mark, fragment = rest.partition("#")
    return head + mark + _redact_pairs(query) + hash_mark + _redact_pairs(fragment)


def _redact_pairs(text: str) -> str:
    pairs = []
    for pair in text.split("&"):
        name, equals, _ = pair.partition("=")
        pairs.append(f"{name}={REDACTED}" if equals and secret_parameter(name) else pair)
    return "&".join(pairs)


def _size(count: int) -> str:
    return f"{count / 2**20:g} MiB" if count >= 2**20 else f"{count} bytes"


# --- the shape checks ------------------------------------------------------------------------


class _BadShape(Exception):
    """Where in the answer (``data.result[0].metric``) and what is wrong there."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where}: {problem}")


def _kind(value: object) -> str:
    """What a JSON value is, in JSON's words (strings shown, escaped and short)."""
    if isinstance(value, str):
        return '"' + shown(value, 40) + '"'
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"the number {shown(repr(value), 40)}"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _object(value: object, where: str) -> dict[str, object]:
    if not isinstance(value, dict):
        raise _BadShape(where, f"expected an object, got {_kind(value)}")
    return value


def _array(value: object, where: str) -> list[object]:
    if not isinstance(value, list):
        raise _BadShape(where, f"expected an array, got {_kind(value)}")
    return value


def _string(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise _BadShape(where, f"expected a string, got {_kind(value)}")
    return value


def _field(obj: dict[str, object], key: str, where: str) -> object:
    if key not in obj:
        raise _BadShape(f"{where}.{key}" if where else key, "missing")
    return obj[key]


def _labels(value: object, where: str) -> dict[str, str]:
    """A label set: an object of string → string."""
    obj = _object(value, where)
    for name, text in obj.items():
        if not isinstance(text, str):
            raise _BadShape(f"{where}.{shown(name, 40)}", f"expected a string, got {_kind(text)}")
    return {name: str(text) for name, text in obj.items()}


def _sample(value: object, where: str) -> tuple[float, float]:
    """``[timestamp, "value"]``: a finite Unix time in seconds and a Prometheus float string."""
    pair = _array(value, where)
    if len(pair) != 2:
        raise _BadShape(where, f'expected [timestamp, "value"], got {len(pair)} item(s)')
    stamp, text = pair
    if isinstance(stamp, bool) or not isinstance(stamp, int | float):
        raise _BadShape(f"{where}[0]", f"expected a Unix time, got {_kind(stamp)}")
    if not -MAX_TIMESTAMP <= stamp <= MAX_TIMESTAMP:
        raise _BadShape(f"{where}[0]", f"expected a Unix time, got {_kind(stamp)}")
    if not isinstance(text, str) or not _FLOAT.fullmatch(text):
        raise _BadShape(
            f"{where}[1]", f'expected a value like "1.5", "NaN" or "+Inf", got {_kind(text)}'
        )
    return float(stamp), float(text)


def _series(value: object, where: str, samples: str) -> Series:
    """One result item: ``metric`` and ``value`` (one sample) or ``values`` (many). Either
    may be missing for a native-histogram series (``histogram``/``histograms``)."""
    obj = _object(value, where)
    metric = _labels(_field(obj, "metric", where), f"{where}.metric")
    found: list[tuple[float, float]] = []
    if samples == "value" and "value" in obj:
        found.append(_sample(obj["value"], f"{where}.value"))
    elif samples == "values" and "values" in obj:
        items = _array(obj["values"], f"{where}.values")
        found.extend(_sample(item, f"{where}.values[{i}]") for i, item in enumerate(items))
    elif "histogram" not in obj and "histograms" not in obj:
        raise _BadShape(f"{where}.{samples}", "missing")
    return Series(metric, found)


def _result(data: object, kind: str) -> list[Series]:
    """``data`` of ``query``/``query_range``: ``{"resultType": kind, "result": [...]}``."""
    obj = _object(data, "data")
    found = _string(_field(obj, "resultType", "data"), "data.resultType")
    if found != kind:
        raise _BadShape("data.resultType", f'expected "{kind}", got {_kind(found)}')
    items = _array(_field(obj, "result", "data"), "data.result")
    samples = "value" if kind == "vector" else "values"
    return [_series(item, f"data.result[{i}]", samples) for i, item in enumerate(items)]


def _targets(data: object) -> list[ScrapeTarget]:
    obj = _object(data, "data")
    items = _array(obj.get("activeTargets", []), "data.activeTargets")
    out: list[ScrapeTarget] = []
    for i, item in enumerate(items):
        where = f"data.activeTargets[{i}]"
        target = _object(item, where)
        labels = _labels(target.get("labels", {}), f"{where}.labels")
        pool = _string(target.get("scrapePool", ""), f"{where}.scrapePool")
        interval = None
        if "scrapeInterval" in target:
            text = _string(target["scrapeInterval"], f"{where}.scrapeInterval")
            try:
                interval = units.parse_duration(text)
            except units.UnitError:
                raise _BadShape(
                    f"{where}.scrapeInterval", f"expected a duration like 30s, got {_kind(text)}"
                ) from None
        out.append(ScrapeTarget(labels, pool, interval))
    return out


# --- the transport ---------------------------------------------------------------------------


class _Deadline:
    """Shuts the watched socket down when ``seconds`` have passed, so whatever call is blocked
    on it (connect, handshake, a header line, a body read) returns at once."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._end = time.monotonic() + seconds
        self._lock = threading.Lock()
        self._socket: socket.socket | None = None
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def remaining(self) -> float:
        """The seconds left (a hair above 0 once the deadline has passed)."""
        return max(self._end - time.monotonic(), 0.001)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            if self._socket is not None:
                _shutdown(self._socket)

    def watch(self, sock: socket.socket) -> None:
        """Shut ``sock`` down at the deadline (at once if it has passed)."""
        with self._lock:
            self._socket = sock
            if self.expired:
                _shutdown(sock)

    def stop(self) -> None:
        """Cancel the timer (the exchange is over)."""
        self._timer.cancel()


def _shutdown(sock: socket.socket) -> None:
    # already closed by the peer: the blocked call has returned anyway
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


class _Expired(Exception):
    """The deadline passed."""


class _TooBig(Exception):
    """The answer is larger than the cap (``announced``: its Content-Length, when it said)."""

    def __init__(self, announced: int | None = None) -> None:
        super().__init__(announced)
        self.announced = announced


class _Unreachable(Exception):
    """No connection (the cause, short)."""


class _Broken(Exception):
    """Connected, but the answer is not a whole HTTP answer (the cause, short)."""


def _cause(exc: BaseException) -> str:
    """A connection error's cause in a few words (``Connection refused``), without the
    library's text around it."""
    if isinstance(exc, socket.gaierror):
        if exc.errno in (socket.EAI_NONAME, getattr(socket, "EAI_NODATA", None)):
            return "unknown host"
        return shown(str(exc.strerror or "name resolution failed"), 80)
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"TLS certificate not accepted ({shown(str(exc.verify_message), 80)})"
    if isinstance(exc, ssl.SSLError):
        return f"TLS failed ({shown(str(exc.reason or exc.__class__.__name__), 80)})"
    if isinstance(exc, OSError) and exc.strerror:
        return shown(exc.strerror, 80)
    return exc.__class__.__name__


_BROKEN = {
    http.client.RemoteDisconnected: "the server closed the connection without answering",
    http.client.IncompleteRead: "the answer ended before its announced length",
    http.client.LineTooLong: "a header or chunk line is too long",
    http.client.BadStatusLine: "not an HTTP answer",
}


@dataclass(frozen=True)
class _Answer:
    status: int
    reason: str
    body: bytes


class PrometheusAPI:
    """The Prometheus HTTP API at ``url``; every failure is one ``UsageError`` line.

    ``timeout`` is the total deadline of each request in seconds; ``max_bytes`` caps each
    answer; ``ask_less`` is the caller's advice when an answer is too large or too slow
    (``a shorter range, a larger --step or --alert``).
    """

    def __init__(
        self, url: str, *, timeout: float, max_bytes: int = MAX_BYTES, ask_less: str = ""
    ) -> None:
        self.url = redact(url.rstrip("/"))
        """The URL as messages show it: no ``user:password@``, escaped."""
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.ask_less = ask_less
        parts = _split(url)
        self._https = parts.scheme == "https"
        self._host = parts.hostname or ""
        self._port = parts.port or (443 if self._https else 80)
        self._path = quote(parts.path.rstrip("/"), safe="/%:@!$&'()*+,;=-._~")
        self._headers = {"Accept": "application/json", "User-Agent": "rulegen"}
        if parts.username is not None or parts.password is not None:
            user = unquote(parts.username or "")
            secret = unquote(parts.password or "")
            token = base64.b64encode(f"{user}:{secret}".encode()).decode("ascii")
            self._headers["Authorization"] = f"Basic {token}"

    # -- endpoints --

    def query(self, expr: str, at: float | None = None) -> list[Series]:
        """``/api/v1/query``: an instant vector (one sample per series)."""
        params = {"query": expr} if at is None else {"query": expr, "time": _number(at)}
        return self._checked("query", params, lambda data: _result(data, "vector"))

    def query_range(self, expr: str, start: str, end: str, step: str) -> list[Series]:
        """``/api/v1/query_range`` (times and step in seconds, as the API takes them)."""
        params = {"query": expr, "start": start, "end": end, "step": step}
        return self._checked("query_range", params, lambda data: _result(data, "matrix"))

    def series(self, selector: str, start: str, end: str) -> list[dict[str, str]]:
        """``/api/v1/series``: the label sets of the series matching ``selector``."""
        params = {"match[]": selector, "start": start, "end": end}

        def check(data: object) -> list[dict[str, str]]:
            items = _array(data, "data")
            return [_labels(item, f"data[{i}]") for i, item in enumerate(items)]

        return self._checked("series", params, check)

    def version(self) -> str | None:
        """``/api/v1/status/buildinfo``'s ``version`` (``2.42.0``), or ``None`` when the
        server does not say (compatible servers often lack the endpoint)."""
        try:
            data = self._data("status/buildinfo", {})
        except UsageError:
            return None
        version = data.get("version") if isinstance(data, dict) else None
        return version if isinstance(version, str) and len(version) < 100 else None

    def targets(self) -> list[ScrapeTarget]:
        """``/api/v1/targets?state=active``: the active scrape targets."""
        return self._checked("targets", {"state": "active"}, _targets)

    def post(
        self, path: str, params: Mapping[str, str | Sequence[str]], body: bytes = b"",
        headers: Mapping[str, str] | None = None,
    ) -> int:  # fmt: skip
        """POST ``/api/v1/<path>`` (the admin and remote-write endpoints, which answer 2xx
        with an empty body): the status, or one ``UsageError`` line with the server's reason.

        Why here: a write is one more request to the server the user named, and it needs the
        same deadline, size cap and redaction as every read.
        """
        where = f"/api/v1/{path}"
        answer = self._get(where, params, ("POST", body, dict(headers or {})))
        if not 200 <= answer.status < 300:
            text = " ".join(answer.body.decode("utf-8", "backslashreplace").split())
            try:
                reason = json.loads(answer.body).get("error")
            except (ValueError, RecursionError, AttributeError):
                reason = None
            text = reason if isinstance(reason, str) else text
            raise PostRefused(
                f"Prometheus at {self.url} answered HTTP {answer.status} to POST {where}: "
                f"{shown(text) or '(empty body)'}",
                answer.status,
            )
        return answer.status

    # -- the exchange --

    def _checked(self, path: str, params: Mapping[str, str], check: Callable[[object], _T]) -> _T:
        data = self._data(path, params)
        try:
            return check(data)
        except _BadShape as exc:
            raise UsageError(
                f"Prometheus at {self.url} sent a malformed answer to /api/v1/{path}: {exc}"
            ) from None

    def _data(self, path: str, params: Mapping[str, str]) -> object:
        """GET ``/api/v1/<path>``: the ``data`` of a successful answer, or ``UsageError``."""
        where = f"/api/v1/{path}"
        answer = self._get(where, params)
        try:
            body: object = json.loads(answer.body)
        except (ValueError, RecursionError):
            body = None
        if isinstance(body, dict) and body.get("status") == "error":
            error = body.get("error")
            text = " ".join(error.split()) if isinstance(error, str) else "no reason given"
            raise QueryRejected(
                f"Prometheus at {self.url} rejected the query: {shown(text, 500)}{_hint(text)}"
            )
        if answer.status != 200:
            text = answer.body.decode("utf-8", "backslashreplace")
            status = " ".join(str(p) for p in (answer.status, shown(answer.reason, 40)) if p)
            raise UsageError(
                f"Prometheus at {self.url} answered HTTP {status} to {where}: "
                f"{shown(text) or '(empty body)'}"
            )
        if body is None:
            text = answer.body.decode("utf-8", "backslashreplace")
            raise UsageError(
                f"{self.url} is not a Prometheus API: {where} answered something that is not "
                f"JSON: {shown(text) or '(empty body)'}"
            )
        try:
            envelope = _object(body, "the answer")
            status = _string(_field(envelope, "status", ""), "status")
            if status != "success":
                raise _BadShape("status", f'expected "success" or "error", got {_kind(status)}')
            return _field(envelope, "data", "")
        except _BadShape as exc:
            raise UsageError(
                f"Prometheus at {self.url} sent a malformed answer to {where}: {exc}"
            ) from None

    def _get(
        self, where: str, params: Mapping[str, str | Sequence[str]],
        send: tuple[str, bytes, dict[str, str]] = ("GET", b"", {}),
    ) -> _Answer:  # fmt: skip
        """One request (a GET unless ``send`` says method, body and headers) within the
        deadline and the size cap; every failure one ``UsageError``."""
        target = f"{self._path}{where}?{urlencode(params, doseq=True)}"
        deadline = _Deadline(self.timeout)
        try:
            return self._exchange(target, deadline, send)
        except _Expired:
            hint = f", or ask for less: {self.ask_less}" if self.ask_less else ""
            raise UsageError(
                f"Prometheus at {self.url} did not send its whole answer to {where} within "
                f"{self.timeout:g}s (--timeout): a slow server or a large answer; raise "
                f"--timeout{hint}"
            ) from None
        except _TooBig as exc:
            hint = f": ask for less: {self.ask_less}" if self.ask_less else ""
            cap = f"the {_size(self.max_bytes)} cap"
            what = (
                f"announced {_size(exc.announced)}, more than {cap},"
                if exc.announced is not None
                else f"sent more than {cap}"
            )
            raise UsageError(
                f"Prometheus at {self.url} {what} in answer to {where}{hint}"
            ) from None
        except _Unreachable as exc:
            raise UsageError(f"cannot reach Prometheus at {self.url}: {exc}") from None
        except _Broken as exc:
            raise UsageError(
                f"Prometheus at {self.url} broke off its answer to {where}: {exc}"
            ) from None
        finally:
            deadline.stop()

    def _exchange(
        self, target: str, deadline: _Deadline, send: tuple[str, bytes, dict[str, str]]
    ) -> _Answer:
        """Connect, send, read headers and body; raise ``_Expired`` once the deadline passed,
        whatever the blocked call raised or returned."""
        try:
            raw = socket.create_connection((self._host, self._port), deadline.remaining())
        except TimeoutError:
            raise _Expired from None
        except OSError as exc:
            if deadline.expired:
                raise _Expired from None
            raise _Unreachable(_cause(exc)) from None
        killer = raw.dup()  # the TLS wrapper takes ``raw`` over; the duplicate stays ours
        conn: http.client.HTTPConnection | None = None
        try:
            deadline.watch(killer)
            sock = raw
            if self._https:
                context = ssl.create_default_context()
                try:
                    sock = context.wrap_socket(raw, server_hostname=self._host)
                except (OSError, ValueError) as exc:
                    raw.close()
                    if deadline.expired or isinstance(exc, TimeoutError):
                        raise _Expired from None
                    raise _Unreachable(_cause(exc)) from None
            conn = http.client.HTTPConnection(self._host, self._port, timeout=self.timeout)
            conn.sock = sock
            return self._read(conn, target, deadline, send)
        finally:
            if conn is not None:
                conn.close()
            raw.close()
            killer.close()

    def _read(
        self, conn: http.client.HTTPConnection, target: str, deadline: _Deadline,
        send: tuple[str, bytes, dict[str, str]],
    ) -> _Answer:  # fmt: skip
        method, body, extra = send
        try:
            conn.request(method, target, body=body or None, headers={**self._headers, **extra})
        except OSError as exc:
            if deadline.expired or isinstance(exc, TimeoutError):
                raise _Expired from None
            raise _Unreachable(_cause(exc)) from None
        try:
            response = conn.getresponse()
            length = response.getheader("Content-Length", "")
            if length.strip().isdigit() and int(length) > self.max_bytes:
                raise _TooBig(int(length))
            pieces: list[bytes] = []
            size = 0
            while piece := response.read1(_READ_SIZE):
                size += len(piece)
                if size > self.max_bytes:
                    raise _TooBig
                pieces.append(piece)
        except (OSError, ValueError, http.client.HTTPException) as exc:
            if deadline.expired or isinstance(exc, TimeoutError):
                raise _Expired from None
            reason = next((t for k, t in _BROKEN.items() if isinstance(exc, k)), None)
            raise _Broken(reason or _cause(exc)) from None
        if deadline.expired:  # a shut-down socket reads as a clean end: the body is cut
            raise _Expired
        if length.strip().isdigit() and size < int(length):
            raise _Broken(_BROKEN[http.client.IncompleteRead])
        return _Answer(response.status, response.reason, b"".join(pieces))


@dataclass(frozen=True)
class _Parts:
    scheme: str
    hostname: str
    port: int | None
    path: str
    username: str | None
    password: str | None


def _split(url: str) -> _Parts:
    """The URL's parts, or one line saying it is not a URL."""
    problem = UsageError(f"--prometheus {redact(url)}: not a URL (expected http://host:9090)")
    if not url or any(c.isspace() or not c.isprintable() for c in url):
        raise problem
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise problem from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise problem
    if parts.query or parts.fragment or (port is not None and not 0 < port < 65536):
        raise problem
    return _Parts(parts.scheme, parts.hostname, port, parts.path, parts.username,
                  parts.password)  # fmt: skip


def _number(seconds: float) -> str:
    return repr(seconds) if math.isfinite(seconds) else "0"


PANIC = "runtime error:"
"""How Prometheus reports a crash of its query engine (a recovered Go panic)."""


def _hint(error: str) -> str:
    """What a user can do about a crash inside Prometheus, where one is known: Prometheus
    3.x (3.5.3 and later releases too) panics reading a block whose series have deletion
    tombstones (``tombstones.Intervals.Add``, docs/compatibility.md); cleaning them fixes it."""
    if PANIC not in error:
        return ""
    return (
        " (a crash inside Prometheus, not a fault of the query; after a delete_series, "
        "Prometheus 3 crashes this way until POST /api/v1/admin/tsdb/clean_tombstones)"
    )
