"""The error tree. Library code raises these; only ``cli`` prints them and picks exit codes.

Why: one boundary that maps errors to exit codes keeps every stage testable without
capturing stdout, and keeps tracebacks for real bugs only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

# C0 and C1 controls and DEL (a terminal acts on them: line breaks, escape sequences), the
# Unicode line and paragraph separators, and the bidirectional embeddings, overrides and
# isolates (they reorder what is shown around them).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with control characters written as escapes (``\\n``, ``\\x1b``, ``\\u202e``).

    Why: a file name or a message that reaches a terminal or a CI log must stay one line
    and must not move the cursor, change colours or reorder text; everything else, non-ASCII
    letters included, is printed as it is.
    """
    return _CONTROL.sub(_escape, text)


@dataclass(frozen=True)
class Diagnostic:
    """One problem in a user's input, pointing at the exact place it comes from."""

    file: str
    line: int
    col: int
    path: str
    message: str

    def render(self) -> str:
        """GNU style ``FILE:LINE:COL: field.path: message``, one line, so editors can link it."""
        where = f"{printable(self.file)}:{self.line}:{self.col}"
        text = printable(" ".join(self.message.split()))
        path = printable(self.path)
        return f"{where}: {path}: {text}" if path else f"{where}: {text}"


class RulegenError(Exception):
    """Base of every error rulegen raises on purpose."""


class UsageError(RulegenError):
    """The command line or the set of inputs does not make sense (exit 2)."""


class SpecError(RulegenError):
    """One or more spec problems, all collected before giving up (exit 2)."""

    def __init__(self, diagnostics: Sequence[Diagnostic]) -> None:
        self.diagnostics = sorted(diagnostics, key=lambda d: (d.file, d.line, d.col, d.path))
        super().__init__("\n".join(d.render() for d in self.diagnostics))

    def __reduce__(self) -> tuple[type[SpecError], tuple[list[Diagnostic]]]:
        # rebuilt from its diagnostics, not its text, when it crosses a process border
        return (SpecError, (self.diagnostics,))


class ToolNotFoundError(RulegenError):
    """A required external binary (promtool) is not installed (exit 3)."""


class ValidationFailed(RulegenError):
    """promtool rejected the rules or a unit test failed (exit 1)."""

    def __init__(self, messages: Sequence[str]) -> None:
        self.messages = list(messages)
        super().__init__("\n".join(self.messages))

    def __reduce__(self) -> tuple[type[ValidationFailed], tuple[list[str]]]:
        return (ValidationFailed, (self.messages,))


class StaleOutput(RulegenError):
    """``--check`` found that the committed output differs from what would be written (exit 1).

    ``diff`` is a unified diff; ``files`` says which files are ``stale: NAME``,
    ``missing: NAME`` or ``extra: NAME``.
    """

    def __init__(self, diff: str, files: Sequence[str] = ()) -> None:
        self.diff = diff
        self.files = list(files)
        super().__init__("output is stale")

    def __reduce__(self) -> tuple[type[StaleOutput], tuple[str, list[str]]]:
        return (StaleOutput, (self.diff, self.files))


class OutputConflict(UsageError):
    """Writing the output would replace or write into a file rulegen did not write (exit 2).

    Why a class of its own: each message is a whole line that names the file and what to do,
    and the CLI prints it as it is.
    """

    def __init__(self, messages: Sequence[str]) -> None:
        self.messages = list(messages)
        super().__init__("\n".join(self.messages))

    def __reduce__(self) -> tuple[type[OutputConflict], tuple[list[str]]]:
        return (OutputConflict, (self.messages,))
