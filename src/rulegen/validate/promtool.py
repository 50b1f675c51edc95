"""promtool, wrapped once: one function per verb, typed results, messages a user can act on.

Why: promtool's stderr names generated files and rule indexes; users need the alert and the
spec line it came from, and a clear message when promtool is not installed at all.
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
    "install it with: apt-get install prometheus (Debian/Ubuntu), or set RULEGEN_PROMTOOL"
)
_RULE_ERROR = re.compile(
    r'^(?P<file>.+?): (?P<pos>\d+:\d+: )?group "(?P<group>[^"]*)", '
    r'rule (?P<index>\d+), "(?P<name>[^"]*)": (?P<msg>.*)$'
)


ALERTNAME = re.compile(r"alertname: ([A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class FailedAssertion:
    """One failed assertion of ``promtool test rules`` (or a file's own problem), as promtool
    reports it: the test file and the lines of its report, indentation kept."""

    file: str
    lines: tuple[str, ...]

    @property
    def alertname(self) -> str | None:
        """The alert the assertion is about (``alertname: X``), if any."""
        for line in self.lines:
            match = ALERTNAME.search(line)
            if match:
                return match.group(1)
        return None


@dataclass(frozen=True)
class ToolResult:
    """What promtool said: ok or not, its messages line by line and, for ``test rules``,
    each failed assertion."""

    ok: bool
    messages: tuple[str, ...]
    argv: tuple[str, ...]
    failures: tuple[FailedAssertion, ...] = ()


TIMEOUT_SECONDS = 600


def _default_runner(argv: Sequence[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_tool(argv, cwd, TIMEOUT_SECONDS)


def find_promtool() -> str:
    """The promtool binary: ``$RULEGEN_PROMTOOL`` or the one on PATH."""
    return find_tool("promtool", INSTALL_HINT)


def version(runner: Runner = _default_runner) -> str:
    """promtool's version (``promtool, version 2.42.0+ds``), printed with the results."""
    return version_line(build_info(runner))


def version_line(build: str | None) -> str:
    """The release line of ``build_info``'s text (one ``--version`` run serves both)."""
    lines = (build or "").splitlines()
    return lines[0].split(" (", 1)[0] if lines else "promtool (unknown version)"


def build_info(runner: Runner = _default_runner) -> str | None:
    """promtool's whole ``--version`` text (release, revision, Go version), or ``None`` when
    it prints none: what identifies the binary whose results the test cache reuses."""
    result = runner([find_promtool(), "--version"], Path.cwd())
    text = (result.stdout or result.stderr).strip()
    return text or None


def check_rules(files: Sequence[str], cwd: Path, runner: Runner = _default_runner) -> ToolResult:
    """``promtool check rules``: syntax, duplicate rules, template parsing."""
    argv = (find_promtool(), "check", "rules", *files)
    result = runner(argv, cwd)
    return ToolResult(result.returncode == 0, _check_messages(result), argv)


def check_config(file: str, cwd: Path, runner: Runner = _default_runner) -> ToolResult:
    """``promtool check config``: a ``prometheus.yml`` parsed and checked as the server
    loads it (relabel configs, external labels, Alertmanager settings)."""
    argv = (find_promtool(), "check", "config", file)
    result = runner(argv, cwd)
    return ToolResult(result.returncode == 0, _check_messages(result), argv)


def _check_messages(result: subprocess.CompletedProcess[str]) -> tuple[str, ...]:
    """What a ``check`` verb said, without its progress lines (``Checking …``, ``SUCCESS``)."""
    return tuple(
        line.strip()
        for line in (result.stderr + result.stdout).splitlines()
        if line.strip()
        and not line.strip().startswith(("Checking ", "SUCCESS"))
        and line.strip() != "FAILED:"
    )


def run_tests(
    files: Sequence[str], cwd: Path, runner: Runner = _default_runner, junit: Path | None = None
) -> ToolResult:
    """``promtool test rules``: the generated and the user's unit tests; with ``junit``,
    promtool writes its JUnit XML report there too (promtool 2.55 or later)."""
    report = (f"--junit={junit}",) if junit is not None else ()
    argv = (find_promtool(), "test", "rules", *report, *files)
    result = runner(argv, cwd)
    text = (result.stdout + result.stderr).strip()
    if result.returncode == 0:
        return ToolResult(True, (), argv)
    if len(files) == 1 and "Unit Testing:" not in text:
        # promtool 3 no longer names the file it tests (2.x: ``Unit Testing:  FILE``)
        text = f"Unit Testing:  {files[0]}\n{text}"
    return ToolResult(False, tuple(_test_failures(text)), argv, tuple(failed_assertions(text)))


def _test_failures(text: str) -> list[str]:
    """Keep the failing files' blocks of promtool's report, dropping the SUCCESS noise."""
    out: list[str] = []
    current = ""
    for line in text.splitlines():
        if line.startswith("Unit Testing:"):
            current = line.split(":", 1)[1].strip()
            continue
        stripped = line.rstrip()
        if not stripped or stripped.strip() == "SUCCESS":
            continue
        out.append(
            f"{current}: {stripped.strip()}" if stripped.strip() == "FAILED:" else f"  {stripped}"
        )
    return out


def failed_assertions(text: str) -> list[FailedAssertion]:
    """promtool's test report split into failed assertions, in order.

    promtool writes each file's ``FAILED:`` block to stderr with no blank line between the
    assertions; each starts at the outer indentation (``    name: …`` or ``    alertname: …``,
    ``    expr: …``, or an error of the file), a ``name:`` line taking the next line with it,
    and everything indented deeper belongs to it.
    """
    out: list[FailedAssertion] = []
    current = ""
    block: list[str] = []
    outer: int | None = None

    def close() -> None:
        if block:
            out.append(FailedAssertion(current, tuple(block)))
            block.clear()

    for line in text.splitlines():
        if line.startswith("Unit Testing:"):
            close()
            current, outer = line.split(":", 1)[1].strip(), None
            continue
        stripped = line.rstrip()
        if not stripped or stripped.strip() in ("SUCCESS", "FAILED:"):
            continue
        indent = len(stripped) - len(stripped.lstrip())
        outer = indent if outer is None else min(outer, indent)
        after_name = bool(block) and block[-1].strip().startswith("name:")
        if indent <= outer and not after_name:
            close()
        block.append(stripped)
    close()
    return out


def parse_rule_error(line: str) -> tuple[str, str, int, str] | None:
    """Split a ``check rules`` error into (file, group, rule index, message)."""
    match = _RULE_ERROR.match(line)
    if match is None:
        return None
    return match["file"], match["group"], int(match["index"]), match["msg"]
