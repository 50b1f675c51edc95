"""``severities:``: a repository's own severity values (docs/spec.md#severities).

A spec (or the defaults file it extends) declares the severities its alerts take, most severe
first, and which page. Every severity the spec names must be declared (an error at the value,
naming the declared ones and where they are declared); what rulegen picks itself follows the
declaration (an SLO's page and ticket, the alert on incomplete SLO recordings, a diagnosis'
default). Without a declaration: critical, warning and info, critical paging, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from conftest import CliResult, spec_errors, write_tree

Cli = Callable[..., CliResult]


@dataclass(frozen=True)
class Case:
    """A broken ``specs/web.yaml`` (and other files) and the exact stderr of the build."""

    behaviour: str
    spec: str
    stderr: tuple[str, ...]
    files: Mapping[str, str] = field(default_factory=dict)


CASES = [
    Case(
        "a severity outside the default ones names them",
        """
        version: 1
        service: web
        alerts:
          - {signal: disk_await, threshold: 5ms, severity: none}
        """,
        spec_errors(
            "specs/web.yaml:4:52: alerts[0].severity: must be 'critical', 'warning' or 'info' "
            "(got 'none')"
        ),
    ),
    Case(
        "an undeclared severity names the declared ones and where they are declared",
        """
        version: 1
        service: web
        severities: [page, ticket, none]
        alerts:
          - {signal: disk_await, threshold: 5ms, severity: critical}
          - {signal: custom, name: Up, expr: up == 0, severity: none}
        """,
        spec_errors(
            "specs/web.yaml:5:52: alerts[0].severity: must be 'page', 'ticket' or 'none', the "
            "severities declared at specs/web.yaml:3:13 (got 'critical')"
        ),
    ),
    Case(
        "a declaration inherited from a defaults file is named where it is written",
        """
        version: 1
        service: web
        extends: defaults.yaml
        alerts:
          - {signal: disk_await, threshold: 5ms, severity: warning}
        """,
        spec_errors(
            "specs/web.yaml:5:52: alerts[0].severity: must be 'page' or 'ticket', the "
            "severities declared at specs/defaults.yaml:3:15 (got 'warning')"
        ),
        {"specs/defaults.yaml": "version: 1\ndefaults:\n  severities: [page, ticket]\n"},
    ),
    Case(
        "an SLO's page, an SLO's ticket and a diagnosis take declared severities only",
        """
        version: 1
        service: web
        severities: [page, ticket]
        slos:
          - name: availability
            objective: 99.9%
            sli: {ratio: {errors: 'e_total{code="5"}', total: e_total}}
            alerting: {page: {severity: critical}, ticket: {severity: warning}}
        diagnoses:
          - {kind: ttft_disk_bound, severity: info}
        """,
        spec_errors(
            "specs/web.yaml:8:33: slos[0].alerting.page.severity: must be 'page' or 'ticket', "
            "the severities declared at specs/web.yaml:3:13 (got 'critical')",
            "specs/web.yaml:8:63: slos[0].alerting.ticket.severity: must be 'page' or 'ticket', "
            "the severities declared at specs/web.yaml:3:13 (got 'warning')",
            "specs/web.yaml:10:39: diagnoses[0].severity: must be 'page' or 'ticket', the "
            "severities declared at specs/web.yaml:3:13 (got 'info')",
        ),
    ),
    Case(
        "a declaration that is not a list",
        """
        version: 1
        service: web
        severities: critical
        alerts:
          - {signal: disk_await, threshold: 5ms, severity: critical}
        """,
        spec_errors(
            "specs/web.yaml:3:13: severities: must be a list of severities, most severe first, "
            "such as [critical, warning, info, none] (got 'critical')"
        ),
    ),
    Case(
        "an empty declaration",
        """
        version: 1
        service: web
        severities: []
        alerts:
          - {signal: disk_await, threshold: 5ms, severity: critical}
        """,
        spec_errors(
            "specs/web.yaml:3:13: severities: must be a list of severities, most severe first, "
            "such as [critical, warning, info, none] (got [])"
        ),
    ),
    Case(
        "a broken declaration: each entry at its place, the names that stand still count",
        """
        version: 1
        service: web
        severities:
          - {name: page, page: true}
          - {pages: true}
          - {name: high, pages: maybe}
          - high prio
          - page
          - none
        alerts:
          - {signal: custom, name: Up, expr: up == 0, severity: none}
        """,
        spec_errors(
            "specs/web.yaml:4:18: severities[0].page: unknown key (a severity has name and pages)",
            "specs/web.yaml:5:5: severities[1]: name: required field is missing",
            "specs/web.yaml:6:25: severities[2].pages: must be true or false (got 'maybe')",
            "specs/web.yaml:7:5: severities[3]: a severity is a name of "
            "[A-Za-z0-9][A-Za-z0-9_.-]* (got 'high prio')",
            "specs/web.yaml:8:5: severities[4]: duplicate severity 'page' (also severities[0])",
        ),
    ),
    Case(
        "a missing severity is still a missing key, with the entry's other errors",
        """
        version: 1
        service: web
        severities: [page, ticket]
        alerts:
          - {signal: disk_await, threshold: fast}
        """,
        spec_errors(
            "specs/web.yaml:5:5: alerts[0]: severity: required field is missing",
            "specs/web.yaml:5:37: alerts[0].threshold: invalid duration 'fast' (expected a "
            "latency like 5ms, 500ms, 2s)",
        ),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.behaviour for c in CASES])
def test_undeclared_severities_and_broken_declarations_are_spec_errors(
    case: Case, in_tmp: Path, cli: Cli
) -> None:
    write_tree(in_tmp, {"specs/web.yaml": case.spec, **case.files})

    result = cli("build", "--no-validate")

    assert result.err.splitlines() == list(case.stderr)
    assert (result.code, result.out) == (2, "")
    assert not (in_tmp / "rules").exists()


def _severities(root: Path) -> list[tuple[str, str]]:
    """Every generated alert's name and severity, from the built rule files, in order."""
    files = sorted((root / "rules/prometheus").glob("*.yml"))
    groups = [g for f in files for g in yaml.safe_load(f.read_text())["groups"]]
    rules = [rule for group in groups for rule in group["rules"] if "alert" in rule]
    return sorted((rule["alert"], rule["labels"]["severity"]) for rule in rules)


def test_what_rulegen_picks_follows_the_declaration(in_tmp: Path, cli: Cli) -> None:
    write_tree(in_tmp, {
        "specs/defaults.yaml": """
            version: 1
            defaults:
              severities: [page, ticket, none]
            """,
        "specs/web.yaml": """
            version: 1
            service: web
            extends: defaults.yaml
            alerts:
              - {signal: ttft_latency, threshold: 500ms, severity: page}
              - {signal: custom, name: Watchdog, expr: vector(1), severity: none}
            slos:
              - name: availability
                objective: 99.9%
                evaluation_interval: 1m
                sli: {ratio: {errors: 'e_total{code="5"}', total: e_total}}
                alerting: {ticket: {enabled: true}}
            diagnoses:
              - kind: ttft_disk_bound
              - kind: throughput_network_bound
            """,
    })  # fmt: skip

    result = cli("build", "--no-validate")

    assert result.code == 0, result.err
    assert _severities(in_tmp) == [
        ("ErrorBudgetBurn", "page"),  # the SLO's page: the first paging severity
        ("ErrorBudgetBurn", "ticket"),  # its ticket: the first that does not page
        ("SLORecordingsIncomplete", "ticket"),
        ("TTFTDiskBound", "page"),  # critical by default: pages
        ("TTFTLatencyHigh", "page"),
        ("ThroughputNetworkBound", "ticket"),  # warning by default: does not page
        ("Watchdog", "none"),
    ]


def test_pages_picks_the_severity_of_what_pages(in_tmp: Path, cli: Cli) -> None:
    write_tree(in_tmp, {"specs/web.yaml": """
        version: 1
        service: web
        severities: [{name: P1, pages: false}, {name: P2, pages: true}, P3]
        slos:
          - name: availability
            objective: 99.9%
            evaluation_interval: 1m
            sli: {ratio: {errors: 'e_total{code="5"}', total: e_total}}
            alerting: {ticket: {enabled: true}}
        """})  # fmt: skip

    result = cli("build", "--no-validate")

    assert result.code == 0, result.err
    assert _severities(in_tmp) == [
        ("ErrorBudgetBurn", "P1"),  # the ticket: the first that does not page
        ("ErrorBudgetBurn", "P2"),  # the page: the first paging severity
        ("SLORecordingsIncomplete", "P1"),
    ]


def test_the_default_declaration_written_out_changes_nothing(in_tmp: Path, cli: Cli) -> None:
    spec = """
        version: 1
        service: web
        alerts:
          - {signal: disk_await, threshold: 5ms, severity: warning}
        slos:
          - name: availability
            objective: 99.9%
            evaluation_interval: 1m
            sli: {ratio: {errors: 'e_total{code="5"}', total: e_total}}
            alerting: {ticket: {enabled: true}}
        diagnoses:
          - kind: ttft_disk_bound
        """
    write_tree(in_tmp, {"specs/web.yaml": spec})
    assert cli("build", "--no-validate").code == 0
    before = (in_tmp / "rules/prometheus/web.rules.yml").read_text()
    declared = spec.replace("service: web\n", "service: web\n        severities: "
                            "[{name: critical, pages: true}, warning, info]\n")  # fmt: skip
    write_tree(in_tmp, {"specs/web.yaml": declared})

    result = cli("build", "--no-validate")

    assert result.code == 0, result.err
    assert (in_tmp / "rules/prometheus/web.rules.yml").read_text() == before
