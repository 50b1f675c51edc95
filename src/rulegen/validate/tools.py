"""Finding and running external tools: one lookup rule and one timeout for all of them.

Why: promtool and amtool are found the same way (``$RULEGEN_<TOOL>`` or PATH, with an install
hint when missing) and run the same way (captured output, a hard timeout that names the call).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from rulegen.core import diagnostics as codes
from rulegen.errors import Diagnostic, FieldPath, ToolNotFoundError, ValidationFailed


def find_tool(name: str, hint: str) -> str:
    """``$RULEGEN_<NAME>`` if set (it must exist), else ``name`` on PATH (``vmalert-tool``:
    ``$RULEGEN_VMALERT_TOOL``)."""
    variable = f"RULEGEN_{name.upper().replace('-', '_')}"
    configured = os.environ.get(variable)
    if configured:
        if not Path(configured).is_file():
            raise ToolNotFoundError(f"{variable}={configured} does not exist; {hint}")
        return configured
    found = shutil.which(name)
    if not found:
        raise ToolNotFoundError(f"{name} not found; {hint}")
    return found


# Go's collector target for the tools rulegen starts (all Go programs), unless ``$GOGC`` says
# otherwise: collecting at 5x the live heap instead of 2x spares ``promtool test rules`` a
# sixth to a quarter of its CPU (measured on the example's SLO tests, docs/dev/performance.md)
# for about 100 MB more; what the tools compute is the same.
GO_GC_PERCENT = "400"


def tool_environment() -> dict[str, str]:
    """The environment a tool runs in: ours, with ``GOGC`` defaulted (see ``GO_GC_PERCENT``)."""
    return {"GOGC": GO_GC_PERCENT, **os.environ}


def run_tool(argv: Sequence[str], cwd: Path, timeout: int) -> subprocess.CompletedProcess[str]:
    """Run a tool to completion, or stop it after ``timeout`` seconds and say which call."""
    try:
        return subprocess.run(
            list(argv), cwd=cwd, capture_output=True, text=True, check=False,
            timeout=timeout, env=tool_environment(),
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        message = f"{' '.join(argv[:3])} did not finish in {timeout}s (stopped)"
        timed_out = Diagnostic("", 0, 0, FieldPath(), message, codes.TOOL_TIMEOUT)
        raise ValidationFailed([timed_out]) from None
