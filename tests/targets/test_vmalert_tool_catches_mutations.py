"""The VictoriaMetrics target's generated tests run in ``vmalert-tool unittest`` and are sharp
there too: the same mutations that fail the promtool tests (a threshold moved past the firing
or the quiet value, a longer ``for``) fail the vmalert-tool tests, alert by alert.

Why a suite of its own: the vmalert-tool tests are generated with MetricsQL's timings (no
extrapolation: a rate reads its slope from the second sample), so they are other tests than
promtool's, and only their own mutants show that they check anything. vmalert-tool ships
from VictoriaMetrics 1.95 (the forky stack); on bookworm's 1.79 these tests are skipped.
"""

from __future__ import annotations

import re
import shutil
from decimal import Decimal
from pathlib import Path

import pytest
import yaml
from conftest import REPO, example_spec
from support.alert_mutants import DIRECTIONS, NAMES, longer_for, moved_threshold
from support.vmtool import NEEDS_VMALERT_TOOL, run_unittest

from rulegen.build import build
from rulegen.catalog import load_catalog
from rulegen.load import SpecInputs
from rulegen.units import format_duration, literal, parse_duration

pytestmark = [
    pytest.mark.slow,
    NEEDS_VMALERT_TOOL,
]

EXAMPLE = example_spec()
RULES = "victoriametrics/deepseek-v4.rules.yml"
TESTS = "victoriametrics/tests/deepseek-v4.test.yml"


def _write(folder: Path, spec: dict[str, object]) -> None:
    (folder / "spec.yaml").write_text(yaml.safe_dump(spec))
    catalog = load_catalog([REPO / "signals"])
    result = build(SpecInputs((folder / "spec.yaml",), ()), catalog, targets=("victoriametrics",))
    for name, text in result.files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each catalog alert of the example built alone for vmalert (with the example's
    ``targets.victoriametrics.labels``), one vmalert-tool run per alert; and the example's
    diagnoses without its alerts."""
    out: dict[str, Path] = {}
    for index, alert in enumerate(EXAMPLE["alerts"]):
        if alert["signal"] == "custom":
            continue
        folder = tmp_path_factory.mktemp(f"vm{index}")
        spec = {k: v for k, v in EXAMPLE.items() if k not in ("diagnoses", "slos")}
        _write(folder, spec | {"alerts": [alert]})
        rules = yaml.safe_load((folder / RULES).read_text())
        name = [r["alert"] for g in rules["groups"] for r in g["rules"] if "alert" in r][0]
        out[name] = folder
    return out


def _failing(folder: Path, rules_text: str, tmp_path: Path) -> set[str]:
    """The alerts whose checks vmalert-tool reports failed, with ``<failed>`` on a failure."""
    out = tmp_path / "out"
    shutil.copytree(folder, out)
    (out / RULES).write_text(rules_text)
    proc = run_unittest(out, TESTS, timeout=300)
    text = proc.stdout + proc.stderr
    assert "failed to parse" not in text, text
    found = re.findall(r'alertname: ([A-Za-z]+)|ALERTS\{alertname=\\?"([A-Za-z]+)', text)
    failed = proc.returncode != 0 or "FAILED" in text.split()
    return {a or b for a, b in found} | ({"<failed>"} if failed else set())


def test_every_catalog_alert_of_the_example_is_covered(built: dict[str, Path]) -> None:
    assert sorted(built) == sorted(NAMES)


@pytest.mark.parametrize("alert", NAMES)
def test_the_test_passes_and_a_moved_threshold_fails_it(
    alert: str, built: dict[str, Path], tmp_path: Path
) -> None:
    folder = built[alert]
    text = (folder / RULES).read_text()
    assert _failing(folder, text, tmp_path / "ok") == set()
    for direction in DIRECTIONS:
        failing = _failing(folder, moved_threshold(text, direction), tmp_path / direction)
        assert failing == {alert, "<failed>"}, direction


@pytest.mark.parametrize("alert", NAMES)
def test_a_longer_for_fails_the_test(alert: str, built: dict[str, Path], tmp_path: Path) -> None:
    folder = built[alert]
    mutated = longer_for((folder / RULES).read_text())
    assert _failing(folder, mutated, tmp_path) == {alert, "<failed>"}


# --- diagnoses -------------------------------------------------------------------------------

DIAGNOSES = {
    "version": 1,
    "service": "deepseek-v4",
    "evaluation_interval": "1m",
    "targets": {"victoriametrics": {"labels": {"ruler": "vmalert"}}},
    "diagnoses": [
        {"kind": "ttft_disk_bound"},
        {"kind": "throughput_network_bound"},
        {"kind": "gpu_kernel_contention"},
    ],
}
DIAGNOSIS_NAMES = ["GpuKernelContention", "TTFTDiskBound", "ThroughputNetworkBound"]
# an evidence threshold compared in a diagnosis (the `> 0` guards of divisions are not one)
_COMPARISON = re.compile(r" (<=|<|>) ([0-9]*\.?[0-9]+)(?=\n|$)", re.MULTILINE)


@pytest.fixture(scope="module")
def diagnoses(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The three diagnoses for vmalert, with a group label (whose inlined and stored reads
    must still match: the throughput ratio divides the one by the other)."""
    folder = tmp_path_factory.mktemp("vmdiagnoses")
    _write(folder, {**DIAGNOSES, "prometheus": EXAMPLE["prometheus"]})
    return folder


def _diagnosis_block(text: str, name: str) -> tuple[int, int]:
    start = text.index(f"  - alert: {name}\n")
    end = text.find("  - alert: ", start + 1)
    return start, len(text) if end < 0 else end


def _mutants(text: str) -> list[tuple[str, str, str]]:
    """(diagnosis, what changed, mutated file): each evidence threshold moved past the value
    the firing host has (x2 for `>`, as the alerts' suite, x0.8 for `<`), and each `for` longer."""
    out = []
    for name in DIAGNOSIS_NAMES:
        start, end = _diagnosis_block(text, name)
        block = text[start:end]
        for match in _COMPARISON.finditer(block):
            op, value = match.group(1), Decimal(match.group(2))
            if value == 0:
                continue
            moved = value * (Decimal(2) if op == ">" else Decimal("0.8"))
            edited = block[: match.start()] + f" {op} {literal(moved)}" + block[match.end() :]
            out.append((name, f"{op} {value}", text[:start] + edited + text[end:]))
        current = re.search(r"\n    for: (\S+)\n", block)
        assert current, block
        longer = format_duration(parse_duration(current.group(1)) + 60)
        edited = block.replace(f"    for: {current.group(1)}\n", f"    for: {longer}\n", 1)
        out.append((name, f"for {longer}", text[:start] + edited + text[end:]))
    return out


def test_the_diagnosis_tests_pass_and_every_mutant_fails_them(
    diagnoses: Path, tmp_path: Path
) -> None:
    text = (diagnoses / RULES).read_text()
    assert "ruler" in text
    assert "avg_over_time" in text
    assert _failing(diagnoses, text, tmp_path / "ok") == set()
    mutants = _mutants(text)
    assert len(mutants) >= 9
    for index, (name, change, mutated) in enumerate(mutants):
        failing = _failing(diagnoses, mutated, tmp_path / str(index))
        assert failing == {name, "<failed>"}, (name, change)
