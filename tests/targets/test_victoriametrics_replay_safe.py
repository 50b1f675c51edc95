"""``targets.victoriametrics.replay_safe``: SLO alerts that vmalert's replay mode takes.

Why: vmalert 1.79 (Debian bookworm) refuses to replay a rule file whose annotations call the
``query`` template function, which the SLO alerts' descriptions use to list the firing tiers
and the budget left; 1.145 replays them. With ``replay_safe: true`` the VictoriaMetrics file's
SLO alerts describe themselves without ``query``, so a new deployment replays its whole
file (recordings and alerts, the ``ALERTS`` history included). Here, on the vmalert in use:
the default file is refused by 1.79 (and replayed by 1.145), the replay-safe file is
replayed by both and writes the page's ``ALERTS`` series for an outage in the data.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
import yaml
from conftest import run_rulegen, write_tree
from support.prometheus import HOST, free_port
from test_victoriametrics_e2e import (
    Servers,
    chained_delay,
    export,
    import_lines,
    replay,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (shutil.which("vmalert") and shutil.which("victoria-metrics")),
        reason="needs vmalert and victoria-metrics (Debian victoria-metrics)",
    ),
]

SPEC = """\
version: 1
service: shop
evaluation_interval: 30s
scrape_interval: 30s
targets:
  victoriametrics: {{max_query_len: 1048576, replay_safe: {safe}}}
slos:
  - name: checkout
    objective: 99.9%
    window: 1d
    sli:
      ratio: {{errors: 'checkout_total{{code="500"}}', total: checkout_total}}
    alerting: {{name: CheckoutBudgetBurn}}
    tiers:
      - {{long: 1h, short: 5m, budget: 2%, alert: page}}
"""
PER_STEP = 600  # checkouts per 30 s; all fail in the last 10 minutes


def _vm_file(root: Path, safe: bool) -> Path:
    write_tree(root, {"specs/shop.yaml": SPEC.format(safe=str(safe).lower())})
    built = run_rulegen("build", "--no-validate", "--target", "victoriametrics", cwd=root)
    assert built.code == 0, built.err
    return root / "rules/victoriametrics/shop.rules.yml"


def _start_vm(servers: Servers, root: Path) -> str:
    port = free_port()
    servers.start("victoria-metrics", [
        "victoria-metrics", f"-storageDataPath={root / 'vm'}", "-retentionPeriod=100y",
        f"-httpListenAddr={HOST}:{port}", "-search.disableCache",
        "-search.maxQueryLen=1048576", "-loggerLevel=ERROR",
    ])  # fmt: skip
    vm = f"http://{HOST}:{port}"
    servers.wait_ready(f"{vm}/health")
    return vm


def _checkouts(start: int, end: int, outage: int) -> list[str]:
    lines, ok, failed = [], 0, 0
    for at in range(start, end + 1, 30):
        if at >= outage:
            failed += PER_STEP
        else:
            ok += PER_STEP
        lines.append(f'checkout_total{{code="200"}} {ok} {at * 1000}')
        lines.append(f'checkout_total{{code="500"}} {failed} {at * 1000}')
    return lines


def test_the_replay_safe_file_replays_its_alerts(tmp_path: Path) -> None:
    servers = Servers(tmp_path)  # the processes this test starts, stopped at its end
    try:
        _replays(servers, tmp_path)
    finally:
        servers.stop()


def _replays(servers: Servers, tmp_path: Path) -> None:
    safe, default = _vm_file(tmp_path / "safe", True), _vm_file(tmp_path / "default", False)
    assert "query" not in safe.read_text()
    assert "with query" in default.read_text()
    # the recordings and everything but the alerts' descriptions are the same bytes
    groups = [yaml.safe_load(p.read_text())["groups"] for p in (safe, default)]
    for group in groups:
        for rule in group[0]["rules"]:
            rule.get("annotations", {}).pop("description", None)
    assert groups[0] == groups[1]

    vm = _start_vm(servers, tmp_path)
    now = int(time.time())
    end = now - now % 60 - 60
    import_lines(vm, _checkouts(end - 5400, end, end - 600))
    replay(servers, vm, {safe: (end - 1200, end)}, delay="1s")
    fired = export(vm, 'ALERTS{alertname="CheckoutBudgetBurn", alertstate="firing"}')
    assert fired, servers.report()
    assert fired[0]["metric"]["severity"] == "critical"

    newer = chained_delay() == "3s"  # vmalert 1.145 (1.79 lacks the flag it is told by)
    if newer:
        replay(servers, vm, {default: (end - 1200, end)}, delay="1s")
    else:
        with pytest.raises(AssertionError, match="failed"):
            replay(servers, vm, {default: (end - 1200, end)}, delay="1s")
        log = (tmp_path / f"replay-{default.stem}.log").read_text()
        assert "query" in log, log
