"""``rulegen lint``: one case per check, positive and negative, with golden diagnostics.

Offline checks run on small specs; online checks run against a real Prometheus on 127.0.0.1
holding backfilled series of the last hours and one scrape job, so ``series/missing``,
``series/speed-missing`` and ``scrape/interval`` see a live server's answers.
"""

from __future__ import annotations

import json
import shutil
import textwrap
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO, CliResult, copy_specs, spec_errors, write_tree
from support.prometheus import (
    create_blocks_from_openmetrics,
    free_port,
    openmetrics,
    running,
)

from rulegen.lint import CHECKS, Check

Cli = Callable[..., CliResult]

HEAD = """
    version: 1
    service: web
    runbook_url: https://runbooks.example.com/{alert}
    """


CLEAN = "lint: 1 file(s), no findings\n"  # what a clean run prints


def spec(body: str) -> str:
    """The common head and ``body``, each dedented (they are indented differently)."""
    return textwrap.dedent(HEAD) + textwrap.dedent(body)


@dataclass(frozen=True)
class Case:
    """A spec and the exact lint output and exit code it must give."""

    id: str
    spec: str
    out: str
    code: int = 0
    argv: tuple[str, ...] = ()  # more ``lint`` arguments


CASES = [
    Case(
        "clean spec: no finding",
        spec("""
        alerts:
          - {signal: disk_utilization, threshold: 90%, for: 5m, severity: warning}
        """),
        CLEAN,
    ),
    Case(
        "rate/window: a 30s window at a 15s scrape",
        spec("""
        alerts:
          - {signal: disk_utilization, threshold: 90%, window: 30s, for: 5m,
             severity: warning}
        """),
        "specs/web.yaml:6:56: [rate/window] warning: DiskUtilizationHigh: window 30s holds "
        "fewer than 4 scrapes at scrape_interval 15s: one failed scrape leaves rate() too few "
        "samples (gaps, then false alarms); use at least 1m\n",
    ),
    Case(
        "rate/window: a 1m window at a 15s scrape is fine",
        spec("""
        alerts:
          - {signal: disk_utilization, threshold: 90%, window: 1m, for: 5m, severity: warning}
        """),
        CLEAN,
    ),
    Case(
        "for/too-short: 45s at a 30s evaluation interval",
        spec("""
        alerts:
          - {signal: requests_waiting, threshold: 5, for: 45s, severity: warning}
        """),
        "specs/web.yaml:6:51: [for/too-short] warning: RequestQueueBacklog: for 45s is "
        "shorter than two evaluations (evaluation_interval 30s): it behaves as no for at all; "
        "use at least 1m or 0s\n",
    ),
    Case(
        "for/too-short: 1m at a 30s evaluation interval is fine",
        spec("""
        alerts:
          - {signal: requests_waiting, threshold: 5, for: 1m, severity: warning}
        """),
        CLEAN,
    ),
    Case(
        "for/unreachable: %util > 95% for 30s over a 1m window",
        spec("""
        evaluation_interval: 15s
        alerts:
          - {signal: disk_utilization, threshold: 95%, for: 30s, severity: warning}
        """),
        "specs/web.yaml:7:53: [for/unreachable] warning: DiskUtilizationHigh: a burst at 100% "
        "must last 1m24s before it fires (the 1m window adds 54s to for 30s); bursts of 30s to "
        "1m24s never fire: shorten the window or lower the threshold\n",
    ),
    Case(
        "for/unreachable: for 1m outlasts the window's 54s",
        spec("""
        evaluation_interval: 15s
        alerts:
          - {signal: disk_utilization, threshold: 95%, for: 1m, severity: warning}
        """),
        CLEAN,
    ),
    Case(
        "slo/unreachable-tier: 95% leaves a page tier at 72% errors",
        spec("""
        slos:
          - name: api
            objective: 95%
            evaluation_interval: 1m
            sli: {ratio: {errors: 'e_total{code="5",job="w"}', total: 'e_total{job="w"}'}}
        """),
        "specs/web.yaml:6:5: [slo/unreachable-tier] warning: SLO api: tier 1h/5m fires only "
        "when more than 72% of events fail (burn rate 14.4× a 5% budget): a partial outage "
        "never reaches it; use a longer window or a smaller budget share\n",
    ),
    Case(
        "slo/unreachable-tier: 99.9% is fine",
        spec("""
        slos:
          - name: api
            objective: 99.9%
            evaluation_interval: 1m
            sli: {ratio: {errors: 'e_total{code="5",job="w"}', total: 'e_total{job="w"}'}}
        """),
        CLEAN,
    ),
    Case(
        "slo/retention: a 30d SLO on a 15d retention is an error",
        spec("""
        retention: 15d
        slos:
          - name: api
            objective: 99.9%
            evaluation_interval: 1m
            sli: {ratio: {errors: 'e_total{code="5",job="w"}', total: 'e_total{job="w"}'}}
        """),
        "specs/web.yaml:7:5: [slo/retention] error: SLO api: reads 30d of history but "
        "Prometheus keeps 15d (retention): the SLI and budget silently cover less than the "
        "window\n",
        1,
    ),
    Case(
        "slo/retention: 90d of retention holds a 30d SLO",
        spec("""
        retention: 90d
        slos:
          - name: api
            objective: 99.9%
            evaluation_interval: 1m
            sli: {ratio: {errors: 'e_total{code="5",job="w"}', total: 'e_total{job="w"}'}}
        """),
        CLEAN,
    ),
    Case(
        "annotation/runbook: a critical alert without a runbook",
        """
        version: 1
        service: web
        alerts:
          - {signal: requests_waiting, threshold: 5, for: 5m, severity: critical}
        """,
        "specs/web.yaml:1:1: [annotation/runbook] warning: no runbook_url: 1 alert(s) reach "
        "on-call without a runbook, 1 of them critical (RequestQueueBacklog…); set runbook_url "
        "(with {alert} for the alert's name)\n",
    ),
    Case(
        "annotation/runbook: only an info without a critical alert",
        """
        version: 1
        service: web
        alerts:
          - {signal: requests_waiting, threshold: 5, for: 5m, severity: warning}
        """,
        "specs/web.yaml:1:1: [annotation/runbook] info: no runbook_url: 1 alert(s) reach "
        "on-call without a runbook; set runbook_url (with {alert} for the alert's name)\n",
    ),
    Case(
        "label/severity: a warning diagnosis holds back a critical page",
        spec("""
        alerts:
          - {signal: ttft_latency, threshold: 500ms, for: 5m, severity: critical}
        diagnoses:
          - {kind: ttft_disk_bound, severity: warning}
        """),
        "specs/web.yaml:8:39: [label/severity] error: TTFTDiskBound (warning) holds back "
        "TTFTLatencyHigh (critical) on its host: while the diagnosis fires, that page is lost; "
        "give the diagnosis severity critical\n",
        1,
    ),
    Case(
        "label/severity: a critical diagnosis may hold back a critical page",
        spec("""
        alerts:
          - {signal: ttft_latency, threshold: 500ms, for: 5m, severity: critical}
        diagnoses:
          - {kind: ttft_disk_bound, severity: critical}
        """),
        CLEAN,
    ),
    Case(
        "label/severity: an SLO ticket more severe than its page",
        spec("""
        slos:
          - name: api
            objective: 99.9%
            evaluation_interval: 1m
            sli: {ratio: {errors: 'e_total{code="5",job="w"}', total: 'e_total{job="w"}'}}
            alerting: {page: {severity: warning}, ticket: {severity: critical}}
        """),
        "specs/web.yaml:10:15: [label/severity] warning: SLO api: the ticket (critical) is "
        "more severe than the page (warning)\n",
    ),
    Case(
        "label/severity: the declared order ranks severities",
        spec("""
        severities: [page, ticket]
        alerts:
          - {signal: ttft_latency, threshold: 500ms, for: 5m, severity: page}
        diagnoses:
          - {kind: ttft_disk_bound, severity: ticket}
        """),
        "specs/web.yaml:9:39: [label/severity] error: TTFTDiskBound (ticket) holds back "
        "TTFTLatencyHigh (page) on its host: while the diagnosis fires, that page is lost; "
        "give the diagnosis severity page\n",
        1,
    ),
    Case(
        "label/severity: an SLO ticket more severe than its page, by the declared order",
        spec("""
        severities: [P1, P2, P3]
        slos:
          - name: api
            objective: 99.9%
            evaluation_interval: 1m
            sli: {ratio: {errors: 'e_total{code="5",job="w"}', total: 'e_total{job="w"}'}}
            alerting: {page: {severity: P3}, ticket: {severity: P1}}
        """),
        "specs/web.yaml:11:15: [label/severity] warning: SLO api: the ticket (P1) is "
        "more severe than the page (P3)\n",
    ),
    Case(
        "annotation/runbook: an alert of a declared paging severity without a runbook",
        """
        version: 1
        service: web
        severities: [page, ticket]
        alerts:
          - {signal: requests_waiting, threshold: 5, for: 5m, severity: page}
        """,
        "specs/web.yaml:1:1: [annotation/runbook] warning: no runbook_url: 1 alert(s) reach "
        "on-call without a runbook, 1 of them paging (RequestQueueBacklog…); set runbook_url "
        "(with {alert} for the alert's name)\n",
    ),
    Case(
        "label/conflict: a spec label named instance overwrites the series' instance",
        spec("""
        alerts:
          - {signal: disk_utilization, threshold: 90%, for: 5m, severity: warning,
             labels: {instance: db}}
        """),
        "specs/web.yaml:7:25: [label/conflict] error: DiskUtilizationHigh: label 'instance' "
        "overwrites the series label of the same name (device, instance): all its alerts get "
        "one identity and Alertmanager merges them; rename the label\n",
        1,
    ),
    Case(
        "label/conflict: a team label is fine",
        spec("""
        alerts:
          - {signal: disk_utilization, threshold: 90%, for: 5m, severity: warning,
             labels: {team: db}}
        """),
        CLEAN,
    ),
    Case(
        "custom/untested: a custom alert with no examples and no test of its own",
        spec("""
        alerts:
          - {signal: custom, name: NodeDown, expr: 'up{job="node"} == 0', for: 5m,
             severity: critical}
        """),
        "specs/web.yaml:6:5: [custom/untested] warning: NodeDown: a custom alert with no "
        "examples and no promtool test of your own naming it: nothing shows when it fires; add "
        "examples: (input series, fires_at, silent_at) or a test in specs/tests/\n",
    ),
    Case(
        "selector/unscoped: an SLI on a metric with no matcher reads every service's series",
        spec("""
        slos:
          - name: availability
            objective: 99.9%
            sli: {ratio: {errors: 'e_total{code="5"}', total: e_total}}
        """),
        "specs/web.yaml:8:10: [selector/unscoped] warning: ErrorBudgetBurn: reads e_total with "
        "no label matcher, so it counts the series of every service and target; add the "
        "spec's selectors: for the metric's family (e.g. vllm: 'job=\"vllm\"') or a matcher "
        "of its own\n",
    ),
    Case(
        "selector/unscoped: a catalog alert whose family has no selector, custom alerts and a "
        "recording that read a metric with no matcher",
        spec("""
        alerts:
          - {signal: ttft_latency, threshold: 500ms, severity: warning}
          - {signal: custom, name: TargetDown, expr: up == 0, severity: critical}
          - signal: custom
            name: ConntrackFull
            expr: node_nf_conntrack_entries / node_nf_conntrack_entries_limit > 0.9
            severity: warning
          - {signal: custom, name: WebDown, expr: 'up{job="web"} == 0', severity: critical}
          - {signal: custom, name: WebLow, expr: 'web:up:sum < 1', severity: warning}
        recordings:
          - {record: 'web:up:sum', expr: sum(up)}
        """),
        "specs/web.yaml:6:5: [selector/unscoped] warning: TTFTLatencyHigh: reads "
        "vllm:time_to_first_token_seconds_bucket with no label matcher, so it counts the series "
        "of every service and target; add the spec's selectors: for the metric's family (e.g. "
        "vllm: 'job=\"vllm\"') or a matcher of its own\n"
        "specs/web.yaml:7:5: [selector/unscoped] warning: TargetDown: reads up with no label "
        "matcher, so it counts the series of every service and target; give it a label matcher "
        'in the expression (e.g. up{job="web"})\n'
        "specs/web.yaml:8:5: [selector/unscoped] warning: ConntrackFull: reads "
        "node_nf_conntrack_entries, node_nf_conntrack_entries_limit with no label matcher, so it "
        "counts the series of every service and target; give it a label matcher in the "
        'expression (e.g. up{job="web"})\n'
        "specs/web.yaml:15:5: [selector/unscoped] warning: web:up:sum: reads up with no label "
        "matcher, so it counts the series of every service and target; give it a label matcher "
        'in the expression (e.g. up{job="web"})\n',
        argv=("--disable", "custom/untested"),
    ),
    Case(
        "selector/unscoped: the family's selectors scope a catalog alert",
        spec("""
        selectors: {vllm: 'job="vllm"'}
        alerts:
          - {signal: ttft_latency, threshold: 500ms, severity: warning}
        """),
        CLEAN,
    ),
    Case(
        "selector/unscoped: an SLI of a known family gets the spec's selectors and is fine",
        spec("""
        selectors: {vllm: 'job="vllm"'}
        slos:
          - name: availability
            objective: 99.9%
            sli:
              ratio:
                errors: 'vllm:request_success_total{finished_reason="abort"}'
                total: 'vllm:request_success_total'
        """),
        CLEAN,
    ),
    Case(
        "promql/version: a function added after the declared release, and an experimental one",
        spec("""
        prometheus: {version: "2.42"}
        recordings:
          - record: job:latency:mean5m
            expr: 'histogram_avg(rate(http_request_duration_seconds[5m]))'
          - record: job:up:sorted
            expr: 'sort_by_label(up, "instance") or limitk by (job) (1, up)'
        """),
        "specs/web.yaml:8:11: [promql/version] error: job:latency:mean5m: histogram_avg needs "
        "Prometheus 2.51 or later (declared 2.42)\n"
        "specs/web.yaml:10:11: [promql/version] error: job:up:sorted: limitk needs Prometheus "
        "2.54 or later (declared 2.42)\n"
        "specs/web.yaml:10:11: [promql/version] error: job:up:sorted: sort_by_label needs "
        "Prometheus 2.49 or later (declared 2.42)\n",
        1,
    ),
    Case(
        "promql/version: experimental on 3.5, and a name inside a string is not a call",
        spec("""
        recordings:
          - record: job:up:sorted
            expr: 'sort_by_label(up{note="histogram_avg(x)"}, "instance")'
          - record: job:latency:mean5m
            expr: 'histogram_avg(rate(http_request_duration_seconds[5m]))'
        """),
        "specs/web.yaml:7:11: [promql/version] error: job:up:sorted: sort_by_label is "
        "experimental in Prometheus 3.5: Prometheus refuses it unless started with "
        "--enable-feature=promql-experimental-functions, and promtool refuses it\n",
        1,
    ),
    Case(
        "promql/version: quoted UTF-8 names before 3.0, none on 3.5",
        spec("""
        prometheus: {version: "2.53"}
        recordings:
          - record: job:requests:rate5m
            expr: 'sum by ("k8s.pod") (rate({"http.requests", code=~"5.."}[5m]))'
          - record: job:requests:plain
            expr: 'sum by (pod) (rate(http_requests_total{code=~"5.."}[5m]))'
        """),
        "specs/web.yaml:8:11: [promql/version] error: job:requests:rate5m: the UTF-8 name(s) "
        '"k8s.pod", "http.requests" need Prometheus 3.0 or later (declared 2.53), whose names '
        "may hold any character\n",
        1,
    ),
    Case(
        "promql/version: quoted UTF-8 names on 3.5 are fine",
        spec("""
        recordings:
          - record: job:requests:rate5m
            expr: 'sum by ("k8s.pod") (rate({"http.requests", code=~"5.."}[5m]))'
        """),
        CLEAN,
    ),
    Case(
        "custom/untested: a custom alert with examples is fine",
        spec("""
        alerts:
          - signal: custom
            name: NodeDown
            expr: 'up{job="node"} == 0'
            severity: critical
            annotations: {summary: 'a node is down', runbook_url: 'https://runbooks/node'}
            examples:
              - series: [{series: 'up{job="node",instance="a"}', values: '1 0 0'}]
                fires_at: [1m]
                silent_at: [0s]
                labels: {job: node, instance: a}
        """),
        CLEAN,
    ),
]


OTHER_CHECKS = ("--disable", "selector/unscoped")
"""What the cases of the other checks run with: their small specs have no ``selectors:``, so
``selector/unscoped`` would report every alert of them too."""


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_lint_check(case: Case, cli: Cli, in_tmp: Path) -> None:
    write_tree(in_tmp, {"specs/web.yaml": case.spec})
    others = () if case.id.startswith("selector/unscoped") else OTHER_CHECKS
    result = cli("lint", *case.argv, *others)
    assert (result.out, result.code) == (case.out, case.code), result.err
    assert result.err == ""


def test_custom_untested_counts_a_user_test_beside_the_specs(cli: Cli, in_tmp: Path) -> None:
    case = next(c for c in CASES if c.id.startswith("custom/untested: a custom alert with no"))
    test = """
        rule_files: [../prometheus/web.rules.yml]
        tests:
          - input_series: []
            alert_rule_test:
              - {eval_time: 1m, alertname: NodeDown, exp_alerts: []}
        """
    write_tree(in_tmp, {"specs/web.yaml": case.spec, "specs/tests/node.test.yml": test})
    assert (cli("lint").out, cli("lint", "specs/web.yaml").out) == (CLEAN, CLEAN)
    other = test.replace("NodeDown", "NodeUp")
    write_tree(in_tmp, {"specs/tests/node.test.yml": other})
    assert cli("lint").out == case.out


def test_json_and_github_formats(cli: Cli, in_tmp: Path) -> None:
    write_tree(in_tmp, {"specs/web.yaml": CASES[1].spec})
    result = cli("lint", "--format", "json", *OTHER_CHECKS)
    assert json.loads(result.out) == [
        {
            "file": "specs/web.yaml",
            "line": 6,
            "column": 56,
            "code": "rate/window",
            "severity": "warning",
            "path": "alerts[0].window",
            "message": CASES[1].out.split("warning: ", 1)[1].rstrip("\n"),
            "hint": "",
        }
    ]
    github = cli("lint", "--format", "github", *OTHER_CHECKS)
    assert github.out.startswith(
        "::warning file=specs/web.yaml,line=6,col=56,title=rulegen rate/window::"
        "DiskUtilizationHigh: window 30s"
    )


def test_the_example_specs_are_clean(cli: Cli, in_tmp: Path) -> None:
    repo = REPO
    copy_specs(repo / "specs", in_tmp / "specs")
    shutil.copytree(repo / "signals", in_tmp / "signals")
    result = cli("lint")
    files = "lint: 2 file(s), no findings\n"  # llm-serving.yaml and routing.yaml
    assert (result.code, result.out, result.err) == (0, files, "")


def test_a_broken_spec_exits_2(cli: Cli, in_tmp: Path) -> None:
    write_tree(in_tmp, {"specs/web.yaml": spec("alerts: []\n")})
    assert cli("lint").code == 2


BROKEN = spec("alerts: 3\n")
BROKEN_LINE = "specs/web.yaml:4:9: alerts: must be a list (got 3)"


@pytest.mark.parametrize(
    ("fmt", "out"),
    [
        ("text", ""),
        (
            "json",
            [
                {
                    "file": "specs/web.yaml", "line": 4, "column": 9, "code": "spec/type",
                    "severity": "error", "path": "alerts", "message": "must be a list (got 3)",
                    "hint": "",
                }
            ],
        ),
        (
            "github",
            "::error file=specs/web.yaml,line=4,col=9,title=rulegen spec/type::alerts: must be a "
            "list (got 3)\n",
        ),
    ],
    ids=[
        "text: the spec error on stderr, nothing on stdout",
        "json: the spec error is the JSON document on stdout",
        "github: the spec error is an annotation",
    ],
)  # fmt: skip
def test_a_spec_error_in_each_format(fmt: str, out: object, cli: Cli, in_tmp: Path) -> None:
    write_tree(in_tmp, {"specs/web.yaml": BROKEN})
    result = cli("lint", "--format", fmt)
    assert result.code == 2
    assert (json.loads(result.out) if fmt == "json" else result.out) == out
    trailer = "rulegen: 1 error(s)"  # lint writes nothing: no "nothing written"
    assert result.err.splitlines() == ([BROKEN_LINE, trailer] if fmt == "text" else [trailer])


def test_error_findings_in_each_format_exit_1(cli: Cli, in_tmp: Path) -> None:
    retention = next(c for c in CASES if c.code == 1)
    write_tree(in_tmp, {"specs/web.yaml": retention.spec})
    text = cli("lint")
    found = json.loads(cli("lint", "--format", "json").out)
    github = cli("lint", "--format", "github")
    assert (text.code, github.code) == (1, 1)
    assert text.out == retention.out
    assert [f"{f['file']}:{f['line']}:{f['column']}: [{f['code']}] {f['severity']}: "
            f"{f['message']}\n" for f in found] == text.out.splitlines(keepends=True)  # fmt: skip
    assert github.out.startswith(f"::error file=specs/web.yaml,line={found[0]['line']},")


# --- the registry, --list and --disable ------------------------------------------------------


def test_list_prints_every_registered_check(cli: Cli) -> None:
    result = cli("lint", "--list")
    assert result.code == 0
    rows = [line.split(None, 3) for line in result.out.splitlines()]
    assert [(r[0], r[1], r[2]) for r in rows] == [
        (c.id, c.severity, "online" if c.online else "offline") for c in CHECKS
    ]
    assert all(r[3] for r in rows)
    listed = json.loads(cli("lint", "--list", "--format", "json").out)
    assert [c["id"] for c in listed] == [c.id for c in CHECKS]


@pytest.mark.parametrize("check", CHECKS, ids=[c.id for c in CHECKS])
def test_every_check_has_a_summary_line_and_a_one_paragraph_doc(check: Check) -> None:
    assert check.id == f"{check.run.__module__.rsplit('.', 1)[1].replace('_', '/', 1)}".replace(
        "_", "-"
    ), "one module per check, named after its id (rate/window: checks/rate_window.py)"
    assert "\n" not in check.summary
    assert check.doc
    assert "\n\n" not in check.doc
    assert "``" not in check.doc  # plain text: lint --list --format json carries it
    assert check.severity in ("error", "warning", "info")
    docs = REPO / "docs" / "checks" / f"{check.id}.md"
    assert f"**Severity:** {check.severity}" in docs.read_text(encoding="utf-8")


WINDOW = spec("""
    alerts:
      - signal: disk_utilization<entry>
        threshold: 90%
        window: 30s<line>
        for: 5m<other>
        severity: warning
    """)


def window_spec(entry: str = "", line: str = "", other: str = "") -> str:
    """WINDOW with a comment at the end of the alert's first line, its window line, its for."""
    return WINDOW.replace("<entry>", entry).replace("<line>", line).replace("<other>", other)


@pytest.mark.parametrize(
    ("where", "silenced"),
    [
        ({"line": "  # rulegen: disable=rate/window"}, True),
        ({"entry": "  # rulegen: disable=rate/window"}, True),
        ({"line": "  # rulegen: disable=for/too-short, rate/window"}, True),
        ({"line": "  #rulegen:disable=rate/window,label/conflict"}, True),
        ({"other": "  # rulegen: disable=rate/window"}, False),
        ({"line": "  # rulegen: disable=for/too-short"}, False),
        ({"line": "  # see rulegen: disable=rate/window"}, False),
    ],
    ids=[
        "a comment on the finding's line silences it",
        "a comment on the line of its alert entry silences it",
        "a comma-separated list of ids works",
        "spaces are optional",
        "a comment on another line of the entry does not",
        "a comment naming another check does not",
        "only a comment that starts with rulegen: counts",
    ],
)
def test_inline_disable_comment(
    where: dict[str, str], silenced: bool, cli: Cli, in_tmp: Path
) -> None:
    text = window_spec(**where)
    write_tree(in_tmp, {"specs/web.yaml": text})
    result = cli("lint", *OTHER_CHECKS)
    assert result.err == ""
    assert (result.out == CLEAN) is silenced, result.out
    if not silenced:
        assert "[rate/window]" in result.out


def test_inline_disable_at_slo_and_diagnosis_entries(cli: Cli, in_tmp: Path) -> None:
    severities = spec("""
        alerts:
          - {signal: ttft_latency, threshold: 500ms, severity: critical}
        diagnoses:
          - kind: ttft_disk_bound  # rulegen: disable=label/severity
            severity: warning
        slos:
          - name: api  # rulegen: disable=label/severity
            objective: 99.9%
            evaluation_interval: 1m
            sli:
              ratio: {errors: 'http_requests_total{code=~"5.."}', total: http_requests_total}
            alerting:
              page: {severity: warning}
              ticket: {severity: critical}
        """)
    write_tree(in_tmp, {"specs/web.yaml": severities})
    assert cli("lint").out.count("[label/severity]") == 0
    write_tree(in_tmp, {"specs/web.yaml": severities.replace("  # rulegen: disable=", "  # ")})
    assert cli("lint").out.count("[label/severity]") == 2


def test_an_unknown_id_in_a_comment_is_a_spec_error(cli: Cli, in_tmp: Path) -> None:
    text = window_spec(line="  # rulegen: disable=rate/window,rate/windw")
    write_tree(in_tmp, {"specs/web.yaml": text})
    result = cli("lint")
    written = (in_tmp / "specs" / "web.yaml").read_text().splitlines()
    line, where = next((n, t) for n, t in enumerate(written, 1) if "windw" in t)
    column = where.index("rate/windw") + 1
    assert (result.code, result.out) == (2, "")
    assert tuple(result.err.splitlines()) == spec_errors(
        f"specs/web.yaml:{line}:{column}: unknown lint check 'rate/windw' in a "
        "`# rulegen: disable=` comment (rulegen lint --list shows the checks)",
        writes=False,
    )


@pytest.mark.parametrize(
    ("argv", "out"),
    [
        ((), CASES[1].out),
        (("--disable", "rate/window"), CLEAN),
        (("--disable", "for/too-short", "--disable", "rate/window"), CLEAN),
        (("--disable", "for/too-short"), CASES[1].out),
    ],
    ids=[
        "without --disable the finding shows",
        "--disable ID silences that check",
        "--disable is repeatable",
        "--disable of another check changes nothing",
    ],
)
def test_disable_option(argv: tuple[str, ...], out: str, cli: Cli, in_tmp: Path) -> None:
    write_tree(in_tmp, {"specs/web.yaml": CASES[1].spec})
    result = cli("lint", *OTHER_CHECKS, *argv)
    assert (result.code, result.out, result.err) == (0, out, "")


def test_disable_of_an_unknown_id_is_a_usage_error(cli: Cli, in_tmp: Path) -> None:
    write_tree(in_tmp, {"specs/web.yaml": CASES[1].spec})
    result = cli("lint", "--disable", "rate/window", "--disable", "rate/windw")
    assert (result.code, result.out) == (2, "")
    assert result.err.splitlines() == [
        "rulegen: error: lint: --disable: unknown check 'rate/windw' (rulegen lint --list shows "
        "the checks)"
    ]
    as_json = cli("lint", "--disable", "nope", "--format", "json")
    assert as_json.code == 2
    assert [(d["code"], d["file"]) for d in json.loads(as_json.out)] == [("usage", None)]


# --- online checks -----------------------------------------------------------------------

ONLINE = spec("""
    evaluation_interval: 1m
    selectors: {node: 'job="node"'}
    alerts:
      - {signal: disk_utilization, threshold: 90%, for: 5m, severity: warning}
      - {signal: disk_utilization, name: TypoDisk, threshold: 90%, for: 5m, severity: warning,
         metric: node_disk_io_time_seconds_totl}
      - {signal: network_saturation, threshold: 80%, for: 5m, severity: warning}
    """)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Prometheus with the last hours of node series and a job ``node`` scraped every 30s."""
    if shutil.which("prometheus") is None or shutil.which("promtool") is None:
        pytest.skip("needs prometheus and promtool")
    workdir = tmp_path_factory.mktemp("live")
    end = int(time.time()) // 60 * 60 - 3600
    stamps = range(end - 4 * 3600, end, 60)
    labels = 'instance="n1:9100", job="node"'
    series = [
        (f'node_disk_io_time_seconds_total{{device="nvme0n1", {labels}}}',
         [(t, 0.5 * (t - stamps[0])) for t in stamps]),
        (f'node_network_receive_bytes_total{{device="eth0", {labels}}}',
         [(t, 1e6 * (t - stamps[0])) for t in stamps]),
        (f'node_network_receive_bytes_total{{device="eth1", {labels}}}',
         [(t, 1e6 * (t - stamps[0])) for t in stamps]),
        (f'node_network_transmit_bytes_total{{device="eth0", {labels}}}',
         [(t, 0.0) for t in stamps]),
        (f'node_network_transmit_bytes_total{{device="eth1", {labels}}}',
         [(t, 0.0) for t in stamps]),
        (f'node_network_speed_bytes{{device="eth1", {labels}}}', [(t, 1.25e9) for t in stamps]),
    ]  # fmt: skip
    source = workdir / "series.om"
    source.write_text(openmetrics(series))
    data = workdir / "data"
    create_blocks_from_openmetrics(source, data)
    closed = f"127.0.0.1:{free_port()}"  # nothing listens: the target is down but configured
    job = {"job_name": "node", "scrape_interval": "30s", "static_configs": [{"targets": [closed]}]}
    with running(data, workdir, 60, [job]) as server:
        deadline = time.monotonic() + 30
        while not server.api("targets", {"state": "active"})["activeTargets"]:
            assert time.monotonic() < deadline, "the scrape target never showed up"
            time.sleep(0.2)
        yield server.url


@pytest.mark.slow
def test_online_checks(live: str, cli: Cli, in_tmp: Path) -> None:
    write_tree(in_tmp, {"specs/web.yaml": ONLINE})
    result = cli("lint", "--prometheus", live)
    assert result.err == ""
    assert result.code == 1
    assert result.out == (
        "specs/web.yaml:8:5: [scrape/interval] warning: DiskUtilizationHigh: job node is "
        "scraped every 30s, so the 1m window holds fewer than 4 scrapes; use at least 2m\n"
        "specs/web.yaml:9:5: [scrape/interval] warning: TypoDisk: job node is scraped every "
        "30s, so the 1m window holds fewer than 4 scrapes; use at least 2m\n"
        "specs/web.yaml:9:5: [series/missing] error: TypoDisk: no series matches "
        'node_disk_io_time_seconds_totl{job="node"} in the last day: a typo, a metric renamed '
        "by an exporter upgrade (vLLM renames often), or a target not scraped\n"
        "specs/web.yaml:11:5: [scrape/interval] warning: NetworkInterfaceSaturated: job node "
        "is scraped every 30s, so the 1m window holds fewer than 4 scrapes; use at least 2m\n"
        "specs/web.yaml:11:5: [series/speed-missing] warning: NetworkInterfaceSaturated: 1 "
        "physical NIC(s) have no usable node_network_speed_bytes (n1:9100/eth0) and it "
        "has no link_speed: it can never fire for them; set link_speed or exclude them in "
        "virtual_devices\n"
    )


def test_online_unreachable_prometheus_exits_2(cli: Cli, in_tmp: Path) -> None:
    write_tree(in_tmp, {"specs/web.yaml": ONLINE})
    url = f"http://127.0.0.1:{free_port()}"
    result = cli("lint", "--prometheus", url)
    assert result.code == 2
    assert result.err.startswith(f"rulegen: error: cannot reach Prometheus at {url}: ")
    assert result.err.count("\n") == 1


@pytest.mark.slow
def test_online_checks_pass_on_a_matching_spec(live: str, cli: Cli, in_tmp: Path) -> None:
    """Negatives: series that exist, a 2m window at a 30s scrape, a NIC speed given."""
    clean = spec("""
        evaluation_interval: 1m
        scrape_interval: 30s
        selectors: {node: 'job="node"'}
        alerts:
          - {signal: disk_utilization, threshold: 90%, window: 2m, for: 5m, severity: warning}
          - {signal: network_saturation, threshold: 80%, window: 2m, for: 5m,
             severity: warning, link_speed: 10Gbps}
        """)
    write_tree(in_tmp, {"specs/web.yaml": clean})
    result = cli("lint", "--prometheus", live)
    assert (result.code, result.out, result.err) == (0, CLEAN, "")
