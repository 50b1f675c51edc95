"""Legal but unusual specs build, and their generated promtool tests pass.

Why: each case is a spec a reviewer found that rulegen once rejected wrongly or turned into a
generated test that failed (or proved nothing). The full build runs promtool.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from conftest import REPO, CliResult, write_tree

Cli = Callable[..., CliResult]

HEAD = "version: 1\nservice: web\nevaluation_interval: 15s\nalerts:\n"

CASES = {
    "a threshold whose test value is a 4-digit rounding tie (5.005ms)": (
        "  - {signal: disk_await, threshold: 5.005ms, severity: warning}\n"
        "  - {signal: tcp_retransmits, threshold: 7.005%, severity: warning}\n"
    ),
    "ratio thresholds near 100% whose half-way test value is a rounding tie (94.05%)": (
        "  - {signal: disk_utilization, threshold: 94.05%, severity: warning}\n"
        "  - {signal: kv_cache_usage, threshold: 92.15%, severity: warning}\n"
        "  - {signal: disk_utilization, name: DiskBusy, threshold: 90.25%, severity: info}\n"
    ),
    "a whole-second latency threshold (humanizeDuration truncates seconds)": (
        "  - {signal: weight_loading_latency, threshold: 60s, severity: warning}\n"
    ),
    "a matcher on a label the expression averages away (cpu)": (
        "  - {signal: cpu_iowait, threshold: 20%, severity: warning, matchers: 'cpu=\"0\"'}\n"
    ),
    "a positive and a negative matcher on one label": (
        "  - {signal: disk_await, threshold: 5ms, severity: warning,\n"
        '     matchers: \'device=~"nvme.+", device!="nvme0n1"\'}\n'
    ),
    "a regex with a repetition count in braces": (
        "  - {signal: disk_await, threshold: 5ms, severity: warning,\n"
        "     matchers: 'device=~\"nvme[0-9]{1,2}n1\"'}\n"
    ),
    "a regex matcher on the instance label the test varies": (
        "  - {signal: disk_await, threshold: 5ms, severity: warning,\n"
        "     matchers: 'instance=~\"10\\\\.0\\\\.0\\\\..*\"'}\n"
    ),
    "an equality matcher on the gRPC method the test varies": (
        "  - {signal: grpc_errors, threshold: 1%, severity: critical,\n"
        "     matchers: 'grpc_method=\"Predict\"'}\n"
    ),
    "gRPC error codes overridden to codes the recipe did not hard-code": (
        "  - {signal: grpc_errors, threshold: 1%, severity: critical, codes: 'Internal|DataLoss'}\n"
        "  - {signal: grpc_errors, name: GrpcNotFound, threshold: 1%, severity: info,\n"
        "     codes: 'Unavailable|NotFound'}\n"
    ),
    "virtual devices overridden without veth": (
        "  - {signal: network_saturation, threshold: 80%, severity: warning, link_speed: 25Gbps,\n"
        "     virtual_devices: 'lo|docker.*|cni.*'}\n"
    ),
    "RE2 POSIX classes and a negated class in matchers": (
        "  - {signal: disk_await, threshold: 5ms, severity: warning,\n"
        "     matchers: 'device=~\"[[:alpha:]]+[[:digit:]]n1\"'}\n"
        "  - {signal: disk_utilization, threshold: 90%, severity: warning,\n"
        "     matchers: 'device=~\"[^l]oop.*\"'}\n"
    ),
    "three alerts of one signal whose names snake-case alike": (
        "  - {signal: disk_await, threshold: 5ms, severity: warning}\n"
        "  - {signal: disk_await, name: nvmeAwait, threshold: 5ms, severity: warning,\n"
        "     matchers: 'device=~\"nvme.+\"'}\n"
        "  - {signal: disk_await, name: nvme_await, threshold: 5ms, severity: warning,\n"
        "     matchers: 'device=~\"sd.+\"'}\n"
    ),
    "a very large count threshold": (
        "  - {signal: requests_waiting, threshold: 999999999999999, severity: warning}\n"
    ),
}


@pytest.mark.parametrize("alerts", list(CASES.values()), ids=list(CASES))
@pytest.mark.slow
def test_legal_spec_builds_and_its_generated_test_passes(
    alerts: str, in_tmp: Path, cli: Cli
) -> None:
    write_tree(in_tmp, {"specs/web.yaml": HEAD + alerts})
    result = cli("build")
    assert result.code == 0, result.err
    assert "promtool test rules: 1 file(s) passed" in result.out


def test_same_named_alerts_get_distinct_recordings(in_tmp: Path, cli: Cli) -> None:
    write_tree(
        in_tmp,
        {"specs/web.yaml": HEAD + CASES["three alerts of one signal whose names snake-case alike"]},
    )
    assert cli("build", "--no-validate").code == 0
    rules = yaml.safe_load((in_tmp / "rules/prometheus/web.rules.yml").read_text())
    records = [r["record"] for g in rules["groups"] for r in g["rules"] if "record" in r]
    assert len(records) == len(set(records)) == 3


@pytest.mark.slow
def test_two_services_never_read_each_others_recordings(in_tmp: Path, cli: Cli) -> None:
    """Both rule files loaded together, as Prometheus does: svc-a only alerts on its own hosts."""
    spec = (
        "version: 1\nservice: {svc}\nselectors: {{node: 'job=\"{job}\"'}}\nalerts:\n"
        "  - {{signal: disk_await, threshold: {t}, severity: warning, for: 0s}}\n"
    )
    write_tree(
        in_tmp,
        {
            "specs/a.yaml": spec.format(svc="svc-a", job="node-a", t="5ms"),
            "specs/b.yaml": spec.format(svc="svc-b", job="node-b", t="50ms"),
        },
    )
    assert cli("build").code == 0
    both = {
        "rule_files": ["../prometheus/svc-a.rules.yml", "../prometheus/svc-b.rules.yml"],
        "evaluation_interval": "30s",
        "tests": [
            {
                "interval": "15s",
                "input_series": [
                    {"series": f'{m}{{device="sda",instance="b1",job="node-b"}}', "values": v}
                    for m, v in (
                        ("node_disk_reads_completed_total", "0+150x20"),
                        ("node_disk_writes_completed_total", "0+0x20"),
                        ("node_disk_read_time_seconds_total", "0+3x20"),  # 20 ms await
                        ("node_disk_write_time_seconds_total", "0+0x20"),
                    )
                ],
                "alert_rule_test": [
                    {"eval_time": "3m", "alertname": "DiskAwaitHigh", "exp_alerts": []}
                ],
            }
        ],
    }
    (in_tmp / "rules/tests/both.yml").write_text(yaml.safe_dump(both))
    promtool = shutil.which("promtool") or "promtool"
    proc = subprocess.run(
        [promtool, "test", "rules", "tests/both.yml"],
        cwd=in_tmp / "rules", capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize(
    ("alert", "message"),
    [
        (
            "{signal: nvlink_utilization, threshold: 90%, severity: info, bandwidth: 0}",
            "specs/web.yaml:5:77: alerts[0].bandwidth: must be above 0 (got 0)",
        ),
        (
            "{signal: network_saturation, threshold: 80%, severity: info, link_speed: 0}",
            "specs/web.yaml:5:78: alerts[0].link_speed: must be above 0 (got 0)",
        ),
    ],
    ids=["a zero NVLink bandwidth is rejected", "a zero link speed is rejected"],
)
def test_zero_capacity_is_rejected(alert: str, message: str, in_tmp: Path, cli: Cli) -> None:
    write_tree(in_tmp, {"specs/web.yaml": HEAD + "  - " + alert + "\n"})
    result = cli("build", "--signals", str(REPO / "signals"))
    assert result.code == 2
    assert result.err.splitlines()[0] == message
