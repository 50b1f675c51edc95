"""Broken ``diagnoses:`` specs: one exact ``FILE:LINE:COL: path: message`` line each, exit 2.

Why: a diagnosis joins the series of three exporters on one host; a threshold outside
(0, 100 %), a TTFT beyond the histogram, a window that is not a whole number of scrapes or a
name already taken would give an alert that never fires, fires on noise, or shadows another
one. Each of these must stop the build with one line that names the key and the value, and
leave ``rules/`` alone.

Every broken case runs the full ``rulegen build`` in-process twice: once in a tree without
``rules/`` (which must not be created) and once in a tree whose ``rules/`` already holds files
(which must stay byte-identical). The whole of stderr is checked line by line. A few cases also
run as a real process, for the exit code and the absence of a traceback. Legal specs at the
edges (a diagnoses-only spec, the smallest window, a baseline equal to the window, ...) are
built for real, promtool validation included.

The expected lines are literal on purpose: a reviewer can check each line and column against
the YAML right above it. Cases with a ``defect`` assert the behaviour rulegen should have and
are ``xfail(strict=True)`` until rulegen is fixed (the reason says what happens today).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import (
    CliResult,
    assert_rejected,
    assert_rejected_by_process,
    run_rulegen,
    spec_errors,
    write_tree,
)

Cli = Callable[..., CliResult]

KINDS = "'ttft_disk_bound', 'throughput_network_bound', 'gpu_kernel_contention', 'gpu_health'"
NOT_A_HOST = (
    "cannot be the host label: rulegen sets it or it differs between the series of one host"
)
TTFT_RANGE = (
    "must be from 0.001s to below 640s, vLLM's second-largest TTFT bucket bound: "
    "beyond it the quantile is interpolated in the last finite bucket, where no "
    "generated test can place a value reliably"
)


@dataclass(frozen=True)
class Case:
    """One broken ``specs/web.yaml`` and the exact stderr it gives (or should give)."""

    behaviour: str
    spec: str
    stderr: tuple[str, ...]
    defect: str = ""


# Line numbers in the expected output count from the first line of each spec ("version: 1").
CASES: list[Case] = [
    # --- kind and keys -------------------------------------------------------------------
    Case(
        "an unknown diagnosis kind is rejected with the known kinds",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: ttft_disk
            """,
        stderr=spec_errors(
            f"specs/web.yaml:4:11: diagnoses[0].kind: unknown diagnosis kind 'ttft_disk' "
            f"(known: {KINDS})"
        ),
    ),
    Case(
        "a diagnosis without a kind is rejected at the entry",
        spec="""
            version: 1
            service: web
            diagnoses:
              - ttft: 500ms
            """,
        stderr=spec_errors("specs/web.yaml:4:5: diagnoses[0]: required field 'kind' is missing"),
    ),
    Case(
        "an unknown key in a diagnosis is rejected at the key",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: ttft_disk_bound
                bogus: 1
            """,
        stderr=spec_errors("specs/web.yaml:5:5: diagnoses[0].bogus: unknown key"),
    ),
    Case(
        "a key of another kind (throughput on ttft_disk_bound) is an unknown key",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: ttft_disk_bound
                throughput: 50%
            """,
        stderr=spec_errors("specs/web.yaml:5:5: diagnoses[0].throughput: unknown key"),
    ),
    Case(
        "an empty diagnoses list is rejected",
        spec="""
            version: 1
            service: web
            diagnoses: []
            """,
        stderr=spec_errors("specs/web.yaml:3:12: diagnoses: must not be empty"),
    ),
    # --- percentage thresholds -----------------------------------------------------------
    # Both bounds are excluded: a threshold of 0% or 100% is always or never crossed.
    Case(
        "a disk utilisation of 0% is rejected: every busy disk would count",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: ttft_disk_bound
                disk_utilization: 0%
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:23: diagnoses[0].disk_utilization: must be between 0% and 100%, "
            "both excluded (got 0%)"
        ),
    ),
    Case(
        "a disk utilisation of 100% is rejected: %util never exceeds it",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: ttft_disk_bound
                disk_utilization: 100%
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:23: diagnoses[0].disk_utilization: must be between 0% and 100%, "
            "both excluded (got 100%)"
        ),
    ),
    Case(
        "a disk utilisation of 150% is rejected",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: ttft_disk_bound
                disk_utilization: 150%
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:23: diagnoses[0].disk_utilization: must be between 0% and 100%, "
            "both excluded (got 150%)"
        ),
    ),
    Case(
        "a negative disk utilisation is rejected",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: ttft_disk_bound
                disk_utilization: -5%
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:23: diagnoses[0].disk_utilization: must be between 0% and 100%, "
            "both excluded (got -5%)"
        ),
    ),
    Case(
        "a bare 70 is not read as 70% nor as 7000%: the fix is spelled out",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: ttft_disk_bound
                disk_utilization: 70
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:23: diagnoses[0].disk_utilization: a bare number is not a "
            "percentage: write 70% or 0.7 (got 70)"
        ),
    ),
    Case(
        "a disk utilisation that is a word is rejected",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: ttft_disk_bound
                disk_utilization: abc
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:23: diagnoses[0].disk_utilization: expected a number, got 'abc'"
        ),
    ),
    Case(
        "a disk utilisation of true is rejected, not read as 1",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: ttft_disk_bound
                disk_utilization: true
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:23: diagnoses[0].disk_utilization: expected a percentage like "
            "80% or a fraction like 0.8, got True"
        ),
    ),
    Case(
        "a throughput share of 0% is rejected: no drop could be below it",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: throughput_network_bound
                throughput: 0%
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:17: diagnoses[0].throughput: must be between 0% and 100%, both "
            "excluded (got 0%)"
        ),
    ),
    Case(
        "a network utilisation of 100% is rejected",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: throughput_network_bound
                network_utilization: 100%
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:26: diagnoses[0].network_utilization: must be between 0% and 100%, "
            "both excluded (got 100%)"
        ),
    ),
    Case(
        "a GPU utilisation of 0% is rejected: no GPU is ever below it",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: gpu_kernel_contention
                gpu_utilization: 0%
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:22: diagnoses[0].gpu_utilization: must be between 0% and 100%, "
            "both excluded (got 0%)"
        ),
    ),
    Case(
        "the 'fine' disk threshold of gpu_kernel_contention is checked too",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: gpu_kernel_contention
                disk_utilization: 150%
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:23: diagnoses[0].disk_utilization: must be between 0% and 100%, "
            "both excluded (got 150%)"
        ),
    ),
    # --- ttft and quantile ---------------------------------------------------------------
    Case(
        "a ttft of 5000s is beyond the TTFT histogram's last bucket",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: ttft_disk_bound
                ttft: 5000s
            """,
        stderr=spec_errors(f"specs/web.yaml:5:11: diagnoses[0].ttft: {TTFT_RANGE} (got 5000s)"),
    ),
    Case(
        "a ttft of 0ms is below the TTFT histogram's first bucket",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: ttft_disk_bound
                ttft: 0ms
            """,
        stderr=spec_errors(f"specs/web.yaml:5:11: diagnoses[0].ttft: {TTFT_RANGE} (got 0ms)"),
    ),
    Case(
        "the 'fine' ttft of throughput_network_bound is checked against the buckets too",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: throughput_network_bound
                ttft: 5000s
            """,
        stderr=spec_errors(f"specs/web.yaml:5:11: diagnoses[0].ttft: {TTFT_RANGE} (got 5000s)"),
    ),
    Case(
        "a ttft of 640s, the second-largest bucket bound, is rejected: it is excluded",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: ttft_disk_bound
                ttft: 640s
            """,
        stderr=spec_errors(f"specs/web.yaml:5:11: diagnoses[0].ttft: {TTFT_RANGE} (got 640s)"),
    ),
    Case(
        # Was accepted by the bucket check and then failed at diagnoses[0] with "the test value
        # 2560.0 sits on a rounding tie of Prometheus' formatting".
        "a ttft in the last bucket interval [640s, 2560s) is rejected at ttft",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: ttft_disk_bound
                ttft: 1000s
            """,
        stderr=spec_errors(f"specs/web.yaml:5:11: diagnoses[0].ttft: {TTFT_RANGE} (got 1000s)"),
    ),
    Case(
        "a ttft of 0.5ms is below the TTFT histogram's first bucket bound",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: ttft_disk_bound
                ttft: 0.5ms
            """,
        stderr=spec_errors(f"specs/web.yaml:5:11: diagnoses[0].ttft: {TTFT_RANGE} (got 0.5ms)"),
    ),
    Case(
        "a ttft that is a word is rejected with the latency syntax",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: ttft_disk_bound
                ttft: fast
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:11: diagnoses[0].ttft: invalid duration 'fast' (expected a "
            "latency like 5ms, 500ms, 2s)"
        ),
    ),
    Case(
        "a ttft without a unit (500) is rejected",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: ttft_disk_bound
                ttft: 500
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:11: diagnoses[0].ttft: invalid duration '500' (expected a "
            "latency like 5ms, 500ms, 2s)"
        ),
    ),
    Case(
        "a quantile of 1 is rejected: histogram_quantile(1) is the last bucket bound",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: ttft_disk_bound
                quantile: 1
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:15: diagnoses[0].quantile: must be above 0 and below 1 (got 1)"
        ),
    ),
    Case(
        "a quantile of 0 is rejected",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: ttft_disk_bound
                quantile: 0
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:15: diagnoses[0].quantile: must be above 0 and below 1 (got 0)"
        ),
    ),
    Case(
        "a quantile of 99 (a percentile) is rejected",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: throughput_network_bound
                quantile: 99
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:15: diagnoses[0].quantile: must be above 0 and below 1 (got 99)"
        ),
    ),
    # --- window and baseline -------------------------------------------------------------
    Case(
        "a window of 7s is not a whole number of 15s scrapes",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: ttft_disk_bound
                window: 7s
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:13: diagnoses[0].window: must be a whole number of scrapes, at "
            "least two (scrape_interval 15s; got 7s)"
        ),
    ),
    Case(
        "a window of 15s holds one scrape: rate() needs two",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: ttft_disk_bound
                window: 15s
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:13: diagnoses[0].window: must be a whole number of scrapes, at "
            "least two (scrape_interval 15s; got 15s)"
        ),
    ),
    Case(
        "a window of 45s is not a whole number of 30s scrapes",
        spec="""
            version: 1
            service: web
            scrape_interval: 30s
            evaluation_interval: 30s
            diagnoses:
              - kind: gpu_kernel_contention
                window: 45s
            """,
        stderr=spec_errors(
            "specs/web.yaml:7:13: diagnoses[0].window: must be a whole number of scrapes, at "
            "least two (scrape_interval 30s; got 45s)"
        ),
    ),
    Case(
        "a window of 0s is rejected",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: ttft_disk_bound
                window: 0s
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:13: diagnoses[0].window: must be longer than 0s (got '0s')"
        ),
    ),
    Case(
        "a window above 1h is rejected",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: ttft_disk_bound
                window: 2h
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:13: diagnoses[0].window: must be at most 1h (got '2h')"
        ),
    ),
    Case(
        "a baseline of 1m is shorter than the default 5m window",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: throughput_network_bound
                baseline: 1m
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:15: diagnoses[0].baseline: must be a whole number of scrapes from "
            "the window (5m) to 1d (got 1m)"
        ),
    ),
    Case(
        "a baseline of 5m is shorter than a 10m window",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: throughput_network_bound
                window: 10m
                baseline: 5m
            """,
        stderr=spec_errors(
            "specs/web.yaml:6:15: diagnoses[0].baseline: must be a whole number of scrapes from "
            "the window (10m) to 1d (got 5m)"
        ),
    ),
    Case(
        "a baseline of 2d is longer than 1d",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: throughput_network_bound
                baseline: 2d
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:15: diagnoses[0].baseline: must be a whole number of scrapes from "
            "the window (5m) to 1d (got 2d)"
        ),
    ),
    Case(
        "a baseline that is not a duration is reported once",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: throughput_network_bound
                baseline: abc
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:15: diagnoses[0].baseline: invalid duration 'abc' (expected "
            "Prometheus syntax like 30s, 5m, 1h)"
        ),
    ),
    # --- gpu_kernel_contention keys ------------------------------------------------------
    Case(
        "a negative requests_waiting is rejected",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: gpu_kernel_contention
                requests_waiting: -1
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:23: diagnoses[0].requests_waiting: must be a whole number of "
            "requests, at least 0 (got -1)"
        ),
    ),
    Case(
        "a fractional requests_waiting is rejected: the queue holds whole requests",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: gpu_kernel_contention
                requests_waiting: 1.5
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:23: diagnoses[0].requests_waiting: must be a whole number of "
            "requests, at least 0 (got 1.5)"
        ),
    ),
    Case(
        "a gpu_scale of 0 is rejected: the recording would divide by zero",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: gpu_kernel_contention
                gpu_scale: 0
            """,
        stderr=spec_errors("specs/web.yaml:5:16: diagnoses[0].gpu_scale: must be above 0 (got 0)"),
    ),
    Case(
        "a negative gpu_scale is rejected",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: gpu_kernel_contention
                gpu_scale: -1
            """,
        stderr=spec_errors("specs/web.yaml:5:16: diagnoses[0].gpu_scale: must be above 0 (got -1)"),
    ),
    Case(
        "a gpu_metric that is not a metric name is rejected",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: gpu_kernel_contention
                gpu_metric: DCGM-GPU-UTIL
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:17: diagnoses[0].gpu_metric: invalid metric name 'DCGM-GPU-UTIL'"
        ),
    ),
    Case(
        "a gpu_metric with a selector is rejected: selectors.dcgm filters series",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: gpu_kernel_contention
                gpu_metric: 'DCGM_FI_DEV_GPU_UTIL{gpu="0"}'
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:17: diagnoses[0].gpu_metric: invalid metric name "
            "'DCGM_FI_DEV_GPU_UTIL{gpu=\"0\"}'"
        ),
    ),
    # --- device regexes ------------------------------------------------------------------
    Case(
        "a possessive quantifier in disk_devices is rejected: RE2 has none",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: ttft_disk_bound
                disk_devices: 'a++'
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:19: diagnoses[0].disk_devices: invalid nested repetition "
            "operator: `++`"
        ),
    ),
    Case(
        "a lookahead in disk_devices is rejected: RE2 has none",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: ttft_disk_bound
                disk_devices: 'nvme(?=0)'
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:19: diagnoses[0].disk_devices: invalid or unsupported Perl "
            "syntax: `(?=`"
        ),
    ),
    Case(
        "an unbalanced parenthesis in disk_devices is rejected",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: ttft_disk_bound
                disk_devices: 'nvme('
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:19: diagnoses[0].disk_devices: invalid regex 'nvme(': missing ), "
            "unterminated subpattern at position 4"
        ),
    ),
    Case(
        "an empty disk_devices is rejected",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: ttft_disk_bound
                disk_devices: ''
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:19: diagnoses[0].disk_devices: must be a non-empty regex string "
            "(got '')"
        ),
    ),
    Case(
        "a disk_devices regex that no device name can match is rejected",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: ttft_disk_bound
                disk_devices: 'a^b'
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:19: diagnoses[0].disk_devices: no device name matches 'a^b'"
        ),
    ),
    Case(
        "virtual_devices '.*' takes every NIC for virtual: no NIC would be read",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: throughput_network_bound
                virtual_devices: '.*'
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:22: diagnoses[0].virtual_devices: '.*' takes every usual NIC for "
            "virtual"
        ),
    ),
    Case(
        "virtual_devices '.+' is rejected in gpu_kernel_contention too",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: gpu_kernel_contention
                virtual_devices: '.+'
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:22: diagnoses[0].virtual_devices: '.+' takes every usual NIC for "
            "virtual"
        ),
    ),
    Case(
        "a possessive quantifier in virtual_devices is rejected",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: throughput_network_bound
                virtual_devices: 'a++'
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:22: diagnoses[0].virtual_devices: invalid nested repetition "
            "operator: `++`"
        ),
    ),
    # --- link_speed ----------------------------------------------------------------------
    Case(
        "a link_speed that is a word is rejected with the accepted forms",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: throughput_network_bound
                link_speed: fast
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:17: diagnoses[0].link_speed: invalid link speed 'fast' (expected "
            "10Gbps, 25Gbit/s, 12.5GB/s or bytes/s)"
        ),
    ),
    Case(
        "a link_speed of 0Gbps is rejected: utilisation would divide by zero",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: gpu_kernel_contention
                link_speed: 0Gbps
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:17: diagnoses[0].link_speed: must be above 0 (got 0Gbps)"
        ),
    ),
    # --- names ---------------------------------------------------------------------------
    Case(
        "a catalog alert renamed TTFTDiskBound clashes with the diagnosis' default name",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: disk_utilization
                name: TTFTDiskBound
                threshold: 90%
                severity: warning
            diagnoses:
              - kind: ttft_disk_bound
            """,
        stderr=spec_errors(
            "specs/web.yaml:9:11: diagnoses[0].kind: alert name 'TTFTDiskBound' is already used "
            "in alerts; give this diagnosis a unique name"
        ),
    ),
    Case(
        "a custom alert named TTFTDiskBound clashes with the diagnosis' default name",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: custom
                name: TTFTDiskBound
                expr: up == 0
                severity: warning
            diagnoses:
              - kind: ttft_disk_bound
            """,
        stderr=spec_errors(
            "specs/web.yaml:9:11: diagnoses[0].kind: alert name 'TTFTDiskBound' is already used "
            "in alerts; give this diagnosis a unique name"
        ),
    ),
    Case(
        "a diagnosis named like a catalog alert of the spec is rejected at its name",
        spec="""
            version: 1
            service: web
            alerts:
              - {signal: disk_utilization, threshold: 90%, severity: warning}
            diagnoses:
              - kind: ttft_disk_bound
                name: DiskUtilizationHigh
            """,
        stderr=spec_errors(
            "specs/web.yaml:7:11: diagnoses[0].name: alert name 'DiskUtilizationHigh' is already "
            "used in alerts; give this diagnosis a unique name"
        ),
    ),
    Case(
        "an SLO alert named TTFTDiskBound clashes with the diagnosis' default name",
        spec="""
            version: 1
            service: web
            slos:
              - name: api
                objective: 99.9%
                sli:
                  ratio: {errors: 'http_requests_total{code=~"5.."}', total: http_requests_total}
                alerting: {name: TTFTDiskBound}
            diagnoses:
              - kind: ttft_disk_bound
            """,
        stderr=spec_errors(
            "specs/web.yaml:10:11: diagnoses[0].kind: alert name 'TTFTDiskBound' is already "
            "used in slos; give this diagnosis a unique name"
        ),
    ),
    Case(
        "two diagnoses of one kind clash on the default name: the second is named",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: ttft_disk_bound
              - kind: ttft_disk_bound
                ttft: 1s
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:11: diagnoses[1].kind: alert name 'TTFTDiskBound' is already used "
            "in diagnoses; give this diagnosis a unique name"
        ),
    ),
    Case(
        "a diagnosis named like another kind's default name clashes with it",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: gpu_kernel_contention
                name: TTFTDiskBound
              - kind: ttft_disk_bound
            """,
        stderr=spec_errors(
            "specs/web.yaml:6:11: diagnoses[1].kind: alert name 'TTFTDiskBound' is already used "
            "in diagnoses; give this diagnosis a unique name"
        ),
    ),
    Case(
        "a diagnosis name that is not an alert name is rejected",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: ttft_disk_bound
                name: disk bound
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:11: diagnoses[0].name: must match ^[A-Za-z_][A-Za-z0-9_]*$ (got "
            "'disk bound')"
        ),
    ),
    # --- labels, severity, for -----------------------------------------------------------
    Case(
        "a label 'diagnosis' is rejected: rulegen sets it to the kind",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: ttft_disk_bound
                labels: {diagnosis: disk}
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:25: diagnoses[0].labels.diagnosis: label 'diagnosis' is set by "
            "rulegen"
        ),
    ),
    Case(
        "a label 'severity' is rejected: the severity key sets it",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: ttft_disk_bound
                labels: {severity: page}
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:24: diagnoses[0].labels.severity: label 'severity' is set by "
            "rulegen and cannot be overridden"
        ),
    ),
    Case(
        "an unknown severity is rejected with the three known",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: ttft_disk_bound
                severity: page
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:15: diagnoses[0].severity: must be 'critical', 'warning' or "
            "'info' (got 'page')"
        ),
    ),
    Case(
        "a for above 1d is rejected",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: ttft_disk_bound
                for: 2d
            """,
        stderr=spec_errors("specs/web.yaml:5:10: diagnoses[0].for: must be at most 1d (got '2d')"),
    ),
    # --- host_label ----------------------------------------------------------------------
    Case(
        "host_label 'service' is rejected: rulegen sets service on every recording",
        spec="""
            version: 1
            service: web
            host_label: service
            diagnoses:
              - kind: ttft_disk_bound
            """,
        stderr=spec_errors(f"specs/web.yaml:3:13: host_label: 'service' {NOT_A_HOST}"),
    ),
    Case(
        "host_label 'le' is rejected: the TTFT quantile aggregates by le",
        spec="""
            version: 1
            service: web
            host_label: le
            diagnoses:
              - kind: ttft_disk_bound
            """,
        stderr=spec_errors(f"specs/web.yaml:3:13: host_label: 'le' {NOT_A_HOST}"),
    ),
    Case(
        "host_label 'model_name' is rejected: the vLLM evidence joins on it besides the host",
        spec="""
            version: 1
            service: web
            host_label: model_name
            diagnoses:
              - kind: throughput_network_bound
            """,
        stderr=spec_errors(f"specs/web.yaml:3:13: host_label: 'model_name' {NOT_A_HOST}"),
    ),
    Case(
        "host_label 'instance' is rejected: it keeps the port, so each exporter is its own host",
        spec="""
            version: 1
            service: web
            host_label: instance
            diagnoses:
              - kind: ttft_disk_bound
            """,
        stderr=spec_errors(f"specs/web.yaml:3:13: host_label: 'instance' {NOT_A_HOST}"),
    ),
    Case(
        "host_label 'device' is rejected: the disk and NIC recordings take the max over it",
        spec="""
            version: 1
            service: web
            host_label: device
            diagnoses:
              - kind: ttft_disk_bound
            """,
        stderr=spec_errors(f"specs/web.yaml:3:13: host_label: 'device' {NOT_A_HOST}"),
    ),
    Case(
        "a host_label starting with __ is rejected: Prometheus drops such labels",
        spec="""
            version: 1
            service: web
            host_label: __host__
            diagnoses:
              - kind: ttft_disk_bound
            """,
        stderr=spec_errors(
            "specs/web.yaml:3:13: host_label: '__host__' cannot be the host label: labels "
            "starting with __ are reserved for Prometheus' internal use"
        ),
    ),
    Case(
        "host_label 'mode' is rejected when an alert's series carry it (cpu_iowait)",
        spec="""
            version: 1
            service: web
            host_label: mode
            alerts:
              - {signal: cpu_iowait, threshold: 20%, severity: warning}
            diagnoses:
              - kind: ttft_disk_bound
            """,
        stderr=spec_errors(f"specs/web.yaml:3:13: host_label: 'mode' {NOT_A_HOST}"),
    ),
    Case(
        "a host_label that is not a label name is rejected",
        spec="""
            version: 1
            service: web
            host_label: no-de
            diagnoses:
              - kind: ttft_disk_bound
            """,
        stderr=spec_errors(
            "specs/web.yaml:3:13: host_label: must match ^[a-zA-Z_][a-zA-Z0-9_]*$ (got 'no-de')"
        ),
    ),
    # --- intervals -----------------------------------------------------------------------
    # The error is placed on the evaluation_interval the user has to change.
    Case(
        "an evaluation_interval of 20s is not a multiple of a 15s scrape_interval",
        spec="""
            version: 1
            service: web
            evaluation_interval: 20s
            scrape_interval: 15s
            diagnoses:
              - kind: ttft_disk_bound
            """,
        stderr=spec_errors(
            "specs/web.yaml:3:22: evaluation_interval: diagnoses need evaluation_interval "
            "(20s) to be a multiple of scrape_interval (15s)"
        ),
    ),
    Case(
        "an evaluation_interval of 30s is not a multiple of a 20s scrape_interval",
        spec="""
            version: 1
            service: web
            evaluation_interval: 30s
            scrape_interval: 20s
            diagnoses:
              - kind: gpu_kernel_contention
            """,
        stderr=spec_errors(
            "specs/web.yaml:3:22: evaluation_interval: diagnoses need evaluation_interval "
            "(30s) to be a multiple of scrape_interval (20s)"
        ),
    ),
    # --- several errors ------------------------------------------------------------------
    Case(
        "two errors in one diagnosis are both reported, in file order",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: ttft_disk_bound
                disk_utilization: 0%
                ttft: 5000s
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:23: diagnoses[0].disk_utilization: must be between 0% and 100%, "
            "both excluded (got 0%)",
            f"specs/web.yaml:6:11: diagnoses[0].ttft: {TTFT_RANGE} (got 5000s)",
        ),
    ),
    Case(
        "errors in two diagnoses are both reported",
        spec="""
            version: 1
            service: web
            diagnoses:
              - kind: ttft_disk_bound
                quantile: 1
              - kind: gpu_kernel_contention
                gpu_scale: 0
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:15: diagnoses[0].quantile: must be above 0 and below 1 (got 1)",
            "specs/web.yaml:7:16: diagnoses[1].gpu_scale: must be above 0 (got 0)",
        ),
    ),
]


def _param(case: Case) -> object:
    marks = [pytest.mark.xfail(strict=True, reason=case.defect)] if case.defect else []
    return pytest.param(case, id=case.behaviour, marks=marks)


@pytest.mark.parametrize("case", [_param(case) for case in CASES])
def test_broken_diagnosis_is_reported_exactly_and_writes_nothing(
    case: Case, in_tmp: Path, cli: Cli
) -> None:
    assert_rejected(in_tmp, cli, case.spec, case.stderr)


def test_table_is_large_and_ids_are_unique() -> None:
    assert len({case.behaviour for case in CASES}) == len(CASES) >= 40
    assert all(case.stderr[-1].startswith("rulegen: ") for case in CASES)


SUBPROCESS_CASES = [
    "an unknown diagnosis kind is rejected with the known kinds",
    "a possessive quantifier in disk_devices is rejected: RE2 has none",
    "an evaluation_interval of 20s is not a multiple of a 15s scrape_interval",
]


@pytest.mark.parametrize("behaviour", SUBPROCESS_CASES)
@pytest.mark.slow
def test_real_process_exits_2_without_traceback(behaviour: str, tmp_path: Path) -> None:
    case = next(c for c in CASES if c.behaviour == behaviour)
    assert_rejected_by_process(tmp_path, case.spec, case.stderr)


# --- legal specs: built and validated by promtool ------------------------------------------

LEGAL: dict[str, str] = {
    "a spec with only diagnoses (no alerts, no SLOs)": """
        version: 1
        service: web
        diagnoses:
          - kind: ttft_disk_bound
          - kind: throughput_network_bound
          - kind: gpu_kernel_contention
        """,
    "every key at a legal edge: smallest and largest ttft, smallest window, baseline = window, "
    "for 0s": """
        version: 1
        service: web
        labels: {team: inference}
        diagnoses:
          - kind: ttft_disk_bound
            name: DiskBoundTTFT
            ttft: 1ms
            window: 30s
            for: 0s
            disk_utilization: 0.7
            severity: info
            labels: {team: storage}
          - kind: throughput_network_bound
            ttft: 639.9s
            baseline: 5m
            link_speed: 25Gbps
            throughput: 99%
            network_utilization: 1%
          - kind: gpu_kernel_contention
            gpu_metric: DCGM_FI_PROF_GR_ENGINE_ACTIVE
            gpu_scale: 1
            requests_waiting: 3
            disk_devices: 'dm-[0-9]+'
            virtual_devices: 'eth.*|lo'
        """,
}


@pytest.mark.skipif(shutil.which("promtool") is None, reason="needs promtool")
@pytest.mark.parametrize("behaviour", list(LEGAL))
@pytest.mark.slow
def test_legal_diagnosis_spec_builds_and_its_tests_pass(behaviour: str, tmp_path: Path) -> None:
    write_tree(tmp_path, {"specs/web.yaml": LEGAL[behaviour]})

    result = run_rulegen("build", cwd=tmp_path)

    assert result.code == 0, result.err
    assert result.err == ""
    assert "promtool test rules: 1 file(s) passed" in result.out.splitlines()
    rules = (tmp_path / "rules" / "prometheus" / "web.rules.yml").read_text()
    assert "- name: web-diagnoses\n" in rules
