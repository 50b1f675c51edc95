"""Goodput SLIs: spec errors, the split of the test series, one model's burn pages that model
only, and the generated tests catch edits of the goodput recording.

Why: the goodput SLI's errors are ``min(total, Σᵢ badᵢ)`` over separate histograms
(docs/slos.md#goodput). Its base recording is the only rule that differs from a latency
SLO's, so the mutations here edit it: a latency dropped from the sum, the first latency's
term dropped, the sum replaced by the max of the bads (the bound ``Σ goodᵢ − (n − 1)·total``
replaced by the best single target's), a threshold moved, the cap at the total removed. Each
must fail the SLO's generated tests (run as in ``test_slo_tests_catch_mutations.py``).
"""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import (
    CliResult,
    assert_rejected,
    for_stack,
    promtool_test,
    spec_errors,
    write_tree,
)
from test_slo_tests_catch_mutations import (
    Mutation,
    Run,
    _test_files,
    assert_caught,
    assert_passes,
    build_spec,
    promtool_runs,
)

from rulegen.slo.series import goodput_split

Cli = Callable[..., CliResult]


@dataclass(frozen=True)
class Case:
    """One broken ``specs/web.yaml`` (its SLI) and the exact stderr it gives."""

    behaviour: str
    sli: str
    stderr: tuple[str, ...]


HEAD = """
    version: 1
    service: web
    slos:
      - name: goodput
        objective: 99%
        sli:
"""
TTFT = "{metric: vllm:time_to_first_token_seconds, threshold: 500ms}"
E2E = "{metric: vllm:e2e_request_latency_seconds, threshold: 10s}"

# Line numbers count from "version: 1" (line 1); the SLI's first line is line 7.
CASES = [
    Case(
        "an inter-token latency in a goodput SLI is rejected at its metric: it counts tokens",
        f"""
          goodput:
            latencies:
              - {TTFT}
              - {{metric: vllm:inter_token_latency_seconds, threshold: 100ms}}
        """,
        spec_errors(
            "specs/web.yaml:10:22: slos[0].sli.goodput.latencies[1].metric: "
            "vllm:inter_token_latency_seconds is observed per output token, not per request: a "
            "goodput SLI counts requests; write a latency SLI for it (it counts tokens)"
        ),
    ),
    Case(
        "vLLM's older time per output token in a goodput SLI is rejected too",
        f"""
          goodput:
            latencies:
              - {{metric: vllm:time_per_output_token_seconds, threshold: 100ms}}
              - {TTFT}
        """,
        spec_errors(
            "specs/web.yaml:9:22: slos[0].sli.goodput.latencies[0].metric: "
            "vllm:time_per_output_token_seconds is observed per output token, not per request: "
            "a goodput SLI counts requests; write a latency SLI for it (it counts tokens)"
        ),
    ),
    Case(
        "a goodput SLI with one latency is rejected with a pointer to the latency SLI",
        f"""
          goodput:
            latencies:
              - {TTFT}
        """,
        spec_errors(
            "specs/web.yaml:9:11: slos[0].sli.goodput.latencies: needs at least two latency "
            "targets (got 1): for one, write a latency SLI (sli: {latency: {metric, threshold}})"
        ),
    ),
    Case(
        "a goodput threshold that is no bucket bound is rejected at that latency",
        f"""
          goodput:
            latencies:
              - {TTFT}
              - {{metric: vllm:e2e_request_latency_seconds, threshold: 7s}}
        """,
        spec_errors(
            "specs/web.yaml:10:67: slos[0].sli.goodput.latencies[1].threshold: 7s is not a "
            "bucket bound of vllm:e2e_request_latency_seconds (nearest: 5, 10, 2.5 seconds); "
            "the SLI counts the bucket le=threshold"
        ),
    ),
    Case(
        "the same histogram twice in a goodput SLI is rejected",
        f"""
          goodput:
            latencies:
              - {TTFT}
              - {{metric: vllm:time_to_first_token_seconds, threshold: 1s}}
        """,
        spec_errors(
            "specs/web.yaml:10:22: slos[0].sli.goodput.latencies[1].metric: duplicate metric "
            "'vllm:time_to_first_token_seconds' (also latencies[0]): one target per histogram"
        ),
    ),
    Case(
        "goodput matchers on le are rejected",
        f"""
          goodput:
            latencies:
              - {TTFT}
              - {E2E}
            matchers: 'le="1"'
        """,
        spec_errors(
            "specs/web.yaml:11:19: slos[0].sli.goodput.matchers: must not match on le: the "
            "threshold picks the bucket"
        ),
    ),
    Case(
        "a latency and a goodput SLI in one sli are rejected",
        f"""
          latency: {TTFT}
          goodput:
            latencies:
              - {TTFT}
              - {E2E}
        """,
        spec_errors(
            "specs/web.yaml:7:7: slos[0].sli: needs exactly one SLI kind, ratio, latency, "
            "goodput, events or raw (got both latency and goodput)"
        ),
    ),
    Case(
        "a goodput latency named by its _count series is rejected",
        f"""
          goodput:
            latencies:
              - {{metric: vllm:time_to_first_token_seconds_count, threshold: 500ms}}
              - {E2E}
        """,
        spec_errors(
            "specs/web.yaml:9:22: slos[0].sli.goodput.latencies[0].metric: give the histogram's "
            "base name ('vllm:time_to_first_token_seconds'), not a series of it"
        ),
    ),
]


def _spec(sli: str) -> str:
    return textwrap.dedent(HEAD).lstrip("\n") + textwrap.indent(
        textwrap.dedent(sli).lstrip("\n"), " " * 6
    )


@pytest.mark.parametrize("case", CASES, ids=[case.behaviour for case in CASES])
def test_broken_goodput_slo_is_reported_exactly_and_writes_nothing(
    case: Case, in_tmp: Path, cli: Cli
) -> None:
    assert_rejected(in_tmp, cli, _spec(case.sli), case.stderr)


@pytest.mark.parametrize(
    ("errors", "count"),
    [((0, 1, 5, 9, 100), 2), ((0, 7, 7, 30), 3)],
    ids=["two histograms", "three histograms"],
)
def test_the_default_split_adds_up_to_the_errors_and_every_part_is_a_counter(
    errors: tuple[int, ...], count: int
) -> None:
    parts = goodput_split(errors, count)
    assert len(parts) == count
    assert all(sum(p[k] for p in parts) == e for k, e in enumerate(errors))
    assert all(a <= b for p in parts for a, b in zip(p, p[1:], strict=False))


# --- promtool -------------------------------------------------------------------------------

SPEC = f"""
    version: 1
    service: shop
    evaluation_interval: 1m
    slos:
      - name: goodput
        objective: 99%
        window: 28d
        sli:
          goodput:
            latencies:
              - {TTFT}
              - {E2E}
            matchers: 'job="vllm"'
        group_by: [model_name]
        alerting:
          min_traffic: 0.1
        tiers:
          - {{long: 1h, short: 5m, budget: 2%, alert: page}}
          - {{long: 6h, short: 30m, budget: 5%, alert: page}}
          - {{long: 1d, short: 2h, budget: 10%, alert: ticket}}
"""
SLOS = ("goodput",)
TOTAL = 'sum by (model_name) (slo:sli_total:increase5m{service="shop", slo="goodput"})'
FIRST = r"(?s)\(\n        clamp_min\(\n.*?\n        \)\n        \+\n"
SECOND = r"(?s)\n        \+\n        \(\n.*?\n        \)\n      \) <="
PAIR = r"(?s)(\n        clamp_min\(\n.*?\n        \))\n        \+\n(        \(\n.*?\n        \))\n"

# fmt: off
MUTATIONS = [
    Mutation("goodput: the second latency (e2e) dropped from the errors", "goodput",
             "recordings", SECOND, "\n      ) <=", 1, regex=True, first="lower bound"),
    Mutation("goodput: the first latency (TTFT) dropped from the errors", "goodput",
             "recordings", FIRST, "(\n", 1, regex=True, first="lower bound"),
    Mutation("goodput: the bound total - sum of bads replaced by the max of the bads",
             "goodput", "recordings", PAIR, r"\1\n        >\n\2\n        or\n\2\n", 1,
             regex=True, first="lower bound"),
    Mutation("goodput: the e2e threshold moved from 10s to 20s", "goodput", "recordings",
             'le=~"10|10\\\\.0"', 'le=~"20|20\\\\.0"', None, first="lower bound"),
    Mutation("goodput: the TTFT threshold moved from 500ms to 1s", "goodput", "recordings",
             'le="0.5"', 'le=~"1|1\\\\.0"', None, first="lower bound"),
    Mutation("goodput: the errors no longer capped at the total", "goodput", "recordings",
             f") <= {TOTAL}\n      or\n      {TOTAL}\n", ")\n", 1, first="lower bound"),
]
# fmt: on


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_spec(SPEC, tmp_path_factory)


@pytest.fixture(scope="module")
def runs(built: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    return promtool_runs(built, SLOS, MUTATIONS, tmp_path_factory)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("promtool") is None, reason="needs promtool")
def test_the_generated_goodput_tests_pass(runs: dict[str, Run], built: Path) -> None:
    assert len(_test_files(built, "goodput")) == 2
    tests = (built / "tests/shop.slo.goodput.test.yml").read_text()
    assert "the goodput SLI is the lower bound" in tests
    assert "fires no later than one on the worst single target" in tests
    assert_passes(runs["original goodput"])


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("promtool") is None, reason="needs promtool")
@pytest.mark.parametrize("mutation", MUTATIONS, ids=[m.broken for m in MUTATIONS])
def test_a_mutated_goodput_recording_fails_the_generated_tests(
    mutation: Mutation, runs: dict[str, Run]
) -> None:
    assert_caught(runs[mutation.broken], mutation.slo)


# One model's slow requests page that model only: model "a" has 20% of its requests slow in
# TTFT and 20% (others) slow in e2e from 1h on, model "b" stays fast. At 1h30m the 1h window of
# "a" holds 20% of bad events (40% for 30 minutes), above 13.44 × 1%, its 5m window 40%: "a"
# pages (and its 1d/2h ticket fires), "b" has neither.
PER_MODEL = """
rule_files: [../prometheus/shop.slo.goodput.rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'vllm:time_to_first_token_seconds_bucket{job="vllm", model_name="a", le="0.5"}'
        values: '0+100x60 6000+80x60'
      - series: 'vllm:time_to_first_token_seconds_count{job="vllm", model_name="a"}'
        values: '0+100x120'
      - series: 'vllm:e2e_request_latency_seconds_bucket{job="vllm", model_name="a", le="10"}'
        values: '0+100x60 6000+80x60'
      - series: 'vllm:e2e_request_latency_seconds_count{job="vllm", model_name="a"}'
        values: '0+100x120'
      - series: 'vllm:time_to_first_token_seconds_bucket{job="vllm", model_name="b", le="0.5"}'
        values: '0+100x120'
      - series: 'vllm:time_to_first_token_seconds_count{job="vllm", model_name="b"}'
        values: '0+100x120'
      - series: 'vllm:e2e_request_latency_seconds_bucket{job="vllm", model_name="b", le="10"}'
        values: '0+100x120'
      - series: 'vllm:e2e_request_latency_seconds_count{job="vllm", model_name="b"}'
        values: '0+100x120'
    promql_expr_test:
      - expr: slo:sli_error:ratio_rate5m{slo="goodput"}
        eval_time: 1h30m
        exp_samples:
          - labels: 'slo:sli_error:ratio_rate5m{model_name="a", service="shop", slo="goodput"}'
            value: 0.4
          - labels: 'slo:sli_error:ratio_rate5m{model_name="b", service="shop", slo="goodput"}'
            value: 0
      - expr: count by (model_name, severity) (ALERTS{alertstate="firing", slo="goodput"})
        eval_time: 1h30m
        exp_samples:
          - labels: '{model_name="a", severity="critical"}'
            value: 1
          - labels: '{model_name="a", severity="warning"}'
            value: 1
"""


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("promtool") is None, reason="needs promtool")
def test_one_models_burn_pages_that_model_only(built: Path, tmp_path: Path) -> None:
    shutil.copytree(built, tmp_path / "rules")
    test_file = tmp_path / "rules" / "tests" / "per-model.test.yml"
    test_file.write_text(PER_MODEL)
    proc = promtool_test(test_file)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_spec_declares_the_stack_under_test() -> None:
    assert "prometheus" not in SPEC
    assert for_stack(SPEC).startswith(SPEC.rstrip("\n"))


def test_lint_flags_the_threshold_of_the_goodput_latency_it_concerns(
    in_tmp: Path, cli: Cli
) -> None:
    """``histogram/threshold`` reads every latency of a goodput SLI, at its own position."""
    spec = """
        version: 1
        service: web
        prometheus: {version: "3.5"}  # native histograms, whatever the stack under test
        histograms: {vllm:e2e_request_latency_seconds: native}
        selectors: {vllm: 'job="vllm"'}
        runbook_url: https://runbooks.example.com/{alert}
        slos:
          - name: goodput
            objective: 99%
            sli:
              goodput:
                latencies:
                  - {metric: vllm:time_to_first_token_seconds, threshold: 500ms}
                  - {metric: vllm:e2e_request_latency_seconds, threshold: 10s}
        """
    write_tree(in_tmp, {"specs/web.yaml": spec})
    result = cli("lint")
    found = [line for line in result.out.splitlines() if "[histogram/threshold]" in line]
    assert found == [
        "specs/web.yaml:14:67: [histogram/threshold] warning: SLO goodput: 10s is no bucket "
        "bound of an exponential histogram: the good events are interpolated inside the "
        "bucket holding it (nearest exact: 8s or 16s)"
    ], result.out + result.err
