"""Build speed on fleets: render, validation, memory, against anchors measured in the same run.

Run: .venv/bin/python benchmarks/build_scale.py [--sizes 10 100 1000] [--validate-size 5]

Per fleet size (copies of the example spec, each its own service; each size in its own child
process, so each peak memory is its own):
- render: wall time of ``build`` (``rulegen build --no-validate``: rules, generated tests,
  dashboards, on all cores as the CLI does) and its CPU time (all processes);
- rules only: one core loading the specs and writing only their rule files;
- the floor: one core C-dumper ``yaml.dump`` of the same rule data, and both ratios to it;
- peak memory of the build process and of its largest worker; growth per 10× services.
Then the fleet nearest the issue's ≈ 20,000 rules, and for one size the validation time with
promtool on several files at once (all cores, as ``rulegen build`` does) and one by one.
Each line ends with the target it is checked against (issue "scale out"): 1,000 services ≤ 5 s
and ≤ 500 MB, ≤ 11× per 10× services, render ≤ 3× the floor, parallel validation ≥ 1.7×.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml

from rulegen.build import build, rule_groups
from rulegen.catalog import Catalog, load_catalog
from rulegen.load import SpecInputs, combine, load_one
from rulegen.outdir import write
from rulegen.output import dump_yaml
from rulegen.render.prometheus import rule_file
from rulegen.validate import promtool

REPO = Path(__file__).resolve().parent.parent


def fleet(folder: Path, size: int, vary: bool = False) -> list[Path]:
    """``size`` copies of the example spec, one service each.

    With ``vary``, services differ as a real fleet's do: every percentage threshold of an
    alert scaled by its own factor (0.94 to 1.0, so each service's numbers are its own), and
    each SLO's objective one of three common values, so the shared SLO simulations hit less.
    """
    example = (REPO / "specs" / "llm-serving.yaml").read_text()
    # every copy says `extends: defaults.yaml`, as a real fleet's specs share one defaults file
    shutil.copy(REPO / "specs" / "defaults.yaml", folder / "defaults.yaml")
    paths = []
    for index in range(size):
        text = _varied(example, index) if vary else example
        path = folder / f"svc{index:05d}.yaml"
        path.write_text(text.replace("service: deepseek-v4", f"service: svc-{index:05d}"))
        paths.append(path)
    return paths


def _varied(example: str, index: int) -> str:
    alerts, slos = example.split("\nslos:\n", 1)
    scale = Decimal(100 - index % 7) / 100
    alerts = _PERCENT.sub(lambda m: f"{m[1]}{Decimal(m[2]) * scale:f}%", alerts)
    # (the pair repeats over the spec's SLOs: the example has four)
    objectives = itertools.cycle(_OBJECTIVES[index % len(_OBJECTIVES)])
    return alerts + "\nslos:\n" + _OBJECTIVE.sub(lambda m: m[1] + next(objectives), slos)


_PERCENT = re.compile(r"(threshold: )([0-9.]+)%")
_OBJECTIVE = re.compile(r"(objective: )[0-9.]+%")
# The example's two objectives (99%, 99.9%) and two other pairs a fleet commonly uses.
_OBJECTIVES = (("99%", "99.9%"), ("99.5%", "99.95%"), ("98%", "99.5%"))


def _cpu_seconds() -> float:
    own, children = (
        resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def measure_render(size: int, vary: bool = False) -> dict[str, float]:
    """Render ``size`` services in this process (and its workers); returns the figures."""
    catalog = load_catalog([REPO / "signals"])
    with tempfile.TemporaryDirectory() as tmp:
        paths = fleet(Path(tmp), size, vary)
        cpu, start = _cpu_seconds(), time.perf_counter()
        result = build(SpecInputs(tuple(paths), ()), catalog)
        render = time.perf_counter() - start
        cpu = _cpu_seconds() - cpu
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        worker = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        del result
        start = time.perf_counter()
        data = rules_only(paths, catalog)
        rules_time = time.perf_counter() - start
    floor = dump_floor(data)
    rules = sum(len(group["rules"]) for item in data for group in item["groups"])
    return {
        "rules": rules, "render": render, "cpu": cpu, "rules_only": rules_time, "floor": floor,
        "peak_mb": peak, "worker_mb": worker,
    }  # fmt: skip


def dump_floor(data: list[dict[str, Any]]) -> float:
    """Seconds for a C-dumper ``yaml.dump`` of ``data`` on one core: the least writing costs."""
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    start = time.perf_counter()
    for item in data:
        yaml.dump(item, Dumper=dumper, sort_keys=False)
    return time.perf_counter() - start


def rules_only(paths: list[Path], catalog: Catalog) -> list[dict[str, Any]]:
    """Load every spec and write only its rule files, on one core; returns the rule data."""
    found = [load_one(catalog, path) for path in paths]
    combined = combine(paths, found)
    assert not combined.diagnostics, combined.diagnostics
    data = []
    for index in combined.accepted:
        spec = found[index].resolved
        assert spec is not None
        groups, slo_groups = rule_groups(spec, catalog)
        for item in (rule_file(groups), *(rule_file((g,)) for g in slo_groups)):
            dump_yaml(item, spec.source)
            data.append(item)
    return data


def measure_validation(size: int) -> dict[str, float]:
    """promtool on the written output of ``size`` services: all cores, then one by one."""
    catalog = load_catalog([REPO / "signals"])
    with tempfile.TemporaryDirectory() as tmp:
        paths = fleet(Path(tmp), size)
        result = build(SpecInputs(tuple(paths), ()), catalog, root=Path(tmp))
        out = Path(tmp) / "rules"
        write(result, out)
        tests = sorted(n for n in result.files if n.startswith("tests/"))
        tests.sort(key=result.test_cost, reverse=True)
        timings = {}
        for label, workers in (("parallel", os.cpu_count() or 1), ("sequential", 1)):
            start = time.perf_counter()
            with ThreadPoolExecutor(workers) as pool:
                runs = list(pool.map(lambda name: promtool.run_tests([name], out), tests))
            timings[label] = time.perf_counter() - start
            if not all(run.ok for run in runs):
                raise SystemExit("a generated test failed: the benchmark needs a valid build")
    return {"files": len(tests), **timings}


def _child(size: int, vary: bool = False) -> dict[str, float]:
    proc = subprocess.run(
        [sys.executable, __file__, "--child", str(size), *(["--vary"] if vary else [])],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    figures: dict[str, float] = json.loads(proc.stdout)
    return figures


def _verdict(ok: bool) -> str:
    return "meets" if ok else "MISSES"


def main() -> None:
    """Print one line per fleet size, the ≈ 20,000-rule fleet, then the validation line."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--validate-size", type=int, default=5)
    parser.add_argument("--vary-size", type=int, default=100, help="fleet size of the varied run")
    parser.add_argument("--vary", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure_render(args.child, args.vary)))
        return
    print(f"render: build on {os.cpu_count()} cores; rules only and floor: one core")
    print(
        f"{'services':>8} {'rules':>7} {'render s':>9} {'cpu s':>7} {'rules-only s':>12} "
        f"{'floor s':>8} {'x floor':>8} {'rules x':>8} {'peak MB':>8} {'worker MB':>9}"
    )
    previous: tuple[int, float] | None = None
    per_service = 0.0
    for size in args.sizes:
        figures = _child(size)
        _print_size(size, figures, previous)
        previous = (size, figures["render"])
        per_service = figures["rules"] / size
    if per_service:
        size = max(1, round(ISSUE_RULES / per_service))
        print(f"the issue's ≈ {ISSUE_RULES:,} rules: {size} services of the example spec")
        _print_size(size, _child(size), None)
    if args.vary_size:
        print(
            f"a varied fleet (own thresholds, three SLO objective pairs): {args.vary_size} services"
        )
        _print_size(args.vary_size, _child(args.vary_size, vary=True), None)
    validation = measure_validation(args.validate_size)
    speedup = validation["sequential"] / validation["parallel"]
    print(
        f"validation of {args.validate_size} services ({int(validation['files'])} promtool test "
        f"files): {validation['parallel']:.1f} s on {os.cpu_count()} cores, "
        f"{validation['sequential']:.1f} s one by one: {speedup:.2f}x "
        f"({_verdict(speedup >= 1.7)} ≥ 1.7x)"
    )


# "1,000 services (≈ 20,000 rules)": the issue's estimate of a fleet's rule count.
ISSUE_RULES = 20_000


def _print_size(size: int, figures: dict[str, float], previous: tuple[int, float] | None) -> None:
    ratio = figures["render"] / figures["floor"]
    rules_ratio = figures["rules_only"] / figures["floor"]
    memory = figures["peak_mb"] + figures["worker_mb"]
    print(
        f"{size:>8} {int(figures['rules']):>7} {figures['render']:>9.2f} {figures['cpu']:>7.1f}"
        f" {figures['rules_only']:>12.2f} {figures['floor']:>8.2f} {ratio:>8.1f}"
        f" {rules_ratio:>8.1f} {figures['peak_mb']:>8.0f} {figures['worker_mb']:>9.0f}"
    )
    notes = [
        f"render ≤ 3x floor: {_verdict(ratio <= 3)} ({ratio:.1f}x); "
        f"rules only ≤ 3x floor: {_verdict(rules_ratio <= 3)} ({rules_ratio:.1f}x)"
    ]
    if previous is not None:
        factor = figures["render"] / previous[1]
        per_10x = factor ** (1 / max(1e-9, math.log10(size / previous[0])))
        notes.append(
            f"{factor:.1f}x previous, {per_10x:.1f}x per 10x: {_verdict(per_10x <= 11)} ≤ 11x"
        )
    if size == 1000:
        notes.append(f"render ≤ 5 s: {_verdict(figures['render'] <= 5)}")
        notes.append(f"memory (build + one worker) ≤ 500 MB: {_verdict(memory <= 500)}")
    print("         " + "; ".join(notes))


if __name__ == "__main__":
    main()
