"""``rulegen build --junit FILE``: promtool's JUnit XML report of every test file, in one file.

Why: CI systems show a JUnit report test by test; promtool writes one per run (2.55 on) and
rulegen runs one promtool per test file, so the reports are merged, written also when a test
fails (that is when it is read), and refused in one line by a promtool too old to write it.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import REPO, CliResult, write_tree

Cli = Callable[..., CliResult]
SYSTEM_PROMTOOL = Path("/usr/bin/promtool")  # Debian bookworm: 2.42, no --junit
CURRENT_PROMTOOL = REPO / ".tools" / "forky" / "root" / "usr" / "bin" / "promtool"
SPEC = """
    version: 1
    service: web
    alerts:
      - {signal: disk_await, threshold: 5ms, severity: warning}
      - signal: custom
        name: QueueLong
        expr: queue_length > 10
        severity: warning
    """
# A test of the user's own that fails: the report must still be written, and say so.
FAILING = """
    rule_files: [../prometheus/web.rules.yml]
    evaluation_interval: 1m
    tests:
      - name: a queue that never grows
        interval: 1m
        input_series:
          - {series: 'queue_length{service="web"}', values: '1x10'}
        alert_rule_test:
          - {eval_time: 5m, alertname: QueueLong, exp_alerts: [{exp_labels: {severity: warning}}]}
    """

pytestmark = pytest.mark.slow


def _suites(report: Path) -> dict[str, tuple[int, int]]:
    root = ElementTree.parse(report).getroot()
    assert root.tag == "testsuites"
    return {
        str(s.get("name")): (int(s.get("tests", "0")), int(s.get("failures", "0"))) for s in root
    }


# the tests run with the 3.5 promtool on either stack, so their specs say so
CURRENT_SPEC = SPEC.replace("service: web", 'service: web\n    prometheus: {version: "3.5"}')


@pytest.fixture
def current(monkeypatch: pytest.MonkeyPatch) -> None:
    if not CURRENT_PROMTOOL.is_file():
        pytest.skip("needs the 3.5 LTS promtool (make tools)")
    monkeypatch.setenv("RULEGEN_PROMTOOL", str(CURRENT_PROMTOOL))


@pytest.mark.usefixtures("current")
def test_the_report_holds_every_test_file(in_tmp: Path, cli: Cli) -> None:
    write_tree(in_tmp, {"specs/web.yaml": CURRENT_SPEC})
    result = cli("build", "--junit", "reports/junit.xml")
    assert result.code == 0, result.err
    suites = _suites(in_tmp / "reports" / "junit.xml")
    assert list(suites) == ["tests/web.test.yml"]
    assert suites["tests/web.test.yml"][1] == 0
    assert suites["tests/web.test.yml"][0] >= 1


@pytest.mark.usefixtures("current")
def test_a_failing_test_is_in_the_report_and_nothing_else_is_written(
    in_tmp: Path, cli: Cli
) -> None:
    write_tree(in_tmp, {"specs/web.yaml": CURRENT_SPEC, "specs/tests/queue.test.yml": FAILING})
    result = cli("build", "--junit", "junit.xml")
    assert result.code == 1
    suites = _suites(in_tmp / "junit.xml")
    assert sorted(suites) == ["tests/queue.test.yml", "tests/web.test.yml"]
    assert suites["tests/queue.test.yml"] == (1, 1)
    assert suites["tests/web.test.yml"][1] == 0
    assert not (in_tmp / "rules").exists()
    assert [p.name for p in in_tmp.iterdir() if p.name.startswith(".")] == []


def test_an_old_promtool_is_one_line_and_exit_2(
    in_tmp: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not SYSTEM_PROMTOOL.is_file():
        pytest.skip("needs Debian bookworm's promtool 2.42 (apt-get install prometheus)")
    declared = SPEC.replace("service: web", 'service: web\n    prometheus: {version: "2.42"}')
    write_tree(in_tmp, {"specs/web.yaml": declared})
    monkeypatch.setenv("RULEGEN_PROMTOOL", str(SYSTEM_PROMTOOL))
    result = cli("build", "--junit", "junit.xml")
    assert (result.code, result.out) == (2, "")
    assert result.err == (
        "rulegen: error: --junit needs promtool 2.55 or later, which writes the report; "
        "promtool is 2.42.0 (set RULEGEN_PROMTOOL or PATH to a newer one, or drop --junit)\n"
    )
    assert not (in_tmp / "junit.xml").exists()
    assert not (in_tmp / "rules").exists()


def test_junit_without_validation_is_refused(in_tmp: Path, cli: Cli) -> None:
    write_tree(in_tmp, {"specs/web.yaml": SPEC})
    result = cli("build", "--no-validate", "--junit", "junit.xml")
    assert (result.code, result.out) == (2, "")
    assert result.err == (
        "rulegen: error: --junit reports the tests that --no-validate skips: drop one\n"
    )
