"""An exporter on 127.0.0.1 that serves a fixed exposition text (``tests/fixtures/*/…prom``)
whose counters grow with every scrape.

Why: a fixture file holds what an exporter release exposes (names, labels, bucket bounds),
with one set of values; a real Prometheus scraping it repeatedly must see counters and
histograms grow, or every ``rate()`` is 0 and a rule guarded by ``> 0`` returns nothing. So
the n-th scrape serves each counter and histogram sample multiplied by n (a steady rate;
bucket counts stay cumulative and ordered), and every gauge as written.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from support.prometheus import HOST

_TYPE = re.compile(r"^# TYPE (\S+) (\S+)\s*$")
_SAMPLE = re.compile(r"^([^\s{]+)(\{.*\})?\s+(\S+)(\s+\S+)?\s*$")
GROWING = ("counter", "histogram", "summary")


class Exposition:
    """One exposition text; ``scrape()`` is the body of the next scrape."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self.scrapes = 0
        self.lock = threading.Lock()
        self.growing = self._growing_families()

    def _growing_families(self) -> tuple[str, ...]:
        families = [m.group(1) for m in map(_TYPE.match, self.lines) if m]
        kinds = {m.group(1): m.group(2) for m in map(_TYPE.match, self.lines) if m}
        return tuple(sorted((f for f in families if kinds[f] in GROWING), key=len, reverse=True))

    def _grows(self, sample: str) -> bool:
        if sample.endswith("_created"):
            return False  # a timestamp, not a count
        return any(sample == f or sample.startswith(f + "_") for f in self.growing)

    def scrape(self) -> bytes:
        with self.lock:
            self.scrapes += 1
            n = self.scrapes
        out = []
        for line in self.lines:
            found = _SAMPLE.match(line) if not line.startswith("#") else None
            if found is None or not self._grows(found.group(1)):
                out.append(line)
                continue
            value = float(found.group(3)) * n
            labels = found.group(2) or ""
            out.append(f"{found.group(1)}{labels} {value!r}")
        return ("\n".join(out) + "\n").encode()


@contextmanager
def serving(text: str) -> Iterator[str]:
    """An exporter serving ``text`` on a free port of 127.0.0.1 (any path), its counters
    growing with every scrape; its ``host:port``."""
    with exporter(Exposition(text).scrape) as address:
        yield address


@contextmanager
def exporter(body: Callable[[], bytes]) -> Iterator[str]:
    """An HTTP exporter on a free port of 127.0.0.1 answering every GET with ``body()``
    (text format 0.0.4); its ``host:port``, stopped on exit."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802  (http.server's name)
            payload = body()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *_: Any) -> None:
            return

    server = ThreadingHTTPServer((HOST, 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"{HOST}:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
