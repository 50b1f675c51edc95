"""A build killed at any instant leaves the whole old output or the whole new one.

Each build runs in a forked child (rulegen already imported, so a build takes a fraction of a
second) and is killed with SIGKILL: at every step of the commit in turn (the commit's fault
hook), and at random instants. The output folder must then hold exactly the complete old
tree or the complete new tree, in all of its folders (prometheus/, tests/, alertmanager/,
grafana/, kubernetes/, thanos/, mimir/), with the user's own files; the next build must
finish with the new tree and leave no staging folder.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import snapshot, write_tree

from rulegen.cli import run
from rulegen.outdir import transaction as commit_module

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")]

Tree = dict[str, bytes | None]
Trees = tuple[Path, Tree, Tree]
BUILD = ["build", "--no-validate", "--jobs", "1"] + [
    f"--target={t}" for t in ("operator", "thanos", "mimir")
]

OLD = {
    "specs/a.yaml": """
        version: 1
        service: alpha
        targets:
          operator: {namespace: monitoring}
          mimir: {namespace: shared}
        alerts:
          - {signal: disk_await, threshold: 5ms, severity: warning}
          - {signal: disk_utilization, threshold: 90%, for: 1m, severity: warning}
    """,
    "specs/b.yaml": """
        version: 1
        service: beta
        targets:
          mimir: {namespace: shared}
        alerts:
          - {signal: tcp_retransmits, threshold: 2%, severity: warning}
    """,
    "specs/routing.yaml": """
        version: 1
        routing:
          default_receiver: hook
          receivers:
            - name: hook
              webhook: {url: "http://127.0.0.1:9/x"}
    """,
}
# The new specs change a threshold, drop service beta and add service gamma: files change,
# disappear and appear in every folder.
NEW = {
    "specs/a.yaml": OLD["specs/a.yaml"].replace("threshold: 5ms", "threshold: 7ms"),
    "specs/c.yaml": OLD["specs/b.yaml"].replace("service: beta", "service: gamma"),
}
USER_FILES = {"rules/README.md": "hand-written\n", "rules/tests/smoke.yml": "tests: []\n"}
USER_FILES_IN_RULES = {name.removeprefix("rules/") for name in USER_FILES}


def _build_in_child(
    folder: Path, fault: Callable[[str], None] | None = None, journal: bool = False
) -> int:
    """Run ``rulegen build`` in a forked child; its exit code, or minus the killing signal."""
    return _wait(_fork_build(folder, fault, journal))


def _fork_build(
    folder: Path, fault: Callable[[str], None] | None = None, journal: bool = False
) -> int:
    """Start ``rulegen build`` in ``folder`` in a forked child (output silenced); its pid."""
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 99
        try:
            os.chdir(folder)
            quiet = os.open(os.devnull, os.O_WRONLY)
            os.dup2(quiet, 1)
            os.dup2(quiet, 2)
            commit_module.FAULT = fault
            commit_module.FORCE_JOURNAL = journal
            code = run(BUILD)
        finally:
            os._exit(code)
    return pid


def _wait(pid: int) -> int:
    _, status = os.waitpid(pid, 0)
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def _kill_at(step: int) -> Callable[[str], None]:
    counter = itertools.count(1)

    def fault(_name: str) -> None:
        if next(counter) == step:
            os.kill(os.getpid(), signal.SIGKILL)

    return fault


def _leftovers(root: Path) -> list[str]:
    inside = [p.name for p in (root / "rules").iterdir()] if (root / "rules").is_dir() else []
    return [n for n in [*(p.name for p in root.iterdir()), *inside] if "rulegen-staging" in n]


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> Trees:
    """A folder holding the old output (with the user's files), and the old and new trees."""
    old = tmp_path_factory.mktemp("old")
    write_tree(old, OLD)
    _warm_up(tmp_path_factory.mktemp("warm"))
    assert _build_in_child(old) == 0
    write_tree(old, USER_FILES)
    old_tree = snapshot(old / "rules")
    new = tmp_path_factory.mktemp("new")
    shutil.copytree(old, new, dirs_exist_ok=True)
    _to_new_specs(new)
    assert _build_in_child(new) == 0
    new_tree = snapshot(new / "rules")
    assert old_tree != new_tree
    for folder in ("prometheus", "tests", "alertmanager", "grafana", "kubernetes", "thanos"):
        assert any(k.startswith(f"{folder}/") for k in old_tree)
    assert "mimir/shared.yaml" in old_tree
    assert "mimir/shared.yaml" in new_tree
    assert "prometheus/beta.rules.yml" in old_tree
    assert "prometheus/beta.rules.yml" not in new_tree
    assert "prometheus/gamma.rules.yml" in new_tree
    assert new_tree["README.md"] == b"hand-written\n"
    return old, old_tree, new_tree


def _warm_up(folder: Path) -> None:
    """One build in this process, so that every forked build starts with rulegen's caches
    filled (the catalog's models) and takes a tenth of a second."""
    write_tree(folder, OLD)
    before = Path.cwd()
    os.chdir(folder)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            assert run(BUILD) == 0
    finally:
        os.chdir(before)


def _to_new_specs(folder: Path) -> None:
    (folder / "specs" / "b.yaml").unlink()
    write_tree(folder, NEW)


def _fresh(old: Path, tmp_path: Path, name: str) -> Path:
    folder = tmp_path / name
    shutil.copytree(old, folder)
    _to_new_specs(folder)
    return folder


@pytest.mark.parametrize("journal", [False, True], ids=["exchange", "journal"])
def test_a_kill_at_every_step_of_the_commit_leaves_the_old_or_the_new_tree(
    trees: Trees, tmp_path: Path, journal: bool
) -> None:
    old, old_tree, new_tree = trees
    outcomes = []
    for step in itertools.count(1):
        folder = _fresh(old, tmp_path, f"step{step}")
        code = _build_in_child(folder, _kill_at(step), journal)
        after_kill = snapshot(folder / "rules")
        pending = commit_module.pending_journal(folder / "rules")
        if pending is None:
            assert after_kill in (old_tree, new_tree), f"killed at step {step}: a mixed tree"
        else:
            assert journal, "only the journal path may leave a commit to complete"
        outcomes.append(
            "old" if after_kill == old_tree else "new" if after_kill == new_tree else "pending"
        )
        # the next build finishes the job: the new tree, no staging folder anywhere
        assert _build_in_child(folder) == 0
        assert snapshot(folder / "rules") == new_tree
        assert _leftovers(folder) == []
        if code == 0:  # the fault hook was never reached: every step has been tried
            break
        assert code == -signal.SIGKILL
    assert outcomes[0] == "old"
    assert outcomes[-1] == "new"
    assert len(outcomes) >= (9 if journal else 7)


def test_a_kill_while_completing_a_journal_is_completed_by_the_build_after(
    trees: Trees, tmp_path: Path
) -> None:
    old, _, new_tree = trees
    step = _first_step(_fresh(old, tmp_path, "journal"), "journal committed", journal=True)
    for retry in itertools.count(1):
        # the first build stops right after committing its journal; the next one is killed
        # at its retry-th step of completing it, the one after must finish the job
        folder = _fresh(old, tmp_path, f"retry{retry}")
        assert _build_in_child(folder, _kill_at(step), journal=True) == -signal.SIGKILL
        assert commit_module.pending_journal(folder / "rules") is not None
        code = _build_in_child(folder, _kill_while_recovering(retry), journal=True)
        assert _build_in_child(folder) == 0
        assert snapshot(folder / "rules") == new_tree
        assert _leftovers(folder) == []
        if code == 0:  # recovery finished before the retry-th step: all were tried
            break
    assert retry > 3


def _kill_while_recovering(step: int) -> Callable[[str], None]:
    """Kill at the ``step``-th step of completing a journal (never in the build's own commit,
    which starts with "staging created")."""
    counter = itertools.count(1)
    recovering = [True]

    def fault(name: str) -> None:
        recovering[0] = recovering[0] and name != "staging created"
        if recovering[0] and next(counter) == step:
            os.kill(os.getpid(), signal.SIGKILL)

    return fault


def _first_step(folder: Path, name: str, journal: bool) -> int:
    """The number of the commit step called ``name`` (counted by a build that stops there)."""
    names: list[str] = []
    shutil.copytree(folder, folder.with_name("probe"))
    probe = folder.with_name("probe")

    def record(step: str) -> None:
        names.append(step)
        if step == name:
            (probe / "step").write_text(str(len(names)))
            os.kill(os.getpid(), signal.SIGKILL)

    assert _build_in_child(probe, record, journal) == -signal.SIGKILL
    return int((probe / "step").read_text())


def test_random_kills_leave_the_old_or_the_new_tree(trees: Trees, tmp_path: Path) -> None:
    old, old_tree, new_tree = trees
    window = _commit_window(_fresh(old, tmp_path, "timing"))
    chance = random.Random(1303)
    seen = set()
    attempt = 0
    # 50 kills, then (a loaded machine builds slower than the timing run did) later and later
    # kills until one also lands after the commit
    while attempt < 50 or ("new" not in seen and attempt < 80):
        folder = _fresh(old, tmp_path, f"kill{attempt}")
        # half the kills anywhere in the build, half inside the commit itself
        start, end = (0.0, window[1]) if attempt % 2 else window
        if attempt >= 50:
            start, end = window[1], window[1] * (1 + (attempt - 49) / 4)
        delay = chance.uniform(start, end * 1.1)
        attempt += 1
        pid = _fork_build(folder)
        time.sleep(delay)
        os.kill(pid, signal.SIGKILL)
        _wait(pid)
        after_kill = snapshot(folder / "rules")
        assert after_kill in (old_tree, new_tree), f"a mixed tree after a kill at {delay:.3f}s"
        seen.add("old" if after_kill == old_tree else "new")
        assert _build_in_child(folder) == 0
        assert snapshot(folder / "rules") == new_tree
        assert _leftovers(folder) == []
    assert seen == {"old", "new"}


def _commit_window(folder: Path) -> tuple[float, float]:
    """Seconds from the start of a build to the first and the last step of its commit."""
    marks = folder / "marks"
    started = time.monotonic()

    def record(_name: str) -> None:
        with marks.open("a") as stream:
            stream.write(f"{time.monotonic() - started}\n")

    assert _build_in_child(folder, record) == 0
    times = [float(line) for line in marks.read_text().split()]
    return times[0], times[-1]


def _can_mount() -> bool:
    probe = shutil.which("unshare")
    if probe is None:
        return False
    done = subprocess.run(
        [probe, "-Urm", "sh", "-c", "mount -t tmpfs none /mnt 2>/dev/null || exit 3"],
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


@pytest.mark.skipif(not _can_mount(), reason="needs unshare -Urm and tmpfs mounts")
def test_an_output_folder_that_is_a_mount_point_is_committed_through_the_journal(
    trees: Trees, tmp_path: Path
) -> None:
    old, old_tree, new_tree = trees
    folder = tmp_path / "mounted"
    shutil.copytree(old, folder)
    shutil.rmtree(folder / "rules")
    (folder / "rules").mkdir()
    argv = " ".join([sys.executable, "-m", "rulegen", *BUILD])
    script = f"""
        set -e
        mount -t tmpfs none rules
        {argv} > /dev/null
        cp -a rules ../first
        rm specs/b.yaml
        printf %s '{NEW["specs/a.yaml"]}' > specs/a.yaml
        printf %s '{NEW["specs/c.yaml"]}' > specs/c.yaml
        printf 'hand-written\\n' > rules/README.md
        printf 'tests: []\\n' > rules/tests/smoke.yml
        {argv} > /dev/null
        cp -a rules ../second
        ls -A rules > ../listing
    """
    done = subprocess.run(
        ["unshare", "-Urm", "sh", "-c", textwrap.dedent(script)],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    first = {k: v for k, v in snapshot(tmp_path / "first").items()}
    assert first == {k: v for k, v in old_tree.items() if k not in USER_FILES_IN_RULES}
    assert snapshot(tmp_path / "second") == new_tree
    assert "rulegen-staging" not in (tmp_path / "listing").read_text()


def test_a_half_written_staging_folder_is_deleted_not_rescued(trees: Trees, tmp_path: Path) -> None:
    """A build killed while writing leaves truncated generated files (no header, so they look
    like a user's): the next build deletes them with their staging folder."""
    old, _, new_tree = trees
    folder = _fresh(old, tmp_path, "truncated")
    staging = folder / ".rules.rulegen-staging-dead"
    write_tree(staging, {"grafana/gamma.json": "", commit_module.UNFINISHED: ""})
    assert _build_in_child(folder) == 0
    assert snapshot(folder / "rules") == new_tree
    assert _leftovers(folder) == []


def test_a_users_file_left_in_the_swapped_out_folder_is_moved_back(
    trees: Trees, tmp_path: Path
) -> None:
    """The old folder after a swap (no marker): a file of the user's found only there was
    created during the build, and is moved into the new folder."""
    old, _, new_tree = trees
    folder = _fresh(old, tmp_path, "rescue")
    write_tree(folder, {".rules.rulegen-staging-old/notes/late.txt": "written during a build\n"})
    assert _build_in_child(folder) == 0
    assert (folder / "rules" / "notes" / "late.txt").read_text() == "written during a build\n"
    assert _leftovers(folder) == []
