"""vmalert-tool on the stack under test, or None: VictoriaMetrics ships it from 1.95 (the forky
stack), not in bookworm's 1.79, whose runs skip the tests that need it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from rulegen.validate.tools import find_tool


def _find() -> str | None:
    try:
        return find_tool("vmalert-tool", "")
    except Exception:  # noqa: BLE001 - any lookup failure means: not on this stack
        return None


VMALERT_TOOL = _find()
NEEDS_VMALERT_TOOL = pytest.mark.skipif(
    VMALERT_TOOL is None, reason="vmalert-tool (VictoriaMetrics 1.95+) missing"
)


def run_unittest(cwd: Path, name: str, timeout: int = 900) -> subprocess.CompletedProcess[str]:
    """``vmalert-tool unittest --files=NAME`` in ``cwd`` (the tests that need it are skipped
    without it)."""
    assert VMALERT_TOOL is not None
    return subprocess.run(
        [VMALERT_TOOL, "unittest", f"--files={name}"],
        cwd=cwd, capture_output=True, text=True, check=False, timeout=timeout,
    )  # fmt: skip
