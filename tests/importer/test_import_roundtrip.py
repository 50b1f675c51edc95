"""The proof of ``rulegen import prometheus``: the imported spec builds into the rules it came
from, rule for rule (expressions compared as parsed PromQL, durations as milliseconds, labels
up to the ``service`` label rulegen adds), and the moved promtool tests pass on the build."""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import promql_parser
import pytest
import yaml
from conftest import promtool_test, run_rulegen, specs_for_stack, write_tree

from rulegen import units
from rulegen.build import build
from rulegen.catalog import load_catalog
from rulegen.importer.model import ImportOptions, ImportResult
from rulegen.importer.prometheus import import_files
from rulegen.importer.writer import header, render_spec
from rulegen.load import discover

DATA = Path(__file__).parent / "data"
Key = tuple[str, str, str, int]  # group, alert|record, name, n-th of that name in the group


def _ms(value: Any) -> int:
    return 0 if value in (None, 0, "0") else int(units.parse_duration(str(value)) * 1000)


def _rules(groups: Iterable[dict[str, Any]]) -> tuple[dict[Key, dict[str, Any]], dict[str, int]]:
    """Every rule by its key, normalised; and each group's interval (ms, where written)."""
    rules: dict[Key, dict[str, Any]] = {}
    intervals: dict[str, int] = {}
    for group in groups:
        if "interval" in group:
            intervals[group["name"]] = _ms(group["interval"])
        seen: Counter[tuple[str, str]] = Counter()
        for rule in group["rules"]:
            kind = "alert" if "alert" in rule else "record"
            name = rule[kind]
            key = (group["name"], kind, name, seen[(kind, name)])
            seen[(kind, name)] += 1
            rules[key] = {
                "expr": promql_parser.parse(str(rule["expr"])).prettify(),
                "for": _ms(rule.get("for")),
                "keep_firing_for": _ms(rule.get("keep_firing_for")),
                "labels": {**group.get("labels", {}), **rule.get("labels", {})},
                "annotations": rule.get("annotations", {}),
            }
    return rules, intervals


def _original(paths: Iterable[Path]) -> tuple[dict[Key, dict[str, Any]], dict[str, int]]:
    groups: list[dict[str, Any]] = []
    for path in paths:
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            groups.extend(doc["spec"]["groups"] if "spec" in doc else doc["groups"])
    return _rules(groups)


def _import_and_build(
    root: Path, paths: list[Path], options: ImportOptions
) -> tuple[ImportResult, dict[str, Any]]:
    """Import, write the specs and moved tests into ``root/specs``, build them in memory."""
    result = import_files(paths, options)
    for service in result.services:
        text = header("prometheus", service.sources) + render_spec(service)
        write_tree(root, {f"specs/{service.service}.yaml": text})
    for test in result.user_tests:
        write_tree(root, {f"specs/tests/{test.name}": test.text})
    built = build(discover([root / "specs"]), load_catalog([]))
    return result, {
        name: yaml.safe_load(text)
        for name, text in built.files.items()
        if name.startswith("prometheus/")
    }


CASES: list[tuple[str, list[str], ImportOptions, set[Key]]] = [
    ("awesome-prometheus-alerts node-exporter, its week-long for included",
     ["node-exporter.yml"], ImportOptions(), set()),
    ("kubernetes-mixin style rules", ["mixin/prometheus_alerts.yaml",
     "mixin/prometheus_rules.yaml"], ImportOptions("kube"), set()),
    ("sloth kubernetes-apiserver: page and ticket alerts of one name, by severity",
     ["sloth/kubernetes-apiserver.yml"], ImportOptions(), set()),
    ("sloth getting-started: severities pageteam and slack, declared in the spec",
     ["sloth/getting-started.yml"], ImportOptions(), set()),
    ("sloth PrometheusRule (k8s-getting-started)", ["sloth/k8s-getting-started.yml"],
     ImportOptions(), set()),
    ("kube-prometheus' PrometheusRule: Watchdog and InfoInhibitor of severity none",
     ["kube-prometheus/kubePrometheus-prometheusRule.yaml"], ImportOptions(), set()),
]  # fmt: skip


@pytest.mark.slow  # promtool checks the imported annotation templates
@pytest.mark.parametrize(
    ("files", "options", "refused"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_the_imported_spec_builds_into_the_original_rules(
    tmp_path: Path, files: list[str], options: ImportOptions, refused: set[Key]
) -> None:
    paths = [DATA / f for f in files]
    result, built = _import_and_build(tmp_path, paths, options)
    assert len(result.refused) == len(refused)
    (service,) = result.services
    original, intervals = _original(paths)
    generated, generated_intervals = _rules(g for f in built.values() for g in f["groups"])
    for rule in generated.values():
        assert rule["labels"].pop("service") == service.service
    assert generated == {k: v for k, v in original.items() if k not in refused}
    assert {g: generated_intervals[g] for g in intervals} == intervals


@pytest.mark.slow  # promtool checks the imported annotation templates
def test_group_labels_templated_labels_keep_firing_for_and_a_cli_severity_round_trip(
    tmp_path: Path,
) -> None:
    write_tree(tmp_path, {"in/rules.yml": """
        groups:
        - name: api
          interval: 1m
          labels: {team: web}
          rules:
          - record: job:http_requests:rate5m
            expr: sum by (job) (rate(http_requests_total[5m]))
          - alert: HighErrors
            expr: |
              sum by (job) (rate(http_errors_total[5m]))
                / sum by (job) (rate(http_requests_total[5m])) > 0.05
            for: 10m
            keep_firing_for: 5m
            labels: {team: api, severity: critical, target: '{{ $labels.job }}'}
            annotations:
              summary: '{{ $labels.job }} errors at {{ $value | humanizePercentage }}'
              description: "{{ with query \\"up\\" }}{{ . | first | value }}{{ end }}"
          - alert: NodeDown
            expr: up{job="node"} == 0
    """})  # fmt: skip
    paths = [tmp_path / "in/rules.yml"]
    _, built = _import_and_build(tmp_path, paths, ImportOptions("web", "info"))
    original, intervals = _original(paths)
    generated, generated_intervals = _rules(g for f in built.values() for g in f["groups"])
    original[("api", "alert", "NodeDown", 0)]["labels"]["severity"] = "info"
    for rule in generated.values():
        assert rule["labels"].pop("service") == "web"
    assert generated == original
    assert generated_intervals == intervals


@pytest.mark.slow
def test_the_moved_promtool_tests_pass_on_the_originals_and_on_the_build(tmp_path: Path) -> None:
    tests = sorted((DATA / "mixin/tests").glob("*.yaml"))
    for test in tests:
        assert promtool_test(test).returncode == 0, test
    shutil.copytree(DATA, tmp_path / "in")
    inputs = [f"in/mixin/{n}" for n in ("prometheus_alerts.yaml", "prometheus_rules.yaml")]
    moved = [f"in/mixin/tests/{t.name}" for t in tests]
    got = run_rulegen("import", "prometheus", *inputs, *moved, "--service", "kube", "-o",
                      "specs", cwd=tmp_path)  # fmt: skip
    assert got.code == 0, got.err
    assert "  test: tests/absent_alert-test.yaml (from in/mixin/tests/absent_alert-test.yaml)" in (
        got.err.splitlines()
    )
    # (sloth's getting-started.yml is k8s-getting-started.yml's rules again: same group names)
    others = {
        "in/node-exporter.yml": 0,
        "in/sloth/kubernetes-apiserver.yml": 0,
        "in/sloth/k8s-getting-started.yml": 0,  # severities pageteam and slack: declared
    }
    for path, code in others.items():
        got = run_rulegen("import", "prometheus", path, "-o", "specs", cwd=tmp_path)
        assert got.code == code, got.err
    specs_for_stack(tmp_path / "specs")
    built = run_rulegen("build", "specs", cwd=tmp_path)
    assert built.code == 0, built.err
    assert "promtool test rules: 2 file(s) passed" in built.out


KUBE_ROUTING = """
    version: 1
    routing:
      severities: [critical, warning, info, none]
      group_by: [namespace]
      default_receiver: default
      receivers:
        - {name: default, webhook: {url: 'http://sink.internal/default'}}
        - {name: 'null', discard: true}
        - {name: critical, webhook: {url: 'http://sink.internal/critical'}}
      routes:
        - {match: {alertname: InfoInhibitor}, receiver: 'null'}
        - {match: {severity: critical}, receiver: critical}
      inhibit:
        - {source: {severity: critical}, target: {severity: warning}, equal: [namespace, alertname]}
        - {source: {alertname: InfoInhibitor}, target: {severity: info}, equal: [namespace]}
    """


@pytest.mark.slow
def test_kube_prometheus_severity_none_round_trips_through_a_validated_build(
    tmp_path: Path,
) -> None:
    shutil.copy(DATA / "kube-prometheus/kubePrometheus-prometheusRule.yaml", tmp_path / "k.yaml")
    got = run_rulegen("import", "prometheus", "k.yaml", "--service", "kube", "-o", "specs",
                      cwd=tmp_path)  # fmt: skip
    assert got.code == 0, got.err
    assert "refused 0" in got.err.splitlines()[0]
    specs_for_stack(tmp_path / "specs")
    write_tree(tmp_path, {"specs/routing.yaml": KUBE_ROUTING})

    built = run_rulegen("build", "specs", cwd=tmp_path)

    assert built.code == 0, built.err
    assert "promtool check rules: 1 file(s) ok" in built.out.splitlines()
    assert "amtool routing tests: 4 passed" in built.out.splitlines()
    rules = yaml.safe_load((tmp_path / "rules/prometheus/kube.rules.yml").read_text())
    severities = {r["alert"]: r["labels"]["severity"] for g in rules["groups"]
                  for r in g["rules"] if "alert" in r}  # fmt: skip
    assert severities == {
        "TargetDown": "warning", "Watchdog": "none", "InfoInhibitor": "none",
        "NodeNetworkInterfaceFlapping": "warning",
    }  # fmt: skip
    tests = yaml.safe_load((tmp_path / "rules/alertmanager/routing-tests.yml").read_text())
    receivers = {t["name"]: t["receivers"] for t in tests["tests"]}
    assert receivers["kube/InfoInhibitor/none"] == ["null"]
    assert receivers["kube/Watchdog/none"] == ["default"]
