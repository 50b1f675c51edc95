"""Evaluation cost and accuracy of rulegen's SLO rules against Sloth's, in a real Prometheus.

Why: Sloth records a 30-day SLI as the *unweighted mean* of ~43,200 five-minute error ratios
(`sum_over_time(ratio_rate5m[30d]) / count_over_time(...)`) and reads 1d and 3d raw windows for
its alerts: one evaluation of its rule set reads ~1M samples at 100 raw series, and the 30-day
figure is wrong whenever traffic is uneven (a quiet hour weighs as much as a peak hour). rulegen
builds long windows from chains of short-window recordings (sums of recordings read with
`offset`), which should read a small fraction of the samples and give the exact
traffic-weighted ratio. This benchmark checks both claims on the same synthetic data.

Run:
    .venv/bin/python benchmarks/slo_cost.py [--series 10 100] [--verbose] [--scrape-offset S]
                                            [--no-gaps]

(--verbose lists every rule's level, samples read and value at T; --scrape-offset moves the
scrapes S seconds after the rule evaluations, to see what misalignment costs in accuracy;
--no-gaps skips the gap scenarios below, about two minutes at load 5 on 2 cores.)

Needs `prometheus` and `promtool` on PATH (2.x or 3.x: rulegen's rules are built for the
version of that `prometheus`, `prometheus: {version: …}`); uses 127.0.0.1 only and keeps
everything in a temporary directory. For every raw series count N it:

1. writes 30 days (+1 day of warm-up) of `http_request_duration_seconds_count` counters for N
   series, one sample every 60s, with a strong diurnal cycle, quiet hours with few requests
   and a high error ratio, error bursts, an incident and counter resets (fixed seed), and
   backfills them with `promtool tsdb create-blocks-from openmetrics`;
2. for each rule set (Sloth's `getting-started` output as-is; rulegen's output for the same
   SLO, built with `rulegen build --no-validate`), in its own copy of the data directory:
   backfills, level by level of the recording-rule dependency graph, the recordings that
   another rule or the reported SLI reads, over exactly the span they are read
   (`promtool tsdb create-blocks-from rules`, restarting Prometheus between levels so it
   loads the new blocks), with evaluations at exact multiples of the 60s group interval;
3. at the instant T (end of the 30 days) queries every rule expression of the set (recording
   and alerting) with `stats=all` and sums `totalQueryableSamples`: the samples one
   evaluation of the whole rule set reads. It also times those queries, and compares the
   30-day SLI recording at T with the exact errors/total over the 30 days ending at T,
   computed in Python from the generated counters (and checked against `increase()` over
   the raw series in the TSDB).

Then (unless --no-gaps) the gap scenarios of rulegen's SLI on the same 30-day SLO, at 10 raw
series, each on its own data: a 1-hour hole in the rule evaluations during a burst of 20%
errors (from 10 minutes before the hole to 10 after, 10 hours before T), the same hole with
Prometheus down (no raw scrape in it either), and a quiet 10-minute hole 3d12h before T,
whose 3d terms the 30-day window reads at offset 3d during the last day. The recordings are
backfilled as above but before and after the hole only (no evaluation in it), over the spans
the readings below reach: the SLI at T (and at every minute of the last day for the quiet
hole), the coverage at T, and the group's last recording from 30 minutes before the hole
(where `rulegen repair` looks for holes). The server runs with the admin API, the
remote-write receiver and an out-of-order window (support.prometheus WRITABLE, STORAGE). For
each scenario: the 30-day SLI at T against the exact ratio and the coverage at T; then the
real `rulegen repair specs --prometheus URL --from <hole - 30m> --to T` (it rewrites every
recording over [hole, T]; its 30-day values before T - 1d read terms that were not
backfilled and are not checked); then the SLI and coverage again. For the quiet hole also
the SLI at every minute of the last day against the exact ratio there (worst minute, share
of minutes off by more than 1%), with the rules as built (fallbacks), after the repair, and
with the terms-only rules (backfilled with the same hole on another copy of the data).

It prints markdown tables and the targets (rulegen reads <= 0.1x Sloth's samples at 100
series; rulegen's 30-day SLI within 0.5% relative of the exact ratio; with coverage and
fallbacks <= 2x the samples of the terms only; in the gap scenarios, the coverage below 1
before the repair and exactly 1 after it, the SLI within 0.5% of exact after the repair of
both bursts, and no minute of the last day off by more than 1% with the fallbacks after the
quiet hole); exit status 1 when a target fails or rulegen's rules cannot be built or
measured.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import math
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import promql_parser as pp
import yaml

# The real-Prometheus harness is the tests' (tests/support/prometheus.py), not rulegen's.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from support.prometheus import (
    BACKFILL_FILE,
    MAX_POINTS,
    STORAGE,
    WRITABLE,
    PrometheusServer,
    backfill_group,
    move_blocks,
    promtool,
    running,
)

SLOTH_RULES = Path("/work/shared/anchors/sloth/_gen/getting-started.yml")
SLI_METRIC = "slo:sli_error:ratio_rate30d"
SLOTH_SLI = SLI_METRIC + '{sloth_id="myservice-requests-availability"}'
RULEGEN_SLI = SLI_METRIC + '{service="myservice",slo="requests-availability"}'
RULEGEN_SPEC = """\
version: 1
service: myservice
evaluation_interval: 60s
scrape_interval: 60s
slos:
  - name: requests-availability
    objective: 99.9%
    window: 30d
    sli:
      ratio:
        errors: 'http_request_duration_seconds_count{job="myservice",code=~"(5..|429)"}'
        total: 'http_request_duration_seconds_count{job="myservice"}'
"""

METRIC = "http_request_duration_seconds_count"
STEP = 60  # scrape interval and rule evaluation interval, seconds
DAY = 86400
WINDOW = 30 * DAY  # the SLO window
T = 1709251200  # 2024-03-01T00:00:00Z: the measurement instant, end of the SLO window
DATA_START = T - WINDOW - DAY  # one day of warm-up before the window
LOOKBACK = 300  # Prometheus' default --query.lookback-delta
SEED = 20240301
TARGET_SAMPLES_RATIO = 0.1
TARGET_SAMPLES_AT = 100
TARGET_SLI_REL_ERROR = 0.005

# Backfills use support.prometheus' BACKFILL_FILE/backfill_group(), whose evaluation
# jitter rounds to zero, so samples land on exact minutes; `_check_alignment` verifies it.
# The hidden --max-block-duration flag of promtool: one long block for the raw data (promtool
# re-reads the whole OpenMetrics file once per block), 162h blocks for the rules (one
# query_range per block: 162h / 60s = 9720 steps, below the API's 11,000-point limit).
RAW_BLOCK = "1458h"
RULE_BLOCKS_H = (2, 6, 18, 54, 162)


# --------------------------------------------------------------------------- synthetic data


@dataclass(frozen=True)
class Exact:
    """Exact SLO error and total request counts over the window (T - 30d, T]."""

    errors: int
    total: int

    @property
    def ratio(self) -> float:
        """errors / total."""
        return self.errors / self.total


@dataclass(frozen=True)
class Traffic:
    """The generated traffic: the exact window at T, and the requests and SLO errors of all
    series counted up to every minute of the data (``[i]``: up to ``DATA_START + i * STEP``),
    for the exact 30-day ratio at any aligned instant of the last day (the gap scenarios)."""

    exact: Exact
    requests: list[int]
    errors: list[int]

    def at(self, t: int) -> Exact:
        """The exact counts over (t - 30d, t], for scrapes aligned on the minute."""
        last, first = (t - DATA_START) // STEP, (t - WINDOW - DATA_START) // STEP
        if first < 0:
            raise ValueError(f"{t}: the window starts before the data")
        return Exact(
            self.errors[last] - self.errors[first], self.requests[last] - self.requests[first]
        )


def _profile(rng: random.Random) -> tuple[list[float], list[float]]:
    """Per-minute request rate of one instance of weight 1 (req/min) and SLO error ratio.

    Diurnal cycle (peak 16:00 UTC, trough 04:00), weekends at half traffic, a quiet nightly
    window (01:30-04:30) with ~2 req/min and 2.5% errors (a batch job hitting a broken
    dependency), three traffic bursts a day (x3 traffic, 0.4% errors) and a 25-minute
    incident with 15% errors. Errors thus concentrate where traffic is low: the mean of
    5-minute ratios is several times the traffic-weighted ratio.
    """
    minutes = (T - DATA_START) // STEP + 1
    burst = bytearray(minutes)
    for day in range((T - DATA_START) // DAY + 1):
        for _ in range(3):
            begin = day * 1440 + rng.randrange(300, 1440)
            length = rng.randrange(5, 40)
            burst[begin : begin + length] = b"\x01" * len(burst[begin : begin + length])
    incident_start = (T - 12 * DAY + 13 * 3600 - DATA_START) // STEP
    incident = range(incident_start, incident_start + 25)
    rates: list[float] = []
    ratios: list[float] = []
    for m in range(minutes):
        t = DATA_START + m * STEP
        hour = (t % DAY) / 3600
        weekend = ((t // DAY) + 3) % 7 >= 5  # 1970-01-01 was a Thursday
        rate = 600 * (0.1 + 0.9 * (0.5 - 0.5 * math.cos(2 * math.pi * (hour - 4) / 24)))
        rate *= 0.5 if weekend else 1.0
        ratio = 0.0002 * (1 + 0.5 * math.sin(2 * math.pi * t / (7 * DAY)))
        if 1.5 <= hour < 4.5:
            rate, ratio = 2.0, 0.025
        elif burst[m]:
            rate, ratio = rate * 3, 0.004
        if m in incident:
            ratio = 0.15
        rates.append(rate)
        ratios.append(ratio)
    return rates, ratios


def _series_codes(n_series: int) -> list[tuple[int, str]]:
    """(instance index, code) of each raw series: code 200 and one other code per instance."""
    others = ("500", "429", "404", "503")  # 404 counts in the total, not as an SLO error
    return [
        (i // 2, "200" if i % 2 == 0 else others[(i // 2) % len(others)]) for i in range(n_series)
    ]


def _is_slo_error(code: str) -> bool:
    return code.startswith("5") or code == "429"


def write_openmetrics(
    path: Path,
    n_series: int,
    scrape_offset: int = 0,
    burst: tuple[int, int] | None = None,
    down: tuple[int, int] | None = None,
) -> Traffic:
    """Stream the raw counters to ``path`` (OpenMetrics, one series after the other).

    Samples are at exact minutes plus ``scrape_offset`` seconds, up to T. Returns the exact
    SLO error and total counts of the samples in (T - 30d, T], counted from the per-minute
    increments (a counter reset restarts the counter at that minute's increment, which is
    what Prometheus' increase() counts too), and the counts up to every minute.

    The gap scenarios add an error ``burst``: BURST_RATIO of the requests of the minutes
    ending in (start, end] fail (the same random draws, so the traffic is otherwise
    unchanged); and ``down``: no sample with a timestamp in [start, end) (Prometheus down,
    the counters counting on).
    """
    rng = random.Random(SEED)
    rates, ratios = _profile(rng)
    if burst is not None:
        for m in range((burst[0] - DATA_START) // STEP + 1, (burst[1] - DATA_START) // STEP + 1):
            ratios[m] = BURST_RATIO
    requests_at = [0] * len(rates)
    errors_at = [0] * len(rates)
    kept = (T - scrape_offset - DATA_START) // STEP + 1  # samples at or before T
    series = _series_codes(n_series)
    instances = sorted({inst for inst, _ in series})
    resets = {0: (11 * DAY + 10 * 3600 + 17 * 60) // STEP}
    resets[instances[-1]] = (T - 8 * DAY + 3 * 3600 + 5 * 60 - DATA_START) // STEP  # quiet hour
    first_in_window = (T - WINDOW - DATA_START - scrape_offset) // STEP + 1
    errors = total = 0
    with path.open("w", buffering=1 << 20) as out:
        for inst in instances:
            codes = [code for i, code in series if i == inst]
            weight = 0.5 + rng.random()
            values: dict[str, list[int]] = {code: [] for code in codes}
            counters = {code: rng.randrange(10**6) for code in codes}
            other = codes[1] if len(codes) > 1 else None
            share = 0.01 if other is not None and not _is_slo_error(other) else None
            for m in range(len(rates)):  # the same random draws whatever the offset
                noise = 1 + 0.1 * rng.gauss(0, 1)
                requests = max(1, int(rates[m] * weight * noise + rng.random()))
                rate = ratios[m] if share is None else share
                failed = min(requests, int(requests * rate + rng.random())) if other else 0
                increments = {"200": requests - failed, str(other): failed}
                for code in codes:
                    reset = resets.get(inst) == m
                    counters[code] = increments[code] + (0 if reset else counters[code])
                    values[code].append(counters[code])
                counted = failed if other and share is None else 0
                requests_at[m] += requests
                errors_at[m] += counted
                if first_in_window <= m < kept:
                    total += requests
                    errors += counted
            for code in codes:
                labels = f'code="{code}",instance="myservice-{inst:03d}:8080",job="myservice"'
                stamps = range(DATA_START + scrape_offset, T + 1, STEP)
                out.writelines(
                    f"{METRIC}{{{labels}}} {v} {ts}\n"
                    for v, ts in zip(values[code][:kept], stamps, strict=True)
                    if down is None or not down[0] <= ts < down[1]
                )
        out.write("# EOF\n")
    return Traffic(
        Exact(errors, total), list(itertools.accumulate(requests_at)),
        list(itertools.accumulate(errors_at)),
    )  # fmt: skip


# --------------------------------------------------------------------------- rule analysis


@dataclass
class Rule:
    """One recording or alerting rule, with what its expression reads.

    ``reads`` maps a metric name to (far, near): evaluated at instant t, the expression reads
    that metric's samples in [t - far, t - near] (ranges, offsets, subqueries and the
    lookback of instant selectors included).
    """

    group: str
    interval: int
    record: str | None
    alert: str | None
    expr: str
    labels: dict[str, str]
    reads: dict[str, tuple[float, float]]
    level: int = 0
    need_from: float | None = None  # recordings to backfill: earliest instant needed

    @property
    def title(self) -> str:
        """Record or alert name, with the rule's labels."""
        labels = ",".join(f'{k}="{v}"' for k, v in sorted(self.labels.items()))
        return f"{self.record or 'ALERT ' + str(self.alert)}{{{labels}}}"


@dataclass
class RuleSet:
    """The rules of one rule file, with their dependency levels and backfill spans."""

    name: str
    paths: list[Path]
    sli: str
    rules: list[Rule] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _selector_name(selector: pp.VectorSelector) -> str:
    if selector.at is not None:
        raise ValueError(f"@ modifier not supported: {selector}")
    if selector.name:
        return selector.name
    for matcher in selector.matchers.matchers:
        if matcher.name == "__name__" and matcher.op == pp.MatchOp.Equal:
            return matcher.value
    raise ValueError(f"selector without a metric name: {selector}")


def _seconds(delta: Any) -> float:
    return 0.0 if delta is None else float(delta.total_seconds())


def _children(node: Any) -> list[Any]:
    if isinstance(node, pp.ParenExpr | pp.UnaryExpr):
        return [node.expr]
    if isinstance(node, pp.AggregateExpr):
        return [node.expr, node.param]
    if isinstance(node, pp.BinaryExpr):
        return [node.lhs, node.rhs]
    if isinstance(node, pp.Call):
        return list(node.args)
    return []


def _add_read(
    selector: pp.VectorSelector,
    far: float,
    near: float,
    width: float,
    out: dict[str, tuple[float, float]],
) -> None:
    offset = _seconds(selector.offset)
    name = _selector_name(selector)
    lo, hi = far + offset + width, near + offset
    old = out.get(name, (lo, hi))
    out[name] = (max(old[0], lo), min(old[1], hi))


def _collect(node: Any, far: float, near: float, out: dict[str, tuple[float, float]]) -> None:
    """Add to ``out`` what ``node`` reads when evaluated at instants [t - far, t - near]."""
    if isinstance(node, pp.SubqueryExpr):
        if node.at is not None:
            raise ValueError("@ modifier not supported in subqueries")
        offset = _seconds(node.offset)
        _collect(node.expr, far + offset + _seconds(node.range), near + offset, out)
    elif isinstance(node, pp.VectorSelector):
        _add_read(node, far, near, LOOKBACK, out)
    elif isinstance(node, pp.MatrixSelector):
        _add_read(node.vector_selector, far, near, _seconds(node.range), out)
    else:
        for child in _children(node):
            if isinstance(child, pp.Expr):
                _collect(child, far, near, out)


def _duration(text: str | None) -> int:
    if text is None:
        return STEP
    return int(pp.parse_duration(text).total_seconds())


def load_rules(
    name: str, paths: list[Path], sli: str, since: Mapping[str, float] | None = None
) -> RuleSet:
    """Parse Prometheus rule files; compute dependency levels and backfill spans (for the
    recordings ``since`` names read from that instant to T; by default the 30-day SLI at T)."""
    rule_set = RuleSet(name, paths, sli)
    for path in paths:
        document = yaml.safe_load(path.read_text()) or {}
        for group in document.get("groups") or []:
            interval = _duration(group.get("interval"))
            for raw in group.get("rules") or []:
                reads: dict[str, tuple[float, float]] = {}
                _collect(pp.parse(raw["expr"]), 0.0, 0.0, reads)
                labels = {str(k): str(v) for k, v in (raw.get("labels") or {}).items()}
                record, alert = raw.get("record"), raw.get("alert")
                rule = Rule(group["name"], interval, record, alert, raw["expr"], labels, reads)
                rule_set.rules.append(rule)
    if not rule_set.rules:
        raise ValueError(f"{name}: no rules in {', '.join(map(str, paths))}")
    if not any(rule.record == SLI_METRIC for rule in rule_set.rules):
        rule_set.notes.append(f"no recording named {SLI_METRIC}")
    _levels(rule_set)
    _spans(rule_set, {SLI_METRIC: T} if since is None else since)
    return rule_set


def _recorders(rule_set: RuleSet) -> dict[str, list[Rule]]:
    out: dict[str, list[Rule]] = {}
    for rule in rule_set.rules:
        if rule.record:
            out.setdefault(rule.record, []).append(rule)
    return out


def _levels(rule_set: RuleSet) -> None:
    """level = 0 for rules reading only raw series, else 1 + the highest level they read."""
    recorders = _recorders(rule_set)
    done: dict[int, int] = {}

    def level(rule: Rule, path: tuple[int, ...]) -> int:
        if id(rule) in path:
            raise ValueError(f"{rule_set.name}: recording cycle through {rule.title}")
        if id(rule) not in done:
            below = [
                level(dep, (*path, id(rule)))
                for name in rule.reads
                for dep in recorders.get(name, [])
            ]
            done[id(rule)] = 1 + max(below) if below else 0
        return done[id(rule)]

    for rule in rule_set.rules:
        rule.level = level(rule, ())
    for rule in rule_set.rules:
        missing = [name for name in rule.reads if ":" in name and name not in recorders]
        if missing:
            rule_set.notes.append(f"{rule.title} reads undefined recording(s) {missing}")


def _spans(rule_set: RuleSet, since: Mapping[str, float]) -> None:
    """Set ``need_from`` on the recordings that must be backfilled, and check the raw span.

    ``since`` maps the recordings read to the first instant of the interval they are read
    over, up to T (the SLI at T; the gap scenarios also read it over the last day, the
    coverage at T and the group's last recording where ``rulegen repair`` looks for holes).
    Every rule is evaluated at T (the measurement); a backfilled recording is also evaluated
    from its ``need_from`` on. Readers are handled before what they read (higher levels
    first), so each recording's span is final before it is propagated further down.
    """
    recorders = _recorders(rule_set)
    for name, start in since.items():
        for rule in recorders.get(name, []):
            rule.need_from = start - LOOKBACK
    raw_from = float(T)
    for rule in sorted(rule_set.rules, key=lambda r: -r.level):
        start = min(T, rule.need_from if rule.need_from is not None else T)
        for name, (far, near) in rule.reads.items():
            if near < 0:
                rule_set.notes.append(f"{rule.title} reads {name} after its evaluation time")
            for dep in recorders.get(name, []):
                dep.need_from = min(dep.need_from if dep.need_from is not None else T, start - far)
            if name not in recorders:
                raw_from = min(raw_from, start - far)
    if raw_from < DATA_START:
        rule_set.notes.append(
            f"reads raw series from T-{(T - raw_from) / DAY:.2f}d, before the data starts"
            f" (T-{(T - DATA_START) / DAY:.0f}d)"
        )


# --------------------------------------------------------------------------- prometheus


# --------------------------------------------------------------------------- backfill


def backfill(
    server: PrometheusServer,
    rule_set: RuleSet,
    workdir: Path,
    hole: tuple[int, int] | None = None,
) -> list[str]:
    """Backfill the needed recordings level by level; returns their record names.

    promtool evaluates a rule against the server, so a recording that reads another
    recording can only be backfilled once the blocks of the latter are loaded: after each
    level, the new blocks are moved into the data directory and the server restarted.
    Recordings of one level needed over different spans are backfilled in separate runs.
    With a ``hole``, no evaluation happens in [start, end): each span is backfilled before
    and after it, as if the rule group had stopped.
    """
    todo = [rule for rule in rule_set.rules if rule.record and rule.need_from is not None]
    for level in sorted({rule.level for rule in todo}):
        batches: dict[tuple[int, int], list[Rule]] = {}
        for rule in todo:
            if rule.level == level and rule.need_from is not None:
                start = max(DATA_START, math.floor(rule.need_from / rule.interval) * rule.interval)
                batches.setdefault((start, rule.interval), []).append(rule)
        outputs = []
        runs = [
            (piece, interval, rules)
            for (start, interval), rules in sorted(batches.items())
            for piece in _pieces(start, hole)
        ]
        for index, ((start, end), interval, rules) in enumerate(runs):
            run_dir = workdir / f"backfill-level{level}-{index}"
            run_dir.mkdir()
            (run_dir / BACKFILL_FILE).write_text(_rules_file(rules, interval))
            block_h = max(h for h in RULE_BLOCKS_H if h * 3600 // interval <= MAX_POINTS)
            promtool(
                [
                    "tsdb",
                    "create-blocks-from",
                    "rules",
                    "--quiet",
                    f"--max-block-duration={block_h}h",
                    f"--start={start}",
                    f"--end={end}",
                    f"--url={server.url}",
                    f"--eval-interval={interval}s",
                    "--output-dir=out",
                    BACKFILL_FILE,
                ],
                cwd=run_dir,
            )
            outputs.append(run_dir / "out")
        server.stop()
        for output in outputs:
            move_blocks(output, server.data_dir)
        server.start()
    names = sorted({str(rule.record) for rule in todo})
    _check_alignment(server, names)
    return names


def _pieces(start: int, hole: tuple[int, int] | None) -> list[tuple[int, int]]:
    """[start, T] without the evaluations in ``hole`` (inclusive ends, as promtool's)."""
    if hole is None or start >= hole[1]:
        return [(start, T)]
    before = [(start, hole[0] - STEP)] if start <= hole[0] - STEP else []
    return [*before, (hole[1], T)]


def _rules_file(rules: list[Rule], interval: int) -> str:
    entries: list[dict[str, Any]] = []
    for rule in rules:
        entry: dict[str, Any] = {"record": rule.record, "expr": rule.expr}
        if rule.labels:
            entry["labels"] = rule.labels
        entries.append(entry)
    group = {"name": backfill_group(), "interval": f"{interval}s", "rules": entries}
    return yaml.safe_dump({"groups": [group]}, sort_keys=False)


def _check_alignment(server: PrometheusServer, names: list[str]) -> None:
    """Every backfilled recording must have its last sample exactly at T."""
    for name in names:
        result = server.query(f'timestamp({{__name__="{name}"}})', T)["result"]
        stamps = {float(item["value"][1]) for item in result}
        if stamps - {float(T)}:
            raise RuntimeError(
                f"backfill of {name} not aligned on T={T}: sample times {sorted(stamps)}"
            )


# --------------------------------------------------------------------------- measurement


@dataclass
class Measurement:
    """What one rule set cost and returned at T."""

    samples: int = 0
    wall: float = 0.0
    engine: float = 0.0
    sli: float | None = None
    backfilled: list[str] = field(default_factory=list)
    per_rule: list[tuple[Rule, int, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    error: str | None = None


REPEAT = 3  # passes over the rule set; the times reported are those of the fastest pass
RAW_RATIO = (
    f'sum(increase({METRIC}{{job="myservice",code=~"(5..|429)"}}[30d]))'
    f' / sum(increase({METRIC}{{job="myservice"}}[30d]))'
)


def _summary(result: list[dict[str, Any]]) -> str:
    if not result:
        return "(no series)"
    values = [str(item["value"][1]) for item in result]
    more = f" (+{len(values) - 1} series)" if len(values) > 1 else ""
    return values[0] + more


def measure(server: PrometheusServer, rule_set: RuleSet, measurement: Measurement) -> None:
    """Query every rule expression at T with stats; read the reported 30-day SLI."""
    passes: list[tuple[float, float]] = []
    for repeat in range(REPEAT):
        began = time.perf_counter()
        samples = 0
        engine = 0.0
        for rule in rule_set.rules:
            data = server.query(rule.expr, T, stats=True)
            count = int(data["stats"]["samples"]["totalQueryableSamples"])
            samples += count
            engine += float(data["stats"]["timings"]["execTotalTime"])
            if repeat == 0:
                measurement.per_rule.append((rule, count, _summary(data["result"])))
                _check_result(rule, data["result"], measurement)
        passes.append((time.perf_counter() - began, engine))
        if repeat and samples != measurement.samples:
            measurement.notes.append(f"samples differ between passes: {samples}")
        measurement.samples = samples
    measurement.wall, measurement.engine = min(passes)
    result = server.query(rule_set.sli, T)["result"]
    if len(result) == 1:
        measurement.sli = float(result[0]["value"][1])
    else:
        measurement.notes.append(
            f"`{rule_set.sli}` at T returns {len(result)} series: {_summary(result)}"
        )


def _check_result(rule: Rule, result: list[dict[str, Any]], measurement: Measurement) -> None:
    if rule.record is None:
        return
    if not result:
        measurement.notes.append(
            f"recording {rule.title} returns no series at T; expr: {rule.expr.strip()}"
        )
    for item in result:
        if math.isnan(float(item["value"][1])):
            measurement.notes.append(f"recording {rule.title} is NaN at T for {item['metric']}")


def check_raw(server: PrometheusServer, exact: Exact) -> None:
    """Harness self-check: the backfilled raw counters must hold exactly the generated
    traffic (increase() over the aligned 30d window is exact, resets included; from 3.0 the
    range is left-open, so it reaches 1ms further back to hold the first sample: every series
    is then extrapolated by the same 1ms in 30 days, 4e-10, which the ratio cancels)."""
    query = RAW_RATIO if _version().startswith("2.") else RAW_RATIO.replace("[30d]", "[30d1ms]")
    result = server.query(query, T)["result"]
    got = float(result[0]["value"][1]) if len(result) == 1 else math.nan
    if not abs(got - exact.ratio) <= 1e-9 * exact.ratio:
        raise RuntimeError(f"raw data check: {query} = {got} at T, expected {exact.ratio}")


# --------------------------------------------------------------------------- driver


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ``--declare``: the prometheus.version rulegen's rules are built for, when not the server's
# (to measure the 2.x rules on a 3.x server, the cost of not following the version).
DECLARED: str | None = None


@functools.cache
def _version() -> str:
    """The ``MAJOR.MINOR`` of the ``prometheus`` on PATH: what rulegen's rules are built for."""
    text = subprocess.run(
        ["prometheus", "--version"], capture_output=True, text=True, check=True
    ).stdout
    found = re.search(r"version (\d+)\.(\d+)\.", text)
    if not found:
        raise RuntimeError(f"prometheus --version printed no version: {text[:200]!r}")
    return f"{found.group(1)}.{found.group(2)}"


def _declared_otherwise() -> bool:
    """Whether ``--declare`` names the other major version than the server's: ``rulegen
    repair`` then refuses the server (exit 2), so the gap scenarios are left out."""
    if DECLARED is None or DECLARED.split(".")[0] == _version().split(".")[0]:
        return False
    _log(f"gap scenarios left out: rulegen repair refuses a Prometheus {_version()} for rules "
         f"declared {DECLARED}")  # fmt: skip
    return True


def build_rulegen(tmp: Path) -> RuleSet:
    """Build rulegen's rules for the SLO; RuntimeError with rulegen's output if it fails."""
    specs = tmp / "rulegen" / "specs"
    specs.mkdir(parents=True)
    (specs / "myservice.yaml").write_text(
        RULEGEN_SPEC + f'prometheus: {{version: "{DECLARED or _version()}"}}\n'
    )
    binary = Path(sys.prefix) / "bin" / "rulegen"
    command = str(binary if binary.exists() else shutil.which("rulegen") or "rulegen")
    out = tmp / "rulegen" / "rules"
    proc = subprocess.run(
        [command, "build", str(specs), "--out", str(out), "--no-validate"],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        output = (proc.stdout + proc.stderr).strip()
        raise RuntimeError(f"rulegen build exited {proc.returncode}: {output}")
    paths = sorted((out / "prometheus").glob("*.yml"))
    if not paths:
        raise RuntimeError(f"rulegen build wrote no rule file: {proc.stdout.strip()}")
    return load_rules("rulegen", paths, RULEGEN_SLI)


WITHOUT = ("slo:sli_terms:count", "slo:sli_coverage:ratio", "SLORecordingsIncomplete")
TERMS_ONLY = "rulegen-terms-only"
TARGET_FALLBACK_RATIO = 2.0  # rulegen's samples/eval with coverage and fallbacks vs terms only


def terms_only(rulegen: RuleSet, tmp: Path) -> RuleSet:
    """rulegen's rules as they were before coverage and fallbacks: each window the sum of its
    own terms only, no term counts, no coverage alert (what the fallbacks are compared to)."""
    out = tmp / "rulegen-terms-only"
    out.mkdir()
    paths = []
    for path in rulegen.paths:
        document = yaml.safe_load(path.read_text())
        for group in document["groups"]:
            kept = []
            for rule in group["rules"]:
                if str(rule.get("record") or rule.get("alert")).startswith(WITHOUT):
                    continue
                lines = rule["expr"].splitlines()
                terms = [line.strip() for line in lines if line.startswith("  label_replace(slo")]
                if lines[0].startswith("sum by (") and len(terms) < sum(
                    line.startswith("  label_replace(") for line in lines
                ):
                    rule["expr"] = (
                        lines[0] + "\n" + "\n  or\n".join("  " + t for t in terms) + "\n)"
                    )
                kept.append(rule)
            group["rules"] = kept
        target = out / path.name
        target.write_text(yaml.safe_dump(document, sort_keys=False))
        paths.append(target)
    return load_rules(TERMS_ONLY, paths, RULEGEN_SLI)


@dataclass
class Row:
    """One line of the result table."""

    series: int
    rule_set: RuleSet
    exact: Exact
    measurement: Measurement


def _raw_data(
    n_series: int,
    base: Path,
    scrape_offset: int,
    burst: tuple[int, int] | None = None,
    down: tuple[int, int] | None = None,
) -> tuple[Path, Traffic]:
    openmetrics = base / "raw.om"
    traffic = write_openmetrics(openmetrics, n_series, scrape_offset, burst, down)
    raw = base / "raw"
    promtool(
        [
            "tsdb",
            "create-blocks-from",
            "openmetrics",
            "--quiet",
            f"--max-block-duration={RAW_BLOCK}",
            str(openmetrics),
            str(raw),
        ],
        base,
    )
    openmetrics.unlink()
    return raw, traffic


def run_size(n_series: int, rule_sets: list[RuleSet], tmp: Path, scrape_offset: int) -> list[Row]:
    """Generate and backfill the raw data for ``n_series``, then measure every rule set."""
    base = tmp / f"n{n_series}"
    base.mkdir()
    began = time.perf_counter()
    raw, traffic = _raw_data(n_series, base, scrape_offset)
    exact = traffic.exact
    _log(f"N={n_series}: raw data written and backfilled in {time.perf_counter() - began:.1f}s")
    rows = []
    for rule_set in rule_sets:
        began = time.perf_counter()
        filled = 0.0
        workdir = base / rule_set.name
        workdir.mkdir()
        data = workdir / "data"
        shutil.copytree(raw, data)
        measurement = Measurement()
        try:
            with running(data, workdir) as server:
                if scrape_offset == 0:
                    check_raw(server, exact)
                measurement.backfilled = backfill(server, rule_set, workdir)
                filled = time.perf_counter() - began
                measure(server, rule_set, measurement)
        except RuntimeError as err:
            measurement.error = str(err)
        _log(
            f"N={n_series}: {rule_set.name}: {len(measurement.backfilled)} recordings backfilled"
            f" in {filled:.1f}s, measured in {time.perf_counter() - began - filled:.1f}s"
            + (f"; ERROR {measurement.error}" if measurement.error else "")
        )
        rows.append(Row(n_series, rule_set, exact, measurement))
        shutil.rmtree(workdir)
    shutil.rmtree(raw)
    return rows


def _pct(value: float | None, digits: int = 5) -> str:
    return "n/a" if value is None else f"{value * 100:.{digits}f}%"


def _rel(row: Row) -> float | None:
    sli = row.measurement.sli
    if sli is None or row.measurement.error:
        return None
    return (sli - row.exact.ratio) / row.exact.ratio


def print_table(rows: list[Row]) -> None:
    """The markdown result table."""
    head = [
        "series",
        "rule set",
        "rules",
        "samples/eval",
        "ratio to Sloth",
        "query ms",
        "engine ms",
        "30d SLI",
        "exact",
        "rel. error",
    ]
    print("| " + " | ".join(head) + " |")
    print("| ---: | --- | " + " | ".join("---:" for _ in head[2:]) + " |")
    sloth = {row.series: row.measurement for row in rows if row.rule_set.name == "Sloth"}
    for row in rows:
        m = row.measurement
        ok = m.error is None
        base = sloth.get(row.series)
        ratio = "n/a"
        if ok and base is not None and base.error is None and base.samples:
            ratio = f"{m.samples / base.samples:.4f}"
        rel = _rel(row)
        cells = [
            str(row.series),
            row.rule_set.name,
            str(len(row.rule_set.rules)),
            f"{m.samples:,}" if ok else "error",
            ratio,
            f"{m.wall * 1000:.1f}" if ok else "n/a",
            f"{m.engine * 1000:.1f}" if ok else "n/a",
            _pct(m.sli),
            _pct(row.exact.ratio),
            "n/a" if rel is None else f"{rel * 100:+.3f}%",
        ]
        print("| " + " | ".join(cells) + " |")


def _verdict(held: bool) -> str:
    return "PASS" if held else "FAIL"


def check_targets(rows: list[Row], sizes: list[int], rulegen_error: str | None) -> bool:
    """Print the targets and whether they hold; True when none fails."""
    ok = True
    print("\nTargets:")
    by_key = {(row.series, row.rule_set.name): row.measurement for row in rows}
    limit_text = f"rulegen samples/eval <= {TARGET_SAMPLES_RATIO}x Sloth's at {TARGET_SAMPLES_AT}"
    if TARGET_SAMPLES_AT in sizes:
        sloth = by_key[(TARGET_SAMPLES_AT, "Sloth")]
        ours = by_key.get((TARGET_SAMPLES_AT, "rulegen"))
        limit = TARGET_SAMPLES_RATIO * sloth.samples
        valid = ours is not None and ours.error is None and ours.sli is not None
        held = valid and sloth.error is None and ours is not None and ours.samples <= limit
        got = f"{ours.samples:,}" if valid and ours is not None else "n/a"
        print(f"- {limit_text} series ({got} vs limit {limit:,.0f}): {_verdict(held)}")
        ok = held
    else:
        print(f"- {limit_text} series: SKIPPED (add {TARGET_SAMPLES_AT} to --series)")
    for size in sizes:
        row = next((r for r in rows if r.series == size and r.rule_set.name == "rulegen"), None)
        rel = None if row is None else _rel(row)
        held = rel is not None and abs(rel) <= TARGET_SLI_REL_ERROR
        got = "n/a" if rel is None else f"{rel * 100:+.4f}%"
        within = f"within {TARGET_SLI_REL_ERROR * 100:g}% relative of exact"
        print(f"- rulegen 30d SLI {within} at {size} series ({got}): {_verdict(held)}")
        ok = ok and held
    for size in sizes:
        ours = by_key.get((size, "rulegen"))
        before = by_key.get((size, TERMS_ONLY))
        valid = ours is not None and before is not None and before.samples > 0
        ratio = ours.samples / before.samples if valid and ours and before else None
        held = ratio is not None and ratio <= TARGET_FALLBACK_RATIO
        got = "n/a" if ratio is None else f"{ratio:.2f}x"
        print(
            f"- rulegen samples/eval with coverage and fallbacks <= {TARGET_FALLBACK_RATIO:g}x"
            f" the terms-only rules at {size} series ({got}): {_verdict(held)}"
        )
        ok = ok and held
    if rulegen_error:
        print(f"\nrulegen rules unavailable: {rulegen_error}")
    return ok


def print_notes(rule_sets: list[RuleSet], rows: list[Row], verbose: bool) -> None:
    """Everything that looked wrong (and, with --verbose, every rule's cost and value)."""
    lines = [f"- {rs.name}: {note}" for rs in rule_sets for note in rs.notes]
    for row in rows:
        m = row.measurement
        where = f"{row.rule_set.name} at {row.series} series"
        lines += [f"- {where}: {note}" for note in dict.fromkeys(m.notes)]
        if m.error:
            lines.append(f"- {where}: ERROR {m.error}")
    if lines:
        print("\nNotes:")
        print("\n".join(lines))
    if not verbose:
        return
    for row in rows:
        print(
            f"\n{row.rule_set.name}, {row.series} series: level, backfilled from, samples read"
            " at T, value at T, rule"
        )
        for rule, samples, value in row.measurement.per_rule:
            since = "-" if rule.need_from is None else f"T-{_span(T - rule.need_from)}"
            print(f"  L{rule.level} {since:>9} {samples:>9,}  {value:<24} {rule.title}")


def _span(seconds: float) -> str:
    """``2595900`` → ``30d1h5m``."""
    days, rest = divmod(int(seconds), DAY)
    hours, rest = divmod(rest, 3600)
    parts = [(days, "d"), (hours, "h"), (rest // 60, "m")]
    return "".join(f"{n}{unit}" for n, unit in parts if n) or "0m"


# --------------------------------------------------------------------------- gap scenarios

# The setup: 10 raw series, 99.9% / 30d, BURST_RATIO errors in a burst around a hole.
GAP_SERIES = 10
BURST_RATIO = 0.2
HOUR = 3600
# Thursday 14:00-15:00 UTC, near the daily peak: close to T, so the repair rewrites 10 hours.
BURST_HOLE = (T - 10 * HOUR, T - 9 * HOUR)
# Monday 12:00 UTC: the 3d terms evaluated in it are read at offset 3d 12 hours before T (the
# last day; the first 5 minutes bridged by the lookback, which reads the sample before the
# hole). At T, the 6h term of its start is read (inside a 1d, inside a 3d), bridged the same way.
QUIET_HOLE = (T - 3 * DAY - 12 * HOUR, T - 3 * DAY - 12 * HOUR + 10 * 60)
COVERAGE = "slo:sli_coverage:ratio"
RULEGEN_COVERAGE = COVERAGE + '{service="myservice",slo="requests-availability"}'
REPAIR_FROM = 30 * 60  # `rulegen repair --from`: this long before the hole
TARGET_LAST_DAY = 0.01  # quiet gap with fallbacks: no minute of the last day off by more


@dataclass(frozen=True)
class Scenario:
    """A hole in the rule evaluations: no evaluation in [start, end)."""

    name: str
    hole: tuple[int, int]
    burst: bool  # BURST_RATIO errors from 10 minutes before the hole to 10 minutes after
    down: bool  # Prometheus down: no raw sample in the hole either
    last_day: bool  # every minute of the last day too, and the terms-only rules

    @property
    def burst_span(self) -> tuple[int, int] | None:
        """The minutes of the burst, (start, end]."""
        return (self.hole[0] - 600, self.hole[1] + 600) if self.burst else None


SCENARIOS = (
    Scenario("1h rule-evaluation gap, burst", BURST_HOLE, burst=True, down=False, last_day=False),
    Scenario("1h Prometheus down, burst", BURST_HOLE, burst=True, down=True, last_day=False),
    Scenario("quiet 10m rule-evaluation gap", QUIET_HOLE, burst=False, down=False, last_day=True),
)


@dataclass(frozen=True)
class LastDay:
    """The 30-day SLI at every minute of the last day before T against the exact ratio."""

    worst: float  # relative error of the worst minute (-1: a minute without a value)
    off: float  # share of the minutes off by more than TARGET_LAST_DAY


@dataclass
class GapResult:
    """One scenario: the 30-day SLI and the coverage at T, before and after the repair."""

    scenario: Scenario
    exact: float
    before: float | None = None
    coverage_before: float | None = None
    after: float | None = None
    coverage_after: float | None = None
    repair_seconds: float = 0.0
    repair_output: str = ""
    last_day: dict[str, LastDay] = field(default_factory=dict)
    error: str | None = None

    def rel(self, sli: float | None) -> float | None:
        """``sli`` relative to the exact ratio."""
        return None if sli is None else sli / self.exact - 1


def _value(server: PrometheusServer, expr: str, at: int) -> float | None:
    result = server.query(expr, at)["result"]
    if len(result) > 1:
        raise RuntimeError(f"{expr} at {at} returns {len(result)} series")
    return float(result[0]["value"][1]) if result else None


def _last_day(server: PrometheusServer, traffic: Traffic, expr: str) -> LastDay:
    """``expr`` at every minute of [T - 1d, T] against the exact 30-day ratio there."""
    params = {"query": expr, "start": str(T - DAY), "end": str(T), "step": str(STEP)}
    result = server.api("query_range", params)["result"]
    if len(result) > 1:
        raise RuntimeError(f"{expr} over the last day returns {len(result)} series")
    values = {int(t): float(v) for t, v in result[0]["values"]} if result else {}
    offs = [
        values[t] / traffic.at(t).ratio - 1 if t in values else -1.0
        for t in range(T - DAY, T + 1, STEP)
    ]
    worst = max(offs, key=abs)
    return LastDay(worst, sum(abs(v) > TARGET_LAST_DAY for v in offs) / len(offs))


def _rulegen_command() -> str:
    binary = Path(sys.prefix) / "bin" / "rulegen"
    return str(binary if binary.exists() else shutil.which("rulegen") or "rulegen")


def _repair(server: PrometheusServer, specs: Path, hole: tuple[int, int]) -> str:
    """Run the real ``rulegen repair`` over [hole - 30m, T]; its output, or RuntimeError."""
    argv = [_rulegen_command(), "repair", str(specs), "--prometheus", server.url,
            "--from", str(hole[0] - REPAIR_FROM), "--to", str(T)]  # fmt: skip
    try:
        proc = subprocess.run(
            argv, cwd=specs.parent, capture_output=True, text=True, check=False, timeout=1800
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise RuntimeError(f"rulegen repair: {err}") from err
    output = (proc.stdout + proc.stderr).strip()
    if proc.returncode != 0:
        raise RuntimeError(f"rulegen repair exited {proc.returncode}: {output}")
    return output


def run_gap(
    index: int, scenario: Scenario, rulegen: RuleSet, terms: RuleSet, tmp: Path
) -> GapResult:
    """One scenario on its own data: raw counters (with its burst, without the scrapes of a
    Prometheus down), recordings backfilled around the hole, the SLI and coverage at T, then
    ``rulegen repair`` and the same again; for the last-day scenario, the SLI at every minute
    of the last day, with the rules as built and (on another copy) with the terms only."""
    base = tmp / f"gap{index}"
    base.mkdir()
    began = time.perf_counter()
    down = scenario.hole if scenario.down else None
    raw, traffic = _raw_data(GAP_SERIES, base, 0, scenario.burst_span, down)
    result = GapResult(scenario, traffic.exact.ratio)
    filled = 0.0
    last_record = [rule.record for rule in rulegen.rules if rule.record][-1]
    since = {
        SLI_METRIC: T - DAY if scenario.last_day else T,
        COVERAGE: T,
        str(last_record): scenario.hole[0] - REPAIR_FROM,  # where the repair finds the hole
    }
    rules = load_rules(rulegen.name, rulegen.paths, rulegen.sli, since)
    workdir = base / rulegen.name
    workdir.mkdir()
    shutil.copytree(raw, workdir / "data")
    server = PrometheusServer(workdir / "data", workdir, flags=WRITABLE, storage=STORAGE)
    try:
        server.start()
        check_raw(server, traffic.exact)
        backfill(server, rules, workdir, scenario.hole)
        filled = time.perf_counter() - began
        result.before = _value(server, RULEGEN_SLI, T)
        result.coverage_before = _value(server, RULEGEN_COVERAGE, T)
        if scenario.last_day:
            result.last_day["fallbacks"] = _last_day(server, traffic, RULEGEN_SLI)
        began = time.perf_counter()
        result.repair_output = _repair(server, rulegen.paths[0].parents[2] / "specs", scenario.hole)
        result.repair_seconds = time.perf_counter() - began
        result.after = _value(server, RULEGEN_SLI, T)
        result.coverage_after = _value(server, RULEGEN_COVERAGE, T)
        if scenario.last_day:
            result.last_day["after repair"] = _last_day(server, traffic, RULEGEN_SLI)
    except RuntimeError as err:
        result.error = str(err)
    finally:
        server.stop()
    _log(
        f"gaps: {scenario.name}: backfilled in {filled:.1f}s, repaired in"
        f" {result.repair_seconds:.1f}s" + (f"; ERROR {result.error}" if result.error else "")
    )
    for line in result.repair_output.splitlines():
        _log(f"  {line}")
    if scenario.last_day and result.error is None:
        workdir = base / terms.name
        workdir.mkdir()
        shutil.copytree(raw, workdir / "data")
        rules = load_rules(terms.name, terms.paths, terms.sli, {SLI_METRIC: T - DAY})
        began = time.perf_counter()
        try:
            with running(workdir / "data", workdir) as server:
                backfill(server, rules, workdir, scenario.hole)
                result.last_day["terms only"] = _last_day(server, traffic, RULEGEN_SLI)
        except RuntimeError as err:
            result.error = f"{terms.name}: {err}"
        _log(f"gaps: {scenario.name}: {terms.name} in {time.perf_counter() - began:.1f}s")
    shutil.rmtree(base)
    return result


def _rel_text(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:+.4f}%"


def _coverage_text(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.6g}"


def print_gaps(results: list[GapResult]) -> None:
    """The markdown tables of the gap scenarios."""
    print(
        f"\nGap scenarios ({GAP_SERIES} series, 99.9% / 30d, 30d SLI and coverage at T;"
        f" bursts of {BURST_RATIO:.0%} errors from 10 minutes before the hole to 10 after):\n"
    )
    head = ["scenario", "hole", "exact 30d SLI", "SLI before", "coverage before", "repair s",
            "SLI after", "coverage after"]  # fmt: skip
    print("| " + " | ".join(head) + " |")
    print("| --- | --- | " + " | ".join("---:" for _ in head[2:]) + " |")
    for r in results:
        hole = (
            f"T-{_span(T - r.scenario.hole[0])}, {_span(r.scenario.hole[1] - r.scenario.hole[0])}"
        )
        cells = [
            r.scenario.name + (" (ERROR)" if r.error else ""),
            hole,
            _pct(r.exact),
            _rel_text(r.rel(r.before)),
            _coverage_text(r.coverage_before),
            f"{r.repair_seconds:.1f}",
            _rel_text(r.rel(r.after)),
            _coverage_text(r.coverage_after),
        ]
        print("| " + " | ".join(cells) + " |")
    for r in results:
        if not r.last_day:
            continue
        print(
            f"\n{r.scenario.name}: the 30d SLI at every minute of the last day before T"
            f" ({DAY // STEP + 1} minutes) against the exact ratio:\n"
        )
        print(f"| rules | worst minute | minutes off by > {TARGET_LAST_DAY:.0%} |")
        print("| --- | ---: | ---: |")
        for name in ("fallbacks", "terms only", "after repair"):
            if name in r.last_day:
                day = r.last_day[name]
                print(f"| {name} | {_rel_text(day.worst)} | {day.off * 100:.2f}% |")


def check_gaps(results: list[GapResult]) -> bool:
    """Print the gap targets and whether they hold; True when none fails."""
    ok = True
    print("\nGap targets:")
    for r in results:
        name = r.scenario.name
        checks = [
            (f"coverage at T < 1 before the repair ({_coverage_text(r.coverage_before)})",
             r.coverage_before is not None and r.coverage_before < 1),
            (f"coverage at T exactly 1 after it ({_coverage_text(r.coverage_after)})",
             r.coverage_after == 1),
        ]  # fmt: skip
        if r.scenario.burst:
            rel = r.rel(r.after)
            checks.append(
                (f"30d SLI within {TARGET_SLI_REL_ERROR:.1%} of exact after it ({_rel_text(rel)})",
                 rel is not None and abs(rel) <= TARGET_SLI_REL_ERROR)
            )  # fmt: skip
        if r.scenario.last_day:
            day = r.last_day.get("fallbacks")
            got = "n/a" if day is None else f"worst {_rel_text(day.worst)}"
            checks.append(
                (f"no minute of the last day off by > {TARGET_LAST_DAY:.0%} with the fallbacks"
                 f" ({got})", day is not None and day.off == 0)
            )  # fmt: skip
        for text, held in checks:
            held = held and r.error is None
            print(f"- {name}: {text}: {_verdict(held)}")
            ok = ok and held
        if r.error:
            print(f"  ERROR {r.error}")
    return ok


def run_gaps(rulegen: RuleSet, terms: RuleSet, tmp: Path) -> list[GapResult]:
    """Every gap scenario, one after the other."""
    return [run_gap(i, s, rulegen, terms, tmp) for i, s in enumerate(SCENARIOS)]


def main() -> int:
    """Run the benchmark; returns the exit status."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--series", type=int, nargs="+", default=[10, 100], help="raw series")
    parser.add_argument("--verbose", action="store_true", help="print every rule's cost and value")
    parser.add_argument(
        "--scrape-offset",
        type=int,
        default=0,
        metavar="SECONDS",
        help="scrape timestamps this many seconds after the rule evaluations (0-59; default 0:"
        " aligned, as rulegen assumes)",
    )
    parser.add_argument(
        "--gaps",
        action=argparse.BooleanOptionalAction,
        default=True,
        help=f"run the gap scenarios at {GAP_SERIES} series (default: on)",
    )
    parser.add_argument(
        "--declare",
        metavar="VERSION",
        help="build rulegen's rules for this prometheus.version instead of the server's "
        '(e.g. "2.42" on a 3.5 server: the 2.x rules under left-open ranges)',
    )
    args = parser.parse_args()
    global DECLARED  # noqa: PLW0603  # one run's setting, read by build_rulegen
    DECLARED = args.declare
    sizes: list[int] = args.series
    offset: int = args.scrape_offset
    if any(size < 2 for size in sizes) or len(set(sizes)) != len(sizes):
        parser.error("--series values must be distinct and >= 2")
    if not 0 <= offset < STEP:
        parser.error(f"--scrape-offset must be in [0, {STEP})")
    for tool in ("prometheus", "promtool"):
        if shutil.which(tool) is None:
            parser.error(f"{tool} not found on PATH")
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="slo-cost-") as name:
        tmp = Path(name)
        rule_sets = [load_rules("Sloth", [SLOTH_RULES], SLOTH_SLI)]
        rulegen_error = None
        try:
            rule_sets.append(build_rulegen(tmp))
            rule_sets.append(terms_only(rule_sets[-1], tmp))
        except (RuntimeError, ValueError, KeyError, TypeError, yaml.YAMLError) as err:
            rulegen_error = f"{type(err).__name__}: {err}"
            _log(f"rulegen: {rulegen_error}")
        rows = [row for size in sizes for row in run_size(size, rule_sets, tmp, offset)]
        with_gaps = args.gaps and not rulegen_error and not _declared_otherwise()
        gaps = run_gaps(rule_sets[1], rule_sets[2], tmp) if with_gaps else []
    print_table(rows)
    ok = check_targets(rows, sizes, rulegen_error)
    if gaps:
        print_gaps(gaps)
        ok = check_gaps(gaps) and ok
    print_notes(rule_sets, rows, args.verbose)
    files = "; ".join(f"{rs.name}: {', '.join(p.name for p in rs.paths)}" for rs in rule_sets)
    print(
        f"\nRun time: {time.perf_counter() - began:.0f}s. T = {T} (2024-03-01T00:00:00Z),"
        f" data from T-31d every {STEP}s (scrape offset {offset}s), seed {SEED}."
        f"\nRule files: {files}."
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
