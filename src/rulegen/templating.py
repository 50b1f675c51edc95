"""Jinja2 for the catalog's PromQL templates and annotation text, and Go-template escaping.

Why: templates are data a team may write, so they run in a sandbox with StrictUndefined (a
typo is an error, not an empty string) and a budget of loops, text and numbers
(``rulegen.sandbox``: a template that would hang or exhaust memory stops with a
``TemplateLimit``). Everything a user writes that ends up inside a
Prometheus annotation or label is escaped so Prometheus never runs a Go template the user
did not write.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache
from typing import Any

from jinja2 import StrictUndefined, Template, TemplateError, Undefined, meta

from rulegen import units
from rulegen.core import promql
from rulegen.sandbox import (
    GuardedEnvironment,
    TemplateFailure,
    TemplateLimit,
    check_source,
    render_capped,
    run,
)

__all__ = [
    "PROMQL_ENV", "TEXT_ENV", "TemplateFailure", "TemplateLimit", "evaluate", "go_escape",
    "quantile_name", "render_promql", "render_text", "user_text",
]  # fmt: skip


def _literal(value: object) -> str:
    if isinstance(value, Decimal):
        return units.literal(value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return units.literal(Decimal(repr(value)))
    raise TemplateFailure(f"literal filter needs a number, got {value!r}")


def _metric_part(name: str) -> str:
    """A metric name as the middle part of ``level:metric:operations`` (no colons, no _total)."""
    base = name.replace(":", "_")
    return base[: -len("_total")] if base.endswith("_total") else base


def _duration(value: object) -> str:
    """Seconds as a spec writes a duration: ``600`` → ``10m``."""
    return units.format_duration(Decimal(str(value)))


def quantile_name(value: object) -> str:
    """``0.99`` → ``p99``, ``0.999`` → ``p999``, ``0.5`` → ``p50``."""
    text = _literal(value)
    digits = text.split(".", 1)[1] if "." in text else "100"
    return "p" + (digits + "0" if len(digits) == 1 else digits)


def _environment(**delimiters: str) -> GuardedEnvironment:
    env = GuardedEnvironment(
        undefined=StrictUndefined, autoescape=False, keep_trailing_newline=False, **delimiters
    )
    env.filters["literal"] = _literal
    env.filters["metric_part"] = _metric_part
    env.filters["pname"] = quantile_name
    env.filters["duration"] = _duration
    env.filters["promql_string"] = promql.quote
    env.filters["regex_example"] = lambda pattern: promql.regex_example(pattern) or ""
    env.filters["matches"] = lambda value, pattern: promql.full_match(pattern, value)
    env.guard_filters()
    return env


PROMQL_ENV = _environment()
TEXT_ENV = _environment(
    variable_start_string="[[",
    variable_end_string="]]",
    block_start_string="[%",
    block_end_string="%]",
    comment_start_string="[#",
    comment_end_string="#]",
)


@lru_cache(maxsize=1024)
def _promql_template(source: str) -> Template:
    return PROMQL_ENV.from_string(source)


@lru_cache(maxsize=1024)
def _text_template(source: str) -> Template:
    return TEXT_ENV.from_string(source)


@lru_cache(maxsize=1024)
def _expression(source: str) -> Callable[..., Any]:
    # an undefined name is an error (StrictUndefined), not a silent None
    return PROMQL_ENV.compile_expression(source, undefined_to_none=False)


def _render(compile_: Callable[[str], Template], source: str, context: Mapping[str, Any]) -> str:
    """Compile (cached) and render within the sandbox's budget; every failure, a Python one
    inside the template included (``1 / 0``), is a ``TemplateFailure``."""
    try:
        check_source(source)
        text: str = run(lambda: render_capped(compile_(source), context))
    except TemplateFailure:
        raise
    except TemplateError as exc:
        raise TemplateFailure(f"template error: {exc}") from None
    except Exception as exc:  # any error inside a user's template is theirs to fix
        raise TemplateFailure(f"template error: {type(exc).__name__}: {exc}") from None
    return text


def render_promql(template: str, context: Mapping[str, Any]) -> str:
    """Render a catalog PromQL template; trailing spaces and blank edges removed."""
    return _remembered("promql", template, context, _promql_text)


def _promql_text(template: str, context: Mapping[str, Any]) -> str:
    text = _render(_promql_template, template, context)
    lines = [line.rstrip() for line in text.strip().splitlines()]
    return "\n".join(line for line in lines if line)


def render_text(template: str, context: Mapping[str, Any]) -> str:
    """Render a catalog annotation template (``[[ ]]`` delimiters; Go ``{{ }}`` passes through)."""
    return _remembered("text", template, context, _plain_text)


def _plain_text(template: str, context: Mapping[str, Any]) -> str:
    return " ".join(_render(_text_template, template, context).split())


# A template's output is a pure function of its source and context, and a fleet renders the
# same catalog recipes with the same values thousands of times: renders whose context holds
# only plain values are remembered, keyed by each value's repr (so 1, True, Decimal("1") and
# Decimal("1.0"), equal as numbers, stay apart). A failure is never remembered.
_PLAIN = (str, int, Decimal, Fraction, bool, type(None))
_MEMO: dict[tuple[str, str, tuple[tuple[str, str], ...]], str] = {}
_VALUES: dict[tuple[str, str, tuple[tuple[str, str], ...]], Any] = {}
_MEMO_LIMIT = 16384  # entries (a fleet's services each add their own: bounded memory)


def _remembered(
    kind: str,
    template: str,
    context: Mapping[str, Any],
    render: Callable[[str, Mapping[str, Any]], str],
) -> str:
    names = _names(kind, template)
    read = context if names is None else {k: v for k, v in context.items() if k in names}
    key = plain_key(read)
    if key is None:
        return render(template, context)
    full = (kind, template, key)
    text = _MEMO.get(full)
    if text is None:
        text = render(template, context)
        if len(_MEMO) >= _MEMO_LIMIT:
            _MEMO.clear()
        _MEMO[full] = text
    return text


@lru_cache(maxsize=1024)
def _names(kind: str, template: str) -> frozenset[str] | None:
    """The context names ``template`` reads (a test recipe's expression, for the kind
    ``expression``), or ``None`` (all of them) when it does not parse (its render reports
    why). Why: a render depends on nothing else of its context,
    so the memo keys it by those alone; the catalog's annotation texts are rendered with
    the service's name at hand, which most of them never read, and would otherwise be
    rendered again for every service of a fleet."""
    env = TEXT_ENV if kind == "text" else PROMQL_ENV
    source = f"{{{{ ({template}) }}}}" if kind == "expression" else template
    try:
        return frozenset(meta.find_undeclared_variables(env.parse(source)))
    except TemplateError:
        return None


def plain_key(context: Mapping[str, Any]) -> tuple[tuple[str, str], ...] | None:
    """The context as ``(name, repr)`` pairs, or ``None`` when a value is not plain data
    (tuples of plain values count; a list, a dict or an object is rendered every time).
    One pass: a fleet asks it for every template of every alert."""
    pairs = []
    for name, value in context.items():
        if type(value) not in _PLAIN and not _is_plain(value):
            return None
        pairs.append((name, repr(value)))
    pairs.sort()
    return tuple(pairs)


def _is_plain(value: Any) -> bool:
    if isinstance(value, tuple):
        return all(_is_plain(item) for item in value)
    return type(value) in _PLAIN


_DECIMAL_LITERAL = re.compile(r"(?<![\w.])(\d+\.\d+|\d+e-?\d+)(?![\w.])")


def evaluate(expression: str, context: Mapping[str, Any]) -> Any:
    """Evaluate a small sandboxed expression of a test recipe (``900 * q``) in exact decimals.

    Why: decimal literals become ``Decimal`` values, so ``0.5 * q`` never mixes floats in.
    A plain result of a plain context is remembered, as renders are.
    """
    names = _names("expression", expression)
    read = context if names is None else {k: v for k, v in context.items() if k in names}
    key = plain_key(read)
    if key is None:
        return _evaluated(expression, context)
    full = ("evaluate", expression, key)
    if full in _VALUES:
        return _VALUES[full]
    value = _evaluated(expression, context)
    if _is_plain(value):
        if len(_VALUES) >= _MEMO_LIMIT:
            _VALUES.clear()
        _VALUES[full] = value
    return value


def _evaluated(expression: str, context: Mapping[str, Any]) -> Any:
    literals: dict[str, Decimal] = {}

    def name(match: re.Match[str]) -> str:
        key = f"__d{len(literals)}"
        literals[key] = Decimal(match.group(1))
        return key

    rewritten = _DECIMAL_LITERAL.sub(name, expression)
    try:
        check_source(expression)
        value = run(lambda: _expression(rewritten)(**context, **literals))
        if isinstance(value, Undefined):
            str(value)  # raises StrictUndefined's "'name' is undefined"
        return value
    except TemplateFailure:
        raise
    except Exception as exc:  # any error inside a user's recipe is theirs to fix
        shown = expression if len(expression) <= 80 else expression[:77] + "..."
        raise TemplateFailure(f"cannot evaluate {shown!r}: {exc}") from None


def go_escape(text: str, *, before_action: bool = False) -> str:
    """Literal text for a Prometheus (Go) template: any ``{`` that would open an action is escaped.

    ``before_action`` says the text is directly followed by an action, so a trailing ``{``
    would join with it.
    """
    if "{{" not in text and not (before_action and text.endswith("{")):
        return text  # nothing would open an action
    out: list[str] = []
    for index, char in enumerate(text):
        following = text[index + 1] if index + 1 < len(text) else ("{" if before_action else "")
        out.append('{{ "{" }}' if char == "{" and following == "{" else char)
    return "".join(out)


_PLACEHOLDER = re.compile(
    r"\{(value|threshold|for|window|alert|service|labels\.([A-Za-z_][A-Za-z0-9_]*))\}"
)


def user_text(text: str, values: Mapping[str, str], value_action: str) -> str:
    """A user's summary or description → Go template: placeholders become actions.

    The rest stays literal.

    ``{value}``, ``{threshold}``, ``{for}``, ``{window}``, ``{alert}``, ``{service}`` and
    ``{labels.NAME}`` are recognised; any other text, ``{{`` included, is printed as written.
    """
    parts: list[str] = []
    pos = 0
    for match in _PLACEHOLDER.finditer(text):
        literal = text[pos : match.start()]
        parts.append(go_escape(literal, before_action=True))
        key = match.group(1)
        if key == "value":
            parts.append(value_action)
        elif match.group(2):
            parts.append("{{ $labels." + match.group(2) + " }}")
        elif key in values:
            parts.append(go_escape(values[key], before_action=True))
        else:
            known = ", ".join("{" + k + "}" for k in ("value", *values, "labels.NAME"))
            raise ValueError(f"placeholder {{{key}}} is not available here (available: {known})")
        pos = match.end()
    parts.append(go_escape(text[pos:]))
    return "".join(parts)
