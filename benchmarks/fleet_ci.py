"""A fleet's CI (issue 32): validated builds of specs/ and of a 20-service fleet, cold and warm.

Run:
    .venv/bin/python benchmarks/fleet_ci.py [--services 20] [--objectives 3] [--json FILE]

Put the promtool to measure first on PATH (``PATH=$PWD/.tools/forky/root/usr/bin:$PATH`` for
the 3.5 LTS stack). Every figure is taken in a fresh temporary copy of the repository's
``specs/`` and ``signals/`` with ``rulegen`` run as a real subprocess; CPU is the
``RUSAGE_CHILDREN`` delta (rulegen, its workers, every promtool and amtool). Figures, each
beside its target and a floor measured in the same run:

1. Validated cold build of ``specs/`` (no test cache): ≤ 10 s wall on 2 cores.
2. The fleet: the example's service spec copied ``--services`` times (the first the example
   itself, the others ``llm-01``…), each copy's SLO objectives one of ``--objectives`` sets
   (copy i takes set i mod N), so copies share a shape only when their objectives match.
   Cold validated build with an empty cache: ≤ 60 s wall.
3. The same fleet after one threshold edit (one alert of one copy), rules regenerated and the
   cache of the cold build restored, as CI meets it: ``rulegen build --check --test-cache``:
   ≤ 3 s wall. And ``rulegen build --test-cache`` (the developer's build) for reference.

Floors: ``rulegen build --no-validate`` of the same tree (rendering, before any promtool), and
for the fleet the cold build of one copy (what the fleet costs if every shape were shared).
Each build's "promtool test units" line says how many units ran, came from the cache or
shared another's run. Exit status 1 when a figure misses its target.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RULEGEN = str(Path(sys.executable).parent / "rulegen")
# objective sets: (latency SLOs ttft/goodput/itl, availability)
OBJECTIVES = [("99%", "99.9%"), ("99.5%", "99.95%"), ("98%", "99.5%"), ("97%", "99%")]


@dataclass
class Figure:
    name: str
    wall: float
    cpu: float
    target: float | None
    floor: float | None
    note: str = ""

    @property
    def meets(self) -> bool | None:
        return None if self.target is None else self.wall <= self.target


def run(argv: list[str], cwd: Path) -> tuple[float, float, str]:
    """``argv`` in ``cwd``: wall seconds, CPU seconds (children), stdout; fails loudly."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed in {cwd}:\n{proc.stdout}\n{proc.stderr}")
    return wall, cpu, proc.stdout


def units_line(out: str) -> str:
    found = re.search(r"^promtool test units: (.*)$", out, re.M)
    tests = re.search(r"^promtool test rules: (.*)$", out, re.M)
    return (found.group(1) if found else "") or (tests.group(1) if tests else "")


def workspace(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for name in ("specs", "signals"):
        shutil.copytree(REPO / name, folder / name)
    return folder


def make_fleet(folder: Path, services: int, sets: int) -> Path:
    """The example's spec copied ``services`` times (objectives varied); the user's test of
    the example kept (it tests the first copy, the example itself)."""
    root = workspace(folder)
    example = (root / "specs" / "llm-serving.yaml").read_text()
    for index in range(services):
        latency, availability = OBJECTIVES[index % sets]
        text = example
        if index:
            text = text.replace("service: deepseek-v4", f"service: llm-{index:02d}", 1)
        text = re.sub(r"objective: 99%(\s)", rf"objective: {latency}\1", text)
        text = re.sub(r"objective: 99\.9%(\s)", rf"objective: {availability}\1", text)
        name = "llm-serving.yaml" if index == 0 else f"llm-{index:02d}.yaml"
        (root / "specs" / name).write_text(text)
    return root


def edit_one_threshold(root: Path) -> None:
    """One alert threshold of one copy (the disk await alert of the second copy) moved."""
    spec = root / "specs" / "llm-01.yaml"
    text = spec.read_text()
    assert "threshold: 5ms" in text
    spec.write_text(text.replace("threshold: 5ms", "threshold: 6ms", 1))


def measure(args: argparse.Namespace, tmp: Path) -> list[Figure]:
    figures = []
    example = workspace(tmp / "example")
    render = run([RULEGEN, "build", "--no-validate", "--out", "floor"], example)
    wall, cpu, out = run([RULEGEN, "build"], example)
    figures.append(Figure("validated cold build of specs/", wall, cpu, 10.0, render[0],
                          units_line(out)))  # fmt: skip
    print_figure(figures[-1])
    fleet = make_fleet(tmp / "fleet", args.services, args.objectives)
    render = run([RULEGEN, "build", "--no-validate", "--out", "floor"], fleet)
    wall, cpu, out = run([RULEGEN, "build", "--test-cache", "cache"], fleet)
    figures.append(Figure(f"fleet of {args.services}, cold, empty cache", wall, cpu, 60.0,
                          figures[0].wall, units_line(out)))  # fmt: skip
    print_figure(figures[-1])
    shutil.copytree(fleet / "cache", tmp / "main-cache")
    edit_one_threshold(fleet)
    run([RULEGEN, "build", "--no-validate"], fleet)
    wall, cpu, out = run([RULEGEN, "build", "--check", "--test-cache", "cache"], fleet)
    figures.append(Figure("fleet, one threshold edited: build --check --test-cache", wall, cpu,
                          3.0, render[0], units_line(out)))  # fmt: skip
    print_figure(figures[-1])
    shutil.rmtree(fleet / "cache")
    shutil.copytree(tmp / "main-cache", fleet / "cache")
    edit_one_threshold_again(fleet)
    wall, cpu, out = run([RULEGEN, "build", "--test-cache", "cache"], fleet)
    figures.append(Figure("fleet, another edit: build --test-cache (writes rules/)", wall, cpu,
                          None, render[0], units_line(out)))  # fmt: skip
    print_figure(figures[-1])
    return figures


def edit_one_threshold_again(root: Path) -> None:
    spec = root / "specs" / "llm-01.yaml"
    spec.write_text(spec.read_text().replace("threshold: 6ms", "threshold: 7ms", 1))


def print_figure(figure: Figure) -> None:
    verdict = {None: "", True: " — meets", False: " — MISSES"}[figure.meets]
    target = f" (target ≤ {figure.target:g} s)" if figure.target is not None else ""
    floor = f"; floor {figure.floor:.2f} s" if figure.floor is not None else ""
    print(f"{figure.name}: {figure.wall:.2f} s wall, {figure.cpu:.1f} s CPU{target}{floor}"
          f"{verdict}", flush=True)  # fmt: skip
    if figure.note:
        print(f"    {figure.note}", flush=True)


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--services", type=int, default=20)
    parser.add_argument("--objectives", type=int, default=3, choices=range(1, 5),
                        help="distinct objective sets among the copies (default 3)")  # fmt: skip
    parser.add_argument("--json", type=Path, help="write the figures there too")
    return parser.parse_args()


def main() -> int:
    args = parse()
    promtool = shutil.which("promtool") or "promtool (not found)"
    version = subprocess.run([promtool, "--version"], capture_output=True, text=True).stdout
    print(f"machine: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}; "
          f"{promtool}: {version.splitlines()[0] if version else '?'}", flush=True)  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="rulegen-fleet-ci-") as tmp:
        figures = measure(args, Path(tmp))
    print(f"load at the end: {os.getloadavg()[0]:.2f}")
    if args.json:
        args.json.write_text(json.dumps([asdict(f) for f in figures], indent=2) + "\n")
    return 1 if any(f.meets is False for f in figures) else 0


if __name__ == "__main__":
    sys.exit(main())
