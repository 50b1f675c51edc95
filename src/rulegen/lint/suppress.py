"""``# rulegen: disable=ID[,ID…]`` comments in a spec, and the findings they silence.

Why by scanning lines: the loader keeps values and their positions, not comments; a comment
is found on its line of the source (cheap: only lines that mention ``rulegen:`` are looked
at), and a finding's position and field path say which lines concern it.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

from rulegen.core import diagnostics as codes
from rulegen.errors import Diagnostic, FieldPath
from rulegen.source.loader import Positions

# a YAML comment (``#`` at the start of a line or after a blank) holding the directive
_DIRECTIVE = re.compile(r"(?:^|(?<=\s))#\s*rulegen:\s*disable\s*=\s*(?P<ids>[^#]*)")
_ID = re.compile(r"[^\s,]+")


class Suppressions:
    """The ids disabled on each line of one spec file."""

    def __init__(self, file: str, by_line: dict[int, set[str]]) -> None:
        self.file = file
        self.by_line = by_line

    def silences(self, finding: Diagnostic, positions: Positions) -> bool:
        """Whether a comment on the finding's line, or on the line of a list entry (alert,
        SLO, diagnosis …) its field lies in, disables the finding's check."""
        if not self.by_line:
            return False
        # only lines of this file: a value inherited from a defaults file has its lines there
        lines = {finding.line} if finding.file == self.file else set()
        lines.update(
            positions.at(entry)[0]
            for entry in finding.path.entries()
            if positions.written_in(entry) == self.file
        )
        return any(finding.code in self.by_line.get(line, ()) for line in lines)


def scan(file: str, text: str, known: Collection[str]) -> tuple[Suppressions, list[Diagnostic]]:
    """The disable comments of a spec's ``text``; a comment naming an id not in ``known`` is
    a spec error at that id."""
    by_line: dict[int, set[str]] = {}
    problems: list[Diagnostic] = []
    if "rulegen:" not in text:
        return Suppressions(file, by_line), problems
    for number, line in enumerate(text.splitlines(), start=1):
        if "rulegen:" not in line:
            continue
        directive = _DIRECTIVE.search(line)
        if directive is None:
            continue
        for match in _ID.finditer(directive["ids"]):
            check = match.group()
            if check in known:
                by_line.setdefault(number, set()).add(check)
                continue
            col = directive.start("ids") + match.start() + 1
            problems.append(
                Diagnostic(
                    file,
                    number,
                    col,
                    FieldPath(),
                    f"unknown lint check {check!r} in a `# rulegen: disable=` comment "
                    "(rulegen lint --list shows the checks)",
                    codes.SPEC_UNKNOWN_CHECK,
                )  # fmt: skip
            )
    return Suppressions(file, by_line), problems


def unknown(ids: Sequence[str], known: Collection[str]) -> list[str]:
    """The ids of ``ids`` that name no check."""
    return [i for i in ids if i not in known]
