"""An HTTP proxy on 127.0.0.1 in front of a real Prometheus that injects one fault into the
Nth request that changes data (a ``POST`` to the admin API or the remote-write receiver).

Why a proxy: the faults that lose data in a repair happen between two requests or inside one
(the process killed right after the server applied a delete, an HTTP 500 to a write, a
connection dropped after the server took a write), and only a real server says what a rerun
finds afterwards. The proxy forwards everything else untouched and records the method and
path of each changing request, so a test can first count a repair's steps, then break each.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import signal
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar
from urllib.parse import urlsplit

HOST = "127.0.0.1"
CHANGING = ("/api/v1/admin/tsdb/", "/api/v1/write")
_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


@dataclass
class Fault:
    """What to do to the changing request number ``index`` (0-based, counted per arming):
    ``kill`` (forward it, then SIGKILL process ``pid`` before it hears the answer), ``500``
    (answer HTTP 500, not forwarded), ``drop`` (forward it, then close the connection
    without an answer)."""

    kind: str
    index: int
    pid: int = 0


@dataclass
class _State:
    upstream: tuple[str, int]
    fault: Fault | None = None
    seen: list[str] = field(default_factory=list)
    fired: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Handler(BaseHTTPRequestHandler):
    state: ClassVar[_State]
    protocol_version = "HTTP/1.1"

    def log_message(self, *_: object) -> None:  # quiet: the test reads ``seen``
        return

    def do_GET(self) -> None:
        self._forward(b"")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if not self.path.startswith(CHANGING):
            self._forward(body)
            return
        state = self.state
        with state.lock:
            number = len(state.seen)
            state.seen.append(self.path.split("?", 1)[0])
            fault = state.fault if state.fault and state.fault.index == number else None
            if fault is not None:
                state.fired = True
        if fault is None:
            self._forward(body)
        elif fault.kind == "500":
            self._answer(500, b'{"status":"error","error":"injected by the test proxy"}')
        else:
            self._exchange(body)  # the server applies it ...
            if fault.kind == "kill":
                os.kill(fault.pid, signal.SIGKILL)
            self._drop()  # ... and the client never hears so

    def _exchange(self, body: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
        host, port = self.state.upstream
        connection = http.client.HTTPConnection(host, port, timeout=300)
        try:
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
            connection.request(self.command, self.path, body=body or None, headers=headers)
            response = connection.getresponse()
            data = response.read()
            kept = [(k, v) for k, v in response.getheaders() if k.lower() not in _HOP]
            return response.status, kept, data
        finally:
            connection.close()

    def _forward(self, body: bytes) -> None:
        status, headers, data = self._exchange(body)
        self.send_response(status)
        for key, value in headers:
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _answer(self, status: int, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _drop(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


class FaultProxy:
    """The proxy, started on a free port (``url``); ``arm`` a fault before a run."""

    def __init__(self, upstream_url: str) -> None:
        parts = urlsplit(upstream_url)
        self.state = _State((parts.hostname or HOST, parts.port or 80))
        handler = type("Handler", (_Handler,), {"state": self.state})
        self.server = ThreadingHTTPServer((HOST, 0), handler)
        self.server.daemon_threads = True
        self.url = f"http://{HOST}:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FaultProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def arm(self, fault: Fault | None) -> None:
        """Count changing requests from zero again; inject ``fault`` (``None``: none)."""
        with self.state.lock:
            self.state.fault, self.state.seen, self.state.fired = fault, [], False

    @property
    def seen(self) -> list[str]:
        """The paths of the changing requests since the last ``arm``."""
        with self.state.lock:
            return list(self.state.seen)

    @property
    def fired(self) -> bool:
        """Whether the armed fault happened."""
        with self.state.lock:
            return self.state.fired
