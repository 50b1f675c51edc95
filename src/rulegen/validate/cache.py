"""Remember which checks passed, keyed by everything their result depends on: promtool test
files, and (``key_of``) promtool's rule check and amtool's routing checks of a folder.

Why: a fleet's generated tests take promtool about half a CPU-minute per service, hours for a
thousand services, while a change to one spec changes one service's files. A test file's
result depends only on its own bytes, the bytes of the rule files it loads and the promtool
release, so a pass recorded under the hash of exactly those can be trusted on any machine;
anything that cannot be hashed with certainty (a glob, an unreadable file) is simply run.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from rulegen.source.loader import LoadError, decode_source, load_text

# Bumped when what goes into a key changes, so older markers stop matching.
KEY_VERSION = "1"
_GLOB = ("*", "?", "[")


class TestCache:
    """Marker files in ``folder``, one per test file that passed, named by its key."""

    __test__ = False  # not a pytest class

    def __init__(self, folder: Path, promtool_version: str) -> None:
        """``promtool_version``: promtool's whole ``--version`` text (release, build, revision)."""
        self.folder = folder
        self.promtool_version = promtool_version

    def key(self, root: Path, test_file: str, rule_files: list[str] | None = None) -> str | None:
        """The hash of what the result of ``root/test_file`` depends on, or ``None``.

        ``rule_files``: the file's ``rule_files`` when the caller wrote it (a generated test),
        which spares parsing it; a user's test file is read to find them.
        """
        path = root / test_file
        try:
            text = path.read_bytes()
        except OSError:
            return None
        if rule_files is None:
            rule_files = _rule_files(text)
        if rule_files is None:
            return None
        digest = hashlib.sha256()
        for part in (KEY_VERSION, self.promtool_version, test_file):
            digest.update(part.encode() + b"\0")
        digest.update(text + b"\0")
        for name in rule_files:
            if any(char in name for char in _GLOB):
                return None
            try:
                digest.update(name.encode() + b"\0" + (path.parent / name).read_bytes() + b"\0")
            except OSError:
                return None
        return digest.hexdigest()

    def key_of(self, tool: str, kind: str, parts: Sequence[tuple[str, bytes]]) -> str:
        """The hash of a check's whole input: the binary that runs it (``tool``: its whole
        ``--version`` text), what it is (``kind``), and each named input's bytes."""
        digest = hashlib.sha256()
        for part in (KEY_VERSION, tool, kind):
            digest.update(part.encode() + b"\0")
        for name, data in parts:
            digest.update(name.encode() + b"\0" + data + b"\0")
        return digest.hexdigest()

    def passed(self, key: str | None) -> bool:
        """Whether a test file with this key passed before."""
        return key is not None and (self.folder / key).is_file()

    def remember(self, key: str | None, test_file: str) -> str | None:
        """Record a pass (the marker holds the file's name for whoever looks inside); returns
        why it could not be recorded. A cache that cannot be written never fails a build."""
        if key is None:
            return None
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=self.folder, prefix=".tmp-")
            with os.fdopen(handle, "w", encoding="utf-8") as marker:
                marker.write(f"{test_file}\n{self.promtool_version}\n")
            Path(temporary).replace(self.folder / key)
        except OSError as exc:
            return f"{exc.filename or self.folder}: {exc.strerror or exc}"
        return None


def _rule_files(text: bytes) -> list[str] | None:
    """The ``rule_files`` of a user's test file, read with the spec loader's guards (size,
    depth, aliases, tags); ``None`` when that fails, so the file simply runs."""
    try:
        data = load_text(decode_source(text, "test file"), "test file").data
    except LoadError:
        return None
    found = data.get("rule_files") if isinstance(data, dict) else None
    if not isinstance(found, list) or not all(isinstance(name, str) for name in found):
        return None
    return found
