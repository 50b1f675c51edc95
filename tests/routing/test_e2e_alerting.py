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
import threading
import time
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import CliResult, write_tree
from support.alerting import HOST, Delivery, Servers, Sink, http_server, wait_ready
from support.prometheus import free_port

from rulegen.validate import amtool

Cli = Callable[..., CliResult]

PROMETHEUS = shutil.which("prometheus")
ALERTMANAGER = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")
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


@dataclass
class Exporter:
    """The vLLM gauges, in the Prometheus text format, with values the test changes."""

    waiting: float = 0.0
    kv_usage: float = 0.0

    def render(self, path: str) -> bytes:
        if path != "/metrics":
            return b""
        labels = '{model_name="m1",engine="0"}'
        return (
            "# TYPE vllm:num_requests_waiting gauge\n"
            f"vllm:num_requests_waiting{labels} {self.waiting}\n"
            "# TYPE vllm:kv_cache_usage_perc gauge\n"
            f"vllm:kv_cache_usage_perc{labels} {self.kv_usage}\n"
        ).encode()


# --- real servers --------------------------------------------------------------------------


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
    servers.check_alive()
    got = "\n".join(map(repr, sink.snapshot())) or "(none)"
    pytest.fail(f"timed out after {deadline}s waiting for {what}\ndeliveries:\n{got}\n"
                f"{servers.report()}")  # fmt: skip


def start_servers(
    servers: Servers, tmp: Path, am_port: int, prom_port: int, features: Sequence[str] = ()
) -> None:
    """Alertmanager with the generated config (and ``--enable-feature`` ``features``) and
    Prometheus with ``tmp/prometheus.yml``, both on 127.0.0.1, ready before this returns (the
    caller's ``finally`` stops them)."""
    servers.start(
        "alertmanager",
        [
            str(ALERTMANAGER),
            f"--config.file={tmp / 'rules' / 'alertmanager' / 'alertmanager.yml'}",
            f"--storage.path={tmp / 'am'}",
            f"--web.listen-address={HOST}:{am_port}",
            "--cluster.listen-address=",
            *(f"--enable-feature={feature}" for feature in features),
        ],
        tmp,
    )
    servers.start(
        "prometheus",
        [
            str(PROMETHEUS),
            f"--config.file={tmp / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp / 'data'}",
            f"--web.listen-address={HOST}:{prom_port}",
            "--rules.alert.resend-delay=1s",
        ],
        tmp,
    )
    wait_ready(f"http://{HOST}:{am_port}/-/ready", servers)
    wait_ready(f"http://{HOST}:{prom_port}/-/ready", servers)


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
        # Alertmanager 0.27 on: in its UTF-8 strict matchers mode (the other e2e test runs
        # the default mode), which parses the generated matchers with the UTF-8 parser only
        strict = [m for m in amtool.matcher_modes(amtool.build_info()) if m == "utf8-strict-mode"]
        try:
            start_servers(servers, in_tmp, am_port, prom_port, strict)
            if strict:
                log = servers.logs["alertmanager"].read_text("utf-8", errors="replace")
                assert "UTF-8 strict mode enabled" in log, servers.report()

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


# --- the diagnosis: a disk-bound TTFT incident ------------------------------------------------

LLM = """
    version: 1
    service: llm
    labels: {team: inference}
    evaluation_interval: 1s
    scrape_interval: 1s
    selectors: {node: 'job="node"', vllm: 'job="vllm"'}
    alerts:
      # the symptoms hold on a little longer than the diagnosis (as in production, where the
      # diagnosis's `for` should not exceed theirs): the page names the cause first
      - {signal: ttft_latency, threshold: 500ms, window: 5s, for: 8s, severity: critical,
         buckets: [0.1, 0.25, 0.5, 0.75, 1.0]}
      - {signal: disk_utilization, threshold: 70%, window: 5s, for: 8s, severity: warning,
         labels: {team: storage}}
    diagnoses:
      - kind: ttft_disk_bound
        ttft: 500ms
        disk_utilization: 70%
        window: 5s
        for: 0s
        severity: critical
        labels: {team: storage}
    """

DIAGNOSIS = "TTFTDiskBound"
SYMPTOMS = ("TTFTLatencyHigh", "DiskUtilizationHigh")
BUCKETS = ("0.1", "0.25", "0.5", "0.75", "1.0", "+Inf")


@dataclass
class Machine:
    """One host seen through two exporters: vLLM's TTFT histogram and node_exporter's disk.

    Counters grow with wall time at the current rates, as the real exporters' do.
    """

    slow_ttft: bool = False
    disk_busy: float = 0.05
    requests: float = 50.0  # per second
    _last: float = field(default_factory=time.monotonic)
    _buckets: dict[str, float] = field(default_factory=lambda: dict.fromkeys(BUCKETS, 0.0))
    _io_seconds: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def _advance(self) -> None:
        now = time.monotonic()
        elapsed, self._last = now - self._last, now
        # every request in one bucket: (0.1, 0.25] when fast, (0.5, 0.75] when slow
        first = "0.75" if self.slow_ttft else "0.25"
        for le in BUCKETS[BUCKETS.index(first) :]:
            self._buckets[le] += self.requests * elapsed
        self._io_seconds += self.disk_busy * elapsed

    def vllm(self) -> bytes:
        with self.lock:
            self._advance()
            lines = ["# TYPE vllm:time_to_first_token_seconds histogram"]
            lines += [
                f'vllm:time_to_first_token_seconds_bucket{{model_name="m1",le="{le}"}} {v}'
                for le, v in self._buckets.items()
            ]
            lines.append(f'vllm:time_to_first_token_seconds_count{{model_name="m1"}} '
                         f"{self._buckets['+Inf']}")  # fmt: skip
            lines.append('vllm:time_to_first_token_seconds_sum{model_name="m1"} 0')
            return ("\n".join(lines) + "\n").encode()

    def node(self) -> bytes:
        with self.lock:
            self._advance()
            return (
                "# TYPE node_disk_io_time_seconds_total counter\n"
                f'node_disk_io_time_seconds_total{{device="nvme0n1"}} {self._io_seconds}\n'
            ).encode()


@dataclass
class Endpoint:
    """Adapts one of the machine's exporters to the handler's ``render()``."""

    page: Callable[[], bytes]

    def render(self, path: str) -> bytes:
        return self.page() if path == "/metrics" else b""


def firing_in_prometheus(port: int) -> set[str]:
    """Names of the alerts Prometheus itself has firing (to tell inhibition from absence)."""
    with urllib.request.urlopen(f"http://{HOST}:{port}/api/v1/alerts", timeout=2) as response:
        alerts = json.load(response)["data"]["alerts"]
    return {a["labels"]["alertname"] for a in alerts if a["state"] == "firing"}


def llm_prometheus_config(
    tmp: Path, vllm_port: int, node_port: int, am_port: int
) -> dict[str, Any]:
    config = prometheus_config(tmp, vllm_port, am_port)
    config["rule_files"] = [str(tmp / "rules" / "prometheus" / "llm.rules.yml")]
    config["scrape_configs"] = [
        {"job_name": "vllm", "static_configs": [{"targets": [f"{HOST}:{vllm_port}"]}]},
        {"job_name": "node", "static_configs": [{"targets": [f"{HOST}:{node_port}"]}]},
    ]
    return config


def test_disk_bound_ttft_incident_pages_once_with_the_cause(cli: Cli, in_tmp: Path) -> None:
    assert PROMETHEUS is not None
    assert ALERTMANAGER is not None
    machine = Machine()
    sink = Sink()
    servers = Servers()
    vllm_side = Endpoint(machine.vllm)
    node_side = Endpoint(machine.node)
    with (
        http_server(vllm_side, sink) as vllm_port,
        http_server(node_side, sink) as node_port,
    ):
        # 1. build and validate: the generated promtool tests of the diagnosis pass
        write_tree(
            in_tmp,
            {
                "specs/llm.yaml": LLM,
                "specs/routing.yaml": ROUTING.format(host=HOST, port=vllm_port),
            },
        )
        built = cli("build")
        assert built.code == 0, built.err + built.out
        config = yaml.safe_load((in_tmp / "rules/alertmanager/alertmanager.yml").read_text())
        assert {
            "source_matchers": [f'alertname="{DIAGNOSIS}"', 'service="llm"'],
            "target_matchers": [f'alertname=~"{SYMPTOMS[0]}|{SYMPTOMS[1]}"', 'service="llm"'],
            "equal": ["host"],
        } in config["inhibit_rules"] or {
            "source_matchers": [f'alertname="{DIAGNOSIS}"', 'service="llm"'],
            "target_matchers": [f'alertname=~"{SYMPTOMS[1]}|{SYMPTOMS[0]}"', 'service="llm"'],
            "equal": ["host"],
        } in config["inhibit_rules"], config["inhibit_rules"]

        # 2. real Alertmanager and Prometheus; vLLM and node_exporter on different ports
        am_port, prom_port = free_port(), free_port()
        (in_tmp / "prometheus.yml").write_text(
            yaml.safe_dump(llm_prometheus_config(in_tmp, vllm_port, node_port, am_port)), "utf-8"
        )
        try:
            start_servers(servers, in_tmp, am_port, prom_port)
            time.sleep(3)  # a few scrapes of the healthy machine

            # 3. the incident: the disk saturates and TTFT goes above 500ms on the same host
            with machine.lock:
                machine.slow_ttft, machine.disk_busy = True, 0.95
            wait_for(
                f"{DIAGNOSIS} firing at oncall and storage",
                both(
                    delivered("oncall", DIAGNOSIS, "firing"),
                    delivered("storage", DIAGNOSIS, "firing"),
                ),
                sink,
                servers,
            )
            for d in of(sink.snapshot(), DIAGNOSIS):
                expected = {
                    "host": HOST,  # both exporters' instances, without their ports
                    "model_name": "m1",
                    "diagnosis": "ttft_disk_bound",
                    "severity": "critical",
                    "service": "llm",
                    "team": "storage",
                }
                assert expected.items() <= d.labels.items(), d
                assert "instance" not in d.labels, d

            # the symptoms fire in Prometheus but are held back by Alertmanager
            end = time.monotonic() + DEADLINE
            while set(SYMPTOMS) - firing_in_prometheus(prom_port):
                assert time.monotonic() < end, f"symptoms never fired\n{servers.report()}"
                time.sleep(0.5)
            time.sleep(4)  # several group intervals: time enough to deliver them
            held = [d for d in sink.snapshot() if d.labels.get("alertname") in SYMPTOMS]
            assert held == [], f"symptoms delivered while {DIAGNOSIS} fires:\n{held}"

            # 4. the disk recovers: the diagnosis resolves; TTFT, still slow, now pages alone
            with machine.lock:
                machine.disk_busy = 0.05
            wait_for(
                f"{DIAGNOSIS} resolved at oncall and storage, {SYMPTOMS[0]} firing at oncall",
                both(
                    delivered("oncall", DIAGNOSIS, "resolved"),
                    delivered("storage", DIAGNOSIS, "resolved"),
                    delivered("oncall", SYMPTOMS[0], "firing"),
                ),
                sink,
                servers,
            )
            symptom = of(sink.snapshot(), SYMPTOMS[0])[0]
            assert symptom.labels.get("host") == HOST, symptom

            # 5. TTFT recovers too
            with machine.lock:
                machine.slow_ttft = False
            wait_for(
                f"{SYMPTOMS[0]} resolved at oncall",
                delivered("oncall", SYMPTOMS[0], "resolved"),
                sink,
                servers,
            )
        finally:
            servers.stop()
