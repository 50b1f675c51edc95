"""Broken specs: one exact ``FILE:LINE:COL: path: message`` line per error, exit 2, nothing written.

Every case runs the full ``rulegen build`` in-process on a tree that already holds a
``rules/`` folder, and checks the whole of stderr line by line, the exit code, and that
``rules/`` is byte-identical afterwards (no partial write, no leftover staging folder).

The expected lines are literal on purpose: a reviewer can check each line and column against
the YAML right above it.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import CliResult, run_rulegen, spec_errors, write_tree

Cli = Callable[..., CliResult]

SENTINEL = {
    "rules/prometheus/x.rules.yml": "# sentinel: must survive a failed build\ngroups: []\n",
    "rules/tests/x.test.yml": "# sentinel test file\nrule_files: []\ntests: []\n",
    "rules/README.md": "not owned by rulegen\n",
}

ALIAS_BOMB = """
    a: &a [x, x, x, x, x, x, x, x, x]
    b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
    c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
    d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
    e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
    f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
    """

KNOWN_SIGNALS = (
    "'custom', 'cpu_iowait', 'cpu_pressure', 'cpu_softirq', 'disk_await', "
    "'disk_queue_depth', 'disk_utilization', 'e2e_latency', 'filesystem_free', "
    "'gpu_memory_used', 'gpu_power', 'gpu_row_remap_failure', 'gpu_underutilized', "
    "'gpu_xid_errors', 'grpc_errors', 'io_pressure', 'itl_latency', 'kv_cache_forecast', "
    "'kv_cache_usage', 'memory_pressure', 'network_drops', 'network_saturation', "
    "'nvme_wear', 'pcie_replays', 'prefix_cache_hit_rate', 'requests_waiting', "
    "'scrape_down', 'softnet_drops', 'tcp_listen_overflows', 'tcp_retransmits', "
    "'ttft_latency', 'vllm_preemptions', 'vllm_queue_time', 'vllm_request_errors', "
    "'weight_loading_busy', 'weight_loading_latency'"
)


@dataclass(frozen=True)
class Case:
    """One broken input: ``spec`` is ``specs/web.yaml``; ``files`` are any other files."""

    behaviour: str
    stderr: tuple[str, ...]
    spec: str | bytes | None = None
    files: Mapping[str, str | bytes] = field(default_factory=dict)
    code: int = 2
    argv: tuple[str, ...] = ()


CASES: list[Case] = [
    # --- YAML syntax ---------------------------------------------------------------------
    Case(
        "invalid YAML syntax is reported where the parser gave up",
        spec="""
            version: 1
            service: web
            alerts: [
              {signal: disk_await, threshold: 5ms, severity: warning}
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:1: invalid YAML: expected ',' or ']', but got '<stream end>' "
            "(while parsing a flow sequence at 3:9)",
        ),
    ),
    Case(
        "an unclosed quote is reported as an unexpected end of file",
        spec="""
            version: 1
            service: "web
            alerts: []
            """,
        stderr=spec_errors(
            "specs/web.yaml:4:1: invalid YAML: found unexpected end of stream (while "
            "scanning a quoted scalar at 2:10)",
        ),
    ),
    Case(
        "a tab used for indentation is rejected at the tab",
        spec="version: 1\nservice: web\nalerts:\n\t- signal: disk_await\n",
        stderr=spec_errors(
            "specs/web.yaml:4:1: invalid YAML: found character '\\t' that cannot start any token"
        ),
    ),
    Case(
        "a tab inside an alert's indentation is rejected at the tab",
        spec="version: 1\nservice: web\nalerts:\n  - signal: disk_await\n  \tthreshold: 5ms\n",
        stderr=spec_errors(
            "specs/web.yaml:5:3: invalid YAML: found character '\\t' that cannot start any token"
        ),
    ),
    Case(
        "a key indented one space too little is rejected on its line",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: disk_await
                threshold: 5ms
               severity: warning
            """,
        stderr=spec_errors(
            "specs/web.yaml:6:4: invalid YAML: bad indentation or a missing ':' (a key is "
            "not aligned with its siblings)",
        ),
    ),
    Case(
        "a second YAML document in one file is rejected",
        spec="""
            version: 1
            service: web
            alerts:
              - {signal: disk_await, threshold: 5ms, severity: warning}
            ---
            version: 1
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:1: invalid YAML: found a second document (a spec file holds "
            "exactly one)",
        ),
    ),
    Case(
        "an empty file is rejected as empty",
        spec="",
        stderr=spec_errors("specs/web.yaml:1:1: file is empty (expected a spec mapping)"),
    ),
    Case(
        "a file of only comments is rejected as empty",
        spec="# TODO: write the spec\n",
        stderr=spec_errors("specs/web.yaml:1:1: file is empty (expected a spec mapping)"),
    ),
    Case(
        "a file that is a list is rejected: a spec is a mapping",
        spec="""
            - version: 1
            - service: web
            """,
        stderr=spec_errors("specs/web.yaml:1:1: a spec must be a YAML mapping"),
    ),
    Case(
        "a file that is not UTF-8 is rejected",
        spec=b"version: 1\nservice: w\xffb\n",
        stderr=spec_errors("specs/web.yaml:1:1: file is not UTF-8 (invalid start byte)"),
    ),
    Case(
        "a duplicate key in an alert names the line of the first one",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: disk_await
                threshold: 5ms
                severity: warning
                severity: critical
            """,
        stderr=spec_errors(
            "specs/web.yaml:7:5: alerts[0].severity: duplicate key 'severity' "
            "(first defined on line 6)"
        ),
    ),
    Case(
        "a duplicate top-level key is rejected at the second one",
        spec="""
            version: 1
            service: web
            service: api
            alerts:
              - {signal: disk_await, threshold: 5ms, severity: warning}
            """,
        stderr=spec_errors(
            "specs/web.yaml:3:1: service: duplicate key 'service' (first defined on line 2)"
        ),
    ),
    Case(
        # Reviewed: the path is inside `e` (line 5) but the position is the anchor on line 2.
        "a YAML alias bomb (billion laughs) is stopped before it expands",
        spec=ALIAS_BOMB,
        stderr=spec_errors(
            "specs/web.yaml:2:4: e[1][5][2][3]: document expands to more than 20000 values "
            "(YAML alias bomb or runaway anchors)"
        ),
    ),
    Case(
        "a YAML merge key is rejected",
        spec="""
            version: 1
            service: web
            x-defaults: &defaults {severity: warning}
            alerts:
              - signal: disk_await
                threshold: 5ms
                <<: *defaults
            """,
        stderr=spec_errors(
            "specs/web.yaml:7:5: alerts[0]: merge keys (<<) are not supported",
        ),
    ),
    Case(
        "a python object tag is rejected, never constructed",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: disk_await
                threshold: !!python/name:os.system ''
                severity: warning
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:16: alerts[0].threshold: explicit YAML tags are not allowed "
            "(got !!python/name:os.system); write the plain value"
        ),
    ),
    # --- structure ---------------------------------------------------------------------
    Case(
        "an unknown top-level key is rejected at the key",
        spec="""
            version: 1
            service: web
            owner: team-a
            alerts:
              - {signal: disk_await, threshold: 5ms, severity: warning}
            """,
        stderr=spec_errors("specs/web.yaml:3:1: owner: unknown key"),
    ),
    Case(
        "a misspelled top-level key reports the unknown key and the missing field",
        spec="""
            version: 1
            servce: web
            alerts:
              - {signal: disk_await, threshold: 5ms, severity: warning}
            """,
        stderr=spec_errors(
            "specs/web.yaml:1:1: service: required field is missing",
            'specs/web.yaml:2:1: servce: unknown key; did you mean "service"?',
        ),
    ),
    Case(
        "an unknown key in an alert is rejected",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: disk_await
                threshold: 5ms
                severity: warning
                comment: fast disks
            """,
        stderr=spec_errors("specs/web.yaml:7:5: alerts[0].comment: unknown key"),
    ),
    Case(
        "alert labels given as a list are rejected as not a mapping",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: disk_await
                threshold: 5ms
                severity: warning
                labels: [team, storage]
            """,
        stderr=spec_errors("specs/web.yaml:7:13: alerts[0].labels: must be a mapping (got a list)"),
    ),
    Case(
        "spec labels given as a list are rejected as not a mapping",
        spec="""
            version: 1
            service: web
            labels: [team]
            alerts:
              - {signal: disk_await, threshold: 5ms, severity: warning}
            """,
        stderr=spec_errors("specs/web.yaml:3:9: labels: must be a mapping (got a list)"),
    ),
    Case(
        "a label value that is a number is rejected at the value",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: disk_await
                threshold: 5ms
                severity: warning
                labels: {team: 5}
            """,
        stderr=spec_errors("specs/web.yaml:7:20: alerts[0].labels.team: must be a string (got 5)"),
    ),
    Case(
        "severity given as a number is rejected with the allowed values",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: disk_await
                threshold: 5ms
                severity: 3
            """,
        stderr=spec_errors(
            "specs/web.yaml:6:15: alerts[0].severity: must be 'critical', 'warning' or "
            "'info' (got 3)",
        ),
    ),
    Case(
        "an unknown severity is rejected with the allowed values",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: disk_await
                threshold: 5ms
                severity: fatal
            """,
        stderr=spec_errors(
            "specs/web.yaml:6:15: alerts[0].severity: must be 'critical', 'warning' or "
            "'info' (got 'fatal')",
        ),
    ),
    Case(
        "a missing severity is reported on the alert",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: disk_await
                threshold: 5ms
            """,
        stderr=spec_errors("specs/web.yaml:4:5: alerts[0]: severity: required field is missing"),
    ),
    Case(
        "a missing service is reported",
        spec="""
            version: 1
            alerts:
              - {signal: disk_await, threshold: 5ms, severity: warning}
            """,
        stderr=spec_errors("specs/web.yaml:1:1: service: required field is missing"),
    ),
    Case(
        "a service name with capitals and underscores is rejected with the pattern",
        spec="""
            version: 1
            service: Web_Server
            alerts:
              - {signal: disk_await, threshold: 5ms, severity: warning}
            """,
        stderr=spec_errors(
            "specs/web.yaml:2:10: service: must match ^[a-z0-9][a-z0-9-]*$ (got 'Web_Server')"
        ),
    ),
    Case(
        "a service name longer than 63 characters is rejected",
        spec=f"""
            version: 1
            service: {"a" * 64}
            alerts:
              - {{signal: disk_await, threshold: 5ms, severity: warning}}
            """,
        stderr=spec_errors("specs/web.yaml:2:10: service: must be at most 63 characters"),
    ),
    Case(
        "spec version 2 is rejected",
        spec="""
            version: 2
            service: web
            alerts:
              - {signal: disk_await, threshold: 5ms, severity: warning}
            """,
        stderr=spec_errors(
            "specs/web.yaml:1:10: version: must be 1 (got 2)",
        ),
    ),
    Case(
        "a spec without alerts or slos is reported",
        spec="""
            version: 1
            service: web
            """,
        stderr=spec_errors(
            "specs/web.yaml:1:1: a spec needs at least one entry in alerts, slos, diagnoses or "
            "recordings"
        ),
    ),
    Case(
        "an empty alerts list is rejected",
        spec="""
            version: 1
            service: web
            alerts: []
            """,
        stderr=spec_errors("specs/web.yaml:3:9: alerts: must not be empty"),
    ),
    Case(
        "an alert that is a bare string is rejected as not a mapping",
        spec="""
            version: 1
            service: web
            alerts:
              - disk_await
            """,
        stderr=spec_errors("specs/web.yaml:4:5: alerts[0]: must be a mapping (got 'disk_await')"),
    ),
    # --- signals -----------------------------------------------------------------------
    Case(
        "an unknown signal is rejected at its value with the known signals",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: disk_wait
                threshold: 5ms
                severity: warning
            """,
        stderr=spec_errors(
            "specs/web.yaml:4:13: alerts[0].signal: unknown signal 'disk_wait' "
            f"(known: {KNOWN_SIGNALS})"
        ),
    ),
    Case(
        "an alert without a signal is rejected",
        spec="""
            version: 1
            service: web
            alerts:
              - threshold: 5ms
                severity: warning
            """,
        stderr=spec_errors("specs/web.yaml:4:5: alerts[0]: required field 'signal' is missing"),
    ),
    Case(
        "window on a gauge signal (kv_cache_usage) is rejected",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: kv_cache_usage
                threshold: 95%
                window: 5m
                severity: info
            """,
        stderr=spec_errors(
            "specs/web.yaml:6:13: alerts[0].window: signal kv_cache_usage reads a gauge and "
            "takes no window"
        ),
    ),
    Case(
        "a parameter of another signal (quantile on disk_await) is an unknown key",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: disk_await
                threshold: 5ms
                severity: warning
                quantile: 0.99
            """,
        stderr=spec_errors("specs/web.yaml:7:5: alerts[0].quantile: unknown key"),
    ),
    # --- durations ---------------------------------------------------------------------
    Case(
        "for: 5 minutes is rejected with the Prometheus duration syntax",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: disk_await
                threshold: 5ms
                for: 5 minutes
                severity: warning
            """,
        stderr=spec_errors(
            "specs/web.yaml:6:10: alerts[0].for: invalid duration '5 minutes' "
            "(expected Prometheus syntax like 30s, 5m, 1h)"
        ),
    ),
    Case(
        "for given as a bare number is rejected",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: disk_await
                threshold: 5ms
                for: 5
                severity: warning
            """,
        stderr=spec_errors(
            "specs/web.yaml:6:10: alerts[0].for: invalid duration 5 (expected Prometheus "
            "syntax like 30s, 5m, 1h)",
        ),
    ),
    Case(
        "evaluation_interval 0s is rejected",
        spec="""
            version: 1
            service: web
            evaluation_interval: 0s
            alerts:
              - {signal: disk_await, threshold: 5ms, severity: warning}
            """,
        stderr=spec_errors(
            "specs/web.yaml:3:22: evaluation_interval: must be longer than 0s (got '0s')"
        ),
    ),
    Case(
        "prometheus.version as an unquoted number is rejected (3.10 would read as 3.1)",
        spec="""
            version: 1
            service: web
            prometheus: {version: 3.5}
            alerts:
              - {signal: disk_await, threshold: 5ms, severity: warning}
            """,
        stderr=spec_errors(
            'specs/web.yaml:3:23: prometheus.version: must be a quoted string such as "3.5" '
            "(got 3.5: YAML reads an unquoted 3.10 as 3.1)"
        ),
    ),
    Case(
        "prometheus.version before 2.42 is rejected",
        spec="""
            version: 1
            service: web
            prometheus: {version: "2.30"}
            alerts:
              - {signal: disk_await, threshold: 5ms, severity: warning}
            """,
        stderr=spec_errors(
            "specs/web.yaml:3:23: prometheus.version: rulegen writes rules for Prometheus 2.42 "
            "or later (got 2.30)"
        ),
    ),
    Case(
        "prometheus.version without a minor is rejected",
        spec="""
            version: 1
            service: web
            prometheus: {version: "3"}
            alerts:
              - {signal: disk_await, threshold: 5ms, severity: warning}
            """,
        stderr=spec_errors(
            "specs/web.yaml:3:23: prometheus.version: must be MAJOR.MINOR, such as "
            "\"3.5\" (got '3')"
        ),
    ),
    Case(
        "prometheus.version with a v prefix is rejected",
        spec="""
            version: 1
            service: web
            prometheus: {version: "v3.5"}
            alerts:
              - {signal: disk_await, threshold: 5ms, severity: warning}
            """,
        stderr=spec_errors(
            "specs/web.yaml:3:23: prometheus.version: must be MAJOR.MINOR, such as "
            "\"3.5\" (got 'v3.5')"
        ),
    ),
    Case(
        "a misspelt key under prometheus is named with the right one",
        spec="""
            version: 1
            service: web
            prometheus: {versio: "3.5"}
            alerts:
              - {signal: disk_await, threshold: 5ms, severity: warning}
            """,
        stderr=spec_errors(
            'specs/web.yaml:3:14: prometheus.versio: unknown key; did you mean "version"?'
        ),
    ),
    Case(
        "scrape_interval given as a bare number is rejected",
        spec="""
            version: 1
            service: web
            scrape_interval: 15
            alerts:
              - {signal: disk_await, threshold: 5ms, severity: warning}
            """,
        stderr=spec_errors(
            "specs/web.yaml:3:18: scrape_interval: invalid duration 15 (expected Prometheus "
            "syntax like 30s, 5m, 1h)",
        ),
    ),
    Case(
        "a window of 0s is rejected",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: disk_await
                threshold: 5ms
                window: 0s
                severity: warning
            """,
        stderr=spec_errors(
            "specs/web.yaml:6:13: alerts[0].window: must be longer than 0s (got '0s')"
        ),
    ),
    Case(
        "a window that is not a whole number of seconds is rejected",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: disk_await
                threshold: 5ms
                window: 1500ms
                severity: warning
            """,
        stderr=spec_errors(
            "specs/web.yaml:6:13: alerts[0].window: must be a whole number of seconds"
        ),
    ),
    # --- thresholds --------------------------------------------------------------------
    Case(
        "a unitless threshold for a duration signal is rejected",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: disk_await
                threshold: 5
                severity: warning
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:16: alerts[0].threshold: expected a duration like 5ms or 2s, got 5"
        ),
    ),
    Case(
        "a word as a threshold is rejected with an example",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: disk_await
                threshold: fast
                severity: warning
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:16: alerts[0].threshold: invalid duration 'fast' "
            "(expected a latency like 5ms, 500ms, 2s)"
        ),
    ),
    Case(
        "a bare 90 on a percent signal is neither 90% nor 9000%: the fix is spelled out",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: kv_cache_usage
                threshold: 90
                severity: warning
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:16: alerts[0].threshold: a bare number is not a percentage: "
            "write 90% or 0.9 (got 90)"
        ),
    ),
    Case(
        "a bare 1 on a percentage says it reads as 100% and how to write 1%",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: tcp_retransmits
                threshold: 1
                severity: warning
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:16: alerts[0].threshold: a bare 1 is the ratio 1, i.e. 100%, which "
            "tcp_retransmits can never exceed: write 1% or 0.01 for one percent (got 1)"
        ),
    ),
    Case(
        "a disk_utilization threshold of 150% is rejected as impossible",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: disk_utilization
                threshold: 150%
                severity: warning
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:16: alerts[0].threshold: must be below 100% (got 150%); "
            "disk_utilization can never exceed 100%"
        ),
    ),
    Case(
        "a negative percentage is rejected",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: disk_utilization
                threshold: -5%
                severity: warning
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:16: alerts[0].threshold: must be at least 0% (got -5%)"
        ),
    ),
    Case(
        "a prefix cache hit rate threshold of 0% is rejected as never firing",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: prefix_cache_hit_rate
                threshold: 0%
                severity: warning
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:16: alerts[0].threshold: must be above 0 (got 0%); "
            "a '<' alert at 0 can never fire"
        ),
    ),
    Case(
        "an infinite threshold is rejected",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: requests_waiting
                threshold: .inf
                severity: warning
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:16: alerts[0].threshold: expected a finite number, got 'inf'"
        ),
    ),
    Case(
        "a ttft threshold above the largest histogram bucket is rejected",
        spec="""
            version: 1
            service: web
            vllm: {version: "0.34"}
            alerts:
              - signal: ttft_latency
                threshold: 3000s
                severity: critical
            """,
        stderr=spec_errors(
            "specs/web.yaml:6:16: alerts[0].threshold: must be below the largest bucket bound "
            "2560s: histogram_quantile never returns more, so the alert could never fire"
        ),
    ),
    Case(
        "a ttft threshold above the largest bucket of a vLLM release that may be scraped is "
        "rejected, naming the releases",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: ttft_latency
                threshold: 20s
                severity: critical
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:16: alerts[0].threshold: must be below the largest bucket bound "
            "10s (vLLM 0.6-0.8; declare vllm: {version: …} if none is scraped): "
            "histogram_quantile never returns more, so the alert could never fire"
        ),
    ),
    Case(
        "a signal a vLLM release does not have is rejected at the alert's signal",
        spec="""
            version: 1
            service: web
            vllm: {version: "0.7"}
            alerts:
              - signal: prefix_cache_hit_rate
                threshold: 30%
                severity: warning
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:13: alerts[0].signal: signal prefix_cache_hit_rate cannot be "
            "written for vLLM 0.7: the V0 engine, the default before 0.8, exports only a "
            "hit-rate gauge (vllm:gpu_prefix_cache_hit_rate), no hit and query counters (it "
            "can for vLLM 0.8 on)"
        ),
    ),
    Case(
        "an unquoted vLLM version is rejected (YAML reads 0.10 as 0.1)",
        spec="""
            version: 1
            service: web
            vllm: {version: 0.10}
            alerts:
              - signal: requests_waiting
                threshold: 20
                severity: warning
            """,
        stderr=spec_errors(
            'specs/web.yaml:3:17: vllm.version: must be a quoted string such as "0.11" (got '
            "0.1: YAML reads an unquoted 0.10 as 0.1)"
        ),
    ),
    Case(
        "a vLLM release older than 0.6 is rejected",
        spec="""
            version: 1
            service: web
            vllm: {version: "0.5"}
            alerts:
              - signal: requests_waiting
                threshold: 20
                severity: warning
            """,
        stderr=spec_errors(
            "specs/web.yaml:3:17: vllm.version: rulegen knows vLLM's metrics from 0.6 on (got 0.5)"
        ),
    ),
    Case(
        "a ttft threshold below the smallest histogram bucket is rejected",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: ttft_latency
                threshold: 1us
                severity: critical
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:16: alerts[0].threshold: must be at least the smallest bucket "
            "bound 0.001s"
        ),
    ),
    Case(
        "a quantile of 1.5 is rejected",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: ttft_latency
                threshold: 1s
                quantile: 1.5
                severity: critical
            """,
        stderr=spec_errors("specs/web.yaml:6:15: alerts[0].quantile: must be below 1 (got 1.5)"),
    ),
    Case(
        "histogram buckets that are not increasing are rejected",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: ttft_latency
                threshold: 1s
                buckets: [1, 0.5, 2]
                severity: critical
            """,
        stderr=spec_errors(
            "specs/web.yaml:6:14: alerts[0].buckets: must be a non-empty, strictly "
            "increasing list of numbers",
        ),
    ),
    Case(
        "a metric name parameter with a selector in it is rejected",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: disk_utilization
                threshold: 80%
                metric: 'x{a="b"}'
                severity: info
            """,
        stderr=spec_errors(
            "specs/web.yaml:6:13: alerts[0].metric: invalid metric name 'x{a=\"b\"}'"
        ),
    ),
    Case(
        "a link speed without a unit is rejected with the accepted units",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: network_saturation
                threshold: 80%
                link_speed: fast
                severity: info
            """,
        stderr=spec_errors(
            "specs/web.yaml:6:17: alerts[0].link_speed: invalid link speed 'fast' "
            "(expected 10Gbps, 25Gbit/s, 12.5GB/s or bytes/s)"
        ),
    ),
    Case(
        "a spec whose generated tests would run for many minutes is rejected",
        spec="version: 1\nservice: web\nevaluation_interval: 10s\nalerts:\n"
        + "".join(
            f"  - {{signal: disk_await, name: A{i}, threshold: 5ms, severity: warning, "
            "window: 1d, for: 1d}\n"
            for i in range(25)
        ),
        stderr=spec_errors(
            "specs/web.yaml:5:5: alerts: the generated tests would evaluate 26 rules 216075 "
            "times (budget 5000000 rule evaluations, about 5 min of promtool): shorten long "
            "windows and for durations, or split the spec"
        ),
    ),
    # --- custom alerts and names -------------------------------------------------------
    Case(
        "invalid PromQL in a custom expr is rejected with the parser's message",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: custom
                name: GpuHot
                expr: 'max(DCGM_FI_DEV_GPU_TEMP > 85'
                severity: warning
            """,
        stderr=spec_errors(
            "specs/web.yaml:6:11: alerts[0].expr: invalid PromQL: unclosed left parenthesis"
        ),
    ),
    Case(
        "a custom expr that returns a range vector is rejected",
        spec="""
            version: 1
            service: web
            alerts:
              - {signal: custom, name: Up, expr: 'up[5m]', severity: info}
              - {signal: custom, name: Text, expr: '"hello"', severity: info}
            """,
        stderr=spec_errors(
            "specs/web.yaml:4:38: alerts[0].expr: must return an instant vector, not a matrix "
            "(an alert needs series to fire)",
            "specs/web.yaml:5:40: alerts[1].expr: must return an instant vector, not a string "
            "(an alert needs series to fire)",
        ),
    ),
    Case(
        "a custom alert without a name is rejected",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: custom
                expr: up == 0
                severity: warning
            """,
        stderr=spec_errors("specs/web.yaml:4:5: alerts[0]: name: required field is missing"),
    ),
    Case(
        "a custom alert with a threshold is rejected as an unknown key",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: custom
                name: NodeDown
                expr: up == 0
                threshold: 5
                severity: warning
            """,
        stderr=spec_errors("specs/web.yaml:7:5: alerts[0].threshold: unknown key"),
    ),
    Case(
        "an alert name with a space is rejected with the pattern",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: custom
                name: Node Down
                expr: up == 0
                severity: warning
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:11: alerts[0].name: must match ^[A-Za-z_][A-Za-z0-9_]*$ "
            "(got 'Node Down')"
        ),
    ),
    Case(
        "two unnamed alerts on one signal are reported as a duplicate alert name",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: disk_await
                threshold: 5ms
                severity: warning
              - signal: disk_await
                threshold: 20ms
                severity: critical
            """,
        stderr=spec_errors(
            "specs/web.yaml:7:13: alerts[1].signal: duplicate alert name 'DiskAwaitHigh' "
            "(also used by alerts[0]); give one of them a unique name",
        ),
    ),
    Case(
        "two custom alerts with the same name and severity are rejected at the second name",
        spec="""
            version: 1
            service: web
            alerts:
              - {signal: custom, name: NodeDown, expr: up == 0, severity: warning}
              - {signal: custom, name: NodeDown, expr: up == 0, for: 5m, severity: critical}
              - {signal: custom, name: NodeDown, expr: up == 0, for: 9m, severity: warning}
            """,
        stderr=spec_errors(
            "specs/web.yaml:6:28: alerts[2].name: duplicate alert name 'NodeDown' with "
            "severity warning (also used by alerts[0]); custom alerts may share a name only "
            "with another severity",
        ),
    ),
    Case(
        "a custom alert cannot take the name of a catalog alert, whatever its severity",
        spec="""
            version: 1
            service: web
            alerts:
              - {signal: disk_await, threshold: 5ms, severity: warning}
              - {signal: custom, name: DiskAwaitHigh, expr: up == 0, severity: critical}
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:28: alerts[1].name: duplicate alert name 'DiskAwaitHigh' (also "
            "used by alerts[0]); give one of them a unique name",
        ),
    ),
    Case(
        "custom alerts sharing a name cannot have examples (promtool checks them together)",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: custom
                name: NodeDown
                expr: up == 0
                severity: warning
                examples:
                  - series: [{series: 'up{instance="a"}', values: '0x10'}]
                    fires_at: [5m]
                    labels: {instance: a}
                    value: '0'
              - {signal: custom, name: NodeDown, expr: up == 0, for: 5m, severity: critical}
            """,
        stderr=spec_errors(
            "specs/web.yaml:9:7: alerts[0].examples: NodeDown shares its name with alerts[1]: "
            "promtool checks every alert of a name at once, so examples cannot test one of "
            "them; test them together in a promtool test of your own (specs/tests/)",
        ),
    ),
    # --- selectors and matchers --------------------------------------------------------
    Case(
        "a selector for an unknown family is rejected with the known families",
        spec="""
            version: 1
            service: web
            selectors:
              nodes: 'job="node"'
            alerts:
              - {signal: disk_await, threshold: 5ms, severity: warning}
            """,
        stderr=spec_errors(
            "specs/web.yaml:4:10: selectors.nodes: unknown family "
            "(known: node, vllm, dcgm, grpc, smartctl, weights)"
        ),
    ),
    Case(
        "an unquoted matcher value is rejected",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: disk_await
                threshold: 5ms
                severity: warning
                matchers: device=nvme0n1
            """,
        stderr=spec_errors(
            "specs/web.yaml:7:15: alerts[0].matchers: invalid label matchers: device=nvme0n1"
        ),
    ),
    Case(
        "a matcher that closes the selector to append PromQL is rejected",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: disk_await
                threshold: 5ms
                severity: warning
                matchers: 'device="x"} or vector(1) #'
            """,
        stderr=spec_errors(
            "specs/web.yaml:7:15: alerts[0].matchers: expected only label matchers, got: "
            'device="x"} or vector(1) #',
        ),
    ),
    Case(
        "a family selector that closes the braces to append PromQL is rejected",
        spec="""
            version: 1
            service: web
            selectors:
              node: 'job="x"} or vector(1) #'
            alerts:
              - {signal: disk_await, threshold: 5ms, severity: warning}
            """,
        stderr=spec_errors(
            'specs/web.yaml:4:9: selectors.node: expected only label matchers, got: job="x"} '
            "or vector(1) #",
        ),
    ),
    Case(
        "a matcher followed by a PromQL comment is rejected",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: disk_await
                threshold: 5ms
                severity: warning
                matchers: 'device="x" # or vector(1)'
            """,
        stderr=spec_errors(
            "specs/web.yaml:7:15: alerts[0].matchers: invalid label matchers: "
            'device="x" # or vector(1)'
        ),
    ),
    Case(
        "a matcher on __name__ is rejected",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: disk_await
                threshold: 5ms
                severity: warning
                matchers: '__name__="up"'
            """,
        stderr=spec_errors(
            "specs/web.yaml:7:15: alerts[0].matchers: matchers may not select on __name__",
        ),
    ),
    Case(
        "a matcher with an invalid regex is rejected",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: disk_await
                threshold: 5ms
                severity: warning
                matchers: 'device=~"nvme("'
            """,
        stderr=spec_errors(
            "specs/web.yaml:7:15: alerts[0].matchers: invalid regex for label device: "
            "missing ), unterminated subpattern at position 4",
        ),
    ),
    # --- labels and annotations ----------------------------------------------------------
    Case(
        "overriding the reserved severity label in the spec labels is rejected",
        spec="""
            version: 1
            service: web
            labels: {severity: x}
            alerts:
              - {signal: disk_await, threshold: 5ms, severity: warning}
            """,
        stderr=spec_errors(
            "specs/web.yaml:3:20: labels.severity: label 'severity' is set by rulegen and "
            "cannot be overridden"
        ),
    ),
    Case(
        "overriding the reserved service label in an alert is rejected",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: disk_await
                threshold: 5ms
                severity: warning
                labels: {service: other}
            """,
        stderr=spec_errors(
            "specs/web.yaml:7:23: alerts[0].labels.service: label 'service' is set by rulegen "
            "and cannot be overridden"
        ),
    ),
    Case(
        "a label name with a dash is rejected",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: disk_await
                threshold: 5ms
                severity: warning
                labels: {team-name: storage}
            """,
        stderr=spec_errors(
            "specs/web.yaml:7:25: alerts[0].labels.team-name: invalid label name "
            "(expected [a-zA-Z_][a-zA-Z0-9_]*, no __ prefix)"
        ),
    ),
    Case(
        "a label name starting with __ is rejected",
        spec="""
            version: 1
            service: web
            labels: {__tmp: x}
            alerts:
              - {signal: disk_await, threshold: 5ms, severity: warning}
            """,
        stderr=spec_errors(
            "specs/web.yaml:3:17: labels.__tmp: invalid label name "
            "(expected [a-zA-Z_][a-zA-Z0-9_]*, no __ prefix)"
        ),
    ),
    Case(
        "a non-http runbook_url is rejected",
        spec="""
            version: 1
            service: web
            runbook_url: ftp://runbooks.example.com/{alert}
            alerts:
              - {signal: disk_await, threshold: 5ms, severity: warning}
            """,
        stderr=spec_errors(
            "specs/web.yaml:3:14: runbook_url: must be an http(s) URL "
            "(got 'ftp://runbooks.example.com/{alert}')"
        ),
    ),
    # Prometheus hands annotations the series' own labels, ``__name__`` included when the
    # expression keeps it, while the generated test expected nothing: promtool failed.
    Case(
        "a {labels.__name__} placeholder is rejected: an alert never carries __ labels",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: disk_await
                threshold: 5ms
                severity: warning
                summary: 'disk {labels.__name__} slow'
              - signal: custom
                name: ApiDown
                expr: 'up == 0'
                severity: critical
                description: '{labels.instance} {labels.__address__}'
            """,
        stderr=spec_errors(
            "specs/web.yaml:7:14: alerts[0].summary: placeholder {labels.__name__} names a "
            "label no alert carries: labels starting with __ are reserved for Prometheus' "
            "internal use",
            "specs/web.yaml:12:18: alerts[1].description: placeholder {labels.__address__} "
            "names a label no alert carries: labels starting with __ are reserved for "
            "Prometheus' internal use",
        ),
    ),
    # --- host_label on alerts ------------------------------------------------------------
    # The catalog signals keep the host label through their aggregations and their tests set
    # it on every series, diagnoses or not: these once built and failed under promtool.
    Case(
        "host_label __name__ is rejected even without diagnoses",
        spec="""
            version: 1
            service: web
            host_label: __name__
            alerts:
              - {signal: weight_loading_busy, threshold: 50%, severity: warning}
            """,
        stderr=spec_errors(
            "specs/web.yaml:3:13: host_label: '__name__' cannot be the host label: labels "
            "starting with __ are reserved for Prometheus' internal use"
        ),
    ),
    Case(
        "host_label le is rejected for a histogram signal: its quantile aggregates by le",
        spec="""
            version: 1
            service: web
            host_label: le
            alerts:
              - {signal: e2e_latency, threshold: 30s, severity: warning}
            """,
        stderr=spec_errors(
            "specs/web.yaml:3:13: host_label: 'le' cannot be the host label: rulegen sets it "
            "or it differs between the series of one host"
        ),
    ),
    Case(
        "host_label grpc_method is rejected for gRPC errors: it tells the series apart",
        spec="""
            version: 1
            service: web
            host_label: grpc_method
            alerts:
              - {signal: grpc_errors, threshold: 1%, severity: warning}
            """,
        stderr=spec_errors(
            "specs/web.yaml:3:13: host_label: 'grpc_method' cannot be the host label: rulegen "
            "sets it or it differs between the series of one host"
        ),
    ),
    # --- output file names ---------------------------------------------------------------
    # The Mimir namespace names the file mimir/<namespace>.yaml (the only spec value that
    # does: service and SLO names are [a-z0-9-_] by their patterns).
    Case(
        "a Mimir namespace of .. is rejected: it would name the hidden file mimir/...yaml",
        spec="""
            version: 1
            service: web
            targets:
              mimir: {namespace: '..'}
            alerts:
              - {signal: disk_await, threshold: 5ms, severity: warning}
            """,
        stderr=spec_errors(
            "specs/web.yaml:4:22: targets.mimir.namespace: must not start with '.' (got '..'): "
            "it names the output file mimir/...yaml, a hidden file"
        ),
    ),
    Case(
        "a Mimir namespace of . is rejected",
        spec="""
            version: 1
            service: web
            targets:
              mimir: {namespace: .}
            alerts:
              - {signal: disk_await, threshold: 5ms, severity: warning}
            """,
        stderr=spec_errors(
            "specs/web.yaml:4:22: targets.mimir.namespace: must not start with '.' (got '.'): "
            "it names the output file mimir/..yaml, a hidden file"
        ),
    ),
    Case(
        "a Mimir namespace with a slash is rejected by its pattern",
        spec="""
            version: 1
            service: web
            targets:
              mimir: {namespace: a/b}
            alerts:
              - {signal: disk_await, threshold: 5ms, severity: warning}
            """,
        stderr=spec_errors(
            "specs/web.yaml:4:22: targets.mimir.namespace: must match ^[A-Za-z0-9_.-]+$ (got 'a/b')"
        ),
    ),
    Case(
        "an empty Mimir namespace is rejected by its pattern",
        spec="""
            version: 1
            service: web
            targets:
              mimir: {namespace: ''}
            alerts:
              - {signal: disk_await, threshold: 5ms, severity: warning}
            """,
        stderr=spec_errors(
            "specs/web.yaml:4:22: targets.mimir.namespace: must match ^[A-Za-z0-9_.-]+$ (got '')"
        ),
    ),
    Case(
        "a Mimir namespace with a line break is rejected by its pattern",
        spec="""
            version: 1
            service: web
            targets:
              mimir: {namespace: "a\\nb"}
            alerts:
              - {signal: disk_await, threshold: 5ms, severity: warning}
            """,
        stderr=spec_errors(
            "specs/web.yaml:4:22: targets.mimir.namespace: must match ^[A-Za-z0-9_.-]+$ "
            "(got 'a\\nb')"
        ),
    ),
    Case(
        "a Mimir namespace longer than a file name allows is rejected",
        spec=f"""
            version: 1
            service: web
            targets:
              mimir: {{namespace: {"n" * 251}}}
            alerts:
              - {{signal: disk_await, threshold: 5ms, severity: warning}}
            """,
        stderr=spec_errors(
            "specs/web.yaml:4:22: targets.mimir.namespace: must be at most 250 characters "
            "(got 251): it names the output file mimir/<namespace>.yaml"
        ),
    ),
    # --- several files -----------------------------------------------------------------
    Case(
        "two specs for the same service are reported naming both files",
        files={
            "specs/a.yaml": """
                version: 1
                service: web
                alerts:
                  - {signal: disk_await, threshold: 5ms, severity: warning}
                """,
            "specs/b.yaml": """
                version: 1
                service: web
                alerts:
                  - {signal: cpu_iowait, threshold: 20%, severity: warning}
                """,
        },
        stderr=spec_errors(
            "specs/b.yaml:2:10: service: service 'web' is already defined at specs/a.yaml:2:10",
        ),
    ),
    Case(
        "errors in two files are all reported in one run, sorted by file",
        files={
            "specs/b.yaml": """
                version: 1
                service: api
                alerts:
                  - signal: disk_await
                    threshold: 5ms
                    severity: fatal
                """,
            "specs/a.yaml": """
                version: 1
                service: web
                alerts:
                  - signal: disk_await
                    threshold: fast
                    severity: warning
                """,
        },
        stderr=spec_errors(
            "specs/a.yaml:5:16: alerts[0].threshold: invalid duration 'fast' (expected a "
            "latency like 5ms, 500ms, 2s)",
            "specs/b.yaml:6:15: alerts[0].severity: must be 'critical', 'warning' or 'info' "
            "(got 'fatal')",
        ),
    ),
    Case(
        "several errors in one file are all reported, in file order",
        spec="""
            version: 1
            service: web
            evaluation_interval: 0s
            alerts:
              - signal: disk_await
                threshold: fast
                severity: warning
              - signal: kv_cache_usage
                threshold: 95%
                window: 5m
                severity: info
            """,
        stderr=spec_errors(
            "specs/web.yaml:3:22: evaluation_interval: must be longer than 0s (got '0s')",
            "specs/web.yaml:6:16: alerts[0].threshold: invalid duration 'fast' "
            "(expected a latency like 5ms, 500ms, 2s)",
            "specs/web.yaml:10:13: alerts[1].window: signal kv_cache_usage reads a gauge and "
            "takes no window",
        ),
    ),
    # --- usage ---------------------------------------------------------------------------
    Case(
        "a directory without spec files is a usage error",
        files={"specs/README.md": "specs go here\n"},
        stderr=("rulegen: error: specs: no spec files (*.yaml, *.yml) in this directory",),
    ),
    Case(
        "a spec path that does not exist is a usage error",
        spec="version: 1\n",
        stderr=("rulegen: error: specs/nope.yaml: no such file or directory",),
        argv=("specs/nope.yaml",),
    ),
    Case(
        "a signals folder that does not exist is a usage error",
        spec="version: 1\n",
        stderr=("rulegen: error: nope: signals folder does not exist",),
        argv=("--signals", "nope"),
    ),
    Case(
        "an unknown option is a usage error",
        spec="version: 1\n",
        stderr=("rulegen: error: unrecognized arguments: --frobnicate",),
        argv=("--frobnicate",),
    ),
    # --- known bugs: what rulegen should print ------------------------------------------------
    Case(
        "a threshold given as a list is one error, not one per union branch",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: disk_await
                threshold: [5ms]
                severity: warning
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:16: alerts[0].threshold: expected a duration like 5ms or 2s, "
            "got ['5ms']",
        ),
    ),
    Case(
        "a YAML boolean threshold is rejected, not read as 1",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: requests_waiting
                threshold: yes
                severity: warning
            """,
        stderr=spec_errors("specs/web.yaml:5:16: alerts[0].threshold: expected a number, got True"),
    ),
    Case(
        "an empty for: is rejected, not silently replaced by the signal default",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: disk_await
                threshold: 5ms
                for: ''
                severity: warning
            """,
        stderr=spec_errors(
            "specs/web.yaml:6:10: alerts[0].for: invalid duration '' "
            "(expected Prometheus syntax like 30s, 5m, 1h)"
        ),
    ),
    Case(
        "a for: of a year is rejected instead of generating a test promtool cannot run",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: disk_await
                threshold: 5ms
                for: 52w
                severity: warning
            """,
        stderr=spec_errors(
            "specs/web.yaml:6:10: alerts[0].for: must be at most 1d (got '52w')",
        ),
        argv=("--no-validate",),
    ),
    Case(
        "a window shorter than two scrapes is rejected instead of failing in promtool",
        spec="""
            version: 1
            service: web
            scrape_interval: 5m
            alerts:
              - signal: disk_await
                threshold: 5ms
                severity: warning
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:5: alerts[0]: window 1m holds fewer than two scrapes at "
            "scrape_interval 5m: the alert could never fire",
        ),
    ),
    Case(
        "a threshold too large for a float64 is rejected at the threshold",
        spec="""
            version: 1
            service: web
            alerts:
              - signal: requests_waiting
                threshold: 1e400
                severity: warning
            """,
        stderr=spec_errors(
            "specs/web.yaml:5:16: alerts[0].threshold: must be at most 1000000000000000 (got "
            "1e400)",
        ),
    ),
]


def _write(root: Path, case: Case) -> None:
    files = dict(case.files)
    if case.spec is not None:
        files["specs/web.yaml"] = case.spec
    write_tree(root, {name: body for name, body in files.items() if isinstance(body, str)})
    for name, body in files.items():
        if isinstance(body, bytes):
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(body)


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and folder (``None``) under ``folder``, staging leftovers included."""
    return {
        p.relative_to(folder).as_posix(): (p.read_bytes() if p.is_file() else None)
        for p in sorted(folder.rglob("*"))
    }


@pytest.mark.parametrize("case", CASES, ids=[case.behaviour for case in CASES])
def test_broken_spec_is_reported_exactly_and_writes_nothing(
    case: Case, in_tmp: Path, cli: Cli
) -> None:
    write_tree(in_tmp, SENTINEL)
    _write(in_tmp, case)
    before = snapshot(in_tmp / "rules")

    result = cli("build", *case.argv)

    assert result.err.splitlines() == list(case.stderr)
    assert result.code == case.code
    assert result.out == ""
    assert snapshot(in_tmp / "rules") == before


def test_table_is_large_and_ids_are_unique() -> None:
    assert len(CASES) >= 30
    assert len({case.behaviour for case in CASES}) == len(CASES)


@pytest.mark.skipif(shutil.which("promtool") is None, reason="needs promtool")
@pytest.mark.slow
def test_a_real_build_survives_a_broken_edit_byte_for_byte(in_tmp: Path, cli: Cli) -> None:
    spec = in_tmp / "specs" / "web.yaml"
    write_tree(
        in_tmp,
        {
            "specs/web.yaml": """
        version: 1
        service: web
        alerts:
          - {signal: disk_await, threshold: 5ms, severity: warning}
          - {signal: kv_cache_usage, threshold: 95%, severity: info}
        """
        },
    )
    built = cli("build")
    assert built.code == 0, built.err
    before = snapshot(in_tmp / "rules")
    assert set(before) >= {"prometheus/web.rules.yml", "tests/web.test.yml"}

    spec.write_text(spec.read_text().replace("threshold: 95%", "threshold: 195%"))
    result = cli("build")

    assert result.code == 2
    assert result.err.splitlines() == list(
        spec_errors(
            "specs/web.yaml:5:41: alerts[1].threshold: must be below 100% (got 195%); "
            "kv_cache_usage can never exceed 100%"
        )
    )
    assert snapshot(in_tmp / "rules") == before


SUBPROCESS_CASES = [
    "invalid YAML syntax is reported where the parser gave up",
    "a YAML alias bomb (billion laughs) is stopped before it expands",
    "an empty file is rejected as empty",
    "a directory without spec files is a usage error",
    "errors in two files are all reported in one run, sorted by file",
]


@pytest.mark.parametrize("behaviour", SUBPROCESS_CASES)
@pytest.mark.slow
def test_real_process_exits_2_without_traceback(behaviour: str, tmp_path: Path) -> None:
    case = next(c for c in CASES if c.behaviour == behaviour)
    write_tree(tmp_path, SENTINEL)
    _write(tmp_path, case)
    before = snapshot(tmp_path / "rules")

    result = run_rulegen("build", *case.argv, cwd=tmp_path)

    assert (result.code, result.err.splitlines()) == (2, list(case.stderr))
    assert "Traceback" not in result.err
    assert snapshot(tmp_path / "rules") == before
