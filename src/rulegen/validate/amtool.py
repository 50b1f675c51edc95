"""amtool, wrapped: one function per command, typed results, messages a user can act on.

Why one place: Alertmanager's checks are only as good as the binary that runs them; every
call goes through here with the same lookup, timeout and error mapping as promtool.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rulegen.core import versions
from rulegen.core.promql import quote
from rulegen.validate.tools import find_tool, run_tool

INSTALL_HINT = (
    "install it with: apt-get install prometheus-alertmanager (Debian/Ubuntu), "
    "or set RULEGEN_AMTOOL"
)
TIMEOUT_SECONDS = 120


@dataclass(frozen=True)
class ToolResult:
    """What amtool said: success, and the lines worth showing."""

    ok: bool
    messages: tuple[str, ...]


def find_amtool() -> str:
    """``RULEGEN_AMTOOL`` if set, else ``amtool`` on PATH."""
    return find_tool("amtool", INSTALL_HINT)


def _run(argv: Sequence[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_tool(argv, cwd, TIMEOUT_SECONDS)


def build_info() -> str | None:
    """amtool's whole ``--version`` text, or ``None`` when it prints none: what identifies the
    binary whose routing results the test cache reuses."""
    result = _run([find_amtool(), "--version"], Path.cwd())
    return (result.stdout or result.stderr).strip() or None


MATCHER_MODES = ("utf8-strict-mode", "classic-mode")
"""Alertmanager's matcher parsers besides the default (0.27 on: UTF-8 first, falling back to
the classic parser): a generated config must load whichever one a team runs."""
MATCHER_MODES_SINCE = (0, 27)


def matcher_modes(info: str | None) -> tuple[str, ...]:
    """The ``--enable-feature`` matcher modes this amtool (its ``--version`` text) knows:
    none before 0.27, which has the classic parser only."""
    found = versions.tool_version(info or "")
    return MATCHER_MODES if found is not None and found[:2] >= MATCHER_MODES_SINCE else ()


def check_config(config: str, cwd: Path, feature: str | None = None) -> ToolResult:
    """``amtool check-config``: syntax, receivers, templates; with ``feature``, under that
    ``--enable-feature`` (a matcher mode)."""
    flags = [f"--enable-feature={feature}"] if feature else []
    result = _run([find_amtool(), *flags, "check-config", config], cwd)
    lines = (result.stdout + result.stderr).splitlines()
    messages = tuple(
        line.strip()
        for line in lines
        if "FAILED" in line or line.strip().startswith(("line ", "-", "yaml:"))
    )
    failed = tuple(m for m in messages if not m.startswith("-"))
    return ToolResult(result.returncode == 0, failed)


def routes_test(
    config: str, labels: Mapping[str, str], receivers: Sequence[str], cwd: Path
) -> ToolResult:
    """``amtool config routes test --verify.receivers``: where do these labels go?"""
    argv = [
        find_amtool(), "config", "routes", "test", f"--config.file={config}",
        f"--verify.receivers={','.join(receivers)}",
        # each value double-quoted (Go escapes), which every amtool parser reads the same
        # (classic, UTF-8, 0.27's fallback): bare, a space, comma or quote cuts it
        *(f"{k}={quote(v)}" for k, v in sorted(labels.items())),
    ]  # fmt: skip
    result = _run(argv, cwd)
    got = result.stdout.strip().splitlines()[0] if result.stdout.strip() else "(nothing)"
    if result.returncode == 0:
        return ToolResult(True, ())
    return ToolResult(False, (f"expected {','.join(receivers)}, amtool routes to {got}",))
