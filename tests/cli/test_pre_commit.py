"""The pre-commit hooks that ``rulegen init`` writes work as written (issue 33, item 1), with
the test cache they keep in ``.rulegen-cache/`` (issue 32).

Why: the hooks used to point at a release tag the repository did not have, so ``pre-commit
run --all-files`` failed on every ``init``'d repository. They are now ``repo: local`` hooks
running the installed rulegen (``language: system``: nothing fetched). Here the real
pre-commit (a dev dependency) runs them in a fresh ``init``'d repository: the build check
fails until ``rules/`` is built (the hook's point), then both hooks pass. The build check
used to run every promtool test on every commit (half a minute for the starter, minutes for
a few services); it now keeps its passes in ``.rulegen-cache/``, which ``make build`` fills
too and git ignores: after ``make build`` the hook reruns no test, and after an edit of one
threshold only the tests whose files changed. In ``make test-long``: one validated build
(about a minute of CPU), then a few test files.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_rulegen

from rulegen import starter

PRE_COMMIT = Path(sys.executable).parent / "pre-commit"
CACHE = ".rulegen-cache"
REUSED = re.compile(
    r"promtool test rules: (\d+) file\(s\) passed "
    r"\((\d+) unchanged since a recorded pass, not rerun\)"
)
pytestmark = [
    pytest.mark.slow,
    pytest.mark.long,
    pytest.mark.skipif(not PRE_COMMIT.exists(), reason="pre-commit (a dev dependency) missing"),
    pytest.mark.skipif(shutil.which("promtool") is None, reason="needs promtool"),
]


def _pre_commit(root: Path) -> subprocess.CompletedProcess[str]:
    """``pre-commit run --all-files --verbose``: the hooks' own output is shown when they pass."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "PRE_COMMIT_HOME": str(root.parent / "pre-commit-home")}  # fmt: skip
    return subprocess.run(
        [str(PRE_COMMIT), "run", "--all-files", "--verbose"], cwd=root, capture_output=True,
        text=True, check=False, env=env, timeout=600,
    )  # fmt: skip


def _git(root: Path, *argv: str) -> str:
    return subprocess.run(
        ["git", *argv], cwd=root, check=True, capture_output=True, text=True
    ).stdout


def _reused(output: str) -> tuple[int, int]:
    """(test files that passed, of which not rerun) from the build check's summary line."""
    found = REUSED.search(output)
    assert found is not None, output
    return int(found[1]), int(found[2])


def test_the_hooks_init_writes_run_as_written_with_their_cache(tmp_path: Path) -> None:
    root = tmp_path / "monitoring"
    made = run_rulegen("init", str(root), cwd=tmp_path)
    assert made.code == 0, made.err
    config = (root / ".pre-commit-config.yaml").read_text()
    assert "repo: local" in config
    assert "rev:" not in config
    assert f"entry: rulegen build --check --test-cache {CACHE}\n" in config
    assert f"\trulegen build --test-cache {CACHE}\n" in starter.MAKEFILE  # what make build runs
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    stale = _pre_commit(root)
    assert stale.returncode == 1, stale.stdout + stale.stderr
    assert "rulegen build --check (rules/ matches specs/)" in stale.stdout
    assert "output is stale" in stale.stdout
    built = run_rulegen("build", "--test-cache", CACHE, cwd=root)  # make build
    assert built.code == 0, built.err
    assert (root / CACHE).is_dir()
    _git(root, "add", "-A")
    assert CACHE not in _git(root, "ls-files"), "the cache is ignored by git"
    fresh = _pre_commit(root)
    assert fresh.returncode == 0, fresh.stdout + fresh.stderr
    assert fresh.stdout.count("Passed") == 2, fresh.stdout
    passed, reused = _reused(fresh.stdout)
    assert reused == passed > 0, fresh.stdout  # make build's passes: no test rerun
    # one threshold edited, rules/ rendered without validation: the hook reruns the tests of
    # what changed (the service's alert tests, the user test loading its rules), no others
    spec = root / "specs/vllm-chat.yaml"
    assert spec.read_text().count("threshold: 90%") == 1
    spec.write_text(spec.read_text().replace("threshold: 90%", "threshold: 85%"))
    assert run_rulegen("build", "--no-validate", cwd=root).code == 0
    _git(root, "add", "-A")
    edited = _pre_commit(root)
    assert edited.returncode == 0, edited.stdout + edited.stderr
    passed, reused = _reused(edited.stdout)
    assert 0 < reused < passed, edited.stdout
