"""End to end: rulegen's rules and Alertmanager config, loaded by real servers, page people.

A spec and a routing file are built with full validation; then a real ``prometheus`` scrapes an
in-test exporter and evaluates the generated rules, a real Alertmanager loads the generated
``alertmanager.yml``, and in-test webhook servers stand in for the receivers. Driving the
exporter's gauges must deliver the critical alert to ``oncall`` and ``storage`` (``continue``),
hold back the warning while the critical fires on the same instance (inhibition), release it
when the critical resolves, and send resolved notifications for both.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml
from conftest import CliResult, write_tree

Cli = Callable[..., CliResult]

PROMETHEUS = shutil.which("prometheus")
ALERTMANAGER = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")
HOST = "127.0.0.1"
DEADLINE = 30.0  # seconds for each expected delivery
RECEIVERS = ("oncall", "storage", "platform")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        PROMETHEUS is None or ALERTMANAGER is None or shutil.which("promtool") is None
        or shutil.which("amtool") is None,
        reason="needs prometheus, prometheus-alertmanager, promtool and amtool",
    ),
]  # fmt: skip

SERVICE = """
    version: 1
    service: web
    labels: {team: storage}
    evaluation_interval: 1s
    scrape_interval: 1s
    alerts:
      - {signal: requests_waiting, threshold: 5, for: 0s, severity: critical}
      - {signal: kv_cache_usage, threshold: 90%, for: 0s, severity: warning}
    """

ROUTING = """
    version: 1
    routing:
      group_by: [alertname, service, instance]
      group_wait: 1s
      group_interval: 1s
      repeat_interval: 1h
      default_receiver: platform
      receivers:
        - name: platform
          webhook: {{url: 'http://{host}:{port}/platform'}}
        - name: oncall
          webhook: {{url: 'http://{host}:{port}/oncall'}}
        - name: storage
          webhook: {{url: 'http://{host}:{port}/storage'}}
      routes:
        - match: {{severity: critical}}
          receiver: oncall
          continue: true
        - match: {{team: storage}}
          receiver: storage
      inhibit:
        - source: {{severity: critical}}
          target: {{severity: warning}}
          equal: [instance]
      tests:
        - labels: {{severity: critical, team: storage}}
          receivers: [oncall, storage]
    """

CRITICAL = "RequestQueueBacklog"
WARNING = "KVCacheUsageHigh"


def free_port() -> int:
    """A port nothing listens on right now (for the servers we start as processes)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


# --- in-test HTTP servers ------------------------------------------------------------------


@dataclass
class Exporter:
    """The vLLM gauges, in the Prometheus text format, with values the test changes."""

    waiting: float = 0.0
    kv_usage: float = 0.0

    def render(self) -> bytes:
        labels = '{model_name="m1",engine="0"}'
        return (
            "# TYPE vllm:num_requests_waiting gauge\n"
            f"vllm:num_requests_waiting{labels} {self.waiting}\n"
            "# TYPE vllm:kv_cache_usage_perc gauge\n"
            f"vllm:kv_cache_usage_perc{labels} {self.kv_usage}\n"
        ).encode()


@dataclass(frozen=True)
class Delivery:
    """One alert in one webhook notification."""

    receiver: str
    status: str
    labels: dict[str, str]


@dataclass
class Sink:
    """What the webhook receivers got, by URL path (``/oncall`` → ``oncall``)."""

    deliveries: list[Delivery] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, path: str, payload: dict[str, Any]) -> None:
        with self.lock:
            for alert in payload.get("alerts", []):
                self.deliveries.append(
                    Delivery(path.strip("/"), str(alert["status"]), dict(alert["labels"]))
                )

    def snapshot(self) -> list[Delivery]:
        with self.lock:
            return list(self.deliveries)


class Handler(BaseHTTPRequestHandler):
    """Serves ``/metrics`` from the exporter and records webhook POSTs in the sink."""

    exporter: ClassVar[Exporter]
    sink: ClassVar[Sink]

    def do_GET(self) -> None:
        body = self.exporter.render() if self.path == "/metrics" else b""
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
def http_server(exporter: Exporter, sink: Sink) -> Iterator[int]:
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


# --- real servers --------------------------------------------------------------------------


@dataclass
class Servers:
    """The processes started, and where their output goes."""

    logs: dict[str, Path] = field(default_factory=dict)
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def start(self, name: str, argv: list[str], cwd: Path) -> None:
        log = cwd / f"{name}.log"
        self.logs[name] = log
        with log.open("wb") as out:
            proc = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
        self.procs.append(proc)

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)

    def report(self) -> str:
        parts = []
        for name, log in self.logs.items():
            text = log.read_text("utf-8", errors="replace") if log.exists() else "(no log)"
            parts.append(f"--- {name} log (last 4000 chars) ---\n{text[-4000:]}")
        return "\n".join(parts)


def wait_ready(url: str, servers: Servers, deadline: float = 20.0) -> None:
    """Poll ``url`` until it answers 200; fail with the servers' logs otherwise."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        for name, proc in zip(servers.logs, servers.procs, strict=True):
            assert proc.poll() is None, f"{name} exited early\n{servers.report()}"
        try:
            with urllib.request.urlopen(url, timeout=1) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.2)
    pytest.fail(f"{url} not ready after {deadline}s\n{servers.report()}")


def wait_for(
    what: str,
    check: Callable[[list[Delivery]], bool],
    sink: Sink,
    servers: Servers,
    deadline: float = DEADLINE,
) -> None:
    """Poll the sink until ``check`` holds; fail with the deliveries and the logs."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if check(sink.snapshot()):
            return
        time.sleep(0.2)
    got = "\n".join(map(repr, sink.snapshot())) or "(none)"
    pytest.fail(f"timed out after {deadline}s waiting for {what}\ndeliveries:\n{got}\n"
                f"{servers.report()}")  # fmt: skip


def delivered(receiver: str, alertname: str, status: str) -> Callable[[list[Delivery]], bool]:
    def check(deliveries: list[Delivery]) -> bool:
        return any(
            d.receiver == receiver and d.labels.get("alertname") == alertname and d.status == status
            for d in deliveries
        )

    return check


def both(*checks: Callable[[list[Delivery]], bool]) -> Callable[[list[Delivery]], bool]:
    return lambda deliveries: all(c(deliveries) for c in checks)


def of(deliveries: list[Delivery], alertname: str) -> list[Delivery]:
    return [d for d in deliveries if d.labels.get("alertname") == alertname]


def prometheus_config(tmp: Path, exporter_port: int, am_port: int) -> dict[str, Any]:
    return {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(tmp / "rules" / "prometheus" / "web.rules.yml")],
        "scrape_configs": [
            {"job_name": "vllm", "static_configs": [{"targets": [f"{HOST}:{exporter_port}"]}]}
        ],
        "alerting": {
            "alertmanagers": [
                {"api_version": "v2", "static_configs": [{"targets": [f"{HOST}:{am_port}"]}]}
            ]
        },
    }


def test_alerts_reach_receivers_through_real_prometheus_and_alertmanager(
    cli: Cli, in_tmp: Path
) -> None:
    assert PROMETHEUS is not None
    assert ALERTMANAGER is not None
    exporter = Exporter()
    sink = Sink()
    servers = Servers()
    with http_server(exporter, sink) as port:
        # 1. rulegen build, fully validated (promtool tests, amtool check-config and routes)
        write_tree(
            in_tmp,
            {
                "specs/web.yaml": SERVICE,
                "specs/routing.yaml": ROUTING.format(host=HOST, port=port),
            },
        )
        built = cli("build")
        assert built.code == 0, built.err + built.out
        rules = in_tmp / "rules"
        assert (rules / "prometheus" / "web.rules.yml").is_file()
        assert (rules / "alertmanager" / "alertmanager.yml").is_file()

        # 2. real Alertmanager and Prometheus on free ports
        am_port, prom_port = free_port(), free_port()
        (in_tmp / "prometheus.yml").write_text(
            yaml.safe_dump(prometheus_config(in_tmp, port, am_port)), "utf-8"
        )
        try:
            servers.start(
                "alertmanager",
                [
                    ALERTMANAGER,
                    f"--config.file={rules / 'alertmanager' / 'alertmanager.yml'}",
                    f"--storage.path={in_tmp / 'am'}",
                    f"--web.listen-address={HOST}:{am_port}",
                    "--cluster.listen-address=",
                ],
                in_tmp,
            )
            servers.start(
                "prometheus",
                [
                    PROMETHEUS,
                    f"--config.file={in_tmp / 'prometheus.yml'}",
                    f"--storage.tsdb.path={in_tmp / 'data'}",
                    f"--web.listen-address={HOST}:{prom_port}",
                    "--rules.alert.resend-delay=1s",
                ],
                in_tmp,
            )
            wait_ready(f"http://{HOST}:{am_port}/-/ready", servers)
            wait_ready(f"http://{HOST}:{prom_port}/-/ready", servers)

            # 3. both fire: the critical pages oncall and reaches storage (continue: true)
            exporter.waiting, exporter.kv_usage = 20, 0.95
            wait_for(
                f"{CRITICAL} firing at oncall and storage",
                both(
                    delivered("oncall", CRITICAL, "firing"),
                    delivered("storage", CRITICAL, "firing"),
                ),
                sink,
                servers,
            )
            for d in of(sink.snapshot(), CRITICAL):
                assert {"service": "web", "severity": "critical", "team": "storage"}.items() <= (
                    d.labels.items()
                ), d
                assert d.labels.get("model_name") == "m1", d
                assert d.labels.get("instance") == f"{HOST}:{port}", d

            # the warning on the same instance is inhibited while the critical fires
            time.sleep(4)
            deliveries = sink.snapshot()
            assert of(deliveries, WARNING) == [], (
                f"{WARNING} delivered although {CRITICAL} fires on the same instance:\n"
                f"{deliveries}\n{servers.report()}"
            )
            assert not [d for d in deliveries if d.receiver == "platform"], deliveries

            # 4. the critical resolves: resolved at oncall and storage; the warning, no longer
            # inhibited, reaches storage (team route) and not oncall
            exporter.waiting = 0
            wait_for(
                f"{CRITICAL} resolved at oncall and storage, {WARNING} firing at storage",
                both(
                    delivered("oncall", CRITICAL, "resolved"),
                    delivered("storage", CRITICAL, "resolved"),
                    delivered("storage", WARNING, "firing"),
                ),
                sink,
                servers,
            )

            # 5. the warning resolves too
            exporter.kv_usage = 0.1
            wait_for(
                f"{WARNING} resolved at storage",
                delivered("storage", WARNING, "resolved"),
                sink,
                servers,
            )
            deliveries = sink.snapshot()
            for d in of(deliveries, WARNING):
                assert d.receiver == "storage", d
                assert {"service": "web", "severity": "warning", "team": "storage"}.items() <= (
                    d.labels.items()
                ), d
            assert not [d for d in deliveries if d.receiver == "platform"], deliveries
        finally:
            servers.stop()
