"""CI speed (issue 17): every figure beside its target and a floor measured in the same run.

Run:
    .venv/bin/python benchmarks/ci_speed.py [--render-sizes 200 1000] [--suite] [--json FILE]
    .venv/bin/python benchmarks/ci_speed.py --quick     # while developing: 20 and 50 services
    .venv/bin/python benchmarks/ci_speed.py --example-fleet [--example-sizes 200 1000]

Every figure is taken in a fresh temporary copy of the repository's ``specs/`` and ``signals/``,
with ``rulegen`` run as a real subprocess (the venv's console script), so start-up and imports
count as a user sees them; CPU is the ``RUSAGE_CHILDREN`` delta, so rulegen's workers and every
promtool and amtool it starts count too. Run it on a quiet machine: a shared one slows each
figure by up to 2x. Lines and, with ``--json``, the figures:

1. Validated cold build of ``specs/`` (``rulegen build --out OUT``, no test cache): wall
   ≤ 10 s, CPU ≤ 15 s. Floor: promtool's time for one evaluation step of the same rule files,
   one promtool run per generated test file (as the build runs them) with one test case, one
   input series and one ``alert_rule_test`` at ``eval_time: 0s``, summed: what loading the
   rules and starting promtool cost before any test scenario is evaluated. Below it, each
   test file's own ``promtool test rules`` time, slowest first: where the time goes.
2. Warm build with ``--test-cache`` when nothing changed (the second of two runs): ≤ 1 s.
   Anchor: the first run, which filled the cache, and the ``--no-validate`` build (4.).
3. ``rulegen --version`` and ``rulegen --help``, best of 5: ≤ 0.15 s each. Anchor: ``python -c
   pass``, the interpreter's own start-up, which no command can beat.
4. ``rulegen build --no-validate`` of ``specs/``, best of 3: ≤ 0.8 s. Anchor: ``--version``,
   the start-up and import cost every command pays; the rest is rendering.
5. Render only (``--no-validate``, all cores as the CLI does) of fleets of the example spec
   reduced to its ``alerts:`` (no ``slos:``, no ``diagnoses:``), one service per copy: 200
   services ≤ 4 s; 1,000 services ≤ 3x the floor, a C-dumper ``yaml.dump`` of the same rule data
   on one core (build_scale.py's floor): the least that writing those rules costs.
6. With ``--suite``: ``make test`` (the README's test command: the whole suite in two pytest
   processes) ≤ 5 min and ``make test-fast`` ≤ 60 s, from the repository root. Anchor:
   ``pytest --collect-only -q``, importing and collecting every test.
7. Render speed (issue 32): ``rulegen build --no-validate`` of fleets of copies of the example's
   whole service spec (alerts, SLOs, diagnoses; ``specs/defaults.yaml`` extended, each copy
   its own service; ``--example-sizes``, default 200 and 1,000): wall (200: ≤ 6 s; 1,000:
   ≤ 30 s), CPU (all processes) and the peak memory of the process tree (the build and its
   workers, their RSS summed every 20 ms; 1,000: ≤ 1 GB = 1,000 MB). Floors, same run: the
   C-dumper ``yaml.dump`` and ``json.dumps`` of the data of every file the build wrote, on one
   core (the least that writing it costs), and the peak memory of a one-service build
   (start-up). ``--example-fleet`` measures only these.

Lines are printed as they are measured (start-up and the --no-validate build first: the warm
build's anchor). Exit status 1 when a figure misses its target or its command fails (figures
without a target at the size measured, such as --quick's fleets, are printed for the reader only).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Any

import yaml
from build_scale import REPO, dump_floor, fleet, rules_only

from rulegen.catalog import load_catalog
from rulegen.units import parse_duration
from rulegen.validate.tools import tool_environment

_SCRIPT = Path(sys.executable).with_name("rulegen")
# The console script a user runs (start-up as they see it), else the module.
RULEGEN = [str(_SCRIPT)] if _SCRIPT.is_file() else [sys.executable, "-m", "rulegen"]
PROMTOOL = shutil.which("promtool") or "promtool"


@dataclass(frozen=True)
class Run:
    """One finished subprocess: wall and CPU seconds (itself and every descendant)."""

    wall: float
    cpu: float
    code: int
    output: str

    def failure(self) -> str:
        """Empty when the command succeeded, else its exit code and last output line."""
        if self.code == 0:
            return ""
        lines = self.output.strip().splitlines() or [""]
        return f"exit {self.code}: {lines[-1][:160]}"


@dataclass
class Figure:
    """One printed line: a measured value, its target (≤), and the anchor measured beside it."""

    name: str
    value: float
    target: float | None
    anchor: str
    unit: str = "s"
    error: str = ""
    details: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        """'meets', 'MISSES' (over target or the command failed), '-' without a target."""
        if self.target is None:
            return "MISSES" if self.error else "-"
        return "meets" if not self.error and self.value <= self.target else "MISSES"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> Run:
    """Run ``argv`` in ``cwd`` to completion, output captured (not a TTY: no progress)."""
    cpu, start = _children_cpu(), time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False, env=env)
    wall = time.perf_counter() - start
    return Run(wall, _children_cpu() - cpu, proc.returncode, proc.stdout + proc.stderr)


def best_of(times: int, argv: list[str], cwd: Path) -> Run:
    """The fastest of ``times`` runs (a failed run wins, so its failure is reported)."""
    runs = [run(argv, cwd) for _ in range(times)]
    return min(runs, key=lambda r: (r.code == 0, r.wall))


def workspace(folder: Path) -> Path:
    """A fresh copy of the repository's ``specs/`` and ``signals/`` in ``folder``."""
    for name in ("specs", "signals"):
        shutil.copytree(REPO / name, folder / name)
    return folder


def log(message: str) -> None:
    """Progress on stderr, so that stdout holds only the figures."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# --- the machine ----------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    """CPU count and model, load, promtool and rulegen versions: what the figures depend on."""
    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        found = re.search(r"^model name\s*:\s*(.+)$", cpuinfo.read_text(), re.MULTILINE)
        model = found[1] if found else model
    promtool = run([PROMTOOL, "--version"], REPO).output.strip().splitlines()
    return {
        "cpus": os.cpu_count(), "usable_cpus": len(os.sched_getaffinity(0)), "model": model,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "promtool": promtool[0] if promtool else "not found",
        "rulegen": run([*RULEGEN, "--version"], REPO).output.strip(),
        "python": platform.python_version(), "date": time.strftime("%Y-%m-%d %H:%M"),
    }  # fmt: skip


def print_machine(info: dict[str, Any]) -> None:
    """The header: the machine the figures were taken on."""
    load = " ".join(str(x) for x in info["load_average"])
    print(
        f"machine: {info['cpus']} CPUs ({info['usable_cpus']} usable), {info['model']}, "
        f"load {load}; {info['promtool']}; {info['rulegen']}; Python {info['python']}; "
        f"{info['date']}"
    )
    print(f"{'figure':<52} {'measured':>10} {'target':>9}  {'verdict':<7} floor / anchor")


def print_figure(figure: Figure) -> None:
    """One line per figure, its details indented below it."""
    unit = figure.unit
    target = "-" if figure.target is None else f"≤ {figure.target:g} {unit}"
    anchor = figure.anchor + (f"; FAILED {figure.error}" if figure.error else "")
    print(
        f"{figure.name:<52} {figure.value:>8.2f} {unit:<1} {target:>9}  "
        f"{figure.verdict:<7} {anchor}"
    )
    for line in figure.details:
        print(f"    {line}")


# --- 1. the validated cold build, promtool per file, and the one-step floor -----------------------


def cold_build(tmp: Path) -> list[Figure]:
    """Wall and CPU of a validated build without a test cache, against promtool's floor."""
    root = workspace(tmp / "cold")
    log("cold validated build of specs/")
    build = run([*RULEGEN, "build", "--out", "OUT"], root)
    out = built_output(root)
    tests = sorted((out / "tests").glob("*.yml"))
    log(f"promtool one by one on {len(tests)} test files, then the one-step floor")
    per_file = sorted(((t, promtool_test(t, out)) for t in tests), key=lambda x: -x[1].wall)
    floor = [promtool_test(floor_test(t, root / "floor"), root / "floor") for t in tests]
    floor_wall, floor_cpu = sum(r.wall for r in floor), sum(r.cpu for r in floor)
    details = [
        f"promtool test rules tests/{t.name}: {r.wall:.2f} s wall, {r.cpu:.2f} s CPU, "
        f"{evaluation_steps(t):,} evaluation steps" + (f" ({r.failure()})" if r.failure() else "")
        for t, r in per_file
    ]
    details.append(
        f"the {len(per_file)} files one by one: {sum(r.wall for _, r in per_file):.2f} s wall, "
        f"{sum(r.cpu for _, r in per_file):.2f} s CPU"
    )
    floor_text = f"({len(floor)} promtool runs of one evaluation step, summed)"
    failed = next((r.failure() for r in floor if r.failure()), "")
    return [
        Figure("cold validated build of specs/: wall", build.wall, 10.0,
               f"floor {floor_wall:.2f} s wall {floor_text}", error=build.failure()),
        Figure("cold validated build of specs/: CPU (all processes)", build.cpu, 15.0,
               f"floor {floor_cpu:.2f} s CPU", error=build.failure() or failed, details=details),
    ]  # fmt: skip


def built_output(root: Path) -> Path:
    """The build's output folder; rendered without validation if the build wrote none."""
    out = root / "OUT"
    if not (out / "tests").is_dir():
        run([*RULEGEN, "build", "--no-validate", "--out", "OUT"], root)
    return out


def promtool_test(test: Path, cwd: Path) -> Run:
    """``promtool test rules FILE`` alone, in ``cwd``, in the environment rulegen gives it."""
    return run([PROMTOOL, "test", "rules", str(test.relative_to(cwd))], cwd, tool_environment())


def evaluation_steps(test: Path) -> int:
    """How many times promtool evaluates every rule of the file's rule files: per test
    group, from 0 to its last ``eval_time`` at the file's ``evaluation_interval``."""
    source = yaml.safe_load(test.read_text())
    interval = parse_duration(str(source.get("evaluation_interval", "1m")))
    steps = 0
    for case in source.get("tests") or []:
        checks = [*(case.get("alert_rule_test") or []), *(case.get("promql_expr_test") or [])]
        last = max((parse_duration(str(c["eval_time"])) for c in checks), default=Decimal(0))
        steps += int(last / interval) + 1
    return steps


def floor_test(test: Path, folder: Path) -> Path:
    """A test of ``test``'s rule files with one series and one alert check at 0s: one step."""
    source = yaml.safe_load(test.read_text())
    rule_files = [os.path.normpath(test.parent / name) for name in source["rule_files"]]
    interval = source.get("evaluation_interval", "1m")
    case = {
        "name": "one evaluation step",
        "interval": interval,
        "input_series": [{"series": 'rulegen_floor{job="floor"}', "values": "1"}],
        "alert_rule_test": [
            {"eval_time": "0s", "alertname": first_alert(rule_files), "exp_alerts": []}
        ],
    }
    document = {"rule_files": rule_files, "evaluation_interval": interval, "tests": [case]}
    folder.mkdir(exist_ok=True)
    path = folder / test.name
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def first_alert(rule_files: list[str]) -> str:
    """The name of the first alerting rule in the files (promtool checks its state at 0s)."""
    for pattern in map(Path, rule_files):
        for path in sorted(pattern.parent.glob(pattern.name)):
            groups = (yaml.safe_load(path.read_text()) or {}).get("groups") or []
            for rule in (rule for group in groups for rule in group.get("rules") or []):
                if "alert" in rule:
                    return str(rule["alert"])
    return "RulegenFloor"


# --- 2.-4. the warm build, start-up, the build without validation ---------------------------------


def start_up(tmp: Path) -> tuple[list[Figure], float]:
    """``--version`` and ``--help`` against ``python -c pass``; returns the version time too."""
    log("start-up: python -c pass, rulegen --version, rulegen --help (best of 5 each)")
    python = best_of(5, [sys.executable, "-c", "pass"], tmp)
    anchor = f"python -c pass {python.wall:.3f} s"
    figures = [
        Figure(f"rulegen {flag}: best of 5 wall", r.wall, 0.15, anchor, error=r.failure())
        for flag, r in ((f, best_of(5, [*RULEGEN, f], tmp)) for f in ("--version", "--help"))
    ]
    return figures, figures[0].value


def no_validate(tmp: Path, version: float) -> Figure:
    """``build --no-validate`` of ``specs/``, best of 3, each into a fresh output folder."""
    log("build --no-validate of specs/ (best of 3)")
    root = workspace(tmp / "no-validate")
    runs = [run([*RULEGEN, "build", "--no-validate", "--out", f"OUT{i}"], root) for i in range(3)]
    best = min(runs, key=lambda r: (r.code == 0, r.wall))
    anchor = f"rulegen --version {version:.3f} s (start-up); {best.cpu:.2f} s CPU"
    return Figure("build --no-validate of specs/: best of 3 wall", best.wall, 0.8, anchor,
                  error=best.failure())  # fmt: skip


def warm_build(tmp: Path, rendered: float) -> Figure:
    """The second of two ``--test-cache`` builds: nothing changed since the first."""
    log("warm build: --test-cache filled by a first run, then measured")
    root = workspace(tmp / "warm")
    argv = [*RULEGEN, "build", "--out", "OUT", "--test-cache", ".test-cache"]
    fill = run(argv, root)
    warm = run(argv, root)
    anchor = f"first (filling) run {fill.wall:.2f} s; --no-validate build {rendered:.2f} s"
    return Figure("warm build, --test-cache, nothing changed: wall", warm.wall, 1.0, anchor,
                  error=fill.failure() or warm.failure())  # fmt: skip


# --- 5. render only: fleets of the example spec's alerts ------------------------------------------


def alerts_only(text: str) -> str:
    """The spec without its top-level ``slos:`` and ``diagnoses:`` blocks."""
    kept, keep = [], True
    for line in text.splitlines(keepends=True):
        key = re.match(r"([A-Za-z_]+):", line)
        if key:
            keep = key[1] not in ("slos", "diagnoses")
        if keep:
            kept.append(line)
    return "".join(kept)


def render(tmp: Path, size: int) -> list[Figure]:
    """Render ``size`` alert-only services on all cores, against one core's C-dumper floor."""
    log(f"render only: {size} services")
    root = tmp / f"fleet-{size}"
    (root / "specs").mkdir(parents=True)
    shutil.copytree(REPO / "signals", root / "signals")
    paths = fleet(root / "specs", size)
    for path in paths:
        path.write_text(alerts_only(path.read_text()))
    built = run([*RULEGEN, "build", "--no-validate", "--out", "OUT"], root)
    data = rules_only(paths, load_catalog([root / "signals"]))
    floor = dump_floor(data)
    everything = output_floor(root / "OUT")
    rules = [rule for item in data for group in item["groups"] for rule in group["rules"]]
    alerts = sum("alert" in rule for rule in rules)
    ratio = built.wall / floor
    anchor = f"floor {floor:.2f} s (C-dumper, 1 core, {len(rules):,} rules); {built.cpu:.1f} s CPU"
    name = f"render only, {size:,} services x {alerts / size:.0f} alerts"
    warm = warm_render(root) if size == 200 else []
    return [
        *warm,
        Figure(f"{name}: wall", built.wall, 4.0 if size == 200 else None, anchor,
               error=built.failure()),
        Figure(f"{name}: ÷ floor", ratio, 3.0 if size == 1000 else None,
               f"{built.wall:.2f} s ÷ {floor:.2f} s", unit="x", error=built.failure()),
        Figure(f"{name}: ÷ floor of all output", built.wall / everything, None,
               f"{built.wall:.2f} s ÷ {everything:.2f} s (C-dumper and json.dumps of every "
               "file written: rules, tests, dashboards, 1 core)", unit="x",
               error=built.failure()),
    ]  # fmt: skip


def warm_render(root: Path) -> list[Figure]:
    """The fleet rendered again with the render cache filled and nothing changed: only the
    specs' loading and rule groups remain (the files come from ``DIR/render``)."""
    argv = [*RULEGEN, "build", "--no-validate", "--test-cache", ".cache"]
    fill = run([*argv, "--out", "FILL"], root)
    warm = run([*argv, "--out", "WARM"], root)
    same = snapshot(root / "FILL") == snapshot(root / "WARM") == snapshot(root / "OUT")
    anchor = f"filling run {fill.wall:.2f} s; {warm.cpu:.1f} s CPU; same bytes: {same}"
    error = fill.failure() or warm.failure() or ("" if same else "output differs")
    return [Figure("render, 200 services, --test-cache, nothing changed: wall", warm.wall,
                   None, anchor, error=error)]  # fmt: skip


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` by relative name (the manifest aside: it names the folder)."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != ".rulegen-manifest.json"
    }


def output_floor(folder: Path) -> float:
    """Seconds to dump, on one core with the C dumper (and ``json.dumps`` for dashboards),
    the data of every file a render wrote: the least writing costs for all of the output,
    where ``dump_floor`` covers the rule files only (a quarter of the bytes)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    documents = [yaml.load(p.read_text(), Loader=loader) for p in sorted(folder.rglob("*.yml"))]
    dashboards = [json.loads(p.read_text()) for p in sorted(folder.rglob("*.json"))]
    start = time.perf_counter()
    for document in documents:
        yaml.dump(document, Dumper=dumper, sort_keys=False)
    for dashboard in dashboards:
        json.dumps(dashboard, indent=2, sort_keys=True, ensure_ascii=False)
    return time.perf_counter() - start


# --- 7. render speed: fleets of the example's whole service spec (issue 32) ----------------------

# Wall targets by fleet size (issue 32), and the peak memory target of the largest.
EXAMPLE_WALL = {200: 6.0, 1000: 30.0}
EXAMPLE_MEMORY_MB = {1000: 1000.0}
SAMPLE_SECONDS = 0.02


def example_fleet(tmp: Path, size: int, start_up_mb: float) -> list[Figure]:
    """``build --no-validate`` of ``size`` copies of the example spec: wall, CPU and the
    process tree's peak memory, against the one-core dump floor of everything it wrote."""
    log(f"render only, the example's service spec: {size} services")
    root = tmp / f"example-fleet-{size}"
    (root / "specs").mkdir(parents=True)
    shutil.copytree(REPO / "signals", root / "signals")
    fleet(root / "specs", size)
    os.sync()  # an earlier figure's files still being written back would slow this one
    built, peak = run_sampled([*RULEGEN, "build", "--no-validate", "--out", "OUT"], root)
    log(f"the floor: dumping the data of every file written ({size} services), one core")
    floor, files, written = output_floor_streamed(root / "OUT")
    shutil.rmtree(root, ignore_errors=True)
    error = built.failure()
    name = f"example spec x {size:,} services"
    wall, memory = EXAMPLE_WALL.get(size), EXAMPLE_MEMORY_MB.get(size)
    dump = (
        f"floor {floor:.2f} s (C-dumper + json.dumps of {files:,} files, {written:,.0f} MB, 1 core)"
    )
    return [
        Figure(f"{name}: wall", built.wall, wall, f"{dump}; {built.wall / floor:.1f}x",
               error=error),
        Figure(f"{name}: CPU (all processes)", built.cpu, None,
               f"{dump}; {built.cpu / floor:.1f}x", error=error),
        Figure(f"{name}: peak memory", peak, memory,
               f"a one-service build {start_up_mb:.0f} MB", unit="MB", error=error),
    ]  # fmt: skip


def start_up_memory(tmp: Path) -> float:
    """The peak memory of a one-service ``build --no-validate`` (start-up and one render)."""
    root = tmp / "example-fleet-1"
    (root / "specs").mkdir(parents=True)
    shutil.copytree(REPO / "signals", root / "signals")
    fleet(root / "specs", 1)
    _, peak = run_sampled([*RULEGEN, "build", "--no-validate", "--out", "OUT"], root)
    shutil.rmtree(root, ignore_errors=True)
    return peak


def run_sampled(argv: list[str], cwd: Path) -> tuple[Run, float]:
    """``run`` that also samples the RSS of the process and all its descendants every 20 ms;
    returns the run and the largest sum seen, in MB (10^6 bytes)."""
    cpu, start = _children_cpu(), time.perf_counter()
    proc = subprocess.Popen(
        argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    peak = 0
    output: list[str] = []
    reader = threading.Thread(
        target=lambda: output.append(proc.stdout.read() if proc.stdout else "")
    )
    reader.start()
    while proc.poll() is None:
        peak = max(peak, tree_rss(proc.pid))
        time.sleep(SAMPLE_SECONDS)
    reader.join()
    wall = time.perf_counter() - start
    run = Run(wall, _children_cpu() - cpu, proc.returncode, "".join(output))
    return run, peak / 1e6


def tree_rss(pid: int) -> int:
    """The resident memory of ``pid`` and its descendants, in bytes (0 once it is gone)."""
    total = 0
    for one in _descendants(pid):
        try:
            total += int(Path(f"/proc/{one}/statm").read_text().split()[1]) * _PAGE
        except (OSError, IndexError, ValueError):
            continue
    return total


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (``/proc/PID/task/TID/children``)."""
    out, todo = [], [pid]
    while todo:
        one = todo.pop()
        out.append(one)
        try:
            for task in Path(f"/proc/{one}/task").iterdir():
                todo.extend(int(c) for c in (task / "children").read_text().split())
        except OSError:
            continue
    return out


def output_floor_streamed(folder: Path) -> tuple[float, int, float]:
    """``output_floor`` one file at a time (a thousand services' output, loaded at once,
    would not fit in memory): seconds of dumping only, the files and their MB."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    seconds, files, size = 0.0, 0, 0
    for path in sorted(folder.rglob("*")):
        if path.suffix not in (".yml", ".yaml", ".json") or not path.is_file():
            continue
        text = path.read_text()
        files, size = files + 1, size + len(text.encode())
        if path.suffix == ".json":
            data = json.loads(text)
            start = time.perf_counter()
            json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False)
        else:
            data = yaml.load(text, Loader=loader)
            start = time.perf_counter()
            yaml.dump(data, Dumper=dumper, sort_keys=False)
        seconds += time.perf_counter() - start
    return seconds, files, size / 1e6


# --- 6. the test suite ----------------------------------------------------------------------------


def suite() -> list[Figure]:
    """``make test`` and ``make test-fast`` from the repository root."""
    log("pytest --collect-only -q (the anchor)")
    collect = run([sys.executable, "-m", "pytest", "--collect-only", "-q"], REPO)
    found = re.search(r"(\d+) tests? collected", collect.output)
    anchor = f"collecting {found[1] if found else '?'} tests {collect.wall:.1f} s"
    log("make test (the whole suite)")
    full = run(["make", "test"], REPO)
    log("make test-fast")
    fast = run(["make", "test-fast"], REPO)
    return [
        Figure("make test (the whole suite): wall", full.wall, 300.0, anchor, error=full.failure()),
        Figure("make test-fast: wall", fast.wall, 60.0, anchor, error=fast.failure()),
    ]


# --- main -----------------------------------------------------------------------------------------


def measure(args: argparse.Namespace, tmp: Path) -> list[Figure]:
    """Every figure, each printed as soon as it is measured."""
    if args.example_fleet:
        return measure_example_fleet(args, tmp)
    figures, version = start_up(tmp)
    figures.append(no_validate(tmp, version))
    for item in figures:
        print_figure(item)
    rendered = figures[-1].value
    steps: list[Callable[[], list[Figure]]] = [
        partial(cold_build, tmp), lambda: [warm_build(tmp, rendered)],
        *(partial(render, tmp, size) for size in args.render_sizes),
        lambda: measure_example_fleet(args, tmp),
    ]  # fmt: skip
    if args.suite:
        steps.append(suite)
    for step in steps:
        for item in step():
            print_figure(item)
            figures.append(item)
    return figures


def measure_example_fleet(args: argparse.Namespace, tmp: Path) -> list[Figure]:
    """Section 7 alone: each fleet of ``--example-sizes``, printed as measured (and returned
    unprinted to ``measure``, which prints its steps' figures itself)."""
    alone = args.example_fleet
    start_up_mb = start_up_memory(tmp)
    figures = []
    for size in args.example_sizes:
        for item in example_fleet(tmp, size, start_up_mb):
            if alone:
                print_figure(item)
            figures.append(item)
    return figures


def parse() -> argparse.Namespace:
    """The command line; --quick replaces the fleet sizes and drops the suite."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--render-sizes", type=int, nargs="+", default=[200, 1000])
    parser.add_argument("--suite", action="store_true", help="also time pytest and test-fast")
    parser.add_argument("--quick", action="store_true", help="render 20 and 50 services, no suite")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the figures here")
    parser.add_argument(
        "--example-fleet", action="store_true",
        help="only the render of fleets of the example's whole service spec (issue 32)",
    )  # fmt: skip
    parser.add_argument("--example-sizes", type=int, nargs="+", default=[200, 1000])
    args = parser.parse_args()
    if args.quick:
        args.render_sizes, args.suite, args.example_sizes = [20, 50], False, [20, 50]
    return args


def compile_sources() -> None:
    """Byte-compile rulegen first, as ``pip install`` does for a user's install: with
    ``PYTHONDONTWRITEBYTECODE`` set (some CI images set it) every rulegen process would
    otherwise recompile its modules and the start-up figures would measure the compiler."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(REPO / "src")],
        check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip


def main() -> int:
    """Measure, print, write the JSON; 1 when a target is missed."""
    args = parse()
    compile_sources()
    info = machine()
    print_machine(info)
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ci-speed-") as name:
        figures = measure(args, Path(name))
    checked = [f for f in figures if f.target is not None]
    met = sum(f.verdict == "meets" for f in checked)
    failed = sum(f.verdict == "MISSES" for f in figures)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"{met} of {len(checked)} targets met; run time {time.perf_counter() - began:.0f} s, "
        f"load average now {load}"
    )
    if args.json:
        rows = [{**asdict(f), "verdict": f.verdict} for f in figures]
        args.json.write_text(json.dumps({"machine": info, "figures": rows}, indent=2) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
