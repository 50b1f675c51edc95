"""Apply a plan to the output folder so that a kill at any instant leaves it whole.

Why: ``rules/`` spans several folders (prometheus/, tests/, alertmanager/, grafana/, …) that
are only correct together, and CI or a user may kill a build at any moment.

- **Exchange** (Linux, the usual case): the new folder is assembled beside the old one, in
  ``<parent>/.<name>.rulegen-staging-XXXX``: the generated files are written and validated
  there, then every file of the old folder that stays (the user's, and generated files this
  build keeps) is hard-linked in, and one ``renameat2(RENAME_EXCHANGE)`` swaps the two
  folders. Before that call the old folder is untouched; after it the new one is complete.
  The old folder, now at the staging path, is deleted; a kill before that leaves it for the
  next build to delete.
- **Journal** (the folder is a mount point, has a mount inside it, or the system cannot
  exchange): the new files are staged, then a journal naming every change is renamed into
  place (the commit point) and the files are moved in one by one. A kill before the journal
  leaves the old folder; after it, the next build completes the commit from the journal
  before anything else, and ``--check`` refuses to compare a half-committed folder.

Builds of the same folder take turns: each holds a lock on the parent folder while it plans,
validates and commits, so a leftover staging folder is always one of a dead build.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import posixpath
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from rulegen.core.locks import exclusive
from rulegen.errors import UsageError
from rulegen.outdir.manifest import MANIFEST, header_sources, read_manifest, safe_relative
from rulegen.outdir.plan import STAGING_MARK, Plan
from rulegen.output import write_output

JOURNAL = ".rulegen-journal.json"
# In a staging folder until its files are all written: a leftover that has it holds nothing
# but rulegen's half-written files (a truncated one would look like a user's file).
UNFINISHED = ".rulegen-unfinished"
MAX_JOURNAL_BYTES = 64 * 1024 * 1024
Check = Callable[[Path], None]
# Called with a step name between the steps of a commit. Tests set it to kill the process
# there (the fault-injection proof of atomicity); it is never set otherwise.
FAULT: Callable[[str], None] | None = None
# Tests set it to take the journal path on a filesystem that could exchange.
FORCE_JOURNAL = False


def _step(name: str) -> None:
    if FAULT is not None:
        FAULT(name)


@contextmanager
def locked(folder: Path, shown: str) -> Iterator[list[str]]:
    """Hold the output folder for one build: take the lock, finish or clean up what an
    interrupted build left; yields notes on what was recovered."""
    target = _real(folder)
    parent = target.parent
    parent.mkdir(parents=True, exist_ok=True)
    busy = f"--out {shown}: another rulegen build is writing it; try again when it is done"
    with exclusive(parent, UsageError(busy)):
        yield recover(target, shown)


def leftovers(folder: Path) -> list[Path]:
    """Staging folders an interrupted build left (beside the folder, or inside it)."""
    target = _real(folder)
    found: list[Path] = []
    for home, prefix in ((target.parent, f".{target.name}{STAGING_MARK}"), (target, STAGING_MARK)):
        try:
            entries = sorted(os.scandir(home), key=lambda e: e.name)
        except (FileNotFoundError, NotADirectoryError):
            continue
        found.extend(
            Path(e.path)
            for e in entries
            if e.name.startswith(prefix) and e.is_dir(follow_symlinks=False)
        )
    return found


def pending_journal(folder: Path) -> Path | None:
    """A committed journal not yet applied: the folder is half old, half new until the next
    build completes it."""
    return next((p for p in leftovers(folder) if (p / JOURNAL).is_file()), None)


def recover(target: Path, shown: str) -> list[str]:
    """Complete a committed journal; delete other leftovers (after moving back any file of
    the user's that exists only there)."""
    notes: list[str] = []
    for leftover in leftovers(target):
        if (leftover / JOURNAL).is_file():
            _apply_journal(leftover, target)
            notes.append(f"completed the commit an interrupted build left in {shown}")
        else:
            if not (leftover / UNFINISHED).exists():
                _rescue(leftover, target)  # the old folder after a swap: may hold a user's file
            shutil.rmtree(leftover, ignore_errors=True)
            notes.append(f"removed {leftover.name}, left by an interrupted build")
    return notes


def commit(plan: Plan, check: Check | None = None, prepared: Staging | None = None) -> None:
    """Write ``plan`` to its folder, or change nothing: ``check`` (promtool) runs on the
    assembled files first and may raise. Call inside ``locked``; ``prepared``: the staging
    folder ``stage`` made (it holds files the build wrote), else a new one."""
    target = _real(plan.folder)
    exists = target.is_dir()
    staging, beside = prepared or stage(target)
    # what the staging path holds: new files, then (after an exchange) the old folder, or
    # a committed journal that only ``_apply_journal`` (now or at the next build) may remove
    holds_journal = False
    try:
        _write(staging, plan, target if exists else None)
        _step("files written")
        if check is not None:
            check(staging)
        _step("validated")
        if not exists:
            (staging / UNFINISHED).unlink()
            staging.rename(target)
            _step("renamed into place")
        elif beside and not FORCE_JOURNAL and _exchanged(staging, target, plan):
            _step("exchanged")
            _rescue(staging, target, set(plan.remove))
            _step("rescued")
        else:
            _write_journal(staging, plan)
            holds_journal = True
            _step("journal committed")
            _apply_journal(staging, target)
    finally:
        if not holds_journal:
            shutil.rmtree(staging, ignore_errors=True)
    _step("cleaned")


# A staging folder, and whether it is beside the output folder (so the two can be swapped).
Staging = tuple[Path, bool]


def stage(folder: Path) -> Staging:
    """A new staging folder for ``folder``, marked unfinished (call inside ``locked``)."""
    target = _real(folder)
    staging, beside = _staging(target, target.is_dir())
    (staging / UNFINISHED).touch()
    _step("staging created")
    return staging, beside


def _staging(target: Path, exists: bool) -> tuple[Path, bool]:
    """A new staging folder, and whether it is beside ``target`` (so the two can be swapped):
    inside ``target`` when that is a mount point or its parent is not writable."""
    if exists and target.stat().st_dev != target.parent.stat().st_dev:
        return Path(tempfile.mkdtemp(prefix=STAGING_MARK, dir=target)), False
    try:
        prefix = f".{target.name}{STAGING_MARK}"
        return Path(tempfile.mkdtemp(prefix=prefix, dir=target.parent)), True
    except PermissionError:
        if not exists:
            raise
        return Path(tempfile.mkdtemp(prefix=STAGING_MARK, dir=target)), False


def _exchanged(staging: Path, target: Path, plan: Plan) -> bool:
    """Complete the staging folder with what stays of the old one and swap them; ``False``
    (nothing swapped) where the folder or the system does not allow it."""
    if not _link_rest(target, staging, plan):
        return False
    (staging / UNFINISHED).unlink()
    _step("assembled")
    return _exchange(staging, target)


def _write(staging: Path, plan: Plan, target: Path | None) -> None:
    """The generated files and the manifest, in the folder's permissions (each file's bytes
    decompressed from the plan as it is written: a fleet's output is hundreds of MB); those
    the build's workers wrote into the staging folder itself are there already."""
    staging.chmod(stat.S_IMODE(target.stat().st_mode) if target else _default_mode())
    for folder in sorted({posixpath.dirname(name) for name in plan.write} - {""}):
        (staging / folder).mkdir(parents=True, exist_ok=True)
    for name in plan.unwanted:  # written by a worker, but the plan keeps the file there
        (staging / name).unlink(missing_ok=True)
    for name in plan.write:
        path = staging / name
        if plan.write.spooled(name) != path:  # (a worker wrote it there already)
            write_output(path, plan.write.data(name))
    (staging / MANIFEST).write_text(plan.manifest(), encoding="utf-8")


def _link_rest(target: Path, staging: Path, plan: Plan) -> bool:
    """Hard-link every entry of the old folder that stays into the staging folder; ``False``
    when that cannot be done (a mount inside the folder, hard links refused)."""
    skip = {*plan.write, *plan.remove, MANIFEST}
    device = target.stat().st_dev
    for directory, subdirs, names in os.walk(target):
        here = Path(directory)
        relative = "" if here == target else here.relative_to(target).as_posix()
        if not relative:
            subdirs[:] = [d for d in subdirs if not d.startswith(STAGING_MARK)]
        if not _same_device(here, subdirs, names, device):
            return False
        if not names and not subdirs and relative:
            _mkdirs(staging, relative, target)
        for name in names:
            key = f"{relative}/{name}" if relative else name
            if key in skip:
                continue
            _mkdirs(staging, relative, target)
            if not _link(here / name, staging / key):
                return False
    return True


def _same_device(here: Path, subdirs: list[str], names: list[str], device: int) -> bool:
    """Whether no folder below ``here`` is a mount; links to folders move to ``names``."""
    for name in list(subdirs):
        info = (here / name).lstat()
        if stat.S_ISLNK(info.st_mode):
            subdirs.remove(name)
            names.append(name)
        elif info.st_dev != device:
            return False
    return True


def _link(source: Path, destination: Path) -> bool:
    try:
        if source.is_symlink():
            destination.symlink_to(source.readlink())
        else:
            os.link(source, destination, follow_symlinks=False)
    except OSError as exc:
        if exc.errno in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.EACCES):
            return False
        raise
    return True


def _mkdirs(staging: Path, relative: str, target: Path) -> None:
    """``relative`` and its parents in the staging folder, with the old folder's modes."""
    current = staging
    for part in relative.split("/") if relative else ():
        current = current / part
        if not current.is_dir():
            current.mkdir()
            source = target / current.relative_to(staging)
            current.chmod(stat.S_IMODE(source.lstat().st_mode))


def _rescue(old: Path, target: Path, generated: set[str] | None = None) -> None:
    """Move into ``target`` any file of the user's found only in ``old``.

    Why: a file created in the output folder while a build ran (after its files were linked,
    before the exchange) would otherwise go with the old folder.
    """
    try:
        listed = set(read_manifest(old) or {})
    except ValueError:
        listed = set()
    skip = listed | (generated or set()) | {MANIFEST, JOURNAL}
    for directory, subdirs, names in os.walk(old):
        here = Path(directory)
        relative = here.relative_to(old).as_posix()
        prefix = "" if relative == "." else f"{relative}/"
        for name in [*names, *(d for d in subdirs if (here / d).is_symlink())]:
            key = prefix + name
            if key in skip or os.path.lexists(target / key):
                continue
            if _generated_file(here / name):
                continue
            (target / key).parent.mkdir(parents=True, exist_ok=True)
            (here / name).rename(target / key)


def _generated_file(path: Path) -> bool:
    if path.is_symlink() or not path.is_file():
        return False
    return header_sources(path.read_bytes()[:65536]) is not None


def _write_journal(staging: Path, plan: Plan) -> None:
    """The journal of every change; the rename that creates it is the commit point."""
    changes = {"install": [*sorted(plan.write), MANIFEST], "remove": sorted(plan.remove)}
    temporary = staging / f"{JOURNAL}.tmp"
    temporary.write_text(json.dumps(changes), encoding="utf-8")
    temporary.replace(staging / JOURNAL)


def _apply_journal(staging: Path, target: Path) -> None:
    """Carry out a committed journal; safe to repeat after a kill at any point.

    Removals come first, while the folder's manifest still lists what they remove (only
    files it lists, or that carry the generated-file header, are deleted); the manifest is
    installed last.
    """
    try:
        changes = json.loads((staging / JOURNAL).read_bytes()[:MAX_JOURNAL_BYTES])
        install, remove = list(changes["install"]), list(changes["remove"])
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        shutil.rmtree(staging, ignore_errors=True)  # not a journal rulegen wrote
        return
    try:
        listed = set(read_manifest(target) or {})
    except ValueError:
        listed = set()
    for name in remove:
        path = target / name
        if not safe_relative(name) or not path.is_file() or path.is_symlink():
            continue
        if name in listed or header_sources(path.read_bytes()[:65536]) is not None:
            path.unlink()
            _step(f"removed {name}")
        _prune(target, name)
    for name in install:
        source = staging / str(name)
        if not (name == MANIFEST or safe_relative(name)) or not os.path.lexists(source):
            continue  # moved by an earlier, interrupted run
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        source.replace(target / name)
        _step(f"installed {name}")
    shutil.rmtree(staging, ignore_errors=True)


def _prune(target: Path, name: str) -> None:
    """Remove the folders a removal left empty, up to (not including) ``target``."""
    parent = (target / name).parent
    while parent != target:
        try:
            parent.rmdir()
        except OSError:
            return
        parent = parent.parent


def _real(folder: Path) -> Path:
    """The folder itself when ``--out`` is a symbolic link to it (the link stays)."""
    return Path(os.path.realpath(folder))


def _default_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o777 & ~mask


_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
_UNSUPPORTED = {errno.EINVAL, errno.ENOSYS, errno.EXDEV, errno.EBUSY, errno.EPERM}
_UNSUPPORTED.add(getattr(errno, "EOPNOTSUPP", errno.EINVAL))


def _exchange(first: Path, second: Path) -> bool:
    """Swap two folders in one atomic step (``renameat2(RENAME_EXCHANGE)``); ``False`` where
    the system or the filesystem cannot."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p]
    function.argtypes += [ctypes.c_uint]
    result = function(
        _AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second), _RENAME_EXCHANGE
    )
    if result == 0:
        return True
    code = ctypes.get_errno()
    if code in _UNSUPPORTED:
        return False
    raise OSError(code, os.strerror(code), str(second))
