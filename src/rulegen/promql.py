"""PromQL text helpers shared by every stage: quoting, matcher parsing, syntax checks.

Why: user text reaches PromQL only through these functions, so a matcher like
``device="x"} or vector(1) #`` can never close a selector early.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import promql_parser

METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_OPS = {"MatchOp.Equal": "=", "MatchOp.NotEqual": "!=", "MatchOp.Re": "=~", "MatchOp.NotRe": "!~"}


@dataclass(frozen=True)
class Matcher:
    """One label matcher, kept as data and serialised with proper quoting."""

    name: str
    op: str
    value: str

    def render(self) -> str:
        """``name op "value"`` with the value quoted as a PromQL string."""
        return f"{self.name}{self.op}{quote(self.value)}"


def quote(value: str) -> str:
    """A PromQL double-quoted string literal (Go escaping) for any text."""
    out = ['"']
    for char in value:
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif char == "\r":
            out.append("\\r")
        elif char == "\t":
            out.append("\\t")
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\x{ord(char):02x}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def parse_matchers(text: str) -> tuple[Matcher, ...]:
    """Parse ``a="b", c=~"d.*"`` into matchers; anything else raises ``ValueError``."""
    if not text.strip():
        return ()
    if "{" in text or "}" in text:
        raise ValueError("expected label matchers like 'device=~\"nvme.+\"' without braces")
    try:
        parsed = promql_parser.parse("__rulegen_probe__{" + text + "}")
    except (ValueError, RuntimeError):
        raise ValueError(_explain(text)) from None
    if not isinstance(parsed, promql_parser.VectorSelector) or parsed.name != "__rulegen_probe__":
        raise ValueError(f"expected only label matchers, got: {text}")
    matchers = tuple(Matcher(m.name, _OPS[str(m.op)], m.value) for m in parsed.matchers.matchers)
    if any(m.name == "__name__" for m in matchers):
        raise ValueError("matchers may not select on __name__")
    for matcher in matchers:
        if matcher.op in ("=~", "!~"):
            try:
                re.compile(matcher.value)
            except re.error as exc:
                raise ValueError(f"invalid regex for label {matcher.name}: {exc}") from None
    return matchers


_REGEX_MATCHER = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)\s*[=!]~\s*"((?:[^"\\]|\\.)*)"')


def _explain(text: str) -> str:
    """Why matchers did not parse: the PromQL parser itself only says "invalid query"."""
    if re.search(r"\b__name__\s*(=|!=|=~|!~)", text):
        return "matchers may not select on __name__"
    for name, pattern in _REGEX_MATCHER.findall(text):
        try:
            re.compile(pattern.encode().decode("unicode_escape"))
        except re.error as exc:
            return f"invalid regex for label {name}: {exc}"
    return f"invalid label matchers: {text}"


def check_syntax(expr: str) -> str | None:
    """``None`` when ``expr`` parses as PromQL, else the parser's message."""
    try:
        promql_parser.parse(expr)
    except (ValueError, RuntimeError) as exc:
        return str(exc) or "invalid PromQL"
    return None


def result_type(expr: str) -> str:
    """``vector``, ``matrix``, ``scalar`` or ``string``: what an expression evaluates to.

    Why: an alert's expression must return an instant vector; ``up[5m]`` or ``"text"`` pass a
    syntax check (and promtool's) but fail at every evaluation in Prometheus.
    """
    return _type_of(promql_parser.parse(expr))


def _type_of(node: Any) -> str:
    if isinstance(node, promql_parser.MatrixSelector | promql_parser.SubqueryExpr):
        return "matrix"
    if isinstance(node, promql_parser.StringLiteral):
        return "string"
    if isinstance(node, promql_parser.NumberLiteral):
        return "scalar"
    if isinstance(node, promql_parser.ParenExpr | promql_parser.UnaryExpr):
        return _type_of(node.expr)
    if isinstance(node, promql_parser.Call):
        return str(node.func.return_type).rsplit(".", 1)[-1].lower()
    if isinstance(node, promql_parser.BinaryExpr):
        sides = {_type_of(node.lhs), _type_of(node.rhs)}
        return "vector" if "vector" in sides else "scalar"
    return "vector"


def selector(matchers: tuple[Matcher, ...]) -> str:
    """``{a="b",c=~"d"}`` or the empty string when there are no matchers."""
    if not matchers:
        return ""
    return "{" + ", ".join(m.render() for m in matchers) + "}"
