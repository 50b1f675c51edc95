"""The repair's journal: what one SLO's repair will delete and write, on disk before the
first delete, so that a run interrupted at any instant is finished by the next one.

Why: a repair deletes recordings before it writes them back (Prometheus keeps the first
sample of a timestamp), and a kill, a dropped connection or an HTTP 500 between the two
would otherwise lose them for good: the next run finds no hole where a deleted range has
no evaluation after it. Here each rule's replacement is computed and stored (complete,
hashed, renamed into place) before its samples are deleted, and marked written after its
last write; a rerun skips the rules marked written and, for the rule it was on, deletes
again (a no-op where already deleted) and writes what the journal holds. The journal's
files are read as hostile: a file that is malformed, does not match its hash, or was made
for other rules is one line, exit 2, before anything is written.

Layout (``<root>/<service>.<slo>/``): ``plan.json`` (the range, the holes, the raw gaps,
the hash of the rules), ``rule-NNN.samples`` (one JSON line per series chunk) with
``rule-NNN.json`` (the series it writes, the samples file's hash), ``rule-NNN.written``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import struct
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from rulegen.core.locks import exclusive
from rulegen.errors import UsageError
from rulegen.repair.compute import Labels, Samples
from rulegen.repair.model import Hole, RawGap, Repair, SLOGroup
from rulegen.repair.remote import STALE_NAN

FORMAT = 1
STALE = "stale"
"""How a staleness marker is stored (JSON has no NaN payloads)."""
_SAFE = re.compile(r"[^A-Za-z0-9_-]")
_MAX_LINE = 64 * 1024 * 1024
_Broken = Callable[[Path, str], UsageError]  # ``Journal._broken``: a damaged file's error


@contextlib.contextmanager
def locked(root: Path) -> Iterator[None]:
    """One repair at a time per journal folder: two would delete and write the same series
    and each other's journal. An exclusive ``flock`` on the folder itself, which the kernel
    releases when the process ends however it ends, so a killed run leaves no stale lock."""
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(
            f"{root}: cannot make the repair's journal folder: {exc.strerror or exc}; "
            "nothing written"
        ) from None
    busy = (
        f"{root}: another rulegen repair is running with this journal folder; run this one "
        "when it has ended; nothing written"
    )
    with exclusive(root, UsageError(busy)):
        yield


def rules_hash(group: SLOGroup) -> str:
    """The hash of the recordings a journal was made for (names, expressions, labels, in
    order), so a journal is never finished with other rules."""
    digest = hashlib.sha256()
    for rule in group.recordings:
        digest.update(json.dumps([rule.record, rule.expr, list(rule.labels)]).encode() + b"\0")
    return digest.hexdigest()


def folder_of(root: Path, group: SLOGroup) -> Path:
    """Where the journal of ``group``'s repair lives."""
    return root / f"{_safe(group.service)}.{_safe(group.slo)}"


def _safe(name: str) -> str:
    return _SAFE.sub(lambda m: f"%{ord(m.group()):02X}", name)


@dataclass(frozen=True)
class Journal:
    """One SLO's journal folder and the repair it records."""

    folder: Path
    repair: Repair

    @classmethod
    def create(cls, root: Path, repair: Repair) -> Journal:
        """Write the plan (atomically) for a repair about to start."""
        folder = folder_of(root, repair.group)
        plan = {
            "format": FORMAT,
            "service": repair.group.service,
            "slo": repair.group.slo,
            "rules": rules_hash(repair.group),
            "start_ms": repair.start_ms,
            "end_ms": repair.end_ms,
            "holes": [[h.first_ms, h.last_ms] for h in repair.holes],
            "gaps": [[g.after_ms, g.before_ms] for g in repair.gaps],
        }
        try:
            folder.mkdir(parents=True, exist_ok=True)
            _remove_files(folder)  # left by a removal cut short: never trusted
            _write_atomic(folder / "plan.json", json.dumps(plan, indent=1).encode())
        except OSError as exc:
            raise UsageError(
                f"{folder}: cannot write the repair's journal: {exc.strerror or exc}; "
                "nothing written to Prometheus"
            ) from None
        return cls(folder, repair)

    @classmethod
    def find(cls, root: Path, group: SLOGroup) -> Journal | None:
        """The journal of an unfinished repair of ``group``, checked; ``None`` if none."""
        folder = folder_of(root, group)
        plan_file = folder / "plan.json"
        if not plan_file.exists():
            return None
        return cls(folder, _read_plan(plan_file, group))

    def _name(self, index: int, suffix: str) -> Path:
        return self.folder / f"rule-{index:03d}.{suffix}"

    def computed(self, index: int) -> bool:
        """Whether rule ``index``'s replacement is stored whole."""
        return self._name(index, "json").is_file() and self._name(index, "samples").is_file()

    def written(self, index: int) -> bool:
        """Whether rule ``index``'s replacement was written to the server whole."""
        return self._name(index, "written").is_file()

    def store(self, index: int, chunks: Iterable[Samples], owned: frozenset[str]) -> None:
        """Store rule ``index``'s replacement, chunk by chunk (series whose label names are
        not all in ``owned`` are left out: they are other servers' recordings, never
        rewritten), then its index: the rule counts as computed only once both exist."""
        digest = hashlib.sha256()
        series: set[Labels] = set()
        count = 0
        with _atomic(self._name(index, "samples")) as out:
            for chunk in chunks:
                for labels, samples in sorted(chunk.items()):
                    if not {name for name, _ in labels} <= owned:
                        continue
                    line = _line(labels, samples)
                    digest.update(line)
                    out.write(line)
                    series.add(labels)
                    count += len(samples)
        index_body = {"sha256": digest.hexdigest(), "samples": count,
                      "series": [list(map(list, labels)) for labels in sorted(series)]}  # fmt: skip
        _write_atomic(self._name(index, "json"), json.dumps(index_body).encode())

    def series(self, index: int) -> list[Labels]:
        """The label sets rule ``index``'s replacement writes (checked)."""
        return self._index(index)[0]

    def samples(self, index: int) -> Iterator[tuple[Labels, list[tuple[int, float]]]]:
        """Rule ``index``'s stored replacement, series chunk by series chunk, after its hash
        was checked against the index (so nothing half-read is ever written)."""
        path = self._name(index, "samples")
        expected = self._index(index)[1]
        digest = hashlib.sha256()
        with self._open(path) as handle:
            for line in handle:
                digest.update(line)
        if digest.hexdigest() != expected:
            raise self._broken(path, "its content does not match the hash its index records")
        with self._open(path) as handle:
            for number, line in enumerate(handle, 1):
                yield _parse_line(line, path, number, self._broken)

    def mark_written(self, index: int) -> None:
        """Record that rule ``index``'s replacement is on the server."""
        _write_atomic(self._name(index, "written"), b"")

    def remove(self) -> None:
        """Remove the journal of a finished repair: ``plan.json`` first (so a removal cut
        short leaves no journal that looks unfinished), then the other files it is made of."""
        with contextlib.suppress(FileNotFoundError):
            (self.folder / "plan.json").unlink()
        _remove_files(self.folder)
        with contextlib.suppress(OSError):
            self.folder.rmdir()

    def _index(self, index: int) -> tuple[list[Labels], str]:
        path = self._name(index, "json")
        try:
            data = json.loads(path.read_bytes())
        except (OSError, ValueError, RecursionError) as exc:
            raise self._broken(path, f"unreadable ({exc})") from None
        series = data.get("series") if isinstance(data, dict) else None
        sha = data.get("sha256") if isinstance(data, dict) else None
        if not isinstance(sha, str) or not isinstance(series, list):
            raise self._broken(path, "not a journal index")
        return [_labels(item, path, self._broken) for item in series], sha

    def _open(self, path: Path) -> IO[bytes]:
        try:
            return path.open("rb")
        except OSError as exc:
            raise self._broken(path, exc.strerror or str(exc)) from None

    def _broken(self, path: Path, why: str) -> UsageError:
        return UsageError(
            f"{path}: the journal of an interrupted repair is damaged: {why}; remove "
            f"{self.folder} to start over (the recordings of {self.repair.group.name} from "
            f"{_time(self.repair.start_ms)} to {_time(self.repair.end_ms)} may be partly "
            "deleted: a new repair over that range records them again)"
        )


_OWN_FILES = re.compile(r"rule-\d{3}\.(samples|json|written)|\.tmp-.*")


def _remove_files(folder: Path) -> None:
    """Remove the rule files of a journal folder (only files a journal is made of)."""
    for path in folder.iterdir():
        if _OWN_FILES.fullmatch(path.name) and path.is_file():
            path.unlink()


def _time(ms: int) -> str:
    from rulegen.backtest.report import rfc3339

    return rfc3339(ms)


def _read_plan(path: Path, group: SLOGroup) -> Repair:
    """The repair ``plan.json`` records, its shape checked and made for ``group``'s rules."""

    def broken(why: str) -> UsageError:
        return UsageError(
            f"{path}: the journal of an interrupted repair of {group.name} is damaged: {why}; "
            f"remove {path.parent} to start over"
        )

    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError) as exc:
        raise broken(f"unreadable ({exc})") from None
    problem = _plan_shape(data, group)
    if problem:
        raise broken(problem)
    if (data.get("service"), data.get("slo")) != (group.service, group.slo):
        raise broken("it belongs to another SLO")
    if data.get("rules") != rules_hash(group):
        raise UsageError(
            f"{path}: an interrupted repair of {group.name} from {_time(data['start_ms'])} to "
            f"{_time(data['end_ms'])} was made for other rules than the specs give now: "
            "finish it with the specs it was made from (the same rulegen and spec), or "
            f"remove {path.parent} and run a new repair over that range"
        )
    holes = tuple(Hole(a, b, group.interval_ms) for a, b in data["holes"])
    gaps = tuple(RawGap(a, b) for a, b in data["gaps"])
    return Repair(group, holes, data["start_ms"], data["end_ms"], gaps)


def _plan_shape(data: object, group: SLOGroup) -> str | None:
    """What is wrong with a parsed ``plan.json``, or ``None``."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return "not a journal of this rulegen"
    for key in ("start_ms", "end_ms"):
        if not _int(data.get(key)):
            return f"{key} is not a whole number"
    for key in ("holes", "gaps"):
        pairs = data.get(key)
        if not isinstance(pairs, list) or not all(
            isinstance(p, list) and len(p) == 2 and all(_int(x) for x in p) and p[0] <= p[1]
            for p in pairs
        ):
            return f"{key} is not a list of [start, end] pairs"
    start, end = data["start_ms"], data["end_ms"]
    if start > end or (end - start) % group.interval_ms:
        return "start_ms to end_ms is not a range of the group's evaluations"
    return None


def _int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _line(labels: Labels, samples: list[tuple[int, float]]) -> bytes:
    values = [[t, STALE if _stale(v) else repr(v)] for t, v in samples]
    return json.dumps({"labels": list(map(list, labels)), "samples": values}).encode() + b"\n"


def _stale(value: float) -> bool:
    return math.isnan(value) and struct.pack("<d", value) == struct.pack("<d", STALE_NAN)


def _labels(item: object, path: Path, broken: _Broken) -> Labels:
    if not (
        isinstance(item, list)
        and all(
            isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in item
        )
    ):
        raise broken(path, "a label set is not a list of [name, value] pairs")
    return tuple((name, value) for name, value in item)


def _parse_line(
    line: bytes, path: Path, number: int, broken: _Broken
) -> tuple[Labels, list[tuple[int, float]]]:
    where = f"line {number}"
    if len(line) > _MAX_LINE:
        raise broken(path, f"{where} is too long")
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        raise broken(path, f"{where} is not JSON") from None
    if not isinstance(data, dict):
        raise broken(path, f"{where} is not a series")
    labels = _labels(data.get("labels"), path, broken)
    raw = data.get("samples")
    if not isinstance(raw, list):
        raise broken(path, f"{where} has no samples")
    samples = []
    for item in raw:
        if not (isinstance(item, list) and len(item) == 2 and _int(item[0])):
            raise broken(path, f"{where}: a sample is not [ms, value]")
        samples.append((item[0], _value(item[1], path, where, broken)))
    return labels, samples


def _value(text: object, path: Path, where: str, broken: _Broken) -> float:
    if text == STALE:
        return float(STALE_NAN)
    if not isinstance(text, str):
        raise broken(path, f"{where}: a value is not a number")
    try:
        return float(text)
    except ValueError:
        raise broken(path, f"{where}: a value is not a number") from None


@contextlib.contextmanager
def _atomic(path: Path) -> Iterator[IO[bytes]]:
    """A file written under a temporary name, flushed to disk, then renamed to ``path``:
    a reader sees the whole file or none."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(handle, "wb") as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        Path(temporary).replace(path)
        _sync_folder(path.parent)
    except BaseException:
        with contextlib.suppress(OSError):
            Path(temporary).unlink()
        raise


def _write_atomic(path: Path, data: bytes) -> None:
    with _atomic(path) as out:
        out.write(data)


def _sync_folder(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
