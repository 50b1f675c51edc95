"""Real alerting servers for end-to-end tests: processes on 127.0.0.1, an in-test exporter and
webhook receivers that record every notification.

Why here: the end-to-end routing tests (one Prometheus and one Alertmanager,
``tests/routing/test_e2e_alerting.py``) and the high-availability test (two Prometheus
replicas and a three-peer Alertmanager cluster, ``tests/routing/test_e2e_ha.py``) start,
kill and restart the same servers and count the same webhook notifications.
"""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar, Protocol

import pytest

HOST = "127.0.0.1"


class Renders(Protocol):
    """Anything that serves a ``/metrics`` page (the URL path picks the page)."""

    def render(self, path: str) -> bytes: ...


@dataclass(frozen=True)
class Delivery:
    """One alert in one webhook notification."""

    receiver: str
    status: str
    labels: dict[str, str]


@dataclass(frozen=True)
class Notification:
    """One webhook POST: when it arrived (``time.monotonic()``), the receiver (the URL
    path), the query string's ``peer`` (which Alertmanager sent it, when its URL says), the
    group key, and each alert's status and labels."""

    at: float
    receiver: str
    peer: str
    group_key: str
    status: str
    alerts: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]

    def firing(self) -> frozenset[tuple[tuple[str, str], ...]]:
        """The label sets of the firing alerts it carries."""
        return frozenset(labels for status, labels in self.alerts if status == "firing")

    def names(self) -> set[str]:
        """The alert names it carries."""
        return {dict(labels).get("alertname", "") for _, labels in self.alerts}


@dataclass
class Sink:
    """What the webhook receivers got, in arrival order."""

    notifications: list[Notification] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, path: str, payload: dict[str, Any]) -> None:
        url = urllib.parse.urlsplit(path)
        peer = urllib.parse.parse_qs(url.query).get("peer", [""])[0]
        alerts = tuple(
            (str(a["status"]), tuple(sorted(dict(a["labels"]).items())))
            for a in payload.get("alerts", [])
        )
        note = Notification(
            time.monotonic(), url.path.strip("/"), peer, str(payload.get("groupKey", "")),
            str(payload.get("status", "")), alerts,
        )  # fmt: skip
        with self.lock:
            self.notifications.append(note)

    def received(self) -> list[Notification]:
        with self.lock:
            return list(self.notifications)

    def snapshot(self) -> list[Delivery]:
        """Every alert of every notification, in arrival order."""
        return [
            Delivery(n.receiver, status, dict(labels))
            for n in self.received()
            for status, labels in n.alerts
        ]


class Handler(BaseHTTPRequestHandler):
    """Serves GETs from the exporter and records webhook POSTs in the sink."""

    exporter: ClassVar[Renders]
    sink: ClassVar[Sink]

    def do_GET(self) -> None:
        body = self.exporter.render(self.path)
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        self.sink.record(self.path, json.loads(self.rfile.read(length) or b"{}"))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: no request log on stderr."""


@contextmanager
def http_server(exporter: Renders, sink: Sink) -> Iterator[int]:
    """The exporter and the webhook receivers on one free port, in a thread."""
    handler = type("BoundHandler", (Handler,), {"exporter": exporter, "sink": sink})
    server = ThreadingHTTPServer((HOST, 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@dataclass
class Servers:
    """The processes started, by name, and where their output goes (a restarted process
    appends to its log)."""

    logs: dict[str, Path] = field(default_factory=dict)
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def start(self, name: str, argv: list[str], cwd: Path) -> None:
        log = cwd / f"{name}.log"
        self.logs[name] = log
        with log.open("ab") as out:
            proc = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
        self.procs[name] = proc

    def kill(self, name: str) -> None:
        """SIGKILL: no shutdown of its own (no state written, no goodbye to peers)."""
        proc = self.procs.pop(name)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)

    def signal(self, name: str, number: int) -> None:
        self.procs[name].send_signal(number)

    def stop(self) -> None:
        """SIGTERM each, the last started first, one after the other: an Alertmanager peer
        leaving its cluster waits (10s) for a peer to take its goodbye, which none does
        when they all stop at once."""
        for proc in reversed(self.procs.values()):
            if proc.poll() is None:
                proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        self.procs.clear()

    def report(self) -> str:
        parts = []
        for name, log in self.logs.items():
            text = log.read_text("utf-8", errors="replace") if log.exists() else "(no log)"
            parts.append(f"--- {name} log (last 4000 chars) ---\n{text[-4000:]}")
        return "\n".join(parts)

    def check_alive(self) -> None:
        for name, proc in self.procs.items():
            assert proc.poll() is None, f"{name} exited early\n{self.report()}"


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=2) as response:
        return json.load(response)


def wait_ready(url: str, servers: Servers, deadline: float = 20.0) -> None:
    """Poll ``url`` until it answers 200; fail with the servers' logs otherwise."""
    wait_until(f"{url} ready", lambda: _answers(url), servers, deadline)


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def wait_until(
    what: str, check: Callable[[], bool], servers: Servers, deadline: float = 30.0
) -> float:
    """Poll ``check`` until it holds (every process still running); the seconds it took,
    or a failure with the servers' logs."""
    start = time.monotonic()
    while time.monotonic() < start + deadline:
        servers.check_alive()
        if check():
            return time.monotonic() - start
        time.sleep(0.1)
    pytest.fail(f"timed out after {deadline}s waiting for {what}\n{servers.report()}")
