"""promtool test files cut into one file per test case, for the mutation suites.

Why: a mutation suite asks one question per mutant: does some generated test case fail?
promtool runs a test file's cases one after another, each from its own empty storage with
the file's ``rule_files`` evaluated from time 0 every ``evaluation_interval`` up to the case's
last ``eval_time``, so a case's outcome depends on nothing but the header and itself. A file
cut into one file per case (the header and the case's lines, byte for byte) therefore
passes if and only if every piece passes. A mutant is killed as soon as one piece fails:
running the pieces cheapest first (a case costs about one evaluation of the rules per step)
and stopping there kills exactly the same mutants for a fraction of the CPU, as most
mutants fail a case of a few steps. The unmutated rules still run every case.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from rulegen.pipeline import testunits

_UNIT_SECONDS = {
    "ms": 0.001,
    "s": 1,
    "m": 60,
    "h": 3600,
    "d": 86400,
    "w": 604800,
    "y": 31536000,
}
_DURATION = re.compile(r"(\d+)(ms|[smhdwy])")
_DURATIONS = re.compile(r"(?:\d+(?:ms|[smhdwy]))+")


def seconds(duration: str) -> float:
    """A Prometheus duration (``4d1h45m``, ``90s``) in seconds."""
    assert _DURATIONS.fullmatch(duration), duration
    return sum(int(n) * _UNIT_SECONDS[unit] for n, unit in _DURATION.findall(duration))


@dataclass(frozen=True)
class Case:
    """One test case of a promtool test file, as a test file of its own.

    ``source`` is the file it was cut from, ``name`` where it is written (beside the
    original, so ``rule_files`` resolve the same), ``text`` its bytes, ``steps`` the rule
    evaluations promtool makes for it.
    """

    source: str
    name: str
    title: str
    text: str
    steps: int


def split(root: Path, test_file: str) -> list[Case]:
    """The cases of ``root/test_file``, each with the file's other keys unchanged.

    Checked, not assumed: each piece parses to the original's keys with a list of exactly
    that one case, and the pieces' cases in order are the original's list.
    """
    text = (root / test_file).read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    start = lines.index("tests:\n")
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i][:1] not in (" ", "-", "\n", "#")),
        len(lines),
    )
    head, tail = "".join(lines[: start + 1]), "".join(lines[end:])
    starts = [i for i in range(start + 1, end) if lines[i].startswith("- ")]
    original: dict[str, Any] = yaml.safe_load(text)
    interval = seconds(str(original.get("evaluation_interval", "1m")))
    stem = test_file.removesuffix(".yml")
    cases = []
    for index, (first, last) in enumerate(zip(starts, [*starts[1:], end], strict=True)):
        piece = head + "".join(lines[first:last]) + tail
        data: dict[str, Any] = yaml.safe_load(piece)
        case = original["tests"][index]
        assert data == {**original, "tests": [case]}, f"{test_file}: case {index} cut badly"
        evals = [
            seconds(str(check["eval_time"]))
            for key in ("alert_rule_test", "promql_expr_test", "metricsql_expr_test")
            for check in case.get(key) or []
        ]
        steps = int(max(evals, default=0) // interval) + 1
        cases.append(
            Case(test_file, f"{stem}.case{index}.yml", str(case.get("name", "")), piece, steps)
        )
    assert len(cases) == len(original["tests"]), f"{test_file}: cases lost in the cut"
    return cases


def write(root: Path, cases: Sequence[Case]) -> None:
    """Write each case's file under ``root``."""
    for case in cases:
        (root / case.name).write_text(case.text, encoding="utf-8")


@dataclass(frozen=True)
class Outcome:
    """The cases run until one failed: ``failed`` names its file (``""`` when all passed),
    ``output`` is promtool's output of every case run."""

    failed: str
    output: str


PROMTOOL = ("promtool", "test", "rules")
# vmalert-tool exits 0 on some failures of a file (a group it could not run): its report says
VMALERT_TOOL = ("vmalert-tool", "unittest", "--files")


def run_until_one_fails(
    root: Path, cases: Sequence[Case], first: str = "", command: Sequence[str] = PROMTOOL
) -> Outcome:
    """``promtool test rules`` (or ``command``: ``VMALERT_TOOL`` for the files of the
    VictoriaMetrics target) on each case (already written under ``root``), stopping at the
    first that fails: cheapest first, after the cases whose title contains ``first`` (a
    mutant only a long case can catch). The order changes how soon a mutant is caught, never
    whether it is."""
    output = ""
    for case in sorted(cases, key=lambda c: (not first or first not in c.title, c.steps)):
        failed, said = _run(command, case.name, root)
        output += said
        if failed:
            return Outcome(case.name, output)
    return Outcome("", output)


def _run(command: Sequence[str], name: str, cwd: Path) -> tuple[bool, str]:
    """``command`` on one file: whether it failed (vmalert-tool may exit 0 on a failure its
    report states), and what it printed."""
    proc = subprocess.run(
        [*command, name], cwd=cwd, capture_output=True, text=True, check=False, timeout=600
    )
    said = proc.stdout + proc.stderr
    return proc.returncode != 0 or "FAILED" in said.split(), said


def units_until_one_fails(
    root: Path, files: Sequence[str], first: str = "", command: Sequence[str] = PROMTOOL
) -> Outcome:
    """The test files cut into the units ``rulegen build`` runs (each case, or part of one,
    against only the rules it can observe: ``rulegen.pipeline.testunits``), each written
    into a folder of its own under ``root/.units``, run cheapest first (after those whose
    cases' titles contain ``first``) until one fails.

    Why beside ``run_until_one_fails``: a mutant the whole files catch must be caught by the
    build's cut too, or the cut left out a rule the failing check observes."""
    units = []
    for name in files:
        found = testunits.split(root, name)
        assert found is not None, f"{name}: rulegen cannot cut it"
        units.extend(found)
    units.sort(key=lambda u: (not first or not any(first in t for t in u.titles), u.weight))
    output = ""
    for index, unit in enumerate(units):
        folder = root / ".units" / str(index)
        folder.mkdir(parents=True, exist_ok=True)
        for name, data in unit.files:
            (folder / name).write_bytes(data)
        failed, said = _run(command, testunits.TEST_NAME, folder)
        output += said
        if failed:
            return Outcome(f"{unit.source} ({', '.join(unit.titles)})", output)
    return Outcome("", output)
