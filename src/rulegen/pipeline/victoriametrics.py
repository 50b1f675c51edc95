"""The VictoriaMetrics target's generated tests: the service's threshold alerts, custom alert
examples and diagnoses, with MetricsQL's timings, as a ``vmalert-tool unittest`` file beside
the vmalert rule file.

Why separate tests and not the promtool ones: MetricsQL's ``rate()`` does not extrapolate, so
an alert on a rate fires evaluations earlier than on Prometheus and a diagnosis' ratios read
other values; the promtool files would fail on vmalert, or prove nothing about it.

Each SLO gets test files of its own: ``pipeline.vmalert_slo``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rulegen.alerts.testgen import Vmalert, build_tests
from rulegen.diagnosis.testgen import diagnosis_tests
from rulegen.generated import AlertRule, RuleGroup, ServiceOutput
from rulegen.output import dump_yaml
from rulegen.pipeline.service import ResolvedSpec
from rulegen.pipeline.vmalert_slo import TESTS_FOLDER, slo_test_files
from rulegen.render.vmalert_tests import vmalert_tests_file
from rulegen.testruns import shared_runs

FOLDER = "victoriametrics"


def rules_name(service: str) -> str:
    """The vmalert rule file of a service."""
    return f"{FOLDER}/{service}.rules.yml"


def tests_name(service: str) -> str:
    """The vmalert-tool test file of a service's rule file."""
    return f"{TESTS_FOLDER}/{service}.test.yml"


def vmalert_test_files(
    spec: ResolvedSpec,
    service: ServiceOutput,
    groups: Sequence[RuleGroup],
    data: Mapping[str, Any],
    source: str,
) -> tuple[dict[str, str], list[str]]:
    """The service's vmalert-tool test files: its threshold alerts, examples and diagnoses
    (none without any), and each SLO's (``pipeline.vmalert_slo``); ``groups`` are the rule
    groups of its vmalert file, ``data`` that file as written. And the notes on SLO rules
    left untested.

    vmalert-tool evaluates without a group's ``eval_delay`` (what a ``query_offset`` becomes),
    so the examples of alerts in a group with a ``query_offset``, whose times the user gave
    for the offset, are not run there (promtool runs them).
    """
    labels = spec.targets.victoriametrics.labels
    group_of = {
        rule.alert: group.name
        for group in groups
        for rule in group.rules
        if isinstance(rule, AlertRule)
    }
    files, notes = slo_test_files(spec, group_of, data, source)
    delayed = {g.name for g in spec.groups if g.query_offset}
    alerts = tuple(a for a in spec.alerts if a.group not in delayed)
    if not alerts and not spec.diagnoses:
        return files, notes
    evaluation, scrape = spec.evaluation_interval, spec.scrape_interval
    group_labels = {g.name: g.labels for g in spec.groups}
    vmalert = Vmalert(group_of, labels)
    cases = build_tests(alerts, evaluation, scrape, spec.host_label, vmalert, group_labels)
    if spec.diagnoses:
        cases += diagnosis_tests(spec.diagnoses, evaluation, scrape, metricsql=True)
    cases = shared_runs(cases, service.groups)
    tests = vmalert_tests_file(f"../{spec.service}.rules.yml", evaluation, cases, group_of, labels)
    files[tests_name(spec.service)] = dump_yaml(tests, source)
    return files, notes
