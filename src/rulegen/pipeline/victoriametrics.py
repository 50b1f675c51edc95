"""The VictoriaMetrics target's generated tests: the service's threshold alerts, custom alert
examples and diagnoses, with MetricsQL's timings, as a ``vmalert-tool unittest`` file beside
the vmalert rule file.

Why separate tests and not the promtool ones: MetricsQL's ``rate()`` does not extrapolate, so
an alert on a rate fires evaluations earlier than on Prometheus and a diagnosis' ratios read
other values; the promtool files would fail on vmalert, or prove nothing about it. The SLO
groups have no vmalert-tool tests: their cascade is proven by vmalert's replay and a live
vmalert (docs/victoriametrics.md).
"""

from __future__ import annotations

from collections.abc import Sequence

from rulegen.alerts.testgen import Vmalert, build_tests
from rulegen.diagnosis.testgen import diagnosis_tests
from rulegen.generated import AlertRule, RuleGroup, ServiceOutput
from rulegen.output import dump_yaml
from rulegen.pipeline.service import ResolvedSpec
from rulegen.render.vmalert_tests import vmalert_tests_file
from rulegen.testruns import shared_runs

FOLDER = "victoriametrics"
TESTS_FOLDER = f"{FOLDER}/tests"


def rules_name(service: str) -> str:
    """The vmalert rule file of a service."""
    return f"{FOLDER}/{service}.rules.yml"


def tests_name(service: str) -> str:
    """The vmalert-tool test file of a service's rule file."""
    return f"{TESTS_FOLDER}/{service}.test.yml"


def vmalert_test_files(
    spec: ResolvedSpec, service: ServiceOutput, groups: Sequence[RuleGroup], source: str
) -> dict[str, str]:
    """The service's vmalert-tool test file (none without alerts or diagnoses to test);
    ``groups`` are the rule groups of its vmalert file.

    vmalert-tool evaluates without a group's ``eval_delay`` (what a ``query_offset`` becomes),
    so the examples of alerts in a group with a ``query_offset``, whose times the user gave
    for the offset, are not run there (promtool runs them).
    """
    delayed = {g.name for g in spec.groups if g.query_offset}
    alerts = tuple(a for a in spec.alerts if a.group not in delayed)
    if not alerts and not spec.diagnoses:
        return {}
    evaluation, scrape = spec.evaluation_interval, spec.scrape_interval
    labels = spec.targets.victoriametrics.labels
    group_of = {
        rule.alert: group.name
        for group in groups
        for rule in group.rules
        if isinstance(rule, AlertRule)
    }
    group_labels = {g.name: g.labels for g in spec.groups}
    vmalert = Vmalert(group_of, labels)
    cases = build_tests(alerts, evaluation, scrape, spec.host_label, vmalert, group_labels)
    if spec.diagnoses:
        cases += diagnosis_tests(spec.diagnoses, evaluation, scrape, metricsql=True)
    cases = shared_runs(cases, service.groups)
    data = vmalert_tests_file(f"../{spec.service}.rules.yml", evaluation, cases, group_of, labels)
    return {tests_name(spec.service): dump_yaml(data, source)}
