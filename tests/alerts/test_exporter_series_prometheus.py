"""The node and DCGM signals of the catalog on what their exporters really expose, scraped by
a real Prometheus: every series an alert reads exists.

- node_exporter: a real one (1.11 fetched with the 3.5 LTS tools, or the system's) with its
  default collectors, on this machine's devices. What a node alert reads depends on the host
  (an idle disk has no await, a NIC of unknown speed no saturation), so the proof is that
  every raw series its expression selects is exported; PSI is left out where the kernel has
  none (no /proc/pressure).
- dcgm-exporter: its default counter set on two A100s (``tests/fixtures/dcgm/default.prom``,
  built from the exporter's ``etc/default-counters.csv`` and metric templates, counters
  growing with every scrape): every alert's quantity returns a series for each GPU.

The vLLM signals have the same proof per release: ``test_vllm_releases_prometheus.py``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
import yaml
from conftest import REPO, run_rulegen, write_tree
from support.exposition import serving
from support.node_exporter import NEEDS_NODE_EXPORTER, node_exporter
from support.prometheus import NEEDS_PROMETHEUS, PrometheusServer

from rulegen.catalog import load_catalog
from rulegen.core import promql

pytestmark = [pytest.mark.slow, NEEDS_PROMETHEUS, NEEDS_NODE_EXPORTER]

DCGM_FIXTURE = REPO / "tests" / "fixtures" / "dcgm" / "default.prom"
CATALOG = load_catalog([REPO / "signals"])
THRESHOLDS = {"duration": "1s", "percent": "50%", "number": "0", "bandwidth": "1Gbps"}
HAS_PSI = Path("/proc/pressure/io").exists()
# The PSI signals read what the kernel's /proc/pressure holds: nothing without it.
PSI = ("io_pressure", "cpu_pressure", "memory_pressure")


def _signals(family: str) -> list[str]:
    return sorted(n for n, s in CATALOG.signals.items() if s.family == family)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusServer]:
    """Prometheus scraping a real node_exporter (job node) and the DCGM fixture (job dcgm)
    every second, after 15 s of scrapes."""
    root = tmp_path_factory.mktemp("exporters")
    with ExitStack() as stack:
        node = stack.enter_context(node_exporter(root))
        dcgm = stack.enter_context(serving(DCGM_FIXTURE.read_text()))
        jobs = [
            {"job_name": name, "scrape_interval": "1s", "static_configs": [{"targets": [t]}]}
            for name, t in (("node", node), ("dcgm", dcgm))
        ]
        prometheus = PrometheusServer(root / "data", root, interval=1, scrape_configs=jobs)
        prometheus.start()
        stack.callback(prometheus.stop)
        deadline = time.monotonic() + 60
        while True:
            up = prometheus.query("count_over_time(up[1m]) >= 15", time.time())["result"]
            if len(up) == 2:
                break
            assert time.monotonic() < deadline, f"the exporters were not scraped: {prometheus.log}"
            time.sleep(1)
        yield prometheus


def _built(tmp_path: Path, family: str, names: list[str]) -> dict[str, str]:
    """Each alert's quantity (its recording's expression, or its own without the threshold),
    from a spec with one alert per signal, built by ``rulegen build --no-validate``."""
    alerts = [
        {"signal": n, "severity": "warning",
         "threshold": THRESHOLDS[CATALOG.signals[n].threshold.unit]}
        for n in names
    ]  # fmt: skip
    spec = {
        "version": 1, "service": "host", "evaluation_interval": "15s",
        "selectors": {"node": 'job="node"', "dcgm": 'job="dcgm"'}, "alerts": alerts,
    }  # fmt: skip
    write_tree(tmp_path, {f"specs/{family}.yaml": yaml.safe_dump(spec, sort_keys=False)})
    (tmp_path / "signals").mkdir(exist_ok=True)
    for own in (REPO / "signals").glob("*.yaml"):
        (tmp_path / "signals" / own.name).write_text(own.read_text())
    result = run_rulegen("build", "--no-validate", cwd=tmp_path)
    assert result.code == 0, result.err
    groups = yaml.safe_load((tmp_path / "rules/prometheus/host.rules.yml").read_text())["groups"]
    rules = [r for g in groups for r in g["rules"]]
    recorded = {r["record"]: r["expr"] for r in rules if "record" in r}
    out = {}
    for rule in rules:
        if "alert" not in rule:
            continue
        quantity = re.sub(r"\s*[<>]=? [-+0-9.e()/ ]+$", "", rule["expr"].strip())
        name = re.fullmatch(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\{[^}]*\}", quantity)
        known = name is not None and name.group(1) in recorded
        out[rule["alert"]] = recorded[name.group(1)] if name and known else quantity
    return out


def _missing(prometheus: PrometheusServer, expr: str) -> list[str]:
    """The raw series selectors of ``expr`` with no series on the server over the last minute."""
    now = time.time()
    return [
        text
        for _, text in promql.selectors(expr)
        if not prometheus.query(f"count(last_over_time({text}[1m]))", now)["result"]
    ]


def test_every_series_a_node_alert_reads_is_exported(
    server: PrometheusServer, tmp_path: Path
) -> None:
    names = [n for n in _signals("node") if HAS_PSI or n not in PSI]
    quantities = _built(tmp_path, "node", names)
    missing = {
        alert: gone for alert, expr in quantities.items() if (gone := _missing(server, expr))
    }
    assert not missing, f"selectors with no series on a real node_exporter: {missing}"
    assert len(quantities) == len(names)


def test_every_dcgm_alert_returns_a_series_per_gpu(
    server: PrometheusServer, tmp_path: Path
) -> None:
    names = _signals("dcgm")
    quantities = _built(tmp_path, "dcgm", names)
    assert len(quantities) == len(names)
    per_alert = {}
    for alert, expr in quantities.items():
        result = server.query(expr, time.time())["result"]
        per_alert[alert] = sorted({r["metric"].get("gpu", "?") for r in result})
    # gpu_underutilized is a mean over the host's GPUs: one series, no gpu label
    wanted = {a: ["0", "1"] for a in per_alert} | {"GpuUnderutilized": ["?"]}
    assert per_alert == wanted
