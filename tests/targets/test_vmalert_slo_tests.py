"""The SLOs' generated tests for vmalert: the files written per SLO, what their expectations
take from vmalert and VictoriaMetrics (group labels, the stored value of a float, MetricsQL's
coverage), the checks left out for rules that read late, and the fallback sums that keep the
group labels.

The mutation suite of these tests is ``test_vmalert_tool_slo_mutations.py``; the example's
files run in vmalert-tool in ``test_the_example_slo_files_pass_vmalert_tool`` below.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import REPO, example_spec, write_tree
from support.vmtool import NEEDS_VMALERT_TOOL, run_unittest

from rulegen.build import build
from rulegen.catalog import load_catalog
from rulegen.core.vmdecimal import stored
from rulegen.generated import ExprCheck
from rulegen.load import SpecInputs, discover
from rulegen.pipeline.vmalert_slo import Late, late_by_group
from rulegen.render.vmalert_tests import vmalert_tests_file
from rulegen.slo.coverage import term_counts
from rulegen.slo.windows import Term
from rulegen.validate.targets import run_vmalert_tests

SPEC = """\
version: 1
service: shop
evaluation_interval: 1m
targets:
  victoriametrics: {labels: {ruler: vm-a}}
slos:
  - name: checkout
    objective: 99.9%
    window: 7d
    sli:
      ratio:
        errors: 'http_requests_total{code=~"5.."}'
        total: 'http_requests_total'
  - name: search
    objective: 99%
    window: 7d
    sli:
      ratio:
        errors: 'search_total{code=~"5.."}'
        total: 'search_total'
"""


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        # what vmalert-tool returned for recordings of these values (1.145)
        (14 / 8640, 0.00162037037037),
        (0.5333333334000001, 0.5333333334),
        (9128 / 14400000, 0.0006338888888888),
        (0.5, 0.5),
        (12.0, 12.0),
        (0.0, 0.0),
        (-0.25, -0.25),
        (123456789.12345679, 123456789.12345678),
        (1e-9 / 3, 3.3333333333333e-10),
    ],
)
def test_a_float_comes_back_as_victoriametrics_stored_it(value: float, expected: float) -> None:
    assert stored(value) == expected


def test_the_checks_of_recordings_carry_the_group_labels_and_the_stored_value() -> None:
    own = '{service="shop", slo="checkout"}'
    check = ExprCheck(
        "1h5m",
        f"slo:sli_coverage:ratio{own}",
        ((f"slo:sli_coverage:ratio{own}", repr(14 / 8640)), ("{}", "1")),
        "coverage",
    )
    case = _case(check)
    data = vmalert_tests_file("../shop.rules.yml", Decimal(60), [case], {}, {"ruler": "vm-a"},
                              recorded=True)  # fmt: skip
    samples = data["tests"][0]["metricsql_expr_test"][0]["exp_samples"]
    assert samples == [
        {
            "labels": 'slo:sli_coverage:ratio{ruler="vm-a", service="shop", slo="checkout"}',
            "value": 0.00162037037037,
        },
        {"labels": "{}", "value": 1.0},
    ]
    plain = vmalert_tests_file("../shop.rules.yml", Decimal(60), [case], {}, {"ruler": "vm-a"})
    assert plain["tests"][0]["metricsql_expr_test"][0]["exp_samples"][0] == {
        "labels": f"slo:sli_coverage:ratio{own}",
        "value": 14 / 8640,
    }


def _case(check: ExprCheck) -> Any:
    from rulegen.generated import TestCase

    return TestCase("c", Decimal(60), (), (), (check,), 1)


def test_metricsql_counts_a_base_term_from_the_first_sample_and_none_for_an_empty_window() -> None:
    """``increase(x[5m])`` at 1m steps: Prometheus 2.x needs two samples in ``[k - 5m, k]``,
    MetricsQL one in ``(k - 5m, k]`` (the first sample of a series counts from 0)."""
    plan = {Decimal(300): (), Decimal(600): (Term(Decimal(300), Decimal(0)),
                                             Term(Decimal(300), Decimal(300)))}  # fmt: skip
    scraped = (True,) * 3 + (False,) * 7 + (True,) * 2
    step = Decimal(60)
    prometheus = term_counts(plan, Decimal(600), scraped, step)[Decimal(300)]
    metricsql = term_counts(plan, Decimal(600), scraped, step, metricsql=True)[Decimal(300)]
    assert prometheus[:1] == [None]
    assert metricsql[:1] == [1]
    # the gap is 3m..9m: (k - 5m, k] holds the 2m sample up to k = 6m and the 10m one from
    # k = 10m (MetricsQL); [k - 5m, k] holds two samples up to k = 6m, then from k = 11m
    assert [k for k, v in enumerate(metricsql) if v is None] == [7, 8, 9]
    assert [k for k, v in enumerate(prometheus) if v is None] == [0, 7, 8, 9, 10]


VM_FILE = {
    "groups": [
        {
            "name": "shop-slo-checkout",
            "rules": [
                {"record": "slo:sli_errors:increase7d", "expr": "sum(x)"},
                {
                    "record": "slo:sli_error:ratio_rate7d",
                    "expr": "# vmalert: 2 recording reads left as stored series to stay within "
                    "max_query_len=16384: reads one evaluation late\n"
                    'slo:sli_errors:increase7d{slo="checkout"} / 2',
                },
                {
                    "record": "slo:error_budget_remaining:ratio",
                    "expr": '1 - slo:sli_error:ratio_rate7d{slo="checkout"} offset 1m',
                },
                {
                    "alert": "ErrorBudgetBurn",
                    "expr": 'slo:sli_error:ratio_rate7d{slo="checkout"} > 1',
                    "labels": {"severity": "warning"},
                },
                {
                    "alert": "ErrorBudgetBurn",
                    "expr": 'slo:sli_errors:increase7d{slo="checkout"} > 1',
                    "labels": {"severity": "critical"},
                },
            ],
        },
        {"name": "other", "rules": [{"record": "r", "expr": "sum(x)"}]},
    ]
}


def test_a_rule_cut_by_max_query_len_and_every_reader_of_its_results_are_late() -> None:
    late = late_by_group(VM_FILE)
    assert late == {
        "shop-slo-checkout": Late(
            frozenset({"slo:sli_error:ratio_rate7d", "slo:error_budget_remaining:ratio"}),
            frozenset({("ErrorBudgetBurn", "warning")}),
        )
    }
    own = late["shop-slo-checkout"]
    alerts = 'ALERTS{alertname="ErrorBudgetBurn", severity="%s", slo="checkout"}'
    assert own.covers(ExprCheck("1m", alerts % "warning", (), ""))
    assert not own.covers(ExprCheck("1m", alerts % "critical", (), ""))
    assert own.covers(ExprCheck("1m", 'count(slo:error_budget_remaining:ratio{a="b"})', (), ""))
    assert not own.covers(ExprCheck("1m", 'slo:sli_errors:increase7d{a="b"}', (), ""))


def _built(root: Path, spec: str) -> dict[str, str]:
    write_tree(root, {"specs/shop.yaml": spec})
    files = build(discover([root / "specs"]), load_catalog(), targets=("victoriametrics",)).files
    return dict(files)


def test_each_slo_writes_its_vmalert_tool_files_with_its_own_group(in_tmp: Path) -> None:
    files = _built(in_tmp, SPEC)
    names = sorted(n for n in files if n.startswith("victoriametrics/tests/"))
    assert names == [
        "victoriametrics/tests/shop.slo.checkout.history.test.yml",
        "victoriametrics/tests/shop.slo.checkout.rules.yml",
        "victoriametrics/tests/shop.slo.checkout.test.yml",
        "victoriametrics/tests/shop.slo.search.history.test.yml",
        "victoriametrics/tests/shop.slo.search.rules.yml",
        "victoriametrics/tests/shop.slo.search.test.yml",
    ]
    service = yaml.safe_load(files["victoriametrics/shop.rules.yml"])["groups"]
    for slo in ("checkout", "search"):
        # the SLO's group alone, as the service's file holds it: the tests load it only
        own = yaml.safe_load(files[f"victoriametrics/tests/shop.slo.{slo}.rules.yml"])
        assert own == {"groups": [g for g in service if g["name"] == f"shop-slo-{slo}"]}
        data = yaml.safe_load(files[f"victoriametrics/tests/shop.slo.{slo}.test.yml"])
        assert data["rule_files"] == [f"shop.slo.{slo}.rules.yml"]
        assert data["evaluation_interval"] == "1m"
        alerts = [
            sample["labels"]
            for case in data["tests"]
            for check in case["metricsql_expr_test"]
            for sample in check["exp_samples"]
            if sample["labels"].startswith("ALERTS{")
        ]
        # both SLOs' alerts are called ErrorBudgetBurn: each file names its own SLO's group
        assert alerts
        assert all(f'alertgroup="shop-slo-{slo}"' in a for a in alerts)
        assert all('ruler="vm-a"' in a for a in alerts)
    history = yaml.safe_load(files["victoriametrics/tests/shop.slo.checkout.history.test.yml"])
    assert history["evaluation_interval"] == "5m"


def test_the_fallback_sums_keep_the_group_labels_vmalert_stores(in_tmp: Path) -> None:
    """Without ``ruler`` in the fallback's ``by``, ``or`` would not match it with the stored
    coarse term it stands in for, and the window would count that term twice."""
    files = _built(in_tmp, SPEC)
    vm = files["victoriametrics/shop.rules.yml"]
    assert "sum by (service, slo, ruler) (" in vm
    prometheus = files["prometheus/shop.slo.checkout.rules.yml"]
    assert "ruler" not in prometheus


def test_the_checks_of_late_rules_are_left_out_and_the_build_says_so(in_tmp: Path) -> None:
    files = _built(in_tmp, SPEC)
    vm = yaml.safe_load(files["victoriametrics/shop.rules.yml"])
    late = late_by_group(vm)["shop-slo-checkout"]
    assert "slo:error_budget_remaining:ratio" in late.recordings
    exprs = [
        check["expr"]
        for name, text in files.items()
        if name.startswith("victoriametrics/tests/shop.slo.checkout") and name.endswith(".test.yml")
        for case in yaml.safe_load(text)["tests"]
        for check in case["metricsql_expr_test"]
    ]
    # (a check that no derived series exists yet, by a __name__ regex, stays: a late rule
    # is absent one evaluation longer at the start, never present sooner)
    assert exprs
    assert not any("error_budget_remaining:ratio{" in e for e in exprs)
    assert any("slo:sli_coverage:ratio" in e for e in exprs)
    result = build(discover([in_tmp / "specs"]), load_catalog(), targets=("victoriametrics",))
    (note,) = [r for r in result.reports if r.startswith("victoriametrics: SLO checkout: ")]
    assert "slo:error_budget_remaining:ratio" in note
    assert "(max_query_len=16384), one evaluation late; their checks are left out" in note


@NEEDS_VMALERT_TOOL
def test_rules_longer_than_vmalert_tool_evaluates_leave_the_files_unrun(tmp_path: Path) -> None:
    long = {"groups": [{"name": "g", "rules": [{"record": "r", "expr": "x + " * 5000 + "x"}]}]}
    files = {
        "victoriametrics/shop.rules.yml": yaml.safe_dump(long),
        "victoriametrics/tests/shop.test.yml": "",
    }
    (summary,) = run_vmalert_tests(tmp_path, files)
    assert summary.startswith("warning: 1 victoriametrics test file(s) not run: ")
    assert "g/r is 20001 bytes" in summary
    assert "-search.maxQueryLen=16384" in summary


@pytest.mark.slow
@pytest.mark.long  # `make test-long` (CI), beside the vmalert-tool SLO suite: minutes of CPU
@NEEDS_VMALERT_TOOL
def test_the_example_slo_history_file_passes_vmalert_tool(tmp_path: Path) -> None:
    """The example's 30-day ratio SLO's history file for vmalert (its late rules' checks left
    out), whose slow burn needs the 1d terms and their fallbacks (where the double count of
    2026-12-05 showed), run as ``rulegen build`` writes it: against its SLO's group alone
    (``….slo.availability.rules.yml``, the group cut out of the service's file). The
    example's other SLO files are pinned by the golden files and passed ``rulegen build
    --target victoriametrics`` (docs/victoriametrics.md#slo-tests); each costs a minute of
    vmalert-tool, so they are not run again here."""
    spec = example_spec()
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    catalog = load_catalog([REPO / "signals"])
    result = build(SpecInputs((tmp_path / "spec.yaml",), ()), catalog, targets=("victoriametrics",))
    name = "victoriametrics/tests/deepseek-v4.slo.availability.history.test.yml"
    own = "victoriametrics/tests/deepseek-v4.slo.availability.rules.yml"
    (tmp_path / "victoriametrics/tests").mkdir(parents=True)
    for written in (name, own):
        (tmp_path / written).write_text(result.files[written])
    text = result.files[name]
    proc = run_unittest(tmp_path, name)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "SUCCESS" in out.split(), out[-3000:]
    assert "slow burn opens a ticket" in text
