"""The repository's own gates, run as tests so `make test` (and CI) enforces them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, ExampleBuild, run_rulegen

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent


@pytest.mark.parametrize(
    "argv",
    [
        [str(BIN / "ruff"), "check", "src", "tests", "benchmarks"],
        [str(BIN / "ruff"), "format", "--check", "src", "tests", "benchmarks"],
        [str(BIN / "mypy")],
    ],
    ids=["ruff check is clean", "ruff format is clean", "mypy --strict is clean"],
)
def test_linters_pass(argv: list[str]) -> None:
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, check=False, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_committed_rules_are_not_stale(example_build: ExampleBuild) -> None:
    # The drift check and its validation, as `make check` runs them; validation is vouched
    # for by the session's build of the same specs (its test cache): the bytes that passed
    # promtool there are the ones compared here.
    result = run_rulegen("build", "--check", "--test-cache", str(example_build.cache), cwd=REPO)
    assert result.code == 0, result.out + result.err
