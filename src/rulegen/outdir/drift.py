"""``--check``: how the output folder differs from what a build would leave in it.

Why: CI fails a pull request whose committed ``rules/`` does not match its specs. The
comparison covers exactly the files a build would change (written, removed, and the
manifest), so files a build keeps or never touches (the user's) are never reported.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from rulegen.outdir.manifest import MANIFEST, read_bytes
from rulegen.outdir.plan import Plan


@dataclass
class Drift:
    """Files that differ (``stale``), that a build would add (``missing``) or delete
    (``extra``), and a unified diff of all of them."""

    stale: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    diff: str = ""

    def __bool__(self) -> bool:
        return bool(self.stale or self.missing or self.extra)

    def items(self) -> list[tuple[str, str]]:
        """``(kind, file)`` pairs: ``stale:``, ``missing:`` or ``extra:`` and the file."""
        return [
            *(("stale:", n) for n in self.stale),
            *(("missing:", n) for n in self.missing),
            *(("extra:", n) for n in self.extra),
        ]


def drift(plan: Plan) -> Drift:
    """Compare ``plan`` with its folder on disk (files in path order, the manifest last)."""
    found = Drift()
    chunks: list[str] = []
    manifest = plan.manifest()
    names = [*sorted(plan.write), *sorted(plan.remove), MANIFEST]
    for name in names:
        before = _text(plan, name)
        # one file at a time (a fleet's files are held compressed)
        after = manifest if name == MANIFEST else plan.write.get(name)
        if before == after:
            continue
        if before is None:
            found.missing.append(name)
        elif after is None:
            found.extra.append(name)
        else:
            found.stale.append(name)
        chunks.extend(
            difflib.unified_diff(
                (before or "").splitlines(keepends=True),
                (after or "").splitlines(keepends=True),
                fromfile=f"a/{plan.folder.name}/{name}" if before is not None else "/dev/null",
                tofile=f"b/{plan.folder.name}/{name}" if after is not None else "/dev/null",
            )
        )
    found.diff = "".join(chunks)
    return found


def _text(plan: Plan, name: str) -> str | None:
    path = plan.folder / name
    if path.is_symlink() or not path.is_file():
        return None
    return read_bytes(path).decode("utf-8", "replace")
