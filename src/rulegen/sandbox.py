"""A Jinja2 sandbox that also bounds what a template may cost: loops, text, numbers.

Why: Jinja's sandbox keeps templates away from Python's internals, but not from the CPU or the
memory: ``{% for i in range(10**5) %}{% for j in range(10**5) %}``, ``'x' * 10**9``,
``10 ** (10 ** 10)`` (Jinja's ``**`` groups from the left, so ``10 ** 10 ** 10`` is only
``10**100``), ``'%0999999999d' % 1`` or ``'a'.center(10**9)`` in a signal file of
``signals/`` would hang a build or exhaust the machine. Every render runs against a budget:

- steps: loop iterations, calls and items of the ranges and lists a render makes
  (``MAX_STEPS``);
- text: no text longer than ``MAX_TEXT`` characters, output included, checked *before* it
  is built where its size can be known in advance (repetition, padding, formats, ``replace``,
  ``join``), and at most ``MAX_WORK`` characters built in all;
- numbers: integers of at most ``MAX_INT_BITS`` bits, checked before ``**`` computes one.

Going past one raises ``TemplateLimit``; recursion and memory errors become one too. How:
the compiled template is rewritten before code generation (a loop's iterable is counted, ``~``
and the output inside loops and macros are measured), intercepted binary operators, a
checked ``call`` for methods and macros, filters wrapped with the same checks, a counting
``range``, and no ``lipsum``. The built-in catalog renders exactly as before.
"""

from __future__ import annotations

import functools
import math
import re
import string
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, cast

from jinja2 import Template, nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.runtime import Context, LoopContext, Undefined
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.visitor import NodeTransformer

MAX_STEPS = 10_000
MAX_TEXT = 100_000
MAX_WORK = 2_000_000
MAX_INT_BITS = 4096
MAX_SOURCE = 20_000
_SURROGATE = re.compile("[\ud800-\udfff]")


class TemplateFailure(ValueError):
    """A catalog template failed to render; the message names the problem."""


class TemplateLimit(TemplateFailure):
    """A template went past one of the sandbox's limits, or made text that cannot be written
    (a fault of the template, whatever the spec's values)."""


@dataclass
class _Budget:
    steps: int = 0
    chars: int = 0


# The budget of the render in progress; ``None`` outside one (nothing to charge then). When
# Jinja folds constants while it compiles, a check that fails only defers the work to the
# render, which fails the same way.
_BUDGET: ContextVar[_Budget | None] = ContextVar("rulegen_template_budget", default=None)


def run(render: Callable[[], Any]) -> Any:
    """``render()`` against a fresh budget; recursion and memory errors become limits."""
    token = _BUDGET.set(_Budget())
    try:
        return render()
    except RecursionError:
        raise TemplateLimit("template stopped: recursion too deep") from None
    except MemoryError:
        raise TemplateLimit("template stopped: out of memory") from None
    finally:
        _BUDGET.reset(token)


def render_capped(template: Template, context: Mapping[str, Any]) -> str:
    """The template's output, stopped as soon as it grows past ``MAX_TEXT`` characters."""
    parts: list[str] = []
    total = 0
    # ``render`` without ``concat``: Jinja's render joins the generator in one go
    for chunk in template.root_render_func(template.new_context(dict(context))):
        total += len(chunk)
        if total > MAX_TEXT:
            raise _too_long()
        parts.append(chunk)
    text = "".join(parts)
    found = _SURROGATE.search(text)
    if found:  # a "\ud800" escape in a Jinja string literal
        raise TemplateLimit(
            f"template output contains a lone surrogate U+{ord(found.group()):04X} "
            "(from a \\u escape), which is not text"
        )
    return text


def check_source(source: str) -> None:
    """A template's own text is bounded too (a literal list of a million items is work)."""
    if len(source) > MAX_SOURCE:
        raise TemplateLimit(f"template is longer than {MAX_SOURCE} characters")


# --- the budget ----------------------------------------------------------------------------


def _steps(count: int = 1) -> None:
    budget = _BUDGET.get()
    if budget is None:
        return
    budget.steps += count
    if budget.steps > MAX_STEPS:
        raise TemplateLimit(
            f"template stopped: more than {MAX_STEPS} loop iterations, calls or list items"
        )


def _too_long() -> TemplateLimit:
    return TemplateLimit(f"template stopped: it builds a text longer than {MAX_TEXT} characters")


def _text(length: int) -> None:
    """A text of ``length`` characters is (about to be) built."""
    if length > MAX_TEXT:
        raise _too_long()
    budget = _BUDGET.get()
    if budget is None:
        return
    budget.chars += length
    if budget.chars > MAX_WORK:
        raise TemplateLimit(f"template stopped: it builds more than {MAX_WORK} characters of text")


def _big_number() -> TemplateLimit:
    return TemplateLimit(f"template stopped: a number larger than {MAX_INT_BITS} bits")


def _charge(value: Any) -> Any:
    """Account for a value a template just made; returns it."""
    if isinstance(value, str):
        _text(len(value))
    elif isinstance(value, list | tuple | dict | set | frozenset):
        _steps(len(value))
    elif isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise _big_number()
    return value


def _measure(value: Any, limit: int = MAX_TEXT) -> int:
    """About how many characters ``str(value)`` has, counted no further than past ``limit``
    (so measuring is cheap even when the answer is "too much")."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, bool) or value is None:
        return 5
    if isinstance(value, int):
        return value.bit_length() // 3 + 2
    if isinstance(value, float | Decimal):
        return 32
    if isinstance(value, dict):
        value = [*value.keys(), *value.values()]
    if isinstance(value, list | tuple | set | frozenset):
        total = 2
        for item in value:
            total += _measure(item, limit - total) + 2
            if total > limit:
                break
        return total
    return 16  # functions, loop contexts, undefined values: their repr is short


def _counted(iterable: Iterable[Any]) -> Iterator[Any]:
    for item in iterable:
        _steps()
        yield item


def _range(*args: int) -> range:
    """``range``, each of its items a step (so at most ``MAX_STEPS``, below Jinja's 100000)."""
    numbers = range(*args)
    try:
        count = len(numbers)
    except OverflowError:  # more items than a machine word counts
        count = MAX_STEPS + 1
    _steps(count)
    return numbers


# --- size checks before the work -----------------------------------------------------------


def _width(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


_PERCENT = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?")


def _percent_bound(text: str, arguments: Any) -> int:
    """An upper bound of ``len(text % arguments)``."""
    values = arguments if isinstance(arguments, tuple) else (arguments,)
    stars = max((_width(v) for v in values), default=0)
    fields = 0
    widest = 0
    for match in _PERCENT.finditer(text):
        fields += 1
        for part in match.groups():
            widest = max(widest, stars if part == "*" else int(part or 0))
    return len(text) + fields * (widest + _measure(arguments))


def _format_bound(text: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> int:
    """An upper bound of ``len(text.format(*args, **kwargs))``."""
    values = [*args, *kwargs.values()]
    widest = 0
    fields = 0
    for _literal, name, spec, _conversion in string.Formatter().parse(text):
        if name is None:
            continue
        fields += 1
        numbers = [int(n) for n in re.findall(r"\d+", spec or "")]
        if spec and "{" in spec:  # a width from an argument
            numbers += [_width(v) for v in values]
            numbers += [int(n) for v in values if isinstance(v, str) for n in re.findall(r"\d+", v)]
        widest = max([widest, *numbers])
    biggest = max((_measure(v) for v in values), default=0)
    return len(text) + fields * (widest + biggest)


def _str_method_bound(
    text: str, name: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> int | None:
    """An upper bound of the length of ``text.<name>(...)``, for the methods whose result
    can be much longer than ``text``; ``None`` for the others (at most a few times longer)."""

    def arg(index: int, key: str, default: Any = None) -> Any:
        return args[index] if len(args) > index else kwargs.get(key, default)

    if name in ("center", "ljust", "rjust", "zfill"):
        return max(len(text), _width(arg(0, "width")))
    if name == "expandtabs":
        return len(text) + text.count("\t") * max(_width(arg(0, "tabsize", 8)), 8)
    if name == "replace":
        old, new, count = arg(0, "old", ""), arg(1, "new", ""), arg(2, "count", -1)
        if not isinstance(old, str) or not isinstance(new, str):
            return None
        hits = len(text) + 1 if old == "" else text.count(old)
        if isinstance(count, int) and count >= 0:
            hits = min(hits, count)
        return len(text) + hits * max(len(new) - len(old), 0)
    if name in ("format", "format_map"):
        values = arg(0, "mapping", {}) if name == "format_map" else kwargs
        return _format_bound(text, args if name == "format" else (), values)
    if name == "translate":
        table = arg(0, "table", {})
        longest = (
            max((_measure(v) for v in table.values()), default=1) if isinstance(table, dict) else 1
        )
        return len(text) * max(longest, 1)
    return None


def _check(bound: int | None) -> None:
    if bound is not None:
        _text(bound)


# --- filters --------------------------------------------------------------------------------


def _filter_check(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """Checks before a built-in filter runs; returns its arguments (``join`` gets a list)."""

    def arg(index: int, key: str, default: Any = None) -> Any:
        return args[index] if len(args) > index else kwargs.get(key, default)

    value = arg(0, "value")
    text = value if isinstance(value, str) else ""
    lines = text.count("\n") + 1
    if name == "center":
        _check(max(len(text), _width(arg(1, "width", 80))))
    elif name == "indent":
        width = arg(1, "width", 4)
        _check(len(text) + lines * (len(width) if isinstance(width, str) else _width(width)))
    elif name == "format" and isinstance(value, str):
        _check(_percent_bound(value, tuple(args[1:]) or dict(kwargs)))
    elif name == "replace" and isinstance(value, str):
        _check(_str_method_bound(value, "replace", args[1:], kwargs))
    elif name == "wordwrap":
        width = max(_width(arg(1, "width", 79)), 1)
        wrap = arg(3, "wrapstring") or "\n"
        _check(len(text) + (len(text) // width + 1) * _measure(wrap))
    elif name in ("batch", "slice"):
        count = arg(1, "linecount" if name == "batch" else "slices", 0)
        if _width(count) > MAX_STEPS:
            raise TemplateLimit(f"template stopped: {name}({count}) makes too many lists")
    elif name == "join" and not isinstance(value, str | Undefined) and value is not None:
        items = list(value)
        glue = arg(1, "d", "")
        _check(_measure(items) + _measure(glue) * len(items))
        return (items, *args[1:])
    return args


_CHECKED_FILTERS = frozenset(
    {"center", "indent", "format", "replace", "wordwrap", "batch", "slice", "join"}
)


def _guard_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    skip = 0 if getattr(func, "jinja_pass_arg", None) is None else 1
    checked = name in _CHECKED_FILTERS

    @functools.wraps(func)
    def guarded(*args: Any, **kwargs: Any) -> Any:  # the filter's own signature
        own = args[skip:]
        if own:
            value = own[0]
            if isinstance(value, Iterator):
                own = (_counted(value), *own[1:])
            elif not isinstance(value, Undefined):
                _text(_measure(value))
            if checked:
                own = _filter_check(name, own, kwargs)
        return _charge(func(*args[:skip], *own, **kwargs))

    guarded.rulegen_guarded = True  # type: ignore[attr-defined]  # a marker, see guard_filters
    return guarded


# --- the environment ------------------------------------------------------------------------


def _output(value: Any) -> str:
    """A ``{{ }}`` or literal text inside a loop or macro (Jinja would buffer it unchecked)."""
    _text(_measure(value))
    text = str(value)
    _charge(text)
    return text


def _concat(items: list[Any]) -> str:
    """``a ~ b``: measured before it is joined."""
    _text(sum(_measure(item) for item in items))
    return "".join(str(item) for item in items)


_HELPERS = {"_rulegen_output": _output, "_rulegen_concat": _concat, "_rulegen_iterate": _counted}
_INTERNAL = frozenset(id(f) for f in _HELPERS.values())
_REPEATED = (nodes.For, nodes.Macro, nodes.CallBlock, nodes.Block)


def _helper(name: str, argument: nodes.Expr, lineno: int) -> nodes.Call:
    call = nodes.Call(nodes.EnvironmentAttribute(name), [argument], [], None, None)
    call.set_lineno(lineno)
    return call


class _Rewrite(NodeTransformer):
    """Counts every loop's items, measures ``~``, and measures the output of loops and
    macros (run many times, or buffered before they are joined)."""

    def __init__(self) -> None:
        self.repeated = 0

    def generic_visit(self, node: nodes.Node, *args: Any, **kwargs: Any) -> nodes.Node:
        inside = isinstance(node, _REPEATED)
        self.repeated += inside
        try:
            node = super().generic_visit(node, *args, **kwargs)
        finally:
            self.repeated -= inside
        if isinstance(node, nodes.For):
            node.iter = _helper("_rulegen_iterate", cast(nodes.Expr, node.iter), node.lineno)
        elif isinstance(node, nodes.Concat):
            items = nodes.List(node.nodes)
            items.set_lineno(node.lineno)
            return _helper("_rulegen_concat", items, node.lineno)
        elif isinstance(node, nodes.Output) and self.repeated:
            node.nodes = [
                _helper(
                    "_rulegen_output",
                    nodes.Const(child.data) if isinstance(child, nodes.TemplateData) else child,
                    child.lineno,
                )
                for child in node.nodes
            ]
        return node


class _CodeGenerator(CodeGenerator):
    def visit_Template(self, node: nodes.Template, frame: Frame | None = None) -> None:
        rewritten = _Rewrite().visit(node)
        rewritten.set_environment(self.environment)
        super().visit_Template(rewritten, frame)


class GuardedEnvironment(ImmutableSandboxedEnvironment):
    """The immutable sandbox plus the budget of this module."""

    code_generator_class = _CodeGenerator
    intercepted_binops = frozenset({"*", "**", "%", "+"})

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.globals.pop("lipsum", None)
        self.globals["range"] = _range
        self.filters.pop("urlize", None)  # its output grows with its arguments, per link
        self.filters = {name: _guard_filter(name, f) for name, f in self.filters.items()}
        for name, helper in _HELPERS.items():
            setattr(self, name, helper)

    def guard_filters(self) -> None:
        """Wrap filters added after construction (rulegen's own)."""
        self.filters = {
            name: f if getattr(f, "rulegen_guarded", False) else _guard_filter(name, f)
            for name, f in self.filters.items()
        }

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        del context  # part of Jinja's signature; the checks need only the operands
        if operator == "**":
            _check_power(left, right)
        elif operator == "*":
            _check_repeat(left, right)
            _check_repeat(right, left)
        elif operator == "%" and isinstance(left, str):
            _check(_percent_bound(left, right))
        elif operator == "+" and isinstance(left, str | list | tuple):
            _text(_measure(left) + _measure(right))
        return _charge(self.binop_table[operator](left, right))

    def call(__self, __context: Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        if id(__obj) in _INTERNAL:  # one argument; Jinja adds its scope inside loops
            return __obj(*args)
        _steps()
        if isinstance(__obj, LoopContext) and args:  # loop(children) of a recursive loop
            args = (_counted(args[0]), *args[1:])
        method = getattr(__obj, "__wrapped__", __obj)  # str.format comes wrapped
        owner = getattr(method, "__self__", None)
        if isinstance(owner, str):
            _text(len(owner))
            name = getattr(method, "__name__", "")
            if name == "join" and args:
                items = list(_counted(args[0]))
                _check(_measure(items) + len(owner) * len(items))
                args = (items, *args[1:])
            else:
                _check(_str_method_bound(owner, name, args, kwargs))
        elif isinstance(owner, list | tuple | dict):
            _text(_measure(owner))  # a scan of the container (index, count, ...)
        return _charge(super().call(__context, __obj, *args, **kwargs))


def _check_power(base: Any, exponent: Any) -> None:
    integers = isinstance(base, int) and isinstance(exponent, int)
    if (
        integers
        and exponent > 0
        and abs(base) > 1
        and exponent * math.log2(abs(base)) > MAX_INT_BITS
    ):
        raise _big_number()


def _check_repeat(sequence: Any, times: Any) -> None:
    if isinstance(sequence, str | list | tuple) and isinstance(times, int) and times > 0:
        _text(_measure(sequence) * times)
