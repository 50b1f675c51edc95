"""The VictoriaMetrics target end to end on a real victoria-metrics: the example's threshold
alerts replayed over their generated tests' series; then 31 days of imported counters,
vmalert replaying rulegen's SLO recordings over them and evaluating every group live,
notifying a real Alertmanager: the 30-day SLI of the cascade (replayed, then live) against the
exact errors/total of the data, a page within the Workbook detection time plus one evaluation
of a total outage, threshold alerts for their incident series only, a diagnosis' inhibition.

Why a small spec built here: the example's groups at their intervals would replay for
minutes; two SLOs on two counters (one for the 30-day SLI, replayed over 31 days at 30s; one
paging at 5s, replayed over its last hour) and one threshold alert prove the same rules in
about a minute.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, run_rulegen, write_tree
from support.prometheus import HOST, expand_values, free_port

from rulegen.alerts.testgen import build_tests
from rulegen.build import build, rule_groups
from rulegen.catalog import load_catalog
from rulegen.core import promql
from rulegen.generated import TestCase as Case
from rulegen.load import discover, load_one
from rulegen.output import dump_yaml
from rulegen.render.victoriametrics import long_queries, vmalert_groups, vmalert_rule_file

ALERTMANAGER = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (shutil.which("vmalert") and shutil.which("victoria-metrics") and ALERTMANAGER),
        reason="needs vmalert, victoria-metrics (Debian victoria-metrics) and alertmanager",
    ),
]

# A second service whose diagnosis explains its two threshold alerts on the same host, with
# the routing that turns that into an Alertmanager inhibition.
DIAGNOSED = """\
version: 1
service: infer
evaluation_interval: 5s
scrape_interval: 5s
selectors: {node: 'job="node"', vllm: 'job="vllm"'}
alerts:
  - {signal: ttft_latency, threshold: 500ms, for: 10s, severity: critical}
  - {signal: disk_utilization, threshold: 90%, for: 10s, severity: warning}
diagnoses:
  - {kind: ttft_disk_bound, ttft: 500ms, disk_utilization: 70%, for: 10s, window: 1m}
"""
ROUTING = """\
version: 1
routing:
  group_wait: 1s
  default_receiver: sink
  receivers:
    - name: sink
      webhook: {url: 'http://127.0.0.1:9/hook'}
"""
# The server's -search.maxQueryLen and the spec's max_query_len, raised together: every rule
# inlines its group's recordings fully, so the timing proved below is exact (some levels of
# this spec's 5s cascade are about 20 KB even before inlining: no default limit holds them).
MAX_QUERY_LEN = 1048576
SPEC = """\
version: 1
service: shop
evaluation_interval: 5s
scrape_interval: 5s
targets:
  victoriametrics: {max_query_len: 1048576}
alerts:
  - signal: custom
    name: CartTemperatureHigh
    expr: 'max by (instance) (cart_temperature) > 85'
    for: 10s
    severity: warning
slos:
  - name: sli                    # the 30-day SLI: replayed over 31 days at 30s
    objective: 99.9%
    evaluation_interval: 30s
    sli:
      ratio: {errors: 'orders_total{code="500"}', total: orders_total}
    tiers:
      - {long: 1h, short: 5m, budget: 2%, alert: page}
  - name: checkout               # pages within seconds of a total outage
    objective: 99.99%
    window: 1d
    evaluation_interval: 5s
    sli:
      ratio: {errors: 'checkout_total{code="500"}', total: checkout_total}
    alerting: {name: CheckoutBudgetBurn}
    tiers:
      - {long: 1h, short: 5m, budget: 2%, alert: page}
"""
DAY = 86400
PER_MINUTE = 2000  # orders per minute; errors: 1 a minute, more on the bad days
CHECKOUT_PER_5S = 50
CHECKOUT_RATIO = '{__name__=~"slo:sli_error:ratio_rate.*", slo="checkout"}'


@dataclass
class Servers:
    """The processes this test started (stopped by it), and their logs."""

    root: Path
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    batches: list[subprocess.Popen[bytes]] = field(default_factory=list)  # run to their end

    def start(self, name: str, argv: list[str]) -> None:
        with (self.root / f"{name}.log").open("wb") as log:
            self.procs[name] = subprocess.Popen(
                argv, cwd=self.root, stdout=log, stderr=subprocess.STDOUT
            )

    def run(self, commands: dict[str, list[str]], timeout: int = 300) -> None:
        """Run commands side by side to their end; each must succeed."""
        procs = {}
        for name, argv in commands.items():
            with (self.root / f"{name}.log").open("wb") as log:
                procs[name] = subprocess.Popen(
                    argv, cwd=self.root, stdout=log, stderr=subprocess.STDOUT
                )
        self.batches.extend(procs.values())
        for name, proc in procs.items():
            assert proc.wait(timeout=timeout) == 0, f"{name} failed\n{self.report()}"

    def stop(self) -> None:
        for proc in [*self.procs.values(), *self.batches]:
            if proc.poll() is None:
                proc.terminate()
        for proc in [*self.procs.values(), *self.batches]:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def report(self) -> str:
        return "\n".join(
            f"--- {log.name} ---\n{log.read_text(errors='replace')[-3000:]}"
            for log in sorted(self.root.glob("*.log"))
        )

    def wait_ready(self, url: str, deadline: float = 30) -> None:
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            for name, proc in self.procs.items():
                assert proc.poll() is None, f"{name} exited\n{self.report()}"
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.2)
        pytest.fail(f"{url} not ready\n{self.report()}")


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as response:
        body = json.load(response)
    assert isinstance(body, (dict, list)), body
    return body


def query(vm: str, expr: str, at: int) -> list[dict[str, Any]]:
    params = urllib.parse.urlencode({"query": expr, "time": str(at), "nocache": "1"})
    body = get_json(f"{vm}/api/v1/query?{params}")
    assert body.get("status") == "success", body
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


def import_lines(vm: str, lines: list[str]) -> None:
    """Samples in Prometheus' text format with millisecond timestamps, searchable on return."""
    request = urllib.request.Request(
        f"{vm}/api/v1/import/prometheus", data="\n".join(lines).encode(), method="POST"
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        assert response.status == 204
    flush(vm)


def flush(vm: str) -> None:
    """Make what VictoriaMetrics took searchable now: it buffers ingested rows for a while
    (1.145 for longer than 1.79: a replay right after an import read part of them)."""
    with urllib.request.urlopen(f"{vm}/internal/force_flush", timeout=60) as response:
        assert response.status == 200


def export(vm: str, selector: str) -> list[dict[str, Any]]:
    params = urllib.parse.urlencode({"match[]": selector})
    with urllib.request.urlopen(f"{vm}/api/v1/export?{params}", timeout=30) as response:
        return [json.loads(line) for line in response.read().decode().splitlines() if line]


def errors_per_minute(minute: int, start: int) -> int:
    """Orders failing in the minute starting ``minute`` (Unix seconds): 1, but 40 in the
    first hour of days 5 to 25 (a bad hour a day), never on the first or last two days."""
    day, second = divmod(minute - start, DAY)
    return 40 if 5 <= day <= 25 and second < 3600 else 1


@pytest.fixture
def rules(tmp_path: Path) -> dict[str, Path]:
    """The spec's vmalert file, one file per group (as a fleet shards them)."""
    spec = tmp_path / "shop.yaml"
    spec.write_text(SPEC)
    catalog = load_catalog()
    loaded = load_one(catalog, spec)
    assert loaded.resolved is not None, (loaded.problems, loaded.resolve_problems)
    limit = loaded.resolved.targets.victoriametrics.max_query_len
    assert limit == MAX_QUERY_LEN
    # the groups `rulegen build --target victoriametrics` writes (the SLOs' increase() form)
    (service,) = build(discover([spec]), catalog).services
    data = vmalert_rule_file(vmalert_groups(service), max_query_len=limit)
    assert not long_queries(data, MAX_QUERY_LEN)
    assert not [r for g in data["groups"] for r in g["rules"] if "stored series" in r["expr"]]
    out = {}
    for group in data["groups"]:
        path = tmp_path / f"{group['name']}.rules.yml"
        path.write_text(dump_yaml({"groups": [group]}, "shop.yaml"))
        out[group["name"]] = path
        # vmalert's replay refuses alerts whose annotations call `query` (docs/victoriametrics.md):
        # a new deployment replays its recordings only
        recordings = {**group, "rules": [r for r in group["rules"] if "record" in r]}
        replay = tmp_path / f"{group['name']}.replay.yml"
        replay.write_text(dump_yaml({"groups": [recordings]}, "shop.yaml"))
        out[f"{group['name']}.replay"] = replay
    assert sorted(out) == [
        "shop-custom", "shop-custom.replay", "shop-slo-checkout", "shop-slo-checkout.replay",
        "shop-slo-sli", "shop-slo-sli.replay",
    ]  # fmt: skip
    # the diagnosed service through `rulegen build`: its vmalert file and alertmanager.yml
    write_tree(
        tmp_path / "diagnosed", {"specs/infer.yaml": DIAGNOSED, "specs/routing.yaml": ROUTING}
    )
    built = run_rulegen(
        "build", "--no-validate", "--target", "victoriametrics", cwd=tmp_path / "diagnosed"
    )
    assert built.code == 0, built.err
    out["infer"] = tmp_path / "diagnosed/rules/victoriametrics/infer.rules.yml"
    out["alertmanager.yml"] = tmp_path / "diagnosed/rules/alertmanager/alertmanager.yml"
    return out


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[Servers]:
    running = Servers(tmp_path)
    try:
        yield running
    finally:
        running.stop()


def start_servers(servers: Servers, tmp_path: Path, config: Path) -> tuple[str, str]:
    """victoria-metrics (a temporary data directory) and Alertmanager (``config``, rulegen's
    alertmanager.yml): their URLs."""
    vm_port, am_port = free_port(), free_port()
    servers.start("victoria-metrics", [
        "victoria-metrics", f"-storageDataPath={tmp_path / 'vm'}", "-retentionPeriod=100y",
        f"-httpListenAddr={HOST}:{vm_port}", "-search.disableCache",
        "-search.maxPointsPerTimeseries=200000", f"-search.maxQueryLen={MAX_QUERY_LEN}",
        "-loggerLevel=ERROR",
    ])  # fmt: skip
    servers.start("alertmanager", [
        str(ALERTMANAGER), f"--config.file={config}",
        f"--storage.path={tmp_path / 'am'}", f"--web.listen-address={HOST}:{am_port}",
        "--cluster.listen-address=",
    ])  # fmt: skip
    vm, am = f"http://{HOST}:{vm_port}", f"http://{HOST}:{am_port}"
    servers.wait_ready(f"{vm}/health")
    servers.wait_ready(f"{am}/-/ready")
    return vm, am


def orders(start: int, until: int) -> tuple[list[str], dict[int, tuple[int, int]]]:
    """Order counters at 1m from ``start`` to ``until``, and for each minute the cumulative
    (errors, total) at its end."""
    lines = []
    ok = failed = 0
    totals: dict[int, tuple[int, int]] = {}
    for minute in range(start, until, 60):
        errors = errors_per_minute(minute, start)
        failed += errors
        ok += PER_MINUTE - errors
        totals[minute + 60] = (failed, failed + ok)
        lines.append(f'orders_total{{code="500"}} {failed} {(minute + 60) * 1000}')
        lines.append(f'orders_total{{code="200"}} {ok} {(minute + 60) * 1000}')
    return lines, totals


@dataclass
class Checkouts:
    """Checkout counters at 5s; each call goes on from where the last one stopped."""

    counts: dict[str, int] = field(default_factory=lambda: {"200": 0, "500": 0})

    def lines(self, first: int, last: int, code: str) -> list[str]:
        out = []
        for at in range(first, last, 5):
            self.counts[code] += CHECKOUT_PER_5S
            out += [f'checkout_total{{code="{c}"}} {n} {at * 1000}' for c, n in self.counts.items()]
        return out


def incident(first: int, last: int) -> list[str]:
    """Every 5s: cart a hot (90), cart b fine (80); on host h1, every request's first token
    between 0.5s and 1s while its NVMe disk is busy all the time; host h2 fine."""
    out = []
    for step, at in enumerate(range(first, last, 5)):
        ms = at * 1000
        out.append(f'cart_temperature{{instance="a"}} 90 {ms}')
        out.append(f'cart_temperature{{instance="b"}} 80 {ms}')
        for host, slow, busy in (("h1", 10 * step, 5 * step), ("h2", 0, step)):
            for le, count in (("0.5", 10 * step - slow), ("1", 10 * step), ("+Inf", 10 * step)):
                out.append(
                    f'vllm:time_to_first_token_seconds_bucket{{instance="{host}:8000",'
                    f'job="vllm",le="{le}",model_name="m"}} {count} {ms}'
                )
            out.append(
                f'node_disk_io_time_seconds_total{{device="nvme0n1",instance="{host}:9100",'
                f'job="node"}} {busy} {ms}'
            )
    return out


def iso(at: int) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def chained_delay() -> str:
    """``-replay.rulesDelay`` for rules that read the recordings written before them: longer
    than VictoriaMetrics takes to make written samples searchable, about 1s on 1.79, up to
    about 2.5s on 1.145 (docs/victoriametrics.md). Debian's builds print no version: the
    newer replay is told by a flag 1.79 lacks."""
    help_text = subprocess.run(["vmalert", "-help"], capture_output=True, text=True, check=False)
    newer = "-replay.ruleEvaluationConcurrency" in help_text.stdout + help_text.stderr
    return "3s" if newer else "1s"


def replay(
    servers: Servers, vm: str, ranges: dict[Path, tuple[int, int]], delay: str | None = None
) -> None:
    """vmalert's replay mode on each file over its range, side by side; ``delay`` between
    rules (what a rule reading another's recordings at an offset needs)."""
    common = [
        "vmalert", f"-datasource.url={vm}", f"-remoteWrite.url={vm}",
        "-replay.disableProgressBar", "-replay.maxDatapointsPerQuery=100000",
        "-remoteWrite.maxQueueSize=10000000",
        f"-replay.rulesDelay={delay or chained_delay()}", "-remoteWrite.flushInterval=100ms",
        "-loggerLevel=WARN",
        "-datasource.queryStep=0s",
    ]  # fmt: skip
    servers.run({
        f"replay-{path.stem}": [
            *common, f"-httpListenAddr={HOST}:{free_port()}", f"-rule={path}",
            f"-replay.timeFrom={iso(first)}", f"-replay.timeTo={iso(last)}",
        ]
        for path, (first, last) in ranges.items()
    })  # fmt: skip
    time.sleep(0.5)  # the last remote write (-remoteWrite.flushInterval) landed
    flush(vm)


def firing(am: str) -> dict[str, list[dict[str, Any]]]:
    """The alerts Alertmanager holds (inhibited ones too), by name."""
    out: dict[str, list[dict[str, Any]]] = {}
    for alert in get_json(f"{am}/api/v2/alerts"):
        out.setdefault(alert["labels"]["alertname"], []).append(alert)
    return out


def first_sample(vm: str, selector: str, after: float, wait: float) -> tuple[float, float] | None:
    """The first sample (time, value) of ``selector`` after ``after``, polled for ``wait`` s."""
    end_of_wait = time.monotonic() + wait
    while True:
        samples = sorted(
            (t / 1000, float(v))
            for series in export(vm, selector)
            for t, v in zip(series["timestamps"], series["values"], strict=True)
            if t / 1000 > after and v is not None  # null: a staleness marker
        )
        if samples or time.monotonic() > end_of_wait:
            return samples[0] if samples else None
        time.sleep(0.5)


def exact_sli(totals: dict[int, tuple[int, int]], at: int) -> Fraction:
    """Errors / total of the imported orders over the 30 days before ``at`` (their samples
    are at whole minutes: the last one at or before each end counts)."""
    now, then = totals[at - at % 60], totals[at - 30 * DAY - at % 60]
    return Fraction(now[0] - then[0], now[1] - then[1])


SLI = 'slo:sli_error:ratio_rate30d{service="shop", slo="sli"}'


def test_rulegen_rules_replay_and_alert_on_a_real_victoriametrics(
    tmp_path: Path, rules: dict[str, Path], servers: Servers
) -> None:
    began = time.monotonic()
    vm, am = start_servers(servers, tmp_path, rules["alertmanager.yml"])
    # --- history: 31 days of orders at 1m, 2 hours of checkouts at 5s ------------------------
    now = int(time.time())
    end = now - now % 60 - 60  # the last whole minute of history: replay ends there
    start = end - 31 * DAY
    lines, totals = orders(start, now + 900)
    checkouts = Checkouts()
    history_end = now - now % 5
    lines += checkouts.lines(history_end - 2 * 3600, history_end + 5, "200")
    lines += incident(now - 600, now + 900)
    import_lines(vm, lines)

    # --- replay: the SLO recordings of a new deployment ---------------------------------------
    replay(servers, vm, {
        rules["shop-slo-sli.replay"]: (start, end),
        rules["shop-slo-checkout.replay"]: (history_end - 3600, history_end),
    })  # fmt: skip
    replayed_after = time.monotonic() - began
    ratios = query(vm, CHECKOUT_RATIO, history_end)  # before the outage: no errors
    assert {r["metric"]["__name__"] for r in ratios} == {
        "slo:sli_error:ratio_rate5m", "slo:sli_error:ratio_rate1h", "slo:sli_error:ratio_rate1d",
    }, ratios  # fmt: skip
    assert {float(r["value"][1]) for r in ratios} == {0.0}
    replayed = query(vm, SLI, end)
    assert len(replayed) == 1, replayed
    assert float(replayed[0]["value"][1]) == pytest.approx(float(exact_sli(totals, end)), rel=1e-9)

    # --- live: vmalert on every group, notifying a real Alertmanager ---------------------------
    # checkouts go on until a total outage a few seconds from now (the live vmalert sees it
    # begin: VictoriaMetrics answers no sample from after the query time)
    live_now = int(time.time())
    outage = live_now - live_now % 5 + 15
    import_lines(vm, [
        *checkouts.lines(history_end + 5, outage, "200"),
        *checkouts.lines(outage, outage + 300, "500"),
    ])  # fmt: skip
    live_port = free_port()
    servers.start("vmalert", [
        "vmalert",
        *(f"-rule={path}" for name, path in rules.items() if path.name.endswith(".rules.yml")),
        f"-datasource.url={vm}", f"-remoteWrite.url={vm}", f"-notifier.url={am}",
        f"-httpListenAddr={HOST}:{live_port}", "-remoteWrite.flushInterval=100ms",
    ])  # fmt: skip
    servers.wait_ready(f"http://{HOST}:{live_port}/health")

    workbook = 0.02 * DAY * (1 - 0.9999)  # 2% of a 1-day budget at 100% errors: 0.17s
    deadline = time.monotonic() + (outage - time.time()) + workbook + 40
    expected = {"CheckoutBudgetBurn", "CartTemperatureHigh", "TTFTDiskBound", "TTFTLatencyHigh",
                "DiskUtilizationHigh"}  # fmt: skip
    seen = firing(am)
    while time.monotonic() < deadline and not expected <= set(seen):
        time.sleep(0.5)
        seen = firing(am)
    assert expected <= set(seen), f"{sorted(seen)}\n{servers.report()}"
    # the threshold alerts fire for their incident series only
    assert [a["labels"]["instance"] for a in seen["CartTemperatureHigh"]] == ["a"]
    assert [a["labels"]["instance"] for a in seen["DiskUtilizationHigh"]] == ["h1:9100"]
    assert [a["labels"]["instance"] for a in seen["TTFTLatencyHigh"]] == ["h1:8000"]
    # `for: 10s` as in Prometheus: firing at the first evaluation at least 10s after the first
    # active one
    pending, fired_cart = (
        first_sample(vm, f'ALERTS{{alertname="CartTemperatureHigh",alertstate="{state}"}}', 0, 15)
        for state in ("pending", "firing")
    )
    assert pending is not None
    assert fired_cart is not None
    # (10s on a quiet machine; a late evaluation tick can push it to the next one, as in
    # Prometheus)
    assert 9.5 <= fired_cart[0] - pending[0] < 15 + 1, (pending, fired_cart)
    # the diagnosis names host h1, and Alertmanager holds back the two alerts it explains
    assert [a["labels"]["host"] for a in seen["TTFTDiskBound"]] == ["h1"]
    diagnosis = seen["TTFTDiskBound"][0]["fingerprint"]
    for name in ("TTFTLatencyHigh", "DiskUtilizationHigh"):
        status = seen[name][0]["status"]
        assert (status["state"], status["inhibitedBy"]) == ("suppressed", [diagnosis]), seen[name]
    assert seen["TTFTDiskBound"][0]["status"]["state"] == "active"

    # when the page fired, from vmalert's own ALERTS series (evaluation timestamps)
    fired = first_sample(
        vm, 'ALERTS{alertname="CheckoutBudgetBurn",alertstate="firing"}', outage - 60, 15
    )
    assert fired is not None, servers.report()
    figures = {
        "detection_seconds": fired[0] - outage, "workbook_seconds": workbook,
        "replayed_after_seconds": replayed_after, "paged_after_seconds": time.monotonic() - began,
    }  # fmt: skip
    assert 0 <= fired[0] - outage <= workbook + 5, figures  # Workbook time + one evaluation

    # the live 30-day SLI reads the replayed recordings: the data's exact errors/total
    live = first_sample(vm, SLI, end, 75)
    assert live is not None, f"the live vmalert wrote no 30-day SLI\n{servers.report()}"
    exact_live = exact_sli(totals, int(live[0]))
    figures |= {"live_sli": live[1], "exact": float(exact_live), "at": live[0] - end,
                "sli_after_seconds": time.monotonic() - began}  # fmt: skip
    (tmp_path / "figures.json").write_text(json.dumps(figures))
    assert live[1] == pytest.approx(float(exact_live), rel=0.005), figures
    assert exact_live == exact_sli(totals, end)  # first and last days alike: the same SLI
    assert live[1] == pytest.approx(float(replayed[0]["value"][1]), rel=1e-9), figures


# --- the example's threshold alerts ---------------------------------------------------------

SLOT = 3 * 3600  # each generated test case's series in a time slot of its own
FAMILY_GROUPS = ("node", "vllm", "dcgm", "grpc", "smartctl", "weights", "custom")


LabelSets = dict[int, dict[str, set[frozenset[tuple[str, str]]]]]  # slot → alert → label sets


def slotted_series(cases: Sequence[Case], origin: int) -> tuple[list[str], LabelSets]:
    """Each test case's series in its slot (import lines), and the label sets each alert of
    the case must fire for (its alert checks' expected alerts)."""
    lines: list[str] = []
    expected: LabelSets = {}
    for slot, case in enumerate(cases):
        start, step = origin + slot * SLOT, int(case.interval_seconds)
        for series in case.series:
            name, matchers = promql.parse_selector(series.series)
            labels = ",".join(f"{m.name}={promql.quote(m.value)}" for m in matchers)
            for index, value in enumerate(expand_values(series.values)):
                if value is not None:
                    lines.append(f"{name}{{{labels}}} {value!r} {(start + index * step) * 1000}")
        wanted = expected.setdefault(slot, {})
        for check in case.alert_checks:
            wanted.setdefault(check.alertname, set()).update(
                frozenset(alert.labels) for alert in check.alerts
            )
    return lines, expected


def fired_by_slot(vm: str, origin: int) -> LabelSets:
    """The label sets (without ``alertstate``/``alertgroup``) each alert fired for, by slot,
    from vmalert's ``ALERTS`` series."""
    fired: LabelSets = {}
    for exported in export(vm, 'ALERTS{alertstate="firing"}'):
        labels = dict(exported["metric"])
        for key in ("__name__", "alertstate", "alertgroup"):
            labels.pop(key, None)
        name = labels.pop("alertname")
        for t, v in zip(exported["timestamps"], exported["values"], strict=True):
            if v is not None:
                slot = (t // 1000 - origin) // SLOT
                fired.setdefault(slot, {}).setdefault(name, set()).add(frozenset(labels.items()))
    return fired


# (the case's alert, another alert) whose signals read the same series, where the case's
# series rightly fire the other: no cross-talk between cases, a shared metric.
SAME_SERIES = {
    # the forecast's "high but flat" scenario holds the KV cache at 99%, above the usage
    # alert's 95% (it shows the forecast stays silent where usage is high already)
    ("KVCacheFullSoon", "KVCacheUsageHigh"),
}


def test_example_threshold_alerts_fire_for_their_incident_series_only(
    tmp_path: Path, servers: Servers
) -> None:
    """Every generated test case of the example's threshold alerts, its series imported into a
    slot of its own, replayed by vmalert: each alert fires for the label sets its promtool
    test expects, in its slot, and for nothing else (the evaluation at which it fires is not
    compared: MetricsQL's rate() does not extrapolate)."""
    catalog = load_catalog([REPO / "signals"])
    spec = load_one(catalog, REPO / "specs" / "llm-serving.yaml").resolved
    assert spec is not None
    groups, _ = rule_groups(spec, catalog)
    chosen = [g for g in groups if g.name.removeprefix(f"{spec.service}-") in FAMILY_GROUPS]
    assert len(chosen) == len(FAMILY_GROUPS)
    path = tmp_path / "example.rules.yml"
    path.write_text(dump_yaml(vmalert_rule_file(chosen), "specs/llm-serving.yaml"))
    cases = build_tests(
        spec.alerts, spec.evaluation_interval, spec.scrape_interval, spec.host_label
    )
    assert len(cases) == 37

    vm_port = free_port()
    vm = f"http://{HOST}:{vm_port}"
    servers.start("victoria-metrics", [
        "victoria-metrics", f"-storageDataPath={tmp_path / 'vm'}", "-retentionPeriod=100y",
        f"-httpListenAddr={HOST}:{vm_port}", "-search.disableCache",
        "-search.maxPointsPerTimeseries=200000", "-loggerLevel=ERROR",
    ])  # fmt: skip
    servers.wait_ready(f"{vm}/health")
    now = int(time.time())
    origin = now - now % 3600 - len(cases) * SLOT - 3600
    lines, expected = slotted_series(cases, origin)
    import_lines(vm, lines)
    replay(servers, vm, {path: (origin, origin + len(cases) * SLOT)}, delay="100ms")

    fired = fired_by_slot(vm, origin)
    for slot, case in enumerate(cases):
        got = fired.get(slot, {})
        for name, wanted_sets in expected[slot].items():
            for wanted in wanted_sets:
                assert any(wanted <= found for found in got.get(name, ())), (
                    f"{case.name}: {name} did not fire for {sorted(wanted)}; fired: {got}"
                )
        for name, found_sets in got.items():
            if (case.name.split(":")[0], name) in SAME_SERIES:
                continue
            for found in found_sets:
                assert any(w <= found for w in expected[slot].get(name, ())), (
                    f"{case.name}: {name} fired for {sorted(found)}, which its test keeps silent"
                )
