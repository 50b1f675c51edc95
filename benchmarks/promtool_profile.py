"""Where ``promtool test rules`` spends its CPU on a generated test file: a sampled profile.

Usage (needs ``perf`` and Go's ``go tool addr2line``: ``apt-get install linux-perf golang-go``)::

    .venv/bin/python benchmarks/promtool_profile.py [rules/tests/X.test.yml]

Default: the example's SLO history test (``rules/tests/deepseek-v4.slo.availability.history
.test.yml``), the costliest file of a cold build. ``perf record -g`` samples promtool's stacks
(Go keeps frame pointers) at 499 Hz, promtool run as rulegen runs it (``GOGC=400`` unless
set). Debian's promtool has no symbol table, but Go's own ``.gopclntab`` names every
function, so ``go tool addr2line`` resolves the addresses. Printed:
the share of samples under each part of a rule evaluation (inclusive), and the share in Go's
garbage collector, so the figures in docs/dev/performance.md can be measured again.

Why: issue 17's cold-build target needs to know whether the SLO tests' cost is promtool
evaluating our rules (steps × rule size) or something rulegen could avoid.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from rulegen.validate.tools import tool_environment

REPO = Path(__file__).resolve().parent.parent
DEFAULT = REPO / "rules" / "tests" / "deepseek-v4.slo.availability.history.test.yml"
BASE = 0x400000  # where perf's map-relative addresses start in promtool (a non-PIE binary)

_PARSER = "github.com/prometheus/prometheus/promql/parser."
_GC = ("runtime.gcBgMarkWorker", "runtime.gcDrain", "runtime.gcAssistAlloc", "runtime.scanobject")

# What a rule evaluation is made of: a sample counts for a part when a frame of its stack is
# one of the part's functions (inclusive shares; the parts overlap where they nest).
PARTS: dict[str, Callable[[str], bool]] = {
    "rule evaluations (all of the below but GC)": lambda f: f.endswith("rules.(*Group).Eval.func1"),
    "expressions printed back to text (String)": lambda f: (
        f.startswith(_PARSER) and f.endswith(").String")
    ),
    "the text parsed again (ParseExpr)": lambda f: f == _PARSER + "ParseExpr",
    "the evaluation proper (evaluator.Eval)": lambda f: f.endswith(
        "promql.(*evaluator).Eval.func1"
    ),
    "series selection (populateSeries)": lambda f: f.endswith(
        "promql.(*Engine).populateSeries.func1"
    ),
    "garbage collection (mark and assists)": lambda f: f.startswith(_GC),
    "allocation (mallocgc)": lambda f: f == "runtime.mallocgc",
}


def record(test: Path, folder: Path) -> list[list[int]]:
    """The sampled stacks (innermost first) of one ``promtool test rules`` run."""
    data = folder / "perf.data"
    subprocess.run(
        ["perf", "record", "-q", "-g", "-e", "cpu-clock", "-F", "499", "-o", str(data),
         "promtool", "test", "rules", test.name],
        cwd=test.parent, check=True, capture_output=True, env=tool_environment(),
    )  # fmt: skip
    script = subprocess.run(
        ["perf", "script", "-i", str(data), "-F", "ip"], check=True, capture_output=True, text=True
    ).stdout
    stacks, current = [], []
    for line in script.splitlines():
        if line.strip():
            current.append(int(line.strip(), 16))
        elif current:
            stacks.append(current)
            current = []
    return [*stacks, current] if current else stacks


def names(addresses: set[int]) -> dict[int, str]:
    """Each address's Go function, from promtool's ``.gopclntab``."""
    ordered = sorted(addresses)
    promtool = shutil.which("promtool") or "promtool"
    text = "".join(f"{hex(a + BASE)}\n" for a in ordered)
    lines = subprocess.run(
        ["go", "tool", "addr2line", str(Path(promtool).resolve())],
        input=text, check=True, capture_output=True, text=True,
    ).stdout.splitlines()  # fmt: skip
    return {a: lines[2 * i] for i, a in enumerate(ordered)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("test", nargs="?", type=Path, default=DEFAULT)
    args = parser.parse_args()
    missing = [tool for tool in ("perf", "go", "promtool") if shutil.which(tool) is None]
    if missing:
        print(f"needs {', '.join(missing)} (see the usage at the top)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        stacks = record(args.test.resolve(), Path(tmp))
    symbol = names({a for stack in stacks for a in stack})
    shares: Counter[str] = Counter()
    for stack in stacks:
        functions = {symbol[a] for a in stack}
        shares.update(label for label, part in PARTS.items() if any(map(part, functions)))
    total = len(stacks)
    print(f"{args.test.name}: {total} samples at 499 Hz ({total / 499:.1f} s of CPU)")
    for label in PARTS:
        print(f"  {100 * shares[label] / max(total, 1):5.1f}%  {label}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
