"""Generated test cases → a ``vmalert-tool unittest`` file for the VictoriaMetrics target.

Why a renderer of its own: vmalert-tool reads promtool's test format with three differences
that change every expectation. ``promql_expr_test`` is called ``metricsql_expr_test``; each
``alert_rule_test`` names its rule group (``groupname``), since vmalert labels every alert and
``ALERTS`` series with ``alertgroup``; and the group ``labels`` of the target
(``targets.victoriametrics.labels``) overwrite the rules' own labels on every alert. The
expected times and values come from the feature testgens run with MetricsQL semantics.

The SLO tests check recordings (``recorded``): vmalert stores each with the group labels, and
VictoriaMetrics stores its value as a decimal of about 12 digits, so an expected sample gets
both (``rulegen.core.vmdecimal``), but an aggregate without labels (``count(…)``: ``{}``)
keeps none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from rulegen import units
from rulegen.core.promql import parse_matchers, quote
from rulegen.core.vmdecimal import stored
from rulegen.generated import AlertCheck, ExprCheck, TestCase

ALERT_SERIES = ("ALERTS", "ALERTS_FOR_STATE")
GROUP_LABEL = "alertgroup"


def vmalert_tests_file(
    rule_file: str,
    evaluation_interval: Decimal,
    cases: Sequence[TestCase],
    group_of: Mapping[str, str],
    group_labels: Mapping[str, str],
    recorded: bool = False,
) -> dict[str, Any]:
    """The data of one vmalert-tool test file; ``rule_file`` relative to the test file,
    ``group_of`` each alert's rule group (its ``groupname``), ``group_labels`` the labels
    vmalert adds to every rule of every group (the cases' expected alerts have them);
    ``recorded``: the expression checks read recordings vmalert stored."""
    labels = dict(sorted(group_labels.items()))
    return {
        "rule_files": [rule_file],
        "evaluation_interval": units.format_duration(evaluation_interval),
        "tests": [_case(case, group_of, labels, recorded) for case in cases],
    }


def _case(
    case: TestCase, group_of: Mapping[str, str], labels: Mapping[str, str], recorded: bool
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": case.name,
        "interval": units.format_duration(case.interval_seconds),
        "input_series": [{"series": s.series, "values": s.values} for s in case.series],
        "alert_rule_test": [_alert_check(check, group_of, labels) for check in case.alert_checks],
    }
    if case.expr_checks:
        data["metricsql_expr_test"] = [
            _expr_check(check, group_of, labels, recorded) for check in case.expr_checks
        ]
    return data


def _alert_check(
    check: AlertCheck, group_of: Mapping[str, str], labels: Mapping[str, str]
) -> dict[str, Any]:
    # vmalert-tool adds ``alertgroup`` and ``alertname`` to the expected labels itself; the
    # group labels win over the rule's (the alerts' testgen has put them there already, with
    # the ``exported_`` copies of the result labels they replace; diagnoses have no clash)
    return {
        "eval_time": check.eval_time,
        "groupname": group_of[check.alertname],
        "alertname": check.alertname,
        "exp_alerts": [
            {
                "exp_labels": dict(sorted({**dict(alert.labels), **labels}.items())),
                "exp_annotations": dict(alert.annotations),
            }
            for alert in check.alerts
        ],
    }


def _expr_check(
    check: ExprCheck, group_of: Mapping[str, str], labels: Mapping[str, str], recorded: bool
) -> dict[str, Any]:
    return {
        "expr": check.expr,
        "eval_time": check.eval_time,
        "exp_samples": [
            {
                "labels": _sample_labels(sample, group_of, labels, recorded),
                "value": stored(float(value)) if recorded else float(value),
            }
            for sample, value in check.samples
        ],
    }


def _sample_labels(
    selector: str, group_of: Mapping[str, str], labels: Mapping[str, str], recorded: bool
) -> str:
    """An expected ``ALERTS`` sample with the labels vmalert gives it (its group's name and
    the group labels); with ``recorded``, any other sample with labels gets the group labels;
    any other sample as it is."""
    name, _, inner = selector.partition("{")
    if name not in ALERT_SERIES and not recorded:
        return selector
    own = {m.name: m.value for m in parse_matchers(inner.rstrip("}"))}
    if name in ALERT_SERIES:
        merged = {**own, **labels, GROUP_LABEL: group_of[own["alertname"]]}
    elif recorded and own:
        merged = {**own, **labels}
    else:
        return selector
    pairs = ", ".join(f"{k}={quote(v)}" for k, v in sorted(merged.items()))
    return f"{name}{{{pairs}}}"
