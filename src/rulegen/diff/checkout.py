"""The specs as they were at a git revision, copied from git's objects into a temporary folder.

Why from the objects (``git ls-tree`` and ``git cat-file``) and not a checkout: the
repository, its index and its working tree are never touched (a build may be running in it),
and ``git archive`` would apply ``export-ignore``/``export-subst`` attributes and write other
bytes than the commit holds. Only what a build reads is copied: the spec files directly in
each PATH (or the PATH itself), the signal files of each signals folder, and the base file a
routing file names.

Everything read from git is hostile. Every name must be one plain path component, a file is
only ever written inside the temporary folder and never through a link: a symbolic link in
the commit is replaced by a copy of the file it names when that file is in the repository,
else skipped with a warning. A blob larger than the spec loader's cap is written as an empty
file of one byte more than the cap (sparse, never read from git), so the loader refuses it
with the message it gives for the same file in the working tree.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rulegen.errors import ToolNotFoundError, UsageError
from rulegen.routing.load import is_routing_file
from rulegen.source.loader import MAX_BYTES, LoadError, display, load_file

GIT_TIMEOUT = 120.0
SPEC_SUFFIXES = (".yaml", ".yml")
_REGULAR = ("100644", "100755")
_LINK = "120000"

Runner = Callable[[Sequence[str], bytes | None], subprocess.CompletedProcess[bytes]]


def run_git(argv: Sequence[str], stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """``git ARGV`` with ``stdin``, output captured as bytes, within ``GIT_TIMEOUT``."""
    git = shutil.which("git")
    if git is None:
        raise ToolNotFoundError(
            "--base needs git, which is not installed (apt-get install git), "
            "or compare with a folder: --base-dir DIR"
        )
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}
    try:
        return subprocess.run(
            [git, *argv], input=stdin, capture_output=True, check=False,
            timeout=GIT_TIMEOUT, env=env,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise UsageError(f"git {argv[0]} did not finish within {GIT_TIMEOUT:g}s") from None


def _first_line(raw: bytes) -> str:
    lines = raw.decode("utf-8", "replace").strip().splitlines()
    return lines[0] if lines else "no message"


@dataclass(frozen=True)
class Entry:
    """One entry of a git tree: ``name`` is its path from the repository's top, POSIX."""

    mode: str
    kind: str
    sha: str
    size: int
    name: str


class Repository:
    """The git repository around ``cwd``, at the commit ``rev`` names (read only)."""

    def __init__(self, cwd: Path, rev: str, runner: Runner = run_git) -> None:
        self.rev = rev
        self.runner = runner
        if not rev or rev.startswith("-") or any(c in rev for c in "\x00\n\r"):
            raise UsageError(f"--base {rev!r}: not a git revision")
        found = runner(["-C", str(cwd), "rev-parse", "--show-toplevel"], None)
        if found.returncode != 0:
            raise UsageError(
                f"--base {rev}: no git repository at {display(cwd)} (git: "
                f"{_first_line(found.stderr)}); compare with a folder instead: --base-dir DIR"
            )
        self.top = Path(os.fsdecode(found.stdout.rstrip(b"\n")))
        commit = self._git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
        if commit.returncode != 0:
            raise UsageError(f"--base {rev}: unknown revision (no commit of this repository)")
        self.commit = commit.stdout.decode("ascii", "replace").strip()

    def _git(self, *argv: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
        return self.runner(["--literal-pathspecs", "-C", str(self.top), *argv], stdin)

    def relative(self, path: Path) -> str | None:
        """``path`` (from the working directory) as a path from the repository's top, or
        ``None`` when it lies outside."""
        real = os.path.realpath(path)
        top = os.path.realpath(self.top)
        relative = os.path.relpath(real, top)
        if relative == ".":
            return ""
        if relative.startswith(".."):
            return None
        return Path(relative).as_posix()

    def entry(self, name: str) -> Entry | None:
        """The entry at ``name`` in the commit (``None``: there is none); ``""`` is the top."""
        if name == "":
            return Entry("040000", "tree", f"{self.commit}^{{tree}}", 0, "")
        found = self._list("--full-tree", self.commit, "--", name)
        return next((e for e in found if e.name == name), None)

    def children(self, tree: Entry) -> list[Entry]:
        """The entries directly inside a tree entry."""
        prefix = f"{tree.name}/" if tree.name else ""
        out = []
        for child in self._list(tree.sha):
            if _plain_component(child.name):
                out.append(Entry(child.mode, child.kind, child.sha, child.size,
                                 prefix + child.name))  # fmt: skip
        return out

    def _list(self, *argv: str) -> list[Entry]:
        listed = self._git("ls-tree", "-l", "-z", *argv)
        if listed.returncode != 0:
            raise UsageError(f"--base {self.rev}: git ls-tree failed: {_first_line(listed.stderr)}")
        out = []
        for record in listed.stdout.split(b"\0"):
            head, tab, name = record.partition(b"\t")
            parts = head.split()
            if not tab or len(parts) != 4:
                continue
            mode, kind, sha, size = (p.decode("ascii", "replace") for p in parts)
            out.append(Entry(mode, kind, sha, int(size) if size.isdigit() else 0,
                             os.fsdecode(name)))  # fmt: skip
        return out

    def blobs(self, shas: Sequence[str]) -> dict[str, bytes]:
        """The content of each blob (``git cat-file --batch``)."""
        if not shas:
            return {}
        unique = list(dict.fromkeys(shas))
        read = self._git("cat-file", "--batch", stdin="".join(f"{s}\n" for s in unique).encode())
        if read.returncode != 0:
            raise UsageError(f"--base {self.rev}: git cat-file failed: {_first_line(read.stderr)}")
        out: dict[str, bytes] = {}
        data, position = read.stdout, 0
        for sha in unique:
            end = data.index(b"\n", position)
            header = data[position:end].split()
            position = end + 1
            if len(header) != 3 or header[1] != b"blob":
                continue
            size = int(header[2])
            out[sha] = data[position : position + size]
            position += size + 1
        return out


def _plain_component(name: str) -> bool:
    return bool(name) and name not in (".", "..") and "/" not in name and "\0" not in name


@dataclass
class Checkout:
    """Files of one commit, copied under ``root`` at their paths from the repository's top."""

    repository: Repository
    root: Path
    label: str
    written: set[str] = field(default_factory=set)
    warnings: list[str] = field(default_factory=list)

    def place(self, name: str) -> Path:
        """Where the file ``name`` (from the repository's top) is in the copy."""
        return self.root / name if name else self.root

    def shown(self, text: str) -> str:
        """``text`` with the copy's paths written as the repository's, relative to the
        working directory (which is inside the repository): ``specs/a.yaml``."""
        top = os.path.relpath(os.path.realpath(self.repository.top), os.path.realpath(Path.cwd()))
        prefix = "" if top == "." else f"{Path(top).as_posix()}/"
        for root in dict.fromkeys((str(self.root), os.path.realpath(self.root))):
            text = text.replace(f"{Path(root).as_posix()}/", prefix)
        return text

    def copy_specs(self, name: str) -> bool:
        """The spec files ``name`` holds (or is); whether there is at least one."""
        entry = self.repository.entry(name)
        if entry is None:
            return False
        if entry.kind == "tree":
            found = [e for e in self.repository.children(entry) if _spec_file(e)]
            self._copy(found)
            return any(e.name in self.written for e in found)
        if entry.kind == "blob":
            self._copy([entry])
            return entry.name in self.written
        return False

    def copy_folder(self, name: str) -> bool:
        """A signals folder's ``*.yaml``/``*.yml`` files; whether the folder exists."""
        entry = self.repository.entry(name)
        if entry is None or entry.kind != "tree":
            return False
        self.place(name).mkdir(parents=True, exist_ok=True)
        self._copy([e for e in self.repository.children(entry) if _spec_file(e)])
        return True

    def copy_routing_bases(self, specs: Sequence[str]) -> None:
        """The base file each routing file among ``specs`` names (relative to it), when it is
        in the repository: a build reads it with the routing file."""
        for name in specs:
            if b"routing" not in self.place(name).read_bytes()[: MAX_BYTES + 1]:
                continue  # not a routing file: no need to parse it twice
            try:
                data = load_file(self.place(name), name).data
            except LoadError:
                continue  # the build reports it, with its position
            routing = data.get("routing") if isinstance(data, dict) else None
            if not (is_routing_file(data) and isinstance(routing, dict)):
                continue
            base = routing.get("base")
            if isinstance(base, str) and base:
                target = _inside(posixpath.join(posixpath.dirname(name), base))
                entry = self.repository.entry(target) if target else None
                if entry is not None and entry.kind == "blob":
                    self._copy([entry])

    def copy_defaults(self, specs: Sequence[str]) -> None:
        """The defaults files the specs ``extends:`` (relative to each), and theirs in turn,
        when they are in the repository: a build reads them with the specs
        (docs/fleets.md). A file that cannot be read is left to the build to report."""
        todo, seen = list(specs), set(specs)
        while todo:
            name = todo.pop()
            if b"extends" not in self.place(name).read_bytes()[: MAX_BYTES + 1]:
                continue
            try:
                data = load_file(self.place(name), name).data
            except LoadError:
                continue
            base = data.get("extends") if isinstance(data, dict) else None
            if not (isinstance(base, str) and base):
                continue
            target = _inside(posixpath.join(posixpath.dirname(name), base))
            entry = self.repository.entry(target) if target else None
            if target is None or entry is None or entry.kind != "blob" or target in seen:
                continue
            seen.add(target)
            self._copy([entry])
            if target in self.written:
                todo.append(target)

    def _copy(self, entries: Sequence[Entry]) -> None:
        """Write regular files, and links replaced by what they name; skip the rest."""
        todo: list[tuple[Entry, Entry]] = []  # (where it goes, what it holds)
        links = [e for e in entries if e.mode == _LINK and e.name not in self.written]
        targets = self.repository.blobs([e.sha for e in links if e.size <= 4096])
        for entry in entries:
            if entry.name in self.written:
                continue
            if entry.mode in _REGULAR and entry.kind == "blob":
                todo.append((entry, entry))
            elif entry.mode == _LINK:
                source = self._link_target(entry, targets.get(entry.sha))
                if source is not None:
                    todo.append((entry, source))
        small = [s.sha for _, s in todo if s.size <= MAX_BYTES]
        contents = self.repository.blobs(small)
        for entry, source in todo:
            self._write(entry.name, contents.get(source.sha))

    def _link_target(self, link: Entry, raw: bytes | None) -> Entry | None:
        """The regular file a link in the commit names, if it is in the repository."""
        text = os.fsdecode(raw) if raw is not None else ""
        target = _inside(posixpath.join(posixpath.dirname(link.name), text)) if text else None
        entry = self.repository.entry(target) if target and not text.startswith("/") else None
        if entry is None or entry.mode not in _REGULAR:
            where = self.shown(self.place(link.name).as_posix())
            self.warnings.append(
                f"{self.label}: {where}: skipped: a symbolic link to {text!r}, which is not a "
                "file of the repository"
            )
            return None
        return entry

    def _write(self, name: str, content: bytes | None) -> None:
        path = self.place(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        if not Path(os.path.realpath(path.parent)).is_relative_to(os.path.realpath(self.root)):
            raise UsageError(f"--base {self.repository.rev}: {name}: not a path inside the copy")
        with path.open("xb") as handle:
            if content is None:  # larger than the loader reads: too large, as the blob is
                handle.truncate(MAX_BYTES + 1)
            else:
                handle.write(content)
        self.written.add(name)


def _spec_file(entry: Entry) -> bool:
    return entry.kind == "blob" and entry.name.endswith(SPEC_SUFFIXES)


def _inside(name: str) -> str | None:
    """``name`` normalised, or ``None`` when it leaves the repository (``..``, absolute)."""
    normal = posixpath.normpath(name)
    if normal.startswith(("/", "../")) or normal in ("..", "."):
        return None
    return normal
