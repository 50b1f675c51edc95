"""Text that reaches a terminal or a CI log: one finding is one line, and forges nothing.

A spec file may be named with a line break, a comma, ``::`` or an escape sequence (Git and
every file system allow it). ``rulegen lint --format github`` escapes workflow-command
properties and messages as the Actions runner decodes them (``%`` → ``%25``, CR → ``%0D``,
LF → ``%0A``; in properties also ``:`` → ``%3A`` and ``,`` → ``%2C``), so such a name is one
annotation on that file and opens no other. Text output (lint's text format and every spec
error) writes control characters as escapes (``\\n``, ``\\x1b``), so each finding stays one
line and cannot drive the terminal; ordinary text, non-ASCII letters included, is unchanged.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_rulegen, write_tree

from rulegen.core.diagnostics import Severity, github
from rulegen.errors import Diagnostic, FieldPath, printable

SPEC = """
    version: 1
    service: web
    alerts:
      - {signal: disk_await, threshold: 5ms, severity: warning}
    selectors: {node: 'job="node"'}
    """
BROKEN = """
    version: 1
    service: web
    alerts: 3
    """
# A real file name that would open a second annotation if written raw, with a comma that
# would end the `file` property, a percent sign, and an escape sequence that turns text red.
HOSTILE = "a,b\n::error::x%0A\x1b[31m.yaml"
RUNBOOK = (
    "no runbook_url: 1 alert(s) reach on-call without a runbook; set runbook_url "
    "(with {alert} for the alert's name)"
)


def _hostile_tree(root: Path, spec: str) -> None:
    """``specs/<HOSTILE>`` holding ``spec``: a real file with that name."""
    write_tree(root, {f"specs/{HOSTILE}": spec})


@pytest.mark.slow
def test_github_format_escapes_a_hostile_file_name_through_the_real_cli(tmp_path: Path) -> None:
    _hostile_tree(tmp_path, SPEC)
    result = run_rulegen("lint", "--format", "github", cwd=tmp_path)
    assert (result.code, result.err) == (0, "")
    assert result.out.splitlines() == [
        "::notice file=specs/a%2Cb%0A%3A%3Aerror%3A%3Ax%250A\x1b[31m.yaml,line=1,col=1,"
        f"title=rulegen annotation/runbook::{RUNBOOK}"
    ]


@pytest.mark.slow
def test_text_format_escapes_a_hostile_file_name_through_the_real_cli(tmp_path: Path) -> None:
    _hostile_tree(tmp_path, SPEC)
    result = run_rulegen("lint", cwd=tmp_path)
    assert (result.code, result.err) == (0, "")
    assert result.out.splitlines() == [
        "specs/a,b\\n::error::x%0A\\x1b[31m.yaml:1:1: [annotation/runbook] info: " + RUNBOOK
    ]


@pytest.mark.slow
def test_json_format_keeps_the_file_name_exactly(tmp_path: Path) -> None:
    _hostile_tree(tmp_path, SPEC)
    result = run_rulegen("lint", "--format", "json", cwd=tmp_path)
    assert result.code == 0
    assert [f["file"] for f in json.loads(result.out)] == [f"specs/{HOSTILE}"]


@pytest.mark.slow
def test_a_spec_error_in_a_hostile_file_is_one_escaped_line(tmp_path: Path) -> None:
    _hostile_tree(tmp_path, BROKEN)
    for argv, closing in (
        (("build", "--no-validate"), "rulegen: 1 error(s); nothing written"),
        (("lint",), "rulegen: 1 error(s)"),  # lint writes nothing
    ):
        result = run_rulegen(*argv, cwd=tmp_path)
        assert (result.code, result.out) == (2, "")
        assert result.err.splitlines() == [
            "specs/a,b\\n::error::x%0A\\x1b[31m.yaml:3:9: alerts: must be a list (got 3)",
            closing,
        ]
        assert "\x1b" not in result.err


# --- the formatters, table-driven ----------------------------------------------------------


def finding(
    file: str, line: int, col: int, check: str, severity: Severity, message: str
) -> Diagnostic:
    """A lint finding (a diagnostic with the check's id as its code)."""
    return Diagnostic(file, line, col, FieldPath(), message, check, severity)


def text(findings: list[Diagnostic]) -> str:
    """lint's text output."""
    return "".join(f"{d.finding()}\n" for d in sorted(findings, key=Diagnostic.sort_key))


FINDING = finding("specs/web.yaml", 3, 7, "rate/window", "warning", "window 30s is short")


@pytest.mark.parametrize(
    ("file", "message", "line"),
    [
        (
            "specs/web.yaml",
            "window 30s is short",
            "::warning file=specs/web.yaml,line=3,col=7,title=rulegen rate/window::"
            "window 30s is short",
        ),
        (
            "specs/a:b,c.yaml",
            "100% of 5: a, b",
            "::warning file=specs/a%3Ab%2Cc.yaml,line=3,col=7,title=rulegen rate/window::"
            "100%25 of 5: a, b",
        ),
        (
            "specs/x\r\n%.yaml",
            "one\r\n::error::two",
            "::warning file=specs/x%0D%0A%25.yaml,line=3,col=7,title=rulegen rate/window::"
            "one%0D%0A::error::two",
        ),
        (
            "specs/été-日本.yaml",
            "Ω {{ $labels.x }}",
            "::warning file=specs/été-日本.yaml,line=3,col=7,title=rulegen rate/window::"
            "Ω {{ $labels.x }}",
        ),
    ],
    ids=[
        "ordinary text is written as it is",
        "commas and colons are escaped in properties only, percent signs everywhere",
        "line breaks never end the command, in the message or in a property",
        "non-ASCII letters are written as they are",
    ],
)
def test_github_workflow_command_escaping(file: str, message: str, line: str) -> None:
    found = finding(file, 3, 7, "rate/window", "warning", message)
    assert github([found], with_path=False) == line + "\n"


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("specs/web.yaml", "specs/web.yaml"),
        ("été 日本 🔥 Ω «»", "été 日本 🔥 Ω «»"),
        ("quotes \" ' and \\ backslash", "quotes \" ' and \\ backslash"),
        ("a\nb\rc\td", "a\\nb\\rc\\td"),
        ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),
        ("nul\x00 del\x7f c1\x85\x9b", "nul\\x00 del\\x7f c1\\x85\\x9b"),
        ("line\u2028sep\u2029", "line\\u2028sep\\u2029"),
        ("bidi \u202eevil\u202c \u2066x\u2069", "bidi \\u202eevil\\u202c \\u2066x\\u2069"),
    ],
    ids=[
        "a plain path is unchanged",
        "non-ASCII letters and symbols are unchanged",
        "quotes and backslashes are unchanged",
        "line breaks and tabs are escaped",
        "escape sequences are escaped",
        "NUL, DEL and C1 controls are escaped",
        "Unicode line separators are escaped",
        "bidirectional overrides are escaped",
    ],
)
def test_printable(raw: str, shown: str) -> None:
    assert printable(raw) == shown


def test_lint_text_is_one_line_per_finding() -> None:
    findings = [
        finding("specs/a\nb.yaml", 1, 2, "x/y", "error", "bad \x1b]0;title\x07 thing\nnext"),
        FINDING,
    ]
    assert text(findings).splitlines() == [
        "specs/a\\nb.yaml:1:2: [x/y] error: bad \\x1b]0;title\\x07 thing\\nnext",
        "specs/web.yaml:3:7: [rate/window] warning: window 30s is short",
    ]


@pytest.mark.parametrize(
    ("diagnostic", "line"),
    [
        (
            Diagnostic(
                "specs/web.yaml",
                23,
                16,
                FieldPath(("alerts", 1, "threshold")),
                "must be below 100%",
            ),
            "specs/web.yaml:23:16: alerts[1].threshold: must be below 100%",
        ),
        (
            Diagnostic(
                "specs/ü.yaml", 1, 1, FieldPath(), "invalid YAML: found  a\n  wrapped message"
            ),
            "specs/ü.yaml:1:1: invalid YAML: found a wrapped message",
        ),
        (
            Diagnostic(
                "specs/a\nb\x1b[2J.yaml", 2, 3, FieldPath(("x",)), "value 'a\x1bb' \u202eend"
            ),
            "specs/a\\nb\\x1b[2J.yaml:2:3: x: value 'a\\x1bb' \\u202eend",
        ),
    ],
    ids=[
        "an ordinary diagnostic renders as before",
        "whitespace in a message is still folded into single spaces",
        "control characters in the file name and the message are escaped",
    ],
)
def test_diagnostic_render(diagnostic: Diagnostic, line: str) -> None:
    assert diagnostic.render() == line
