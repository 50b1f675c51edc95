"""Expression SLIs (``sli.events``, ``sli.raw``): their generated tests pass and are sharp.

Why: an expression SLI's query is the user's (Sloth's ``{{.window}}`` form), rendered once
per window; its generated test runs the spec's own good and bad test series and checks the
shortest window's ratio (exactly 0, then exactly 1), the budget left, and that each alert
fires during the outage no later than its fastest tier allows. Here Sloth's two expression
forms are built, an events SLI counting a gauge's bad samples through a subquery and a raw
error ratio of ``sum_over_time`` over ``count_over_time``, and edits that make the SLI wrong
(a window, the comparison that picks bad samples, the ``1 -`` of the raw ratio) or the alert
wrong (a factor a hundred times too high, a long ``for``) must fail the tests. A factor nudged
within the test's slack is not caught (docs/slos.md#expression-slis says so).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_slo_tests_catch_mutations import (
    Mutation,
    Run,
    _rules_name,
    _test_files,
    assert_caught,
    assert_passes,
    build_spec,
    promtool_runs,
)

pytestmark = [pytest.mark.slow]

SPEC = """
    version: 1
    service: shop
    slos:
      - name: gauge
        objective: 99.9%
        sli:
          events:
            errors: 'sum_over_time((count(queue_health < 0.75))[{{.window}}:5m]) or on() vector(0)'
            total: 'sum_over_time((count(queue_health))[{{.window}}:5m])'
            test:
              good: {'queue_health{queue="a"}': 0.9, 'queue_health{queue="b"}': 0.8}
              bad: {'queue_health{queue="a"}': 0.5, 'queue_health{queue="b"}': 0.1}
        alerting:
          for: {ticket: 5m}
      - name: raw
        objective: 99%
        sli:
          raw:
            error_ratio: >-
              1 - (sum(sum_over_time(probe_success[{{.window}}]))
              / sum(count_over_time(probe_success[{{.window}}])))
            test:
              good: {'probe_success{target="a"}': 1}
              bad: {'probe_success{target="a"}': 0}
    """
SLOS = ("gauge", "raw")

# fmt: off
MUTATIONS = [
    Mutation("gauge: the 5m errors read over 1h", "gauge", "recordings",
             "(count(queue_health < 0.75))[5m:5m]", "(count(queue_health < 0.75))[1h:5m]"),
    Mutation("gauge: good samples counted as errors in every window", "gauge", "recordings",
             "count(queue_health < 0.75)", "count(queue_health > 0.75)", None),
    Mutation("gauge: the 5m total read over 1h", "gauge", "recordings",
             "(count(queue_health))[5m:5m]", "(count(queue_health))[1h:5m]"),
    Mutation("gauge: both page factors (14.4, 6) -> 1440", "gauge", "page",
             r"> (14\.4|6)\n", "> 1440\n", 4, regex=True),
    Mutation("gauge: page for 1h added", "gauge", "page",
             "    labels:\n", "    for: 1h\n    labels:\n"),
    Mutation("gauge: ticket for 5m -> 3h", "gauge", "ticket", "    for: 5m\n", "    for: 3h\n"),
    Mutation("raw: the 1 - dropped (the success ratio taken as errors)", "raw", "recordings",
             "1 - (sum(", "(sum(", None),
    Mutation("raw: the 5m ratio read over 1h", "raw", "recordings",
             "probe_success[5m]", "probe_success[1h]", 2),
]
# fmt: on


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_spec(SPEC, tmp_path_factory)


@pytest.fixture(scope="module")
def runs(built: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    return promtool_runs(built, SLOS, MUTATIONS, tmp_path_factory)


def test_the_queries_are_rendered_per_window(built: Path) -> None:
    rules = (built / _rules_name("gauge")).read_text()
    for window in ("5m", "30m", "1h", "2h", "6h", "1d", "3d"):
        assert f"(count(queue_health))[{window}:5m]" in rules, window
    # the SLO window (read by no alert) is the mean of the 5m ratio, not a 30d subquery
    assert "[30d:" not in rules
    assert 'avg_over_time(slo:sli_error:ratio_rate5m{service="shop", slo="gauge"}[30d])' in rules
    assert "slo_term" not in rules  # no cascade
    assert "SLORecordingsIncomplete" not in rules
    assert len(_test_files(built, "gauge")) == 1  # no history file


@pytest.mark.parametrize("slo", SLOS)
def test_the_generated_tests_pass(slo: str, runs: dict[str, Run]) -> None:
    assert_passes(runs[f"original {slo}"])


@pytest.mark.parametrize("mutation", MUTATIONS, ids=[m.broken for m in MUTATIONS])
def test_a_mutated_rule_fails_the_generated_tests(mutation: Mutation, runs: dict[str, Run]) -> None:
    assert_caught(runs[mutation.broken], mutation.slo)
