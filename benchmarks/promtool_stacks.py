"""promtool's time on the example's generated test files, Prometheus 2.42 and 3.5 side by side.

Usage::

    .venv/bin/python benchmarks/promtool_stacks.py [--repeat N]

Needs the system's promtool (Debian bookworm: 2.42) and the 3.5 LTS stack that
``make tools`` fetches into ``.tools/forky``. For each stack the example (``specs/``,
``signals/``) is built into a temporary folder with ``rulegen build --no-validate``, its
``prometheus.version`` set to the stack's (``"2.42"``, ``"3.5"``: each version's own rules and
tests), then every generated test file runs through ``promtool test rules`` alone, one after
another, ``--repeat`` times (the fastest run counts), with ``GOGC`` as rulegen sets it.

The floor, measured in the same run on each stack: a test file of one evaluation step that
loads the same rule files (promtool's start, rule loading and parsing: what no change to the
rules' evaluation cost can remove). Printed: a markdown table, seconds per file and in all.

Why: issue 28 moved the default to Prometheus 3.5, whose SLO base recordings read each
counter at every evaluation step instead of one ``increase()`` range, and promtool 3.5 is
another engine; whether the suite and a cold build got slower is measured here, not guessed.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rulegen.validate.tools import tool_environment

REPO = Path(__file__).resolve().parent.parent
STACKS = (
    ("2.42", "system (bookworm)", shutil.which("promtool", path="/usr/bin")),
    ("3.5", "forky (.tools)", str(REPO / ".tools" / "forky" / "root" / "usr" / "bin" / "promtool")),
)
DECLARED = 'prometheus: {version: "3.5"}'


def _build(root: Path, version: str) -> Path:
    shutil.copytree(REPO / "specs", root / "specs")
    shutil.copytree(REPO / "signals", root / "signals")
    defaults = root / "specs" / "defaults.yaml"
    text = defaults.read_text()
    if DECLARED not in text:
        raise SystemExit(f"specs/defaults.yaml no longer says {DECLARED}; update this script")
    defaults.write_text(text.replace(DECLARED, f'prometheus: {{version: "{version}"}}'))
    subprocess.run(
        [sys.executable, "-m", "rulegen", "build", "--no-validate"], cwd=root, check=True,
        capture_output=True,
    )  # fmt: skip
    return root / "rules"


def _floor_file(rules: Path) -> str:
    """One evaluation step over every rule file: promtool's fixed cost."""
    files = sorted(p.name for p in (rules / "prometheus").glob("*.yml"))
    lines = ["rule_files:", *(f"  - ../prometheus/{f}" for f in files)]
    lines += ["evaluation_interval: 1m", "tests:", "  - interval: 1m", "    input_series: []"]
    (rules / "tests" / "floor.bench.yml").write_text("\n".join(lines) + "\n")
    return "tests/floor.bench.yml"


def _seconds(promtool: str, rules: Path, name: str, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.monotonic()
        done = subprocess.run(
            [promtool, "test", "rules", name], cwd=rules, capture_output=True, text=True,
            env=tool_environment(), check=False,
        )  # fmt: skip
        best = min(best, time.monotonic() - start)
        if done.returncode != 0:
            raise SystemExit(f"{promtool} test rules {name} failed:\n{done.stderr[-2000:]}")
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    results: dict[str, dict[str, float]] = {}
    for version, _, promtool in STACKS:
        if not promtool or not Path(promtool).is_file():
            raise SystemExit(f"no promtool for {version} (make tools; apt-get install prometheus)")
        with tempfile.TemporaryDirectory() as folder:
            rules = _build(Path(folder), version)
            names = sorted(f"tests/{p.name}" for p in (rules / "tests").glob("*.yml"))
            floor = _floor_file(rules)
            row = {name: _seconds(promtool, rules, name, args.repeat) for name in names}
            row["floor (one step, same rule files)"] = _seconds(promtool, rules, floor, args.repeat)
            results[version] = row
    names = list(results["2.42"])
    print("| test file | promtool 2.42, rules for 2.42 | promtool 3.5, rules for 3.5 |")
    print("| --- | ---: | ---: |")
    for name in names:
        old, new = results["2.42"].get(name), results["3.5"].get(name)
        print(f"| `{name}` | {old:.2f} s | {new:.2f} s |" if old and new else f"| `{name}` | | |")
    total = {
        v: sum(t for n, t in r.items() if not n.startswith("floor")) for v, r in results.items()
    }
    print(f"| all test files | {total['2.42']:.2f} s | {total['3.5']:.2f} s |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
