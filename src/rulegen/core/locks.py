"""One process at a time on a folder: an exclusive ``flock`` on the folder itself.

Why one helper: a build holds its output folder's parent while it commits, a repair its
journal folder while it deletes and writes; both need the lock to vanish with the process
however it ends (the kernel drops an ``flock`` when the last descriptor closes, a SIGKILL
included, so there is never a stale lock to clean), and both need a second process to get one
line (the caller's ``UsageError``), not a hang.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def exclusive(folder: Path, busy: Exception) -> Iterator[None]:
    """Hold ``folder`` (which must exist) for the block; ``busy`` is raised when another
    process holds it (made by the caller: this layer sits below ``rulegen.errors``)."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise busy from None
        yield
    finally:
        os.close(fd)
