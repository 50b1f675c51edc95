"""The error tree. Library code raises these; only ``cli`` prints them and picks exit codes.

Why: one boundary that maps errors to exit codes keeps every stage testable without
capturing stdout, and keeps tracebacks for real bugs only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


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
        where = f"{self.file}:{self.line}:{self.col}"
        text = " ".join(self.message.split())
        return f"{where}: {self.path}: {text}" if self.path else f"{where}: {text}"


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
    """``--check`` found that the committed output differs from what would be written (exit 1)."""

    def __init__(self, diff: str) -> None:
        self.diff = diff
        super().__init__("output is stale")

    def __reduce__(self) -> tuple[type[StaleOutput], tuple[str]]:
        return (StaleOutput, (self.diff,))
