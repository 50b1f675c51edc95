"""``rulegen.templating``: the catalog's Jinja2 filters, trimming, Go escaping, user text.

The PromQL environment uses ``{{ }}``; the annotation environment uses ``[[ ]]`` so Go's
``{{ }}`` passes through to Prometheus. Everything a user writes is escaped so that
Prometheus never runs a Go template action the user did not write.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import pytest

from rulegen import gotemplate, templating
from rulegen.templating import TemplateFailure, TemplateLimit

FILTERS = [
    # (behaviour, filter applied to x, x, output)
    ("literal writes a Decimal as its short form", "literal", Decimal("0.0050"), "0.005"),
    ("literal writes a float without float noise", "literal", 0.1, "0.1"),
    ("literal writes an integer", "literal", 12500000000, "12500000000"),
    ("metric_part drops _total", "metric_part", "node_disk_io_time_seconds_total",
     "node_disk_io_time_seconds"),
    ("metric_part replaces colons", "metric_part", "job:http_requests:rate5m",
     "job_http_requests_rate5m"),
    ("metric_part keeps a plain name", "metric_part", "up", "up"),
    ("pname names the 99th percentile", "pname", 0.99, "p99"),
    ("pname keeps every digit", "pname", 0.999, "p999"),
    ("pname pads one digit", "pname", 0.5, "p50"),
    ("pname takes a Decimal", "pname", Decimal("0.95"), "p95"),
    ("pname of 1 is p100", "pname", 1, "p100"),
    ("promql_string quotes text", "promql_string", 'a"b', '"a\\"b"'),
    ("regex_example gives a matching value", "regex_example", "5..", "500"),
    ("regex_example is empty when none is known", "regex_example", "(?=x)", ""),
    ("matches is Prometheus' anchored match", "matches('sd.')", "sda", "True"),
    ("matches refuses a partial match", "matches('sd')", "sda", "False"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("filter_", "value", "output"), [c[1:] for c in FILTERS], ids=[c[0] for c in FILTERS]
)
def test_promql_filters(filter_: str, value: object, output: str) -> None:
    assert templating.render_promql("{{ x | " + filter_ + " }}", {"x": value}) == output


@pytest.mark.parametrize("value", [True, "5", None], ids=["a boolean", "numeric text", "null"])
def test_literal_refuses_anything_but_a_number(value: object) -> None:
    with pytest.raises(TemplateFailure, match="literal filter needs a number"):
        templating.render_promql("{{ x | literal }}", {"x": value})


def test_quantile_name_is_the_pname_filter() -> None:
    assert templating.quantile_name(Decimal("0.75")) == "p75"


PROMQL_TRIM = [
    # (behaviour, template, output)
    ("blank lines at the edges are removed", "\n\n  sum(x)\n\n", "sum(x)"),
    ("trailing spaces are removed", "sum(x)   \n  by (a)  ", "sum(x)\n  by (a)"),
    ("blank lines inside are removed", "a\n\n   \nb", "a\nb"),
    ("indentation inside is kept", "sum(\n    rate(x[5m])\n)", "sum(\n    rate(x[5m])\n)"),
    ("a block tag leaves no blank line", "a\n{% if true %}\nb\n{% endif %}\n", "a\nb"),
]


@pytest.mark.parametrize(
    ("template", "output"), [c[1:] for c in PROMQL_TRIM], ids=[c[0] for c in PROMQL_TRIM]
)
def test_render_promql_trims_what_a_template_leaves_around(template: str, output: str) -> None:
    assert templating.render_promql(template, {}) == output


TEXT = [
    # (behaviour, template, context, output)
    ("[[ ]] is the variable syntax", "GPU [[ gpu ]]", {"gpu": 0}, "GPU 0"),
    ("Go's {{ }} passes through", "at {{ $value }}", {}, "at {{ $value }}"),
    ("runs of whitespace become one space", "  a\n\n  is   b  \n", {}, "a is b"),
    ("[% %] is the block syntax", "[% if x %]yes[% else %]no[% endif %]", {"x": True}, "yes"),
    ("[# #] is a comment", "a[# note #]b", {}, "ab"),
    ("filters work in text too", "[[ t | literal ]]%", {"t": Decimal("97.50")}, "97.5%"),
]


@pytest.mark.parametrize(
    ("template", "context", "output"), [c[1:] for c in TEXT], ids=[c[0] for c in TEXT]
)
def test_render_text_uses_square_delimiters_and_one_line(
    template: str, context: Mapping[str, Any], output: str
) -> None:
    assert templating.render_text(template, context) == output


FAILURES = [
    # (behaviour, render, template, message)
    ("an undefined name is an error, not empty text", templating.render_promql, "{{ missing }}",
     "template error: 'missing' is undefined"),
    ("an undefined name in text is an error", templating.render_text, "[[ nope ]]",
     "template error: 'nope' is undefined"),
    ("a Python error inside a template is a template error", templating.render_promql,
     "{{ 1 / 0 }}", "template error: ZeroDivisionError: division by zero"),
    ("a syntax error is a template error", templating.render_promql, "{% if %}",
     "template error: Expected an expression"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("render", "template", "message"), [c[1:] for c in FAILURES], ids=[c[0] for c in FAILURES]
)
def test_template_failures_name_the_problem(render: object, template: str, message: str) -> None:
    assert callable(render)
    with pytest.raises(TemplateFailure, match=re.escape(message)):
        render(template, {})


@pytest.mark.parametrize(
    "template",
    ["[% for i in range(10**8) %]x[% endfor %]", "[[ 'x' * 10**9 ]]"],
    ids=["a loop without end stops at the budget", "a huge string stops at the budget"],
)
def test_a_runaway_template_stops_at_a_limit(template: str) -> None:
    with pytest.raises(TemplateLimit):
        templating.render_text(template, {})


def test_a_template_limit_is_a_template_failure() -> None:
    assert issubclass(TemplateLimit, TemplateFailure)


EVALUATE = [
    # (behaviour, expression, context, value)
    ("decimal literals stay exact", "0.1 + 0.2", {}, Decimal("0.3")),
    ("a context value takes part", "900 * q", {"q": Decimal("0.5")}, Decimal("450")),
    ("an exponent literal is a Decimal", "1e-3 * 2", {}, Decimal("0.002")),
    ("integers stay integers", "2 * 3", {}, 6),
]


@pytest.mark.parametrize(
    ("expression", "context", "value"), [c[1:] for c in EVALUATE], ids=[c[0] for c in EVALUATE]
)
def test_evaluate_computes_recipes_in_exact_decimals(
    expression: str, context: Mapping[str, Any], value: object
) -> None:
    result = templating.evaluate(expression, context)
    assert result == value
    assert type(result) is type(value)


def test_evaluate_names_the_expression_that_failed() -> None:
    with pytest.raises(TemplateFailure, match=re.escape("cannot evaluate '1/0': division by zero")):
        templating.evaluate("1/0", {})


GO_ESCAPES = [
    # (behaviour, text, before_action, escaped)
    ("text without braces is unchanged", "plain text", False, "plain text"),
    ("a lone brace is unchanged", "a { b } c", False, "a { b } c"),
    ("closing braces are unchanged", "}}", False, "}}"),
    ("an opening pair is escaped", "a {{ b", False, 'a {{ "{" }}{ b'),
    ("every brace that opens an action is escaped", "{{{", False, '{{ "{" }}{{ "{" }}{'),
    ("a trailing brace before an action is escaped", "x{", True, 'x{{ "{" }}'),
    ("a trailing brace at the end is unchanged", "x{", False, "x{"),
]


@pytest.mark.parametrize(
    ("text", "before_action", "escaped"),
    [c[1:] for c in GO_ESCAPES],
    ids=[c[0] for c in GO_ESCAPES],
)
def test_go_escape_makes_text_literal_for_prometheus(
    text: str, before_action: bool, escaped: str
) -> None:
    assert templating.go_escape(text, before_action=before_action) == escaped


@pytest.mark.parametrize(
    "text",
    ["a {{ b", "{{{", "{{ $labels.x }}", '{{ "{" }}', "}}{{"],
    ids=["an opening pair", "three braces", "an action", "an escape", "closing then opening"],
)
def test_go_escaped_text_expands_to_itself_in_prometheus(text: str) -> None:
    assert gotemplate.expand(templating.go_escape(text), {}, 1.0) == text


VALUES = {"threshold": "85°C", "for": "5m", "window": "10m", "alert": "GpuHot", "service": "svc"}
USER_TEXT = [
    # (behaviour, text, go template)
    ("{value} becomes the value action", "{value} over {threshold}", "{{ $value }} over 85°C"),
    ("{labels.NAME} becomes a label action", "GPU {labels.gpu}", "GPU {{ $labels.gpu }}"),
    ("the spec's values are filled in", "{alert} {service} {for}/{window}", "GpuHot svc 5m/10m"),
    ("an unknown word in braces stays literal", "{unknown}", "{unknown}"),
    ("an empty label name stays literal", "{labels.}", "{labels.}"),
    ("a user's Go action is printed, not run", "{{ $labels.x }}", '{{ "{" }}{ $labels.x }}'),
    ("a brace just before a placeholder is escaped", "x{{value}", 'x{{ "{" }}{{ $value }}'),
    ("text without placeholders is unchanged", "disk is full", "disk is full"),
]


@pytest.mark.parametrize(
    ("text", "template"), [c[1:] for c in USER_TEXT], ids=[c[0] for c in USER_TEXT]
)
def test_user_text_turns_placeholders_into_actions(text: str, template: str) -> None:
    assert templating.user_text(text, VALUES, "{{ $value }}") == template


def test_a_value_with_braces_is_escaped_too() -> None:
    assert templating.user_text("{threshold}", {"threshold": "{{x}}"}, "V") == '{{ "{" }}{x}}'


def test_user_text_expands_to_what_the_user_wrote() -> None:
    text = "{{ literally }} on {labels.instance} at {value}"
    expanded = gotemplate.expand(
        templating.user_text(text, {}, "{{ $value }}"), {"instance": "node-1"}, 91.5
    )
    assert expanded == "{{ literally }} on node-1 at 91.5"


def test_a_placeholder_without_a_value_is_an_error_listing_those_available() -> None:
    expected = (
        "placeholder {threshold} is not available here (available: {value}, {for}, {labels.NAME})"
    )
    with pytest.raises(ValueError, match=re.escape(expected)):
        templating.user_text("{threshold}", {"for": "5m"}, "{{ $value }}")


@pytest.mark.parametrize(
    "expression",
    ["bandwith * 2", "q + missing", "undefined_name"],
    ids=[
        "a misspelt parameter in a recipe is an error, not None",
        "an undefined name inside arithmetic is an error",
        "a bare undefined name is an error",
    ],
)
def test_an_undefined_name_in_a_recipe_is_a_template_failure(expression: str) -> None:
    with pytest.raises(TemplateFailure, match="is undefined"):
        templating.evaluate(expression, {"q": Decimal(1), "bandwidth": Decimal(2)})


def test_a_render_is_remembered_by_the_names_its_template_reads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A fleet renders each catalog text with its own service name at hand: a template that
    never reads ``service`` is rendered once for all of them (even beside a value that is no
    plain data), one that reads it once per service; the text is the same either way."""
    renders: list[str] = []
    real = templating._plain_text

    def counted(template: str, context: Mapping[str, Any]) -> str:
        renders.append(template)
        return real(template, context)

    monkeypatch.setattr(templating, "_plain_text", counted)
    quiet = "Disk [[ threshold ]] busy (memo test)"
    loud = "[[ service ]]: disk [[ threshold ]] busy (memo test)"
    for service in ("a", "b", "c"):
        context = {"service": service, "threshold": "80%", "sel": lambda: ""}
        assert templating.render_text(quiet, context) == "Disk 80% busy (memo test)"
        assert templating.render_text(loud, context) == f"{service}: disk 80% busy (memo test)"
    assert renders.count(quiet) == 1
    assert renders.count(loud) == 3
