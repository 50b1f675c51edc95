"""vmalert, wrapped once: ``vmalert -dryRun`` on the VictoriaMetrics rule files.

Why: vmalert parses its rule files with MetricsQL and its own group schema (``concurrency``,
``params``, ``labels``); a file it refuses must fail the build like a rule promtool refuses,
with vmalert's own message (it exits 255 and logs ``failed to parse …: errors(N):`` followed
by one line per problem).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rulegen.validate.tools import find_tool, run_tool

Runner = Callable[[Sequence[str], Path], "subprocess.CompletedProcess[str]"]
INSTALL_HINT = (
    "install it with: apt-get install victoria-metrics (Debian/Ubuntu), or set RULEGEN_VMALERT"
)
TIMEOUT_SECONDS = 300
# vmalert's log prefix: a timestamp, the level, the source line, each followed by a tab
_LOG_PREFIX = re.compile(r"^\S+\t(?:info|warn|error|fatal|panic)\t\S+\t")
_ERRORS = re.compile(r"^failed to parse .*?: errors\(\d+\): ")


@dataclass(frozen=True)
class DryRun:
    """What ``vmalert -dryRun`` said: ok or not, and each problem on its own line."""

    ok: bool
    messages: tuple[str, ...]
    argv: tuple[str, ...]


def _default_runner(argv: Sequence[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_tool(argv, cwd, TIMEOUT_SECONDS)


def find_vmalert() -> str:
    """The vmalert binary: ``$RULEGEN_VMALERT`` or the one on PATH."""
    return find_tool("vmalert", INSTALL_HINT)


def version(runner: Runner = _default_runner) -> str:
    """vmalert's release line, or a note when the build prints none (Debian's does not)."""
    result = runner([find_vmalert(), "-version"], Path.cwd())
    lines = (result.stdout or result.stderr).strip().splitlines()
    return f"vmalert {lines[0]}" if lines else "vmalert (version not printed by this build)"


def dry_run(files: Sequence[str], cwd: Path, runner: Runner = _default_runner) -> DryRun:
    """``vmalert -dryRun -rule=…``: group schema, MetricsQL of every expression, templates."""
    argv = (find_vmalert(), "-dryRun", "-loggerLevel=ERROR", *(f"-rule={f}" for f in files))
    result = runner(argv, cwd)
    if result.returncode == 0:
        return DryRun(True, (), argv)
    return DryRun(False, tuple(problems(result.stderr + result.stdout)), argv)


def problems(text: str) -> list[str]:
    """vmalert's failure log as one message per problem, log prefixes removed."""
    out = []
    for raw in text.splitlines():
        line = _ERRORS.sub("", _LOG_PREFIX.sub("", raw)).strip()
        if line:
            out.append(line)
    return out


# --- vmalert-tool unittest --------------------------------------------------------------

TOOL_HINT = (
    "vmalert-tool ships with victoria-metrics 1.95 and later (Debian forky); "
    "put it on PATH or set RULEGEN_VMALERT_TOOL"
)
# One failed check of vmalert-tool's report starts on a line of its own with these words.
_CHECK_START = re.compile(r"^\s*(groupname: |expr: |metricname: |failed to )")
_TEST_GROUP = re.compile(r"^\s*testGroupName: ")


@dataclass(frozen=True)
class UnitTest:
    """What ``vmalert-tool unittest`` said of one test file: ok, or each failed check."""

    ok: bool
    failures: tuple[str, ...]
    argv: tuple[str, ...]


def find_vmalert_tool() -> str:
    """vmalert-tool: ``$RULEGEN_VMALERT_TOOL`` or the one on PATH."""
    return find_tool("vmalert-tool", TOOL_HINT)


def unittest(test_file: str, cwd: Path, runner: Runner = _default_runner) -> UnitTest:
    """``vmalert-tool unittest --files FILE``: it starts an in-process VictoriaMetrics on a free
    127.0.0.1 port, writes the input series, evaluates every group of the rule files and
    compares the alerts and expressions at each ``eval_time``."""
    argv = (find_vmalert_tool(), "unittest", f"--files={test_file}", "--loggerLevel=ERROR")
    result = runner(argv, cwd)
    output = result.stdout + result.stderr
    passed = result.returncode == 0 and "FAILED" not in output.split()
    return UnitTest(passed, () if passed else tuple(failures(output)), argv)


def failures(text: str) -> list[str]:
    """vmalert-tool's failure report as one line per failed check (the test group names,
    which repeat every case of a run, left out)."""
    out: list[str] = []
    for raw in text.splitlines():
        line = _LOG_END.sub("", raw.strip()).strip()
        if not line or line in ("FAILED", "SUCCESS", "[") or _TEST_GROUP.match(raw):
            continue
        if line.startswith(("Unit Testing:", "failed to run unit test for file")):
            continue
        if _CHECK_START.match(raw) or not out:
            out.append(line)
        else:
            out[-1] = f"{out[-1]} {line}"
    return [re.sub(r"\s+", " ", line) for line in out]


# the log line vmalert-tool ends with, glued to the report's closing bracket
_LOG_END = re.compile(r"\]?\s*\d{4}/\d\d/\d\d \d\d:\d\d:\d\d (Total time: .*|unittest failed)$")
