"""Shared fixtures: file trees from inline YAML, and the CLI run in-process or as a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from rulegen.cli import run
from rulegen.validate.promtool import find_promtool

REPO = Path(__file__).resolve().parent.parent


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="rewrite tests/golden/*/expected from the current output",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


def write_tree(root: Path, files: Mapping[str, str]) -> Path:
    """Create ``files`` (path → dedented text) under ``root``; returns ``root``."""
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


@dataclass(frozen=True)
class CliResult:
    code: int
    out: str
    err: str


@pytest.fixture
def in_tmp(tmp_path: Path) -> Iterator[Path]:
    """Run the test with ``tmp_path`` as the working directory (specs/, rules/ relative to it)."""
    before = Path.cwd()
    os.chdir(tmp_path)
    try:
        yield tmp_path
    finally:
        os.chdir(before)


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> object:
    """Call ``rulegen`` in-process: ``cli("build", "--no-validate")`` → CliResult."""

    def call(*argv: str) -> CliResult:
        code = run(list(argv))
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return call


def run_rulegen(*argv: str, cwd: Path, env: Mapping[str, str] | None = None) -> CliResult:
    """Run the installed console script as a real process (for exit codes and tracebacks)."""
    proc = subprocess.run(
        [sys.executable, "-m", "rulegen", *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **(env or {})},
        timeout=300,
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


def rendered_rules(root: Path, files: Mapping[str, str]) -> Path:
    """``files`` written under ``root`` and built by the real ``rulegen build --no-validate``;
    the ``rules/`` folder (mutation tests then run promtool on edited copies of it)."""
    write_tree(root, files)
    result = run_rulegen("build", "--no-validate", cwd=root)
    assert result.code == 0, result.err
    return root / "rules"


def spec_errors(*lines: str) -> tuple[str, ...]:
    """The stderr of a spec error: the diagnostics, then the summary line."""
    return (*lines, f"rulegen: {len(lines)} error(s); nothing written")


def promtool_test(test_file: Path, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    """The real ``promtool test rules`` on one hand-written test file, run from its folder."""
    return subprocess.run(
        [find_promtool(), "test", "rules", test_file.name],
        cwd=test_file.parent,
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )


SENTINEL = {
    "rules/prometheus/x.rules.yml": "# sentinel: must survive a failed build\ngroups: []\n",
    "rules/tests/x.test.yml": "# sentinel test file\nrule_files: []\ntests: []\n",
}


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and folder (``None``) under ``folder``, staging leftovers included."""
    return {
        p.relative_to(folder).as_posix(): (p.read_bytes() if p.is_file() else None)
        for p in sorted(folder.rglob("*"))
    }


def assert_rejected(
    root: Path, cli: Callable[..., CliResult], spec: str, stderr: Sequence[str]
) -> None:
    """``specs/web.yaml`` = ``spec`` gives exactly ``stderr`` and exit 2: with no ``rules/``
    none is created (render only), and an existing one is left byte for byte (full build)."""
    write_tree(root, {"specs/web.yaml": spec})
    fresh = cli("build", "--no-validate")
    assert (fresh.code, fresh.err.splitlines(), fresh.out) == (2, list(stderr), "")
    assert not (root / "rules").exists()
    write_tree(root, SENTINEL)
    before = snapshot(root / "rules")
    again = cli("build")
    assert (again.code, again.err.splitlines(), again.out) == (2, list(stderr), "")
    assert snapshot(root / "rules") == before


def assert_rejected_by_process(root: Path, spec: str, stderr: Sequence[str]) -> None:
    """The real ``rulegen build`` process: exit 2, exactly ``stderr``, no traceback, and the
    existing ``rules/`` untouched."""
    write_tree(root, {"specs/web.yaml": spec, **SENTINEL})
    before = snapshot(root / "rules")
    result = run_rulegen("build", cwd=root)
    assert (result.code, result.err.splitlines(), result.out) == (2, list(stderr), "")
    assert "Traceback" not in result.err
    assert snapshot(root / "rules") == before
