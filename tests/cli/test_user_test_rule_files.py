"""A test of your own whose ``rule_files`` matches no generated file (its service renamed or
removed) is refused before promtool runs, naming the entry, instead of promtool's bare
``got: []``; entries that match (plain, ``*`` globs) pass."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult, for_stack, spec_errors, write_tree

pytestmark = pytest.mark.slow  # the build asks promtool for its version first

Cli = Callable[..., CliResult]

SPEC = """\
version: 1
service: web
alerts:
  - {signal: custom, name: WebDown, expr: 'up{job="web"} == 0', severity: critical}
"""
TEST = """\
rule_files:
  - {rule_file}
tests:
  - input_series: [{{series: 'up{{job="web"}}', values: '1x5'}}]
    alert_rule_test:
      - {{eval_time: 1m, alertname: WebDown, exp_alerts: []}}
"""


def _tree(root: Path, rule_file: str) -> None:
    write_tree(
        root,
        {
            "specs/web.yaml": for_stack(SPEC),
            "specs/tests/web.test.yml": TEST.format(rule_file=rule_file),
        },
    )


def test_a_renamed_service_leaves_a_rule_file_that_matches_nothing(in_tmp: Path, cli: Cli) -> None:
    """Here promtool would even pass: a test that expects nothing to fire, loading nothing."""
    _tree(in_tmp, "../prometheus/shop.rules.yml")
    result = cli("build")
    assert result.code == 2
    assert result.err.splitlines() == list(
        spec_errors(
            "specs/tests/web.test.yml:2:5: rule_files[0]: ../prometheus/shop.rules.yml matches "
            "no rule file of this build (it writes ../prometheus/web.rules.yml); was its "
            "service renamed or removed? promtool would load nothing and report `got: []`"
        )
    )
    assert not (in_tmp / "rules").exists()


@pytest.mark.parametrize("rule_file", ["../prometheus/web.rules.yml", "../prometheus/*.yml"])
def test_matching_rule_files_run(in_tmp: Path, cli: Cli, rule_file: str) -> None:
    _tree(in_tmp, rule_file)
    result = cli("build")
    assert result.code == 0, result.err
    assert "promtool test rules: 1 file(s) passed" in result.out  # the user test alone
