"""One record for every problem rulegen reports, and its three output formats.

A spec error, a promtool or amtool failure mapped back to the spec, and a lint finding are
all a ``Diagnostic``: a stable ``code``, a ``severity``, the position (file, line, column and
the typed ``FieldPath`` of the value), a message and an optional hint. The CLI prints them as
text (GNU style, so editors jump to the line), as JSON, or as GitHub workflow annotations.

Why one record: editors, CI and notebooks read the same facts whatever found the problem, and
``--format`` works the same for every command.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")

# The codes of problems that are not lint findings (lint findings use their check's id).
SPEC_YAML = "spec/yaml"  # not a YAML document rulegen reads (syntax, size, encoding, guards)
SPEC_UNKNOWN_KEY = "spec/unknown-key"  # a key the spec format does not have
SPEC_MISSING = "spec/missing"  # a required key is missing
SPEC_TYPE = "spec/type"  # a value of the wrong type (a list where a mapping belongs, ...)
SPEC_VALUE = "spec/value"  # a value the spec's rules refuse (range, syntax, reference)
SPEC_DUPLICATE = "spec/duplicate"  # defined twice: a key, a service
SPEC_TEST = "spec/test"  # the generated tests cannot be built, or would run too long
SPEC_UNKNOWN_CHECK = "spec/unknown-check"  # a ``# rulegen: disable=`` comment names no check
PROMTOOL_CHECK = "promtool/check"  # ``promtool check rules`` rejected a rule
PROMTOOL_TEST = "promtool/test"  # a ``promtool test rules`` assertion failed
AMTOOL_CHECK = "amtool/check-config"  # ``amtool check-config`` rejected alertmanager.yml
AMTOOL_ROUTES = "amtool/routes"  # a routing test reached other receivers
CRD_SCHEMA = "crd/schema"  # a PrometheusRule object the CRD schema rejects
VMALERT_CHECK = "vmalert/dry-run"  # ``vmalert -dryRun`` rejected a victoriametrics/ file
VMALERT_TEST = "vmalert/unittest"  # ``vmalert-tool unittest`` failed a victoriametrics/tests/ file
TOOL_MISSING = "tool/missing"  # promtool, amtool (or matplotlib) is not installed
TOOL_TIMEOUT = "tool/timeout"  # a tool did not finish in time
TOOL_VERSION = "tool/version"  # a tool evaluates otherwise than the declared Prometheus
OUTPUT_STALE = "output/stale"  # ``build --check``: a file differs from a fresh build
OUTPUT_CONFLICT = "output/conflict"  # the output would replace a file rulegen did not write
USAGE = "usage"  # a bad argument or set of inputs, a server problem
IO = "io"  # a file could not be read or written
ERROR = "error"  # any other error rulegen reports on purpose
INTERNAL = "internal"  # a bug in rulegen

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


_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_PART = re.compile(r'\.?([A-Za-z_][A-Za-z0-9_-]*)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]')


@dataclass(frozen=True)
class FieldPath:
    """Where a value sits in a YAML document: its keys and list indexes, outermost first.

    Shown as ``alerts[2].threshold``; a key that is not a plain name as ``["a b"]``, so a key
    with a line break or a dot never breaks the one-line diagnostic or reads as two fields.
    ``more`` marks a path cut short (shown with a trailing ``...``): the value sits deeper.
    """

    parts: tuple[str | int, ...] = ()
    more: bool = False

    @classmethod
    def of(cls, parts: Iterable[str | int]) -> FieldPath:
        """A path from its parts (a tuple, a list, another path)."""
        return parts if isinstance(parts, FieldPath) else cls(tuple(parts))

    @classmethod
    def parse(cls, text: str) -> FieldPath:
        """The path ``str()`` shows, parsed back: ``alerts[2].threshold`` → its parts."""
        parts: list[str | int] = []
        more = text.endswith("...")
        body = text[:-3] if more else text
        position = 0
        while position < len(body):
            match = _PART.match(body, position)
            if match is None or match.end() == position:
                raise ValueError(f"not a field path: {text!r}")
            name, index, quoted = match.groups()
            parts.append(name if name is not None else int(index) if index else json.loads(quoted))
            position = match.end()
        return cls(tuple(parts), more)

    def child(self, *parts: str | int) -> FieldPath:
        """This path, then ``parts``."""
        return FieldPath((*self.parts, *parts))

    def entries(self) -> Iterator[FieldPath]:
        """The list items this path lies in, innermost first: ``slos[1].tiers[0].long`` →
        ``slos[1].tiers[0]``, ``slos[1]``."""
        for end in range(len(self.parts), 0, -1):
            if isinstance(self.parts[end - 1], int):
                yield FieldPath(self.parts[:end])

    def __iter__(self) -> Iterator[str | int]:
        return iter(self.parts)

    def __len__(self) -> int:
        return len(self.parts)

    def __bool__(self) -> bool:
        return bool(self.parts)

    def __str__(self) -> str:
        out = ""
        for part in self.parts:
            if isinstance(part, int):
                out += f"[{part}]"
            elif _PLAIN_KEY.match(part):
                out += f".{part}" if out else part
            else:
                out += f"[{json.dumps(part)}]"
        return out + ("..." if self.more else "")


ROOT = FieldPath()


@dataclass(frozen=True)
class Diagnostic:
    """One problem, at the exact place it comes from.

    ``file`` is empty and ``line``/``col`` are 0 for a problem that has no place in a file (a
    bad argument, a missing tool); ``path`` is empty for one that is about the file as a whole.
    ``code`` is stable (``spec/value``, ``promtool/check``, a lint check's id such as
    ``rate/window``); ``hint`` is what to do about it, when the message does not say.
    """

    file: str
    line: int
    col: int
    path: FieldPath
    message: str
    code: str = SPEC_VALUE
    severity: Severity = "error"
    hint: str = ""

    def render(self) -> str:
        """GNU style ``FILE:LINE:COL: field.path: message``, one line, so editors can link it."""
        text = printable(" ".join(self.message.split()))
        path = printable(str(self.path))
        body = f"{path}: {text}" if path else text
        where = self.where()
        return f"{where}: {body}" if where else body

    def where(self) -> str:
        """``FILE:LINE:COL`` (or less, when the problem has no line), control characters
        escaped."""
        if not self.file:
            return ""
        if not self.line:
            return printable(self.file)
        return f"{printable(self.file)}:{self.line}:{self.col}"

    def finding(self) -> str:
        """A lint finding's line: ``FILE:LINE:COL: [id] severity: message``."""
        return (
            f"{printable(self.file)}:{self.line}:{self.col}: [{printable(self.code)}] "
            f"{self.severity}: {printable(self.message)}"
        )

    def sort_key(self) -> tuple[str, int, int, str, str, str, str]:
        """File order: by position, then code, severity, message and field path."""
        return (
            self.file, self.line, self.col, self.code, self.severity, self.message, str(self.path),
        )  # fmt: skip

    def as_dict(self) -> dict[str, object]:
        """The JSON object: a missing file, line or column is ``null``."""
        return {
            "file": self.file or None,
            "line": self.line or None,
            "column": self.col or None,
            "code": self.code,
            "severity": self.severity,
            "path": str(self.path),
            "message": self.message,
            "hint": self.hint,
        }


# --- the formats ----------------------------------------------------------------------------


def as_json(diagnostics: Sequence[Diagnostic]) -> str:
    """One JSON document: the list of diagnostics, as given (``[]`` when there are none)."""
    return json.dumps([d.as_dict() for d in diagnostics], indent=2, ensure_ascii=False) + "\n"


_GITHUB = {"error": "error", "warning": "warning", "info": "notice"}


def _command_data(text: str) -> str:
    """A workflow command's message, escaped as the Actions runner decodes it."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _command_property(text: str) -> str:
    """A workflow command's property value: ``,`` separates properties and ``:`` ends them."""
    return _command_data(text).replace(":", "%3A").replace(",", "%2C")


def github(diagnostics: Sequence[Diagnostic], *, with_path: bool = True) -> str:
    """GitHub Actions workflow commands: each problem shows on its spec line of a pull request.

    Messages and properties are escaped as the runner specifies (``%`` ``CR`` ``LF``, and in
    properties ``:`` ``,`` too), so a file named ``a,b\\n::error::x.yaml`` is one annotation
    on that file and forges none. ``with_path`` puts the field path before the message (as
    the text form of a spec error does; a lint finding's text has none).
    """
    out = []
    for d in diagnostics:
        properties = {}
        if d.file:
            properties["file"] = d.file
            if d.line:
                properties["line"] = str(d.line)
                properties["col"] = str(d.col)
        properties["title"] = f"rulegen {d.code}"
        where = ",".join(f"{key}={_command_property(value)}" for key, value in properties.items())
        message = f"{d.path}: {d.message}" if with_path and d.path else d.message
        out.append(f"::{_GITHUB[d.severity]} {where}::{_command_data(message)}\n")
    return "".join(out)


FORMATS = ("text", "json", "github")
