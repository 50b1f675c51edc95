"""Generated SLO tests of the alerting settings per alert must be sharp: the labels and
annotations of the page, the ticket and a tier of its own, and the absent alert.

Why: ``alerting.page``/``ticket`` labels and annotations, a tier's own (an alert rule of its
own) and ``alerting.absent`` are proven by the generated tests of the SLO (``ALERTS`` with
exact labels; an alert check with exact labels and annotations where one of them has its own;
the absent alert's firing times). Each case here edits the RENDERED rule file of the one SLO
(literal replacements in named alert rules, each counted) and the generated tests must fail;
the unmutated rules must pass. The runs are those of ``test_slo_tests_catch_mutations.py``
(one file per test case, cheapest first, stopping at the first that fails).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_slo_tests_catch_mutations import (
    Run,
    _test_files,
    assert_caught,
    assert_passes,
    build_spec,
    promtool_runs,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("promtool") is None, reason="needs promtool"),
]

SPEC = """
    version: 1
    service: shop
    evaluation_interval: 1m
    slos:
      - name: checkout
        objective: 99.9%
        window: 7d
        sli:
          ratio:
            errors: 'http_requests_total{handler="/checkout", code=~"5.."}'
            total: 'http_requests_total{handler="/checkout"}'
        alerting:
          for: {ticket: 5m}
          page:
            labels: {pager: oncall}
            annotations: {dashboard: 'https://grafana.example.com/d/checkout'}
          ticket:
            labels: {queue: shop}
            annotations: {playbook: open a ticket}
          absent: {for: 10m}
        tiers:
          - {long: 1h, short: 5m, budget: 5%, alert: page, labels: {speed: fast}}
          - {long: 6h, short: 30m, budget: 10%, alert: page}
          - {long: 1d, short: 2h, budget: 20%, alert: ticket}
    """
SLO = "checkout"
# The alert rules of the SLO's file, in order.
FAST, PAGE, TICKET, ABSENT = range(4)
PAGER = "      pager: oncall\n"
DASHBOARD = "      dashboard: https://grafana.example.com/d/checkout\n"


@dataclass(frozen=True)
class Edits:
    """Replace ``old`` by ``new`` exactly once in alert rule ``rule`` (an index in the
    file's order), for each of ``edits``; ``first`` as in ``Mutation``."""

    broken: str
    edits: tuple[tuple[int, str, str], ...]
    first: str = ""
    slo: str = SLO

    def apply(self, text: str) -> str:
        """The rule file with every edit made, each checked to change one place."""
        head, *rules = text.split("  - alert: ")
        for rule, old, new in self.edits:
            assert rules[rule].count(old) == 1, f"{self.broken}: {old!r} in rule {rule}"
            rules[rule] = rules[rule].replace(old, new)
        return "  - alert: ".join([head, *rules])


def _moved(what: str, source: int, target: int, anchor: str) -> tuple[tuple[int, str, str], ...]:
    """``what`` (one line) taken out of rule ``source`` and put after ``anchor`` in ``target``."""
    return ((source, what, ""), (target, anchor, anchor + what))


MUTATIONS = [
    Edits(
        "absent alert: for 10m -> 11m",
        ((ABSENT, "    for: 10m\n", "    for: 11m\n"),),
        first="absent",
    ),  # fmt: skip
    Edits(
        "absent alert: its selector reads another handler",
        (
            (
                ABSENT,
                'absent(http_requests_total{handler="/checkout"})',
                'absent(http_requests_total{handler="/cart"})',
            ),
        ),
        first="absent",
    ),  # fmt: skip
    Edits(
        "absent alert: severity critical -> warning",
        ((ABSENT, "      severity: critical\n", "      severity: warning\n"),),
        first="absent",
    ),  # fmt: skip
    Edits(
        "the page's label moved to the ticket",
        _moved(PAGER, PAGE, TICKET, "    labels:\n"),
        first="total outage",
    ),  # fmt: skip
    Edits(
        "the page's annotation moved to the ticket",
        _moved(DASHBOARD, PAGE, TICKET, "    annotations:\n"),
        first="slow burn",
    ),  # fmt: skip
    Edits(
        "the ticket's label dropped", ((TICKET, "      queue: shop\n", ""),), first="slow burn"
    ),  # fmt: skip
    Edits(
        "the fast tier's own label moved to the page's other tier",
        _moved("      speed: fast\n", FAST, PAGE, "    labels:\n"),
        first="total outage",
    ),  # fmt: skip
]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The spec built once, without validation."""
    return build_spec(SPEC, tmp_path_factory)


@pytest.fixture(scope="module")
def runs(built: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    """Every promtool run of the module, by mutation (``original checkout`` unmutated)."""
    return promtool_runs(built, (SLO,), MUTATIONS, tmp_path_factory)  # type: ignore[arg-type]


def test_the_rules_are_in_the_order_the_edits_assume(built: Path) -> None:
    text = (built / f"prometheus/shop.slo.{SLO}.rules.yml").read_text()
    rules = text.split("  - alert: ")[1:]
    assert [r.split("\n", 1)[0] for r in rules] == [
        "ErrorBudgetBurn", "ErrorBudgetBurn", "ErrorBudgetBurn", "ErrorBudgetBurnAbsent",
        "SLORecordingsIncomplete",
    ]  # fmt: skip
    assert "speed: fast" in rules[FAST]
    assert "speed" not in rules[PAGE]
    assert "severity: warning" in rules[TICKET]
    assert len(_test_files(built, SLO)) == 2


def test_the_generated_tests_pass_on_the_generated_rules(runs: dict[str, Run]) -> None:
    assert_passes(runs[f"original {SLO}"])


@pytest.mark.parametrize("mutation", MUTATIONS, ids=[m.broken for m in MUTATIONS])
def test_a_mutated_rule_fails_the_generated_tests(mutation: Edits, runs: dict[str, Run]) -> None:
    assert_caught(runs[mutation.broken], mutation.slo)
