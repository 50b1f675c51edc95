"""Files written into a folder the user named (``import -o DIR``, ``init DIR``, ``--junit``):
never through a symbolic link that leaves the folder, each whole, in the umask's mode.

Why one helper: a build's output folder is assembled apart and swapped in
(``transaction``), but ``rulegen import`` and ``rulegen init`` write into the folder as it
is. A sub-folder there may be a symbolic link (``DIR/tests -> /elsewhere``) that a plain
``open`` follows, writing outside ``DIR``; the link is refused before anything is written, so
a refusal leaves everything as it was. A file is written under a temporary name and renamed
into place, so a reader sees the old file or the new one, with the mode the umask gives (as
``open`` gives it: ``mkstemp``'s own 0600 is not what a shared repository wants).
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Iterable
from pathlib import Path


def escapes(folder: Path, names: Iterable[str], shown: str) -> list[str]:
    """Why ``names`` (relative paths) may not be written into ``folder`` (``shown``: how
    messages name it), one line per place: a symbolic link on the way that resolves outside
    ``folder``, or something on the way that is not a folder; empty when they may. A link
    that stays inside ``folder`` is followed; the last part of each name (the file) is
    checked the same way. ``folder`` itself may be a link: it is where the user asked the
    files to go. The caller raises its own error (``OutputConflict``): this layer sits below
    ``rulegen.errors``."""
    root = Path(os.path.realpath(folder))
    problems: dict[str, str] = {}
    for name in names:
        parts = Path(name).parts
        for depth in range(1, len(parts) + 1):
            relative = "/".join(parts[:depth])
            named = relative if shown == "." else f"{shown}/{relative}"
            problem = _problem(folder / relative, root, named, shown, depth < len(parts))
            if problem is not None:
                problems.setdefault(relative, problem)
                break
    return list(problems.values())


def _problem(path: Path, root: Path, named: str, shown: str, parent: bool) -> str | None:
    """Why nothing may be written at or under ``path`` (``None``: it may)."""
    try:
        info = path.lstat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISLNK(info.st_mode):
        real = Path(os.path.realpath(path))
        if not real.is_relative_to(root):
            return f"{named} is a symbolic link to {real}, outside {shown}: nothing written"
    if parent and not path.is_dir():
        return f"{named} is not a folder: nothing written"
    return None


def write_whole(path: Path, data: bytes) -> None:
    """``path`` = ``data``, whole or not at all (a temporary file beside it, renamed over
    it: a link at ``path`` is replaced, never written through), created with mode 0666
    less the umask, as ``open`` creates a file (``mkstemp`` would make it 0600). Raises
    ``OSError``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = _create(path.parent, f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        temporary.replace(path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)


def _create(folder: Path, prefix: str) -> tuple[int, Path]:
    """A new file of a name no other has (``prefix`` + random), opened for writing."""
    for _ in range(100):
        path = folder / f"{prefix}{secrets.token_hex(6)}"
        try:
            return os.open(path, _CREATE, 0o666), path
        except FileExistsError:
            continue
    raise FileExistsError(f"{folder}: no free temporary name")
