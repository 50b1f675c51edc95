"""Model rule groups → Mimir namespace files (``mimirtool rules load``), prepared like
``mimirtool rules prepare``.

Why: Mimir evaluates a tenant's rules over every cluster that writes to it, so the grouping
label (``cluster``) is added to every aggregation and every ``on (...)`` match, as an exact
PromQL rewrite that keeps the expression's own formatting and is checked against the parsed
AST.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import promql_parser

from rulegen.core.promql import LABEL_NAME
from rulegen.generated import RuleGroup
from rulegen.render.prometheus import rule_file

DEFAULT_GROUPING_LABEL = "cluster"


def mimir_namespace_file(
    namespace: str, groups: Sequence[RuleGroup], grouping_label: str = DEFAULT_GROUPING_LABEL
) -> dict[str, Any]:
    """One ``mimirtool rules load`` file: ``namespace:`` and ``groups:``, the grouping label
    added to every aggregation and ``on (...)`` as ``mimirtool rules prepare`` does (to the
    rendered expressions: ``mimirtool`` works on PromQL text too)."""
    data = rule_file(tuple(groups))["groups"]
    for group in data:
        for rule in group["rules"]:
            rule["expr"] = add_grouping_label(rule["expr"], grouping_label)
    return {"namespace": namespace, "groups": data}


AGGREGATIONS = frozenset(
    (
        "sum", "avg", "count", "min", "max", "group", "stddev", "stdvar", "topk", "bottomk",
        "count_values", "quantile", "limitk", "limit_ratio",
    )
)  # fmt: skip

_STRING = r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`'
_TOKEN = re.compile(
    rf"""
    (?P<space>\s+)
  | (?P<comment>\#[^\n]*)
  | (?P<string>{_STRING})
  | (?P<braces>\{{(?:[^}}"'`]|{_STRING})*\}})
  | (?P<brackets>\[[^\]]*\])
  | (?P<number>(?:0[xX][0-9a-fA-F]+|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)[a-zA-Z0-9]*)
  | (?P<ident>[a-zA-Z_:][a-zA-Z0-9_:]*)
  | (?P<op>==|!=|<=|>=|=~|!~|[-+*/%^<>=@(),])
    """,
    re.VERBOSE,
)


@dataclass(frozen=True)
class _Token:
    kind: str
    text: str
    start: int
    end: int

    @property
    def word(self) -> str:
        """The lower-cased identifier (PromQL keywords are case-insensitive), else ``""``."""
        return self.text.lower() if self.kind == "ident" else ""


def _tokens(expr: str) -> list[_Token]:
    """The significant tokens of ``expr``: selectors' ``{...}`` and ``[...]`` are one token
    each, so label names and durations inside them are never read as keywords."""
    out: list[_Token] = []
    position = 0
    while position < len(expr):
        match = _TOKEN.match(expr, position)
        if match is None or match.lastgroup is None:
            raise ValueError(f"cannot tokenise PromQL at offset {position}: {expr!r}")
        if match.lastgroup not in ("space", "comment"):
            out.append(_Token(match.lastgroup, match.group(), match.start(), match.end()))
        position = match.end()
    return out


def _closing(tokens: Sequence[_Token], opening: int) -> int:
    """Index of the ``)`` matching the ``(`` at ``opening``."""
    if tokens[opening].text != "(":
        raise ValueError("expected a parenthesised label list")
    depth = 0
    for index in range(opening, len(tokens)):
        if tokens[index].text == "(":
            depth += 1
        elif tokens[index].text == ")":
            depth -= 1
            if depth == 0:
                return index
    raise ValueError("unbalanced parentheses")


def _label_name(token: _Token) -> str:
    return token.text[1:-1] if token.kind == "string" else token.text


def _extend(
    tokens: Sequence[_Token], opening: int, closing: int, label: str
) -> list[tuple[int, str]]:
    """The insertion adding ``label`` to the label list ``tokens[opening..closing]``."""
    names = [t for t in tokens[opening + 1 : closing] if t.kind in ("ident", "string")]
    if label in {_label_name(t) for t in names}:
        return []
    if not names:
        return [(tokens[opening].end, label)]
    last = tokens[closing - 1]
    return [(last.end, f" {label}" if last.text == "," else f", {label}")]


def add_grouping_label(expr: str, label: str = DEFAULT_GROUPING_LABEL) -> str:
    """``expr`` with ``label`` added as ``mimirtool rules prepare`` adds it.

    Every ``by (...)`` list gets ``label`` (appended, unless present), every aggregation
    without a clause gets ``by (label)``, every ``on (...)`` of a binary operation gets it
    too; ``without (...)``, ``ignoring (...)`` and the ``group_left``/``group_right`` label
    lists are left alone. Only the label lists change; the rest of the text (line breaks,
    comments) is kept. The result is parsed and compared with the expected AST, so the
    rewrite is exact or raises ``ValueError``; applied twice it changes nothing.
    """
    if not LABEL_NAME.match(label):
        raise ValueError(f"invalid label name: {label!r}")
    try:
        original = promql_parser.parse(expr)
    except (ValueError, RuntimeError) as exc:
        raise ValueError(f"not PromQL ({exc}): {expr}") from None
    rewritten = expr
    for position, text in sorted(_grouping_edits(expr, label), reverse=True):
        rewritten = rewritten[:position] + text + rewritten[position:]
    try:
        parsed = promql_parser.parse(rewritten)
    except (ValueError, RuntimeError):
        raise ValueError(f"adding {label} broke the expression: {expr}") from None
    if shape(parsed) != shape(original, label):
        raise ValueError(f"cannot add {label} exactly to: {expr}")
    return rewritten


def _grouping_edits(expr: str, label: str) -> list[tuple[int, str]]:
    """The insertions (offset, text) that add ``label`` to ``expr``'s label lists."""
    tokens = _tokens(expr)
    edits: list[tuple[int, str]] = []
    handled: set[int] = set()  # the label lists written after an aggregation's arguments
    index = 0
    while index < len(tokens) - 1:
        token, following = tokens[index], tokens[index + 1]
        if index in handled:
            index += 1
        elif token.word in AGGREGATIONS and following.word in ("by", "without"):
            closing = _closing(tokens, index + 2)
            if following.word == "by":
                edits += _extend(tokens, index + 2, closing, label)
            index = closing + 1
        elif token.word in AGGREGATIONS and following.text == "(":
            edits += _trailing_clause(expr, tokens, index, label, handled)
            index += 1
        elif (
            token.word in ("on", "ignoring", "group_left", "group_right") and following.text == "("
        ):
            closing = _closing(tokens, index + 1)
            if token.word == "on":
                edits += _extend(tokens, index + 1, closing, label)
            index = closing + 1
        else:
            index += 1
    return edits


def _trailing_clause(
    expr: str, tokens: Sequence[_Token], index: int, label: str, handled: set[int]
) -> list[tuple[int, str]]:
    """``sum(x) by (a)`` gets ``label`` in its list, ``sum(x)`` gets ``by (label)``."""
    after = _closing(tokens, index + 1) + 1
    if after + 1 < len(tokens) and tokens[after].word in ("by", "without"):
        closing = _closing(tokens, after + 1)
        handled.update(range(after, closing + 1))
        return _extend(tokens, after + 1, closing, label) if tokens[after].word == "by" else []
    end = tokens[index].end
    return [(end, f" by ({label})" + (" " if expr[end] == "(" else ""))]


def shape(node: Any, label: str | None = None) -> Any:
    """The AST of ``node`` as nested tuples, for exact comparison; with ``label``, as
    ``mimirtool rules prepare`` would make it (what ``add_grouping_label`` must produce)."""
    if isinstance(node, promql_parser.AggregateExpr):
        modifier = node.modifier
        kind = "none" if modifier is None else str(modifier.type).rsplit(".", 1)[-1]
        labels = [] if modifier is None else list(modifier.labels)
        if label is not None and kind != "Without" and label not in labels:
            kind, labels = "By", [*labels, label]
        param = shape(node.param, label) if isinstance(node.param, promql_parser.Expr) else None
        return ("aggregate", str(node.op), kind, tuple(labels), shape(node.expr, label), param)
    if isinstance(node, promql_parser.BinaryExpr):
        return ("binary", str(node.op), _bin_modifier(node.modifier, label),
                shape(node.lhs, label), shape(node.rhs, label))  # fmt: skip
    if isinstance(node, promql_parser.Call):
        return ("call", node.func.name, tuple(shape(arg, label) for arg in node.args))
    if isinstance(node, promql_parser.ParenExpr):
        return ("paren", shape(node.expr, label))
    if isinstance(node, promql_parser.UnaryExpr):
        return ("unary", shape(node.expr, label))
    return _leaf_shape(node, label)


def _leaf_shape(node: Any, label: str | None) -> Any:
    if isinstance(node, promql_parser.SubqueryExpr):
        at = None if node.at is None else (str(node.at.type), str(node.at.at))
        return ("subquery", shape(node.expr, label), node.range, node.step, node.offset, at)
    if isinstance(node, promql_parser.MatrixSelector):
        return ("matrix", _selector(node.vector_selector), node.range)
    if isinstance(node, promql_parser.VectorSelector):
        return _selector(node)
    if isinstance(node, promql_parser.NumberLiteral):
        return ("number", repr(node.val))
    if isinstance(node, promql_parser.StringLiteral):
        return ("string", node.val)
    raise TypeError(f"unexpected PromQL node: {type(node).__name__}")


def _selector(node: Any) -> Any:
    at = None if node.at is None else (str(node.at.type), str(node.at.at))
    return ("selector", node.name, str(node.matchers), node.offset, at)


def _bin_modifier(modifier: Any, label: str | None) -> Any:
    if modifier is None:
        return None
    matching = None
    if modifier.matching is not None:
        kind = str(modifier.matching.type).rsplit(".", 1)[-1]
        labels = list(modifier.matching.labels)
        if label is not None and kind == "Include" and label not in labels:
            labels.append(label)
        matching = (kind, tuple(labels))
    fill = modifier.fill_values
    return (
        str(modifier.card),
        matching,
        modifier.return_bool,
        None if modifier.group_labels is None else tuple(modifier.group_labels),
        None if fill is None else (repr(fill.lhs), repr(fill.rhs)),
    )
