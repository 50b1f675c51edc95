"""Which of the ``--shard I/N`` pytest processes runs which test file, balanced by cost.

Why whole files: a module fixture (a mutation suite's promtool runs, the legal SLO builds) is
made by every process that runs one of its tests, so a file sliced across processes is paid
for twice; and a session fixture shared by files (the example's validated build) pays off only
when those files share a process (``TOGETHER``). Why a table: a few files cost tens of seconds
and most a fraction of one, so counting tests would put two heavy files on one core while the
other idles. The files go longest first, each to the process with the least work so far; every
process computes the same assignment from the same collected tests.

``COSTS`` holds rough wall seconds per file (its fast tests, its slow tests) as measured in
``make test`` and ``make test-fast`` on the 2-core machine (``pytest --durations=0``), for the
files that stray from the defaults: a file not listed counts ``FAST`` or ``SLOW`` per test.
Only the rough size matters: a stale figure costs balance, never correctness.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

FAST = 0.03
SLOW = 0.5

# fmt: off
COSTS: dict[str, tuple[float, float]] = {
    "tests/alerts/test_custom_rules.py": (0.2, 1.0),
    "tests/alerts/test_disk_alerts_real_host.py": (0, 30),
    "tests/alerts/test_exporter_series_prometheus.py": (0, 25),
    "tests/alerts/test_generated_tests_catch_mutations.py": (1.5, 20),
    "tests/alerts/test_hostile_text.py": (0.1, 1.5),
    "tests/alerts/test_legal_specs_build.py": (0, 2.3),
    "tests/alerts/test_signals_promtool.py": (0, 2.4),
    "tests/alerts/test_spec_errors.py": (1.1, 3.5),
    "tests/alerts/test_vllm_releases_prometheus.py": (0, 32),
    "tests/backtest/test_backtest_raw_history.py": (0, 26),
    "tests/backtest/test_backtest_replay.py": (0.1, 0),
    "tests/cli/test_cli.py": (1.7, 140),
    "tests/cli/test_first_spec.py": (1.1, 2.4),
    "tests/cli/test_fuzz_specs.py": (5.8, 0),
    "tests/cli/test_init.py": (0.3, 61),
    "tests/cli/test_input_guards.py": (1.8, 9.3),
    "tests/cli/test_network_guards.py": (0.3, 24),
    "tests/cli/test_progress.py": (0.1, 4.6),
    "tests/cli/test_startup.py": (0, 2.7),
    "tests/diagnosis/test_diagnosis_build.py": (0.1, 4.2),
    "tests/diagnosis/test_diagnosis_spec_errors.py": (0.9, 4.4),
    "tests/diagnosis/test_diagnosis_tests_catch_mutations.py": (0, 18),
    "tests/diagnosis/test_gpu_health.py": (0.1, 3.5),
    "tests/diff/test_diff_backtest.py": (0, 0.5),
    "tests/diff/test_diff_cli.py": (5.0, 0),
    "tests/diff/test_diff_docs.py": (0, 0.6),
    "tests/diff/test_diff_git.py": (0, 0.9),
    "tests/importer/test_import_roundtrip.py": (0.9, 3.7),
    "tests/importer/test_import_slo_alerting.py": (0.6, 0),
    "tests/importer/test_import_slo_promtool.py": (0, 85),
    "tests/lint/test_lint.py": (0.4, 5.3),
    "tests/output/test_atomic_commit.py": (0, 16),
    "tests/output/test_cache_trust.py": (0.1, 16),
    "tests/output/test_dashboard.py": (1.1, 0),
    "tests/output/test_dashboard_data.py": (0, 7.1),
    "tests/output/test_fleet_build.py": (0.2, 7.9),
    "tests/output/test_golden.py": (0.9, 30),  # the promtool units (was 105 whole)
    "tests/output/test_no_validate_specs_pass.py": (0, 30),
    "tests/output/test_shared_runs.py": (0, 35),
    "tests/output/test_test_shapes.py": (0, 30),
    "tests/unit/test_output_fast_yaml.py": (10, 0),
    "tests/output/test_test_cache.py": (0, 2.5),
    "tests/routing/test_e2e_alerting.py": (0, 43),
    "tests/routing/test_e2e_ha.py": (0, 48),
    "tests/routing/test_ha.py": (0.1, 1.5),
    "tests/routing/test_ha_errors.py": (0.6, 0),
    "tests/routing/test_routing.py": (0.3, 1.6),
    "tests/slo/test_goodput.py": (0.5, 20),
    "tests/slo/test_slo_alerting.py": (3.1, 18),
    "tests/slo/test_slo_alerting_catch_mutations.py": (0, 35),
    "tests/slo/test_slo_fallbacks_catch_mutations.py": (0, 5.2),
    "tests/slo/test_slo_gaps_prometheus.py": (0, 35),
    "tests/slo/test_slo_promtool.py": (0.3, 100),
    "tests/slo/test_slo_repair_prometheus.py": (0, 32),
    "tests/slo/test_repair_memory_prometheus.py": (0, 12),
    "tests/slo/test_slo_spec_errors.py": (0.9, 168),
    "tests/slo/test_slo_tests_catch_mutations.py": (0, 61),
    "tests/slo/test_slo_native_twins_catch_mutations.py": (0, 70),
    "tests/slo/test_good_ratio_catch_mutations.py": (0, 12),
    "tests/slo/test_native_histograms_prometheus.py": (0, 30),
    "tests/targets/test_victoriametrics.py": (2.1, 0.2),
    "tests/targets/test_victoriametrics_e2e.py": (0, 150),
    "tests/targets/test_victoriametrics_replay_safe.py": (0, 46),
    "tests/targets/test_vmalert_tests.py": (0.6, 1.5),
    "tests/slo/test_utf8_names.py": (0, 40),
    "tests/alerts/test_named_group_fields.py": (0, 4),
    "tests/targets/test_vmalert_tool_catches_mutations.py": (0, 60),
    "tests/targets/test_vmalert_slo_tests.py": (4.5, 2),  # its history file: make test-long
    "tests/test_architecture.py": (1.6, 0),
    "tests/test_docs.py": (2.6, 0),
    "tests/unit/test_backtest_evaluate.py": (0, 0),
    "tests/unit/test_conditions.py": (0.1, 0),
    "tests/unit/test_gotemplate.py": (0, 0),
    "tests/unit/test_output_json.py": (2.1, 0),
    "tests/unit/test_promql_text.py": (0.1, 0),
    "tests/unit/test_templating.py": (0, 0),
    "tests/unit/test_unit_conversions.py": (0.1, 0),
    "tests/unit/test_units.py": (0, 0),
}
# fmt: on

# On bookworm's stack (``RULEGEN_TEST_PROMETHEUS`` 2.x) some files cost otherwise: the
# vmalert-tool suite skips (VictoriaMetrics 1.79 has none), the end-to-end file's chained
# replay waits 1 s between rules instead of 3 s, the SLO promtool and mutation files run
# longer (measured with --durations=0 on 2026-12-03, docs/dev/performance.md).
BOOKWORM_COSTS: dict[str, tuple[float, float]] = {
    "tests/alerts/test_generated_tests_catch_mutations.py": (0, 30),
    "tests/routing/test_routing.py": (0.3, 60),  # the example's validated build (2.42)
    "tests/routing/test_e2e_ha.py": (0, 54),  # 2.42 finds its Alertmanagers after a reload
    "tests/slo/test_slo_alerting.py": (3.1, 14),  # no vmalert-tool on bookworm
    "tests/slo/test_slo_alerting_catch_mutations.py": (0, 38),
    "tests/slo/test_slo_promtool.py": (0, 154),
    "tests/slo/test_slo_tests_catch_mutations.py": (0, 110),
    "tests/slo/test_good_ratio_catch_mutations.py": (0, 22),
    "tests/slo/test_utf8_names.py": (0, 0.5),
    "tests/targets/test_victoriametrics_e2e.py": (0, 71),
    "tests/targets/test_victoriametrics_replay_safe.py": (0, 51),
    "tests/targets/test_vmalert_tool_catches_mutations.py": (0, 0.5),
    "tests/targets/test_vmalert_slo_tests.py": (4.5, 0.5),
}


def costs() -> dict[str, tuple[float, float]]:
    """``COSTS`` for the stack under test."""
    if os.environ.get("RULEGEN_TEST_PROMETHEUS", "").startswith("2."):
        return {**COSTS, **BOOKWORM_COSTS}
    return COSTS


# Files that share a session fixture: they run in one process (the example's validated build,
# ``example_build``, a minute and a half of CPU with its four SLOs, is made once).
TOGETHER: tuple[tuple[str, ...], ...] = (
    ("tests/cli/test_cli.py", "tests/test_quality.py", "tests/routing/test_routing.py"),
)


def assign(tests: Sequence[tuple[str, bool]], count: int) -> list[tuple[int, float, str]]:
    """For each test, given as (its file, whether it is slow): the process that runs it (0 to
    ``count - 1``), and the cost and name of its file (or ``TOGETHER`` group), by which that
    process orders its files, longest first, so that both finish on short ones."""
    unit = {name: group[0] for group in TOGETHER for name in group}
    table = costs()
    cost: dict[str, float] = {}
    seen: set[tuple[str, bool]] = set()
    for path, slow in tests:
        if path in table:
            seconds = 0.0 if (path, slow) in seen else table[path][slow]
            seen.add((path, slow))
        else:
            seconds = SLOW if slow else FAST
        cost[unit.get(path, path)] = cost.get(unit.get(path, path), 0.0) + seconds
    load = [0.0] * count
    shard: dict[str, int] = {}
    for name, seconds in sorted(cost.items(), key=lambda u: (-u[1], u[0])):
        shard[name] = min(range(count), key=lambda i: (load[i], i))
        load[shard[name]] += seconds
    return [(shard[name], cost[name], name) for name in (unit.get(path, path) for path, _ in tests)]
