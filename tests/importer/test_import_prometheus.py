"""``rulegen import prometheus`` without building: what is kept, adapted and refused (with
file, line and field), the spec text it writes, the moved promtool tests, the command's
output files and exit codes."""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult, write_tree

from rulegen.errors import SpecError, UsageError
from rulegen.importer.command import importer
from rulegen.importer.model import ImportOptions, ImportResult
from rulegen.importer.prometheus import import_files, sanitise
from rulegen.importer.writer import render_spec

DATA = Path(__file__).parent / "data"


def run(text: str, tmp: Path, name: str = "rules.yml", **options: str) -> ImportResult:
    write_tree(tmp, {name: text})
    return import_files([Path(name)], ImportOptions(**options))


def notes(result: ImportResult) -> tuple[list[str], list[str]]:
    return [str(n) for n in result.adapted], [str(n) for n in result.refused]


ONE_GROUP = """
    groups:
    - name: g
      {extra}
      rules:
      - alert: Up
        expr: up == 0
        labels: {{severity: warning}}
"""

REFUSALS = [
    ("limit on a group refuses its rules", ONE_GROUP.format(extra="limit: 10"),
     ["rules.yml:3: groups[0].limit: group g: rulegen's rule groups have no limit; its rules "
      "are not imported (remove the field to import them)"]),
    ("query_offset on a group refuses its rules", ONE_GROUP.format(extra="query_offset: 1m"),
     ["rules.yml:3: groups[0].query_offset: group g: rulegen's rule groups have no query "
      "offset; its rules are not imported (remove the field to import them)"]),
    ("an unknown group field refuses the group", ONE_GROUP.format(extra="source_tenants: [a]"),
     ["rules.yml:3: groups[0].source_tenants: group g: unknown field of a rule group; its "
      "rules are not imported"]),
    ("an unknown rule field is refused at its key", """
        groups:
        - name: g
          rules:
          - alert: Up
            expr: up == 0
            labels: {severity: warning}
            keep_firing: 5m
     """, ["rules.yml:7: groups[0].rules[0].keep_firing: alert Up: not a field of a rule"]),
    ("an alert without severity is refused without --severity", """
        groups:
        - name: g
          rules:
          - alert: Up
            expr: up == 0
     """, ["rules.yml:4: groups[0].rules[0].labels: alert Up: no severity label; rulegen needs "
           "one of critical, warning, info (add the label, or import with --severity LEVEL)"]),
    ("a severity that is no name (a template) is refused", """
        groups:
        - name: g
          rules:
          - alert: Up
            expr: up == 0
            labels:
              severity: '{{ $labels.level }}'
     """, ["rules.yml:7: groups[0].rules[0].labels.severity: alert Up: severity "
           "'{{ $labels.level }}' is not a name rulegen can declare ([A-Za-z0-9][A-Za-z0-9_.-]*); "
           "change the label in the source and import again"]),
    ("an alert name rulegen refuses is refused", """
        groups:
        - name: g
          rules:
          - alert: 'job:up'
            expr: up == 0
            labels: {severity: info}
     """, ["rules.yml:4: groups[0].rules[0].alert: alert name 'job:up' is not one rulegen "
           "accepts ([A-Za-z_][A-Za-z0-9_]*)"]),
    ("a second alert of the same name and severity is refused; another severity is not", """
        groups:
        - name: g
          rules:
          - alert: Up
            expr: up == 0
            labels: {severity: critical}
          - alert: Up
            expr: up == 0
            for: 1h
            labels: {severity: warning}
          - alert: Up
            expr: up == 0
            for: 2h
            labels: {severity: warning}
     """, ["rules.yml:11: groups[0].rules[2].alert: alert Up: an alert of this name and "
           "severity warning is already imported into service rules (rules.yml:7); rulegen's "
           "custom alerts share a name only with another severity"]),
    ("an alert returning a scalar is refused", """
        groups:
        - name: g
          rules:
          - alert: Always
            expr: '1'
            labels: {severity: info}
     """, ["rules.yml:5: groups[0].rules[0].expr: alert Always: returns a scalar, not an "
           "instant vector (rulegen's alerts must)"]),
    ("a for or keep_firing_for longer than 365d is refused", """
        groups:
        - name: g
          rules:
          - alert: Slow
            expr: up == 0
            for: 366d
            labels: {severity: info}
          - alert: Sticky
            expr: up == 0
            keep_firing_for: 2y
            labels: {severity: info}
     """, ["rules.yml:6: groups[0].rules[0].for: alert Slow: 366d is longer than rulegen's limit "
           "of 365d on `for`",
           "rules.yml:10: groups[0].rules[1].keep_firing_for: alert Sticky: 2y is longer than "
           "rulegen's limit of 365d on `keep_firing_for`"]),
    ("a service label other than the service is refused", """
        groups:
        - name: g
          rules:
          - record: a:b
            expr: sum(up)
            labels: {service: web, team: x}
          - record: a:c
            expr: sum(up)
            labels: {service: db}
     """, ["rules.yml:6: groups[0].rules[0].labels.service: record a:b: its service label 'web' "
           "differs from the service 'rules'; rulegen sets that label itself (import it with "
           "--service web)",
           "rules.yml:9: groups[0].rules[1].labels.service: record a:c: its service label 'db' "
           "differs from the service 'rules'; rulegen sets that label itself (import it with "
           "--service db)"]),
    ("alertname is Prometheus' own label", """
        groups:
        - name: g
          rules:
          - alert: Up
            expr: up == 0
            labels: {severity: info, alertname: Other}
     """, ["rules.yml:6: groups[0].rules[0].labels.alertname: alert Up: the label alertname is "
           "Prometheus' own"]),
    ("a rule with both alert and record is refused", """
        groups:
        - name: g
          rules:
          - alert: Up
            record: up:sum
            expr: up == 0
     """, ["rules.yml:4: groups[0].rules[0]: a rule needs exactly one of `alert` and `record`"]),
    ("a recording with for is refused", """
        groups:
        - name: g
          rules:
          - record: up:sum
            expr: sum(up)
            for: 5m
     """, ["rules.yml:6: groups[0].rules[0].for: record up:sum: not a field of a recording rule"]),
    ("a group name used twice is refused", """
        groups:
        - name: g
          rules:
          - record: a:b
            expr: sum(up)
        - name: g
          rules:
          - record: a:c
            expr: sum(up)
     """, ["rules.yml:6: groups[1].name: group g: a group of this name is already imported into "
           "service rules (rules.yml:2); rule group names are unique across a build"]),
    ("invalid PromQL is refused", """
        groups:
        - name: g
          rules:
          - record: a:b
            expr: sum(up
     """, None),
    ("a document that is no rule file is refused", """
        groups:
        - name: g
          rules:
          - record: a:b
            expr: sum(up)
        ---
        route: {receiver: x}
     """, ["rules.yml:7: route: unknown field of a rule file (it holds only `groups`)",
           "rules.yml:7: not a rule file (no `groups`), PrometheusRule or promtool test file"]),
    ("a PrometheusRule with an unknown spec field is refused", """
        apiVersion: monitoring.coreos.com/v1
        kind: PrometheusRule
        metadata: {name: x}
        spec:
          groups: []
          tenant: a
     """, ["rules.yml:6: spec.tenant: unknown field of a PrometheusRule's spec"]),
    ("another kind is refused", """
        apiVersion: v1
        kind: ConfigMap
        data: {}
     """, ["rules.yml:1: not a PrometheusRule of monitoring.coreos.com/v1 (got v1/ConfigMap)"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "refused"),
    [
        # a template in a label or annotation is checked by promtool: slow
        pytest.param(*c[1:], id=c[0], marks=[pytest.mark.slow] if "{{" in c[1] else [])
        for c in REFUSALS
    ],
)
def test_what_cannot_be_mapped_is_refused_with_file_line_and_field(
    in_tmp: Path, text: str, refused: list[str] | None
) -> None:
    result = run(text, in_tmp)
    got = notes(result)[1]
    if refused is None:
        assert len(got) == 1
        assert got[0].startswith("rules.yml:5: groups[0].rules[0].expr: record a:b: invalid PromQL")
    else:
        assert got == refused
    assert not any(f"({n.file}:{n.line})" in " ".join(result.imported) for n in result.refused)


@pytest.mark.slow  # promtool checks the imported annotation templates
def test_the_awesome_node_exporter_rules_are_imported_with_the_week_long_for(in_tmp: Path) -> None:
    shutil.copy(DATA / "node-exporter.yml", in_tmp)
    result = import_files([Path("node-exporter.yml")], ImportOptions())
    assert len(result.imported) == 35
    assert notes(result) == ([], [])
    underused = [a for a in result.services[0].document["alerts"]
                 if a["name"] == "HostCpuIsUnderutilized"]  # fmt: skip
    assert [a["for"] for a in underused] == ["1w"]
    (service,) = result.services
    assert service.service == "node-exporter"
    alert = service.document["alerts"][0]
    assert alert == {
        "signal": "custom",
        "name": "HostOutOfMemory",
        "expr": "(node_memory_MemAvailable_bytes / node_memory_MemTotal_bytes < .10)",
        "for": "2m",
        "severity": "warning",
        "annotations": {
            "summary": "Host out of memory (instance {{ $labels.instance }})",
            "description": "Node memory is filling up (< 10% left)\n  VALUE = {{ $value }}\n"
            "  LABELS = {{ $labels }}",
        },
        "group": "NodeExporter",
    }


SMALL = """
    # two groups, one with group labels and an interval
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
        labels: {team: api, page: "true"}
        annotations:
          summary: '{{ $labels.job }} errors at {{ $value | humanizePercentage }}'
    - name: host
      rules:
      - alert: NodeDown
        expr: up{job="node"} == 0
"""

SMALL_SPEC = """\
version: 1
# service: from --service
service: web
groups:
  api:
    interval: 1m
  # host: no interval in the source; rulegen uses the spec's evaluation_interval
  host: {}
recordings:
  - record: job:http_requests:rate5m
    expr: sum by (job) (rate(http_requests_total[5m]))
    labels:
      team: web
    group: api
alerts:
  - signal: custom
    name: HighErrors
    expr: |-
      sum by (job) (rate(http_errors_total[5m]))
        / sum by (job) (rate(http_requests_total[5m])) > 0.05
    for: 10m
    keep_firing_for: 5m
    # severity: from --severity (the rule had no severity label)
    severity: critical
    labels:
      team: api
      page: 'true'
    annotations:
      summary: '{{ $labels.job }} errors at {{ $value | humanizePercentage }}'
    group: api
  - signal: custom
    name: NodeDown
    expr: up{job="node"} == 0
    # severity: from --severity (the rule had no severity label)
    severity: critical
    annotations: {}
    group: host
"""


@pytest.mark.slow  # promtool checks the imported annotation templates
def test_the_spec_keeps_every_field_and_comments_each_choice(in_tmp: Path) -> None:
    result = run(SMALL, in_tmp, service="web", severity="critical")
    (service,) = result.services
    assert render_spec(service) == SMALL_SPEC
    assert notes(result) == (
        ["rules.yml:15: groups[0].rules[1].labels: alert HighErrors: no severity label; "
         "severity critical from --severity",
         "rules.yml:5: groups[0].labels: group api: the group's labels are written into each "
         "of its rules (the rule's own win, as in Prometheus)",
         "rules.yml:20: groups[1].rules[0].labels: alert NodeDown: no severity label; severity "
         "critical from --severity"],
        [],
    )  # fmt: skip
    assert result.imported == [
        "record job:http_requests:rate5m (rules.yml:7)",
        "HighErrors (rules.yml:9)",
        "NodeDown (rules.yml:20)",
    ]


def test_a_prometheus_rule_file_of_several_documents_keeps_its_line_numbers(in_tmp: Path) -> None:
    text = """
        apiVersion: monitoring.coreos.com/v1
        kind: PrometheusRule
        metadata:
          name: a
          namespace: obs
          labels: {prometheus: k8s}
        spec:
          groups:
          - name: a
            rules:
            - record: a:up
              expr: sum(up)
        ---
        # the second object
        apiVersion: monitoring.coreos.com/v1
        kind: PrometheusRule
        metadata: {name: b, namespace: obs, labels: {prometheus: k8s}}
        spec:
          groups:
          - name: b
            limit: 5
            rules:
            - record: b:up
              expr: sum(up)
    """
    result = run(text, in_tmp, name="objects.yaml")
    assert notes(result) == (
        ["objects.yaml:4: metadata.name: not kept (rulegen names the PrometheusRule after the "
         "service; `--target operator` writes it)",
         "objects.yaml:17: metadata.name: not kept (rulegen names the PrometheusRule after the "
         "service; `--target operator` writes it)"],
        ["objects.yaml:21: spec.groups[0].limit: group b: rulegen's rule groups have no limit; "
         "its rules are not imported (remove the field to import them)"],
    )  # fmt: skip
    (service,) = result.services
    assert service.document["targets"] == {
        "operator": {"namespace": "obs", "labels": {"prometheus": "k8s"}}
    }
    assert [r["record"] for r in service.document["recordings"]] == ["a:up"]


@pytest.mark.parametrize(
    ("name", "text", "service"),
    [
        ("My_Rules.v2.yml", "groups: []\n", "my-rules"),
        (
            "x.yml",
            "groups: [{name: g, rules: [{record: a, expr: '1', labels: {service: db}}]}]",
            "db",
        ),  # fmt: skip
        ("__.yml", "groups: []\n", "imported"),
    ],
    ids=["the file stem, sanitised", "the rules' one service label", "a stem with no letters"],
)
def test_the_service_name_comes_from(in_tmp: Path, name: str, text: str, service: str) -> None:
    text += "" if "record" in text else ""
    write_tree(in_tmp, {name: text})
    result = import_files([Path(name)], ImportOptions())
    if result.services:
        assert result.services[0].service == service
    else:
        assert sanitise(Path(name).name.split(".")[0]) == service


def test_a_file_that_is_no_yaml_is_a_spec_error_at_its_position(in_tmp: Path) -> None:
    write_tree(in_tmp, {"bad.yml": "groups:\n  - name: [\n"})
    with pytest.raises(SpecError) as caught:
        import_files([Path("bad.yml")], ImportOptions())
    assert caught.value.diagnostics[0].file == "bad.yml"
    write_tree(in_tmp, {"tag.yml": "groups: !!python/object:os.system []\n"})
    with pytest.raises(SpecError, match="explicit YAML tags are not allowed"):
        import_files([Path("tag.yml")], ImportOptions())


# ---- moved promtool tests ------------------------------------------------------------------

RULES = """
    groups:
    - name: g
      rules:
      - record: job:up:sum
        expr: sum by (job) (up)
      - alert: Down
        expr: up == 0
"""

TEST = """
    # a comment that does not survive
    rule_files: [../rules.yml]
    tests:
    - interval: 1m
      input_series:
      - {series: 'up{job="a"}', values: '0x5'}
      alert_rule_test:
      - eval_time: 5m
        alertname: Down
        exp_alerts:
        - exp_labels: {job: a}
      promql_expr_test:
      - eval_time: 5m
        expr: job:up:sum
        exp_samples:
        - {labels: 'job:up:sum{job="a"}', value: 0}
        - {labels: '{job="a"}', value: 0}
"""


def test_a_moved_test_loads_the_generated_rules_and_expects_the_added_labels(
    in_tmp: Path,
) -> None:
    write_tree(in_tmp, {"rules.yml": RULES, "tests/down.yml": TEST})
    result = import_files(
        [Path("rules.yml"), Path("tests/down.yml")], ImportOptions("web", "warning")
    )
    (test,) = result.user_tests
    assert (test.name, test.source) == ("down.yml", "tests/down.yml")
    assert test.text == textwrap.dedent("""\
        rule_files:
          - ../prometheus/web.rules.yml
        tests:
          - interval: 1m
            input_series:
              - series: up{job="a"}
                values: '0x5'
            alert_rule_test:
              - eval_time: 5m
                alertname: Down
                exp_alerts:
                  - exp_labels:
                      job: a
                      service: web
                      severity: warning
            promql_expr_test:
              - eval_time: 5m
                expr: job:up:sum
                exp_samples:
                  - labels: job:up:sum{job="a", service="web"}
                    value: 0
                  - labels: '{job="a"}'
                    value: 0
    """)
    assert str(result.adapted[-1]) == (
        "tests/down.yml:2: rule_files: rule_files → ../prometheus/web.rules.yml; the labels "
        "rulegen adds (service, and severity from --severity) written into 1 expected alert(s) "
        "and `service` into 1 expected sample(s) of imported recordings; comments are not kept"
    )


def test_without_severity_the_moved_tests_note_names_no_flag(in_tmp: Path) -> None:
    """The note on a moved test names ``--severity`` only when it was given."""
    labelled = RULES.replace("expr: up == 0", "expr: up == 0\n        labels: {severity: warning}")
    write_tree(in_tmp, {"rules.yml": labelled, "tests/down.yml": TEST})
    result = import_files([Path("rules.yml"), Path("tests/down.yml")], ImportOptions("web"))
    note = str(result.adapted[-1])
    assert "the labels rulegen adds (service, severity) written into 1 expected alert(s)" in note
    assert "--severity" not in note


@pytest.mark.parametrize(
    ("files", "refused"),
    [
        ({"tests/down.yml": TEST},
         "tests/down.yml:2: rule_files[0]: ../rules.yml is not among the imported rule files "
         "(import it too); the test file is not imported"),
        ({"rules.yml": RULES.replace("up == 0", "up == 0\n    labels: {severity: x}"),
          "tests/down.yml": TEST},
         "tests/down.yml:9: tests[0].alert_rule_test[0].alertname: alert Down was not imported "
         "(see above); the test file is not imported"),
    ],
    ids=["its rule file is not imported", "it tests an alert that was refused"],
)  # fmt: skip
def test_a_test_file_that_cannot_move_is_refused(
    in_tmp: Path, files: dict[str, str], refused: str
) -> None:
    write_tree(in_tmp, files)
    result = import_files([Path(f) for f in sorted(files)], ImportOptions("web"))
    assert str(result.refused[-1]) == refused
    assert result.user_tests == []


# ---- the command ---------------------------------------------------------------------------


@pytest.mark.slow  # promtool checks the imported annotation templates
def test_one_service_is_printed_on_stdout_and_the_summary_on_stderr(
    in_tmp: Path, cli: Callable[..., CliResult]
) -> None:
    write_tree(in_tmp, {"rules.yml": SMALL})
    got = cli("import", "prometheus", "rules.yml", "--service", "web")
    assert got.code == 1
    assert got.out.startswith("# Imported by rulegen import prometheus from rules.yml. ")
    assert got.err.splitlines() == [
        "rulegen import prometheus: imported 1, adapted 1, refused 2",
        "  adapted: rules.yml:5: groups[0].labels: group api: the group's labels are written "
        "into each of its rules (the rule's own win, as in Prometheus)",
        "  refused: rules.yml:15: groups[0].rules[1].labels: alert HighErrors: no severity "
        "label; rulegen needs one of critical, warning, info (add the label, or import with "
        "--severity LEVEL)",
        "  refused: rules.yml:20: groups[1].rules[0].labels: alert NodeDown: no severity label; "
        "rulegen needs one of critical, warning, info (add the label, or import with --severity "
        "LEVEL)",
    ]
    full = cli("import", "prometheus", "rules.yml", "--service", "web", "--severity", "critical")
    assert (full.code, full.out.split("\n", 1)[1]) == (0, SMALL_SPEC)


@pytest.mark.slow  # promtool checks the imported annotation templates
def test_the_output_folder_takes_specs_and_tests_and_only_replaces_its_own_files(
    in_tmp: Path, cli: Callable[..., CliResult]
) -> None:
    write_tree(in_tmp, {"rules.yml": RULES, "other.yml": SMALL, "tests/down.yml": TEST})
    args = ("import", "prometheus", "rules.yml", "other.yml", "tests/down.yml")
    two = cli(*args, "--severity", "info")
    assert two.code == 2
    assert two.err.endswith(
        "rulegen: error: import: 2 services (rules, other): name an output folder with -o "
        "OUT_DIR; nothing written\n"
    )
    got = cli(*args, "--severity", "info", "-o", "specs")
    assert got.code == 0, got.err
    assert got.err.endswith("wrote 3 file(s) to specs/: rules.yaml, other.yaml, tests/down.yml\n")
    assert sorted(p.as_posix() for p in Path("specs").rglob("*.y*ml")) == [
        "specs/other.yaml", "specs/rules.yaml", "specs/tests/down.yml"
    ]  # fmt: skip
    again = cli(*args, "--severity", "info", "-o", "specs")
    assert again.code == 0
    Path("specs/other.yaml").write_text("# my own edits\nversion: 1\n", encoding="utf-8")
    before = Path("specs/rules.yaml").read_text(encoding="utf-8")
    refused = cli(*args, "--severity", "warning", "-o", "specs")
    assert refused.code == 2
    assert refused.err.splitlines()[-2:] == [
        "rulegen: specs/other.yaml: exists and was not written by rulegen import; refusing to "
        "overwrite (move it, or choose another -o)",
        "rulegen: nothing written",
    ]
    assert Path("specs/rules.yaml").read_text(encoding="utf-8") == before


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("import", "prometheus", "nope.yml"), "import: nope.yml: no such file"),
        (("import", "prometheus", "r.yml", "--service", "Web"),
         "import: --service 'Web': a service name is lower-case letters, digits and '-', at most "
         "63 characters"),
        (("import", "nagios", "r.yml"), "import: argument KIND: invalid choice: 'nagios' (choose "
         "from 'prometheus', 'sloth', 'openslo', 'pyrra')"),
        (("import", "prometheus", "r.yml", "--severity", "p 1"), "import: argument --severity: "
         "'p 1' is not a severity name ([A-Za-z0-9][A-Za-z0-9_.-]*)"),
    ],
    ids=["a missing file", "a service name rulegen refuses", "an unknown kind",
         "a severity that is no name"],
)  # fmt: skip
def test_usage_errors_exit_2(
    in_tmp: Path, cli: Callable[..., CliResult], argv: tuple[str, ...], message: str
) -> None:
    write_tree(in_tmp, {"r.yml": RULES})
    got = cli(*argv)
    assert (got.code, got.out) == (2, "")
    assert got.err == f"rulegen: error: {message}\n"


def test_nothing_imported_exits_1(in_tmp: Path, cli: Callable[..., CliResult]) -> None:
    write_tree(in_tmp, {"r.yml": ONE_GROUP.format(extra="limit: 3")})
    got = cli("import", "prometheus", "r.yml")
    assert (got.code, got.out) == (1, "")
    assert got.err.endswith("rulegen: nothing imported\n")


def test_a_kind_whose_module_is_missing_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match=r"this rulegen has no nagios importer \(rulegen"):
        importer("nagios")


def test_a_group_name_of_another_service_in_the_same_import_is_refused(in_tmp: Path) -> None:
    rules = "groups: [{name: g, rules: [{record: 'a:b', expr: sum(up)}]}]\n"
    write_tree(in_tmp, {"one.yml": rules, "two.yml": rules})
    result = import_files([Path("one.yml"), Path("two.yml")], ImportOptions())
    assert [s.service for s in result.services] == ["one"]
    assert notes(result)[1] == [
        "two.yml:1: groups[0].name: group g: a group of this name is already imported into "
        "service one (one.yml:1); rule group names are unique across a build"
    ]


# --- severities outside critical, warning and info (docs/migrating.md#severities) -----------

KUBE_PROMETHEUS = DATA / "kube-prometheus" / "kubePrometheus-prometheusRule.yaml"


@pytest.mark.slow  # promtool checks the imported annotation templates
def test_kube_prometheus_severity_none_is_imported_and_declared(
    in_tmp: Path, cli: Callable[..., CliResult]
) -> None:
    shutil.copy(KUBE_PROMETHEUS, in_tmp / "kube.yaml")

    got = cli("import", "prometheus", "kube.yaml", "--service", "kube")

    assert got.code == 0, got.err
    assert got.err.splitlines() == [
        "rulegen import prometheus: imported 12, adapted 2, refused 0",
        "  adapted: kube.yaml:10: metadata.name: not kept (rulegen names the PrometheusRule "
        "after the service; `--target operator` writes it)",
        "  adapted: kube.yaml:37: spec.groups[0].rules[1].labels.severity: alert Watchdog: "
        "severity 'none' is not one of rulegen's default severities (critical, warning, info); "
        "the spec declares it in `severities:`, after them (docs/migrating.md#severities)",
    ]
    head = got.out.split("targets:", 1)[0].split("\n", 1)[1]
    assert head == (
        "version: 1\n"
        "# service: from --service\n"
        "service: kube\n"
        "# severities: rulegen's default ones, then those of the rule files: none "
        "(kube.yaml:37).\n"
        "# Most severe first; the first pages ({name: X, pages: true} for another). Move the "
        "list\n"
        "# into the defaults file your specs extend to share it (docs/migrating.md#severities)\n"
        "severities:\n"
        "  - critical\n"
        "  - warning\n"
        "  - info\n"
        "  - none\n"
        "# targets.operator: from the PrometheusRule's metadata\n"
    )
    assert got.out.count("severity: none\n") == 2  # Watchdog and InfoInhibitor


def test_a_severity_from_the_command_line_is_declared_too(in_tmp: Path) -> None:
    result = run(ONE_GROUP.format(extra="").replace("labels: {severity: warning}", ""), in_tmp,
                 severity="page")  # fmt: skip
    (service,) = result.services
    assert service.document["severities"] == ["critical", "warning", "info", "page"]
    assert service.document["alerts"][0]["severity"] == "page"
    assert notes(result) == ([
        "rules.yml:5: groups[0].rules[0].labels: alert Up: no severity label; severity page "
        "from --severity",
        "rules.yml:5: groups[0].rules[0].labels: alert Up: severity 'page' is not one of "
        "rulegen's default severities (critical, warning, info); the spec declares it in "
        "`severities:`, after them (docs/migrating.md#severities)",
    ], [])  # fmt: skip


def test_default_severities_declare_nothing(in_tmp: Path) -> None:
    result = run(ONE_GROUP.format(extra=""), in_tmp)
    assert "severities" not in result.services[0].document
