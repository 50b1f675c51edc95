"""Diagnoses built end to end: host labels in the rules, inhibitions in Alertmanager, stable bytes.

Why: a diagnosis only holds back the alerts it explains if both carry the same host label.
Without ``host_label`` that label is ``host``, derived from ``instance`` by a ``label_replace``
on the diagnosis recordings AND on every explained alert (and on no other alert); with
``host_label: node`` the relabelled label is kept through every aggregation instead, and no
``label_replace`` is needed. Alertmanager then gets one inhibit rule per diagnosis: the
diagnosis alert as source, the spec's explained alerts (whatever their names) as target,
``equal`` on the host label.

Two specs are built once per module, as real processes with full validation (promtool checks
and runs the generated tests; amtool checks the Alertmanager config), then parsed.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import CliResult, run_rulegen, write_tree

pytestmark = pytest.mark.skipif(
    shutil.which("promtool") is None or shutil.which("amtool") is None,
    reason="needs promtool and amtool",
)

Cli = Callable[..., CliResult]

ROUTING = """
    version: 1
    routing:
      default_receiver: a
      receivers:
        - name: a
          webhook: {url: 'http://sink.internal/hook'}
    """

# host_label: every series carries `node` (relabelled at scrape time). Every catalog signal a
# diagnosis explains is here, so each must keep `node` through its own aggregations.
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
      - {signal: disk_utilization, threshold: 90%, severity: warning}
      - {signal: disk_await, threshold: 5ms, severity: warning}
      - {signal: disk_queue_depth, threshold: 64, severity: warning}
      - {signal: cpu_iowait, threshold: 20%, severity: warning}
      - {signal: network_saturation, threshold: 80%, severity: warning}
      - {signal: network_drops, threshold: 0.1%, severity: warning}
      - {signal: tcp_retransmits, threshold: 1%, severity: warning}
      - {signal: cpu_softirq, threshold: 10%, severity: warning}
      - {signal: gpu_underutilized, threshold: 50%, severity: info}
      - {signal: requests_waiting, threshold: 20, severity: warning}
    diagnoses:
      - kind: ttft_disk_bound
      - kind: throughput_network_bound
      - kind: gpu_kernel_contention
    """

# No host_label: `host` is derived from `instance`. Some alerts are explained (one under a
# custom name), some are not (a catalog alert no diagnosis explains, a custom alert).
HOST_SPEC = """
    version: 1
    service: infer
    evaluation_interval: 1m
    alerts:
      - {signal: ttft_latency, threshold: 500ms, severity: critical}
      - {signal: disk_utilization, threshold: 90%, severity: warning}
      - {signal: network_saturation, threshold: 80%, severity: warning}
      - signal: network_saturation
        name: FrontendNicSaturated
        threshold: 80%
        severity: warning
        matchers: 'device=~"ens.+"'
        link_speed: 25Gbps
      - {signal: gpu_underutilized, threshold: 50%, severity: info}
      - {signal: requests_waiting, threshold: 20, severity: warning}
      - {signal: kv_cache_usage, threshold: 95%, severity: info}
      - {signal: nvme_wear, threshold: 80%, severity: warning}
      - signal: custom
        name: GpuTemperatureHigh
        expr: 'max by (instance, gpu) (DCGM_FI_DEV_GPU_TEMP) > 85'
        severity: warning
        summary: 'GPU {labels.gpu} on {labels.instance} is hot'
        description: 'GPU {labels.gpu} on {labels.instance} is at {value} degrees.'
    diagnoses:
      - kind: ttft_disk_bound
      - kind: throughput_network_bound
      - kind: gpu_kernel_contention
    """

HOST_FROM_INSTANCE = '"host", "$1", "instance", "(.+?)(?::[0-9]+)?"'
DIAGNOSES = ("TTFTDiskBound", "ThroughputNetworkBound", "GpuKernelContention")
EXPLAINED_BY_HOST_SPEC = {
    "TTFTDiskBound": ("TTFTLatencyHigh", "DiskUtilizationHigh"),
    "ThroughputNetworkBound": ("NetworkInterfaceSaturated", "FrontendNicSaturated"),
    "GpuKernelContention": ("GpuUnderutilized", "RequestQueueBacklog"),
}
NOT_EXPLAINED_BY_HOST_SPEC = ("KVCacheUsageHigh", "NvmeWearHigh", "GpuTemperatureHigh")
EXPLAINED_BY_NODE_SPEC = {
    "TTFTDiskBound": (
        "TTFTLatencyHigh", "RequestLatencyHigh", "DiskUtilizationHigh", "DiskAwaitHigh",
        "DiskQueueDepthHigh", "CpuIowaitHigh",
    ),
    "ThroughputNetworkBound": (
        "RequestLatencyHigh", "NetworkInterfaceSaturated", "NetworkReceiveDrops",
        "TcpRetransmitsHigh", "CpuSoftirqHigh",
    ),
    "GpuKernelContention": ("GpuUnderutilized", "RequestQueueBacklog"),
}  # fmt: skip


@dataclass(frozen=True)
class Built:
    """One build: the process result and every file written under the output folder."""

    result: CliResult
    files: Mapping[str, bytes]

    def yaml(self, name: str) -> Any:
        return yaml.safe_load(self.files[name])

    def rules(self) -> dict[str, dict[str, Any]]:
        """Every rule of ``infer.rules.yml`` by its alert or record name."""
        doc = self.yaml("prometheus/infer.rules.yml")
        return {r.get("alert") or r["record"]: r for g in doc["groups"] for r in g["rules"]}

    def group(self, name: str) -> list[dict[str, Any]]:
        doc = self.yaml("prometheus/infer.rules.yml")
        return next(g["rules"] for g in doc["groups"] if g["name"] == name)

    def expected_labels(self) -> dict[str, dict[str, str]]:
        """The labels each generated test expects on the firing alert, by alert name."""
        out: dict[str, dict[str, str]] = {}
        for case in self.yaml("tests/infer.test.yml")["tests"]:
            for check in case.get("alert_rule_test", []):
                for alert in check.get("exp_alerts", []):
                    out[check["alertname"]] = alert["exp_labels"]
        return out

    def inhibit_rules(self) -> list[dict[str, Any]]:
        rules: list[dict[str, Any]] = self.yaml("alertmanager/alertmanager.yml")["inhibit_rules"]
        return rules


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


# name -> (spec, argv, hash seed): the validated builds, and two more of each spec without
# validation under other hash seeds (set or dict order must not leak into the output).
BUILDS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "node": (NODE_SPEC, ("build",), "0"),
    "host": (HOST_SPEC, ("build",), "0"),
    "node again": (NODE_SPEC, ("build", "--no-validate"), "1"),
    "host again": (HOST_SPEC, ("build", "--no-validate"), "2"),
}


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Built]:
    """Every build of the module, two at a time."""

    # The folders are made before the threads start: tmp_path_factory is not thread-safe.
    roots = {name: tmp_path_factory.mktemp("build") for name in BUILDS}

    def build(name: str) -> tuple[str, Built]:
        spec, argv, seed = BUILDS[name]
        files = {"specs/infer.yaml": spec, "specs/routing.yaml": ROUTING}
        root = write_tree(roots[name], files)
        result = run_rulegen(*argv, cwd=root, env={"PYTHONHASHSEED": seed})
        written = _snapshot(root / "rules") if (root / "rules").is_dir() else {}
        return name, Built(result, written)

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(build, BUILDS))


@pytest.mark.parametrize("name", ["node", "host"])
@pytest.mark.slow
def test_the_build_passes_full_validation(name: str, builds: dict[str, Built]) -> None:
    built = builds[name]
    assert built.result.code == 0, built.result.err
    assert built.result.err == ""
    out = built.result.out.splitlines()
    assert "promtool check rules: 1 file(s) ok" in out
    assert "promtool test rules: 1 file(s) passed" in out
    # (amtool 0.27 on: "… ok (and with utf8-strict-mode and classic-mode)")
    assert any(line.startswith("amtool check-config: alertmanager.yml ok") for line in out)
    assert {
        "alertmanager/alertmanager.yml",
        "alertmanager/routing-tests.yml",
        "prometheus/infer.rules.yml",
        "tests/infer.test.yml",
    } <= set(built.files)


# --- (a) host_label: node ------------------------------------------------------------------


@pytest.mark.slow
def test_with_host_label_the_diagnosis_recordings_aggregate_by_it(
    builds: dict[str, Built],
) -> None:
    """Each recording keeps ``node`` (and ``model_name`` for vLLM series) and nothing is
    derived from ``instance``."""
    exprs = {
        r["record"]: r["expr"] for r in builds["node"].group("infer-diagnoses") if "record" in r
    }
    by = {
        name: re.findall(r"\b(?:sum|max|avg) by \(([^)]*)\)", expr) for name, expr in exprs.items()
    }
    assert by == {
        "host_model:vllm_time_to_first_token_seconds:p99_rate5m": ["le, node, model_name"],
        "host:node_disk_io_time_seconds:max_rate5m": ["node"],
        "host_model:vllm_generation_tokens:rate5m": ["node, model_name"],
        "host:node_network_utilization:max_ratio_rate5m": ["node"],
        "host:DCGM_FI_DEV_GPU_UTIL:avg_ratio": ["node"],
        "host:vllm_num_requests_waiting:sum": ["node"],
    }
    rules_text = builds["node"].files["prometheus/infer.rules.yml"].decode()
    assert '"instance", "(.+?)' not in rules_text
    assert '"host"' not in rules_text


@pytest.mark.slow
def test_with_host_label_the_diagnosis_alerts_join_on_it(builds: dict[str, Built]) -> None:
    rules = builds["node"].rules()
    joins = {name: re.findall(r"and on \(([^)]*)\)", rules[name]["expr"]) for name in DIAGNOSES}
    assert joins == {
        "TTFTDiskBound": ["node"],
        "ThroughputNetworkBound": ["node", "node, model_name"],
        "GpuKernelContention": ["node", "node", "node"],
    }


@pytest.mark.slow
def test_with_host_label_explained_alerts_keep_it_without_label_replace(
    builds: dict[str, Built],
) -> None:
    """The catalog's aggregations take ``node`` along (``{{ host_by }}``): the TTFT recording
    of TTFTLatencyHigh aggregates by instance, model_name and node."""
    rules = builds["node"].rules()
    explained = {name for names in EXPLAINED_BY_NODE_SPEC.values() for name in names}
    for name in explained:
        assert "label_replace" not in rules[name]["expr"], name
    ttft = rules["instance_model:vllm_time_to_first_token_seconds:p99_rate5m"]["expr"]
    assert "sum by (le, instance, model_name, node) (" in ttft
    e2e = rules["instance_model:vllm_e2e_request_latency_seconds:p99_rate5m"]["expr"]
    assert "sum by (le, instance, model_name, node) (" in e2e
    gpu = rules["instance:DCGM_FI_DEV_GPU_UTIL:avg_ratio"]["expr"]
    assert gpu.startswith("avg by (instance, node) (")


@pytest.mark.slow
def test_with_host_label_every_explained_alert_fires_with_it_in_its_generated_test(
    builds: dict[str, Built],
) -> None:
    """The inhibition compares ``node``: an explained alert without it would never be held
    back. The generated tests (which promtool passed) prove each one keeps it."""
    expected = builds["node"].expected_labels()
    explained = {name for names in EXPLAINED_BY_NODE_SPEC.values() for name in names}
    for name in sorted(explained | set(DIAGNOSES)):
        assert expected[name].get("node") == "gpu-node-1", (name, expected[name])
        assert "host" not in expected[name], name


# --- (b) default: host derived from instance ---------------------------------------------


@pytest.mark.slow
def test_explained_alerts_are_wrapped_in_the_host_label_replace(builds: dict[str, Built]) -> None:
    rules = builds["host"].rules()
    for name in sorted({n for names in EXPLAINED_BY_HOST_SPEC.values() for n in names}):
        expr = rules[name]["expr"]
        assert expr.startswith("label_replace("), (name, expr)
        assert expr.endswith(f", {HOST_FROM_INSTANCE})"), (name, expr)
        assert expr.count("label_replace(") == 1, (name, expr)


@pytest.mark.slow
def test_alerts_no_diagnosis_explains_are_left_alone(builds: dict[str, Built]) -> None:
    rules = builds["host"].rules()
    expected = builds["host"].expected_labels()
    for name in NOT_EXPLAINED_BY_HOST_SPEC:
        assert "label_replace" not in rules[name]["expr"], name
        # A custom alert has no generated test (its author writes one).
        assert "host" not in expected.get(name, {}), (name, expected[name])


@pytest.mark.slow
def test_without_host_label_every_diagnosis_recording_derives_host(
    builds: dict[str, Built],
) -> None:
    for rule in builds["host"].group("infer-diagnoses"):
        if "record" in rule:
            assert HOST_FROM_INSTANCE in rule["expr"], rule["record"]
            assert " by (le, host, model_name)" in rule["expr"] or re.search(
                r" by \(host(, model_name)?\) \(\n", rule["expr"]
            ), rule["expr"]


@pytest.mark.slow
def test_explained_alerts_fire_with_the_derived_host_in_their_generated_tests(
    builds: dict[str, Built],
) -> None:
    expected = builds["host"].expected_labels()
    for name in sorted({n for names in EXPLAINED_BY_HOST_SPEC.values() for n in names}):
        assert expected[name]["host"] == "gpu-node-1", (name, expected[name])
        # `instance` keeps its port: only the copy in `host` loses it.
        assert expected[name]["instance"].startswith("gpu-node-1:"), name


# --- (c) inhibitions -----------------------------------------------------------------------


def _inhibit(alert: str, explains: tuple[str, ...], host: str) -> dict[str, Any]:
    return {
        "source_matchers": [f'alertname="{alert}"', 'service="infer"'],
        "target_matchers": [f'alertname=~"{"|".join(explains)}"', 'service="infer"'],
        "equal": [host],
    }


@pytest.mark.slow
def test_one_inhibit_rule_per_diagnosis_on_host(builds: dict[str, Built]) -> None:
    """The custom-named FrontendNicSaturated (a network_saturation alert) is a target too."""
    assert builds["host"].inhibit_rules() == [
        _inhibit(name, explains, "host") for name, explains in EXPLAINED_BY_HOST_SPEC.items()
    ]


@pytest.mark.slow
def test_one_inhibit_rule_per_diagnosis_on_the_host_label(builds: dict[str, Built]) -> None:
    assert builds["node"].inhibit_rules() == [
        _inhibit(name, explains, "node") for name, explains in EXPLAINED_BY_NODE_SPEC.items()
    ]


@pytest.mark.parametrize("name", ["node", "host"])
@pytest.mark.slow
def test_the_description_names_the_alerts_the_inhibition_holds_back(
    name: str, builds: dict[str, Built]
) -> None:
    """The on-call reads "Held back for this host: …"; it must be the inhibit rule's list."""
    rules = builds[name].rules()
    for inhibit in builds[name].inhibit_rules():
        alert = inhibit["source_matchers"][0].removeprefix('alertname="').removesuffix('"')
        target = inhibit["target_matchers"][0].removeprefix('alertname=~"').removesuffix('"')
        description = rules[alert]["annotations"]["description"]
        held = description.split(" Held back for this host while this fires: ")[1]
        assert held == target.replace("|", ", ") + ".", alert


def test_a_diagnosis_that_explains_no_alert_gets_no_inhibit_rule(in_tmp: Path, cli: Cli) -> None:
    """An empty target list would be a rule that holds back nothing (or, written as ``=~""``,
    a trap); ThroughputNetworkBound explains none of these alerts."""
    write_tree(
        in_tmp,
        {
            "specs/routing.yaml": ROUTING,
            "specs/infer.yaml": """
                version: 1
                service: infer
                alerts:
                  - {signal: ttft_latency, threshold: 500ms, severity: critical}
                  - {signal: disk_utilization, threshold: 90%, severity: warning}
                  - {signal: gpu_underutilized, threshold: 50%, severity: info}
                diagnoses:
                  - kind: ttft_disk_bound
                  - kind: throughput_network_bound
                  - kind: gpu_kernel_contention
                """,
        },
    )
    result = cli("build", "--no-validate")
    assert result.code == 0, result.err
    config = yaml.safe_load((in_tmp / "rules/alertmanager/alertmanager.yml").read_text())
    assert config["inhibit_rules"] == [
        _inhibit("TTFTDiskBound", ("TTFTLatencyHigh", "DiskUtilizationHigh"), "host"),
        _inhibit("GpuKernelContention", ("GpuUnderutilized",), "host"),
    ]


# --- (d) determinism -----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["node", "host"])
@pytest.mark.slow
def test_two_builds_are_byte_identical(name: str, builds: dict[str, Built]) -> None:
    """Another process, another hash seed, no validation: the same bytes."""
    first, again = builds[name], builds[f"{name} again"]
    assert again.result.code == 0, again.result.err
    assert first.files
    assert again.files == first.files
