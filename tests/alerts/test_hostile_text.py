"""Hostile but legal text comes out literally, or is rejected clearly; never as code.

User text reaches two languages: PromQL (selectors, matchers) and Go templates (labels and
annotations, which Prometheus expands). Each test runs the full ``rulegen build``, promtool
included, so the generated promtool tests (exact expanded labels and annotations) run, and
then checks the written YAML. A hand-written promtool test (shipped next to the spec, so the
build runs it) is the independent proof that ``{{ $value }}`` arrives on the alert as text.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import CliResult, write_tree

Cli = Callable[..., CliResult]

pytestmark = pytest.mark.skipif(shutil.which("promtool") is None, reason="needs promtool")

# Spec-level labels reach every alert, so the custom alert carries them too.
HOSTILE_SPEC = r"""
version: 1
service: hostile
labels:
  team: '{{ $value }}'
  quote: 'say "hi" and ''bye'''
  backslash: 'C:\temp\new \{{ x }}'
  newline: "line1\nline2"
runbook_url: 'https://runbooks.example.com/{alert}?q={{.Foo}}'
selectors:
  node: 'job="no\"de", env=~"prod|stag.*"'
alerts:
  - signal: disk_await
    threshold: 5ms
    severity: warning
    matchers: 'device=~"nvme[0-9]+n1|sd[a-z]$", mountpoint!~"/(boot|run)/.*\\.x+"'
    labels:
      owner: 'a {{ .Foo }} b'
      closing: '}} {{- /* c */ -}}'
      go: '{{ template "x" . }}{{ end }}'
      tab: "a\tb"
      trailing: "a \nb"
      ctrl: "a\x01b\rc"
      unicode: "\ufeff\u200b\u2028🔥 {{"
      yamlish: '- *x: y #z'
    summary: 'literal {{ and {{ .Foo }} and {{ $value }} then {value}'
    description: 'Braces {} {{}} }} {{value}} {{{value}}} {labels.device} {nope} {{ "{" }}'
  - signal: custom
    name: HostileCustom
    expr: 'up{job="x"} == 0'
    severity: critical
    labels: {owner: '{{ $labels.job }}'}
    summary: '{{value}} and {value} and {{ $labels.job }}'
    description: '{labels.job} {alert} {service}'
"""

# What the spec's text must look like on the alert, after Prometheus expanded the templates.
LITERAL_SPEC_LABELS = {
    "team": "{{ $value }}",
    "quote": "say \"hi\" and 'bye'",
    "backslash": "C:\\temp\\new \\{{ x }}",
    "newline": "line1\nline2",
}
LITERAL_ALERT_LABELS = {
    "owner": "a {{ .Foo }} b",
    "closing": "}} {{- /* c */ -}}",
    "go": '{{ template "x" . }}{{ end }}',
    "tab": "a\tb",
    "trailing": "a \nb",
    "ctrl": "a\x01b\rc",
    "unicode": "\ufeff\u200b\u2028🔥 {{",
    "yamlish": "- *x: y #z",
}

# A user test, run by the build itself: promtool compares the *expanded* labels and annotations.
USER_TEST: dict[str, Any] = {
    "rule_files": ["../prometheus/hostile.rules.yml"],
    "evaluation_interval": "30s",
    "tests": [
        {
            "name": "hostile text arrives literally",
            "interval": "30s",
            "input_series": [{"series": 'up{job="x", instance="h:1"}', "values": "0 0 0"}],
            "alert_rule_test": [
                {
                    "eval_time": "1m",
                    "alertname": "HostileCustom",
                    "exp_alerts": [
                        {
                            "exp_labels": {
                                **LITERAL_SPEC_LABELS,
                                "owner": "{{ $labels.job }}",
                                "job": "x",
                                "instance": "h:1",
                                "service": "hostile",
                                "severity": "critical",
                            },
                            "exp_annotations": {
                                "summary": "{0} and 0 and {{ $labels.job }}",
                                "description": "x HostileCustom hostile",
                                "runbook_url": "https://runbooks.example.com/HostileCustom"
                                "?q={{.Foo}}",
                            },
                        }
                    ],
                }
            ],
        }
    ],
}

ESCAPE = '{{ "{" }}'
# The only Go-template actions rulegen may write: the escape, $value and $labels.NAME.
ALLOWED_ACTION = re.compile(
    r'\{\{ (?:"\{"|\$value(?: \| humanize[A-Za-z0-9]*)?|\$labels\.[A-Za-z_][A-Za-z0-9_]*) \}\}'
)


def _rules(root: Path, service: str) -> dict[str, Any]:
    """Alert name → rule, from the written rules file."""
    text = (root / "rules" / "prometheus" / f"{service}.rules.yml").read_text("utf-8")
    data = yaml.safe_load(text)
    return {
        rule.get("alert") or rule["record"]: rule
        for group in data["groups"]
        for rule in group["rules"]
    }


def _generated_expectation(root: Path, service: str, alert: str) -> dict[str, Any]:
    """The first firing expectation of ``alert`` in the generated promtool test."""
    text = (root / "rules" / "tests" / f"{service}.test.yml").read_text("utf-8")
    for case in yaml.safe_load(text)["tests"]:
        for check in case.get("alert_rule_test", []):
            if check["alertname"] == alert and check["exp_alerts"]:
                expected: dict[str, Any] = check["exp_alerts"][0]
                return expected
    raise AssertionError(f"no firing expectation for {alert}")


def _unexpected_actions(template: str) -> list[str]:
    """Every ``{{`` that does not start an action rulegen is allowed to write."""
    rest = ALLOWED_ACTION.sub("", template)
    return [rest[m.start() : m.start() + 20] for m in re.finditer(r"\{\{", rest)]


def _build_hostile(root: Path, cli: Cli) -> CliResult:
    write_tree(root, {"specs/hostile.yaml": HOSTILE_SPEC})
    tests = root / "specs" / "tests" / "literal.test.yml"
    tests.parent.mkdir(parents=True, exist_ok=True)
    tests.write_text(yaml.safe_dump(USER_TEST, allow_unicode=True, sort_keys=False), "utf-8")
    return cli("build")


@pytest.fixture
def hostile_build(in_tmp: Path, cli: Cli) -> Path:
    result = _build_hostile(in_tmp, cli)
    assert result.code == 0, result.err
    assert result.err == ""
    # the generated test and the hand-written literal.test.yml both passed in promtool
    assert "promtool test rules: 2 file(s) passed" in result.out
    return in_tmp


@pytest.mark.slow
def test_every_label_and_annotation_is_a_template_the_user_did_not_write(
    hostile_build: Path,
) -> None:
    for name, rule in _rules(hostile_build, "hostile").items():
        if "alert" not in rule:
            continue
        for key, value in {**rule["labels"], **rule["annotations"]}.items():
            assert _unexpected_actions(value) == [], f"{name} {key}: {value!r}"


@pytest.mark.slow
def test_spec_and_alert_labels_are_escaped_in_the_rules(hostile_build: Path) -> None:
    rules = _rules(hostile_build, "hostile")
    labels = rules["DiskAwaitHigh"]["labels"]
    assert labels["team"] == ESCAPE + "{ $value }}"
    assert labels["go"] == ESCAPE + '{ template "x" . }}' + ESCAPE + "{ end }}"
    assert labels["backslash"] == "C:\\temp\\new \\" + ESCAPE + "{ x }}"
    assert labels["quote"] == "say \"hi\" and 'bye'"
    assert labels["newline"] == "line1\nline2"
    assert labels["unicode"] == "\ufeff\u200b\u2028🔥 " + ESCAPE + "{"
    assert rules["HostileCustom"]["labels"]["owner"] == ESCAPE + "{ $labels.job }}"


@pytest.mark.slow
def test_generated_test_expects_every_label_exactly_as_written(hostile_build: Path) -> None:
    expected = _generated_expectation(hostile_build, "hostile", "DiskAwaitHigh")
    labels = expected["exp_labels"]
    for key, value in {**LITERAL_SPEC_LABELS, **LITERAL_ALERT_LABELS}.items():
        assert labels[key] == value, key
    # the series matched the hostile selector: its label value keeps the quote
    assert labels["job"] == 'no"de'


@pytest.mark.slow
def test_summary_with_literal_braces_and_go_syntax_is_printed_as_written(
    hostile_build: Path,
) -> None:
    rule = _rules(hostile_build, "hostile")["DiskAwaitHigh"]
    assert rule["annotations"]["summary"] == (
        "literal " + ESCAPE + "{ and " + ESCAPE + "{ .Foo }} and " + ESCAPE + "{ $value }} "
        "then {{ $value | humanizeDuration }}"
    )
    annotations = _generated_expectation(hostile_build, "hostile", "DiskAwaitHigh")[
        "exp_annotations"
    ]
    assert annotations["summary"] == "literal {{ and {{ .Foo }} and {{ $value }} then 5.5ms"
    assert annotations["description"] == (
        'Braces {} {{}} }} {5.5ms} {{5.5ms}} nvme0n1 {nope} {{ "{" }}'
    )
    assert annotations["runbook_url"] == "https://runbooks.example.com/DiskAwaitHigh?q={{.Foo}}"


@pytest.mark.slow
def test_selector_with_an_escaped_quote_and_regex_matchers_reach_promql_verbatim(
    hostile_build: Path,
) -> None:
    rules = _rules(hostile_build, "hostile")
    record = rules["instance_device:node_disk_await_seconds:rate1m"]["expr"]
    selector = (
        '{job="no\\"de", env=~"prod|stag.*", device=~"nvme[0-9]+n1|sd[a-z]$", '
        'mountpoint!~"/(boot|run)/.*\\\\.x+"}'
    )
    assert record.count(selector) == 4, record
    assert "vector(" not in record
    assert rules["HostileCustom"]["expr"] == 'up{job="x"} == 0'


@pytest.mark.slow
def test_promtool_really_expands_an_unescaped_label(tmp_path: Path) -> None:
    """The control: without rulegen's escaping, the literal expectation above would fail."""
    write_tree(
        tmp_path,
        {
            "raw.rules.yml": """
                groups:
                  - name: raw
                    rules:
                      - alert: Raw
                        expr: up == 0
                        labels: {team: '{{ $value }}'}
                """,
            "raw.test.yml": """
                rule_files: [raw.rules.yml]
                tests:
                  - interval: 30s
                    input_series:
                      - {series: 'up{job="x"}', values: '0 0 0'}
                    alert_rule_test:
                      - eval_time: 1m
                        alertname: Raw
                        exp_alerts:
                          - exp_labels: {job: x, team: '{{ $value }}'}
                """,
        },
    )
    promtool = shutil.which("promtool")
    assert promtool is not None
    proc = subprocess.run(
        [promtool, "test", "rules", "raw.test.yml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert proc.returncode == 1
    assert 'team="0"' in proc.stdout + proc.stderr


ESCAPES: Mapping[str, tuple[str, str]] = {
    "a matcher that closes the selector and appends PromQL is rejected": (
        "matchers",
        """device="x"} or vector(1) #""",
    ),
    "a matcher that breaks out with a newline is rejected": (
        "matchers",
        'device="x"\n} or vector(1)',
    ),
    "a matcher that closes a parenthesis instead of a brace is rejected": (
        "matchers",
        'device="x") or vector(1) or (up',
    ),
    "a matcher with a trailing comment is rejected": ("matchers", 'device="x" # }'),
    "a family selector that closes the selector is rejected": (
        "selector",
        """job="x"} or vector(1) #""",
    ),
    "a metric parameter that smuggles in an expression is rejected": (
        "metric",
        "up) or vector(1",
    ),
}


@pytest.mark.parametrize(("where", "text"), list(ESCAPES.values()), ids=list(ESCAPES))
def test_promql_escape_attempts_are_rejected_with_exit_2(
    where: str, text: str, in_tmp: Path, cli: Cli
) -> None:
    quoted = yaml.safe_dump(text, default_style='"').strip()
    alert = "  - signal: disk_utilization\n    threshold: 90%\n    severity: warning\n"
    if where == "selector":
        spec = f"version: 1\nservice: web\nselectors:\n  node: {quoted}\nalerts:\n{alert}"
        path, line = "selectors.node", 4
    else:
        spec = f"version: 1\nservice: web\nalerts:\n{alert}    {where}: {quoted}\n"
        path, line = f"alerts[0].{where}", 7
    write_tree(in_tmp, {"specs/web.yaml": spec, "rules/prometheus/x.rules.yml": "groups: []\n"})

    result = cli("build")

    assert result.code == 2
    first, summary = result.err.splitlines()
    assert first.startswith(f"specs/web.yaml:{line}:")
    assert f": {path}: " in first
    assert summary == "rulegen: 1 error(s); nothing written"
    assert result.out == ""
    assert sorted(p.name for p in (in_tmp / "rules").rglob("*")) == ["prometheus", "x.rules.yml"]


def _label_spec(value: str) -> str:
    quoted = yaml.safe_dump(value, default_style='"', allow_unicode=False).strip()
    return (
        "version: 1\nservice: web\nalerts:\n  - signal: kv_cache_usage\n    threshold: 95%\n"
        f"    severity: info\n    labels: {{odd: {quoted}}}\n"
    )


@pytest.mark.slow
def test_a_label_with_a_nel_keeps_it_literally(in_tmp: Path, cli: Cli) -> None:
    """U+0085 is a line break to YAML: it must be written escaped, not folded to a space."""
    write_tree(in_tmp, {"specs/web.yaml": _label_spec("a\x85b")})
    result = cli("build")
    assert result.code == 0, result.err
    assert _rules(in_tmp, "web")["KVCacheUsageHigh"]["labels"]["odd"] == "a\x85b"


def test_an_empty_label_value_is_rejected_at_the_label(in_tmp: Path, cli: Cli) -> None:
    write_tree(in_tmp, {"specs/web.yaml": _label_spec("")})
    result = cli("build")
    assert result.code == 2
    assert result.err.splitlines()[0] == (
        "specs/web.yaml:7:19: alerts[0].labels.odd: "
        "label value must not be empty (Prometheus drops empty labels)"
    )


@pytest.mark.parametrize(
    "matchers",
    [
        pytest.param(
            'device=~"x+?"',
            id="a lazy-quantifier regex matcher builds and its test passes",
        ),
        pytest.param(
            'device=""',
            id="an empty-value matcher (label absent) builds and its test passes",
        ),
    ],
)
@pytest.mark.slow
def test_legal_matcher_builds(matchers: str, in_tmp: Path, cli: Cli) -> None:
    write_tree(
        in_tmp,
        {
            "specs/web.yaml": f"""
                version: 1
                service: web
                alerts:
                  - signal: disk_await
                    threshold: 5ms
                    severity: warning
                    matchers: '{matchers}'
                """
        },
    )

    result = cli("build")

    assert result.code == 0, result.err
