"""Nothing lost, nothing leaked, no traceback: ``lint --prometheus`` and ``backtest`` against
hostile servers.

Every case runs ``rulegen`` against a raw-socket HTTP server in a thread of this test
(127.0.0.1, a free port, stopped by the test) that answers each API endpoint the way the case
says: a byte a second, a chunked body that never ends, too many bytes, JSON of the wrong shape,
an HTML error page full of control characters. Each must end with exit 2 and exactly one
stderr line naming the URL (never its password), within the ``--timeout 2`` the case passes.
Time options that would run forever or overflow are refused before any request.

The transport cases (where a hang or a traceback would show) run the real ``rulegen``
process; the tables of answer shapes, URLs and options run ``rulegen``'s ``run()`` in this
process (where any exception would fail the test), a tenth of the time per case.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from conftest import CliResult, run_rulegen, write_tree
from support.prometheus import free_port

from rulegen.backtest.query import grid, grid_size
from rulegen.backtest.session import query_points, query_times
from rulegen.backtest.targets import Target
from rulegen.promapi import client as promapi

HOST = "127.0.0.1"
DEADLINE = 1  # --timeout of every case, seconds
WITHIN = 10.0  # a case must end within this, seconds (interpreter start and build included)

SPEC = """\
version: 1
service: web
runbook_url: https://runbooks.example.com/{alert}
selectors: {node: 'job="node"'}
alerts:
  - {signal: disk_utilization, threshold: 90%, for: 5m, severity: warning}
  - {signal: network_saturation, threshold: 80%, for: 5m, severity: warning}
"""

# --- the hostile server ----------------------------------------------------------------------

Handler = Callable[[socket.socket, threading.Event], None]
"""Writes one answer on the connection (the request is read); the event is set at stop."""


def _send(conn: socket.socket, data: bytes) -> bool:
    try:
        conn.sendall(data)
    except OSError:
        return False  # the client gave up: what the test wants
    return True


def answer(body: object, status: str = "200 OK", content_type: str = "application/json") -> Handler:
    """A whole answer: ``body`` (bytes as they are, anything else as JSON)."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\n"
        f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n"
    ).encode()

    def handle(conn: socket.socket, stop: threading.Event) -> None:  # noqa: ARG001
        _send(conn, head + data)

    return handle


def drip(prefix: bytes, byte: bytes) -> Handler:
    """``prefix``, then ``byte`` once a second, forever."""

    def handle(conn: socket.socket, stop: threading.Event) -> None:
        if not _send(conn, prefix):
            return
        while not stop.wait(1.0):
            if not _send(conn, byte):
                return

    return handle


CHUNKED = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"


def endless_chunks(conn: socket.socket, stop: threading.Event) -> None:
    """A chunked body of 1 KiB chunks, 20 a second, that never ends (never reaches the cap
    within the deadline: only the deadline can end it)."""
    if not _send(conn, CHUNKED):
        return
    while not stop.wait(0.05):
        if not _send(conn, b"400\r\n" + b" " * 1024 + b"\r\n"):
            return


def flood(conn: socket.socket, stop: threading.Event) -> None:
    """80 MiB of chunked whitespace as fast as the client reads."""
    if not _send(conn, CHUNKED):
        return
    piece = b"100000\r\n" + b" " * 2**20 + b"\r\n"
    for _ in range(80):
        if stop.is_set() or not _send(conn, piece):
            return
    _send(conn, b"0\r\n\r\n")


def announce_huge(conn: socket.socket, stop: threading.Event) -> None:
    """Announces 100 MiB, then sends nothing until stopped."""
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
    if _send(conn, head + f"Content-Length: {100 * 2**20}\r\n\r\n".encode()):
        stop.wait(WITHIN)


def hang_up(conn: socket.socket, stop: threading.Event) -> None:  # noqa: ARG001
    """Reads the request and closes the connection without a word."""


def cut_short(conn: socket.socket, stop: threading.Event) -> None:  # noqa: ARG001
    """Announces 99 bytes, sends 1 and closes."""
    _send(conn, b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n{")


def success(data: object) -> Handler:
    return answer({"status": "success", "data": data})


def matrix(*result: object) -> Handler:
    return success({"resultType": "matrix", "result": list(result)})


def vector(*result: object) -> Handler:
    return success({"resultType": "vector", "result": list(result)})


VALID: dict[str, Handler] = {
    "query": vector({"metric": {}, "value": [1767225600, "1"]}),
    "query_range": matrix(),
    "series": success([]),
    "targets": success({"activeTargets": [], "droppedTargets": []}),
    "buildinfo": success({"version": "3.5.3"}),
}


@dataclass
class FakePrometheus:
    """An HTTP server on a free port of 127.0.0.1 answering ``routes`` by the last part of
    the path (``query``, ``targets``…; ``*`` for all), valid empty answers otherwise."""

    routes: Mapping[str, Handler]
    requests: list[str] = field(default_factory=list)
    authorizations: list[str | None] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._listener = socket.create_server((HOST, 0))
        self._listener.settimeout(0.1)
        self.url = f"http://{HOST}:{self._listener.getsockname()[1]}"
        self._threads = [threading.Thread(target=self._serve, daemon=True)]
        self._threads[0].start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            thread = threading.Thread(target=self._handle, args=(conn,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(WITHIN)
            head = b""
            try:
                while b"\r\n\r\n" not in head and len(head) < 65536:
                    data = conn.recv(4096)
                    if not data:
                        return
                    head += data
            except OSError:
                return
            lines = head.split(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")
            target = lines[0].split(" ")[1]
            fields = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
            self.requests.append(target)
            self.authorizations.append(fields.get("Authorization"))
            endpoint = urlsplit(target).path.rsplit("/", 1)[-1]
            handler = self.routes.get(endpoint) or self.routes.get("*") or VALID[endpoint]
            handler(conn, self._stop)

    def stop(self) -> None:
        self._stop.set()
        self._listener.close()
        for thread in self._threads:
            thread.join(timeout=WITHIN)


@pytest.fixture
def serve() -> Iterator[Callable[[Mapping[str, Handler]], FakePrometheus]]:
    """Start fake servers; every one is stopped when the test ends."""
    started: list[FakePrometheus] = []

    def start(routes: Mapping[str, Handler]) -> FakePrometheus:
        server = FakePrometheus(routes)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


# --- running rulegen -------------------------------------------------------------------------


@pytest.fixture
def specs(tmp_path: Path) -> Path:
    return write_tree(tmp_path, {"specs/web.yaml": SPEC}) / "specs"


Run = Callable[..., CliResult]
"""``rulegen`` with these arguments: a process (``process``) or ``run()`` in-process (``cli``)."""


@pytest.fixture
def process(specs: Path) -> Run:
    """The real ``rulegen`` process, in the folder holding ``specs/``."""

    def call(*argv: str) -> CliResult:
        return run_rulegen(*argv, cwd=specs.parent)

    return call


FIRST = {"lint": "targets", "backtest": "query"}
"""The first endpoint each command asks (where an envelope problem shows)."""


def rulegen(run: Run, command: str, specs: Path, url: str, *extra: str) -> tuple[CliResult, float]:
    """``rulegen lint|backtest`` against ``url`` (an hour for backtest); result, duration."""
    argv = [command, str(specs), "--prometheus", url, "--timeout", str(DEADLINE)]
    if command == "backtest":
        argv += ["--from", "1767225600", "--to", "1767229200"]
    started = time.monotonic()
    result = run(*argv, *extra)
    return result, time.monotonic() - started


def one_line(result: CliResult, took: float, url: str) -> str:
    """The single error line of a run that failed as it should: exit 2, nothing on stdout,
    no traceback, the URL named, within ``WITHIN`` seconds."""
    assert "Traceback" not in result.err, result.err
    assert (result.code, result.out) == (2, ""), result.err
    lines = result.err.splitlines()
    assert len(lines) == 1, result.err
    assert lines[0].startswith("rulegen: error: ")
    assert url in lines[0]
    assert took < WITHIN
    return lines[0]


# --- transport: slow, endless, too large, unreachable ----------------------------------------

TOO_SLOW = (
    "rulegen: error: Prometheus at {url} did not send its whole answer to /api/v1/{first} "
    f"within {DEADLINE}s (--timeout): a slow server or a large answer; raise --timeout, "
    "or ask for less: {less}"
)
TOO_BIG = (
    "rulegen: error: Prometheus at {url} {what} in answer to /api/v1/{first}: ask for less: {less}"
)
LESS = {
    "lint": "narrower alert selectors",
    "backtest": "a shorter range (--from/--to), a larger --step or fewer alerts (--alert NAME)",
}
HTML = (
    b"<html><head><title>502 Bad Gateway</title></head>\r\n<body>\x1b[31mupstream\x07 "
    b"down\x00\xff\xe2\x80\xae" + b"." * 300 + b"</body></html>"
)
SHOWN_HTML = (
    "<html><head><title>502 Bad Gateway</title></head>\\r\\n<body>\\x1b[31mupstream\\x07 "
    "down\\x00\\xff\\u202e" + "." * 118 + "…"
)

TRANSPORT = [
    # (behaviour, routes, the error line)
    ("headers that trickle a byte a second end at the deadline",
     {"*": drip(b"HTTP/1.1 200 OK\r\nX-Slow: ", b"x")}, TOO_SLOW),
    ("a status line that trickles a byte a second ends at the deadline",
     {"*": drip(b"", b"H")}, TOO_SLOW),
    ("a body that trickles a byte a second ends at the deadline",
     {"*": drip(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n", b" ")}, TOO_SLOW),
    ("a chunked body that never ends stops at the deadline", {"*": endless_chunks}, TOO_SLOW),
    ("an answer announcing more than the cap is refused before its body",
     {"*": announce_huge},
     TOO_BIG.replace("{what}", "announced 100 MiB, more than the 64 MiB cap,")),
    ("an answer streaming more than the cap stops at the cap",
     {"*": flood}, TOO_BIG.replace("{what}", "sent more than the 64 MiB cap")),
    ("an HTML error page is shown escaped and cut at 200 characters",
     {"*": answer(HTML, "502 Bad Gateway", "text/html")},
     "rulegen: error: Prometheus at {url} answered HTTP 502 Bad Gateway to /api/v1/{first}: "
     + SHOWN_HTML),
    ("a JSON error is the server refusing, shown escaped",
     {"*": answer({"status": "error", "errorType": "bad_data",
                   "error": "parse error:\n\x1b[2J unexpected"}, "400 Bad Request")},
     "rulegen: error: Prometheus at {url} rejected the query: parse error: \\x1b[2J unexpected"),
    ("an answer that is not JSON is not a Prometheus API",
     {"*": answer(b"hello\x1b[0m", content_type="text/plain")},
     "rulegen: error: {url} is not a Prometheus API: /api/v1/{first} answered something that "
     "is not JSON: hello\\x1b[0m"),
    ("a connection closed without an answer is one line",
     {"*": hang_up},
     "rulegen: error: Prometheus at {url} broke off its answer to /api/v1/{first}: the server "
     "closed the connection without answering"),
    ("a body shorter than announced is one line",
     {"*": cut_short},
     "rulegen: error: Prometheus at {url} broke off its answer to /api/v1/{first}: the answer "
     "ended before its announced length"),
]  # fmt: skip


@pytest.mark.parametrize("command", ["lint", "backtest"])
@pytest.mark.parametrize(
    ("routes", "line"), [c[1:] for c in TRANSPORT], ids=[c[0] for c in TRANSPORT]
)
@pytest.mark.slow
def test_transport_failures_are_one_line_within_the_deadline(
    command: str,
    routes: Mapping[str, Handler],
    line: str,
    specs: Path,
    cli: Run,
    serve: Callable[[Mapping[str, Handler]], FakePrometheus],
) -> None:
    _fails_in_one_line(cli, command, specs, serve(routes), line)


@pytest.mark.parametrize("command", ["lint", "backtest"])
@pytest.mark.parametrize(
    ("routes", "line"),
    [c[1:] for c in TRANSPORT if c[0].startswith(("a body that", "a chunked body"))],
    ids=["a trickling body", "an endless chunked body"],
)
@pytest.mark.slow
def test_the_real_process_stops_at_the_deadline_too(
    command: str,
    routes: Mapping[str, Handler],
    line: str,
    specs: Path,
    process: Run,
    serve: Callable[[Mapping[str, Handler]], FakePrometheus],
) -> None:
    _fails_in_one_line(process, command, specs, serve(routes), line)


def _fails_in_one_line(
    run: Run, command: str, specs: Path, server: FakePrometheus, line: str
) -> None:
    result, took = rulegen(run, command, specs, server.url)
    expected = line.format(url=server.url, first=FIRST[command], less=LESS[command])
    assert one_line(result, took, server.url) == expected


@pytest.mark.parametrize("command", ["lint", "backtest"])
@pytest.mark.slow
def test_connection_refused_reads_the_same_in_both_commands(
    command: str, specs: Path, process: Run
) -> None:
    url = f"http://{HOST}:{free_port()}"
    result, took = rulegen(process, command, specs, url)
    assert one_line(result, took, url) == (
        f"rulegen: error: cannot reach Prometheus at {url}: Connection refused"
    )


NOT_URLS = [
    ("no scheme", "localhost:9090", "localhost:9090"),
    ("another scheme", "ftp://localhost:9090", "ftp://localhost:9090"),
    ("no host", "http://", "http://"),
    ("a port out of range", "http://127.0.0.1:99999", "http://127.0.0.1:99999"),
    ("a port that is not a number, its password hidden", "http://admin:hunter2@127.0.0.1:90x",
     "http://127.0.0.1:90x"),
    ("a control character", "http://127.0.0.1:9090/\x1b[2J", "http://127.0.0.1:9090/\\x1b[2J"),
    ("a token in the query string, hidden", "http://127.0.0.1:1/?token=s3cr3t",
     "http://127.0.0.1:1/?token=REDACTED"),
]  # fmt: skip


@pytest.mark.parametrize("command", ["lint", "backtest"])
@pytest.mark.parametrize(("url", "shown"), [c[1:] for c in NOT_URLS], ids=[c[0] for c in NOT_URLS])
def test_not_a_url_is_one_line(command: str, url: str, shown: str, specs: Path, cli: Run) -> None:
    result, took = rulegen(cli, command, specs, url)
    assert one_line(result, took, shown) == (
        f"rulegen: error: --prometheus {shown}: not a URL (expected http://host:9090)"
    )
    assert "hunter2" not in result.err


# --- every answer is hostile until checked ---------------------------------------------------

MALFORMED = "rulegen: error: Prometheus at {url} sent a malformed answer to /api/v1/"
SERIES = {"metric": {"__name__": "x"}, "values": [[1767225600, "1"]]}

SHAPES = [
    # (behaviour, command, routes, the end of the error line after MALFORMED)
    ("an empty object has no status", "lint", {"*": answer({})}, "targets: status: missing"),
    ("an empty object has no status", "backtest", {"*": answer({})}, "query: status: missing"),
    ("an array is not an answer", "lint", {"*": answer([])},
     "targets: the answer: expected an object, got an array"),
    ("an array is not an answer", "backtest", {"*": answer([])},
     "query: the answer: expected an object, got an array"),
    ("success without data", "lint", {"*": answer({"status": "success"})},
     "targets: data: missing"),
    ("success without data", "backtest", {"*": answer({"status": "success"})},
     "query: data: missing"),
    ("a status that is neither success nor error", "backtest",
     {"*": answer({"status": "\x1b[2Jok", "data": {}})},
     'query: status: expected "success" or "error", got "\\x1b[2Jok"'),
    ("a range series without metric", "backtest",
     {"query_range": matrix({"values": [[1, "x"]]})},
     "query_range: data.result[0].metric: missing"),
    ("a range value that is not a number", "backtest",
     {"query_range": matrix({"metric": {}, "values": [[1767225600, "1"], [1767225615, "x"]]})},
     'query_range: data.result[0].values[1][1]: expected a value like "1.5", "NaN" or "+Inf", '
     'got "x"'),
    ("a range value that is a JSON number, not a string", "backtest",
     {"query_range": matrix({"metric": {}, "values": [[1767225600, 1]]})},
     'query_range: data.result[0].values[0][1]: expected a value like "1.5", "NaN" or "+Inf", '
     "got the number 1"),
    ("python's float words are not Prometheus values", "backtest",
     {"query_range": matrix({"metric": {}, "values": [[1767225600, "infinity"]]})},
     'query_range: data.result[0].values[0][1]: expected a value like "1.5", "NaN" or "+Inf", '
     'got "infinity"'),
    ("a timestamp that is a string", "backtest",
     {"query_range": matrix({"metric": {}, "values": [["1767225600", "1"]]})},
     'query_range: data.result[0].values[0][0]: expected a Unix time, got "1767225600"'),
    ("a timestamp beyond year 9999", "backtest",
     {"query_range": matrix({"metric": {}, "values": [[1e300, "1"]]})},
     "query_range: data.result[0].values[0][0]: expected a Unix time, got the number 1e+300"),
    ("a sample that is not a pair", "backtest",
     {"query_range": matrix({"metric": {}, "values": [[1767225600]]})},
     'query_range: data.result[0].values[0]: expected [timestamp, "value"], got 1 item(s)'),
    ("values that are not a list", "backtest",
     {"query_range": matrix({"metric": {}, "values": {"a": 1}})},
     "query_range: data.result[0].values: expected an array, got an object"),
    ("a label value that is not a string", "backtest",
     {"query_range": matrix({"metric": {"instance": 5}, "values": []})},
     "query_range: data.result[0].metric.instance: expected a string, got the number 5"),
    ("an instant vector where a range vector was asked", "backtest",
     {"query_range": vector()}, 'query_range: data.resultType: expected "matrix", got "vector"'),
    ("a result that is not a list", "backtest",
     {"query_range": success({"resultType": "matrix", "result": None})},
     "query_range: data.result: expected an array, got null"),
    ("an instant series without metric", "backtest",
     {"query": vector({"value": [1, "1"]})}, "query: data.result[0].metric: missing"),
    ("series labels that are not strings", "backtest",
     {"query_range": matrix(SERIES), "series": success([{"__name__": 1}])},
     "series: data[0].__name__: expected a string, got the number 1"),
    ("series labels that are not strings", "lint", {"series": success([{"job": None}])},
     "series: data[0].job: expected a string, got null"),
    ("a series list that is an object", "lint", {"series": success({"a": "b"})},
     "series: data: expected an array, got an object"),
    ("a scrape interval that is not a duration", "lint",
     {"targets": success({"activeTargets": [{"labels": {"job": "node"},
                                              "scrapeInterval": "fast"}]})},
     'targets: data.activeTargets[0].scrapeInterval: expected a duration like 30s, got "fast"'),
    ("a scrape interval that is a number", "lint",
     {"targets": success({"activeTargets": [{"scrapeInterval": 30}]})},
     "targets: data.activeTargets[0].scrapeInterval: expected a string, got the number 30"),
    ("target labels that are not strings", "lint",
     {"targets": success({"activeTargets": [{"labels": {"job": ["node"]}}]})},
     "targets: data.activeTargets[0].labels.job: expected a string, got an array"),
    ("active targets that are not a list", "lint",
     {"targets": success({"activeTargets": "all"})},
     'targets: data.activeTargets: expected an array, got "all"'),
    ("an instant series without metric", "lint",
     {"query": vector({"value": [1, "1"]})}, "query: data.result[0].metric: missing"),
    ("an instant value that is not a number", "lint",
     {"query": vector({"metric": {}, "value": [1767225600, "1,5"]})},
     'query: data.result[0].value[1]: expected a value like "1.5", "NaN" or "+Inf", got "1,5"'),
    ("deeply nested JSON is not JSON we read", "lint", {"*": answer(b"[" * 100_000)},
     None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("command", "routes", "end"),
    [c[1:] for c in SHAPES],
    ids=[f"{c[1]}: {c[0]}" for c in SHAPES],
)
@pytest.mark.slow
def test_answers_of_the_wrong_shape_are_one_line(
    command: str,
    routes: Mapping[str, Handler],
    end: str | None,
    specs: Path,
    cli: Run,
    serve: Callable[[Mapping[str, Handler]], FakePrometheus],
) -> None:
    server = serve(routes)
    result, took = rulegen(cli, command, specs, server.url)
    line = one_line(result, took, server.url)
    if end is None:
        assert line.startswith(f"rulegen: error: {server.url} is not a Prometheus API: ")
    else:
        assert line == MALFORMED.format(url=server.url) + end


@pytest.mark.slow
def test_special_values_are_read(
    specs: Path, process: Run, serve: Callable[[Mapping[str, Handler]], FakePrometheus]
) -> None:
    """NaN, ±Inf and exponents are Prometheus values: a series present at every step of the
    hour, whatever its value, fires once."""
    t0 = 1767225600
    words = ["NaN", "-Inf", "1e+06", "+Inf", ".5", "-0", "7E-3"]
    values = [[t0 + 15 * i, words[i % len(words)]] for i in range(241)]
    series = {"metric": {"instance": "a"}, "values": values}
    server = serve({"query_range": matrix(series), "series": success([{"__name__": "x"}])})
    result, _ = rulegen(process, "backtest", specs, server.url, "--format", "json")
    assert (result.code, result.err) == (0, "")
    found = [(row["alert"], row["labels"], row["fired"]) for row in json.loads(result.out)]
    assert [(alert, labels["instance"], fired) for alert, labels, fired in found] == [
        ("DiskUtilizationHigh", "a", 1),
        ("NetworkInterfaceSaturated", "a", 1),
    ]


@pytest.mark.slow
def test_the_password_is_sent_and_never_shown(
    specs: Path, process: Run, serve: Callable[[Mapping[str, Handler]], FakePrometheus]
) -> None:
    """``user:password@`` goes out as basic auth; the message names the URL without it."""
    server = serve({"*": answer({})})
    secret_url = server.url.replace("://", "://admin:s3cr%40t@")
    result, took = rulegen(process, "lint", specs, secret_url)
    assert one_line(result, took, server.url) == (
        MALFORMED.format(url=server.url) + "targets: status: missing"
    )
    assert "s3cr" not in result.err
    # admin:s3cr@t, on each request: its version (unreadable here: not checked), its targets
    assert server.authorizations == ["Basic YWRtaW46czNjckB0"] * 2


# --- backtest time options -------------------------------------------------------------------

RANGE = "not a time between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59Z"
TIME_OPTIONS = [
    ("a --to of 1e30 seconds", ["--from", "0", "--to", "1e30"],
     f"rulegen: error: --to '1e30': {RANGE}"),
    ("a --to past year 9999", ["--from", "0", "--to", "253402300800"],
     f"rulegen: error: --to '253402300800': {RANGE}"),
    ("an RFC3339 --to past year 9999 by its offset",
     ["--from", "0", "--to", "9999-12-31T23:59:59-01:00"],
     f"rulegen: error: --to '9999-12-31T23:59:59-01:00': {RANGE}"),
    ("a negative --from", ["--from", "-1", "--to", "60"], f"rulegen: error: --from '-1': {RANGE}"),
    ("an RFC3339 --from before 1970", ["--from", "1969-12-31T23:59:59Z", "--to", "60"],
     f"rulegen: error: --from '1969-12-31T23:59:59Z': {RANGE}"),
    ("a --to of inf", ["--from", "0", "--to", "inf"],
     "rulegen: error: --to 'inf': not a time; use RFC3339 (2026-01-01T00:00:00Z), Unix "
     "seconds, or relative: now, -7d (or now-7d), today, yesterday (00:00 UTC)"),
    ("a --from with a million-digit exponent", ["--from", "1e999999999", "--to", "60"],
     f"rulegen: error: --from '1e999999999': {RANGE}"),
    ("a step of 1ms over years",
     ["--from", "2020-01-01T00:00:00Z", "--to", "2026-01-01T00:00:00Z", "--step", "1ms"],
     # (the alerts read their 15s recordings at every 1ms: computed at 15s from raw series)
     "rulegen: error: this backtest needs 378,790,825,946 evaluation points (2 alert(s), "
     "1 query each, every 1ms from 2020-01-01T00:00:00Z to 2026-01-01T00:00:00Z, and "
     "12,625,942 for recordings), more than "
     "the 10,000,000 one run may evaluate: use a larger --step, a shorter range (--from/--to) "
     "or fewer alerts (--alert NAME)"),
    ("five years at each group's interval with --suggest (two queries per alert)",
     ["--from", "2021-01-01T00:00:00Z", "--to", "2026-01-01T00:00:00Z", "--suggest", "1"],
     "rulegen: error: this backtest needs 21,035,568 evaluation points (2 alert(s), "
     "2 queries each, at each group's interval from 2021-01-01T00:00:00Z to "
     "2026-01-01T00:00:00Z), more than the 10,000,000 one run may evaluate: use a larger "
     "--step, a shorter range (--from/--to) or fewer alerts (--alert NAME)"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("argv", "line"), [c[1:] for c in TIME_OPTIONS], ids=[c[0] for c in TIME_OPTIONS]
)
@pytest.mark.slow
def test_time_options_out_of_range_are_refused_before_any_query(
    argv: list[str],
    line: str,
    specs: Path,
    cli: Run,
    serve: Callable[[Mapping[str, Handler]], FakePrometheus],
) -> None:
    server = serve({})
    started = time.monotonic()
    result = cli("backtest", str(specs), "--prometheus", server.url, *argv)
    took = time.monotonic() - started
    assert "Traceback" not in result.err, result.err
    assert (result.code, result.out, result.err.splitlines()) == (2, "", [line])
    assert took < WITHIN
    assert server.requests == []


TIMEOUTS = [
    ("zero", "0"), ("negative", "-1"), ("not a number", "soon"), ("infinite", "inf"),
    ("not a number at all", "nan"), ("more than a day", "86401"),
]  # fmt: skip


@pytest.mark.parametrize("command", ["lint", "backtest"])
@pytest.mark.parametrize("value", [c[1] for c in TIMEOUTS], ids=[c[0] for c in TIMEOUTS])
def test_a_bad_timeout_is_a_usage_error(command: str, value: str, specs: Path, cli: Run) -> None:
    argv = [command, str(specs), "--prometheus", f"http://{HOST}:9", "--timeout", value]
    if command == "backtest":
        argv += ["--from", "0", "--to", "60"]
    result = cli(*argv)
    assert (result.code, result.out, result.err.splitlines()) == (
        2,
        "",
        [
            f"rulegen: error: {command}: argument --timeout: expected a number of seconds above "
            f"0 and at most 86400, not {value!r}"
        ],
    )


# --- the helpers behind the messages and the point count -------------------------------------

REDACTED = [
    ("a password", "http://admin:hunter2@prom:9090/x", "http://prom:9090/x"),
    ("a user name only", "https://admin@prom", "https://prom"),
    ("an @ inside the password", "http://a:b@c@prom:9090", "http://prom:9090"),
    ("an @ in the path is not userinfo", "http://prom:9090/a@b", "http://prom:9090/a@b"),
    ("no scheme", "admin:hunter2@prom:9090", "prom:9090"),
    ("control characters escaped", "http://prom\n:9090", "http://prom\\n:9090"),
    ("a token in the query", "http://prom:9090/?token=abc123", "http://prom:9090/?token=REDACTED"),
    ("every secret parameter, others kept", "http://p/x?a=1&access_token=t&api_key=k&b=2",
     "http://p/x?a=1&access_token=REDACTED&api_key=REDACTED&b=2"),
    ("a name that says secret, any case", "http://p?Client_Secret=s&X-Auth=a&passwd=p",
     "http://p?Client_Secret=REDACTED&X-Auth=REDACTED&passwd=REDACTED"),
    ("a percent-encoded name", "http://p?%74oken=t", "http://p?%74oken=REDACTED"),
    ("a query without a path", "http://u:pw@p:9090?password=pw", "http://p:9090?password=REDACTED"),
    ("a token in the fragment", "http://p/#access_token=t&x=1", "http://p/#access_token=REDACTED&x=1"),
    ("a parameter without a value is kept", "http://p?token", "http://p?token"),
]  # fmt: skip


@pytest.mark.parametrize(("url", "shown"), [c[1:] for c in REDACTED], ids=[c[0] for c in REDACTED])
def test_urls_are_shown_without_userinfo(url: str, shown: str) -> None:
    assert promapi.redact(url) == shown


def test_shown_text_is_escaped_and_cut() -> None:
    assert promapi.shown("a\x1b[2Jb\u202ec\td\n") == "a\\x1b[2Jb\\u202ec\\td\\n"
    assert promapi.shown("é" * 201) == "é" * 200 + "…"
    assert promapi.shown("x" * 200) == "x" * 200


GRIDS = [(0, 0, 1), (1, 61_000, 15_000), (-61_000, 61_000, 15_000), (5, 4, 1), (7, 7, 3),
         (-1, -1, 2), (0, 10**6, 7)]  # fmt: skip


@pytest.mark.parametrize(("start", "end", "step"), GRIDS)
def test_the_point_count_is_the_grid_length(start: int, end: int, step: int) -> None:
    assert grid_size(start, end, step) == len(grid(start, end, step))
    target = Target("A", "g", "x > 1", for_ms=60_000, step_ms=step, keep_firing_for_ms=90_000)
    if start < end:
        span = (start, end)
        assert query_points(target, span) == len(query_times(target, span))
        assert query_points(target, span, 2 * step) == len(query_times(target, span, 2 * step))
