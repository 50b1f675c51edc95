"""What a build does to the output folder: files to write, to keep, to remove; or a refusal.

Why: the output folder is shared. A file is rulegen's when the manifest lists it and it is
still what rulegen wrote (its hash), or still carries the generated-file header (edited
despite "DO NOT EDIT"); in a folder an older rulegen wrote (no manifest) the header alone
says so, inside the folders rulegen has always written. Nothing else is ever replaced or
deleted. A build replaces the outputs of the inputs it read and keeps the rest, so
``rulegen build specs/a.yaml`` leaves other services and the routing output alone; outputs
whose inputs no longer exist are removed, so a deleted service leaves no stale rules.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from rulegen.errors import OutputConflict
from rulegen.outdir.manifest import (
    MANIFEST,
    Entry,
    ManifestInvalid,
    digest,
    header_sources,
    manifest_text,
    read_bytes,
    read_manifest,
)
from rulegen.output import FileSet

# The folders every rulegen release writes: where a folder without a manifest (written by a
# release before the manifest) may hold generated files.
GENERATED_FOLDERS = (
    "prometheus", "tests", "alertmanager", "grafana", "kubernetes", "thanos", "mimir",
)  # fmt: skip
STAGING_MARK = ".rulegen-staging-"


@dataclass
class Plan:
    """The output folder after a build, as changes to the folder as it is now."""

    folder: Path
    shown: str
    # the files to write (compressed until written: a fleet's run to hundreds of megabytes)
    write: FileSet = field(default_factory=FileSet)
    keep: dict[str, Entry] = field(default_factory=dict)
    remove: list[str] = field(default_factory=list)
    # files a worker wrote into the staging folder that the plan does not write (it keeps
    # what the folder has there)
    unwanted: list[str] = field(default_factory=list)
    entries: dict[str, Entry] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # the files of ``write`` whose content is already on disk: what a summary counts apart
    unchanged: set[str] = field(default_factory=set)

    def manifest(self) -> str:
        """The manifest the folder will hold."""
        return manifest_text(self.entries)


@dataclass
class _Disk:
    """The output folder as found, and what its manifest says."""

    folder: Path
    recorded: dict[str, Entry] | None

    def lstat(self, name: str) -> os.stat_result | None:
        try:
            return (self.folder / name).lstat()
        except (FileNotFoundError, NotADirectoryError):
            return None

    def content(self, name: str) -> bytes | None:
        """A regular file's bytes; ``None`` for anything else (missing, folder, link)."""
        info = self.lstat(name)
        if info is None or not stat.S_ISREG(info.st_mode):
            return None
        return read_bytes(self.folder / name)

    def generated_here(self, name: str, data: bytes) -> bool:
        """Whether the file at ``name`` (holding ``data``) is one rulegen wrote."""
        if self.recorded is None:
            top = name.split("/", 1)[0]
            return top in GENERATED_FOLDERS and header_sources(data) is not None
        entry = self.recorded.get(name)
        if entry is None:
            return False
        return digest(data) == entry.sha256 or header_sources(data) is not None


def plan_output(
    folder: Path,
    shown: str,
    files: FileSet,
    sources: Mapping[str, tuple[str, ...]],
    inputs: Collection[str],
    root: Path,
) -> Plan:
    """The plan for writing ``files`` (each from ``sources``) to ``folder``.

    ``inputs``: every input the build read, as ``sources`` names them (relative to
    ``root``, the folder's parent). Raises ``OutputConflict`` naming every file rulegen would
    have to replace or write into without owning it.
    """
    disk = _Disk(folder, None)
    plan = Plan(folder, shown)
    try:
        disk.recorded = read_manifest(folder)
    except ManifestInvalid as exc:
        plan.notes.append(f"ignored {shown}/{MANIFEST}: {exc}; trusting generated-file headers")
    recorded = disk.recorded if disk.recorded is not None else _legacy(disk)
    inputs = set(inputs)
    conflicts: list[str] = []
    for name in files:
        new_sources = tuple(sources.get(name, ()))
        entry = recorded.get(name)
        others = _other_sources(entry, inputs, root)
        if entry is not None and others:
            if set(entry.sources) & set(new_sources):
                _keep(plan, disk, name, entry, inputs, root)
            else:
                conflicts.append(
                    f"--out {shown}: {name} is generated from {others[0]}, which this build "
                    f"did not read, and now from {', '.join(new_sources) or 'this build'}; "
                    "build both together (do two specs define the same service?)"
                )
            continue
        problem = _writable(disk, name, files)
        if problem:
            conflicts.append(f"--out {shown}: {problem}")
            continue
        _write(plan, disk, name, files, new_sources, entry)
    if conflicts:
        raise OutputConflict(conflicts)
    plan.unwanted = [n for n in files if n not in plan.write and files.spooled(n) is not None]
    for name, entry in sorted(recorded.items()):
        if name in files:
            continue
        if set(entry.sources) <= inputs or not any(_exists(root, s) for s in entry.sources):
            _remove(plan, disk, name)
        else:
            _keep(plan, disk, name, entry, inputs, root)
    return plan


def _write(
    plan: Plan,
    disk: _Disk,
    name: str,
    files: FileSet,
    sources: tuple[str, ...],
    entry: Entry | None,
) -> None:
    """``name`` of ``files`` to be written; noted unchanged when the folder holds it already
    (the manifest's digest says so first, the file itself confirms: it may have been edited)."""
    plan.write.take(files, name)
    plan.entries[name] = Entry(files.digest(name), sources)
    same = entry is not None and entry.sha256 == plan.entries[name].sha256
    if same and disk.content(name) == plan.write.data(name):
        plan.unchanged.add(name)


def _other_sources(entry: Entry | None, inputs: set[str], root: Path) -> list[str]:
    """The inputs an existing output also comes from that this build did not read (and that
    still exist): such an output stays as it is (a Mimir namespace, Grafana's provisioning
    file shared with other specs)."""
    if entry is None:
        return []
    return [s for s in entry.sources if s not in inputs and _exists(root, s)]


def _keep(plan: Plan, disk: _Disk, name: str, entry: Entry, inputs: set[str], root: Path) -> None:
    data = disk.content(name)
    if data is None:
        return  # gone from disk: nothing to keep, and no longer rulegen's
    if not disk.generated_here(name, data):
        plan.notes.append(f"{name} is no longer what rulegen wrote; left as it is, not tracked")
        return
    plan.keep[name] = Entry(digest(data), entry.sources)
    plan.entries[name] = plan.keep[name]
    shared = [s for s in entry.sources if s in inputs]
    if shared:
        others = ", ".join(s for s in entry.sources if s not in inputs and _exists(root, s))
        plan.notes.append(f"kept {name} as it was: it also comes from {others}, not in this build")


def _remove(plan: Plan, disk: _Disk, name: str) -> None:
    data = disk.content(name)
    if data is None:
        return
    if disk.generated_here(name, data):
        plan.remove.append(name)
    else:
        plan.notes.append(f"{name} is no longer what rulegen wrote; left as it is, not tracked")


def _writable(disk: _Disk, name: str, files: FileSet) -> str | None:
    """Why rulegen may not write ``name`` of ``files`` (``None`` when it may)."""
    parts = name.split("/")
    for depth in range(1, len(parts)):
        parent = "/".join(parts[:depth])
        info = disk.lstat(parent)
        if info is not None and not stat.S_ISDIR(info.st_mode):
            kind = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "not a folder"
            return (
                f"{parent} is {kind} rulegen did not make; refusing to write {name} "
                "(move it or choose another --out)"
            )
    info = disk.lstat(name)
    if info is None:
        return None
    if not stat.S_ISREG(info.st_mode):
        return (
            f"{name} was not written by rulegen; refusing to overwrite "
            "(move it or choose another --out)"
        )
    data = read_bytes(disk.folder / name)
    if data == files.data(name) or disk.generated_here(name, data):
        return None
    if disk.recorded is not None and name in disk.recorded:
        return (
            f"{name} was changed since rulegen wrote it (and has no generated-file header); "
            "refusing to overwrite (move it or choose another --out)"
        )
    return (
        f"{name} was not written by rulegen; refusing to overwrite "
        "(move it or choose another --out)"
    )


def _legacy(disk: _Disk) -> dict[str, Entry]:
    """What a folder without a manifest holds of rulegen's: files that carry the header, in
    the folders rulegen writes, with the specs their header names."""
    found: dict[str, Entry] = {}
    for top in GENERATED_FOLDERS:
        base = disk.folder / top
        if base.is_symlink() or not base.is_dir():
            continue
        for directory, subdirs, names in os.walk(base):
            subdirs[:] = sorted(d for d in subdirs if not (Path(directory) / d).is_symlink())
            for file_name in sorted(names):
                path = Path(directory) / file_name
                name = path.relative_to(disk.folder).as_posix()
                data = disk.content(name)
                sources = header_sources(data) if data is not None else None
                if data is not None and sources is not None:
                    found[name] = Entry(digest(data), sources)
    return found


def _exists(root: Path, source: str) -> bool:
    try:
        return (root / source).exists()
    except OSError:
        return False
