"""Rendered files of a service, remembered under the hash of everything they come from.

Why: in a fleet most specs are unchanged between two builds, yet each one's tests are
synthesised and its rule, test and dashboard files written again (about 40 ms of CPU a
service, minutes for a thousand). A service's files depend only on its spec's bytes, the
bytes of the defaults files it extends, the signal catalog, rulegen's own code, the targets
asked for and the spec's path as the headers name it, so files recorded under the hash of
exactly those are the files a render would give, on any machine.

The entries live beside the test cache's markers (``<DIR>/render/<key>.json``). They are
read as hostile input: a malformed, unreadable or mistyped entry, or one naming a file
outside the output folder, is a miss (the service is rendered and the entry written
again), never an error, and a cache that cannot be written never fails a build.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TypeGuard

from rulegen.output import plain_relative

# Bumped when what goes into a key or an entry changes, so older entries stop matching.
KEY_VERSION = "1"
FORMAT = 1


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
    """Entries in ``folder``, keyed with ``fingerprint`` (rulegen's code and the catalog)."""

    folder: Path
    fingerprint: str

    def key(
        self, spec: bytes, extends: Sequence[tuple[str, bytes]], source: str, targets: Sequence[str]
    ) -> str:
        """The hash of one service's inputs: its spec and defaults files (name and bytes),
        the spec's path as the headers name it, and the output targets."""
        digest = hashlib.sha256()
        for part in (KEY_VERSION, self.fingerprint, source, ",".join(targets)):
            digest.update(part.encode() + b"\0")
        digest.update(spec + b"\0")
        for name, data in extends:
            digest.update(name.encode() + b"\0" + data + b"\0")
        return digest.hexdigest()

    def load(self, key: str) -> CachedRender | None:
        """The entry recorded under ``key``, or ``None`` when there is none usable."""
        try:
            data = json.loads((self.folder / f"{key}.json").read_text("utf-8"))
        except (OSError, UnicodeDecodeError, ValueError, RecursionError):
            return None
        return _entry(data)

    def store(self, key: str, entry: CachedRender) -> None:
        """Record ``entry`` under ``key`` (atomically: a reader sees the whole entry or none)."""
        data = {
            "format": FORMAT,
            "files": entry.files,
            "costs": entry.costs,
            "loads": entry.loads,
            "reports": entry.reports,
        }
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=self.folder, prefix=".tmp-")
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(data, out, ensure_ascii=False, sort_keys=True)
            Path(temporary).replace(self.folder / f"{key}.json")
        except OSError:
            return


def _entry(data: object) -> CachedRender | None:
    """A parsed entry checked field by field: exact types, safe file names."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return None
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
    return tree_fingerprint(Path(__file__).resolve().parent)


def tree_fingerprint(folder: Path) -> str:
    """The hash of every file under ``folder`` (relative names and bytes), bytecode aside."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if "__pycache__" in path.parts or not path.is_file():
            continue
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()
