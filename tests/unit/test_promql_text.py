"""``rulegen.core.promql``: quoting, matcher parsing, RE2 checks, regex examples, syntax and types.

Pure functions on text: no promtool. The PromQL they accept or produce is what Prometheus
accepts (``promql_parser`` is the same grammar); ``tests/alerts/test_hostile_text.py`` proves the
quoting end to end with promtool.
"""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from rulegen.core import promql
from rulegen.core.promql import Matcher

QUOTES = [
    # (behaviour, text, literal)
    ("plain text is wrapped in double quotes", "sda", '"sda"'),
    ("an empty value is an empty string literal", "", '""'),
    ("a double quote is escaped", 'a"b', '"a\\"b"'),
    ("a backslash is doubled", "a\\b", '"a\\\\b"'),
    ("line breaks and tabs use Go's short escapes", "a\nb\rc\td", '"a\\nb\\rc\\td"'),
    ("other control characters are hex escapes", "a\x01b\x7f", '"a\\x01b\\x7f"'),
    ("a closing brace cannot end the selector", '"} or vector(1) #', '"\\"} or vector(1) #"'),
    ("non-ASCII letters are kept as they are", "85°C é", '"85°C é"'),
]


@pytest.mark.parametrize(("text", "literal"), [c[1:] for c in QUOTES], ids=[c[0] for c in QUOTES])
def test_quote_writes_a_promql_string_literal(text: str, literal: str) -> None:
    assert promql.quote(text) == literal


@pytest.mark.parametrize("text", [c[1] for c in QUOTES], ids=[c[0] for c in QUOTES])
def test_a_quoted_value_parses_back_to_itself(text: str) -> None:
    assert promql.parse_matchers(f"a={promql.quote(text)}") == (Matcher("a", "=", text),)


def test_a_matcher_renders_with_its_value_quoted() -> None:
    assert Matcher("path", "!~", '/a"b').render() == 'path!~"/a\\"b"'


MATCHERS = [
    # (behaviour, text, matchers)
    ("an empty text is no matchers", "", ()),
    ("blank text is no matchers", "   ", ()),
    ("equality", 'job="node"', (Matcher("job", "=", "node"),)),
    ("inequality", 'job!="node"', (Matcher("job", "!=", "node"),)),
    ("regex match", 'code=~"5.."', (Matcher("code", "=~", "5.."),)),
    ("negated regex match", 'code!~"2..|3.."', (Matcher("code", "!~", "2..|3.."),)),
    (
        "several matchers keep their order",
        'b="2", a=~"1.*"',
        (Matcher("b", "=", "2"), Matcher("a", "=~", "1.*")),
    ),
    ("escapes in the value are decoded", r'a="x\"y\\z"', (Matcher("a", "=", 'x"y\\z'),)),
    ("an RE2 POSIX class is legal", 'a=~"[[:alpha:]]+"', (Matcher("a", "=~", "[[:alpha:]]+"),)),
    ("an RE2 Unicode class is legal", r'a=~"\\pL+"', (Matcher("a", "=~", r"\pL+"),)),
]


@pytest.mark.parametrize(
    ("text", "matchers"), [c[1:] for c in MATCHERS], ids=[c[0] for c in MATCHERS]
)
def test_label_matchers_parse_to_data(text: str, matchers: tuple[Matcher, ...]) -> None:
    assert promql.parse_matchers(text) == matchers


BAD_MATCHERS = [
    # (behaviour, text, message)
    ("a selector cannot be closed early", 'a="b"} or vector(1) #', "expected only label matchers"),
    ("__name__ cannot be selected on", '__name__="up"', "matchers may not select on __name__"),
    ("__name__ cannot be matched by regex", '__name__=~"up|x"', "may not select on __name__"),
    ("a bare word is not a matcher", "foo", "invalid label matchers: foo"),
    ("a dangling operator is not a matcher", 'a="b" or', "invalid label matchers"),
    ("an unbalanced regex names its label", 'dev=~"("', "invalid regex for label dev: missing )"),
    (
        "a possessive quantifier is refused in RE2's words",
        'a=~"x*+"',
        "invalid regex for label a: invalid nested repetition operator: `*+`",
    ),
    (
        "a lookahead is refused in RE2's words",
        'a=~"(?=x)"',
        "invalid regex for label a: invalid or unsupported Perl syntax: `(?=`",
    ),
    (
        "a repeat count over 1000 is refused",
        'a=~"x{1001}"',
        "invalid regex for label a: invalid repeat count: `{1001}`",
    ),
]


@pytest.mark.parametrize(
    ("text", "message"), [c[1:] for c in BAD_MATCHERS], ids=[c[0] for c in BAD_MATCHERS]
)
def test_bad_label_matchers_are_rejected_with_a_reason(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        promql.parse_matchers(text)


RE2 = [
    # (behaviour, pattern, problem or None)
    ("a plain pattern is fine", "sd[a-z]+|nvme.*", None),
    ("an escaped star before a plus is fine", r"\*+", None),
    ("a repeat count of 1000 is fine", "a{1000}", None),
    ("a possessive star", "a*+", "invalid nested repetition operator: `*+`"),
    ("a possessive repeat", "a{2}+", "invalid nested repetition operator: `}+`"),
    ("a lookahead", "(?!a)b", "invalid or unsupported Perl syntax: `(?!`"),
    ("a lookbehind", "(?<=a)b", "invalid or unsupported Perl syntax: `(?<=`"),
    ("a backreference", r"(a)\1", r"invalid escape sequence: `\1`"),
    ("an upper repeat bound over 1000", "a{2,1001}", "invalid repeat count: `{2,1001}`"),
]


@pytest.mark.parametrize(("pattern", "problem"), [c[1:] for c in RE2], ids=[c[0] for c in RE2])
def test_re2_problem_names_what_go_rejects_and_python_accepts(
    pattern: str, problem: str | None
) -> None:
    assert promql.re2_problem(pattern) == problem


FULL_MATCHES = [
    # (behaviour, pattern, value, matches)
    ("a regex is anchored at both ends", "sd", "sda", False),
    ("an alternation matches either branch whole", "sda|sdb", "sdb", True),
    ("a POSIX class is translated", "[[:digit:]]+", "123", True),
    ("a POSIX class does not match outside it", "[[:digit:]]+", "12a", False),
    ("a Unicode letter class is translated", r"\pL+", "abc", True),
    ("an empty value matches an optional pattern", "x?", "", True),
]


@pytest.mark.parametrize(
    ("pattern", "value", "matches"), [c[1:] for c in FULL_MATCHES], ids=[c[0] for c in FULL_MATCHES]
)
def test_full_match_is_prometheus_anchored_matching(
    pattern: str, value: str, matches: bool
) -> None:
    assert promql.full_match(pattern, value) is matches


@pytest.mark.parametrize(
    ("pattern", "python"),
    [("[[:alpha:]]", "[a-zA-Z]"), ("[[:alnum:]_]", "[a-zA-Z0-9_]"), (r"\p{L}", "[a-zA-Z]")],
    ids=["a POSIX class", "a POSIX class beside other characters", "a braced Unicode class"],
)
def test_python_regex_translates_re2_classes(pattern: str, python: str) -> None:
    assert promql.python_regex(pattern) == python


EXAMPLES = [
    # (behaviour, pattern)
    ("a class of any character", "5.."),
    ("an alternation", "sda|sdb"),
    ("a range and a repeat", "nvme[0-9]+n1"),
    ("a negated class", "[^0]x"),
    ("an escaped digit class", r"\d{2}"),
    ("an optional part", "x?"),
    ("a POSIX class", "[[:alpha:]]+"),
    ("a group", "(GET|POST)/api"),
]


@pytest.mark.parametrize("pattern", [c[1] for c in EXAMPLES], ids=[c[0] for c in EXAMPLES])
def test_a_regex_example_is_matched_by_its_regex(pattern: str) -> None:
    example = promql.regex_example(pattern)
    assert example is not None
    assert promql.full_match(pattern, example)


def test_no_example_is_guessed_for_a_lookaround() -> None:
    assert promql.regex_example("(?=x)") is None


SYNTAX = [
    # (behaviour, expression, parses)
    ("a comparison parses", "up == 1", True),
    ("a rate over a range parses", 'sum by (job) (rate(x{a="b"}[5m]))', True),
    ("an unclosed parenthesis does not", "rate(x[5m]", False),
    ("a dangling by does not", "sum(x) by", False),
    ("an empty expression does not", "", False),
]


@pytest.mark.parametrize(("expr", "parses"), [c[1:] for c in SYNTAX], ids=[c[0] for c in SYNTAX])
def test_check_syntax_returns_the_parsers_message_or_none(expr: str, parses: bool) -> None:
    problem = promql.check_syntax(expr)
    if parses:
        assert problem is None
    else:
        assert isinstance(problem, str)
        assert problem


TYPES = [
    # (behaviour, expression, type)
    ("a selector is a vector", "up", "vector"),
    ("a range selector is a matrix", "up[5m]", "matrix"),
    ("a subquery is a matrix", "up[5m:1m]", "matrix"),
    ("a string literal is a string", '"text"', "string"),
    ("a number is a scalar", "1", "scalar"),
    ("arithmetic on numbers is a scalar", "1 + 1", "scalar"),
    ("a vector beside a scalar is a vector", "up + 1", "vector"),
    ("parentheses keep the type", "(up[5m])", "matrix"),
    ("a unary minus keeps the type", "-up", "vector"),
    ("a function returns its declared type", "time()", "scalar"),
    ("rate returns a vector", "rate(x[5m])", "vector"),
    ("scalar() returns a scalar", "scalar(up)", "scalar"),
]


@pytest.mark.parametrize(("expr", "kind"), [c[1:] for c in TYPES], ids=[c[0] for c in TYPES])
def test_result_type_is_what_the_expression_evaluates_to(expr: str, kind: str) -> None:
    assert promql.result_type(expr) == kind


def test_selectors_lists_each_metric_read_once_in_order_without_ranges_or_offsets() -> None:
    expr = 'sum(rate(a{x="1"}[5m])) / sum(rate(b[5m] offset 1h)) + a{x="1"} + {job="x"} + c @ 100'
    found = promql.selectors(expr)
    assert [name for name, _ in found] == ["a", "b", "c"]
    assert found[0] == ("a", 'a{x="1"}')
    assert all("offset" not in text and "@" not in text and "[" not in text for _, text in found)


SELECTORS = [
    # (behaviour, text, name, matchers)
    ("a bare metric name", "foo", "foo", ()),
    ("surrounding blanks are ignored", "  foo  ", "foo", ()),
    ("a recording rule name with colons", "job:x:rate5m", "job:x:rate5m", ()),
    (
        "matchers are parsed",
        'http_requests_total{code=~"5..", job="api"}',
        "http_requests_total",
        (Matcher("code", "=~", "5.."), Matcher("job", "=", "api")),
    ),
]


@pytest.mark.parametrize(
    ("text", "name", "matchers"), [c[1:] for c in SELECTORS], ids=[c[0] for c in SELECTORS]
)
def test_a_counter_selector_parses_to_name_and_matchers(
    text: str, name: str, matchers: tuple[Matcher, ...]
) -> None:
    assert promql.parse_selector(text) == (name, matchers)


@pytest.mark.parametrize(
    "text",
    ["rate(foo[5m])", "foo[5m]", "foo offset 1h", "sum(foo)", "{job='x'}", ""],
    ids=[
        "a function is refused",
        "a range is refused",
        "an offset is refused",
        "an aggregation is refused",
        "a selector without a name is refused",
        "an empty selector is refused",
    ],
)
def test_anything_but_a_counter_selector_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="must be a counter selector"):
        promql.parse_selector(text)


def test_a_selector_with_a_bad_matcher_is_refused() -> None:
    with pytest.raises(ValueError, match="invalid regex for label code"):
        promql.parse_selector('foo{code=~"("}')


GO_FLOATS = [
    # (behaviour, value, text)
    ("a whole number has no decimal point", 1.0, "1"),
    ("a fraction is written plainly", 0.25, "0.25"),
    ("up to six digits before the point stay plain", 100000.0, "100000"),
    ("a million switches to an exponent", 1e6, "1e+06"),
    ("a small number uses a two-digit exponent", 1e-5, "1e-05"),
    ("a long mantissa keeps its digits", 2.5e-07, "2.5e-07"),
]


@pytest.mark.parametrize(
    ("value", "text"), [c[1:] for c in GO_FLOATS], ids=[c[0] for c in GO_FLOATS]
)
def test_go_float_writes_what_go_client_libraries_write(value: float, text: str) -> None:
    assert promql.go_float(value) == text


LE = [
    # (behaviour, bound, matcher)
    ("a fractional bound has one spelling", "0.5", Matcher("le", "=", "0.5")),
    (
        "a whole bound matches both Go's and OpenMetrics' spelling",
        "1",
        Matcher("le", "=~", r"1|1\.0"),
    ),
    (
        "a large bound matches the exponent and the decimal spelling",
        "1000000",
        Matcher("le", "=~", r"1000000\.0|1e\+06"),
    ),
]


@pytest.mark.parametrize(("bound", "matcher"), [c[1:] for c in LE], ids=[c[0] for c in LE])
def test_le_matcher_covers_both_bucket_spellings(bound: str, matcher: Matcher) -> None:
    assert promql.le_matcher(Decimal(bound)) == matcher


ACCEPTS = [
    # (behaviour, matcher, value, accepted)
    ("equality accepts the value", Matcher("a", "=", "x"), "x", True),
    ("equality refuses another value", Matcher("a", "=", "x"), "y", False),
    ("inequality accepts an absent label", Matcher("a", "!=", "x"), "", True),
    (
        "a regex refuses an absent label unless it matches empty",
        Matcher("a", "=~", "x|y"),
        "",
        False,
    ),
    ("a negated regex refuses a match", Matcher("a", "!~", "x.*"), "xy", False),
    ("a negated regex accepts a non-match", Matcher("a", "!~", "x.*"), "yx", True),
]


@pytest.mark.parametrize(
    ("matcher", "value", "accepted"), [c[1:] for c in ACCEPTS], ids=[c[0] for c in ACCEPTS]
)
def test_accepts_follows_prometheus_matching(matcher: Matcher, value: str, accepted: bool) -> None:
    assert promql.accepts(matcher, value) is accepted


SATISFY = [
    # (behaviour, matchers, labels)
    ("an equality matcher sets its value", 'a="1"', {}),
    ("a regex gets an example it matches", 'code=~"5.."', {}),
    ("a non-empty matcher gets some value", 'a!=""', {}),
    ("labels that already match are kept", 'a=~"x|y"', {"a": "y", "b": "2"}),
    ("a negated regex moves a value it matches", 'a!~"x.*"', {"a": "xx"}),
    ("several labels are completed together", 'a="1", b=~"5..", c!="x"', {"c": "x", "d": "4"}),
]


@pytest.mark.parametrize(
    ("matchers", "labels"), [c[1:] for c in SATISFY], ids=[c[0] for c in SATISFY]
)
def test_satisfy_completes_labels_that_every_matcher_accepts(
    matchers: str, labels: dict[str, str]
) -> None:
    parsed = promql.parse_matchers(matchers)
    done = promql.satisfy(parsed, labels)
    assert all(promql.accepts(m, done.get(m.name, "")) for m in parsed)
    untouched = {k: v for k, v in labels.items() if k not in {m.name for m in parsed}}
    assert untouched.items() <= done.items()
    assert "" not in done.values()


def test_satisfy_keeps_the_value_an_equality_asks_for() -> None:
    assert promql.satisfy(promql.parse_matchers('a="1"'), {"a": "2"}) == {"a": "1"}


def test_satisfy_drops_a_label_that_must_be_absent() -> None:
    assert promql.satisfy(promql.parse_matchers('a=""'), {"a": "x", "b": "y"}) == {"b": "y"}


def test_satisfy_names_matchers_no_value_can_meet() -> None:
    with pytest.raises(ValueError, match='no series matches a="1", a="2"'):
        promql.satisfy(promql.parse_matchers('a="1", a="2"'), {})


def test_refused_finds_a_series_the_accepting_matchers_keep_and_the_refusing_drop() -> None:
    refusing = promql.parse_matchers('code=~"5.."')
    accepting = promql.parse_matchers('code!=""')
    changed = promql.refused(refusing, accepting, {"code": "500", "job": "api"})
    assert changed is not None
    assert changed["job"] == "api"
    assert not promql.accepts(refusing[0], changed["code"])
    assert promql.accepts(accepting[0], changed["code"])


def test_refused_is_none_when_every_value_is_refused_too() -> None:
    assert promql.refused(promql.parse_matchers('code=~".*"'), (), {"code": "500"}) is None
