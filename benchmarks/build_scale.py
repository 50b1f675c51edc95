"""Build speed on fleets: render, validation, memory, against anchors measured in the same run.

Run: .venv/bin/python benchmarks/build_scale.py [--sizes 10 100 1000] [--validate-size 10]

Per fleet size (copies of the example spec, each its own service): render time (everything
`rulegen build --no-validate` computes: rules, generated tests, dashboards), peak memory, the
ratio to the previous size, and the floor: a C-dumper `yaml.dump` of the same rule data. Then,
for one size, the validation time of the written output with promtool running on several files
at once (all cores, as `rulegen build` does) and one file after the other. Each line ends with
the target it is checked against (issue "scale out"): render of 1,000 services ≤ 5 s and
≤ 500 MB, ≤ 11× per 10× services, render ≤ 3× the floor, parallel validation ≥ 1.7× faster.
Sizes run in child processes, so each peak memory is its own.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

from rulegen.build import SpecInputs, build
from rulegen.catalog import load_catalog
from rulegen.output import write_tree
from rulegen.render.prometheus import rule_file
from rulegen.validate import promtool

REPO = Path(__file__).resolve().parent.parent


def fleet(folder: Path, size: int) -> list[Path]:
    """``size`` copies of the example spec, one service each."""
    example = (REPO / "specs" / "llm-serving.yaml").read_text()
    paths = []
    for index in range(size):
        path = folder / f"svc{index:05d}.yaml"
        path.write_text(example.replace("service: deepseek-v4", f"service: svc-{index:05d}"))
        paths.append(path)
    return paths


def measure_render(size: int) -> dict[str, float]:
    """Render ``size`` services in this process; returns the figures."""
    catalog = load_catalog([REPO / "templates"])
    with tempfile.TemporaryDirectory() as tmp:
        paths = fleet(Path(tmp), size)
        start = time.perf_counter()
        result = build(SpecInputs(tuple(paths), ()), catalog)
        render = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    groups = [(*s.groups, *(slo.group for slo in s.slos)) for s in result.services]
    data = [rule_file(g) for g in groups]
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    start = time.perf_counter()
    for item in data:
        yaml.dump(item, Dumper=dumper, sort_keys=False)
    floor = time.perf_counter() - start
    rules = sum(len(g.rules) for service in groups for g in service)
    return {"rules": rules, "render": render, "floor": floor, "peak_mb": peak / 2**20}


def measure_validation(size: int) -> dict[str, float]:
    """promtool on the written output of ``size`` services: all cores, then one by one."""
    catalog = load_catalog([REPO / "templates"])
    with tempfile.TemporaryDirectory() as tmp:
        paths = fleet(Path(tmp), size)
        result = build(SpecInputs(tuple(paths), ()), catalog)
        out = Path(tmp) / "rules"
        write_tree(out, result.files, ("prometheus", "tests", "grafana"))
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


def _child(size: int) -> dict[str, float]:
    proc = subprocess.run(
        [sys.executable, __file__, "--child", str(size)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    figures: dict[str, float] = json.loads(proc.stdout)
    return figures


def _verdict(ok: bool) -> str:
    return "meets" if ok else "MISSES"


def main() -> None:
    """Print one line per fleet size, then the validation line."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--validate-size", type=int, default=10)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure_render(args.child)))
        return
    print(f"{'services':>8} {'rules':>7} {'render s':>9} {'floor s':>8} {'x floor':>8} "
          f"{'peak MB':>8}  growth")  # fmt: skip
    previous: tuple[int, float] | None = None
    for size in args.sizes:
        figures = _child(size)
        ratio = figures["render"] / figures["floor"] if figures["floor"] else float("nan")
        growth = ""
        if previous is not None:
            factor = figures["render"] / previous[1]
            per_10x = factor ** (1 / max(1e-9, math.log10(size / previous[0])))
            growth = (
                f"{factor:.1f}x previous ({per_10x:.1f}x per 10x: {_verdict(per_10x <= 11)} ≤ 11x)"
            )
        target = ""
        if size == 1000:
            fast = figures["render"] <= 5 and figures["peak_mb"] <= 500
            target = f"; 1,000 services ≤ 5 s and ≤ 500 MB: {_verdict(fast)}"
        print(
            f"{size:>8} {int(figures['rules']):>7} {figures['render']:>9.2f}"
            f" {figures['floor']:>8.3f} {ratio:>8.1f} {figures['peak_mb']:>8.1f}  {growth}"
            f" (≤ 3x floor: {_verdict(ratio <= 3)}){target}"
        )
        previous = (size, figures["render"])
    validation = measure_validation(args.validate_size)
    speedup = validation["sequential"] / validation["parallel"]
    print(
        f"validation of {args.validate_size} services ({int(validation['files'])} promtool test "
        f"files): {validation['parallel']:.1f} s on {os.cpu_count()} cores, "
        f"{validation['sequential']:.1f} s one by one: {speedup:.2f}x "
        f"({_verdict(speedup >= 1.7)} ≥ 1.7x)"
    )


if __name__ == "__main__":
    main()
