"""The error tree. Library code raises these; only ``cli`` prints them and picks exit codes.

Why: one boundary that maps errors to exit codes keeps every stage testable without
capturing stdout, and keeps tracebacks for real bugs only. Every error is also a list of
``Diagnostic`` records (``as_diagnostics``), which ``--format json`` and ``github`` print.
"""

from __future__ import annotations

from collections.abc import Sequence

from rulegen.core import diagnostics as codes
from rulegen.core.diagnostics import ROOT, Diagnostic, FieldPath, Severity, printable

__all__ = [
    "Diagnostic", "FieldPath", "OutputConflict", "RulegenError", "Severity", "SpecError",
    "StaleOutput", "ToolNotFoundError", "UsageError", "ValidationFailed", "printable",
]  # fmt: skip


def _unplaced(message: str, code: str, hint: str = "") -> Diagnostic:
    """A diagnostic with no place in a file (a bad argument, a missing tool)."""
    return Diagnostic("", 0, 0, ROOT, message, code, "error", hint)


class RulegenError(Exception):
    """Base of every error rulegen raises on purpose."""

    code = codes.ERROR

    def as_diagnostics(self) -> list[Diagnostic]:
        """The error as diagnostics, for ``--format json`` and ``github``."""
        return [_unplaced(line, self.code) for line in str(self).splitlines() or [""]]


class UsageError(RulegenError):
    """The command line or the set of inputs does not make sense (exit 2)."""

    code = codes.USAGE


class SpecError(RulegenError):
    """One or more spec problems, all collected before giving up (exit 2)."""

    def __init__(self, diagnostics: Sequence[Diagnostic]) -> None:
        self.diagnostics = sorted(diagnostics, key=lambda d: (d.file, d.line, d.col, str(d.path)))
        super().__init__("\n".join(d.render() for d in self.diagnostics))

    def __reduce__(self) -> tuple[type[SpecError], tuple[list[Diagnostic]]]:
        # rebuilt from its diagnostics, not its text, when it crosses a process border
        return (SpecError, (self.diagnostics,))

    def as_diagnostics(self) -> list[Diagnostic]:
        return list(self.diagnostics)


class ToolNotFoundError(RulegenError):
    """A required external binary (promtool) is not installed (exit 3)."""

    code = codes.TOOL_MISSING


class ValidationFailed(RulegenError):
    """promtool or amtool rejected the output, or a unit test failed (exit 1).

    ``diagnostics`` are the tool's problems, each mapped back to its spec position where it
    can be. The text form is ``title`` (``promtool check rules failed:``), then each
    diagnostic: ``FILE:LINE:COL: path: message`` when it has a position, else its message
    lines after ``indent``. ``report`` replaces that text where the tool's own layout must
    be kept (promtool's test report: the test name above the alert, then ``exp``/``got``).
    """

    def __init__(
        self,
        diagnostics: Sequence[Diagnostic],
        title: str = "",
        *,
        indent: str = "  ",
        report: Sequence[str] | None = None,
    ) -> None:
        self.diagnostics = list(diagnostics)
        self.title = title
        self.indent = indent
        self.report = None if report is None else list(report)
        super().__init__("\n".join(self.lines()))

    def lines(self) -> list[str]:
        """The text form, one line each (not yet escaped for a terminal)."""
        if self.report is not None:
            return [self.title, *self.report] if self.title else list(self.report)
        out = [self.title] if self.title else []
        for d in self.diagnostics:
            first, *rest = d.message.split("\n") or [""]
            if d.line:
                where = f"{d.file}:{d.line}:{d.col}: " + (f"{d.path}: " if d.path else "")
                out += [where + first, *rest]
            elif self.title:
                out += [self.indent + line for line in (first, *rest)]
            else:
                out += [(f"{d.file}: " if d.file else "") + first, *rest]
        return out

    def __reduce__(self) -> tuple[object, ...]:
        return (
            _validation_failed,
            (self.diagnostics, self.title, self.indent, self.report),
        )

    def as_diagnostics(self) -> list[Diagnostic]:
        return list(self.diagnostics)


def _validation_failed(
    diagnostics: list[Diagnostic], title: str, indent: str, report: list[str] | None
) -> ValidationFailed:
    return ValidationFailed(diagnostics, title, indent=indent, report=report)


class StaleOutput(RulegenError):
    """``--check`` found that the committed output differs from what would be written (exit 1).

    ``diff`` is a unified diff; ``entries`` says which files are ``stale:``, ``missing:`` or
    ``extra:`` (``(kind, path)`` pairs).
    """

    code = codes.OUTPUT_STALE
    HINT = "run `rulegen build` and commit the result"
    _WHY = {
        "stale:": "differs from what the specs generate",
        "missing:": "a build would write it; it is missing",
        "extra:": "a build would remove it",
    }

    def __init__(self, diff: str, entries: Sequence[tuple[str, str]] = ()) -> None:
        self.diff = diff
        self.entries = list(entries)
        super().__init__("output is stale")

    @property
    def files(self) -> list[str]:
        """One ``stale: NAME`` line per file."""
        return [f"{kind} {name}" for kind, name in self.entries]

    def __reduce__(self) -> tuple[type[StaleOutput], tuple[str, list[tuple[str, str]]]]:
        return (StaleOutput, (self.diff, self.entries))

    def as_diagnostics(self) -> list[Diagnostic]:
        return [
            Diagnostic(
                name,
                0,
                0,
                ROOT,
                f"{kind} {self._WHY.get(kind, 'differs')}",
                self.code,
                "error",
                self.HINT,
            )  # fmt: skip
            for kind, name in self.entries
        ] or [_unplaced("output is stale", self.code, self.HINT)]


class OutputConflict(UsageError):
    """Writing the output would replace or write into a file rulegen did not write (exit 2).

    Why a class of its own: each message is a whole line that names the file and what to do,
    and the CLI prints it as it is.
    """

    code = codes.OUTPUT_CONFLICT

    def __init__(self, messages: Sequence[str]) -> None:
        self.messages = list(messages)
        super().__init__("\n".join(self.messages))

    def __reduce__(self) -> tuple[type[OutputConflict], tuple[list[str]]]:
        return (OutputConflict, (self.messages,))

    def as_diagnostics(self) -> list[Diagnostic]:
        return [_unplaced(message, self.code) for message in self.messages]
