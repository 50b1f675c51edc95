"""The user's own promtool tests: each ``rule_files`` entry must load a file of this build.

Why: promtool globs ``rule_files`` and a pattern (or a plain name) matching nothing loads
nothing, silently; the test then fails with a bare ``got: []`` (or, expecting nothing to fire,
passes for nothing). A service renamed or removed leaves exactly that behind in a test of its
own, so rulegen names the entry, where it is, and what the build writes instead.
"""

from __future__ import annotations

import fnmatch
import posixpath
from collections.abc import Mapping

from rulegen.core import diagnostics as codes
from rulegen.errors import Diagnostic, SpecError
from rulegen.source.loader import LoadError, load_text

TESTS = "tests"  # the folder of the output the tests run from (``rule_files`` is relative to it)


def refuse_unmatched_rule_files(files: Mapping[str, str], user_tests: Mapping[str, str]) -> None:
    """``SpecError`` naming every ``rule_files`` entry of a user test (``user_tests``: its
    output name → the file it was copied from) that matches none of ``files``, the build's
    output (what promtool will see: the output folder holds only these while it runs)."""
    problems: list[Diagnostic] = []
    rule_files = sorted(name for name in files if name.startswith("prometheus/"))
    for target, source in sorted(user_tests.items()):
        problems += _unmatched(files[target], source, rule_files)
    if problems:
        raise SpecError(problems)


def _unmatched(text: str, source: str, rule_files: list[str]) -> list[Diagnostic]:
    try:
        doc = load_text(text, source)
    except LoadError:
        return []  # checked when it was read
    entries = doc.data.get("rule_files") if isinstance(doc.data, dict) else None
    if not isinstance(entries, list):
        return []  # promtool's own message says what is wrong with it
    out = []
    for index, entry in enumerate(entries):
        if isinstance(entry, str) and not any(_matches(entry, name) for name in rule_files):
            message = (
                f"{entry} matches no rule file of this build (it writes "
                f"{_listed(rule_files)}); was its service renamed or removed? promtool would "
                "load nothing and report `got: []`"
            )
            out.append(doc.positions.diag(("rule_files", index), message, code=codes.SPEC_VALUE))
    return out


def _matches(entry: str, name: str) -> bool:
    """Whether promtool, in the output's ``tests/``, loads ``name`` for ``entry``: the path
    relative to ``tests/``, each part a glob (Go's ``filepath.Match``: ``*`` stays in a part)."""
    if posixpath.isabs(entry):
        return False
    pattern = posixpath.normpath(posixpath.join(TESTS, entry)).split("/")
    parts = name.split("/")
    return len(pattern) == len(parts) and all(
        fnmatch.fnmatchcase(part, glob) for part, glob in zip(parts, pattern, strict=True)
    )


def _listed(names: list[str]) -> str:
    shown = [f"../{name}" for name in names[:4]]
    more = f" and {len(names) - 4} more" if len(names) > 4 else ""
    return (", ".join(shown) + more) if shown else "no rule file"
