"""Generated diagnosis tests must be sharp: a wrong threshold, join, window or host fails them.

Why: a diagnosis pages on-call with a named cause, so its generated promtool test has to tell
a correct rule from a subtly wrong one (a nudged threshold, ``or`` for ``and``, a dropped
clause, a lost baseline offset, a host label that keeps the port). A spec with all three
diagnoses and a few alerts they explain is built once with ``rulegen build --no-validate``;
each case edits one thing in ONE rule of the RENDERED rule file (a literal string
replacement, counted, inside that rule's block) and runs the real ``promtool test rules`` on
the generated test file, which must fail. The unmutated file must pass.

promtool runs are the cost (about a second each), so every run of the module is made once,
two at a time, in a module fixture, and the spec evaluates every 1m instead of the default 30s
(half the evaluations of the hour-long throughput test). The unmutated rules run the test file
whole; a mutant runs it cut into one file per test case (``support/promtool_cases.py``: same
header, the case's lines verbatim), cheapest first, stopping at the first that fails: the file
fails if and only if one of its cases does, so exactly the same mutants are caught. Mutations
the generated tests do not catch today are kept, marked ``xfail(strict=True)`` with the
reason: they pass the day the generator learns to catch them, and strict makes that a failure
so the mark is removed.
"""

from __future__ import annotations

import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import ON_PROMETHEUS_2, rendered_rules
from support import promtool_cases

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("promtool") is None, reason="needs promtool"),
]

SPEC = """
    version: 1
    service: infer
    evaluation_interval: 1m
    alerts:
      - {signal: ttft_latency, threshold: 500ms, severity: critical}
      - {signal: disk_utilization, threshold: 90%, severity: warning}
      - {signal: network_saturation, threshold: 80%, severity: warning}
      - {signal: gpu_underutilized, threshold: 50%, severity: info}
      - {signal: gpu_xid_errors, threshold: 0, severity: critical}
    diagnoses:
      - kind: ttft_disk_bound
      - kind: throughput_network_bound
      - kind: gpu_kernel_contention
      - kind: gpu_health
    """

RULES = "prometheus/infer.rules.yml"
TESTS = "tests/infer.test.yml"
SVC = '{service="infer"}'
HOST = '"host", "$1", "instance", "(.+?)(?::[0-9]+)?"'
TTFT = f"host_model:vllm_time_to_first_token_seconds:p99_rate5m{SVC}"
DISK = f"host:node_disk_io_time_seconds:max_rate5m{SVC}"
NET = f"host:node_network_utilization:max_ratio_rate5m{SVC}"
GPU = f"host:DCGM_FI_DEV_GPU_UTIL:avg_ratio{SVC}"
WAITING = f"host:vllm_num_requests_waiting:sum{SVC}"
FAULT = "host_gpu:dcgm_gpu_fault:xid_or_row_remap"
# The row-remap branch of the gpu_health recording, as rendered (after the XID branch).
ROW_REMAP_BRANCH = (
    "\n        or\n        label_replace(label_replace((clamp_max(\n"
    "            DCGM_FI_DEV_ROW_REMAP_FAILURE\n"
    "            + (DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS >= bool 512),\n"
    "            1\n"
    f'          )) > 0, "fault", "row_remap", "", ""), {HOST})'
)


@dataclass(frozen=True)
class Mutation:
    """Replace ``old`` by ``new`` exactly ``count`` times inside one block of the rule file.

    ``rule`` names the block: an alert or recording name (from its ``- alert:``/``- record:``
    line to the next rule or group), or a group name (``group infer-diagnoses``: the whole
    group). ``xfail`` is the reason a mutation is not caught today (empty when it is).
    """

    broken: str
    rule: str
    old: str
    new: str
    count: int = 1
    xfail: str = ""

    def apply(self, text: str) -> str:
        """The rule file with this mutation, checking that it changed ``count`` places."""
        start, end = _block(text, self.rule)
        target = text[start:end]
        found = target.count(self.old)
        assert found == self.count, f"{self.broken}: {self.old!r} found {found} times"
        return text[:start] + target.replace(self.old, self.new) + text[end:]


def _block(text: str, rule: str) -> tuple[int, int]:
    """Where the rule (or ``group <name>``) starts and ends in the rendered file."""
    if rule.startswith("group "):
        start = text.index(f"- name: {rule.removeprefix('group ')}\n")
        end = text.find("\n- name: ", start + 1)
        return start, len(text) if end < 0 else end + 1
    for kind in ("alert", "record"):
        header = f"  - {kind}: {rule}\n"
        if text.count(header) == 1:
            start = text.index(header)
            ends = [i for i in (text.find(m, start + 1) for m in ("\n  - ", "\n- ")) if i >= 0]
            return start, min(ends, default=len(text) - 1) + 1
    raise AssertionError(f"no single rule {rule!r} in the rule file")


# Why the TTFT nudges are not caught today: the other quantities of a generated test go 10%
# past their thresholds (and each host has a second, idle disk and NIC, so max and min over
# devices differ), but the TTFT quantile can only sit inside a bucket: every observation of a
# host falls in one bucket, (0.5s, 0.75s] when firing and (0.25s, 0.5s] when quiet, so the
# quantile is 747.5ms or 497.5ms around a 500ms threshold. A nudge between them changes nothing
# promtool sees.
TTFT_FAR = (
    "not caught: the TTFT quantile is flat from the second scrape at 747.5ms (firing) or "
    "497.5ms (quiet), so any threshold between them passes the generated test"
)

# fmt: off
MUTATIONS = [
    # --- thresholds: each alert's first evidence, and the "fine" evidence ----------------
    Mutation("TTFTDiskBound: ttft 0.5 -> 0.6", "TTFTDiskBound", f"{TTFT} > 0.5\n",
             f"{TTFT} > 0.6\n", xfail=TTFT_FAR),
    Mutation("TTFTDiskBound: disk 0.7 -> 0.8", "TTFTDiskBound", f"{DISK} > 0.7",
             f"{DISK} > 0.8"),
    Mutation("ThroughputNetworkBound: network 0.8 -> 0.9", "ThroughputNetworkBound",
             f"{NET} > 0.8\n", f"{NET} > 0.9\n"),
    Mutation("ThroughputNetworkBound: throughput ratio 0.7 -> 0.6", "ThroughputNetworkBound",
             ") < 0.7\n", ") < 0.6\n"),
    Mutation("ThroughputNetworkBound: ttft fine <= 0.5 -> > 0.5", "ThroughputNetworkBound",
             f"{TTFT} <= 0.5", f"{TTFT} > 0.5"),
    Mutation("ThroughputNetworkBound: ttft fine <= 0.5 -> <= 0.6", "ThroughputNetworkBound",
             f"{TTFT} <= 0.5", f"{TTFT} <= 0.6", xfail=TTFT_FAR),
    Mutation("GpuKernelContention: gpu 0.5 -> 0.4", "GpuKernelContention", f"{GPU} < 0.5\n",
             f"{GPU} < 0.4\n"),
    Mutation("GpuKernelContention: requests waiting > 0 -> > 5", "GpuKernelContention",
             f"{WAITING} > 0\n", f"{WAITING} > 5\n"),
    Mutation("GpuKernelContention: disk fine <= 0.7 -> <= 0.9", "GpuKernelContention",
             f"{DISK} <= 0.7\n", f"{DISK} <= 0.9\n"),
    # --- joins ---------------------------------------------------------------------------
    Mutation("TTFTDiskBound: and on (host) -> or on (host)", "TTFTDiskBound",
             "\n      and on (host)\n", "\n      or on (host)\n"),
    Mutation("TTFTDiskBound: the disk clause dropped", "TTFTDiskBound",
             f"\n      and on (host)\n      {DISK} > 0.7", ""),
    Mutation("ThroughputNetworkBound: the network clause dropped", "ThroughputNetworkBound",
             f"\n      and on (host)\n      {NET} > 0.8", ""),
    Mutation("ThroughputNetworkBound: the ttft clause dropped", "ThroughputNetworkBound",
             f"\n      and on (host, model_name)\n      {TTFT} <= 0.5", ""),
    Mutation("GpuKernelContention: the waiting clause dropped", "GpuKernelContention",
             f"\n      and on (host)\n      {WAITING} > 0", ""),
    Mutation("GpuKernelContention: the disk clause dropped", "GpuKernelContention",
             f"\n      and on (host)\n      {DISK} <= 0.7", ""),
    Mutation("GpuKernelContention: the network clause dropped", "GpuKernelContention",
             f"\n      and on (host)\n      {NET} <= 0.8", ""),
    # --- baseline and windows -----------------------------------------------------------
    Mutation("ThroughputNetworkBound: baseline offset removed", "ThroughputNetworkBound",
             "[1h] offset 5m)", "[1h])"),
    Mutation("ThroughputNetworkBound: baseline [1h] -> [30m]", "ThroughputNetworkBound",
             "[1h] offset 5m)", "[30m] offset 5m)"),
    # --- for ----------------------------------------------------------------------------
    Mutation("TTFTDiskBound: for 5m -> 4m", "TTFTDiskBound", "    for: 5m\n", "    for: 4m\n"),
    Mutation("ThroughputNetworkBound: for 5m -> 4m", "ThroughputNetworkBound",
             "    for: 5m\n", "    for: 4m\n"),
    Mutation("GpuKernelContention: for 5m -> 4m", "GpuKernelContention",
             "    for: 5m\n", "    for: 4m\n"),
    Mutation("GpuHealthDegraded: for 0s -> 1m", "GpuHealthDegraded",
             "\n    labels:\n", "\n    for: 1m\n    labels:\n"),
    # --- gpu_health: the XID window, the ignore list, the row-remap branch ---------------
    Mutation("GpuHealthDegraded: XID window 1h -> 30m", FAULT, " offset 1h ", " offset 30m "),
    Mutation("GpuHealthDegraded: XID window 1h -> 2h", FAULT, " offset 1h ", " offset 2h "),
    Mutation("GpuHealthDegraded: XID offset removed (no XID is ever new)", FAULT,
             " offset 1h ", " "),
    Mutation("GpuHealthDegraded: ignore_xids dropped", FAULT,
             'DCGM_FI_DEV_XID_ERRORS{err_code!~"13|31|43|45|68|109"}', "DCGM_FI_DEV_XID_ERRORS"),
    Mutation("GpuHealthDegraded: unless -> and (only old XIDs)", FAULT,
             "\n          unless\n", "\n          and\n"),
    Mutation("GpuHealthDegraded: the row-remap branch dropped", FAULT, ROW_REMAP_BRANCH, ""),
    Mutation("GpuHealthDegraded: uncorrectable rows 512 -> 513", FAULT, ">= bool 512",
             ">= bool 513"),
    Mutation("GpuHealthDegraded: uncorrectable rows 512 -> 511", FAULT, ">= bool 512",
             ">= bool 511"),
    Mutation("GpuHealthDegraded: the remap failure flag dropped", FAULT,
             "            DCGM_FI_DEV_ROW_REMAP_FAILURE\n            + ",
             "            0 * DCGM_FI_DEV_ROW_REMAP_FAILURE\n            + "),
    Mutation("GpuHealthDegraded: gpu dropped from by", FAULT, "by (host, gpu, xid, fault)",
             "by (host, xid, fault)"),
    Mutation("GpuHealthDegraded: the xid label not set", FAULT,
             ', "xid", "$1", "err_code", "(.+)")', ', "xid", "", "err_code", "(.+)")'),
    Mutation("GpuHealthDegraded: both branches keep the port: host regex -> (.*)", FAULT,
             HOST, HOST.replace("(.+?)(?::[0-9]+)?", "(.*)"), 2),
    Mutation("GpuHealthDegraded: > 0 -> > 1 (a row-remap failure no longer counts)",
             "GpuHealthDegraded", f"{FAULT}{SVC} > 0", f"{FAULT}{SVC} > 1"),
    # --- host derivation and aggregation -------------------------------------------------
    Mutation("every diagnosis recording keeps the port: host regex -> (.*)",
             "group infer-diagnoses", HOST, HOST.replace("(.+?)(?::[0-9]+)?", "(.*)"), 8),
    Mutation("disk recording alone keeps the port: host regex -> (.*)",
             "host:node_disk_io_time_seconds:max_rate5m", HOST,
             HOST.replace("(.+?)(?::[0-9]+)?", "(.*)")),
    Mutation("DiskUtilizationHigh (explained) keeps the port: host regex -> (.*)",
             "DiskUtilizationHigh", HOST, HOST.replace("(.+?)(?::[0-9]+)?", "(.*)")),
    Mutation("disk recording: max by -> min by", "host:node_disk_io_time_seconds:max_rate5m",
             "max by (host)", "min by (host)"),
    Mutation("network recording: max by -> min by",
             "host:node_network_utilization:max_ratio_rate5m", "max by (host)", "min by (host)"),
    Mutation("ttft recording: model_name dropped from by",
             "host_model:vllm_time_to_first_token_seconds:p99_rate5m",
             "by (le, host, model_name)", "by (le, host)"),
    Mutation("gpu recording: / 100 scale removed", "host:DCGM_FI_DEV_GPU_UTIL:avg_ratio",
             ") / 100\n", ")\n"),
    # --- descriptions --------------------------------------------------------------------
    Mutation("TTFTDiskBound: description queries a renamed disk metric", "TTFTDiskBound",
             "printf `host:node_disk_io_time_seconds:max_rate5m{",
             "printf `host:node_disk_io_time_seconds:max_rate1m{"),
]
# fmt: on


@dataclass(frozen=True)
class Run:
    """promtool on one rule file: ``check rules``, then ``test rules`` on the test file (whole,
    or its cases until one fails); ``output`` is what the tests printed."""

    checked: subprocess.CompletedProcess[str]
    passed: bool
    output: str


def _promtool(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["promtool", *args], cwd=root, capture_output=True, text=True, check=False, timeout=300
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The spec built once, without validation: ``rules/`` with one rule and one test file."""
    return rendered_rules(tmp_path_factory.mktemp("spec"), {"specs/infer.yaml": SPEC})


def _run_all(
    built: Path, mutations: list[Mutation], factory: pytest.TempPathFactory
) -> dict[str, Run]:
    """Every promtool run of a built spec, by mutation (``original`` for the unmutated file)."""
    text = (built / RULES).read_text()
    jobs: dict[str, str] = {"original": text}
    jobs.update({m.broken: m.apply(text) for m in mutations})
    mutated = {m.broken: m.rule for m in mutations}

    # The folders are made before the threads start: tmp_path_factory is not thread-safe.
    roots = {key: factory.mktemp("run") for key in jobs}
    cases = promtool_cases.split(built, TESTS)

    def run(key: str) -> tuple[str, Run]:
        root = roots[key]
        shutil.copytree(built, root, dirs_exist_ok=True)
        (root / RULES).write_text(jobs[key])
        checked = _promtool(root, "check", "rules", RULES)
        if key == "original":
            tested = _promtool(root, "test", "rules", TESTS)
            return key, Run(checked, tested.returncode == 0, tested.stdout + tested.stderr)
        promtool_cases.write(root, cases)
        # An alert's own case first (its title starts with the alert's name): only the order.
        outcome = promtool_cases.run_until_one_fails(root, cases, first=f"{mutated[key]}: ")
        return key, Run(checked, not outcome.failed, outcome.output)

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(run, jobs))


@pytest.fixture(scope="module")
def runs(built: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    """Every promtool run of the classic-histogram spec."""
    return _run_all(built, MUTATIONS, tmp_path_factory)


def test_the_spec_has_four_diagnoses_and_their_tests(built: Path) -> None:
    tests = (built / TESTS).read_text()
    for name in ("TTFTDiskBound", "ThroughputNetworkBound", "GpuKernelContention",
                 "GpuHealthDegraded"):  # fmt: skip
        # (a case whose series no other case reads shares its promtool test: `` | `` joins)
        assert f"- name: '{name}: fires for " in tests or f" | {name}: fires for " in tests


def test_the_generated_tests_pass_on_the_generated_rules(runs: dict[str, Run]) -> None:
    run = runs["original"]
    assert run.checked.returncode == 0, run.checked.stderr
    assert run.passed, run.output


@pytest.mark.parametrize(
    "mutation",
    [
        pytest.param(m, id=m.broken, marks=pytest.mark.xfail(strict=True, reason=m.xfail))
        if m.xfail
        else pytest.param(m, id=m.broken)
        for m in MUTATIONS
    ],
)
def test_a_mutated_rule_fails_the_generated_tests(mutation: Mutation, runs: dict[str, Run]) -> None:
    run = runs[mutation.broken]
    # The edit is still a valid rule file: only the unit tests can tell it is wrong.
    assert run.checked.returncode == 0, run.checked.stderr
    assert not run.passed, "the generated tests pass: the mutation is not caught"
    assert "FAILED" in run.output


# The NHCB twin (Prometheus 3): the diagnoses that read TTFT, on the vllm family stored as
# native histograms with custom buckets (``histograms: {vllm: nhcb}``). The TTFT recording is
# then ``histogram_quantile`` over the native series' rate (no ``le``); the generated tests feed
# one NHCB series per host and model, and the same kinds of mutation must fail them.
NHCB_SPEC = """
    version: 1
    service: infer
    evaluation_interval: 1m
    histograms: {vllm: nhcb}
    alerts:
      - {signal: ttft_latency, threshold: 500ms, severity: critical}
      - {signal: disk_utilization, threshold: 90%, severity: warning}
      - {signal: network_saturation, threshold: 80%, severity: warning}
    diagnoses:
      - kind: ttft_disk_bound
      - kind: throughput_network_bound
    """
TTFT_RECORD = "host_model:vllm_time_to_first_token_seconds:p99_rate5m"

# fmt: off
NHCB_MUTATIONS = [
    Mutation("nhcb TTFTDiskBound: disk 0.7 -> 0.8", "TTFTDiskBound", f"{DISK} > 0.7",
             f"{DISK} > 0.8"),
    Mutation("nhcb TTFTDiskBound: and on (host) -> or on (host)", "TTFTDiskBound",
             "\n      and on (host)\n", "\n      or on (host)\n"),
    Mutation("nhcb TTFTDiskBound: the ttft clause made always true", "TTFTDiskBound",
             f"{TTFT} > 0.5\n", f"{TTFT} >= 0\n"),
    Mutation("nhcb ThroughputNetworkBound: ttft fine <= 0.5 -> > 0.5", "ThroughputNetworkBound",
             f"{TTFT} <= 0.5", f"{TTFT} > 0.5"),
    Mutation("nhcb ThroughputNetworkBound: the ttft clause dropped", "ThroughputNetworkBound",
             f"\n      and on (host, model_name)\n      {TTFT} <= 0.5", ""),
    Mutation("nhcb ttft recording: model_name dropped from by", TTFT_RECORD,
             "sum by (host, model_name) (", "sum by (host) ("),
    Mutation("nhcb ttft recording: quantile 0.99 -> 0.01", TTFT_RECORD,
             "histogram_quantile(0.99,", "histogram_quantile(0.01,"),
    Mutation("nhcb ttft recording keeps the port: host regex -> (.*)", TTFT_RECORD, HOST,
             HOST.replace("(.+?)(?::[0-9]+)?", "(.*)")),
    Mutation("nhcb ttft recording reads the classic buckets", TTFT_RECORD,
             "rate(vllm:time_to_first_token_seconds[5m])",
             "rate(vllm:time_to_first_token_seconds_bucket[5m])"),
]
# fmt: on


@pytest.fixture(scope="module")
def nhcb_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    """Every promtool run of the NHCB twin."""
    built = rendered_rules(tmp_path_factory.mktemp("nhcb"), {"specs/infer.yaml": NHCB_SPEC})
    assert "{{schema:-53 " in (built / TESTS).read_text()  # the tests feed NHCB series
    return _run_all(built, NHCB_MUTATIONS, tmp_path_factory)


@pytest.mark.skipif(ON_PROMETHEUS_2, reason="native histograms need Prometheus 3")
def test_the_nhcb_twin_passes_its_generated_tests(nhcb_runs: dict[str, Run]) -> None:
    run = nhcb_runs["original"]
    assert run.checked.returncode == 0, run.checked.stderr
    assert run.passed, run.output


@pytest.mark.skipif(ON_PROMETHEUS_2, reason="native histograms need Prometheus 3")
@pytest.mark.parametrize("mutation", NHCB_MUTATIONS, ids=lambda m: m.broken)
def test_a_mutated_nhcb_rule_fails_the_generated_tests(
    mutation: Mutation, nhcb_runs: dict[str, Run]
) -> None:
    run = nhcb_runs[mutation.broken]
    assert run.checked.returncode == 0, run.checked.stderr
    assert not run.passed, "the generated tests pass: the mutation is not caught"
    assert "FAILED" in run.output
