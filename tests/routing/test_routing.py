"""The routing file → ``rules/alertmanager/``: spec errors, amtool checks, and the tree walk.

Broken routing files are reported like every other spec error (one exact
``FILE:LINE:COL: path: message`` line each, exit 2, nothing written). With validation on,
real ``amtool`` checks the config, the user's routing tests and every generated alert; and the
Python walk of the tree (``ResolvedRouting.receivers_for``, which names the receivers in the
generated routing tests) must agree with ``amtool config routes test`` label set by label set.

"""

from __future__ import annotations

import itertools
import random
import shutil
import subprocess
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ON_PROMETHEUS_2, REPO, CliResult, copy_specs, spec_errors, write_tree

from rulegen.routing.load import load_routing
from rulegen.routing.model import ResolvedRouting
from rulegen.source.loader import load_file
from rulegen.validate import amtool

Cli = Callable[..., CliResult]

AMTOOL = shutil.which("amtool")
PROMTOOL = shutil.which("promtool")
needs_tools = pytest.mark.skipif(
    AMTOOL is None or PROMTOOL is None, reason="needs amtool and promtool"
)

SERVICE = """
    version: 1
    service: web
    alerts:
      - {signal: disk_await, threshold: 5ms, severity: warning}
    """

# Line numbers in the cases below count from this header: `routing:` is line 2,
# `default_receiver` line 3, receivers[0] line 5; the first line a case appends is line 7.
HEAD = """\
version: 1
routing:
  default_receiver: a
  receivers:
    - name: a
      webhook: {url: 'http://sink.internal/hook'}
"""
WITH_BASE = HEAD.replace("routing:\n", "routing:\n  base: alertmanager/base.yml\n")


@dataclass(frozen=True)
class Case:
    """One broken routing file ``specs/routing.yaml`` beside ``specs/web.yaml``."""

    behaviour: str
    routing: str
    stderr: tuple[str, ...]
    files: Mapping[str, str] = field(default_factory=dict)


CASES: list[Case] = [
    # --- receiver names ------------------------------------------------------------------
    Case(
        "a route to an unknown receiver is rejected at its receiver",
        HEAD
        + """\
  routes:
    - match: {team: storage}
      receiver: nobody
""",
        spec_errors(
            "specs/routing.yaml:9:17: routing.routes[0].receiver: unknown receiver 'nobody' "
            "(receivers: a)"
        ),
    ),
    Case(
        "a nested route to an unknown receiver is rejected at its receiver",
        HEAD
        + """\
    - name: b
      webhook: {url: 'http://sink.internal/b'}
  routes:
    - match: {team: storage}
      receiver: a
      routes:
        - match_re: {severity: 'critical|warning'}
          receiver: c
""",
        spec_errors(
            "specs/routing.yaml:14:21: routing.routes[0].routes[0].receiver: unknown receiver "
            "'c' (receivers: a, b)"
        ),
    ),
    Case(
        "an unknown default_receiver is rejected at its value",
        HEAD.replace("default_receiver: a", "default_receiver: platform"),
        spec_errors(
            "specs/routing.yaml:3:21: routing.default_receiver: unknown receiver 'platform' "
            "(receivers: a)"
        ),
    ),
    Case(
        "a duplicate receiver name is rejected at the second name",
        HEAD
        + """\
    - name: a
      webhook: {url: 'http://sink.internal/other'}
""",
        spec_errors(
            "specs/routing.yaml:7:13: routing.receivers[1].name: duplicate receiver 'a' "
            "(also receivers[0])"
        ),
    ),
    Case(
        "a receiver name with a space is rejected by its pattern",
        HEAD
        + """\
    - name: on call
      webhook: {url: 'http://sink.internal/other'}
""",
        spec_errors(
            "specs/routing.yaml:7:13: routing.receivers[1].name: must match "
            "^[A-Za-z0-9][A-Za-z0-9_.-]*$ (got 'on call')"
        ),
    ),
    Case(
        "a routing test naming an unknown receiver is rejected at that receiver",
        HEAD
        + """\
  tests:
    - labels: {severity: critical}
      receivers: [pager]
""",
        spec_errors(
            "specs/routing.yaml:9:19: routing.tests[0].receivers[0]: unknown receiver 'pager' "
            "(receivers: a)"
        ),
    ),
    # --- secrets -------------------------------------------------------------------------
    Case(
        "an inline pagerduty routing_key is refused: secrets come from files",
        HEAD
        + """\
    - name: pager
      pagerduty: {routing_key: 0123456789abcdef}
""",
        spec_errors(
            "specs/routing.yaml:8:32: routing.receivers[1].pagerduty.routing_key: secrets are "
            "read from files only: write routing_key_file: /path/to/secret"
        ),
    ),
    Case(
        "an inline pagerduty service_key is refused: secrets come from files",
        HEAD
        + """\
    - name: pager
      pagerduty: {service_key: 0123456789abcdef, routing_key_file: /run/secrets/pd}
""",
        spec_errors(
            "specs/routing.yaml:8:32: routing.receivers[1].pagerduty.service_key: secrets are "
            "read from files only: write service_key_file: /path/to/secret"
        ),
    ),
    Case(
        "an inline slack api_url is refused: secrets come from files",
        HEAD
        + """\
    - name: chat
      slack: {api_url: 'https://hooks.slack.com/services/T0/B0/x', channel: '#ops'}
""",
        spec_errors(
            "specs/routing.yaml:8:24: routing.receivers[1].slack.api_url: secrets are read "
            "from files only: write api_url_file: /path/to/secret"
        ),
    ),
    Case(
        "an inline email auth_password is refused: secrets come from files",
        HEAD
        + """\
    - name: mail
      email: {to: ops@example.com, auth_password: hunter2}
""",
        spec_errors(
            "specs/routing.yaml:8:51: routing.receivers[1].email.auth_password: secrets are "
            "read from files only: write auth_password_file: /path/to/secret"
        ),
    ),
    Case(
        "a slack receiver without api_url_file is rejected at its slack block",
        HEAD
        + """\
    - name: chat
      slack: {channel: '#ops'}
""",
        spec_errors(
            "specs/routing.yaml:8:14: routing.receivers[1].slack: api_url_file: required "
            "field is missing (or global.slack_api_url_file in the base file)"
        ),
    ),
    # --- integrations --------------------------------------------------------------------
    Case(
        "a receiver with two integrations is rejected, naming both",
        HEAD
        + """\
    - name: both
      webhook: {url: 'http://sink.internal/other'}
      email: {to: ops@example.com}
""",
        spec_errors(
            "specs/routing.yaml:7:7: routing.receivers[1]: needs exactly one of webhook, "
            "pagerduty, slack, email (got webhook, email)"
        ),
    ),
    Case(
        "a receiver with no integration is rejected",
        HEAD + "    - name: nothing\n",
        spec_errors(
            "specs/routing.yaml:7:7: routing.receivers[1]: needs exactly one of webhook, "
            "pagerduty, slack, email (got none)"
        ),
    ),
    Case(
        "an unknown integration is rejected as an unknown key",
        HEAD
        + """\
    - name: ops
      opsgenie: {api_key_file: /run/secrets/og}
""",
        spec_errors("specs/routing.yaml:8:7: routing.receivers[1].opsgenie: unknown key"),
    ),
    # --- matchers ------------------------------------------------------------------------
    Case(
        "an invalid label name in match is rejected at the label",
        HEAD
        + """\
  routes:
    - match: {team-name: storage}
      receiver: a
""",
        spec_errors(
            "specs/routing.yaml:8:15: routing.routes[0].match.team-name: invalid label name "
            "'team-name'"
        ),
    ),
    Case(
        "an invalid regex in match_re is rejected at the label",
        HEAD
        + """\
  routes:
    - match_re: {service: 'web-(.*'}
      receiver: a
""",
        spec_errors(
            "specs/routing.yaml:8:27: routing.routes[0].match_re.service: invalid regex for "
            "label service: missing ), unterminated subpattern at position 4"
        ),
    ),
    Case(
        "a regex RE2 rejects (possessive quantifier) is a spec error, not a broken config",
        HEAD
        + """\
  routes:
    - match_re: {service: 'web-a++'}
      receiver: a
""",
        spec_errors(
            "specs/routing.yaml:8:27: routing.routes[0].match_re.service: invalid regex for "
            "label service: invalid nested repetition operator: `++`"
        ),
    ),
    Case(
        "a regex with a repeat count above RE2's 1000 is a spec error, not a broken config",
        HEAD
        + """\
  routes:
    - match_re: {service: 'a{1001}'}
      receiver: a
""",
        spec_errors(
            "specs/routing.yaml:8:27: routing.routes[0].match_re.service: invalid regex for "
            "label service: invalid repeat count: `{1001}`"
        ),
    ),
    Case(
        "a lookahead (not in RE2) is rejected at the label",
        HEAD
        + """\
  routes:
    - match_re: {service: '(?=web)'}
      receiver: a
""",
        spec_errors(
            "specs/routing.yaml:8:27: routing.routes[0].match_re.service: invalid regex for "
            "label service: invalid or unsupported Perl syntax: `(?=`"
        ),
    ),
    Case(
        "a route with no matchers is rejected: a catch-all hides the routes after it",
        HEAD
        + """\
  routes:
    - receiver: a
""",
        spec_errors(
            "specs/routing.yaml:8:7: routing.routes[0]: needs at least one label in match or "
            "match_re (a catch-all route hides the ones after it)"
        ),
    ),
    Case(
        "a route with an empty match is rejected like one with no matchers",
        HEAD
        + """\
  routes:
    - match: {}
      receiver: a
""",
        spec_errors(
            "specs/routing.yaml:8:7: routing.routes[0]: needs at least one label in match or "
            "match_re (a catch-all route hides the ones after it)"
        ),
    ),
    Case(
        "a misspelt route key is rejected as unknown, with the missing receiver",
        HEAD
        + """\
  routes:
    - match: {team: storage}
      reciever: a
""",
        spec_errors(
            "specs/routing.yaml:8:7: routing.routes[0]: receiver: required field is missing",
            "specs/routing.yaml:9:7: routing.routes[0].reciever: unknown key; "
            'did you mean "receiver"?',
        ),
    ),
    # --- severities --------------------------------------------------------------------
    Case(
        "severity values of routes, inhibitions and tests must be declared",
        HEAD.replace("routing:\n", "routing:\n  severities: [page, ticket]\n")
        + """\
  routes:
    - match: {severity: critical}
      receiver: a
  inhibit:
    - {source: {severity: page}, target: {severity: warning}}
  tests:
    - labels: {severity: none}
      receivers: [a]
""",
        spec_errors(
            "specs/routing.yaml:9:25: routing.routes[0].match.severity: must be 'page' or "
            "'ticket', the severities declared at specs/routing.yaml:3:15 (got 'critical')",
            "specs/routing.yaml:12:53: routing.inhibit[0].target.severity: must be 'page' or "
            "'ticket', the severities declared at specs/routing.yaml:3:15 (got 'warning')",
            "specs/routing.yaml:14:26: routing.tests[0].labels.severity: must be 'page' or "
            "'ticket', the severities declared at specs/routing.yaml:3:15 (got 'none')",
        ),
    ),
    Case(
        "a spec whose default severities the routing file's declaration lacks",
        HEAD.replace("routing:\n", "routing:\n  severities: [page, ticket]\n"),
        spec_errors(
            "specs/web.yaml:1:1: this spec takes the default severities (critical (pages), "
            "warning, info), which do not fit the routing file's at specs/routing.yaml:3:15 "
            "(page (pages), ticket): critical, warning, info are not declared there; declare its "
            "severities: (here or in the defaults file it extends)"
        ),
    ),
    Case(
        "a spec whose declaration pages otherwise than the routing file's",
        HEAD.replace("routing:\n", "routing:\n  severities: [critical, warning, info, none]\n"),
        spec_errors(
            "specs/defaults.yaml:3:3: severities: these severities (critical (pages), warning "
            "(pages), info) do not fit the routing file's at specs/routing.yaml:3:15 (critical "
            "(pages), warning, info, none): paging differs for warning (inherited by "
            "specs/web.yaml from defaults.severities)"
        ),
        files={
            "specs/web.yaml": SERVICE.replace(
                "service: web", "service: web\n    extends: defaults.yaml"
            ),
            "specs/defaults.yaml": "version: 1\ndefaults:\n  severities: [critical, "
            "{name: warning, pages: true}, info]\n",
        },
    ),
    Case(
        "a receiver that discards takes no integration",
        HEAD + "    - {name: blackhole, discard: true, webhook: {url: 'http://sink.internal/x'}}\n",
        spec_errors(
            "specs/routing.yaml:7:34: routing.receivers[1].discard: a receiver that discards "
            "takes no integration (got webhook)"
        ),
    ),
    # --- files ---------------------------------------------------------------------------
    Case(
        "a second routing section is rejected, naming where the first one is",
        HEAD,
        spec_errors(
            "specs/zz-routing.yaml:2:1: routing: a second routing section (the first is at "
            "specs/routing.yaml:2:1); keep one"
        ),
        files={"specs/zz-routing.yaml": HEAD},
    ),
    Case(
        "a missing base file is rejected at routing.base",
        WITH_BASE,
        spec_errors(
            "specs/routing.yaml:3:9: routing.base: cannot read alertmanager/base.yml: No such "
            "file or directory"
        ),
    ),
    Case(
        "a base file defining route is rejected: rulegen writes the route",
        WITH_BASE,
        spec_errors(
            "specs/routing.yaml:3:9: routing.base: alertmanager/base.yml defines route, which "
            "rulegen writes from this routing section; move that part here (or drop it from the "
            "base file)"
        ),
        files={"specs/alertmanager/base.yml": "global: {}\nroute: {receiver: x}\n"},
    ),
    Case(
        "a base file defining receivers and inhibit_rules is rejected, naming both",
        WITH_BASE,
        spec_errors(
            "specs/routing.yaml:3:9: routing.base: alertmanager/base.yml defines receivers, "
            "inhibit_rules, which rulegen writes from this routing section; move that part here "
            "(or drop it from the base file)"
        ),
        files={"specs/alertmanager/base.yml": "receivers: []\ninhibit_rules: []\n"},
    ),
    Case(
        "a base file that is not a mapping is rejected",
        WITH_BASE,
        spec_errors(
            "specs/routing.yaml:3:9: routing.base: alertmanager/base.yml must be a YAML mapping"
        ),
        files={"specs/alertmanager/base.yml": "- global\n"},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case.behaviour for case in CASES])
def test_broken_routing_is_reported_exactly_and_writes_nothing(
    case: Case, in_tmp: Path, cli: Cli
) -> None:
    write_tree(
        in_tmp, {"specs/web.yaml": SERVICE, "specs/routing.yaml": case.routing, **case.files}
    )

    result = cli("build", "--no-validate")

    assert result.err.splitlines() == list(case.stderr)
    assert (result.code, result.out) == (2, "")
    assert not (in_tmp / "rules").exists()


def test_case_ids_are_unique() -> None:
    assert len({case.behaviour for case in CASES}) == len(CASES) >= 20


# --- with validation: real amtool ----------------------------------------------------------

STUB_PROMTOOL = """#!/bin/sh
# promtool for routing tests: the rule checks are real, the (slow, SLO) unit tests are not run.
if [ "$1" = test ]; then exit 0; fi
exec {real} "$@"
"""

ROUTED = """\
version: 1
routing:
  default_receiver: platform
  receivers:
    - name: platform
      webhook: {url: 'http://sink.internal/platform'}
    - name: oncall
      webhook: {url: 'http://sink.internal/oncall'}
    - name: storage
      webhook: {url: 'http://sink.internal/storage'}
  routes:
    - match: {severity: critical}
      receiver: oncall
      continue: true
    - match: {team: storage}
      receiver: storage
"""

STORAGE_SERVICE = """
    version: 1
    service: web
    labels: {team: storage}
    alerts:
      - {signal: disk_await, threshold: 5ms, severity: critical}
    """


def _files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


@needs_tools
@pytest.mark.slow
def test_the_example_builds_and_every_routing_test_passes(
    in_tmp: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy_specs(REPO / "specs", in_tmp / "specs")
    if (REPO / "signals").is_dir():
        shutil.copytree(REPO / "signals", in_tmp / "signals")
    # The example's SLO unit tests take ~50 s in promtool; they are covered elsewhere.
    stub = in_tmp / "promtool-stub"
    stub.write_text(STUB_PROMTOOL.format(real=PROMTOOL))
    stub.chmod(0o755)
    monkeypatch.setenv("RULEGEN_PROMTOOL", str(stub))

    result = cli("build")

    assert result.code == 0, result.err
    config = yaml.safe_load((in_tmp / "rules/alertmanager/alertmanager.yml").read_text())
    tests = yaml.safe_load((in_tmp / "rules/alertmanager/routing-tests.yml").read_text())
    # checked in every matcher mode the amtool has (0.27 on): a team may run any of them
    modes = amtool.matcher_modes(amtool.build_info())
    assert modes == (() if ON_PROMETHEUS_2 else ("utf8-strict-mode", "classic-mode"))
    also = " (and with utf8-strict-mode and classic-mode)" if modes else ""
    assert f"amtool check-config: alertmanager.yml ok{also}" in result.out.splitlines()
    assert f"amtool routing tests: {len(tests['tests'])} passed" in result.out.splitlines()
    # the HA pair's alerting block (ha: in specs/defaults.yaml), merged into a replica's config
    checked = "promtool check config: alertmanager/prometheus-alerting.yml ok (merged into a "
    assert f"{checked}replica's prometheus.yml)" in result.out.splitlines()
    assert len(tests["tests"]) > 3  # the user's three, then one per generated alert
    assert config["global"]["smtp_smarthost"] == "smtp.internal:587"  # from the base file
    assert config["route"]["receiver"] == "platform"
    user = [t for t in tests["tests"] if t["name"].startswith("specs/routing.yaml:")]
    assert [t["receivers"] for t in user] == [
        ["oncall", "storage"],
        ["inference-mail"],
        ["platform"],
    ]


@needs_tools
@pytest.mark.slow
def test_a_wrong_routing_test_fails_the_build_at_its_position(in_tmp: Path, cli: Cli) -> None:
    routing = (
        ROUTED
        + """\
  tests:
    - labels: {severity: critical, team: storage}
      receivers: [storage]
"""
    )
    write_tree(in_tmp, {"specs/web.yaml": SERVICE, "specs/routing.yaml": routing})

    result = cli("build")

    assert result.code == 1
    assert result.err.splitlines() == [
        "amtool routing tests failed:",
        "specs/routing.yaml:18:7: routing test: expected storage, amtool routes to oncall,storage",
        "rulegen: validation failed; nothing written",
    ]
    assert _files(in_tmp) == ["specs", "specs/routing.yaml", "specs/web.yaml"]


@needs_tools
@pytest.mark.slow
def test_a_critical_storage_alert_reaches_oncall_then_storage(in_tmp: Path, cli: Cli) -> None:
    write_tree(in_tmp, {"specs/web.yaml": STORAGE_SERVICE, "specs/routing.yaml": ROUTED})

    result = cli("build")

    assert result.code == 0, result.err
    assert "amtool routing tests: 1 passed" in result.out.splitlines()
    tests = yaml.safe_load((in_tmp / "rules/alertmanager/routing-tests.yml").read_text())
    assert tests == {
        "tests": [
            {
                "name": "web/DiskAwaitHigh/critical",
                "labels": {
                    "alertname": "DiskAwaitHigh",
                    "service": "web",
                    "severity": "critical",
                    "team": "storage",
                },
                "receivers": ["oncall", "storage"],
            }
        ]
    }


# --- a repository's own severities --------------------------------------------------------

PAGE_TICKET = """\
version: 1
routing:
  severities: [page, ticket, none]
  default_receiver: platform
  receivers:
    - {name: platform, webhook: {url: 'http://sink.internal/platform'}}
    - {name: oncall, webhook: {url: 'http://sink.internal/oncall'}}
    - {name: blackhole, discard: true}
  routes:
    - match: {severity: none}
      receiver: blackhole
    - match: {severity: page}
      receiver: oncall
  inhibit:
    - {source: {severity: page}, target: {severity: ticket}, equal: [alertname, instance]}
    - {source: {alertname: InfoInhibitor}, target: {severity: ticket}, equal: [instance]}
  tests:
    - labels: {alertname: Watchdog, severity: none}
      receivers: [blackhole]
"""

PAGE_TICKET_SERVICE = """
    version: 1
    service: web
    severities: [page, ticket, none]
    alerts:
      - {signal: disk_await, threshold: 50ms, severity: page}
      - {signal: disk_await, name: DiskAwaitSlow, threshold: 5ms, severity: ticket}
      - {signal: custom, name: InfoInhibitor, expr: 'ALERTS{severity="ticket"} == 1',
         severity: none}
    """


@needs_tools
@pytest.mark.slow
def test_routing_tests_follow_the_declared_severities(in_tmp: Path, cli: Cli) -> None:
    write_tree(in_tmp, {"specs/web.yaml": PAGE_TICKET_SERVICE, "specs/routing.yaml": PAGE_TICKET})

    result = cli("build")

    assert result.code == 0, result.err
    assert "amtool routing tests: 4 passed" in result.out.splitlines()
    config = yaml.safe_load((in_tmp / "rules/alertmanager/alertmanager.yml").read_text())
    assert {"name": "blackhole"} in config["receivers"]  # no integration: Alertmanager drops
    assert config["inhibit_rules"][0] == {
        "source_matchers": ['severity="page"'],
        "target_matchers": ['severity="ticket"'],
        "equal": ["alertname", "instance"],
    }
    tests = yaml.safe_load((in_tmp / "rules/alertmanager/routing-tests.yml").read_text())
    assert [(t["name"], t["labels"].get("severity"), t["receivers"]) for t in tests["tests"]] == [
        ("specs/routing.yaml:18:7: routing test", "none", ["blackhole"]),
        ("web/DiskAwaitHigh/page", "page", ["oncall"]),
        ("web/DiskAwaitSlow/ticket", "ticket", ["platform"]),
        ("web/InfoInhibitor/none", "none", ["blackhole"]),
    ]


# --- reports --------------------------------------------------------------------------------


@needs_tools
@pytest.mark.slow
def test_a_route_no_generated_alert_reaches_is_reported(in_tmp: Path, cli: Cli) -> None:
    routing = ROUTED + "    - match: {team: network}\n      receiver: platform\n"
    write_tree(in_tmp, {"specs/web.yaml": STORAGE_SERVICE, "specs/routing.yaml": routing})

    result = cli("build")

    assert result.code == 0, result.err
    warnings = [line for line in result.out.splitlines() if line.startswith("warning:")]
    assert warnings == [
        "warning: specs/routing.yaml:17:7: routing.routes[2]: no generated alert reaches this route"
    ]


@needs_tools
@pytest.mark.slow
def test_routes_every_alert_reaches_are_not_reported(in_tmp: Path, cli: Cli) -> None:
    write_tree(in_tmp, {"specs/web.yaml": STORAGE_SERVICE, "specs/routing.yaml": ROUTED})

    result = cli("build")

    assert result.code == 0, result.err
    assert not [line for line in result.out.splitlines() if line.startswith("warning:")]


# --- SLO page/ticket inhibition ------------------------------------------------------------

SLO_SERVICE = """
    version: 1
    service: web
    slos:
      - name: availability
        objective: 99.9%
        evaluation_interval: 1m
        sli:
          ratio:
            errors: 'http_requests_total{code=~"5.."}'
            total: 'http_requests_total'
        alerting: {ticket: {enabled: true}}
    """


def test_an_slo_page_inhibits_its_ticket(in_tmp: Path, cli: Cli) -> None:
    write_tree(in_tmp, {"specs/web.yaml": SLO_SERVICE, "specs/routing.yaml": ROUTED})

    result = cli("build", "--no-validate")

    assert result.code == 0, result.err
    config = yaml.safe_load((in_tmp / "rules/alertmanager/alertmanager.yml").read_text())
    assert config["inhibit_rules"] == [
        {
            "source_matchers": [
                'alertname="ErrorBudgetBurn"',
                'service="web"',
                'slo="availability"',
                'severity="critical"',
            ],
            "target_matchers": [
                'alertname="ErrorBudgetBurn"',
                'service="web"',
                'slo="availability"',
                'severity="warning"',
            ],
            "equal": ["service", "slo"],
        }
    ]


# --- the Python walk agrees with amtool ----------------------------------------------------

TREE = """\
version: 1
routing:
  default_receiver: default
  receivers:
    - {name: default, webhook: {url: 'http://sink.internal/default'}}
    - {name: audit, webhook: {url: 'http://sink.internal/audit'}}
    - {name: pager, webhook: {url: 'http://sink.internal/pager'}}
    - {name: db-oncall, webhook: {url: 'http://sink.internal/db-oncall'}}
    - {name: eu, webhook: {url: 'http://sink.internal/eu'}}
    - {name: db, webhook: {url: 'http://sink.internal/db'}}
    - {name: mail, webhook: {url: 'http://sink.internal/mail'}}
    - {name: web, webhook: {url: 'http://sink.internal/web'}}
    - {name: web-slow, webhook: {url: 'http://sink.internal/web-slow'}}
    - {name: blackhole, webhook: {url: 'http://sink.internal/blackhole'}}
  routes:
    - match_re: {alertname: 'Audit.*'}
      receiver: audit
      continue: true
    - match: {severity: critical}
      receiver: pager
      continue: true
      routes:
        - match: {team: db}
          receiver: db-oncall
        - match_re: {region: 'eu-.+'}
          receiver: eu
    - match: {team: db}
      receiver: db
      routes:
        - match_re: {severity: 'warning|info'}
          receiver: mail
          continue: true
        - match: {region: eu-west}
          receiver: eu
    - match_re: {service: 'web|api-.*'}
      receiver: web
      continue: true
      routes:
        - match: {slow: 'true'}
          receiver: web-slow
    - match_re: {service: 'api-.*', region: 'us|eu-.*'}
      receiver: mail
    - match: {env: ''}
      receiver: blackhole
"""

DIMENSIONS: dict[str, tuple[str | None, ...]] = {
    "alertname": ("DiskFull", "AuditLogGap", "Audit"),
    "severity": ("critical", "warning", "info", None),
    "team": ("db", "web", None),
    "region": ("eu-west", "eu-", "us", "usa", None),
    "service": ("web", "web2", "api-gw", "apix", None),
    "slow": ("true", "false", None),
    "env": ("prod", "", None),
}


def label_sets() -> list[dict[str, str]]:
    """40 label sets: a seeded sample of the product of every dimension's values."""
    every = list(itertools.product(*DIMENSIONS.values()))
    picked = random.Random(20250501).sample(every, 40)
    return [
        {name: value for name, value in zip(DIMENSIONS, values, strict=True) if value}
        for values in picked
    ]


def amtool_receivers(config: Path, labels: Mapping[str, str]) -> tuple[str, ...]:
    assert AMTOOL is not None
    proc = subprocess.run(
        [
            AMTOOL,
            "config",
            "routes",
            "test",
            f"--config.file={config}",
            *(f"{k}={v}" for k, v in sorted(labels.items())),
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return tuple(proc.stdout.splitlines()[0].split(","))


def resolved(path: Path) -> ResolvedRouting:
    loaded, problems = load_routing(path, load_file(path, "specs/routing.yaml"), None)
    assert not problems, problems
    assert loaded is not None
    return loaded.routing


@pytest.mark.skipif(AMTOOL is None, reason="needs amtool")
@pytest.mark.slow
def test_the_python_walk_agrees_with_amtool(in_tmp: Path, cli: Cli) -> None:
    write_tree(in_tmp, {"specs/web.yaml": SERVICE, "specs/routing.yaml": TREE})
    built = cli("build", "--no-validate")
    assert built.code == 0, built.err
    config = in_tmp / "rules/alertmanager/alertmanager.yml"
    routing = resolved(in_tmp / "specs/routing.yaml")
    cases = label_sets()

    with ThreadPoolExecutor(8) as pool:
        amtool = list(pool.map(lambda labels: amtool_receivers(config, labels), cases))

    disagree = [
        (labels, ours, theirs)
        for labels, theirs in zip(cases, amtool, strict=True)
        if (ours := routing.receivers_for(labels)) != theirs
    ]
    assert disagree == []
    # the sample is not degenerate: it reaches most receivers, and some alerts several at once
    reached: set[str] = {name for receivers in amtool for name in receivers}
    assert len(reached) >= 7, reached
    assert any(len(receivers) >= 3 for receivers in amtool)


HAND_PICKED: list[dict[str, Any]] = [
    {"alertname": "AuditX", "severity": "critical", "team": "db", "env": "prod"},
    {"alertname": "X", "severity": "critical", "region": "eu-", "env": "prod"},
    {"alertname": "X", "severity": "critical", "region": "eu-north", "env": "prod"},
    {"alertname": "X", "team": "db", "severity": "info", "region": "eu-west", "env": "p"},
    {"alertname": "X", "service": "web", "slow": "true", "env": "p"},
    {"alertname": "X", "service": "api-gw", "region": "us", "env": "p"},
    {"alertname": "X", "service": "api-gw", "region": "usa", "env": "p"},
    {"alertname": "X", "service": "xweb", "env": "p"},
    {"alertname": "X"},
    {"alertname": "X", "env": "p"},
]


@pytest.mark.skipif(AMTOOL is None, reason="needs amtool")
@pytest.mark.slow
def test_the_python_walk_agrees_with_amtool_on_edge_cases(in_tmp: Path, cli: Cli) -> None:
    write_tree(in_tmp, {"specs/web.yaml": SERVICE, "specs/routing.yaml": TREE})
    assert cli("build", "--no-validate").code == 0
    config = in_tmp / "rules/alertmanager/alertmanager.yml"
    routing = resolved(in_tmp / "specs/routing.yaml")

    with ThreadPoolExecutor(8) as pool:
        amtool = list(pool.map(lambda labels: amtool_receivers(config, labels), HAND_PICKED))

    assert [routing.receivers_for(labels) for labels in HAND_PICKED] == amtool


AWKWARD = """\
version: 1
routing:
  default_receiver: default
  receivers:
    - {name: default, webhook: {url: 'http://sink.internal/default'}}
    - {name: odd, webhook: {url: 'http://sink.internal/odd'}}
  routes:
    - match: {team: 'ml infra, "gpu"'}
      receiver: odd
    - match: {site: 'zürich'}
      receiver: odd
    - match_re: {region: 'eu-(west|north) \\d+|\\{a,b\\}'}
      receiver: odd
  tests:
    - labels: {team: 'ml infra, "gpu"'}
      receivers: [odd]
    - labels: {site: 'zürich'}
      receivers: [odd]
    - labels: {region: 'eu-west 1'}
      receivers: [odd]
    - labels: {region: '{a,b}'}
      receivers: [odd]
    - labels: {team: 'ml infra'}
      receivers: [default]
"""


@needs_tools
@pytest.mark.slow
def test_awkward_matcher_values_load_in_every_matcher_mode(in_tmp: Path, cli: Cli) -> None:
    """Spaces, commas, quotes, braces, backslashes and non-ASCII in matched values: the
    matchers rulegen writes load in Alertmanager's default parser and, from 0.27 on, in its
    UTF-8 strict and classic modes, and route as the tests say."""
    write_tree(in_tmp, {"specs/web.yaml": SERVICE, "specs/routing.yaml": AWKWARD})
    result = cli("build")
    assert result.code == 0, result.out + result.err
    modes = amtool.matcher_modes(amtool.build_info())
    also = " (and with utf8-strict-mode and classic-mode)" if modes else ""
    assert f"amtool check-config: alertmanager.yml ok{also}" in result.out.splitlines()
    assert "does not load in" not in result.out + result.err
    assert "amtool routing tests: 6 passed" in result.out.splitlines()
