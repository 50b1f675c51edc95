"""Rendered files of a service, remembered under the hash of the bytes they were made from.

Why: in a fleet most specs are unchanged between two builds, yet each one's tests are
synthesised and its rule, test and dashboard files written again (about 40 ms of CPU a
service, minutes for a thousand). A service's files depend only on its spec's bytes, the
bytes of the defaults files it extends, the signal catalog, rulegen's own code, the targets
asked for and the spec's path as the headers name it, so files recorded under the hash of
exactly those are the files a render would give, on any machine. The key is made of the very
bytes the loader parsed (never read again for it): a spec replaced while a build runs cannot
put one version's files under the other's key.

The entries live beside the test cache's markers (``<DIR>/render/<key>.json``). They are
read as hostile input: each holds a digest of its own content (and, with
``RULEGEN_CACHE_SECRET``, an HMAC of it), checked on every read; a malformed, edited, copied,
unsigned or mistyped entry, or one naming a file outside the output folder, is a miss with a
one-line warning (the service is rendered and the entry written again), never an error, and
a cache that cannot be written never fails a build.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TypeGuard

from rulegen.core.integrity import (
    BadEntry,
    canonical,
    read_sealed,
    sealed,
    sha256,
    write_atomically,
)
from rulegen.output import plain_relative

# Bumped when what goes into a key or an entry changes, so older entries stop matching.
KEY_VERSION = "2"
FORMAT = 2


@dataclass(frozen=True)
class CachedRender:
    """What a build keeps of one rendered service besides its rule groups (which are made
    again from the spec: they are the typed model that validation and routing read)."""

    files: dict[str, str]
    costs: dict[str, int]
    loads: dict[str, str]
    reports: list[str]


@dataclass(frozen=True)
class RenderCache:
    """Entries in ``folder``, keyed with ``fingerprint`` (rulegen's code and the catalog).

    ``read_only``: entries are used, nothing is written (a pull request's CI job);
    ``secret``: every entry is signed with it, and one without its valid HMAC is refused.
    """

    folder: Path
    fingerprint: str
    read_only: bool = False
    secret: bytes | None = None

    def key(
        self, spec: bytes, extends: Sequence[tuple[str, bytes]], source: str, targets: Sequence[str]
    ) -> str:
        """The hash of one service's inputs: its spec and defaults files (name and the bytes
        the loader parsed), the spec's path as the headers name it, and the output targets."""
        digest = hashlib.sha256()
        for part in (KEY_VERSION, self.fingerprint, source, ",".join(targets)):
            digest.update(part.encode() + b"\0")
        digest.update(spec + b"\0")
        for name, data in extends:
            digest.update(name.encode() + b"\0" + data + b"\0")
        return digest.hexdigest()

    def path(self, key: str) -> Path:
        """Where the entry of ``key`` is kept."""
        return self.folder / f"{key}.json"

    def load(self, key: str, warn: Callable[[str], None]) -> CachedRender | None:
        """The entry recorded under ``key``, or ``None`` when there is none usable (one that
        is there but fails its checks is named on ``warn``, in one line)."""
        path = self.path(key)
        try:
            record = read_sealed(path, self.secret)
            return None if record is None else _checked(record, key)
        except BadEntry as exc:
            warn(f"test cache: {path.as_posix()}: {exc.reason}; ignored, rendered again")
            return None

    def store(self, key: str, entry: CachedRender) -> None:
        """Record ``entry`` under ``key`` with its digest (atomically: a reader sees the whole
        entry or none); nothing when read-only."""
        if self.read_only:
            return
        try:
            write_atomically(self.folder, f"{key}.json", sealed(_record(key, entry), self.secret))
        except OSError:
            return


def _record(key: str, entry: CachedRender) -> dict[str, object]:
    """What an entry file holds: its key, the files and what goes with them, and the digest
    of all of that (so an edit of any file in it, or a copy under another key, shows)."""
    content: dict[str, object] = {
        "format": FORMAT,
        "key": key,
        "files": entry.files,
        "costs": entry.costs,
        "loads": entry.loads,
        "reports": entry.reports,
    }
    return {**content, "digest": sha256(canonical(content))}


def _checked(record: dict[str, object], key: str) -> CachedRender:
    """The entry in ``record`` once its format, digest, key and fields are right; else
    ``BadEntry`` saying which is not."""
    digest = record.pop("digest", None)
    if record.get("format") != FORMAT:
        raise BadEntry("another format (not written by this rulegen)")
    if digest != sha256(canonical(record)):
        raise BadEntry("its content does not match its digest (corrupt or edited)")
    if record.get("key") != key:
        raise BadEntry("recorded under another key (copied from another entry)")
    entry = _entry(record)
    if entry is None:
        raise BadEntry("not what rulegen writes (a mistyped field, or a file outside the output)")
    return entry


def _entry(data: dict[str, object]) -> CachedRender | None:
    """A parsed entry checked field by field: exact types, safe file names."""
    files, costs, loads, reports = (
        data.get("files"),
        data.get("costs"),
        data.get("loads"),
        data.get("reports"),
    )
    if not (_str_map(files) and _str_map(loads) and isinstance(costs, dict)):
        return None
    if not all(isinstance(k, str) and type(v) is int for k, v in costs.items()):
        return None
    if not isinstance(reports, list) or not all(isinstance(r, str) for r in reports):
        return None
    if not all(_output_name(name) for name in files):
        return None
    counted = {str(name): int(cost) for name, cost in costs.items()}
    return CachedRender(dict(files), counted, dict(loads), [str(r) for r in reports])


def _output_name(name: str) -> bool:
    """A name a service's output may have: plain, relative, no hidden part (``.tmp-…``, the
    manifest)."""
    return plain_relative(name) and not any(part.startswith(".") for part in name.split("/"))


def _str_map(value: object) -> TypeGuard[dict[str, str]]:
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    )


@cache
def code_fingerprint() -> str:
    """The hash of every file of the installed rulegen package (code, templates, built-in
    signals): a rulegen upgrade or a local edit of rulegen invalidates every entry."""
    return tree_fingerprint(Path(__file__).resolve().parent.parent)


def tree_fingerprint(folder: Path) -> str:
    """The hash of every file under ``folder`` (relative names and bytes), bytecode aside."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if "__pycache__" in path.parts or not path.is_file():
            continue
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()
