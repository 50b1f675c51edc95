"""The pre-commit hooks that ``rulegen init`` writes work as written (issue 33, item 1).

Why: the hooks used to point at a release tag the repository did not have, so ``pre-commit
run --all-files`` failed on every ``init``'d repository. They are now ``repo: local`` hooks
running the installed rulegen (``language: system``: nothing fetched). Here the real
pre-commit (a dev dependency) runs them in a fresh ``init``'d repository: the build check
fails until ``rules/`` is built (the hook's point), then both hooks pass. In ``make
test-long``: the validated build runs twice (about a minute of CPU).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_rulegen

PRE_COMMIT = Path(sys.executable).parent / "pre-commit"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.long,
    pytest.mark.skipif(not PRE_COMMIT.exists(), reason="pre-commit (a dev dependency) missing"),
    pytest.mark.skipif(shutil.which("promtool") is None, reason="needs promtool"),
]


def _pre_commit(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "PRE_COMMIT_HOME": str(root.parent / "pre-commit-home")}  # fmt: skip
    return subprocess.run(
        [str(PRE_COMMIT), "run", "--all-files"], cwd=root, capture_output=True, text=True,
        check=False, env=env, timeout=600,
    )  # fmt: skip


def test_the_hooks_init_writes_run_as_written(tmp_path: Path) -> None:
    root = tmp_path / "monitoring"
    made = run_rulegen("init", str(root), cwd=tmp_path)
    assert made.code == 0, made.err
    config = (root / ".pre-commit-config.yaml").read_text()
    assert "repo: local" in config
    assert "rev:" not in config
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    stale = _pre_commit(root)
    assert stale.returncode == 1, stale.stdout + stale.stderr
    assert "rulegen build --check (rules/ matches specs/)" in stale.stdout
    assert "output is stale" in stale.stdout
    built = run_rulegen("build", cwd=root)
    assert built.code == 0, built.err
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    fresh = _pre_commit(root)
    assert fresh.returncode == 0, fresh.stdout + fresh.stderr
    assert fresh.stdout.count("Passed") == 2, fresh.stdout
