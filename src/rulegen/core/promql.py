"""PromQL text helpers shared by every stage: quoting, matcher parsing, syntax checks.

Why: user text reaches PromQL only through these functions, so a matcher like
``device="x"} or vector(1) #`` can never close a selector early.
"""

from __future__ import annotations

import json
import os
import re
import re._parser as re_parser  # type: ignore[import-not-found]  # the stdlib regex parser
import shutil
import subprocess
import tempfile
import warnings
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import Any

import promql_parser

from rulegen.core.versions import PrometheusVersion

METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
UTF8_SINCE = (3, 0)  # quoted UTF-8 metric and label names
_OPS = {"MatchOp.Equal": "=", "MatchOp.NotEqual": "!=", "MatchOp.Re": "=~", "MatchOp.NotRe": "!~"}


@dataclass(frozen=True)
class Matcher:
    """One label matcher, kept as data and serialised with proper quoting."""

    name: str
    op: str
    value: str

    def render(self) -> str:
        """``name op "value"`` with the value quoted as a PromQL string (and the name too
        when it is a UTF-8 name, Prometheus 3: ``"k8s.pod"="x"``)."""
        return f"{label_name(self.name)}{self.op}{quote(self.value)}"


def label_name(name: str) -> str:
    """A label name as PromQL writes it: bare, or quoted when only Prometheus 3's UTF-8
    names allow it (``"k8s.pod"``)."""
    return name if LABEL_NAME.match(name) else quote(name)


def label_list(names: tuple[str, ...] | list[str]) -> str:
    """The labels of a ``by (…)`` clause: ``service, slo, "k8s.pod"`` (``label_name``)."""
    return ", ".join(label_name(n) for n in names)


_UNWRITABLE = re.compile(r'[\s"\\`{}%$]')


def writable_label(name: str) -> bool:
    """A label name rulegen can write everywhere a grouping label goes: a legacy name, or a
    UTF-8 one (Prometheus 3: ``k8s.pod``, OpenTelemetry's ``service.name``) that is printable
    and holds no space, quote, backslash, backtick, brace, ``%`` or ``$``: the characters
    that mean something in Go templates (``index $labels "k8s.pod"``, a ``printf`` format in
    backquotes) or in Grafana legends (``{{k8s.pod}}``, ``$variable``). Names starting ``__``
    are Prometheus' own; ``...`` in an Alertmanager ``group_by`` means every label."""
    if name.startswith("__") or name == "...":
        return False
    return bool(LABEL_NAME.match(name)) or (
        name.isprintable() and _UNWRITABLE.search(name) is None and bool(name)
    )


def selector_text(metric: str, matchers: tuple[Matcher, ...] | list[Matcher] = ()) -> str:
    """``metric{a="b"}`` (the bare name without matchers), or, for a UTF-8 metric name
    (Prometheus 3), the name quoted inside the braces: ``{"http.requests", a="b"}``."""
    inner = [m.render() for m in matchers]
    if METRIC_NAME.match(metric):
        return f"{metric}{{{', '.join(inner)}}}" if inner else metric
    return "{" + ", ".join([quote(metric), *inner]) + "}"


def series_text(metric: str, labels: dict[str, str] | Any) -> str:
    """A series (promtool's ``input_series``): ``metric{a="b"}`` with sorted labels, UTF-8
    names quoted (``selector_text``)."""
    pairs = sorted(labels.items())
    if not metric or METRIC_NAME.match(metric):  # "": a sample's labels only
        inner = ", ".join([_PAIRS.get(pair) or _pair(pair) for pair in pairs])
        return f"{metric}{{{inner}}}"
    return selector_text(metric, [Matcher(k, "=", v) for k, v in pairs])


# ``name="value"`` as ``Matcher.render`` writes it, by (name, value): generated tests write
# the same labels on thousands of series.
_PAIRS: dict[tuple[str, str], str] = {}


def _pair(pair: tuple[str, str]) -> str:
    if len(_PAIRS) >= 20_000:  # each service adds its own pairs (its name): bounded memory
        _PAIRS.clear()
    text = _PAIRS[pair] = Matcher(pair[0], "=", pair[1]).render()
    return text


def utf8_names(metric: str, matchers: tuple[Matcher, ...] = ()) -> list[str]:
    """The metric and label names that only Prometheus 3's UTF-8 names allow."""
    names = [metric] if metric and not METRIC_NAME.match(metric) else []
    return names + [m.name for m in matchers if not LABEL_NAME.match(m.name)]


def utf8_refusal(
    metric: str, matchers: tuple[Matcher, ...], declared: PrometheusVersion
) -> str | None:
    """The spec error for the UTF-8 names of a selector (``metric`` may be ``""``) under a
    declared Prometheus 2.x, or ``None``."""
    return _names_refusal(utf8_names(metric, matchers), declared)


def label_refusal(names: tuple[str, ...] | list[str], declared: PrometheusVersion) -> str | None:
    """The spec error for the UTF-8 names among ``names`` (label names: an SLO's
    ``group_by``) under a declared Prometheus 2.x, or ``None``."""
    return _names_refusal([n for n in names if not LABEL_NAME.match(n)], declared)


def _names_refusal(names: list[str], declared: PrometheusVersion) -> str | None:
    if not names or declared.at_least(*UTF8_SINCE):
        return None
    shown = ", ".join(quote(n) for n in names)
    return (
        f"the UTF-8 name(s) {shown} need Prometheus 3.0 or later (prometheus.version is "
        f"{declared}); rename them or declare a 3.x version"
    )


_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f\x7f]')
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def quote(value: str) -> str:
    """A PromQL double-quoted string literal (Go escaping) for any text."""
    if not _NEEDS_ESCAPE.search(value):
        return f'"{value}"'  # the common case: label values need no escaping
    return '"' + _NEEDS_ESCAPE.sub(_escape, value) + '"'


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    return _ESCAPES.get(char) or f"\\x{ord(char):02x}"


@lru_cache(maxsize=8192)  # pure, and a fleet asks the same questions
def parse_matchers(text: str) -> tuple[Matcher, ...]:
    """Parse ``a="b", c=~"d.*"`` into matchers; anything else raises ``ValueError``."""
    if not text.strip():
        return ()
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
        if matcher.op in ("=~", "!~") and (problem := re2_problem(matcher.value)) is not None:
            raise ValueError(f"invalid regex for label {matcher.name}: {problem}")
        if matcher.op in ("=~", "!~"):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    re.compile(python_regex(matcher.value))
            except re.error as exc:
                raise ValueError(f"invalid regex for label {matcher.name}: {exc}") from None
    return matchers


_REGEX_MATCHER = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)\s*[=!]~\s*"((?:[^"\\]|\\.)*)"')


def _explain(text: str) -> str:
    """Why matchers did not parse: the PromQL parser itself only says "invalid query"."""
    if re.search(r"\b__name__\s*(=|!=|=~|!~)", text):
        return "matchers may not select on __name__"
    for name, pattern in _REGEX_MATCHER.findall(text):
        if (problem := re2_problem(pattern)) is not None:
            return f"invalid regex for label {name}: {problem}"
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                re.compile(python_regex(pattern.encode().decode("unicode_escape")))
        except re.error as exc:
            return f"invalid regex for label {name}: {exc}"
    reason = _matchers_reason(text)
    return (
        f"invalid label matchers {text}: {reason}" if reason else f"invalid label matchers: {text}"
    )


_POSITION = re.compile(r"^1:(\d+): ")


def _matchers_reason(text: str) -> str | None:
    """promtool's parse error for matchers, its position counted in ``text`` (the matchers
    are parsed as the selector ``x{text}``: two characters come first on the first line)."""
    reason = promtool_parse_error("x{" + text + "}") if PROMTOOL_PARSE_ERRORS else None
    if reason is None:
        return None
    return _POSITION.sub(lambda m: f"1:{max(int(m.group(1)) - 2, 1)}: ", reason)


_POSIX_CLASSES = {
    "alpha": "a-zA-Z", "digit": "0-9", "alnum": "a-zA-Z0-9", "lower": "a-z", "upper": "A-Z",
    "space": " \\t\\n\\r\\f\\v", "word": "a-zA-Z0-9_", "xdigit": "0-9a-fA-F",
    "punct": "!-/:-@[-`{-~",
}  # fmt: skip
_UNICODE_CLASSES = {r"\pL": "a-zA-Z", r"\p{L}": "a-zA-Z", r"\pN": "0-9", r"\p{N}": "0-9"}


@lru_cache(maxsize=8192)  # pure, and a fleet asks the same questions
def python_regex(pattern: str) -> str:
    """An RE2 pattern (what Prometheus uses) in Python ``re`` syntax, for checks and examples.

    Why: RE2's POSIX classes (``[[:alpha:]]``) and ``\\pL`` mean something else, or nothing,
    to Python; translating them keeps a legal Prometheus matcher legal here.
    """
    for name, chars in _POSIX_CLASSES.items():
        pattern = pattern.replace(f"[:{name}:]", chars)
    for name, chars in _UNICODE_CLASSES.items():
        pattern = pattern.replace(name, f"[{chars}]")
    return pattern


@lru_cache(maxsize=8192)  # pure, and a fleet asks the same questions
def full_match(pattern: str, value: str) -> bool:
    """Prometheus' anchored regex match, evaluated with Python ``re``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return re.fullmatch(python_regex(pattern), value) is not None


@lru_cache(maxsize=8192)  # pure, and a fleet asks the same questions
def regex_example(pattern: str) -> str | None:
    """A short string the (anchored) regex matches, or ``None`` when none can be derived."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            example = _example(re_parser.parse(python_regex(pattern)))
    except (re.error, _Unsupported):
        return None
    return example if full_match(pattern, example) else None


class _Unsupported(Exception):
    """A regex construct the example generator does not handle."""


def _example(parsed: Any) -> str:
    """A short string a parsed regex matches (first branch, minimal repeats, at least one)."""
    out = []
    for op, arg in parsed:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(arg))
        elif name == "ANY":
            out.append("0")
        elif name == "NOT_LITERAL":
            out.append("0" if chr(arg) != "0" else "1")
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, _high, item = arg
            out.append(_example(item) * max(int(low), 1))
        elif name == "SUBPATTERN":
            out.append(_example(arg[-1]))
        elif name == "BRANCH":
            out.append(_example(arg[1][0]))
        elif name == "IN":
            out.append(_first_in(arg))
        elif name != "AT":
            raise _Unsupported(name)
    return "".join(out)


def _first_in(items: Any) -> str:
    if items and str(items[0][0]) == "NEGATE":
        excluded = items[1:]
        for candidate in "0aAzZx_-9":
            if not _in_class(candidate, excluded):
                return candidate
        raise _Unsupported("NEGATE")
    for op, arg in items:
        name = str(op)
        if name == "LITERAL":
            return chr(arg)
        if name == "RANGE":
            return chr(arg[0])
        if name == "CATEGORY":
            return {"CATEGORY_DIGIT": "0", "CATEGORY_SPACE": " "}.get(str(arg), "a")
    raise _Unsupported("IN")


def _in_class(char: str, items: Any) -> bool:
    for op, arg in items:
        name = str(op)
        if (name == "LITERAL" and chr(arg) == char) or (
            name == "RANGE" and arg[0] <= ord(char) <= arg[1]
        ):
            return True
        if name == "CATEGORY":
            kind = str(arg)
            if ("DIGIT" in kind and char.isdigit()) or (
                "WORD" in kind and (char.isalnum() or char == "_")
            ):
                return True
    return False


@lru_cache(maxsize=8192)
def check_syntax(expr: str) -> str | None:
    """``None`` when ``expr`` parses as PromQL, else the parser's message (remembered: a
    fleet's specs render the same expressions over and over). Quick and often vague
    (``invalid promql query``): for a test whether text parses; a user's mistake is
    reported with ``syntax_error``."""
    try:
        promql_parser.parse(expr)
    except (ValueError, RuntimeError) as exc:
        return str(exc) or "invalid PromQL"
    return None


def syntax_error(expr: str) -> str | None:
    """``None`` when ``expr`` parses, else what is wrong with it for the user: promtool's own
    position and reason (``1:37: parse error: unexpected end of input``, the position
    line:column in ``expr``) when promtool is installed, else the Python parser's message.

    Why promtool: the Python parser names no position and often no reason (``invalid promql
    query``); promtool is Prometheus' own parser, the one the rules must pass in the end.
    It runs only for an expression that failed the Python parser (one short process)."""
    generic = check_syntax(expr)
    if generic is None:
        return None
    return (PROMTOOL_PARSE_ERRORS and promtool_parse_error(expr)) or generic


PROMTOOL_PARSE_ERRORS = True
"""Whether ``syntax_error`` asks promtool: off only in the tests that start no process (the
fast suite, ``tests/conftest.py``), which then see what a machine without promtool sees."""


_PARSE_ERROR = re.compile(r"could not parse expression: (\d+:\d+: parse error: .+)$", re.MULTILINE)
PARSE_TIMEOUT_SECONDS = 30


@lru_cache(maxsize=256)  # a spec's mistake is asked about by several checks
def promtool_parse_error(expr: str) -> str | None:
    """promtool's parse error for ``expr`` (``1:37: parse error: unexpected end of input``),
    from ``promtool check rules`` on a one-rule file in a temporary directory; ``None``
    when promtool is not installed, fails otherwise, or accepts the expression (a parser
    difference: the caller's message stands). promtool is found as everywhere else
    (``$RULEGEN_PROMTOOL``, else PATH: ``rulegen.validate.tools``, a layer above this one)."""
    promtool = os.environ.get("RULEGEN_PROMTOOL") or shutil.which("promtool")
    if not promtool or not Path(promtool).is_file():
        return None
    # a JSON string is a YAML double-quoted scalar: the expression reaches promtool unchanged
    rule = {"record": "rulegen", "expr": expr}
    rules = f"groups:\n- name: rulegen\n  rules:\n  - {json.dumps(rule)}\n"
    with tempfile.TemporaryDirectory(prefix="rulegen-promql-") as tmp:
        (Path(tmp) / "expr.yml").write_text(rules, encoding="utf-8")
        try:
            result = subprocess.run(
                [promtool, "check", "rules", "expr.yml"], cwd=tmp, capture_output=True,
                text=True, check=False, timeout=PARSE_TIMEOUT_SECONDS,
            )  # fmt: skip
        except (OSError, subprocess.SubprocessError):
            return None
    match = _PARSE_ERROR.search(result.stdout + result.stderr)
    return match.group(1).strip() if match else None


@lru_cache(maxsize=8192)  # pure, and a fleet asks the same questions
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


_SELECTOR = re.compile(r"^\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(?:\{(.*)\})?\s*$", re.DOTALL)
# ``{"name", matchers}``: the metric name quoted first inside the braces (Prometheus 3)
_QUOTED_SELECTOR = re.compile(r'^\s*\{\s*("(?:[^"\\]|\\.)*")\s*(?:,\s*(.*?))?\s*\}\s*$', re.DOTALL)


def selectors(expr: str) -> list[tuple[str, str]]:
    """``(metric name, selector text)`` of every vector selector an expression reads, in
    order, without duplicates; the text keeps the matchers (``name{service="x"}``) but not
    ranges, offsets or ``@``. Selectors without a metric name are left out."""
    found: dict[tuple[str, str], None] = {}
    stack: list[Any] = [promql_parser.parse(expr)]
    while stack:
        node = stack.pop()
        if isinstance(node, promql_parser.VectorSelector):
            if node.name:
                text = re.sub(r"\s+offset\s+\S+$|\s+@\s+\S+$", "", str(node))
                found[(node.name, text)] = None
            continue
        stack.extend(reversed(_children(node)))
    return list(found)


def subquery_points(expr: str, default_step: float) -> int:
    """The most points any subquery of ``expr`` evaluates (nested ones multiplied), a
    subquery without a resolution stepping at ``default_step`` seconds (the evaluation
    interval): what promtool's unit tests cap at ``PROMTOOL_MAX_SAMPLES``."""
    return _subqueries(expr, default_step)[0]


def subquery_step(expr: str, default_step: float) -> float:
    """The coarsest resolution of ``expr``'s subqueries in seconds (0 without any): how late
    a change in the raw series may show in its result."""
    return _subqueries(expr, default_step)[1]


def _subqueries(expr: str, default_step: float) -> tuple[int, float]:
    most, coarsest = 0, 0.0
    stack: list[tuple[Any, int]] = [(promql_parser.parse(expr), 1)]
    while stack:
        node, outer = stack.pop()
        if isinstance(node, promql_parser.SubqueryExpr):
            given = node.step
            step = given.total_seconds() if given is not None else default_step
            span = node.range
            outer *= max(1, int(span.total_seconds() // step)) if span is not None else 1
            most, coarsest = max(most, outer), max(coarsest, step)
        stack.extend((child, outer) for child in _children(node) if child is not None)
    return most, coarsest


PROMTOOL_MAX_SAMPLES = 10_000
"""The samples promtool's rule unit tests let one query load (Prometheus' engine option in
``cmd/promtool/unittest.go``; a server's default is 50,000,000): a subquery of more points
fails every evaluation of its rule there."""


def alternatives(expr: str) -> list[str]:
    """The operands of an expression's top-level ``or`` (``a or b or c`` → the texts of
    ``a``, ``b``, ``c``; one item when there is none): a rule that reads a metric under each
    of its names (an exporter that renamed it) has one operand per name."""
    out: list[str] = []
    stack: list[Any] = [promql_parser.parse(expr)]
    while stack:
        node = stack.pop()
        while isinstance(node, promql_parser.ParenExpr):
            node = node.expr
        if isinstance(node, promql_parser.BinaryExpr) and str(node.op) == "or":
            stack.extend([node.rhs, node.lhs])
            continue
        out.append(str(node))
    return out


def _children(node: Any) -> list[Any]:
    """The operand nodes of a parsed PromQL node, left to right (selectors have none)."""
    children: list[Any] = []
    if isinstance(node, promql_parser.MatrixSelector):
        children = [node.vector_selector]
    elif isinstance(
        node, promql_parser.ParenExpr | promql_parser.UnaryExpr | promql_parser.SubqueryExpr
    ):
        children = [node.expr]
    elif isinstance(node, promql_parser.AggregateExpr):
        children = [node.expr, node.param]
    elif isinstance(node, promql_parser.BinaryExpr):
        children = [node.lhs, node.rhs]
    elif isinstance(node, promql_parser.Call):
        children = list(node.args)
    return [c for c in children if c is not None]


ANY_SERIES = "*"  # what ``metrics_read`` gives for a selector that names no metric
_ALERT_SERIES = ("ALERTS", "ALERTS_FOR_STATE")


@lru_cache(maxsize=8192)  # pure, and a fleet asks the same questions
def metrics_read(expr: str) -> frozenset[str]:
    """Every metric name an expression can read: ``ANY_SERIES`` for a selector without a
    metric name (``{__name__=~"x.*"}``), ``ALERTS{X}`` for the ``ALERTS`` (or
    ``ALERTS_FOR_STATE``) series of alert ``X`` when an ``alertname="X"`` matcher pins it,
    plain ``ALERTS`` for those of any alert.

    Why the over-approximation: it decides which generated tests may share a promtool run
    (``rulegen.testruns``), where reading too much only costs speed, too little correctness.
    """
    found: set[str] = set()
    stack: list[Any] = [promql_parser.parse(expr)]
    while stack:
        node = stack.pop()
        if isinstance(node, promql_parser.VectorSelector):
            found.add(_metric_of(node))
            continue
        stack.extend(_children(node))
    return frozenset(found)


def _metric_of(node: Any) -> str:
    matchers = list(node.matchers.matchers)
    if node.matchers.or_matchers:
        return ANY_SERIES
    name = node.name or next(
        (m.value for m in matchers if m.name == "__name__" and _OPS[str(m.op)] == "="), None
    )
    if not name:
        return ANY_SERIES
    if name in _ALERT_SERIES:
        alert = [m.value for m in matchers if m.name == "alertname" and _OPS[str(m.op)] == "="]
        return f"ALERTS{{{alert[0]}}}" if alert else "ALERTS"
    return str(name)


@lru_cache(maxsize=8192)  # pure, and a fleet asks the same questions
def alert_series_read(expr: str) -> tuple[tuple[tuple[str, str], ...], ...]:
    """The equality matchers (label, value) of each ``ALERTS``/``ALERTS_FOR_STATE`` selector
    of ``expr``, one tuple per selector (sorted), ``alertname`` among them when pinned.

    Why: an alert rule whose static label ``severity: warning`` contradicts a selector's
    ``severity="critical"`` can never be read by it, so a test of the page need not load the
    ticket's rules (``rulegen.pipeline.testunits``).
    """
    found: list[tuple[tuple[str, str], ...]] = []
    stack: list[Any] = [promql_parser.parse(expr)]
    while stack:
        node = stack.pop()
        if isinstance(node, promql_parser.VectorSelector):
            if _metric_of(node).startswith("ALERTS"):
                pairs = {
                    (str(m.name), str(m.value))
                    for m in node.matchers.matchers
                    if _OPS[str(m.op)] == "=" and m.name != "__name__"
                }
                found.append(tuple(sorted(pairs)))
            continue
        stack.extend(_children(node))
    return tuple(found)


@lru_cache(maxsize=8192)  # pure, and a fleet asks the same questions
def parse_selector(text: str) -> tuple[str, tuple[Matcher, ...]]:
    """``name{a="b"}`` into its metric name and matchers; anything else raises ``ValueError``.

    Why: SLI selectors are counters that rulegen wraps in ``increase()`` itself, so a
    function, a range or an offset in them is a mistake worth naming.
    """
    match = _SELECTOR.match(text)
    if match is not None:
        return match.group(1), parse_matchers(match.group(2) or "")
    quoted = _QUOTED_SELECTOR.match(text)
    if quoted is not None:  # {"http.requests.total", code="500"}: a UTF-8 name (Prometheus 3)
        parsed = promql_parser.parse("{" + quoted.group(1) + "}")
        if isinstance(parsed, promql_parser.VectorSelector) and parsed.name is None:
            return str(parsed.matchers.matchers[0].value), parse_matchers(quoted.group(2) or "")
    raise ValueError(
        f'must be a counter selector like name{{label="value"}} (got {text.strip()!r}); '
        "no rate(), [range] or offset: rulegen adds increase() itself"
    )


def go_float(value: float) -> str:
    """A float the way Go's ``strconv.FormatFloat(v, 'g', -1, 64)`` writes it (``1``, ``0.5``).

    Why: Prometheus 2 client libraries in Go write histogram bounds this way (``le="1"``).
    """
    digits = Decimal(repr(value)).normalize()
    _, numbers, exponent = digits.as_tuple()
    assert isinstance(exponent, int)
    power = len(numbers) + exponent - 1
    if -4 <= power < 21 and power < 6:
        return format(digits, "f")
    mantissa = "".join(map(str, numbers))
    head = mantissa[0] + ("." + mantissa[1:] if len(mantissa) > 1 else "")
    return f"{head}e{'-' if power < 0 else '+'}{abs(power):02d}"


def le_matcher(bound: Decimal) -> Matcher:
    """An ``le`` matcher for one bucket bound in both spellings: ``1`` (Go) and ``1.0``.

    Why: Prometheus 3 normalises classic-histogram bounds to the OpenMetrics spelling
    (``le="1.0"``) while Prometheus 2 keeps what the exporter wrote (``le="1"`` from Go).
    """
    spellings = sorted({go_float(float(bound)), repr(float(bound))})
    if len(spellings) == 1:
        return Matcher("le", "=", spellings[0])
    return Matcher("le", "=~", "|".join(re.sub(r"([.+])", r"\\\1", s) for s in spellings))


_COMMON_VALUES = ("OK", "200", "ok", "success", "2xx", "rulegen-good", "0", "a")


def accepts(matcher: Matcher, value: str) -> bool:
    """Whether ``matcher`` selects a series whose label has ``value`` ("" = label absent)."""
    if matcher.op == "=":
        return value == matcher.value
    if matcher.op == "!=":
        return value != matcher.value
    found = full_match(matcher.value, value)
    return found if matcher.op == "=~" else not found


def _candidates(matchers: list[Matcher]) -> list[str]:
    out: list[str] = []
    for m in matchers:
        if m.op == "=":
            out.append(m.value)
        elif m.op == "=~" and (example := regex_example(m.value)) is not None:
            out.append(example)
    return [*out, "rulegen-test", *_COMMON_VALUES]


def satisfy(matchers: tuple[Matcher, ...], labels: dict[str, str]) -> dict[str, str]:
    """``labels`` completed so that every matcher accepts them; ``ValueError`` when no value
    can be found for some label."""
    labels = dict(labels)
    for name in sorted({m.name for m in matchers}):
        own = [m for m in matchers if m.name == name]
        if all(accepts(m, labels.get(name, "")) for m in own):
            continue
        chosen = next((v for v in _candidates(own) if all(accepts(m, v) for m in own)), None)
        if chosen is None:
            raise ValueError(f"no series matches {', '.join(m.render() for m in own)}")
        labels[name] = chosen
    return {k: v for k, v in labels.items() if v != ""}


def refused(
    refusing: tuple[Matcher, ...], accepting: tuple[Matcher, ...], labels: dict[str, str]
) -> dict[str, str] | None:
    """``labels`` changed on one label so that ``accepting`` still selects the series and
    ``refusing`` does not (a successful event beside an error), or ``None``."""
    for matcher in refusing:
        on_label = [m for m in accepting if m.name == matcher.name]
        for value in _candidates(on_label):
            if not accepts(matcher, value) and all(accepts(m, value) for m in on_label):
                return {k: v for k, v in {**labels, matcher.name: value}.items() if v != ""}
    return None


_RE2_REJECTS = (
    (re.compile(r"(?<!\\)[*+?}][+]"), "invalid nested repetition operator: `{0}`"),
    (re.compile(r"\(\?<?[=!]"), "invalid or unsupported Perl syntax: `{0}`"),
    (re.compile(r"(?<!\\)\\[1-9]"), "invalid escape sequence: `{0}`"),
)
_REPEAT = re.compile(r"(?<!\\)\{(\d+)(?:,(\d*))?\}")


def re2_problem(pattern: str) -> str | None:
    """What Go's RE2 (Prometheus, Alertmanager) rejects and Python's ``re`` accepts, in Go's
    words: possessive quantifiers, lookarounds, backreferences, repeat counts over 1000."""
    for check, message in _RE2_REJECTS:
        found = check.search(pattern)
        if found:
            return message.format(found.group(0))
    for found in _REPEAT.finditer(pattern):
        if any(int(n) > 1000 for n in found.groups() if n):
            return f"invalid repeat count: `{found.group(0)}`"
    return None


class UnknownName(ValueError):
    """Whether the expression's result keeps a metric name cannot be told from its text."""


# Functions whose result keeps its input's labels, ``__name__`` included (Prometheus 2.x).
_NAME_KEEPING_FUNCTIONS = frozenset({"label_replace", "label_join", "sort", "sort_desc"})


@lru_cache(maxsize=8192)  # pure, and a fleet asks the same questions
def kept_name(expr: str) -> str | None:
    """The metric name (``__name__``) the series of ``expr``'s result keep, or ``None`` when
    Prometheus 2.x drops it (arithmetic, aggregations, most functions); ``UnknownName`` when
    the text cannot tell (``a or b``, a selector without a name).

    Why: ``{{ $labels }}`` in an alert's annotation prints every label of the result,
    ``__name__`` included when a filter comparison (``up == 0``) keeps it.
    """
    return _kept_name(promql_parser.parse(expr))


def _kept_name(node: Any) -> str | None:
    if isinstance(node, promql_parser.VectorSelector):
        if not node.name:
            raise UnknownName("a selector without a metric name")
        return str(node.name)
    if isinstance(node, promql_parser.ParenExpr):
        return _kept_name(node.expr)
    if isinstance(node, promql_parser.AggregateExpr):
        op = str(node.op).lower()
        return _kept_name(node.expr) if op in ("topk", "bottomk") else None
    if isinstance(node, promql_parser.Call):
        if node.func.name in _NAME_KEEPING_FUNCTIONS:
            return _kept_name(node.args[0])
        return None
    if isinstance(node, promql_parser.BinaryExpr):
        return _kept_name_binary(node)
    return None


def _kept_name_binary(node: Any) -> str | None:
    """``and``/``unless`` and filter comparisons keep the vector side's name; the rest drop it."""
    op = str(node.op)
    if op == "or":
        raise UnknownName("an 'or' returns series of either side")
    if op in ("and", "unless"):
        return _kept_name(node.lhs)
    returns_bool = node.modifier is not None and bool(getattr(node.modifier, "return_bool", False))
    if op in ("==", "!=", ">", "<", ">=", "<=") and not returns_bool:
        return _kept_name(node.lhs if _type_of(node.lhs) == "vector" else node.rhs)
    return None


@lru_cache(maxsize=8192)  # pure, and a fleet asks the same questions
def grouped_labels(expr: str) -> tuple[str, ...] | None:
    """The labels of ``expr``'s result when an aggregation decides them (``sum by (gpu)`` →
    ``("gpu",)``, ``sum(...)`` → ``()``), or ``None`` when its series keep labels the text
    does not list (a selector, ``without``, ``topk``).

    Why: a custom alert's default summary names the labels that tell one firing instance
    from another; an aggregation names them, a plain selector keeps whatever it reads.
    """
    return _grouped(promql_parser.parse(expr))


def _grouped(node: Any) -> tuple[str, ...] | None:
    if isinstance(node, promql_parser.ParenExpr):
        return _grouped(node.expr)
    if isinstance(node, promql_parser.AggregateExpr):
        if str(node.op).lower() in ("topk", "bottomk", "limitk"):
            return None  # a selection, not a grouping: the series keep their labels
        if node.modifier is None:
            return ()
        if str(node.modifier).startswith("by"):
            return tuple(str(label) for label in node.modifier.labels)
        return None
    if isinstance(node, promql_parser.Call):
        vectors = [a for a in node.args if _type_of(a) in ("vector", "matrix")]
        return _grouped(vectors[0]) if vectors else ()
    if isinstance(node, promql_parser.BinaryExpr):
        return _grouped(node.lhs if _type_of(node.lhs) == "vector" else node.rhs)
    if isinstance(node, promql_parser.SubqueryExpr):
        return _grouped(node.expr)
    return None
