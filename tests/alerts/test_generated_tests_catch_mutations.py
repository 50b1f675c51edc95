"""The generated promtool tests are sharp: a wrong threshold, `for` or guard makes them fail.

Why: a generated test that passes whatever the rule says proves nothing. Each case edits one
alert of the built example and checks that promtool's failure names exactly that alert.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import ON_PROMETHEUS_2, REPO, example_spec
from support.alert_mutants import NAMES, longer_for, moved_threshold

from rulegen.build import build
from rulegen.catalog import load_catalog
from rulegen.load import SpecInputs

EXAMPLE = example_spec()  # with the keys it inherits from specs/defaults.yaml


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each alert of the example spec built alone, so one promtool run tests one alert."""
    catalog = load_catalog([REPO / "signals"])
    out: dict[str, Path] = {}
    for index, alert in enumerate(EXAMPLE["alerts"]):
        if alert["signal"] == "custom":
            continue
        folder = tmp_path_factory.mktemp(f"alert{index}")
        # the catalog alert alone: no diagnosis wraps it in label_replace or shares its file
        spec = {k: v for k, v in EXAMPLE.items() if k != "diagnoses"} | {"alerts": [alert]}
        (folder / "spec.yaml").write_text(yaml.safe_dump(spec))
        result = build(SpecInputs((folder / "spec.yaml",), ()), catalog)
        for name, text in result.files.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text)
        rule = yaml.safe_load((folder / "prometheus/deepseek-v4.rules.yml").read_text())
        name = [r["alert"] for g in rule["groups"] for r in g["rules"] if "alert" in r][0]
        out[name] = folder
        for kind in NATIVE_KINDS if name in HISTOGRAM_ALERTS else ():
            twin = tmp_path_factory.mktemp(f"alert{index}{kind}")
            native = spec | {"histograms": {"vllm": kind}}
            (twin / "spec.yaml").write_text(yaml.safe_dump(native))
            result = build(SpecInputs((twin / "spec.yaml",), ()), catalog)
            for file, text in result.files.items():
                (twin / file).parent.mkdir(parents=True, exist_ok=True)
                (twin / file).write_text(text)
            out[f"{name}/{kind}"] = twin
    return out


# The histogram alerts' native twins (Prometheus 3): the same alert on the vllm family stored
# as NHCB and as exponential native histograms; the same mutations must fail their tests.
HISTOGRAM_ALERTS = (
    "InterTokenLatencyHigh",
    "RequestLatencyHigh",
    "RequestQueueTimeHigh",
    "TTFTLatencyHigh",
)
NATIVE_KINDS = () if ON_PROMETHEUS_2 else ("nhcb", "native")
TWINS = [f"{name}/{kind}" for name in HISTOGRAM_ALERTS for kind in NATIVE_KINDS]


def _rules(folder: Path) -> str:
    return (folder / "prometheus" / "deepseek-v4.rules.yml").read_text()


def _failing_alerts(folder: Path, rules_text: str, tmp_path: Path) -> set[str]:
    out = tmp_path / "out"
    shutil.copytree(folder, out)
    (out / "prometheus" / "deepseek-v4.rules.yml").write_text(rules_text)
    proc = subprocess.run(
        ["promtool", "test", "rules", "tests/deepseek-v4.test.yml"],
        cwd=out, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode in (0, 1), proc.stderr
    found = re.findall(
        r'alertname: ([A-Za-z]+)|ALERTS\{alertname="([A-Za-z]+)"', proc.stdout + proc.stderr
    )
    return {a or b for a, b in found} | ({"<failed>"} if proc.returncode else set())


def test_every_catalog_alert_of_the_example_is_covered(built: dict[str, Path]) -> None:
    assert sorted(built) == sorted(NAMES + TWINS)


@pytest.mark.parametrize("twin", TWINS)
def test_the_twins_read_native_histograms(twin: str, built: dict[str, Path]) -> None:
    rules, tests = _rules(built[twin]), (built[twin] / "tests/deepseek-v4.test.yml").read_text()
    assert "_bucket" not in rules
    assert ("{{schema:-53 " if twin.endswith("nhcb") else "{{schema:3 ") in tests


@pytest.mark.parametrize("alert", NAMES + TWINS)
@pytest.mark.parametrize(
    "direction",
    ["away", "toward"],
    ids=["threshold beyond the firing value", "threshold past the quiet value"],
)
@pytest.mark.slow
def test_moving_the_threshold_fails_the_test(
    alert: str, direction: str, built: dict[str, Path], tmp_path: Path
) -> None:
    text = _rules(built[alert])
    mutated = moved_threshold(text, direction)
    assert _failing_alerts(built[alert], text, tmp_path / "ok") == set()
    name = alert.split("/")[0]
    assert _failing_alerts(built[alert], mutated, tmp_path / "bad") == {name, "<failed>"}


@pytest.mark.parametrize("alert", NAMES + TWINS)
@pytest.mark.slow
def test_a_longer_for_fails_the_test(alert: str, built: dict[str, Path], tmp_path: Path) -> None:
    mutated = longer_for(_rules(built[alert]))
    assert _failing_alerts(built[alert], mutated, tmp_path) == {alert.split("/")[0], "<failed>"}


@pytest.mark.slow
def test_dropping_the_link_speed_guard_fires_on_a_nic_reporting_speed_0(
    built: dict[str, Path], tmp_path: Path
) -> None:
    folder = built["NetworkInterfaceSaturated"]
    text = _rules(folder)
    mutated = text.replace('job="node"} > 0)', 'job="node"})')
    assert mutated != text
    assert _failing_alerts(folder, mutated, tmp_path) == {"NetworkInterfaceSaturated", "<failed>"}
