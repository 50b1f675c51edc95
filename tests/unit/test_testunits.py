"""A test file cut into units: each case (or part of a case) with the rules it can observe.

Why: the cut is only sound if no rule a check can observe is left out; these tests pin what
each kind of read keeps (recordings by name, alerts through ``ALERTS`` with their static
labels, alert_rule_test with its annotations' queries) and that anything not understood keeps
every rule. ``tests/pipeline/test_units_promtool.py`` runs units against promtool.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import yaml

from rulegen.pipeline import testunits

RULES = """
groups:
  - name: g
    interval: 1m
    query_offset: 30s
    rules:
      - record: a:rate5m
        expr: sum(rate(a_total[5m]))
      - record: a:rate1h
        expr: sum(rate(a_total[1h]))
      - record: b:rate5m
        expr: sum(rate(b_total[5m]))
      - record: budget
        expr: 1 - a:rate1h
      - alert: Burn
        expr: a:rate5m > 1
        labels: {severity: critical}
        annotations:
          summary: 'left {{ with query `budget` }}{{ . | first | value }}{{ end }}'
      - alert: Burn
        expr: a:rate1h > 1
        labels: {severity: warning}
      - alert: Other
        expr: b:rate5m > 1
"""


def _test(*cases: dict[str, Any]) -> str:
    return yaml.safe_dump(
        {"rule_files": ["rules.yml"], "evaluation_interval": "1m", "tests": list(cases)}
    )


def _case(name: str, **checks: Any) -> dict[str, Any]:
    series = [{"series": "a_total", "values": "0+1x10"}, {"series": "b_total", "values": "0x10"}]
    return {"name": name, "interval": "1m", "input_series": series, **checks}


def _expr(expr: str, at: str = "5m") -> dict[str, Any]:
    return {"expr": expr, "eval_time": at, "exp_samples": []}


def _units(tmp_path: Path, test: str, rules: str = RULES) -> list[testunits.Unit]:
    (tmp_path / "rules.yml").write_text(textwrap.dedent(rules))
    (tmp_path / "t.yml").write_text(test)
    found = testunits.split(tmp_path, "t.yml")
    assert found is not None
    return found


def _kept(unit: testunits.Unit) -> list[str]:
    rules = yaml.safe_load(dict(unit.files)["rules-0.yml"])
    return [r.get("record") or f"{r['alert']}/{r['labels'].get('severity', '')}"
            if "alert" in r and r.get("labels") else r.get("record") or r["alert"]
            for g in rules["groups"] for r in g["rules"]]  # fmt: skip


def test_a_check_keeps_what_it_reads_through_recordings(tmp_path: Path) -> None:
    [unit] = _units(tmp_path, _test(_case("c", promql_expr_test=[_expr("budget")])))
    assert _kept(unit) == ["a:rate1h", "budget"]
    assert not unit.whole


def test_alerts_series_keep_only_alerts_their_labels_allow(tmp_path: Path) -> None:
    page = _expr('ALERTS{alertname="Burn", severity="critical"}')
    [unit] = _units(tmp_path, _test(_case("c", promql_expr_test=[page])))
    # the annotation's query (budget) cannot change an ALERTS series
    assert _kept(unit) == ["a:rate5m", "Burn/critical"]
    any_burn = _expr('ALERTS{alertname="Burn"}')
    [unit] = _units(tmp_path, _test(_case("c", promql_expr_test=[any_burn])))
    assert _kept(unit) == ["a:rate5m", "a:rate1h", "Burn/critical", "Burn/warning"]


def test_an_alert_rule_test_keeps_every_rule_of_the_alert_and_its_annotations_reads(
    tmp_path: Path,
) -> None:
    check = {"alertname": "Burn", "eval_time": "5m", "exp_alerts": []}
    [unit] = _units(tmp_path, _test(_case("c", alert_rule_test=[check])))
    assert _kept(unit) == ["a:rate5m", "a:rate1h", "budget", "Burn/critical", "Burn/warning"]


def test_any_alerts_series_keeps_every_alert_and_a_nameless_selector_every_rule(
    tmp_path: Path,
) -> None:
    [unit] = _units(tmp_path, _test(_case("c", promql_expr_test=[_expr("ALERTS")])))
    assert _kept(unit) == [
        "a:rate5m", "a:rate1h", "b:rate5m", "Burn/critical", "Burn/warning", "Other",
    ]  # fmt: skip
    [unit] = _units(tmp_path, _test(_case("c", promql_expr_test=[_expr('{__name__=~"a.*"}')])))
    assert unit.whole


def test_a_template_query_that_is_not_literal_keeps_everything(tmp_path: Path) -> None:
    rules = RULES.replace("query `budget`", 'query (printf "%s" $labels.x)')
    check = {"alertname": "Burn", "eval_time": "5m", "exp_alerts": []}
    [unit] = _units(tmp_path, _test(_case("c", alert_rule_test=[check])), rules)
    assert unit.whole


def test_numbers_printed_into_a_query_are_understood() -> None:
    text = '{{ $left := . | first | value }}{{ query (printf "%v * 10 / %v" $left $value) }}'
    assert testunits.template_queries(text) == ["0 * 10 / 0"]
    quoted = "{{ query (printf `up{job=%[1]q} > %v` $labels.job $value) }}"
    assert testunits.template_queries(quoted) == ['up{job="x"} > 0']
    for unknown in (
        '{{ query (printf "%v" $labels.metric) }}',  # a string could be a metric name
        '{{ query (printf "%s_total" "up") }}',
        "{{ query $labels.q }}",
        '{{ query "up{a=\\"\\n\\"}" }}',
    ):
        assert testunits.template_queries(unknown) is None, unknown


def test_a_case_is_cut_by_closure_when_that_is_cheaper(tmp_path: Path) -> None:
    late = _expr("a:rate5m", "3d")
    early = _expr("budget", "1m")
    [case] = yaml.safe_load(_test(_case("c", promql_expr_test=[late, early])))["tests"]
    units = _units(tmp_path, _test(case))
    # two closures: merging would evaluate `budget` and `a:rate1h` over 3 days of steps, not 2
    assert sorted(_kept(u) for u in units) == [["a:rate1h", "budget"], ["a:rate5m"]]
    for unit in units:
        [part] = yaml.safe_load(dict(unit.files)["test.yml"])["tests"]
        assert part["name"] == "c"
        assert part["input_series"] == case["input_series"]
    same_time = _units(
        tmp_path, _test(_case("c", promql_expr_test=[late, _expr("a:rate1h", "3d")]))
    )
    assert len(same_time) == 1  # one run costs less than two of about the same size


def test_cases_with_one_closure_share_a_unit_and_groups_keep_their_settings(
    tmp_path: Path,
) -> None:
    one, two = (
        _case("one", promql_expr_test=[_expr("b:rate5m")]),
        _case("two", promql_expr_test=[_expr("b:rate5m", "7m")]),
    )
    [unit] = _units(tmp_path, _test(one, two))
    assert unit.titles == ("one", "two")
    [group] = yaml.safe_load(dict(unit.files)["rules-0.yml"])["groups"]
    assert (group["name"], group["interval"], group["query_offset"]) == ("g", "1m", "30s")
    test = yaml.safe_load(dict(unit.files)["test.yml"])
    assert (test["rule_files"], test["evaluation_interval"]) == (["rules-0.yml"], "1m")


def test_files_it_cannot_read_with_certainty_run_whole(tmp_path: Path) -> None:
    (tmp_path / "rules.yml").write_text(textwrap.dedent(RULES))
    (tmp_path / "glob.yml").write_text(_test().replace("rules.yml", "rules*.yml"))
    assert testunits.split(tmp_path, "glob.yml") is None
    (tmp_path / "missing.yml").write_text(_test().replace("rules.yml", "nope.yml"))
    assert testunits.split(tmp_path, "missing.yml") is None
    (tmp_path / "bad.yml").write_text(_test(_case("c", promql_expr_test=[_expr("sum(")])))
    assert testunits.split(tmp_path, "bad.yml") is None


def test_a_recording_named_like_the_alerts_series_runs_whole(tmp_path: Path) -> None:
    rules = RULES.replace("record: budget", "record: ALERTS")
    (tmp_path / "rules.yml").write_text(textwrap.dedent(rules))
    (tmp_path / "t.yml").write_text(_test(_case("c", promql_expr_test=[_expr("ALERTS")])))
    assert testunits.split(tmp_path, "t.yml") is None
