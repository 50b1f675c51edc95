"""The environment rulegen runs its Go tools in: ``GOGC`` defaulted, the user's own kept."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from rulegen.validate.tools import GO_GC_PERCENT, run_tool, tool_environment


def test_gogc_is_defaulted_for_the_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GOGC", raising=False)
    monkeypatch.setenv("RULEGEN_TEST_MARK", "kept")
    env = tool_environment()
    assert env["GOGC"] == GO_GC_PERCENT == "400"
    assert env["RULEGEN_TEST_MARK"] == "kept"


def test_the_users_gogc_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOGC", "off")
    assert tool_environment()["GOGC"] == "off"


@pytest.mark.slow
def test_a_tool_sees_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("GOGC", raising=False)
    argv = [sys.executable, "-c", "import os; print(os.environ['GOGC'])"]
    assert run_tool(argv, tmp_path, 60).stdout.strip() == GO_GC_PERCENT
