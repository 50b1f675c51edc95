"""Other rule targets: the PrometheusRule (valid against the operator's CRD), Thanos Ruler files
and their partial-response flags, Mimir namespace files and the grouping-label rewrite."""

from __future__ import annotations

import copy
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import promql_parser
import pytest
import yaml
from conftest import REPO

from rulegen.build import build
from rulegen.catalog import load_catalog
from rulegen.errors import FieldPath
from rulegen.generated import AlertRule, RecordingRule, RuleGroup, ServiceOutput, Verbatim
from rulegen.load import discover
from rulegen.output import dump_yaml
from rulegen.render.mimir import add_grouping_label, mimir_namespace_file, shape
from rulegen.render.operator import prometheus_rule, service_groups
from rulegen.render.prometheus import rule_expr, rule_file
from rulegen.render.thanos import (
    ABSENT,
    AGGREGATION,
    LOW_COMPARISON,
    OR_FALLBACK,
    READS_FLAGGED,
    UNLESS,
    Flag,
    partial_response_flags,
    thanos_rule_file,
)
from rulegen.source.loader import Origin
from rulegen.validate import promtool
from rulegen.validate.crd import crd_schema, validate_prometheus_rule

GOLDEN = REPO / "tests" / "golden"
SERVICE = "deepseek-v4"
SELECTOR_LABELS = {"prometheus": "k8s", "role": "alert-rules"}
SIGNAL_GROUPS = [
    f"{SERVICE}-{family}"
    for family in ("node", "vllm", "dcgm", "grpc", "smartctl", "weights", "custom", "diagnoses")
]
SLO_GROUPS = [f"{SERVICE}-slo-{name}" for name in ("ttft", "goodput", "itl", "availability")]


@pytest.fixture(scope="module")
def services() -> list[ServiceOutput]:
    return list(build(discover([REPO / "specs"]), load_catalog([REPO / "signals"])).services)


@pytest.fixture(scope="module")
def service(services: list[ServiceOutput]) -> ServiceOutput:
    assert [s.service for s in services] == [SERVICE]
    return services[0]


@pytest.fixture(scope="module")
def all_groups(services: list[ServiceOutput]) -> list[RuleGroup]:
    """Every group of the example and of the golden cases: the expressions rulegen makes."""
    groups = [g for s in services for g in service_groups(s)]
    for case in sorted(p for p in GOLDEN.iterdir() if (p / "specs").is_dir()):
        result = build(discover([case / "specs"]), load_catalog())
        groups.extend(g for s in result.services for g in service_groups(s))
    return groups


def _name(rule: RecordingRule | AlertRule) -> str:
    return rule.record if isinstance(rule, RecordingRule) else rule.alert


def _promtool_ok(tmp_path: Path, files: dict[str, Any]) -> None:
    for name, data in files.items():
        (tmp_path / name).write_text(dump_yaml(data, "test"), encoding="utf-8")
    checked = promtool.check_rules(sorted(files), tmp_path)
    assert checked.ok, checked.messages


# --- PrometheusRule -------------------------------------------------------------------------


def test_prometheus_rule_of_the_example(service: ServiceOutput) -> None:
    groups = service_groups(service)
    obj = prometheus_rule(SERVICE, groups, "monitoring", SELECTOR_LABELS)
    assert list(obj) == ["apiVersion", "kind", "metadata", "spec"]
    assert obj["apiVersion"] == "monitoring.coreos.com/v1"
    assert obj["kind"] == "PrometheusRule"
    assert obj["metadata"] == {
        "name": SERVICE,
        "namespace": "monitoring",
        "labels": SELECTOR_LABELS,
    }
    assert list(obj["spec"]) == ["groups"]
    assert [g["name"] for g in obj["spec"]["groups"]] == SIGNAL_GROUPS + SLO_GROUPS
    assert obj["spec"]["groups"] == rule_file(groups)["groups"]
    assert sum(len(g["rules"]) for g in obj["spec"]["groups"]) == 236
    assert validate_prometheus_rule(obj) == []
    # what the lead writes to DIR/kubernetes/ reads back as the same object
    assert yaml.safe_load(dump_yaml(obj, "specs/llm-serving.yaml")) == obj


def test_prometheus_rule_options(service: ServiceOutput) -> None:
    bare = prometheus_rule(SERVICE, service.groups, "obs", {})
    assert bare["metadata"] == {"name": SERVICE, "namespace": "obs"}
    assert validate_prometheus_rule(bare) == []
    thanos = prometheus_rule(
        SERVICE, service.groups, "obs", {"role": "thanos"}, partial_response_strategy="abort"
    )
    assert {g["partial_response_strategy"] for g in thanos["spec"]["groups"]} == {"abort"}
    assert list(thanos["spec"]["groups"][0]) == [
        "name",
        "interval",
        "partial_response_strategy",
        "rules",
    ]
    assert validate_prometheus_rule(thanos) == []
    with pytest.raises(ValueError, match="warn or abort"):
        prometheus_rule(SERVICE, service.groups, "obs", {}, partial_response_strategy="maybe")


@pytest.mark.slow
def test_prometheus_rule_spec_passes_promtool(service: ServiceOutput, tmp_path: Path) -> None:
    obj = prometheus_rule(SERVICE, service_groups(service), "monitoring", SELECTOR_LABELS)
    _promtool_ok(tmp_path, {"spec.rules.yml": obj["spec"]})


def test_vendored_crd_schema() -> None:
    schema = crd_schema()
    assert schema["required"] == ["spec"]
    group = schema["properties"]["spec"]["properties"]["groups"]
    assert group["x-kubernetes-list-map-keys"] == ["name"]
    assert "partial_response_strategy" in group["items"]["properties"]


Mutation = Callable[[dict[str, Any]], None]


def _rule(obj: dict[str, Any], index: int) -> dict[str, Any]:
    rule: dict[str, Any] = obj["spec"]["groups"][0]["rules"][index]
    return rule


def _first_alert(obj: dict[str, Any]) -> int:
    rules = obj["spec"]["groups"][0]["rules"]
    return next(i for i, r in enumerate(rules) if "alert" in r)


def _set(path: str, value: Any) -> Mutation:
    def apply(obj: dict[str, Any]) -> None:
        *head, last = path.split(".")
        node: Any = obj
        for key in head:
            node = node[int(key)] if key.isdigit() else node[key]
        node[int(last) if last.isdigit() else last] = value

    return apply


def _delete(path: str) -> Mutation:
    def apply(obj: dict[str, Any]) -> None:
        *head, last = path.split(".")
        node: Any = obj
        for key in head:
            node = node[int(key)] if key.isdigit() else node[key]
        del node[int(last) if last.isdigit() else last]

    return apply


def _alert_for(value: Any) -> Mutation:
    def apply(obj: dict[str, Any]) -> None:
        _rule(obj, _first_alert(obj))["for"] = value

    return apply


def _duplicate_group(obj: dict[str, Any]) -> None:
    obj["spec"]["groups"][1]["name"] = obj["spec"]["groups"][0]["name"]


RULE0 = "$.spec.groups[0].rules[0]"
BROKEN: list[tuple[str, Mutation, list[str]]] = [
    (
        "missing spec.groups",
        _delete("spec.groups"),
        ["$.spec.groups: required: a PrometheusRule without groups evaluates nothing"],
    ),
    (
        "empty spec.groups",
        _set("spec.groups", []),
        ["$.spec.groups: required: a PrometheusRule without groups evaluates nothing"],
    ),
    ("missing spec", _delete("spec"), ["$: 'spec' is a required property"]),
    (
        "record and alert",
        _set("spec.groups.0.rules.0.alert", "DiskAwaitHigh"),
        [f"{RULE0}: only one of 'record' and 'alert' may be set"],
    ),
    (
        "neither record nor alert",
        _delete("spec.groups.0.rules.0.record"),
        [f"{RULE0}: one of 'record' or 'alert' must be set"],
    ),
    (
        "for is a number",
        _alert_for(300),
        ["$.spec.groups[0].rules[{alert}].for: 300 is not of type 'string'"],
    ),
    (
        "for is not a duration",
        _alert_for("5 minutes"),
        [
            "$.spec.groups[0].rules[{alert}].for: '5 minutes' does not match "
            "'^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?"
            "(([0-9]+)ms)?)$'"
        ],
    ),
    (
        "interval is not a duration",
        _set("spec.groups.0.interval", "30 seconds"),
        [
            "$.spec.groups[0].interval: '30 seconds' does not match "
            "'^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?"
            "(([0-9]+)ms)?)$'"
        ],
    ),
    (
        "missing expr",
        _delete("spec.groups.0.rules.0.expr"),
        [f"{RULE0}: 'expr' is a required property"],
    ),
    (
        "empty expr",
        _set("spec.groups.0.rules.0.expr", ""),
        [f"{RULE0}.expr: must be set"],
    ),
    (
        "expr is not PromQL",
        _set("spec.groups.0.rules.0.expr", "rate(x[5m]"),
        [f"{RULE0}.expr: invalid PromQL: unclosed left parenthesis"],
    ),
    (
        "expr is a list",
        _set("spec.groups.0.rules.0.expr", ["up"]),
        [f"{RULE0}.expr: ['up'] is not valid under any of the given schemas"],
    ),
    (
        "unknown rule field",
        _set("spec.groups.0.rules.0.annotation", {"summary": "x"}),
        [f"{RULE0}: Additional properties are not allowed ('annotation' was unexpected)"],
    ),
    (
        "unknown group field",
        _set("spec.groups.0.partial_response", "warn"),
        [
            "$.spec.groups[0]: Additional properties are not allowed "
            "('partial_response' was unexpected)"
        ],
    ),
    (
        "duplicate group names",
        _duplicate_group,
        [f"$.spec.groups[1]: duplicate entry (name='{SERVICE}-node') of $.spec.groups[0]"],
    ),
    (
        "group without a name",
        _delete("spec.groups.0.name"),
        ["$.spec.groups[0]: 'name' is a required property"],
    ),
    (
        "bad partial_response_strategy",
        _set("spec.groups.0.partial_response_strategy", "sometimes"),
        [
            "$.spec.groups[0].partial_response_strategy: 'sometimes' does not match "
            "'(?i)^(abort|warn)?$'"
        ],
    ),
    (
        "label value not a string",
        _set("spec.groups.0.rules.0.labels", {"tier": 1}),
        [f"{RULE0}.labels.tier: 1 is not of type 'string'"],
    ),
    (
        "annotations on a recording",
        _set("spec.groups.0.rules.0.annotations", {"summary": "x"}),
        [f"{RULE0}.annotations: invalid field 'annotations' in recording rule"],
    ),
    (
        "for on a recording",
        _set("spec.groups.0.rules.0.for", "5m"),
        [f"{RULE0}.for: invalid field 'for' in recording rule"],
    ),
    (
        "bad recording name",
        _set("spec.groups.0.rules.0.record", "disk await"),
        [f"{RULE0}.record: invalid recording rule name: 'disk await'"],
    ),
    (
        "bad label name",
        _set("spec.groups.0.rules.0.labels", {"team-name": "x"}),
        [f"{RULE0}.labels: invalid label name: 'team-name'"],
    ),
    (
        "wrong apiVersion",
        _set("apiVersion", "monitoring.coreos.com/v1alpha1"),
        ["$.apiVersion: must be monitoring.coreos.com/v1 (got 'monitoring.coreos.com/v1alpha1')"],
    ),
    (
        "wrong kind",
        _set("kind", "PrometheusRules"),
        ["$.kind: must be PrometheusRule (got 'PrometheusRules')"],
    ),  # fmt: skip
    ("missing name", _delete("metadata.name"), ["$.metadata.name: required"]),
    (
        "name is not a DNS subdomain",
        _set("metadata.name", "DeepSeek_v4"),
        ["$.metadata.name: 'DeepSeek_v4' is not a DNS subdomain (RFC 1123)"],
    ),
    (
        "namespace is not a DNS label",
        _set("metadata.namespace", "team.monitoring"),
        ["$.metadata.namespace: 'team.monitoring' is not a DNS label (RFC 1123)"],
    ),
    (
        "selector label value",
        _set("metadata.labels", {"role": "alert rules"}),
        ["$.metadata.labels['role']: 'alert rules' is not a valid label value"],
    ),
]


@pytest.mark.parametrize(
    ("mutate", "expected"), [(m, e) for _, m, e in BROKEN], ids=[i for i, _, _ in BROKEN]
)
def test_broken_prometheus_rules_fail(
    service: ServiceOutput, mutate: Mutation, expected: list[str]
) -> None:
    obj = prometheus_rule(SERVICE, service_groups(service), "monitoring", SELECTOR_LABELS)
    broken = copy.deepcopy(obj)
    mutate(broken)
    alert = _first_alert(obj)
    assert validate_prometheus_rule(broken) == [e.format(alert=alert) for e in expected]
    assert validate_prometheus_rule(obj) == []


def test_every_problem_is_reported_at_once() -> None:
    problems = validate_prometheus_rule({"apiVersion": "v1", "spec": {"groups": [{"rules": 3}]}})
    assert problems == [
        "$.apiVersion: must be monitoring.coreos.com/v1 (got 'v1')",
        "$.kind: must be PrometheusRule (got None)",
        "$.metadata: required: a name (and usually a namespace)",
        "$.spec.groups[0]: 'name' is a required property",
        "$.spec.groups[0].rules: 3 is not of type 'array'",
    ]


# --- Mimir ----------------------------------------------------------------------------------


def test_mimir_namespace_file(service: ServiceOutput) -> None:
    groups = service_groups(service)
    data = mimir_namespace_file(SERVICE, groups)
    assert list(data) == ["namespace", "groups"]
    assert data["namespace"] == SERVICE
    plain = rule_file(groups)["groups"]
    assert [g["name"] for g in data["groups"]] == SIGNAL_GROUPS + SLO_GROUPS
    for mimir_group, group in zip(data["groups"], plain, strict=True):
        assert list(mimir_group) == ["name", "interval", "rules"]
        assert mimir_group["interval"] == group["interval"]
        for mimir_rule, rule in zip(mimir_group["rules"], group["rules"], strict=True):
            assert {k: v for k, v in mimir_rule.items() if k != "expr"} == {
                k: v for k, v in rule.items() if k != "expr"
            }
            assert mimir_rule["expr"] == add_grouping_label(rule["expr"], "cluster")
    exprs = {
        (g["name"], r.get("record") or r["alert"]): r["expr"]
        for g in data["groups"]
        for r in g["rules"]
    }
    # golden: one expression of each shape rulegen generates
    assert exprs[(f"{SERVICE}-node", "instance:node_cpu_softirq:ratio_rate5m")] == (
        'avg without (cpu, mode) (rate(node_cpu_seconds_total{mode="softirq", job="node"}[5m]))'
    )
    assert exprs[(f"{SERVICE}-dcgm", "instance:DCGM_FI_DEV_GPU_UTIL:avg_ratio")] == (
        'avg by (instance, cluster) (DCGM_FI_DEV_GPU_UTIL{job="dcgm"}) / 100'
    )
    assert (
        "/ on (instance, device, cluster) group_left () (node_network_speed_bytes"
        in exprs[(f"{SERVICE}-node", "instance_device:node_network_utilization:ratio_rate1m")]
    )
    assert exprs[(f"{SERVICE}-diagnoses", "TTFTDiskBound")] == (
        'host_model:vllm_time_to_first_token_seconds:p99_rate5m{service="deepseek-v4"} > 0.5\n'
        "and on (host, cluster)\n"
        'host:node_disk_io_time_seconds:max_rate5m{service="deepseek-v4"} > 0.7'
    )
    errors = exprs[(f"{SERVICE}-slo-availability", "slo:sli_errors:increase5m")]
    # the Prometheus 3 base form (the example declares 3.5): steps summed per cluster
    assert errors.startswith(
        "sum by (cluster) (\n  label_replace(grpc_server_handled_total"
        '{grpc_service="inference.v1.Inference",'
        ' grpc_code=~"Unknown|Internal|Unavailable|DeadlineExceeded|DataLoss"} - '
    )
    assert errors.endswith(
        "\n)\nor\n"
        '0 * sum by (cluster) (slo:sli_total:increase5m{service="deepseek-v4", slo="availability"})'
    )
    assert exprs[(f"{SERVICE}-slo-ttft", "slo:sli_total:increase30m")].startswith(
        "sum by (service, slo, model_name, cluster) (\n"
    )
    assert exprs[(f"{SERVICE}-slo-ttft", "slo:objective:ratio")] == "vector(0.99)"
    other = mimir_namespace_file("team-a", service.groups, grouping_label="region")
    assert other["namespace"] == "team-a"
    assert "sum by (grpc_service, grpc_method, region) (" in other["groups"][3]["rules"][0]["expr"]


@pytest.mark.slow
def test_mimir_and_thanos_files_pass_promtool(
    services: list[ServiceOutput], tmp_path: Path
) -> None:
    files: dict[str, Any] = {}
    for service in services:
        mimir = mimir_namespace_file(service.service, service_groups(service))
        files[f"{service.service}.mimir.rules.yml"] = {"groups": mimir["groups"]}
        thanos, _ = thanos_rule_file(service_groups(service), "warn")
        for group in thanos["groups"]:
            assert group.pop("partial_response_strategy") == "warn"
        files[f"{service.service}.thanos.rules.yml"] = thanos
    _promtool_ok(tmp_path, files)


# --- add_grouping_label ---------------------------------------------------------------------

REWRITES = [
    ("by", "sum by (job) (up)", "sum by (job, cluster) (up)"),
    ("by after the arguments", "sum(up) by (job)", "sum(up) by (job, cluster)"),
    ("by with a trailing comma", "sum by (job,) (up)", "sum by (job, cluster) (up)"),
    ("empty by", "sum by () (up)", "sum by (cluster) (up)"),
    ("bare aggregation", "sum(up)", "sum by (cluster) (up)"),
    ("bare aggregation, space", "count (up)", "count by (cluster) (up)"),
    ("upper-case keyword", "SUM(up)", "SUM by (cluster) (up)"),
    ("parameter", "topk(3, up)", "topk by (cluster) (3, up)"),
    ("quantile", "quantile by (job) (0.9, up)", "quantile by (job, cluster) (0.9, up)"),
    ("count_values", 'count_values("v", up)', 'count_values by (cluster) ("v", up)'),
    ("without", "avg without (cpu, mode) (rate(x[5m]))", "avg without (cpu, mode) (rate(x[5m]))"),
    ("without cluster", "sum without (cluster) (up)", "sum without (cluster) (up)"),
    ("on", "a / on (instance) b", "a / on (instance, cluster) b"),
    ("empty on", "a and on () b", "a and on (cluster) b"),
    ("on with bool", "a > bool on (job) b", "a > bool on (job, cluster) b"),
    (
        "group_left",
        "a / on (instance, device) group_left () (b > 0)",
        "a / on (instance, device, cluster) group_left () (b > 0)",
    ),
    (
        "group_left labels",
        "a * on (instance) group_left (version, node) info",
        "a * on (instance, cluster) group_left (version, node) info",
    ),
    (
        "group_right",
        "a * on (instance) group_right (version) info",
        "a * on (instance, cluster) group_right (version) info",
    ),
    (
        "ignoring",
        "a / ignoring (code) group_left (x) b",
        "a / ignoring (code) group_left (x) b",
    ),
    ("no aggregation", "rate(x[5m]) > 0.5", "rate(x[5m]) > 0.5"),
    ("already present", "sum by (cluster, job) (up)", "sum by (cluster, job) (up)"),
    ("on already present", "a and on (cluster) b", "a and on (cluster) b"),
    (
        "nested",
        "max by (job) (sum(rate(x[5m])) by (instance)) / on (job) count(up)",
        "max by (job, cluster) (sum(rate(x[5m])) by (instance, cluster)) "
        "/ on (job, cluster) count by (cluster) (up)",
    ),
    (
        "keywords inside selectors and strings",
        'sum by (a) (x{by="sum(y) by (z)", on="on (q)"}) '
        '+ label_replace(y, "on", "$1", "by", "(.*)")',
        'sum by (a, cluster) (x{by="sum(y) by (z)", on="on (q)"}) '
        '+ label_replace(y, "on", "$1", "by", "(.*)")',
    ),
    ("metric named sum", 'sum{job="x"} + sum(up)', 'sum{job="x"} + sum by (cluster) (up)'),
    (
        "label lists named like keywords",
        "sum by (on, by) (x) / on (by) y",
        "sum by (on, by, cluster) (x) / on (by, cluster) y",
    ),
    (
        "comment and line breaks",
        "sum # total\n(\n  rate(x[5m])\n)",
        "sum by (cluster) # total\n(\n  rate(x[5m])\n)",
    ),
    ("subquery", "max_over_time(sum(x)[1h:5m])", "max_over_time(sum by (cluster) (x)[1h:5m])"),
]


@pytest.mark.parametrize(
    ("expr", "expected"), [(e, x) for _, e, x in REWRITES], ids=[i for i, _, _ in REWRITES]
)
def test_add_grouping_label(expr: str, expected: str) -> None:
    assert add_grouping_label(expr, "cluster") == expected
    assert add_grouping_label(expected, "cluster") == expected
    promql_parser.parse(expected)


def test_add_grouping_label_refuses() -> None:
    with pytest.raises(ValueError, match="invalid label name"):
        add_grouping_label("sum(up)", "cluster-name")
    with pytest.raises(ValueError, match=r"not PromQL \(unclosed left parenthesis\)"):
        add_grouping_label("sum(up", "cluster")


def _check_prepared(node: Any, label: str, counts: dict[str, int]) -> None:
    """Every aggregation and every ``on`` of the rewritten AST carries ``label``."""
    if isinstance(node, promql_parser.AggregateExpr):
        counts["aggregations"] += 1
        modifier = node.modifier
        assert modifier is not None
        assert modifier.type == promql_parser.AggModifierType.Without or label in modifier.labels
    if isinstance(node, promql_parser.BinaryExpr) and node.modifier is not None:
        matching = node.modifier.matching
        if matching is not None and matching.type == promql_parser.LabelModifierType.Include:
            counts["on"] += 1
            assert label in matching.labels


def test_grouping_label_on_every_generated_expression(all_groups: list[RuleGroup]) -> None:
    counts = {"rules": 0, "aggregations": 0, "on": 0, "changed": 0}
    for group in all_groups:
        for rule in group.rules:
            counts["rules"] += 1
            expr = rule_expr(rule)
            out = add_grouping_label(expr, "cluster")
            parsed = promql_parser.parse(out)
            assert add_grouping_label(out, "cluster") == out, (group.name, _name(rule))
            assert shape(parsed) == shape(promql_parser.parse(expr), "cluster")
            promql_parser.walk(parsed, lambda n: _check_prepared(n, "cluster", counts))
            counts["changed"] += out != expr
    # the example and the golden cases: 169 rules, 81 aggregations, 10 on (...), 76 changed
    assert counts["rules"] >= 150
    assert counts["aggregations"] >= 70
    assert counts["on"] >= 8
    assert counts["changed"] >= 60


# --- Thanos ---------------------------------------------------------------------------------


def test_thanos_rule_file_layout(service: ServiceOutput) -> None:
    groups = service_groups(service)
    data, flags = thanos_rule_file(groups, None)
    assert data == rule_file(groups)
    assert flags == []
    data, flags = thanos_rule_file(groups, "abort")
    assert flags == []
    for group, plain in zip(data["groups"], rule_file(groups)["groups"], strict=True):
        assert list(group) == ["name", "interval", "partial_response_strategy", "rules"]
        assert group["partial_response_strategy"] == "abort"
        assert group["rules"] == plain["rules"]
    data, flags = thanos_rule_file(groups, {f"{SERVICE}-grpc": "warn"})
    assert [g["name"] for g in data["groups"] if "partial_response_strategy" in g] == [
        f"{SERVICE}-grpc"
    ]
    assert [(f.group, f.rule) for f in flags] == [
        (f"{SERVICE}-grpc", "grpc_service_method:grpc_server_handled:error_ratio_rate5m"),
        (f"{SERVICE}-grpc", "GrpcErrorRatioHigh"),
    ]
    with pytest.raises(ValueError, match="warn or abort"):
        thanos_rule_file(groups, "partial")
    with pytest.raises(ValueError, match="unknown groups"):
        thanos_rule_file(groups, {"nope": "warn"})


def test_thanos_flags_of_the_example(service: ServiceOutput) -> None:
    groups = service_groups(service)
    _, flags = thanos_rule_file(groups, "warn")
    assert all(isinstance(f, Flag) and len(f) == 3 for f in flags)
    flagged = {(f.group, f.rule) for f in flags}
    grpc_ratio = "grpc_service_method:grpc_server_handled:error_ratio_rate5m"
    diagnosis_recordings = [
        "host_model:vllm_time_to_first_token_seconds:p99_rate5m",
        "host:node_disk_io_time_seconds:max_rate5m",
        "host_model:vllm_generation_tokens:rate5m",
        "host:node_network_utilization:max_ratio_rate5m",
        "host:DCGM_FI_DEV_GPU_UTIL:avg_ratio",
        "host:vllm_num_requests_waiting:sum",
    ]
    diagnoses = f"{SERVICE}-diagnoses"
    expected_signal_flags = {
        (f"{SERVICE}-grpc", grpc_ratio),
        (f"{SERVICE}-grpc", "GrpcErrorRatioHigh"),
        *((diagnoses, r) for r in diagnosis_recordings),
        (diagnoses, "TTFTDiskBound"),
        (diagnoses, "ThroughputNetworkBound"),
        (diagnoses, "GpuKernelContention"),
        (diagnoses, "host_gpu:dcgm_gpu_fault:xid_or_row_remap"),
        (diagnoses, "GpuHealthDegraded"),
        # ``unless``/``or`` over series a partial answer may lack: a read-only filesystem's
        # flag, an XID's value an hour ago, the requests that finished without an error
        (f"{SERVICE}-node", "FilesystemFreeSpaceLow"),
        (f"{SERVICE}-dcgm", "GpuXidError"),
        (f"{SERVICE}-vllm", "instance_model:vllm_request_success_error:ratio_rate5m"),
        (f"{SERVICE}-vllm", "RequestErrorRatioHigh"),
    }
    assert {f for f in flagged if f[0] in SIGNAL_GROUPS} == expected_signal_flags
    # every SLO rule reads sums over all instances, except the constant objective
    for group in groups[len(SIGNAL_GROUPS) :]:
        assert {r for g, r in flagged if g == group.name} == {
            _name(r) for r in group.rules if _name(r) != "slo:objective:ratio"
        }
    reasons = {(f.group, f.rule): f.reason for f in flags}
    assert reasons[(f"{SERVICE}-grpc", grpc_ratio)] == AGGREGATION.format(
        clause="sum by (grpc_service, grpc_method)"
    )
    assert reasons[(f"{SERVICE}-grpc", "GrpcErrorRatioHigh")] == READS_FLAGGED.format(
        records=grpc_ratio
    )
    assert reasons[(diagnoses, "TTFTDiskBound")] == READS_FLAGGED.format(
        records="host:node_disk_io_time_seconds:max_rate5m, "
        "host_model:vllm_time_to_first_token_seconds:p99_rate5m"
    )
    errors = reasons[(f"{SERVICE}-slo-availability", "slo:sli_errors:increase5m")]
    assert errors.split("; ") == [
        OR_FALLBACK,
        AGGREGATION.format(clause="sum"),
        READS_FLAGGED.format(records="slo:sli_total:increase5m"),
    ]
    # per-instance aggregations (by instance, without cpu/mode) are never flagged
    for name in ("instance:node_cpu_softirq:ratio_rate5m", "TTFTLatencyHigh", "GpuUnderutilized"):
        assert name not in {r for _, r in flagged}
    # with whole clusters per store, by (host) still mixes stores; by (instance) never does
    _, wider = thanos_rule_file(groups, "warn", store_labels=("instance", "host"))
    assert {f for f in {(f.group, f.rule) for f in wider} if f[0] in SIGNAL_GROUPS} == {
        (f"{SERVICE}-grpc", grpc_ratio),
        (f"{SERVICE}-grpc", "GrpcErrorRatioHigh"),
        # unless / or fallbacks: flagged whatever the stores hold
        (f"{SERVICE}-diagnoses", "host_gpu:dcgm_gpu_fault:xid_or_row_remap"),
        (f"{SERVICE}-diagnoses", "GpuHealthDegraded"),
        (f"{SERVICE}-node", "FilesystemFreeSpaceLow"),
        (f"{SERVICE}-dcgm", "GpuXidError"),
        (f"{SERVICE}-vllm", "instance_model:vllm_request_success_error:ratio_rate5m"),
        (f"{SERVICE}-vllm", "RequestErrorRatioHigh"),
    }


ORIGIN = Origin("specs/x.yaml", 1, 1, FieldPath(("alerts", 0)))


def _alert(expr: str, name: str = "A") -> AlertRule:
    return AlertRule(name, Verbatim(expr), Decimal(300), (), (), ORIGIN)


def _low(clause: str, op: str) -> str:
    return AGGREGATION.format(clause=clause) + LOW_COMPARISON.format(op=op)


FLAG_CASES = [
    ("absent", 'absent(up{job="api"})', [ABSENT]),
    ("absent_over_time", 'absent_over_time(up{job="api"}[5m])', [ABSENT]),
    ("unless", "up unless on (instance) maintenance", [UNLESS]),
    ("or vector", "errors or vector(0)", [OR_FALLBACK]),
    ("or zero times", "errors or 0 * total", [OR_FALLBACK]),
    ("or series", "a or b", []),
    ("sum below", "sum by (job) (up) < 3", [_low("sum by (job)", "sum")]),
    ("count below, reversed", "3 > count(up)", [_low("count", "count")]),
    ("sum above", "sum by (job) (up) > 3", [AGGREGATION.format(clause="sum by (job)")]),
    ("bool is not a filter", "sum(up) < bool 3", [AGGREGATION.format(clause="sum")]),
    ("avg below", "avg by (job) (x) < 3", [AGGREGATION.format(clause="avg by (job)")]),
    (
        "without instance",
        "max without (instance) (x)",
        [AGGREGATION.format(clause="max without (instance)")],
    ),  # fmt: skip
    ("by instance", "sum by (instance) (rate(x[5m])) < 1", []),
    ("without cpu", "avg without (cpu, mode) (rate(x[5m]))", []),
    ("per series", "rate(x[5m]) / on (instance) group_left () (y > 0) < 0.5", []),
    (
        "several reasons",
        "absent(x) or sum(y) < 1 unless z",
        [ABSENT, UNLESS, _low("sum", "sum")],
    ),
]


@pytest.mark.parametrize(
    ("expr", "reasons"), [(e, r) for _, e, r in FLAG_CASES], ids=[i for i, _, _ in FLAG_CASES]
)
def test_partial_response_flag_cases(expr: str, reasons: list[str]) -> None:
    group = RuleGroup("g", Decimal(30), (_alert(expr),))
    expected = [Flag("g", "A", "; ".join(reasons))] if reasons else []
    assert partial_response_flags([group]) == expected


def test_partial_response_flags_follow_recordings() -> None:
    recorded = RecordingRule("job:up:sum", "sum by (job) (up)", (("service", "a"),), ORIGIN)
    chained = RecordingRule(
        "job:up:sum_ratio", 'job:up:sum{service="a"} / 10', (("service", "a"),), ORIGIN
    )
    first = RuleGroup("rec", Decimal(30), (recorded,))
    second = RuleGroup(
        "alerts",
        Decimal(30),
        (
            chained,
            _alert('job:up:sum_ratio{service="a"} > 0.5', "ReadsChain"),
            _alert('job:up:sum{service="b"} < 1', "OtherService"),
            _alert("job:up:sum < 1", "AnyService"),
            _alert('up{job="x"} == 0', "Plain"),
        ),
    )
    flags = partial_response_flags([second, first])
    assert flags == [
        Flag("alerts", "job:up:sum_ratio", READS_FLAGGED.format(records="job:up:sum")),
        Flag("alerts", "ReadsChain", READS_FLAGGED.format(records="job:up:sum_ratio")),
        Flag("alerts", "AnyService", READS_FLAGGED.format(records="job:up:sum")),
        Flag("rec", "job:up:sum", AGGREGATION.format(clause="sum by (job)")),
    ]
    # recordings of abort groups are evaluated whole or not at all: nothing to follow
    assert partial_response_flags([second, first], warn_groups={"alerts"}) == []
    _, thanos_flags = thanos_rule_file([second, first], {"rec": "warn"})
    assert thanos_flags == flags
