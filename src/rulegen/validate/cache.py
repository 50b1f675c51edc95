"""Remember which checks passed, keyed by everything their result depends on: promtool test
files, and (``key_of``) promtool's rule check and amtool's routing checks of a folder.

Why: a fleet's generated tests take promtool about half a CPU-minute per service, hours for a
thousand services, while a change to one spec changes one service's files. A test file's
result depends only on its own bytes, the bytes of the rule files it loads and the promtool
release, so a pass recorded under the hash of exactly those can be trusted on any machine;
anything that cannot be hashed with certainty (a glob, an unreadable file) is simply run.

A marker is not trusted for being there: it records its key, the tool's version and the
SHA-256 of every file it vouches for, and on use that record is made again from the current
files and must match, so a marker edited, copied from another file's or written by hand is
refused (one warning line) and the check runs. With ``RULEGEN_CACHE_SECRET`` each marker is
signed too, and one without its valid HMAC is refused: only then can someone who may write
the cache but does not hold the secret not forge a pass (``rulegen.core.integrity``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rulegen.core.integrity import (
    BadEntry,
    cache_secret,
    canonical,
    read_sealed,
    sealed,
    sha256,
    write_atomically,
)
from rulegen.source.loader import LoadError, decode_source, load_text

# Bumped when what goes into a key or a marker changes, so older markers stop matching.
KEY_VERSION = "2"
_GLOB = ("*", "?", "[")


@dataclass(frozen=True)
class Key:
    """A check's pass marker: its file name (``name``, the SHA-256 of the rest of
    ``record``) and what the marker must hold (``record``: the key, the tool's version, what
    was checked, and the SHA-256 of each input file). Two keys are the same by name."""

    name: str
    record: dict[str, object] = field(compare=False, hash=False)


class TestCache:
    """Marker files in ``folder``, one per check that passed, named by its key."""

    __test__ = False  # not a pytest class

    def __init__(
        self,
        folder: Path,
        promtool_version: str,
        *,
        read_only: bool = False,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        """``promtool_version``: promtool's whole ``--version`` text (release, build,
        revision); ``read_only``: markers are used, none is written; ``warn``: where a
        refused marker is named, one line each (default: kept in ``warnings``). The secret is
        ``RULEGEN_CACHE_SECRET``'s, read now."""
        self.folder = folder
        self.promtool_version = promtool_version
        self.read_only = read_only
        self.secret = cache_secret()
        self.warnings: list[str] = []
        self._warn = warn or self.warnings.append

    def key(self, root: Path, test_file: str, rule_files: list[str] | None = None) -> Key | None:
        """What the result of ``root/test_file`` depends on, or ``None``.

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
        parts = [(test_file, text)]
        for name in rule_files:
            if any(char in name for char in _GLOB):
                return None
            try:
                parts.append((name, (path.parent / name).read_bytes()))
            except OSError:
                return None
        return self.key_of(self.promtool_version, f"test rules {test_file}", parts)

    def key_of(self, tool: str, kind: str, parts: Sequence[tuple[str, bytes]]) -> Key:
        """``check_key``: what a check's result depends on."""
        return check_key(tool, kind, parts)

    def passed(self, key: Key | None) -> bool:
        """Whether the check with this key passed before: its marker is there and records
        exactly ``key`` (with its valid HMAC, when there is a secret). A marker that is there
        but does not is named on ``warn`` and counts as no pass."""
        if key is None:
            return False
        path = self.folder / key.name
        try:
            record = read_sealed(path, self.secret)
            if record is None:
                return False
            _match(record, key)
        except BadEntry as exc:
            self._warn(f"test cache: {path.as_posix()}: {exc.reason}; ignored, checked again")
            return False
        return True

    def remember(self, key: Key | None) -> str | None:
        """Record a pass (replacing any marker refused before); returns why it could not be
        recorded. A cache that cannot be written never fails a build; a read-only one is
        never written."""
        if key is None or self.read_only:
            return None
        try:
            write_atomically(self.folder, key.name, sealed(key.record, self.secret))
        except OSError as exc:
            return f"{exc.filename or self.folder}: {exc.strerror or exc}"
        return None


def check_key(tool: str, kind: str, parts: Sequence[tuple[str, bytes]]) -> Key:
    """What a check's result depends on: the binary that runs it (``tool``: its whole
    ``--version`` text), what it is (``kind``), and each named input, by its SHA-256."""
    content: dict[str, object] = {
        "format": KEY_VERSION,
        "tool": tool,
        "check": kind,
        "inputs": [[name, sha256(data)] for name, data in parts],
    }
    name = sha256(canonical(content))
    return Key(name, {**content, "key": name})


def _match(record: dict[str, object], key: Key) -> None:
    """Nothing when ``record`` (a marker's content) is ``key``'s; else ``BadEntry``."""
    if record == key.record:
        return
    if record.get("key") != key.name:
        raise BadEntry("not a pass of these files (written by hand, or copied from another)")
    raise BadEntry("does not match the files it vouches for (edited)")


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
