"""The output folder: which files in it are rulegen's, what a build changes, and the commit.

Why a package of its own: ``rules/`` is shared with the user (hand-written tests, a README,
other tools' files), so writing it is more than serialising. ``manifest`` records what
rulegen wrote; ``plan`` decides, from the manifest and the build's inputs, what to write,
keep and remove, and refuses to touch anything else; ``drift`` compares a plan with the disk
(``--check``); ``transaction`` applies a plan so that a kill at any instant leaves the whole
old or the whole new folder.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rulegen.core.confined import escapes
from rulegen.errors import OutputConflict
from rulegen.outdir.drift import Drift, drift
from rulegen.outdir.manifest import MANIFEST
from rulegen.outdir.plan import Plan, plan_output
from rulegen.outdir.transaction import Check, commit, locked, stage

if TYPE_CHECKING:
    from rulegen.build import BuildResult

__all__ = [
    "MANIFEST", "Drift", "Plan", "Staged", "check_output", "commit", "drift", "folder_name",
    "plan_output", "refuse_escapes", "staged", "write",
]  # fmt: skip


@dataclass
class Staged:
    """An output folder held for one build, and the staging folder its new content is
    assembled in, made before the build: the build's workers write their files there as
    they render them (``build(spool=...)``), so no file's text waits in memory."""

    folder: Path
    shown: str
    staging: Path
    beside: bool
    recovered: list[str]
    committing: bool = False

    def write(self, result: BuildResult, check: Check | None = None) -> Plan:
        """``write`` of ``result`` through this staging folder."""
        plan = _plan(result, self.folder, self.shown)
        plan.notes[:0] = self.recovered
        self.committing = True  # the commit removes the staging folder (or keeps a journal)
        commit(plan, check, (self.staging, self.beside))
        return plan


@contextmanager
def staged(folder: Path) -> Iterator[Staged]:
    """Hold ``folder`` for a build that writes it (the lock and the recovery of ``write``)
    and make its staging folder first; the staging folder goes when the build does not
    commit (a spec error, a conflict), so a failed build changes nothing."""
    shown = folder_name(folder)
    with locked(folder, shown) as recovered:
        staging, beside = stage(folder)
        held = Staged(folder, shown, staging, beside, recovered)
        try:
            yield held
        finally:
            if not held.committing:
                shutil.rmtree(staging, ignore_errors=True)


def write(result: BuildResult, folder: Path, check: Check | None = None) -> Plan:
    """Write a build's files to ``folder``: replace and remove only what rulegen wrote,
    all at once or not at all; ``check`` (e.g. ``rulegen.validate``) runs on the assembled
    files first and may raise. Returns what was done (``write``, ``remove``, ``notes``)."""
    shown = folder_name(folder)
    with locked(folder, shown) as recovered:
        plan = _plan(result, folder, shown)
        plan.notes[:0] = recovered
        commit(plan, check)
    return plan


def check_output(result: BuildResult, folder: Path) -> Drift:
    """How ``folder`` differs from what ``write`` would leave in it (empty when up to date)."""
    return drift(_plan(result, folder, folder_name(folder)))


def _plan(result: BuildResult, folder: Path, shown: str) -> Plan:
    root = Path(os.path.realpath(result.root or Path.cwd()))
    return plan_output(folder, shown, result.files, result.sources, result.inputs, root)


def folder_name(folder: Path) -> str:
    """How messages name the output folder: as given, relative to the working directory
    (a symbolic link is not followed: it is the name the user typed)."""
    relative = os.path.relpath(folder.absolute())
    return Path(relative).as_posix() if not relative.startswith("..") else folder.as_posix()


def refuse_escapes(folder: Path, names: Iterable[str]) -> None:
    """``OutputConflict`` (exit 2, one line per link) when a file of ``names`` would be
    written into ``folder`` through a symbolic link that leads out of it: ``rulegen import
    -o`` and ``rulegen init`` write into the folder as it is (a build assembles its own)."""
    problems = escapes(folder, names, folder_name(folder))
    if problems:
        raise OutputConflict(problems)
