"""PromQL a spec gets wrong is reported as Prometheus' parser reports it: the position in the
expression and the reason (``1:37: parse error: unexpected end of input``), at the field's
file:line:col and path, one line each; without promtool, the Python parser's message.

Why: the Python parser rulegen checks with names no position and often no reason (``invalid
promql query``); promtool's message is the one the user can act on. Run on both stacks
(``make test`` runs this file on 3.5, ``make test-bookworm`` does not need to: the only
wording that differs between 2.42 and 3.5 is asserted per stack).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import ON_PROMETHEUS_2, CliResult, for_stack, spec_errors, write_tree

from rulegen.core import promql

Cli = Callable[..., CliResult]

pytestmark = pytest.mark.slow  # promtool parses the broken expressions

SPEC = """\
version: 1
service: web
alerts:
  - signal: custom
    name: WebDown
    expr: sum(rate(foo{job="w"}[5m])) by (x) >
    severity: critical
  - signal: disk_await
    threshold: 5ms
    matchers: 'device="a" job="b"'
    severity: warning
recordings:
  - record: web:x
    expr: |
      sum by (job) (
        rate(foo[5m)
      )
  - record: web:y
    expr: 'foo offset'
slos:
  - name: avail
    objective: 99%
    window: 28d
    sli:
      events:
        errors: sum(rate(err[{{.window}}])) by (
        total: sum(rate(total[{{.window}}]))
"""
# promtool 2.42 and 3.5 differ in one reason: an offset without its duration
OFFSET = "expected duration" if ON_PROMETHEUS_2 else "expected number or duration"
WITH_PROMTOOL = (
    "specs/web.yaml:6:47: alerts[0].expr: invalid PromQL: 1:37: parse error: unexpected end "
    "of input",
    'specs/web.yaml:10:15: alerts[1].matchers: invalid label matchers device="a" job="b": '
    '1:12: parse error: unexpected identifier "job" in label matching, expected "," or "}"',
    "specs/web.yaml:16:20: recordings[0].expr: invalid PromQL: 2:14: parse error: "
    'unexpected ")" in subquery or range, expected ":" or "]"',
    "specs/web.yaml:19:22: recordings[1].expr: invalid PromQL: 1:11: parse error: "
    f"unexpected end of input in offset, {OFFSET}",
    "specs/web.yaml:26:17: slos[0].sli.events.errors: invalid PromQL (with the window 5m): "
    "1:24: parse error: unclosed left parenthesis",
)
WITHOUT_PROMTOOL = (
    "specs/web.yaml:6:11: alerts[0].expr: invalid PromQL: invalid promql query",
    'specs/web.yaml:10:15: alerts[1].matchers: invalid label matchers: device="a" job="b"',
    "specs/web.yaml:14:11: recordings[0].expr: invalid PromQL: unexpected character inside "
    "brackets: ')'",
    "specs/web.yaml:19:11: recordings[1].expr: invalid PromQL: unexpected end of input in "
    "offset, expected duration",
    "specs/web.yaml:26:17: slos[0].sli.events.errors: invalid PromQL (with the window 5m): "
    "unclosed left parenthesis",
)


@pytest.fixture(autouse=True)
def _asked_afresh() -> None:
    """promtool's answers are remembered per process: each test asks its own promtool."""
    promql.promtool_parse_error.cache_clear()


def test_promtool_position_and_reason(in_tmp: Path, cli: Cli) -> None:
    write_tree(in_tmp, {"specs/web.yaml": for_stack(SPEC)})
    result = cli("validate")
    assert result.code == 2
    assert result.err.splitlines() == list(spec_errors(*WITH_PROMTOOL))


def test_without_promtool_the_python_parsers_message(
    in_tmp: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RULEGEN_PROMTOOL", str(in_tmp / "no-promtool"))
    write_tree(in_tmp, {"specs/web.yaml": for_stack(SPEC)})
    result = cli("build", "--no-validate")
    assert result.code == 2
    assert result.err.splitlines() == list(spec_errors(*WITHOUT_PROMTOOL))
    assert not (in_tmp / "rules").exists()


def test_an_expression_promtool_accepts_keeps_the_python_message() -> None:
    """A parser difference (promtool parses what the Python parser refuses) must not hide
    the refusal: the Python parser's message stands."""
    assert promql.promtool_parse_error("sum(up)") is None
    assert promql.syntax_error("sum(up)") is None


STYLES = """\
version: 1
service: web
alerts:
  - signal: custom
    name: Plain
    expr: sum(rate(foo{job="w"}[5m])) by (x) >
    severity: warning
  - signal: custom
    name: Quoted
    expr: 'sum(rate(foo{job=''w''}[5m])) by (x) >'
    severity: warning
  - signal: custom
    name: Block
    expr: |
      sum(rate(foo{job="w"}[5m]))
        by (x) > on
    severity: warning
  - signal: custom
    name: Escaped
    expr: "sum(rate(foo{job=\\"w\\"}[5m])) by (x) >"
    severity: warning
"""


def test_the_parser_position_is_mapped_to_the_spec_line_and_column(cli: Cli, in_tmp: Path) -> None:
    write_tree(in_tmp, {"specs/web.yaml": for_stack(STYLES)})
    result = cli("validate")
    assert result.code == 2
    places = [line.split(": ", 2)[:2] for line in result.err.splitlines()[:-1]]
    # the character right after each expression (promtool: "unexpected end of input")
    assert places == [
        ["specs/web.yaml:6:47", "alerts[0].expr"],
        ["specs/web.yaml:10:50", "alerts[1].expr"],  # at the closing quote
        ["specs/web.yaml:16:20", "alerts[2].expr"],  # after the block's last line
        ["specs/web.yaml:20:50", "alerts[3].expr"],  # the closing quote, past two escapes
    ], result.err
