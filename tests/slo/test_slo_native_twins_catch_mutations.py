"""The latency SLO's native twins: the same mutations must fail their generated tests.

Why: ``test_slo_tests_catch_mutations.py`` proves the generated tests of a latency SLO on a
classic histogram sharp; a team that reads the same histogram as a native one
(``histogram: nhcb`` after ``convert_classic_histograms_to_nhcb``, or an exponential
``histogram: native``) gets other rules (``histogram_count``/``histogram_fraction`` of one
series) and other test series (promtool's ``{{…}}`` notation). Here the same SLO (250ms =
2**-2 s, a bound of every exponential schema) is built on both native kinds and every
mutation of the classic SLO is applied to each twin, on its labels (the bucket edit becomes
the threshold of ``histogram_fraction``): each twin's tests pass unmutated and fail on every
mutant, as the classic SLO's do. A module of its own so that its promtool runs (about two
minutes of CPU) go to whichever test process has room. Prometheus 3 only: native histograms
are written for 3.0 on.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ON_PROMETHEUS_2
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

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(ON_PROMETHEUS_2, reason="native histograms are written for Prometheus 3"),
]

TWINS = {"search-nhcb": "nhcb", "search-native": "native"}
TWIN = """
      - name: {name}
        objective: 99%
        window: 28d
        sli:
          latency:
            metric: http_request_duration_seconds
            threshold: 250ms
            histogram: {kind}
            matchers: 'handler="/search"'
        group_by: [region]
        alerting:
          min_traffic: 0.1
        tiers:
          - {{long: 1h, short: 5m, budget: 2%, alert: page}}
          - {{long: 6h, short: 30m, budget: 5%, alert: page}}
          - {{long: 1d, short: 2h, budget: 10%, alert: ticket}}
"""
# The classic spec's head (version, service, evaluation_interval) with the twins as its SLOs.
SPEC_TWINS = SPEC[: SPEC.index("      - name: checkout")].rstrip() + "".join(
    TWIN.format(name=name, kind=kind) for name, kind in TWINS.items()
)
SLOS = tuple(TWINS)


def _twin(mutation: Mutation, name: str) -> Mutation:
    """``mutation`` of the classic latency SLO made for its native twin ``name``."""
    own = f'slo="{name}"'

    def moved(text: str) -> str:
        return text.replace('slo="search"', own)

    old, new = moved(mutation.old), moved(mutation.new)
    if old == 'le="0.25"':
        old, new = "histogram_fraction(-Inf, 0.25,", "histogram_fraction(-Inf, 0.5,"
    broken = f"{name}: {mutation.broken}"
    return Mutation(broken, name, mutation.where, old, new, mutation.count, mutation.regex,
                    mutation.first)  # fmt: skip


TWIN_MUTATIONS = [_twin(m, name) for name in SLOS for m in MUTATIONS if m.slo == "search"]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_spec(SPEC_TWINS, tmp_path_factory)


@pytest.fixture(scope="module")
def runs(built: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    return promtool_runs(built, SLOS, TWIN_MUTATIONS, tmp_path_factory)


def test_every_latency_mutation_has_its_twins() -> None:
    classic = [m for m in MUTATIONS if m.slo == "search"]
    assert len(TWIN_MUTATIONS) == 2 * len(classic) >= 12


@pytest.mark.parametrize("slo", SLOS)
def test_the_twins_read_native_histograms(slo: str, built: Path) -> None:
    rules = (built / _rules_name(slo)).read_text()
    assert "histogram_fraction(-Inf, 0.25, http_request_duration_seconds{" in rules
    assert "_bucket" not in rules
    assert len(_test_files(built, slo)) == 2
    tests = (built / f"tests/shop.slo.{slo}.test.yml").read_text()
    assert ("{{schema:-53 " if TWINS[slo] == "nhcb" else "{{schema:0 ") in tests


@pytest.mark.parametrize("slo", SLOS)
def test_the_generated_tests_pass_on_the_twins(slo: str, runs: dict[str, Run]) -> None:
    assert_passes(runs[f"original {slo}"])


@pytest.mark.parametrize("mutation", TWIN_MUTATIONS, ids=[m.broken for m in TWIN_MUTATIONS])
def test_a_mutated_twin_fails_its_generated_tests(mutation: Mutation, runs: dict[str, Run]) -> None:
    assert_caught(runs[mutation.broken], mutation.slo)
