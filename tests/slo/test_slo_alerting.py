"""Alerting settings per alert of an SLO: labels and annotations of the page, the ticket and a
tier of its own (an alert rule of its own), and the absent alert (docs/slos.md#alerting).

Broken specs give one exact ``FILE:LINE:COL: path: message`` line per error, exit 2 and write
nothing (as ``test_slo_spec_errors.py``). The rendered rules are read back (``--no-validate``,
in-process): where each label and annotation lands, what the absent alert selects for each
kind of SLI, the page's inhibition of the ticket with tiers of their own. A spec using every
key is built for real, its generated tests run by promtool (both stacks: the specs declare the
stack's version), and for the VictoriaMetrics target by vmalert-tool. The sharpness of those
generated tests is ``test_slo_alerting_catch_mutations.py``.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import (
    CliResult,
    assert_rejected,
    for_stack,
    run_rulegen,
    spec_errors,
    write_tree,
)
from support import promtool_cases
from support.vmtool import NEEDS_VMALERT_TOOL

from rulegen.templating import go_escape

Cli = Callable[..., CliResult]

RATIO = "ratio: {errors: 'http_requests_total{code=~\"5..\"}', total: http_requests_total}"


@dataclass(frozen=True)
class Case:
    """One broken ``specs/web.yaml`` and the exact stderr it gives."""

    behaviour: str
    spec: str
    stderr: tuple[str, ...]


def _spec(alerting: str, extra: str = "") -> str:
    """A one-SLO spec with ``alerting`` (and ``extra`` SLO keys) indented in place."""
    return f"""
            version: 1
            service: web
            slos:
              - name: api
                objective: 99.9%
                sli:
                  {RATIO}
                group_by: [region]
                alerting:
{alerting}{extra}"""


# Line numbers count from "version: 1" (line 1); the alerting keys start on line 10.
CASES: list[Case] = [
    Case(
        "a page label that rulegen sets (slo, severity) or that a group_by label is, is refused",
        _spec("                  page: {labels: {slo: x, region: eu, severity: page}}\n"),
        spec_errors(
            "specs/web.yaml:10:28: slos[0].alerting.page.labels.slo: label 'slo' is set by "
            "rulegen (the SLO's name) and cannot be overridden",
            "specs/web.yaml:10:39: slos[0].alerting.page.labels.region: label 'region' is set "
            "by rulegen (a group_by label of its series) and cannot be overridden",
            "specs/web.yaml:10:53: slos[0].alerting.page.labels.severity: label 'severity' is "
            "set by rulegen and cannot be overridden",
        ),
    ),
    Case(
        "a ticket label with an invalid name or an empty value is refused",
        _spec("                  ticket: {labels: {bad-name: x, queue: ''}}\n"),
        spec_errors(
            "specs/web.yaml:10:35: slos[0].alerting.ticket.labels.bad-name: invalid label name "
            "(expected [a-zA-Z_][a-zA-Z0-9_]*, no __ prefix)",
            "specs/web.yaml:10:45: slos[0].alerting.ticket.labels.queue: label value must not "
            "be empty (Prometheus drops empty labels)",
        ),
    ),
    Case(
        "an annotation rulegen writes (summary, description, runbook_url, slo_description) "
        "is refused, and so is an invalid annotation name",
        _spec(
            "                  page: {annotations: {summary: s, runbook_url: u}}\n"
            "                  ticket: {annotations: {description: d, slo_description: x, "
            "'a b': c}}\n"
        ),
        spec_errors(
            "specs/web.yaml:10:37: slos[0].alerting.page.annotations.summary: annotation "
            "'summary' is written by rulegen and cannot be overridden",
            "specs/web.yaml:10:53: slos[0].alerting.page.annotations.runbook_url: annotation "
            "'runbook_url' is written by rulegen and cannot be overridden",
            "specs/web.yaml:11:43: slos[0].alerting.ticket.annotations.description: annotation "
            "'description' is written by rulegen and cannot be overridden",
            "specs/web.yaml:11:63: slos[0].alerting.ticket.annotations.slo_description: "
            "annotation 'slo_description' is written by rulegen and cannot be overridden",
            'specs/web.yaml:11:73: slos[0].alerting.ticket.annotations["a b"]: invalid '
            "annotation name (expected [a-zA-Z_][a-zA-Z0-9_]*, no __ prefix)",
        ),
    ),
    Case(
        "a tier's label that rulegen sets is refused at the tier",
        _spec(
            "                  page: {labels: {team: a}}\n",
            "                tiers:\n"
            "                  - {long: 1h, short: 5m, budget: 2%, alert: page, "
            "labels: {service: x}}\n",
        ),
        spec_errors(
            "specs/web.yaml:12:74: slos[0].tiers[0].labels.service: label 'service' is set by "
            "rulegen and cannot be overridden",
        ),
    ),
    Case(
        "two tiers of their own whose alerts would carry the same labels are refused: one "
        "alert to Alertmanager",
        _spec(
            "                  page: {labels: {team: a}}\n",
            "                tiers:\n"
            "                  - {long: 1h, short: 5m, budget: 2%, alert: page, "
            "annotations: {note: fast}}\n"
            "                  - {long: 6h, short: 30m, budget: 5%, alert: page, "
            "labels: {team: a}}\n",
        ),
        spec_errors(
            "specs/web.yaml:13:65: slos[0].tiers[1].labels: the page of tiers[1] would carry "
            "the same labels as the page of tiers[0]: give the tier a label of its own "
            "(labels:) that tells its alert apart",
        ),
    ),
    Case(
        "a tier with annotations only, beside the page's other tiers, is refused: its rule "
        "would carry the page's labels",
        _spec(
            "                  page: {labels: {team: a}}\n",
            "                tiers:\n"
            "                  - {long: 1h, short: 5m, budget: 2%, alert: page}\n"
            "                  - {long: 6h, short: 30m, budget: 5%, alert: page, "
            "annotations: {note: slow}}\n",
        ),
        spec_errors(
            "specs/web.yaml:13:9: slos[0].tiers[1]: the page of tiers[1] would carry the same "
            "labels as the page of its other tiers: give the tier a label of its own (labels:) "
            "that tells its alert apart",
        ),
    ),
    Case(
        "an absent alert named as the burn-rate alerts is refused",
        _spec("                  absent: {name: ErrorBudgetBurn}\n"),
        spec_errors(
            "specs/web.yaml:10:22: slos[0].alerting.absent.name: the absent alert is named "
            "'ErrorBudgetBurn', as another alert of the SLO: give it a name of its own "
            "(alerting.absent.name)",
        ),
    ),
    Case(
        "an absent alert named as the coverage alert is refused",
        _spec("                  absent: {name: SLORecordingsIncomplete, for: 5m}\n"),
        spec_errors(
            "specs/web.yaml:10:22: slos[0].alerting.absent.name: the absent alert is named "
            "'SLORecordingsIncomplete', as another alert of the SLO: give it a name of its own "
            "(alerting.absent.name)",
        ),
    ),
    Case(
        "an absent for longer than 7d is refused, and its labels and annotations are checked",
        _spec(
            "                  absent: {for: 8d, labels: {slo: x, region: y}, "
            "annotations: {summary: s}}\n"
        ),
        spec_errors(
            "specs/web.yaml:10:21: slos[0].alerting.absent.for: must be at most 7d (got '8d')",
            "specs/web.yaml:10:39: slos[0].alerting.absent.labels.slo: label 'slo' is set by "
            "rulegen (the SLO's name) and cannot be overridden",
            "specs/web.yaml:10:50: slos[0].alerting.absent.labels.region: label 'region' is set "
            "by rulegen (a group_by label of its series) and cannot be overridden",
            "specs/web.yaml:10:77: slos[0].alerting.absent.annotations.summary: annotation "
            "'summary' is written by rulegen and cannot be overridden",
        ),
    ),
    Case(
        "an absent severity rulegen does not know is refused by the schema",
        _spec("                  absent: {for: 5m, severity: page}\n"),
        spec_errors(
            "specs/web.yaml:10:35: slos[0].alerting.absent.severity: must be 'critical', "
            "'warning' or 'info' (got 'page')",
        ),
    ),
    Case(
        "an unknown key in a page switch or in absent is refused at the key",
        _spec("                  page: {label: {a: b}}\n                  absent: {after: 5m}\n"),
        spec_errors(
            "specs/web.yaml:10:14: slos[0].alerting.page.label: unknown key; did you mean "
            '"labels"?',
            "specs/web.yaml:11:16: slos[0].alerting.absent.after: unknown key",
        ),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case.behaviour for case in CASES])
def test_broken_alerting_is_reported_exactly_and_writes_nothing(
    case: Case, in_tmp: Path, cli: Cli
) -> None:
    assert_rejected(in_tmp, cli, case.spec, case.stderr)


def test_case_ids_are_unique() -> None:
    assert len({case.behaviour for case in CASES}) == len(CASES)


# --- the rendered rules --------------------------------------------------------------------

SHOP = """
    version: 1
    service: shop
    evaluation_interval: 1m
    labels: {env: prod}
    runbook_url: https://runbooks.example.com/{alert}
    slos:
      - name: checkout
        objective: 99.9%
        window: 7d
        sli:
          ratio:
            errors: 'http_requests_total{handler="/checkout", code=~"5.."}'
            total: 'http_requests_total{handler="/checkout", job="web"}'
        alerting:
          labels: {team: shop}
          for: {ticket: 5m}
          page:
            labels: {pager: oncall}
            annotations: {dashboard: 'https://grafana.example.com/d/{{ $labels.x }}'}
          ticket:
            labels: {queue: shop}
            annotations: {playbook: open a ticket}
          absent: {for: 10m, annotations: {hint: check the exporter}}
      - name: search
        objective: 99%
        window: 7d
        sli:
          latency:
            metric: http_request_duration_seconds
            threshold: 250ms
            buckets: [0.05, 0.1, 0.25, 0.5, 1]
            matchers: 'handler="/search"'
        group_by: [region]
        alerting:
          absent: {name: SearchNoData, for: 90s, severity: warning, labels: {team: search}}
        tiers:
          - {long: 1h, short: 5m, budget: 5%, alert: page, labels: {speed: fast},
             annotations: {note: fast burn}}
          - {long: 6h, short: 30m, budget: 10%, alert: page}
          - {long: 1d, short: 2h, budget: 20%, alert: ticket}
    """


def _alerts(root: Path, slo: str) -> list[dict[str, Any]]:
    data = yaml.safe_load((root / f"rules/prometheus/shop.slo.{slo}.rules.yml").read_text())
    return [r for g in data["groups"] for r in g["rules"] if "alert" in r]


@pytest.fixture
def rendered(in_tmp: Path, cli: Cli) -> Path:
    write_tree(in_tmp, {"specs/shop.yaml": SHOP})
    result = cli("build", "--no-validate")
    assert result.code == 0, result.err
    return in_tmp


def test_page_and_ticket_carry_their_own_labels_and_annotations(rendered: Path) -> None:
    page, ticket, absent, incomplete = _alerts(rendered, "checkout")
    assert page["labels"] == {
        "env": "prod", "pager": "oncall", "service": "shop", "severity": "critical",
        "slo": "checkout", "team": "shop",
    }  # fmt: skip
    assert ticket["labels"] == {
        "env": "prod", "queue": "shop", "service": "shop", "severity": "warning",
        "slo": "checkout", "team": "shop",
    }  # fmt: skip
    # rulegen's annotations first, then the user's, literal (a Go template is escaped)
    assert list(page["annotations"]) == ["summary", "description", "runbook_url", "dashboard"]
    assert page["annotations"]["dashboard"] == (
        'https://grafana.example.com/d/{{ "{" }}{ $labels.x }}'
    )
    assert list(ticket["annotations"])[-1] == "playbook"
    assert "dashboard" not in ticket["annotations"]
    # the coverage alert keeps the SLO's labels only
    assert "pager" not in incomplete["labels"]
    assert "queue" not in incomplete["labels"]
    assert absent["alert"] == "ErrorBudgetBurnAbsent"


def test_the_absent_alert_reads_the_total_series_and_routes_like_the_slo(rendered: Path) -> None:
    absent = _alerts(rendered, "checkout")[2]
    assert absent["expr"] == 'absent(http_requests_total{handler="/checkout", job="web"}) == 1'
    assert absent["for"] == "10m"
    assert absent["labels"] == {
        "env": "prod", "service": "shop", "severity": "critical", "slo": "checkout",
        "team": "shop",
    }  # fmt: skip
    assert absent["annotations"] == {
        "summary": "shop: SLO checkout has no data",
        "description": 'No series of http_requests_total{handler="/checkout", job="web"} for '
        "10m: the SLI counts no events, so its error budget and burn rates have no value and "
        "ErrorBudgetBurn cannot fire. Check the target's scrape and the SLI's selector "
        "(rulegen docs: slos.md, Absent).",
        "runbook_url": "https://runbooks.example.com/ErrorBudgetBurnAbsent",
        "hint": "check the exporter",
    }
    search = next(a for a in _alerts(rendered, "search") if a["alert"] == "SearchNoData")
    assert search["expr"] == 'absent(http_request_duration_seconds_count{handler="/search"}) == 1'
    assert (search["for"], search["labels"]["severity"], search["labels"]["team"]) == (
        "1m30s", "warning", "search",
    )  # fmt: skip


def test_a_tier_with_labels_of_its_own_is_an_alert_rule_of_its_own(rendered: Path) -> None:
    fast, page, ticket = _alerts(rendered, "search")[:3]
    assert fast["alert"] == page["alert"] == ticket["alert"] == "ErrorBudgetBurn"
    assert "ratio_rate1h" in fast["expr"]
    assert "ratio_rate1h" not in page["expr"]
    assert "ratio_rate6h" in page["expr"]
    assert (fast["labels"]["speed"], fast["labels"]["severity"]) == ("fast", "critical")
    assert "speed" not in page["labels"]
    assert fast["annotations"]["note"] == "fast burn"
    assert "note" not in page["annotations"]
    assert "1h/5m" in fast["annotations"]["description"]
    assert "1h/5m" not in page["annotations"]["description"]


@pytest.mark.parametrize(
    ("sli", "selector"),
    [
        ("latency: {metric: rpc_seconds, threshold: 250ms, histogram: native, "
         "matchers: 'job=\"a\"'}", 'rpc_seconds{job="a"}'),
        ("latency: {metric: rpc_seconds, threshold: 250ms, histogram: nhcb, "
         "buckets: [0.25, 1]}", "rpc_seconds"),
        ("goodput: {matchers: 'job=\"a\"', latencies: [{metric: ttft_seconds, threshold: 1s, "
         "buckets: [1, 2]}, {metric: e2e_seconds, threshold: 2s, buckets: [1, 2]}]}",
         'ttft_seconds_count{job="a"}'),
    ],
    ids=["native", "nhcb", "goodput"],
)  # fmt: skip
def test_the_absent_alert_reads_the_series_the_sli_counts_its_total_with(
    sli: str, selector: str, in_tmp: Path, cli: Cli
) -> None:
    spec = f"""
        version: 1
        service: shop
        prometheus: {{version: "3.5"}}  # native histograms, whatever the stack
        slos:
          - name: rpc
            objective: 99%
            sli:
              {sli}
            alerting: {{absent: {{}}}}
        """
    write_tree(in_tmp, {"specs/shop.yaml": spec})
    result = cli("build", "--no-validate")
    assert result.code == 0, result.err
    absent = next(a for a in _alerts(in_tmp, "rpc") if a["alert"].endswith("Absent"))
    assert (absent["expr"], absent["for"]) == (f"absent({selector}) == 1", "10m")


def test_a_spec_without_the_keys_has_no_absent_alert(in_tmp: Path, cli: Cli) -> None:
    write_tree(in_tmp, {"specs/shop.yaml": _spec("                  for: {page: 0s}\n")})
    result = cli("build", "--no-validate")
    assert result.code == 0, result.err
    data = yaml.safe_load((in_tmp / "rules/prometheus/web.slo.api.rules.yml").read_text())
    names = [r["alert"] for g in data["groups"] for r in g["rules"] if "alert" in r]
    assert names == ["ErrorBudgetBurn", "ErrorBudgetBurn", "SLORecordingsIncomplete"]


ROUTING = """
    version: 1
    routing:
      default_receiver: tickets
      receivers:
        - {name: tickets, webhook: {url: 'http://sink.internal/tickets'}}
        - {name: oncall, webhook: {url: 'http://sink.internal/oncall'}}
      routes:
        - {match: {pager: oncall}, receiver: oncall}
    """


def test_the_page_still_inhibits_the_ticket_and_the_absent_alert_is_routed(
    in_tmp: Path, cli: Cli
) -> None:
    write_tree(in_tmp, {"specs/shop.yaml": SHOP, "specs/routing.yaml": ROUTING})
    result = cli("build", "--no-validate")
    assert result.code == 0, result.err
    config = yaml.safe_load((in_tmp / "rules/alertmanager/alertmanager.yml").read_text())
    inhibits = [(r["source_matchers"], r["target_matchers"], r["equal"])
                for r in config["inhibit_rules"]]  # fmt: skip
    assert inhibits == [
        (['alertname="ErrorBudgetBurn"', 'service="shop"', 'slo="checkout"',
          'severity="critical"'],
         ['alertname="ErrorBudgetBurn"', 'service="shop"', 'slo="checkout"',
          'severity="warning"'], ["service", "slo"]),
        # the fast tier's rule is a page too: the inhibition matches it by its labels
        (['alertname="ErrorBudgetBurn"', 'service="shop"', 'slo="search"',
          'severity="critical"'],
         ['alertname="ErrorBudgetBurn"', 'service="shop"', 'slo="search"',
          'severity="warning"'], ["service", "slo", "region"]),
    ]  # fmt: skip
    tests = yaml.safe_load((in_tmp / "rules/alertmanager/routing-tests.yml").read_text())
    by_name = {t["name"]: t for t in tests["tests"]}
    assert by_name["shop/ErrorBudgetBurnAbsent/critical"]["receivers"] == ["tickets"]
    page = next(t for n, t in by_name.items() if n.startswith("shop/ErrorBudgetBurn/critical")
                and t["labels"].get("slo") == "checkout")  # fmt: skip
    assert page["receivers"] == ["oncall"]


# --- built for real: the generated tests run -----------------------------------------------


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("promtool") is None, reason="needs promtool")
def test_the_generated_tests_of_a_tier_of_its_own_and_absent_pass_promtool(
    tmp_path: Path,
) -> None:
    """The latency SLO (group_by, a tier of its own, a named absent alert with a ``for``
    that is no multiple of the interval); the ratio SLO's tests run, and are mutated, in
    ``test_slo_alerting_catch_mutations.py``."""
    spec = SHOP[: SHOP.index("      - name: checkout")] + SHOP[SHOP.index("      - name: search") :]
    write_tree(tmp_path, {"specs/shop.yaml": for_stack(spec)})
    result = run_rulegen("build", cwd=tmp_path)
    assert result.code == 0, result.err
    assert "test rules: 2 file(s) passed" in result.out


@pytest.mark.slow
@NEEDS_VMALERT_TOOL
def test_the_absent_alert_passes_vmalert_tool(tmp_path: Path) -> None:
    """The ratio SLO for the VictoriaMetrics target: its absent case (the one with an alert
    check) run by vmalert-tool alone (the whole files take minutes there; the burn-rate
    scenarios' vmalert-tool runs are ``tests/targets``')."""
    spec = SHOP[: SHOP.index("      - name: search")]
    write_tree(tmp_path, {"specs/shop.yaml": spec})
    built = run_rulegen("build", "--no-validate", "--target", "victoriametrics", cwd=tmp_path)
    assert built.code == 0, built.err
    root = tmp_path / "rules"
    name = "victoriametrics/tests/shop.slo.checkout.test.yml"
    text = (root / name).read_text()
    assert "alertname: ErrorBudgetBurnAbsent" in text
    # the burn-rate alerts' annotations ask vmalert's stored recordings: labels only there
    assert "alertname: ErrorBudgetBurn\n" not in text
    cases = [c for c in promtool_cases.split(root, name) if "absent alert" in c.title]
    assert len(cases) == 1
    promtool_cases.write(root, cases)
    outcome = promtool_cases.run_until_one_fails(root, cases, command=promtool_cases.VMALERT_TOOL)
    assert outcome.failed == "", outcome.output


# Text a label value or annotation may hold: quotes, backslashes, template syntax (written
# literally), printf verbs, a line break, a tab, non-ASCII (the pieces of
# tests/output/test_no_validate_specs_pass.py).
ODD = 'a "q" \' \\ {{ $value }} }} {{{ %s $labels {labels.} 日本 🔥 Ω\nline\ttab `x` <b>&amp;'


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("promtool") is None, reason="needs promtool")
def test_odd_label_and_annotation_text_is_literal_and_its_tests_pass(tmp_path: Path) -> None:
    """Odd text in every label and annotation of one's own: written escaped, shown as
    written (the generated alert checks compare the expanded text with the spec's), and the
    generated tests pass."""
    own = {"labels": {"team": ODD}, "annotations": {"note": ODD}}
    spec = {
        "version": 1,
        "service": "shop",
        "evaluation_interval": "1m",
        "slos": [
            {
                "name": "odd",
                "objective": "99%",
                "window": "7d",
                "description": ODD,
                "sli": {"ratio": {"errors": 'req_total{code="5"}', "total": "req_total"}},
                "alerting": {"page": own, "ticket": {"labels": {"queue": ODD + "2"}},
                             "absent": {"for": "2m", **own}},
                "tiers": [
                    {"long": "1h", "short": "5m", "budget": "5%", "alert": "page"},
                    {"long": "6h", "short": "30m", "budget": "10%", "alert": "ticket"},
                ],
            }
        ],
    }  # fmt: skip
    write_tree(tmp_path, {"specs/shop.yaml": for_stack(yaml.safe_dump(spec, allow_unicode=True))})
    result = run_rulegen("build", cwd=tmp_path)
    assert result.code == 0, result.err
    rules = yaml.safe_load((tmp_path / "rules/prometheus/shop.slo.odd.rules.yml").read_text())
    page, ticket, absent = [r for r in rules["groups"][0]["rules"] if "alert" in r][:3]
    escaped = go_escape(ODD)  # as alerting.labels values are
    assert (page["labels"]["team"], page["annotations"]["note"]) == (escaped, escaped)
    assert ticket["labels"]["queue"] == escaped + "2"
    assert "note" not in ticket["annotations"]
    assert (absent["labels"]["team"], absent["annotations"]["note"]) == (escaped, escaped)
    tests = (tmp_path / "rules/tests/shop.slo.odd.test.yml").read_text()
    assert (
        yaml.safe_load(tests)["tests"][0]["alert_rule_test"][0]["exp_alerts"][0]["exp_annotations"][
            "note"
        ]
        == ODD
    )
