"""The backtest agrees with promtool, step for step, on bursty series in a real Prometheus.

Two independent engines: ``rulegen backtest`` (range queries on a real ``prometheus`` holding
backfilled raw history, the recordings evaluated from it as if deployed, then rulegen's
replay of ``for``/``keep_firing_for``) and ``promtool test rules`` (Prometheus's own rule
manager, stepping through the same series). Hand-written series with bursts just shorter and
just longer than each alert's ``for``, lookback-bridged gaps and gaps past the lookback are
backfilled as raw series only (OpenMetrics blocks, ``tests/support/prometheus.py``: no
recording is on the server); the backtest's JSON says which label sets fire at every
evaluation; a promtool test file with the *same* series expects exactly those alerts
(labels and annotations) at every one of the 360 evaluations, and must pass. Perturbing the
backtest's answer by one step must make promtool fail.

Why: ``for`` boundaries are where a replay goes wrong (``>=`` vs ``>``, the first evaluation,
the lead-in before ``--from``); only an engine we did not write can say we got them right.
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import struct
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml
from conftest import (
    ON_PROMETHEUS_2,
    for_stack,
    promtool_test,
    run_rulegen,
)
from support.prometheus import (
    NEEDS_PROMETHEUS,
    backfill_recordings,
    create_blocks_from_openmetrics,
    openmetrics,
    recording_levels,
    running,
)

from rulegen import gotemplate
from rulegen.backtest import command, report, session
from rulegen.backtest.query import Client, grid
from rulegen.backtest.targets import Target
from rulegen.build import BuildResult, build
from rulegen.catalog import Catalog, load_catalog
from rulegen.generated import AlertRule
from rulegen.load import discover

T0 = 1767225600  # 2026-01-01T00:00:00Z, a multiple of the step
STEP = 15
N = 360  # evaluations: 90 minutes
END = T0 + (N - 1) * STEP
# the evaluations a last sample is still read after the lookback of the ones after it: on
# 2.x the lookback ``[t - 5m, t]`` still reads a sample 5m old, 3.x's ``(t - 5m, t]`` not
HELD = 1 if ON_PROMETHEUS_2 else 0
FROM_RFC3339 = "2026-01-01T00:00:00Z"

pytestmark = [pytest.mark.slow, NEEDS_PROMETHEUS]

SPEC = """\
version: 1
service: bt
labels: {team: infra}
evaluation_interval: 15s
scrape_interval: 15s
selectors:
  node: 'job="node"'
  vllm: 'job="vllm"'
alerts:
  - signal: disk_utilization     # a recording (rate1m) read by the alert
    threshold: 90%
    for: 30s
    severity: warning
    summary: '{value}'
    description: '{alert}'
  - signal: requests_waiting     # a raw gauge
    threshold: 10
    for: 1m
    severity: critical
    summary: '{value}'
    description: '{alert}'
  - signal: custom               # for not a multiple of the interval
    name: GpuHot
    expr: 'max by (instance) (DCGM_FI_DEV_GPU_TEMP{job="dcgm"}) > 85'
    for: 20s
    severity: info
    summary: '{value}'
    description: '{alert}'
  - signal: custom               # for 0, a `<` alert
    name: EngineIdle
    expr: 'vllm:num_requests_running{job="vllm"} < 1'
    severity: info
    summary: '{value}'
    description: '{alert}'
"""
# A second service on the same series: replayed from raw series like the first; with
# --recorded (the deployed recordings) it has none on the server.
UNDEPLOYED = """\
version: 1
service: undeployed
evaluation_interval: 15s
alerts:
  - signal: disk_utilization
    threshold: 90%
    for: 30s
    severity: warning
"""
# rulegen's model has no keep_firing_for; the replay does, proven on a hand-written rule.
KEEP = Target("KeptFiring", "keep", "keep_probe > 5", 30_000, 15_000, (("severity", "info"),),
              keep_firing_for_ms=45_000)  # fmt: skip
KEEP_RULES = """\
groups:
- name: keep
  interval: 15s
  rules:
  - alert: KeptFiring
    expr: keep_probe > 5
    for: 30s
    keep_firing_for: 45s
    labels: {severity: info}
"""


# --- the series ------------------------------------------------------------------------------

Values = list[float | None]


def seq(*parts: tuple[float | None, int]) -> Values:
    """``(value, count)`` runs, padded with the last value to ``N`` evaluations."""
    out: Values = [v for value, count in parts for v in [value] * count]
    assert len(out) <= N, len(out)
    return out + [out[-1]] * (N - len(out))


def counter(busy: Values) -> Values:
    """A node_exporter io_time counter: ``busy`` seconds per second in each scrape interval."""
    total = 0.0
    out: Values = []
    for fraction in busy:
        total += STEP * (fraction or 0.0)
        out.append(total)
    return out


IDLE = (0.0, 12)
HOVER = [(0.95, 3), (0.8, 2)] * 6
SERIES: dict[str, Values] = {
    # rate1m > 0.9 for 30s: bursts of 2..12 scrapes, a hover around the threshold, and a
    # burst still going at the end
    'node_disk_io_time_seconds_total{device="nvme0n1",instance="gpu-node-1:9100",job="node"}':
    counter(seq((0.0, 10), (1.0, 2), IDLE, (1.0, 3), IDLE, (1.0, 4), IDLE, (1.0, 5), IDLE,
                (1.0, 6), IDLE, (1.0, 8), IDLE, (1.0, 12), IDLE, *HOVER, (0.0, 150), (1.0, 20))),
    'node_disk_io_time_seconds_total{device="nvme1n1",instance="gpu-node-2:9100",job="node"}':
    counter(seq((0.5, 40), (0.97, 30), (0.2, 100), (0.92, 6), (0.0, 1))),
    # > 10 for 1m: 45s (never), exactly 60s (one evaluation), 75s, a 45s gap inside the
    # lookback (still firing), a gap past the 5m lookback (resolves), an episode at the end;
    # on node 2 a one-evaluation dip (a flap), 10 (not above), 10.5 for 45s (never)
    'vllm:num_requests_waiting{engine="0",instance="gpu-node-1:8000",job="vllm",model_name="m"}':
    seq((0.0, 8), (20.0, 4), (0.0, 6), (20.0, 5), (0.0, 6), (20.0, 6), (0.0, 6),
        (20.0, 3), (None, 3), (20.0, 3), (0.0, 6), (20.0, 8), (None, 25), (20.0, 10),
        (0.0, 100), (11.0, 20)),
    'vllm:num_requests_waiting{engine="0",instance="gpu-node-2:8000",job="vllm",model_name="m"}':
    seq((15.0, 30), (0.0, 1), (15.0, 8), (10.0, 20), (10.5, 4), (0.0, 1)),
    # max by instance > 85 for 20s: one GPU hot for 1, 2, 3 scrapes; two GPUs taking turns
    'DCGM_FI_DEV_GPU_TEMP{gpu="0",instance="gpu-node-1:9400",job="dcgm"}':
    seq((60.0, 10), (90.0, 1), (60.0, 10), (90.0, 2), (60.0, 10), (90.0, 3), (60.0, 10),
        (90.0, 2), (60.0, 10)),
    'DCGM_FI_DEV_GPU_TEMP{gpu="1",instance="gpu-node-1:9400",job="dcgm"}':
    seq((60.0, 48), (90.0, 2), (60.0, 1)),
    # < 1 for 0s: idle evaluations, alone and in runs, and a series that disappears
    'vllm:num_requests_running{engine="0",instance="gpu-node-1:8000",job="vllm",model_name="m"}':
    seq((3.0, 20), (0.0, 1), (3.0, 5), (0.0, 4), (2.0, 30), (0.5, 2), (None, 30), (0.0, 3),
        (4.0, 1)),
    # keep_firing_for 45s after for 30s: dips of 1, 2 and 3 evaluations
    'keep_probe{instance="p"}':
    seq((0.0, 5), (9.0, 4), (0.0, 1), (9.0, 3), (0.0, 2), (9.0, 1), (0.0, 3), (9.0, 4),
        (0.0, 4), (9.0, 2), (0.0, 4), (9.0, 3), (0.0, 10)),
}  # fmt: skip


def promtool_values(values: Values) -> str:
    return " ".join("_" if v is None else repr(v) for v in values)


# --- the server ------------------------------------------------------------------------------


@dataclass(frozen=True)
class History:
    url: str
    specs: Path
    rules: Path
    result: BuildResult
    catalog: Catalog


@contextmanager
def serving(tmp_path_factory: pytest.TempPathFactory, *, recordings: bool) -> Iterator[History]:
    """A Prometheus holding ``SERIES`` from ``T0`` (and with ``recordings`` the ``bt``
    service's recordings, backfilled level by level as if deployed)."""
    workdir = tmp_path_factory.mktemp("backtest")
    specs = workdir / "specs"
    specs.mkdir()
    (specs / "bt.yaml").write_text(for_stack(SPEC))
    (specs / "undeployed.yaml").write_text(for_stack(UNDEPLOYED))
    catalog = load_catalog([])
    result = build(discover([specs]), catalog)
    rules = workdir / "rules"
    rules.mkdir()
    (rules / "bt.rules.yml").write_text(result.files["prometheus/bt.rules.yml"])
    (rules / "keep.rules.yml").write_text(KEEP_RULES)
    source = workdir / "series.om"
    samples = [
        (name, [(T0 + i * STEP, v) for i, v in enumerate(values) if v is not None])
        for name, values in SERIES.items()
    ]
    source.write_text(openmetrics(samples))
    data = workdir / "data"
    create_blocks_from_openmetrics(source, data)
    with running(data, workdir, STEP) as server:
        if recordings:
            levels = recording_levels([rules / "bt.rules.yml"])
            backfill_recordings(server, levels, (T0, END + STEP), STEP, workdir)
        yield History(server.url, specs, rules, result, catalog)


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[History]:
    """A Prometheus holding the raw ``SERIES`` only: no rule was ever deployed there."""
    with serving(tmp_path_factory, recordings=False) as found:
        yield found


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[History]:
    """The same series, and the ``bt`` service's recordings as deployed rules wrote them."""
    with serving(tmp_path_factory, recordings=True) as found:
        yield found


def parse(*argv: str) -> argparse.Namespace:
    """The backtest's arguments, through its own subparser (as ``cli`` will call it)."""
    parser = argparse.ArgumentParser(prog="rulegen")
    command.add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["backtest", *argv])


def backtest(history: History, *argv: str) -> str:
    """``rulegen backtest`` in-process over the whole series; its stdout."""
    args = parse(str(history.specs), "--prometheus", history.url, "--from", FROM_RFC3339,
                 "--to", str(END), *argv)  # fmt: skip
    out = io.StringIO()
    assert command.run(args, history.catalog, out) == 0
    return out.getvalue()


@pytest.fixture(scope="module")
def rows(history: History) -> list[dict[str, Any]]:
    """The backtest's JSON for the specs, plus the hand-written keep_firing_for rule."""
    found: list[dict[str, Any]] = json.loads(backtest(history, "--format", "json"))
    client = Client(history.url)
    keep = session.backtest(client, KEEP, (T0 * 1000, END * 1000))
    return found + report.json_rows([keep])


# --- the proof -------------------------------------------------------------------------------


def ms(rfc3339: str) -> int:
    return command.parse_time(rfc3339, "test")


def firing_at(rows: Sequence[dict[str, Any]], alert: str, at: int) -> list[dict[str, str]]:
    """The label sets the backtest says ``alert`` is firing with at ``at`` (Unix ms)."""
    out = []
    for row in rows:
        if row["alert"] != alert:
            continue
        for episode in row["episodes"]:
            start = ms(episode["start"])
            end = ms(episode["end"]) if episode["end"] is not None else None
            if start <= at and (end is None or at < end):
                out.append(row["labels"])
    return out


def alert_rules(history: History) -> dict[str, AlertRule]:
    groups = [g for s in history.result.services for g in s.groups if g.name.startswith("bt-")]
    return {r.alert: r for g in groups for r in g.rules if isinstance(r, AlertRule)}


def expression_values(
    history: History,
) -> dict[str, dict[tuple[tuple[str, str], ...], dict[int, float]]]:
    """Each alert's expression value by alert label set and time (for the annotations)."""
    client = Client(history.url)
    span = (T0 * 1000, END * 1000)
    reports = session.replay_build(client, history.result, span)
    found = {r.target.alert: r.values for r in reports if r.target.group.startswith("bt-")}
    return found | {KEEP.alert: session.backtest(client, KEEP, span).values}


class _NoAliases(yaml.SafeDumper):
    """Write repeated label maps out in full (readable failures), not as ``*id001``."""

    def ignore_aliases(self, data: Any) -> bool:  # noqa: ARG002
        return True


def promtool_file(history: History, rows: Sequence[dict[str, Any]], path: Path) -> None:
    """A promtool test with ``SERIES`` from 0 that expects, at every evaluation, exactly the
    alerts ``rows`` say are firing (labels, and annotations expanded with the value)."""
    rules = alert_rules(history)
    values = expression_values(history)
    checks = []
    for alert in [*sorted(rules), KEEP.alert]:
        annotations = dict(rules[alert].annotations) if alert in rules else {}
        for step in range(N):
            at = (T0 + step * STEP) * 1000
            expected = []
            for labels in firing_at(rows, alert, at):
                samples = values[alert][tuple(sorted(labels.items()))]
                value = samples[max(t for t in samples if t <= at)]  # kept firing: the last
                expanded = {k: gotemplate.expand(v, labels, value) for k, v in annotations.items()}
                expected.append({"exp_labels": labels, "exp_annotations": expanded})
            checks.append(
                {"eval_time": f"{step * STEP}s", "alertname": alert, "exp_alerts": expected}
            )
    test = {
        "rule_files": ["bt.rules.yml", "keep.rules.yml"],
        "evaluation_interval": f"{STEP}s",
        "tests": [
            {
                "name": "backtest replay",
                "interval": f"{STEP}s",
                "input_series": [
                    {"series": name, "values": promtool_values(v)} for name, v in SERIES.items()
                ],
                "alert_rule_test": checks,
            }
        ],
    }
    for name in ("bt.rules.yml", "keep.rules.yml"):
        shutil.copy(history.rules / name, path.parent / name)
    path.write_text(yaml.dump(test, Dumper=_NoAliases, sort_keys=False, width=10_000))


def by_alert(row: dict[str, Any]) -> tuple[str, str]:
    return row["alert"], row["group"]


def spec_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if not r["group"].startswith("undeployed")]


def test_promtool_agrees_at_every_evaluation(
    history: History, rows: list[dict[str, Any]], tmp_path: Path
) -> None:
    path = tmp_path / "replay.test.yml"
    promtool_file(history, spec_rows(rows), path)
    checks = yaml.safe_load(path.read_text())["tests"][0]["alert_rule_test"]
    assert len(checks) == 5 * N
    firing = sum(len(c["exp_alerts"]) for c in checks)
    assert firing > 100  # the proof is not "nothing fires"
    proc = promtool_test(path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def episodes_of(
    rows: Sequence[dict[str, Any]], alert: str, **labels: str
) -> list[tuple[int, int | None]]:
    """``(start, duration in s or None)`` relative to T0, of the row matching the labels."""
    (row,) = [
        r for r in rows
        if r["alert"] == alert and all(r["labels"].get(k) == v for k, v in labels.items())
    ]  # fmt: skip
    out = []
    for e in row["episodes"]:
        start = ms(e["start"]) // 1000 - T0
        out.append((start, None if e["end"] is None else ms(e["end"]) // 1000 - T0 - start))
    return out


def test_the_series_cover_the_boundaries(rows: list[dict[str, Any]]) -> None:
    """What the agreement above is worth: the cases it covers are really in the answer."""
    waiting = episodes_of(rows, "RequestQueueBacklog", instance="gpu-node-1:8000")
    # (start, duration) in seconds from T0, evaluation i at 15*i: the 45s burst (8..11) never
    # fires; 60s (18..22) fires at exactly one evaluation; 75s (29..34) at two; 3 + a 3-scrape
    # gap + 3 (41..49) is bridged by the lookback; 56..63 then a 25-scrape gap fires until
    # the 5m lookback runs out (84; 83 on 3.x, whose lookback leaves out the sample 5m old);
    # after it the series is new: pending again at 89, firing at 93; the last burst (199..)
    # is still firing at --to
    assert waiting == [(22 * 15, 15), (33 * 15, 30), (45 * 15, 75), (60 * 15, (23 + HELD) * 15),
                       (93 * 15, 6 * 15), (203 * 15, None)]  # fmt: skip
    # 20s on a 15s interval needs three hot evaluations: 1 and 2 never fire, 3 (33..35) fires
    # once; two GPUs hot in turn (46..49) are one instance hot for 4
    assert episodes_of(rows, "GpuHot") == [(35 * 15, 15), (48 * 15, 30)]
    # for 30s then keep_firing_for 45s: dips of 1, 2 and 3 evaluations are held, the dip of 4
    # (23..26) resolves at 26; 27..28 is only pending (kept firing does not hold pending);
    # 33..35 fires at 35 and is held 3 more evaluations
    assert episodes_of(rows, "KeptFiring") == [(7 * 15, 19 * 15), (35 * 15, 4 * 15)]
    # for 0: each idle evaluation fires, the lookback holds the last 0.5 for 5m
    idle = episodes_of(rows, "EngineIdle")
    assert idle == [(20 * 15, 15), (26 * 15, 60), (60 * 15, (21 + HELD) * 15), (92 * 15, 45)]
    row = next(r for r in rows if r["alert"] == "RequestQueueBacklog")
    assert row["labels"] == {
        "engine": "0", "instance": "gpu-node-1:8000", "job": "vllm", "model_name": "m",
        "service": "bt", "severity": "critical", "team": "infra",
    }  # fmt: skip
    assert row["fired"] == 6
    # one idle evaluation: resolved, pending again, firing 5 evaluations later: a flap
    other = episodes_of(rows, "RequestQueueBacklog", instance="gpu-node-2:8000")
    assert other == [(4 * 15, 26 * 15), (35 * 15, 60)]
    flaps = {(r["alert"], r["labels"].get("instance")): r["flaps"] for r in rows}
    assert flaps[("RequestQueueBacklog", "gpu-node-2:8000")] == 1
    assert flaps[("EngineIdle", "gpu-node-1:8000")] == 1  # 20 then 26..29 (for 0: 5 steps)
    assert all(isinstance(r["firing_seconds"], int) for r in rows)


@pytest.mark.parametrize("change", ["start one step earlier", "end one step later"])
def test_promtool_fails_when_the_answer_is_one_step_off(
    history: History, rows: list[dict[str, Any]], tmp_path: Path, change: str
) -> None:
    """Negative control: move the 60s burst's one-evaluation episode by one step."""
    changed = json.loads(json.dumps(spec_rows(rows)))
    row = next(
        r for r in changed
        if r["alert"] == "RequestQueueBacklog" and r["labels"]["instance"] == "gpu-node-1:8000"
    )  # fmt: skip
    episode = row["episodes"][0]
    if change.startswith("start"):
        episode["start"] = report.rfc3339(ms(episode["start"]) - STEP * 1000)
    else:
        episode["end"] = report.rfc3339(ms(episode["end"]) + STEP * 1000)
    path = tmp_path / "replay.test.yml"
    promtool_file(history, changed, path)
    proc = promtool_test(path)
    assert proc.returncode != 0
    assert "alertname: RequestQueueBacklog" in proc.stdout + proc.stderr


def test_a_service_never_deployed_replays_from_raw_series(rows: list[dict[str, Any]]) -> None:
    """The second service reads the same disk series through its own recording (nowhere on
    the server): it fires exactly when the first one does, with its own labels."""
    undeployed = [r for r in rows if r["group"].startswith("undeployed")]
    ours = [r for r in spec_rows(rows) if r["alert"] == "DiskUtilizationHigh"]
    assert [r["episodes"] for r in undeployed] == [r["episodes"] for r in ours]
    assert sum(r["fired"] for r in undeployed) > 0
    assert {r["labels"]["service"] for r in undeployed} == {"undeployed"}
    assert all(r["warning"] is None for r in rows)


def test_recorded_reads_the_deployed_recordings(
    deployed: History, history: History, rows: list[dict[str, Any]]
) -> None:
    """``--recorded`` on the server where the rules ran gives the raw replay's answer for
    the deployed service, and says the other one's recordings are not there."""
    found = json.loads(backtest(deployed, "--format", "json", "--recorded"))
    assert spec_rows(found) == spec_rows(rows[:-1])  # (the last row is the keep probe)
    (row,) = [r for r in found if r["group"].startswith("undeployed")]
    assert row["episodes"] == []
    assert row["warning"].startswith(
        'recording instance_device:node_disk_io_time_seconds:rate1m{service="undeployed"} '
        "has no samples between 2026-01-01T00:00:00Z and 2026-01-01T01:29:45Z"
    )
    assert "leave out --recorded to evaluate them from raw series" in row["warning"]
    text = backtest(history, "--alert", "DiskUtilizationHigh", "--recorded")
    assert "  warning: recording instance_device:node_disk_io_time_seconds:rate1m" in text
    assert "no data to replay" in text


def test_a_series_missing_on_the_server_is_a_warning_not_silence(history: History) -> None:
    """A raw series the rules read that the server does not have at all: the alert cannot
    fire, and the report says so instead of "never fired"."""
    spec = history.specs.parent / "missing"
    spec.mkdir(exist_ok=True)
    (spec / "m.yaml").write_text(for_stack(UNDEPLOYED.replace("service: undeployed", "service: m")
                                 + "selectors:\n  node: 'job=\"nowhere\"'\n"))  # fmt: skip
    args = parse(str(spec), "--prometheus", history.url, "--from", FROM_RFC3339,
                 "--to", str(END), "--format", "json")  # fmt: skip
    out = io.StringIO()
    assert command.run(args, history.catalog, out) == 0
    (row,) = json.loads(out.getvalue())
    assert row["warning"] == (
        'series node_disk_io_time_seconds_total{job="nowhere"} has no '
        "samples between 2025-12-31T23:59:15Z and 2026-01-01T01:29:45Z on "
        f"{history.url}: this alert cannot fire in this backtest"
    )


def test_json_is_sorted_and_deterministic(history: History, rows: list[dict[str, Any]]) -> None:
    keys = [(r["alert"], r["group"], sorted(r["labels"].items())) for r in rows[:-1]]
    assert keys == sorted(keys)
    assert backtest(history, "--format", "json") == backtest(history, "--format", "json")


def test_text_report_and_alert_filter(history: History) -> None:
    text = backtest(history, "--alert", "GpuHot", "--alert", "EngineIdle")
    assert text.startswith(
        "EngineIdle (bt-custom): for 0s, every 15s; service=bt, severity=info, team=infra\n"
    )
    assert "GpuHot (bt-custom): for 20s, every 15s; service=bt" in text
    total = "7m30s" if HELD else "7m15s"  # 30 or 29 evaluations (the lookback, above)
    assert f"fired 4 times on 1 label set(s), {total} firing in total" in text
    assert "fired 2 times on 1 label set(s), 45s firing in total" in text
    assert "RequestQueueBacklog" not in text


def test_suggest_and_plot(history: History, tmp_path: Path) -> None:
    """``--suggest`` and ``--plot``: one PNG per alert (1200 px wide, at least 500 tall),
    suggestions in both directions."""
    out = backtest(history, "--format", "json", "--suggest", "100", "--plot", str(tmp_path))
    found = json.loads(out)
    waiting = next(r for r in found if r["alert"] == "RequestQueueBacklog")["suggestion"]
    # 100 a week over 90 minutes allows 0.89 firings: nothing but the strictest value
    assert waiting["direction"] == "above"
    assert waiting["fired"] == 0
    assert waiting["threshold"] == 20
    assert waiting["current_fired"] == 8
    idle = next(r for r in found if r["alert"] == "EngineIdle")["suggestion"]
    assert idle["direction"] == "below"
    assert idle["op"] == "<"
    assert idle["threshold"] == 0
    assert idle["fired"] == 0
    # the suggestion's replay of `quantity > threshold` counts what the expression's did
    for row in found:
        if row["suggestion"] is not None:
            same = [r for r in found if (r["alert"], r["group"]) == (row["alert"], row["group"])]
            assert row["suggestion"]["current_fired"] == sum(r["fired"] for r in same)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [
        "EngineIdle.png", "GpuHot.png", "RequestQueueBacklog.png",
        "bt-node.DiskUtilizationHigh.png", "undeployed-node.DiskUtilizationHigh.png",
    ]  # fmt: skip
    for name in names:
        data = (tmp_path / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        assert data[12:16] == b"IHDR"
        width, height = struct.unpack(">II", data[16:24])
        assert width == 1200
        assert height >= 500


def test_the_real_cli_prints_the_same_json(history: History, rows: list[dict[str, Any]]) -> None:
    """``rulegen backtest`` as a process (needs ``cli`` wiring) prints the in-process JSON."""
    result = run_rulegen(
        "backtest", str(history.specs), "--prometheus", history.url, "--from", str(T0),
        "--to", "2026-01-01T01:29:45Z", "--format", "json", cwd=history.specs.parent,
    )  # fmt: skip
    assert result.code == 0, result.err
    assert json.loads(result.out) == rows[:-1]
    assert result.err == ""


def test_the_real_cli_draws_progress_when_asked(history: History) -> None:
    result = run_rulegen(
        "backtest", str(history.specs), "--prometheus", history.url, "--from", str(T0),
        "--to", str(END), "--progress", "--alert", "GpuHot", cwd=history.specs.parent,
    )  # fmt: skip
    assert result.code == 0, result.err
    # (text mode reads the bar's carriage returns as newlines)
    assert result.err == "\nbacktest [" + "#" * 30 + "] 1/1 queries\n"


def test_long_ranges_are_split_into_chunks_the_server_accepts(history: History) -> None:
    """4 hours at 1s is 14,401 points: the server refuses it in one query, the client splits
    it in two and reports progress per chunk."""
    refused = requests.get(
        f"{history.url}/api/v1/query_range",
        params={"query": "vector(1)", "start": str(T0), "end": str(T0 + 4 * 3600), "step": "1"},
        timeout=60,
    )
    assert refused.status_code == 400
    assert "maximum resolution" in refused.text
    times = grid(T0 * 1000, (T0 + 4 * 3600) * 1000, 1000)
    done: list[int] = []
    found = Client(history.url).range_query("vector(1)", times, done.append)
    assert found == {(): {t: 1.0 for t in times}}
    assert done == [1, 1]


def test_chunk_borders_change_nothing(history: History, rows: list[dict[str, Any]]) -> None:
    """The same replay through 7-point chunks (borders inside episodes and lead-ins)."""
    client = Client(history.url, max_points=7)
    span = (T0 * 1000, END * 1000)
    reports = session.replay_build(client, history.result, span)
    reports = [r for r in reports if r.target.group.startswith("bt-")]
    reports.append(session.backtest(client, KEEP, span))
    assert sorted(report.json_rows(reports), key=by_alert) == sorted(spec_rows(rows), key=by_alert)
