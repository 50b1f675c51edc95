"""Lint findings and their three output formats (text, JSON, GitHub workflow annotations).

Why: a finding carries a stable id, a severity and the spec position it is about, so an
editor, CI and a notebook read the same facts; the text form is GNU style
(``FILE:LINE:COL: [id] severity: message``) so editors jump to the line.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Literal

from rulegen.errors import printable

Severity = Literal["error", "warning", "info"]
_GITHUB = {"error": "error", "warning": "warning", "info": "notice"}


@dataclass(frozen=True, order=True)
class Finding:
    """One problem found in a spec, at the position of the value it is about."""

    file: str
    line: int
    column: int
    id: str
    severity: Severity
    message: str


def text(findings: Sequence[Finding]) -> str:
    """One line per finding, ``FILE:LINE:COL: [id] severity: message``.

    Control characters in the file name and the message are escaped (``\\n``, ``\\x1b``):
    one finding is always one line, and a spec file's name cannot drive the terminal.
    """
    return "".join(
        f"{printable(f.file)}:{f.line}:{f.column}: [{printable(f.id)}] {f.severity}: "
        f"{printable(f.message)}\n"
        for f in sorted(findings)
    )


def as_json(findings: Sequence[Finding]) -> str:
    """A JSON list of findings, in file order."""
    return json.dumps([asdict(f) for f in sorted(findings)], indent=2) + "\n"


def _command_data(text: str) -> str:
    """A workflow command's message, escaped as the Actions runner decodes it."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _command_property(text: str) -> str:
    """A workflow command's property value: ``,`` separates properties and ``:`` ends them."""
    return _command_data(text).replace(":", "%3A").replace(",", "%2C")


def github(findings: Sequence[Finding]) -> str:
    """GitHub Actions workflow commands: the finding shows on the spec line of a pull request.

    Messages and properties are escaped as the runner specifies (``%`` ``CR`` ``LF``, and in
    properties ``:`` ``,`` too), so a file named ``a,b\\n::error::x.yaml`` is one annotation
    on that file and forges none.
    """
    out = []
    for f in sorted(findings):
        properties = {
            "file": f.file,
            "line": str(f.line),
            "col": str(f.column),
            "title": f"rulegen {f.id}",
        }
        where = ",".join(f"{key}={_command_property(value)}" for key, value in properties.items())
        out.append(f"::{_GITHUB[f.severity]} {where}::{_command_data(f.message)}\n")
    return "".join(out)


FORMATS = {"text": text, "json": as_json, "github": github}


def exit_code(findings: Sequence[Finding]) -> int:
    """1 when any finding is an error, else 0 (warnings and infos do not fail CI)."""
    return 1 if any(f.severity == "error" for f in findings) else 0
