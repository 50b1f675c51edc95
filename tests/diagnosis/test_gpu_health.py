"""The gpu_health diagnosis end to end: one page per faulty GPU that holds the host's others back.

Why: a GPU that throws an XID or runs out of spare memory rows slows everything its host
serves; the latency, queue and KV-cache pages of that host, the per-GPU signal alerts and the
other diagnoses (which would name the disk, the NIC or kernel contention) are all symptoms.
``GpuHealthDegraded`` must carry the host label those alerts carry (so the inhibition's
``equal`` matches), say which GPU and which XID, and read "new XID" and "failed remapping"
exactly as the ``gpu_xid_errors`` and ``gpu_row_remap_failure`` signals do.

Two specs are built once per module as real processes with full validation (promtool checks
the rules and runs every generated test, GpuHealthDegraded's included; amtool checks the
Alertmanager config and runs the routing tests): one with ``host_label: node`` and every
alert the diagnosis explains, one deriving ``host`` with non-default keys. Broken keys are
one-line spec errors.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import CliResult, assert_rejected, run_rulegen, spec_errors, write_tree

from rulegen import gotemplate
from rulegen.catalog import load_catalog
from rulegen.diff.versions import build_version
from rulegen.load import discover

Cli = Callable[..., CliResult]

ROUTING = """
    version: 1
    routing:
      default_receiver: a
      receivers:
        - name: a
          webhook: {url: 'http://sink.internal/hook'}
    """

# Every signal gpu_health explains, and one it does not (disk_utilization: TTFTDiskBound's).
NODE_SPEC = """
    version: 1
    service: infer
    host_label: node
    evaluation_interval: 1m
    selectors:
      node: 'job="node"'
      vllm: 'job="vllm"'
      dcgm: 'job="dcgm"'
    alerts:
      - {signal: ttft_latency, threshold: 500ms, severity: critical}
      - {signal: e2e_latency, threshold: 30s, severity: warning}
      - {signal: itl_latency, threshold: 100ms, severity: warning}
      - {signal: vllm_queue_time, threshold: 5s, severity: warning}
      - {signal: requests_waiting, threshold: 20, severity: warning}
      - {signal: gpu_underutilized, threshold: 50%, severity: info}
      - {signal: kv_cache_usage, threshold: 95%, severity: info}
      - {signal: kv_cache_forecast, threshold: 100%, severity: warning}
      - {signal: vllm_preemptions, threshold: 1, severity: warning}
      - {signal: gpu_xid_errors, threshold: 0, severity: critical}
      - {signal: gpu_row_remap_failure, threshold: 0, severity: critical}
      - {signal: disk_utilization, threshold: 90%, severity: warning}
    diagnoses:
      - kind: ttft_disk_bound
      - kind: gpu_health
      - kind: gpu_kernel_contention
    """

# host derived from instance; every XID counts, few rows, a shorter window and a `for`.
HOST_SPEC = """
    version: 1
    service: infer
    evaluation_interval: 1m
    alerts:
      - {signal: ttft_latency, threshold: 500ms, severity: critical}
      - {signal: gpu_xid_errors, threshold: 0, severity: critical, ignore_xids: ""}
    diagnoses:
      - kind: gpu_health
        ignore_xids: ""
        uncorrectable_rows: 8
        window: 30m
        for: 2m
        labels: {team: gpu}
    """

EXPLAINED_BY_NODE_SPEC = (
    "TTFTLatencyHigh", "RequestLatencyHigh", "InterTokenLatencyHigh", "RequestQueueTimeHigh",
    "RequestQueueBacklog", "GpuUnderutilized", "KVCacheUsageHigh", "KVCacheFullSoon",
    "RequestPreemptionsHigh", "GpuXidError", "GpuRowRemapFailure",
)  # fmt: skip
FAULT = "host_gpu:dcgm_gpu_fault:xid_or_row_remap"

pytestmark = pytest.mark.skipif(
    shutil.which("promtool") is None or shutil.which("amtool") is None,
    reason="needs promtool and amtool",
)


class Built:
    def __init__(self, result: CliResult, root: Path) -> None:
        self.result, self.root = result, root

    def yaml(self, name: str) -> Any:
        return yaml.safe_load((self.root / "rules" / name).read_text())

    def rules(self) -> dict[str, dict[str, Any]]:
        doc = self.yaml("prometheus/infer.rules.yml")
        return {r.get("alert") or r["record"]: r for g in doc["groups"] for r in g["rules"]}

    def checks(self, alert: str) -> list[dict[str, Any]]:
        """The generated alert checks of ``alert``, in file order."""
        return [
            check
            for case in self.yaml("tests/infer.test.yml")["tests"]
            for check in case.get("alert_rule_test", [])
            if check["alertname"] == alert
        ]


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Built]:
    specs = {"node": NODE_SPEC, "host": HOST_SPEC}
    roots = {name: tmp_path_factory.mktemp(name) for name in specs}

    def build(name: str) -> tuple[str, Built]:
        files = {"specs/infer.yaml": specs[name], "specs/routing.yaml": ROUTING}
        root = write_tree(roots[name], files)
        return name, Built(run_rulegen("build", cwd=root), root)

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(build, specs))


@pytest.mark.parametrize("name", ["node", "host"])
@pytest.mark.slow
def test_the_build_passes_full_validation(name: str, builds: dict[str, Built]) -> None:
    result = builds[name].result
    assert result.code == 0, result.err
    out = result.out.splitlines()
    assert "promtool test rules: 1 file(s) passed" in out
    assert any(line.startswith("amtool check-config: alertmanager.yml ok") for line in out)
    assert any(line.startswith("amtool routing tests: ") for line in out)


@pytest.mark.slow
def test_it_holds_back_the_hosts_pages_the_gpu_alerts_and_the_other_diagnoses(
    builds: dict[str, Built],
) -> None:
    """Target: every explained alert of the spec, then the other diagnoses; equal on node.
    DiskUtilizationHigh (a cause of its own) is not a target."""
    rules = builds["node"].yaml("alertmanager/alertmanager.yml")["inhibit_rules"]
    mine = [r for r in rules if r["source_matchers"][0] == 'alertname="GpuHealthDegraded"']
    held = (*EXPLAINED_BY_NODE_SPEC, "TTFTDiskBound", "GpuKernelContention")
    assert mine == [
        {
            "source_matchers": ['alertname="GpuHealthDegraded"', 'service="infer"'],
            "target_matchers": [f'alertname=~"{"|".join(held)}"', 'service="infer"'],
            "equal": ["node"],
        }
    ]
    description = builds["node"].rules()["GpuHealthDegraded"]["annotations"]["description"]
    assert description.endswith(f" Held back for this host while this fires: {', '.join(held)}.")


@pytest.mark.slow
def test_every_held_back_alert_fires_with_the_host_label_in_its_generated_test(
    builds: dict[str, Built],
) -> None:
    """Each explained alert (and each other diagnosis) keeps ``node``: else the inhibition's
    ``equal`` would never match it. promtool passed these expectations."""
    for name in (*EXPLAINED_BY_NODE_SPEC, "TTFTDiskBound", "GpuKernelContention"):
        firing = [a for c in builds["node"].checks(name) for a in c.get("exp_alerts", [])]
        assert firing, name
        assert all(a["exp_labels"].get("node") == "gpu-node-1" for a in firing), name


@pytest.mark.slow
def test_the_recording_reuses_the_signals_logic_with_the_spec_keys(
    builds: dict[str, Built],
) -> None:
    node = builds["node"].rules()[FAULT]["expr"]
    assert "max by (node, gpu, xid, fault) (" in node
    assert 'DCGM_FI_DEV_XID_ERRORS{err_code!~"13|31|43|45|68|109", job="dcgm"}' in node
    assert 'DCGM_FI_DEV_XID_ERRORS{job="dcgm"} offset 1h == DCGM_FI_DEV_XID_ERRORS' in node
    assert ">= bool 512" in node
    assert '"instance"' not in node  # node is kept: no host derived from instance
    host = builds["host"].rules()[FAULT]["expr"]
    assert "err_code!~" not in host  # ignore_xids: "" counts every XID
    assert "offset 30m" in host
    assert ">= bool 8" in host
    assert "max by (host, gpu, xid, fault) (" in host
    alert = builds["host"].rules()["GpuHealthDegraded"]
    assert alert["for"] == "2m"
    assert alert["labels"] == {
        "diagnosis": "gpu_health", "service": "infer", "severity": "critical", "team": "gpu",
    }  # fmt: skip


@pytest.mark.parametrize("name", ["node", "host"])
@pytest.mark.slow
def test_the_generated_test_names_the_gpu_and_the_xid(name: str, builds: dict[str, Built]) -> None:
    """Fires for the new XID (host, gpu, xid) and the two row-remap failures; one evaluation
    earlier nothing; once the XID is one window old only the row-remap alerts."""
    host = "node" if name == "node" else "host"
    checks = builds[name].checks("GpuHealthDegraded")
    assert [len(c.get("exp_alerts", [])) for c in checks] == [0, 3, 3, 2]
    firing = {
        (a["exp_labels"][host], a["exp_labels"]["gpu"], a["exp_labels"].get("xid"))
        for a in checks[1]["exp_alerts"]
    }
    assert firing == {
        ("gpu-node-1", "0", "79"),
        ("gpu-node-2", "1", None),
        ("gpu-node-3", "0", None),
    }
    xid = next(a for a in checks[1]["exp_alerts"] if a["exp_labels"].get("xid"))
    assert xid["exp_annotations"]["summary"] == "GPU 0 on gpu-node-1 is failing: XID 79"
    assert xid["exp_annotations"]["description"].startswith(
        "Evidence on gpu-node-1: GPU 0 reported XID 79 within the last "
    )
    remap = next(a for a in checks[1]["exp_alerts"] if a["exp_labels"][host] == "gpu-node-2")
    assert remap["exp_labels"]["fault"] == "row_remap"
    assert (
        remap["exp_annotations"]["summary"] == "GPU 1 on gpu-node-2 is failing: row remap failure"
    )
    tests = (builds[name].root / "rules/tests/infer.test.yml").read_text()
    # an ignored XID is a silent neighbour only when some XIDs are ignored
    assert ("an ignored XID 43 on GPU 0" in tests) == (name == "node")


def test_if_eq_on_a_label_is_predicted() -> None:
    text = (
        'GPU {{ $labels.gpu }}: {{ if eq $labels.fault "xid" }}XID {{ $value }}'
        "{{ else }}remap{{ end }}."
    )
    assert gotemplate.expand(text, {"gpu": "3", "fault": "xid"}, 79.0) == "GPU 3: XID 79."
    assert gotemplate.expand(text, {"gpu": "3", "fault": "row_remap"}, 1.0) == "GPU 3: remap."
    assert gotemplate.expand(text, {"gpu": "3"}, 1.0) == "GPU 3: remap."


@pytest.mark.parametrize(
    ("keys", "line"),
    [
        (
            "for: 1h",
            "specs/web.yaml:5:10: diagnoses[0].for: must be shorter than the window (1h): an "
            "XID is new for one window only, so the alert could never fire (got 1h)",
        ),
        (
            "uncorrectable_rows: 0",
            "specs/web.yaml:5:25: diagnoses[0].uncorrectable_rows: must be a whole number of "
            "rows, at least 1 (got 0)",
        ),
        (
            "uncorrectable_rows: 2.5",
            "specs/web.yaml:5:25: diagnoses[0].uncorrectable_rows: must be a whole number of "
            "rows, at least 1 (got 2.5)",
        ),
        (
            "window: 2h",
            "specs/web.yaml:5:13: diagnoses[0].window: must be at most 1h (got '2h')",
        ),
    ],
    ids=["for as long as the window", "no rows", "half a row", "a window past 1h"],
)
def test_broken_keys_are_one_line_each(keys: str, line: str, in_tmp: Path, cli: Cli) -> None:
    spec = f"""
        version: 1
        service: web
        diagnoses:
          - kind: gpu_health
            {keys}
        """
    assert_rejected(in_tmp, cli, spec, spec_errors(line))


def test_lint_reports_a_warning_gpu_health_that_holds_back_a_critical_diagnosis(
    in_tmp: Path, cli: Cli
) -> None:
    """label/severity counts the diagnoses it holds back as well as the alerts."""
    write_tree(
        in_tmp,
        {
            "specs/web.yaml": """
                version: 1
                service: web
                diagnoses:
                  - kind: ttft_disk_bound
                  - kind: gpu_health
                    severity: warning
                """
        },
    )
    result = cli("lint")
    severity = [line for line in result.out.splitlines() if "[label/severity]" in line]
    assert severity == [
        "specs/web.yaml:6:15: [label/severity] error: GpuHealthDegraded (warning) holds back "
        "TTFTDiskBound (critical) on its host: while the diagnosis fires, that page is lost; "
        "give the diagnosis severity critical"
    ], result.out + result.err


def test_diff_shows_the_keys_that_decide_a_fault(tmp_path: Path) -> None:
    """``rulegen diff`` facts of a gpu_health alert: its keys, not a threshold it has not."""
    spec = (
        "version: 1\nservice: web\ndiagnoses:\n"
        "  - {kind: gpu_health, uncorrectable_rows: 64, window: 30m}\n"
    )
    write_tree(tmp_path, {"web.yaml": spec})
    version = build_version("current", discover([tmp_path / "web.yaml"]), load_catalog())
    (facts,) = version.facts["web"].alerts.values()
    keys = ("kind", "ignore_xids", "uncorrectable_rows", "window")
    assert {k: facts.fields[k] for k in keys} == {
        "kind": "gpu_health", "ignore_xids": "13|31|43|45|68|109", "uncorrectable_rows": "64",
        "window": "30m",
    }  # fmt: skip


def test_lint_reports_a_spec_label_that_overwrites_the_gpu(in_tmp: Path, cli: Cli) -> None:
    write_tree(
        in_tmp,
        {
            "specs/web.yaml": """
                version: 1
                service: web
                diagnoses:
                  - kind: gpu_health
                    labels: {gpu: all}
                """
        },
    )
    conflicts = [line for line in cli("lint").out.splitlines() if "[label/conflict]" in line]
    assert conflicts == [
        "specs/web.yaml:5:19: [label/conflict] error: GpuHealthDegraded: label 'gpu' overwrites "
        "the gpu the diagnosis names"
    ]
