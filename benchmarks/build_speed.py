"""Render speed of `rulegen build` on fleets of services, against the floor of a plain YAML dump.

Run: .venv/bin/python benchmarks/build_speed.py [--sizes 10 100]
Prints, per fleet size: specs, rules, render time (no promtool), the time to just
`yaml.safe_dump` the same rule data (the floor, measured in the same run), their ratio,
and the process's peak resident memory.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

import yaml

from rulegen.build import SpecInputs, build
from rulegen.catalog import load_catalog
from rulegen.render.prometheus import rule_file

REPO = Path(__file__).resolve().parent.parent


def _fleet(folder: Path, size: int) -> list[Path]:
    example = (REPO / "specs" / "llm-serving.yaml").read_text()
    paths = []
    for index in range(size):
        path = folder / f"svc{index:05d}.yaml"
        path.write_text(example.replace("service: deepseek-v4", f"service: svc-{index:05d}"))
        paths.append(path)
    return paths


def measure(size: int) -> dict[str, float]:
    """Render ``size`` copies of the example spec; returns the figures."""
    catalog = load_catalog([REPO / "templates"])
    with tempfile.TemporaryDirectory() as tmp:
        paths = _fleet(Path(tmp), size)
        start = time.perf_counter()
        result = build(SpecInputs(tuple(paths), ()), catalog)
        render = time.perf_counter() - start
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    # The floor dumps every rule group, the SLO groups included, in one plain C-dumper pass.
    groups = [(*s.groups, *(slo.group for slo in s.slos)) for s in result.services]
    data = [rule_file(g) for g in groups]
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    start = time.perf_counter()
    for item in data:
        yaml.dump(item, Dumper=dumper, sort_keys=False)
    floor = time.perf_counter() - start
    rules = sum(len(g.rules) for service in groups for g in service)
    return {"rules": rules, "render": render, "floor": floor, "peak_mb": peak / 2**20}


def main() -> None:
    """Print one line per fleet size."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100])
    sizes = parser.parse_args().sizes
    print(
        f"{'services':>8} {'rules':>7} {'render s':>9} {'floor s':>8} {'x floor':>8} {'peak MB':>8}"
    )
    previous = None
    for size in sizes:
        figures = measure(size)
        ratio = figures["render"] / figures["floor"] if figures["floor"] else float("nan")
        growth = f"  ({figures['render'] / previous:.1f}x previous)" if previous else ""
        print(
            f"{size:>8} {int(figures['rules']):>7} {figures['render']:>9.2f}"
            f" {figures['floor']:>8.2f} {ratio:>8.1f} {figures['peak_mb']:>8.1f}{growth}"
        )
        previous = figures["render"]


if __name__ == "__main__":
    main()
