"""Each vLLM release's metrics, scraped by a real Prometheus: the rules written for a release
read its series, and only the series of the releases that expose the same names.

Three exporters on 127.0.0.1 serve what vLLM 0.6 (the V0 engine), 0.10 and 0.12 expose
(``tests/fixtures/vllm/``, built from each release's metric definitions: names, labels and
bucket bounds), their counters growing with every scrape. One Prometheus scrapes all three
(one job per release, so the ``instance`` label tells them apart). For every vLLM signal of
the catalog, a spec declaring each release (and one declaring none) is built, and every
alert's quantity (its recording's expression, or its own) is evaluated on the server:

- it returns series for the declared release (unless the signal cannot be written for it,
  which the build refuses at the alert);
- it returns series for exactly the releases whose names and buckets are the same as the
  declared one's (``rulegen.catalog.vllm.ERAS``): a rule for 0.6 reads nothing of 0.12's
  renamed metrics and the other way round;
- with no release declared, it returns series for every release that has the signal.

And ``rulegen lint --prometheus`` names the release of the server's series per signal.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
import yaml
from conftest import REPO, run_rulegen, write_tree
from support.exposition import serving
from support.prometheus import NEEDS_PROMETHEUS, PrometheusServer

from rulegen.catalog import load_catalog
from rulegen.catalog.vllm import VllmVersion, eras_of
from rulegen.core import promql

pytestmark = [pytest.mark.slow, NEEDS_PROMETHEUS]

FIXTURES = REPO / "tests" / "fixtures" / "vllm"
RELEASES = ("0.6", "0.10", "0.12")
THRESHOLDS = {"duration": "1s", "percent": "50%", "number": "1", "bandwidth": "1Gbps"}
CATALOG = load_catalog()
SIGNALS = sorted(name for name, s in CATALOG.signals.items() if s.family == "vllm")


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[PrometheusServer, dict[str, str]]]:
    """Prometheus scraping the three releases every second; and instance → release."""
    root = tmp_path_factory.mktemp("releases")
    with ExitStack() as stack:
        targets = {
            release: stack.enter_context(serving((FIXTURES / f"{release}.prom").read_text()))
            for release in RELEASES
        }
        jobs = [
            {"job_name": f"vllm-{release}", "scrape_interval": "1s",
             "static_configs": [{"targets": [target]}]}
            for release, target in targets.items()
        ]  # fmt: skip
        prometheus = PrometheusServer(root / "data", root, interval=1, scrape_configs=jobs)
        prometheus.start()
        stack.callback(prometheus.stop)
        _wait_for_scrapes(prometheus, len(RELEASES))
        yield prometheus, {target: release for release, target in targets.items()}


def _wait_for_scrapes(prometheus: PrometheusServer, jobs: int) -> None:
    """Until every job has 20 s of samples (the rules' shortest windows are 1m: enough
    samples for rate() over what is there)."""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        result = prometheus.query('count_over_time(up{job=~"vllm-.*"}[1m]) >= 20', time.time())
        if len(result["result"]) == jobs:
            return
        time.sleep(1)
    raise AssertionError(f"the exporters were not scraped: {prometheus.log}")


def _spec(release: str | None) -> str:
    alerts = [
        {"signal": name, "severity": "warning",
         "threshold": THRESHOLDS[CATALOG.signals[name].threshold.unit]}
        for name in SIGNALS
    ]  # fmt: skip
    spec: dict[str, object] = {
        "version": 1, "service": "llm", "evaluation_interval": "15s",
        "selectors": {"vllm": 'job=~"vllm-.*"'}, "alerts": alerts,
    }  # fmt: skip
    if release is not None:
        spec["vllm"] = {"version": release}
    return yaml.safe_dump(spec, sort_keys=False)


def _quantities(rules: Path) -> dict[str, str]:
    """Each alert's quantity: its recording's expression, or its own without the comparison."""
    groups = yaml.safe_load((rules / "prometheus" / "llm.rules.yml").read_text())["groups"]
    every = [r for g in groups for r in g["rules"]]
    recorded = {r["record"]: r["expr"] for r in every if "record" in r}
    out = {}
    for rule in every:
        if "alert" not in rule:
            continue
        quantity = re.sub(r"\s*[<>]=? [-+0-9.e()/ ]+$", "", rule["expr"].strip())
        name = re.fullmatch(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\{[^}]*\}", quantity)
        out[rule["alert"]] = (
            recorded[name.group(1)] if name and name.group(1) in recorded else quantity
        )
    return out


def _era(signal: str, release: str) -> object:
    return [e for e in eras_of(signal) if e.since <= VllmVersion.parse(release)][-1]


# What a release exposes beyond its own era's names: a name deprecated in a release is still
# there, beside its successor, until it is hidden (docs/vllm-versions.md). So a rule for 0.6
# reads 0.10's deprecated vllm:gpu_cache_usage_perc too.
STILL_EXPOSED = {
    ("kv_cache_usage", "0.6", "0.10"): "0.10 still exposes vllm:gpu_cache_usage_perc",
    ("kv_cache_forecast", "0.6", "0.10"): "0.10 still exposes vllm:gpu_cache_usage_perc",
}
# Signals whose quantity is empty on a steady workload (the fixtures' gauges are flat): their
# selectors are evaluated instead.
GUARDED = {"kv_cache_forecast": "fires only while usage rises; the fixture's gauge is flat"}


def _same_names(signal: str, one: str, other: str) -> bool:
    """Whether the rule written for release ``one`` reads series release ``other`` exposes:
    the same metric names (bucket bounds do not change which series match), or a name
    ``other`` still exposes after its rename."""
    if not eras_of(signal):
        return True
    names = [getattr(_era(signal, r), "params", {}).get("metric") for r in (one, other)]
    return names[0] == names[1] or (signal, one, other) in STILL_EXPOSED


def _readable(signal: str, release: str) -> bool:
    return not eras_of(signal) or getattr(_era(signal, release), "missing", None) is None


def _read_by(server: PrometheusServer, instances: dict[str, str], expr: str) -> set[str]:
    """The releases whose series the expression returns."""
    result = server.query(expr, time.time())["result"]
    return {instances[r["metric"]["instance"]] for r in result if "instance" in r["metric"]}


@pytest.mark.parametrize("declared", [*RELEASES, None], ids=[*RELEASES, "undeclared"])
def test_the_rules_of_a_release_read_its_series_and_only_those_alike(
    declared: str | None,
    server: tuple[PrometheusServer, dict[str, str]],
    tmp_path: Path,
) -> None:
    prometheus, instances = server
    write_tree(tmp_path, {"specs/llm.yaml": _spec(declared)})
    result = run_rulegen("build", "--no-validate", cwd=tmp_path)
    refused = {name for name in SIGNALS if declared is not None and not _readable(name, declared)}
    if refused:  # the build names each signal it cannot write for the release, at its entry
        assert result.code == 2, result.err
        for name in refused:
            assert f"signal {name} cannot be written for vLLM {declared}" in result.err
        kept = [n for n in SIGNALS if n not in refused]
        spec = yaml.safe_load(_spec(declared))
        spec["alerts"] = [a for a in spec["alerts"] if a["signal"] in kept]
        write_tree(tmp_path, {"specs/llm.yaml": yaml.safe_dump(spec, sort_keys=False)})
        result = run_rulegen("build", "--no-validate", cwd=tmp_path)
    assert result.code == 0, result.err
    quantities = _quantities(tmp_path / "rules")
    seen = {}
    for name in SIGNALS:
        if name in refused:
            continue
        quantity = quantities[CATALOG.signals[name].alert]
        if name in GUARDED:  # each alternative's selectors, all present
            quantity = " or ".join(
                " and on (instance) ".join(
                    f"last_over_time({t}[1m])" for _, t in promql.selectors(operand)
                )
                for operand in promql.alternatives(quantity)
            )
        got = _read_by(prometheus, instances, quantity)
        if declared is None:
            expected = {r for r in RELEASES if _readable(name, r)}
        else:
            expected = {
                r for r in RELEASES if _readable(name, r) and _same_names(name, declared, r)
            }
        seen[name] = (sorted(got), sorted(expected))
    wrong = {name: pair for name, pair in seen.items() if pair[0] != pair[1]}
    assert not wrong, f"(read, expected) releases per signal: {wrong}"


def _lint_spec(release: str | None, job: str) -> str:
    alerts = [
        {"signal": "kv_cache_usage", "threshold": "95%", "severity": "info"},
        {"signal": "itl_latency", "threshold": "100ms", "severity": "warning"},
        {"signal": "ttft_latency", "threshold": "500ms", "severity": "warning"},
        {"signal": "requests_waiting", "threshold": 20, "severity": "warning"},
    ]
    spec: dict[str, object] = {
        "version": 1, "service": "llm", "runbook_url": "https://runbooks.example.com/{alert}",
        "evaluation_interval": "15s", "scrape_interval": "1s",
        "selectors": {"vllm": f'job="{job}"'}, "alerts": alerts,
    }  # fmt: skip
    if release is not None:
        spec["vllm"] = {"version": release}
    return yaml.safe_dump(spec, sort_keys=False)


def test_lint_names_the_release_the_server_runs(
    server: tuple[PrometheusServer, dict[str, str]], tmp_path: Path
) -> None:
    """A spec declaring 0.12 against a 0.10 server: the inter-token alert reads a name 0.10.0
    does not have (an error naming the releases the series match); the KV cache and TTFT
    alerts read names and buckets 0.10 has (no finding); with no version declared, info
    findings name the releases per signal."""
    prometheus, _ = server
    write_tree(tmp_path, {"specs/llm.yaml": _lint_spec("0.12", "vllm-0.10")})
    result = run_rulegen("lint", "--prometheus", prometheus.url, cwd=tmp_path)
    findings = [line for line in result.out.splitlines() if "[vllm/version]" in line]
    assert findings == [
        "specs/llm.yaml:12:3: [vllm/version] error: InterTokenLatencyHigh: vllm.version is "
        "0.12, but the server's series are those of vLLM 0.9-0.10: the rules read "
        "vllm:inter_token_latency_seconds_bucket, buckets [0.01, 0.025, 0.05, 0.075, 0.1, "
        "0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80], which it does not "
        "have as that release exposes it"
    ], result.out + result.err
    write_tree(tmp_path, {"specs/llm.yaml": _lint_spec(None, "vllm-0.6")})
    result = run_rulegen("lint", "--prometheus", prometheus.url, cwd=tmp_path)
    findings = [line for line in result.out.splitlines() if "[vllm/version]" in line]
    assert findings == [
        "specs/llm.yaml:9:3: [vllm/version] info: KVCacheUsageHigh: the server's series are "
        "those of vLLM 0.6-0.9; declare vllm: {version: …} so that the rules read only its names",
        "specs/llm.yaml:12:3: [vllm/version] info: InterTokenLatencyHigh: the server's series "
        "are those of vLLM 0.6-0.8; declare vllm: {version: …} so that the rules read only "
        "its names",
        "specs/llm.yaml:15:3: [vllm/version] info: TTFTLatencyHigh: the server's series are "
        "those of vLLM 0.6-0.8; declare vllm: {version: …} so that the rules read only its names",
    ], result.out + result.err
