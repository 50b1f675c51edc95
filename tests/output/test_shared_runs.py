"""Generated test cases share a promtool run only when they cannot see each other's series.

The unit tests give the rule of ``rulegen.testruns`` case by case (what merges, what does not
and why); the promtool tests prove that the example's merged test file stays as sharp as one
case per alert: every catalog alert's threshold moved at once fails the run, naming every one
of those alerts, in both directions.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest
import yaml
from conftest import REPO, example_spec
from support.alert_mutants import NAMES

from rulegen.build import build
from rulegen.catalog import load_catalog
from rulegen.errors import FieldPath
from rulegen.generated import (
    AlertCheck,
    AlertRule,
    Comparison,
    ExprCheck,
    Expression,
    InputSeries,
    RecordingRule,
    RuleGroup,
    Threshold,
    Verbatim,
)
from rulegen.generated import TestCase as Case
from rulegen.load import SpecInputs
from rulegen.source.loader import Origin
from rulegen.testruns import shared_runs
from rulegen.units import literal

HERE = Origin("spec.yaml", 1, 1, FieldPath(("alerts",)))


def _alert(name: str, expr: str) -> AlertRule:
    return AlertRule(name, Verbatim(expr), Decimal(0), (), (), HERE)


def _case(name: str, *series: str, checks: tuple[str, ...] = (), exprs: tuple[str, ...] = (),
          interval: int = 15, evaluations: int = 10) -> Case:  # fmt: skip
    return Case(
        name, Decimal(interval), tuple(InputSeries(s, "1x10") for s in series),
        tuple(AlertCheck("1m", a, (), "") for a in checks),
        tuple(ExprCheck("1m", e, (), "") for e in exprs), evaluations,
    )  # fmt: skip


GROUPS = (
    RuleGroup("g", Decimal(15), (
        RecordingRule("job:a:rate", "sum by (job) (rate(a_total[1m]))", (), HERE),
        _alert("AHigh", "job:a:rate > 1"),
        AlertRule("BHigh", Comparison(Expression("b"), ">", Threshold(Decimal(1), "number")),
                  Decimal(0), (), (), HERE),
        _alert("BothHigh", 'ALERTS{alertname="AHigh"} and on () b > 2'),
        _alert("AnyName", '{__name__=~"c.*"} > 1'),
    )),
)  # fmt: skip


def _names(cases: tuple[Case, ...]) -> list[str]:
    return [c.name for c in cases]


def test_cases_on_disjoint_metrics_share_one_run_in_order() -> None:
    a = _case("a", 'a_total{job="x"}', checks=("AHigh",), evaluations=10)
    b = _case("b", 'b{job="x"}', checks=("BHigh",), evaluations=30)
    (merged,) = shared_runs((a, b), GROUPS)
    assert merged.name == "a | b"
    assert merged.series == a.series + b.series
    assert merged.alert_checks == a.alert_checks + b.alert_checks
    assert merged.evaluations == 30


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (_case("feeds what the other's alert reads through a recording", 'a_total{job="y"}'),
         _case("checks AHigh", 'b{job="x"}', checks=("AHigh",))),
        (_case("feeds b", 'b{job="y"}'),
         _case("checks an alert reading ALERTS of AHigh and b", 'd', checks=("BothHigh",))),
        (_case("feeds a_total", 'a_total{job="y"}'),
         _case("reads ALERTS{AHigh} in an expression", "d",
               exprs=('ALERTS{alertname="AHigh", alertstate="pending"}',))),
        (_case("feeds the same metric", 'd{job="y"}'), _case("also feeds it", 'd{job="z"}')),
        (_case("feeds c1", "c1"), _case("checks an alert without a metric name", "d",
                                         checks=("AnyName",))),
        (_case("feeds e", "e"), _case("reads every alert's series", "d", exprs=("ALERTS",))),
        (_case("every 15s", "e"), _case("every 1m", "d", interval=60)),
    ],
    ids=lambda c: c.name,
)  # fmt: skip
def test_cases_that_could_see_each_other_keep_their_own_runs(first: Case, second: Case) -> None:
    assert _names(shared_runs((first, second), GROUPS)) == [first.name, second.name]
    assert _names(shared_runs((second, first), GROUPS)) == [second.name, first.name]


def test_a_case_joins_the_first_run_it_fits() -> None:
    a = _case("a", "a_total", checks=("AHigh",))
    a2 = _case("a2", 'a_total{job="2"}', checks=("AHigh",))
    b = _case("b", "b", checks=("BHigh",))
    assert _names(shared_runs((a, a2, b), GROUPS)) == ["a | b", "a2"]


# --- the example's merged file under promtool -------------------------------------------------

# the threshold of a catalog alert: at the end, or before label_replace's arguments
THRESHOLD = re.compile(r" ([<>]) (-?[0-9][0-9.e+-]*)(?=, \"host\"|$)")


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("example")
    (folder / "spec.yaml").write_text(yaml.safe_dump(example_spec()))
    result = build(SpecInputs((folder / "spec.yaml",), ()), load_catalog([REPO / "signals"]))
    for name, text in result.files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def _moved(expr: str, away: bool) -> str:
    match = THRESHOLD.search(expr)
    assert match, expr
    op, value = match.group(1), Decimal(match.group(2))
    grow = away == (op == ">")
    moved = (value * 2 if grow else value * Decimal("0.8")) if value else Decimal(1 if grow else -1)
    return expr[: match.start()] + f" {op} {literal(moved)}" + expr[match.end() :]


def _failing(folder: Path, tmp_path: Path, away: bool | None) -> set[str]:
    out = tmp_path / "out"
    shutil.copytree(folder, out)
    rules = out / "prometheus/deepseek-v4.rules.yml"
    data = yaml.safe_load(rules.read_text())
    for group in data["groups"]:
        for rule in group["rules"]:
            if away is not None and rule.get("alert") in NAMES:
                rule["expr"] = _moved(rule["expr"], away)
    rules.write_text(yaml.safe_dump(data, sort_keys=False))
    proc = subprocess.run(
        ["promtool", "test", "rules", "tests/deepseek-v4.test.yml"],
        cwd=out, capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert proc.returncode in (0, 1), proc.stderr
    found = re.findall(
        r'alertname: ([A-Za-z]+)|ALERTS\{alertname="([A-Za-z]+)"', proc.stdout + proc.stderr
    )
    return {a or b for a, b in found} | ({"<failed>"} if proc.returncode else set())


@pytest.mark.skipif(shutil.which("promtool") is None, reason="needs promtool")
@pytest.mark.slow
def test_the_example_shares_runs_and_every_moved_threshold_fails_its_alert(
    example: Path, tmp_path: Path
) -> None:
    tests = yaml.safe_load((example / "tests/deepseek-v4.test.yml").read_text())["tests"]
    assert len(tests) < len(NAMES) / 3
    assert _failing(example, tmp_path / "as built", None) == set()
    for away in (True, False):
        failing = _failing(example, tmp_path / f"away={away}", away)
        assert set(NAMES) | {"<failed>"} <= failing, sorted(set(NAMES) - failing)
