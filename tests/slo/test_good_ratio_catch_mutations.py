"""Good-over-total ratio SLIs: the generated tests of a bucket-over-count SLO are as sharp.

Why: ``sli.ratio.good`` takes the SLIs people write in OpenSLO and Pyrra as two counters of
different series, ``…_bucket{le="0.25"}`` over ``…_count`` (or one family's successes over
another's requests): rulegen writes the errors as total − good, like a latency SLI's, but from
the user's own selectors. Here the latency SLO of ``test_slo_tests_catch_mutations.py`` is
written that way and every mutation of the latency SLO is applied to it (the ``le`` edit now
moves the good selector's bucket): its generated tests pass unmutated and fail on every mutant.
A module of its own so that its promtool runs go to whichever test process has room.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_slo_tests_catch_mutations import (
    MUTATIONS,
    SPEC,
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

NAME = "search-ratio"
TWIN = f"""
      - name: {NAME}
        objective: 99%
        window: 28d
        sli:
          ratio:
            good: 'http_request_duration_seconds_bucket{{handler="/search", le="0.25"}}'
            total: 'http_request_duration_seconds_count{{handler="/search"}}'
        group_by: [region]
        alerting:
          min_traffic: 0.1
        tiers:
          - {{long: 1h, short: 5m, budget: 2%, alert: page}}
          - {{long: 6h, short: 30m, budget: 5%, alert: page}}
          - {{long: 1d, short: 2h, budget: 10%, alert: ticket}}
"""
SPEC_TWIN = SPEC[: SPEC.index("      - name: checkout")].rstrip() + TWIN


def _twin(mutation: Mutation) -> Mutation:
    """``mutation`` of the latency SLO made for its good-ratio twin."""
    old = mutation.old.replace('slo="search"', f'slo="{NAME}"')
    new = mutation.new.replace('slo="search"', f'slo="{NAME}"')
    return Mutation(f"{NAME}: {mutation.broken}", NAME, mutation.where, old, new,
                    mutation.count, mutation.regex, mutation.first)  # fmt: skip


TWIN_MUTATIONS = [_twin(m) for m in MUTATIONS if m.slo == "search"]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_spec(SPEC_TWIN, tmp_path_factory)


@pytest.fixture(scope="module")
def runs(built: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    return promtool_runs(built, (NAME,), TWIN_MUTATIONS, tmp_path_factory)


def test_the_twin_reads_the_good_bucket_and_the_count(built: Path) -> None:
    rules = (built / _rules_name(NAME)).read_text()
    assert 'http_request_duration_seconds_bucket{handler="/search", le="0.25"}' in rules
    assert 'http_request_duration_seconds_count{handler="/search"}' in rules
    assert len(_test_files(built, NAME)) == 2
    tests = (built / f"tests/shop.slo.{NAME}.test.yml").read_text()
    # one bucket series (the good one) and the count: no +Inf bucket is needed
    assert 'le="+Inf"' not in tests
    assert 'le="0.25"' in tests


def test_the_generated_tests_pass_on_the_twin(runs: dict[str, Run]) -> None:
    assert_passes(runs[f"original {NAME}"])


@pytest.mark.parametrize("mutation", TWIN_MUTATIONS, ids=[m.broken for m in TWIN_MUTATIONS])
def test_a_mutated_twin_fails_its_generated_tests(mutation: Mutation, runs: dict[str, Run]) -> None:
    assert_caught(runs[mutation.broken], mutation.slo)
