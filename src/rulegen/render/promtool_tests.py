"""Generated test cases (``rulegen.generated.TestCase``) → a promtool unit-test file.

Why ``promtool_tests`` and not ``tests``: it renders promtool's test-file format; the code
that decides what a test checks is each feature's ``testgen``.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from rulegen import units
from rulegen.generated import TestCase


def tests_file(
    rule_file: str, evaluation_interval: Decimal, cases: tuple[TestCase, ...]
) -> dict[str, Any]:
    """The data of one promtool test file; ``rule_file`` is relative to the test file,
    ``evaluation_interval`` in seconds."""
    return {
        "rule_files": [rule_file],
        "evaluation_interval": units.format_duration(evaluation_interval),
        "tests": [_case(c) for c in cases],
    }


def _case(case: TestCase) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": case.name,
        "interval": units.format_duration(case.interval_seconds),
        "input_series": [{"series": s.series, "values": s.values} for s in case.series],
        "alert_rule_test": [
            {
                "eval_time": check.eval_time,
                "alertname": check.alertname,
                "exp_alerts": [
                    {"exp_labels": dict(a.labels), "exp_annotations": dict(a.annotations)}
                    for a in check.alerts
                ],
            }
            for check in case.alert_checks
        ],
    }
    if case.expr_checks:
        data["promql_expr_test"] = [
            {
                "expr": check.expr,
                "eval_time": check.eval_time,
                "exp_samples": [
                    {"labels": labels, "value": float(value)} for labels, value in check.samples
                ],
            }
            for check in case.expr_checks
        ]
    return data
