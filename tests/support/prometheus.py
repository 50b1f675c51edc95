"""Synthetic history in a real Prometheus: raw series and recordings backfilled with promtool.

Why: a dashboard panel or a replayed alert is only proven when the real query engine returns
data for it. The series of rulegen's generated tests are backfilled into a TSDB
(``promtool tsdb create-blocks-from openmetrics``), then every recording rule is backfilled
level by level (``create-blocks-from rules`` evaluates through a running server, so a
recording that reads another one waits until that one's blocks are loaded).

Why under ``tests/support`` and not in the package: only the tests and the benchmarks
(``benchmarks/slo_cost.py`` puts ``tests/`` on ``sys.path``) start a Prometheus; rulegen
itself never does.
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from rulegen.core import promql
from rulegen.validate.tools import find_tool, run_tool

NEEDS_PROMETHEUS = pytest.mark.skipif(
    shutil.which("prometheus") is None or shutil.which("promtool") is None,
    reason="needs prometheus and promtool",
)
"""The mark of a test that starts a real Prometheus on backfilled blocks."""

HOST = "127.0.0.1"
# `create-blocks-from rules` evaluates a group at `slot + offset`, offset being Prometheus'
# per-group jitter: xxhash64 of the labels {file, name}, modulo the interval. The labels are
# hashed as `name 0xff value 0xff …` by 2.x and as `len name len value …` by 3.x (its
# "stringlabels"), so each major version needs its own group name: these give an offset of
# 87 µs (2.x) and 165 µs (3.x) for any interval dividing 60s, rounded away by the API's
# millisecond timestamps, so backfilled samples land on exact multiples.
BACKFILL_FILE = "rules.yml"
BACKFILL_GROUPS = {2: "backfill-1149011", 3: "backfill-20247"}


@functools.cache
def backfill_group() -> str:
    """The backfill group name for the promtool in use (by its major version)."""
    text = run_tool([find_tool("promtool", _HINT), "--version"], Path.cwd(), 30).stdout
    found = re.search(r"version (\d+)\.", text)
    major = int(found.group(1)) if found else 2
    return BACKFILL_GROUPS[3 if major >= 3 else 2]


MAX_POINTS = 11000  # the query API's limit of points per series
# What ``rulegen repair`` needs of a server (``PrometheusServer(flags=, storage=)``): the admin
# API, the remote-write receiver, and an out-of-order window reaching back to backfilled
# history (the tests' and the benchmarks' histories are years old).
WRITABLE = ("--web.enable-admin-api", "--web.enable-remote-write-receiver")
STORAGE = {"tsdb": {"out_of_order_time_window": "3650d"}}
_HINT = "install the Debian package prometheus"


def free_port() -> int:
    """A port nothing listens on right now on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


# a number of the notation, exponent included (``4.87e-05``: its sign is not an increment's)
_NUMBER = r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"


def expand_values(text: str) -> list[float | None]:
    """promtool's expanding notation (``0+15x3 _ 7 stale``) → one value per step
    (``None`` for a missing or stale sample)."""
    out: list[float | None] = []
    for token in text.split():
        if token in ("_", "stale"):
            out.append(None)
            continue
        missing = re.fullmatch(r"_x(\d+)", token)
        if missing:
            out.extend([None] * int(missing.group(1)))
            continue
        step = re.fullmatch(rf"(-?{_NUMBER})([+-])({_NUMBER})x(\d+)", token)
        if step:
            start, sign, delta, count = step.groups()
            increment = float(delta) if sign == "+" else -float(delta)
            out.extend(float(start) + increment * i for i in range(int(count) + 1))
            continue
        repeat = re.fullmatch(rf"(-?{_NUMBER})x(\d+)", token)  # ``axn`` is ``a+0xn``
        if repeat:
            out.extend([float(repeat.group(1))] * (int(repeat.group(2)) + 1))
            continue
        out.append(float(token))
    return out


def openmetrics(series: Iterable[tuple[str, Sequence[tuple[int, float]]]]) -> str:
    """Series (``name{labels}`` as promtool writes them, samples at Unix seconds) as an
    OpenMetrics file: the samples of one series together and in time order (a series may
    come several times, e.g. once per test case), the series of one metric name together."""
    merged: dict[tuple[str, str], dict[int, float]] = {}
    for selector, samples in series:
        name, matchers = promql.parse_selector(selector)
        labels = ",".join(f"{m.name}={_label_value(m.value)}" for m in sorted(matchers, key=str))
        merged.setdefault((name, labels), {}).update(samples)
    lines = [
        f"{name}{{{labels}}} {_number(v)} {t}\n"
        for (name, labels), samples in sorted(merged.items())
        for t, v in sorted(samples.items())
    ]
    return "".join(lines) + "# EOF\n"


def _label_value(value: str) -> str:
    """An OpenMetrics label value: only backslash, double quote and newline are escaped."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def _number(value: float) -> str:
    return repr(value) if value == value else "NaN"


def promtool(args: Sequence[str], cwd: Path, timeout: int = 600) -> None:
    """Run promtool; raise with its output when it fails."""
    argv = [find_tool("promtool", _HINT), *args]
    proc = run_tool(argv, cwd, timeout)
    if proc.returncode != 0:
        raise RuntimeError(
            f"promtool {' '.join(args[:3])} failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}"
        )


def create_blocks_from_openmetrics(source: Path, data_dir: Path) -> None:
    """Raw series into TSDB blocks (one long block: promtool rereads the file per block)."""
    promtool(
        ["tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=1458h",
         str(source), str(data_dir)],
        source.parent,
    )  # fmt: skip


class PrometheusServer:
    """A Prometheus on a data directory, on a free 127.0.0.1 port, without targets or rules
    (unless given ``scrape_configs`` and ``rule_files``)."""

    def __init__(
        self,
        data_dir: Path,
        workdir: Path,
        interval: int = 60,
        scrape_configs: Sequence[Mapping[str, Any]] = (),
        flags: Sequence[str] = (),
        storage: Mapping[str, Any] | None = None,
        rule_files: Sequence[Path] = (),
    ) -> None:
        self.data_dir = data_dir
        self.flags = tuple(flags)  # e.g. --web.enable-admin-api (``rulegen repair``)
        self.config = workdir / "prometheus.yml"
        config: dict[str, Any] = {
            "global": {"scrape_interval": f"{interval}s", "evaluation_interval": f"{interval}s"}
        }
        if scrape_configs:
            config["scrape_configs"] = [dict(c) for c in scrape_configs]
        if storage:
            config["storage"] = dict(storage)
        if rule_files:
            config["rule_files"] = [str(path) for path in rule_files]
        self.config.write_text(yaml.safe_dump(config))
        self.log = workdir / "prometheus.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""

    def start(self) -> None:
        """Start and wait until ``/-/ready`` answers (or fail with the log's tail)."""
        port = free_port()
        self.url = f"http://{HOST}:{port}"
        binary = find_tool("prometheus", _HINT)
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                [
                    binary,
                    f"--config.file={self.config}",
                    f"--storage.tsdb.path={self.data_dir}",
                    f"--web.listen-address={HOST}:{port}",
                    "--storage.tsdb.retention.time=3650d",
                    *self.flags,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                tail = self.log.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"prometheus exited with {self.proc.returncode}:\n{tail}")
            try:
                with urllib.request.urlopen(self.url + "/-/ready", timeout=5) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.1)
        raise RuntimeError("prometheus did not become ready within 120s")

    def stop(self) -> None:
        """Terminate (then kill after 30s) the server, if running."""
        if self.proc is None:
            return
        proc, self.proc = self.proc, None
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def api(self, path: str, params: Mapping[str, str]) -> dict[str, Any]:
        """GET ``/api/v1/<path>``; returns the response's ``data`` (raises with the error)."""
        url = f"{self.url}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        try:
            with urllib.request.urlopen(url, timeout=300) as response:
                body = json.load(response)
        except urllib.error.HTTPError as err:
            raise RuntimeError(f"{path} failed ({err.code}): {err.read().decode()[:500]}") from err
        data: dict[str, Any] = body["data"]
        return data

    def query(self, expr: str, at: float, stats: bool = False) -> dict[str, Any]:
        """Instant query at ``at``."""
        params = {"query": expr, "time": f"{at:.3f}"}
        if stats:
            params["stats"] = "all"
        return self.api("query", params)


@contextmanager
def running(
    data_dir: Path,
    workdir: Path,
    interval: int = 60,
    scrape_configs: Sequence[Mapping[str, Any]] = (),
) -> Iterator[PrometheusServer]:
    """A started Prometheus, stopped on exit (errors included)."""
    server = PrometheusServer(data_dir, workdir, interval, scrape_configs)
    try:
        server.start()
        yield server
    finally:
        server.stop()


def move_blocks(source: Path, data_dir: Path) -> int:
    """Move the TSDB blocks promtool wrote into the server's data directory."""
    moved = 0
    if source.is_dir():
        for block in source.iterdir():
            if (block / "meta.json").is_file():
                shutil.move(str(block), data_dir / block.name)
                moved += 1
    return moved


def recording_levels(rule_files: Iterable[Path]) -> list[list[dict[str, Any]]]:
    """Every recording rule of the files, grouped by level: 0 reads only raw series,
    n reads recordings of levels below n."""
    rules: list[dict[str, Any]] = []
    for path in rule_files:
        for group in (yaml.safe_load(path.read_text()) or {}).get("groups") or []:
            rules.extend(r for r in group.get("rules") or [] if "record" in r)
    names = {str(r["record"]) for r in rules}
    reads = {id(r): {name for name, _ in promql.selectors(r["expr"])} & names for r in rules}
    level: dict[str, int] = {}
    pending = list(rules)
    while pending:
        ready = [r for r in pending if all(n in level for n in reads[id(r)])]
        if not ready:
            raise ValueError(f"recording cycle among {sorted(r['record'] for r in pending)}")
        for rule in ready:
            below = [level[n] for n in reads[id(rule)]]
            level[rule["record"]] = max(level.get(rule["record"], 0), 1 + max(below, default=-1))
        pending = [r for r in pending if r not in ready]
    out: list[list[dict[str, Any]]] = [[] for _ in range(max(level.values(), default=-1) + 1)]
    for rule in rules:
        out[level[rule["record"]]].append(rule)
    return out


def backfill_recordings(
    server: PrometheusServer,
    levels: Sequence[Sequence[Mapping[str, Any]]],
    span: tuple[int, int],
    interval: int,
    workdir: Path,
) -> None:
    """Backfill every recording over ``span`` (Unix seconds), one level at a time; the server
    is restarted after each level so the next one reads its blocks."""
    start, end = span
    block_hours = max(h for h in (2, 6, 18, 54, 162) if h * 3600 // interval <= MAX_POINTS)
    for index, rules in enumerate(levels):
        run_dir = workdir / f"backfill-level{index}"
        run_dir.mkdir()
        group = {
            "name": backfill_group(),
            "interval": f"{interval}s",
            "rules": [
                {k: rule[k] for k in ("record", "expr", "labels") if k in rule} for rule in rules
            ],
        }
        (run_dir / BACKFILL_FILE).write_text(yaml.safe_dump({"groups": [group]}))
        promtool(
            ["tsdb", "create-blocks-from", "rules", "--quiet",
             f"--max-block-duration={block_hours}h", f"--start={start}", f"--end={end}",
             f"--url={server.url}", f"--eval-interval={interval}s", "--output-dir=out",
             BACKFILL_FILE],
            run_dir,
        )  # fmt: skip
        server.stop()
        move_blocks(run_dir / "out", server.data_dir)
        server.start()
