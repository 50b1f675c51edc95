"""PromQL syntax trees for the backtest: parse once, print back exactly, know what reads what.

Why: to replay a rule that is not deployed, the backtest rewrites expressions (a recording's
name replaced by the recording's own expression) and evaluates some operators itself, so it
needs the tree, and a printer it can trust. The parser's own ``str()`` is not one: it prints
``a="b\\"c"`` without the escape and ``1e400`` as ``inf``, neither of which parses back.
"""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

import promql_parser

from rulegen.core.promql import quote

Node = Any
"""A ``promql_parser`` node (the bindings have no type stubs)."""

MATCH_OPS = {"MatchOp.Equal": "=", "MatchOp.NotEqual": "!=", "MatchOp.Re": "=~",
             "MatchOp.NotRe": "!~"}  # fmt: skip


class Unsupported(Exception):
    """An expression the backtest cannot evaluate away from the server (``@``, a subquery or
    a function over a recording rulegen did not deploy): the message names the construct."""


def parse(expr: str) -> Node:
    """The tree of ``expr`` (rulegen built it, so it parses; a ``ValueError`` otherwise)."""
    return promql_parser.parse(expr)


def duration_ms(value: timedelta | None) -> int:
    """A ``timedelta`` (offset, range, step) in whole milliseconds; 0 for none."""
    if value is None:
        return 0
    return (value.days * 86_400_000) + (value.seconds * 1000) + value.microseconds // 1000


def duration_text(ms: int) -> str:
    """A PromQL duration: ``300s``, ``1500ms``, ``-60s``."""
    return f"{ms // 1000}s" if ms % 1000 == 0 else f"{ms}ms"


def number_text(value: float) -> str:
    """A float as a PromQL literal that parses back to the same float."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(value)


def matcher_text(matcher: Node) -> str:
    """``name op "value"``, the value quoted with Go escaping."""
    return f"{matcher.name}{MATCH_OPS[str(matcher.op)]}{quote(matcher.value)}"


def matchers_of(node: Node) -> list[tuple[str, str, str]]:
    """A vector selector's matchers as ``(name, op, value)``, ``__name__`` excluded."""
    if node.matchers.or_matchers:
        raise Unsupported("a selector with `or` matchers")
    return [(m.name, MATCH_OPS[str(m.op)], m.value) for m in node.matchers.matchers
            if m.name != "__name__"]  # fmt: skip


def selector_text(node: Node, *, with_offset: bool = True) -> str:
    """A vector selector: ``name{a="b"} offset 5m``."""
    if node.at is not None:
        raise Unsupported("the @ modifier")
    if node.matchers.or_matchers:
        raise Unsupported("a selector with `or` matchers")
    inner = ", ".join(matcher_text(m) for m in node.matchers.matchers)
    text = f"{node.name or ''}{{{inner}}}"
    return text + offset_text(node.offset) if with_offset else text


def offset_text(offset: timedelta | None) -> str:
    """`` offset 300s``, or nothing."""
    ms = duration_ms(offset)
    return f" offset {duration_text(ms)}" if ms else ""


def grouping_text(labels: list[str]) -> str:
    return "(" + ", ".join(labels) + ")"


def binary_modifier_text(node: Node) -> str:
    """``bool on (a) group_left (b)``: what sits between a binary operator and its right side."""
    modifier = node.modifier
    if modifier is None:
        return ""
    parts = []
    if modifier.return_bool:
        parts.append("bool")
    matching = modifier.matching
    if matching is not None:
        kind = "on" if str(matching.type).endswith("Include") else "ignoring"
        parts.append(f"{kind} {grouping_text(list(matching.labels))}")
    card = str(modifier.card)
    if card.endswith("ManyToOne"):
        parts.append(f"group_left {grouping_text(list(modifier.group_labels or []))}")
    elif card.endswith("OneToMany"):
        parts.append(f"group_right {grouping_text(list(modifier.group_labels or []))}")
    return " ".join(parts)


def to_text(node: Node, replace: Any = None) -> str:
    """PromQL text of a tree; ``replace(node)`` may return the text of any subtree instead
    (``None``: print it as it is). Every operand is parenthesised, so precedence never
    depends on the printer."""
    if replace is not None and (text := replace(node)) is not None:
        return str(text)
    printer = _PRINTERS.get(type(node))
    if printer is None:
        raise Unsupported(f"a {type(node).__name__}")
    return str(printer(node, lambda child: to_text(child, replace)))


Again = Any  # Callable[[Node], str]: prints a child with the same replacements


def _matrix_text(node: Node, _again: Again) -> str:
    vs = node.vector_selector
    rng = duration_text(duration_ms(node.range))
    return f"{selector_text(vs, with_offset=False)}[{rng}]{offset_text(vs.offset)}"


def _subquery_text(node: Node, again: Again) -> str:
    if node.at is not None:
        raise Unsupported("the @ modifier")
    step = duration_text(duration_ms(node.step)) if node.step is not None else ""
    rng = duration_text(duration_ms(node.range))
    return f"({again(node.expr)})[{rng}:{step}]{offset_text(node.offset)}"


def _aggregate_text(node: Node, again: Again) -> str:
    grouping = ""
    if node.modifier is not None:
        kind = "by" if str(node.modifier.type).endswith("By") else "without"
        grouping = f" {kind} {grouping_text(list(node.modifier.labels))}"
    args = ([again(node.param)] if node.param is not None else []) + [again(node.expr)]
    return f"{node.op}{grouping} (" + ", ".join(args) + ")"


def _binary_text(node: Node, again: Again) -> str:
    modifier = binary_modifier_text(node)
    op = f"{node.op} {modifier}" if modifier else str(node.op)
    return f"({again(node.lhs)}) {op} ({again(node.rhs)})"


_PRINTERS: dict[type, Any] = {
    promql_parser.NumberLiteral: lambda node, _again: number_text(float(node.val)),
    promql_parser.StringLiteral: lambda node, _again: quote(node.val),
    promql_parser.VectorSelector: lambda node, _again: selector_text(node),
    promql_parser.MatrixSelector: _matrix_text,
    promql_parser.SubqueryExpr: _subquery_text,
    promql_parser.ParenExpr: lambda node, again: f"({again(node.expr)})",
    promql_parser.UnaryExpr: lambda node, again: f"-({again(node.expr)})",
    promql_parser.Call: lambda node, again: (
        f"{node.func.name}(" + ", ".join(again(a) for a in node.args) + ")"
    ),
    promql_parser.AggregateExpr: _aggregate_text,
    promql_parser.BinaryExpr: _binary_text,
}


def children(node: Node) -> list[Node]:
    """A node's operands, in reading order."""
    if isinstance(node, promql_parser.MatrixSelector):
        return [node.vector_selector]
    if isinstance(node, promql_parser.ParenExpr | promql_parser.UnaryExpr
                  | promql_parser.SubqueryExpr):  # fmt: skip
        return [node.expr]
    if isinstance(node, promql_parser.AggregateExpr):
        return [c for c in (node.param, node.expr) if c is not None]
    if isinstance(node, promql_parser.BinaryExpr):
        return [node.lhs, node.rhs]
    if isinstance(node, promql_parser.Call):
        return list(node.args)
    return []


def names_read(node: Node) -> set[str]:
    """The metric names of every selector in a tree."""
    found: set[str] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, promql_parser.VectorSelector) and current.name:
            found.add(current.name)
        stack.extend(children(current))
    return found


def is_scalar(node: Node) -> bool:
    """Whether a tree evaluates to a scalar (``1``, ``scalar(x)``, ``time() - 3``)."""
    if isinstance(node, promql_parser.NumberLiteral):
        return True
    if isinstance(node, promql_parser.ParenExpr | promql_parser.UnaryExpr):
        return is_scalar(node.expr)
    if isinstance(node, promql_parser.Call):
        return str(node.func.return_type).endswith("Scalar")
    if isinstance(node, promql_parser.BinaryExpr):
        return is_scalar(node.lhs) and is_scalar(node.rhs)
    return False
