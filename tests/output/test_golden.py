"""Golden files: rendered output of small specs, byte for byte (`make update-golden`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import REPO

from rulegen.build import build
from rulegen.catalog import load_catalog
from rulegen.load import discover
from rulegen.pipeline.promtool_runs import run_test_files
from rulegen.progress import Silent

GOLDEN = REPO / "tests" / "golden"
CASES = sorted(p.name for p in GOLDEN.iterdir() if (p / "specs").is_dir())


def _render() -> dict[str, str]:
    catalog = load_catalog()
    return dict(build(discover([Path("specs")]), catalog).files)


def _golden(expected: Path, files: dict[str, str], update: bool) -> dict[str, str]:
    """The golden files under ``expected`` (rewritten from ``files`` first when ``update``)."""
    if update:
        shutil.rmtree(expected, ignore_errors=True)
        for name, text in files.items():
            (expected / name).parent.mkdir(parents=True, exist_ok=True)
            (expected / name).write_text(text, encoding="utf-8")
    return {
        p.relative_to(expected).as_posix(): p.read_text("utf-8")
        for p in sorted(expected.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize("case", CASES)
def test_rendered_output_matches_golden(
    case: str, update_golden: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = GOLDEN / case
    monkeypatch.chdir(folder)
    files = _render()
    on_disk = _golden(folder / "expected", files, update_golden)
    assert sorted(on_disk) == sorted(files), "golden file set differs; run make update-golden"
    for name, text in files.items():
        assert text == on_disk[name], f"{case}/{name} differs; run make update-golden and review"


@pytest.mark.parametrize("case", CASES)
@pytest.mark.slow
def test_golden_output_passes_promtool(case: str, tmp_path: Path) -> None:
    """The golden rules pass ``promtool check rules`` and their generated tests pass as
    ``rulegen build`` runs them: cut into units, each against the rules it can observe
    (docs/testing.md; the SLO mutation suite checks that the cut catches every mutant the
    whole files catch), two at once. Whole, an SLO's history file alone took two minutes of
    one core; cut, its units share both cores and skip the sums no check reads."""
    import subprocess

    expected = GOLDEN / case / "expected"
    out = tmp_path / "out"
    shutil.copytree(expected, out)
    rules = sorted(str(p.relative_to(out)) for p in out.rglob("*.rules.yml"))
    tests = sorted(str(p.relative_to(out)) for p in out.rglob("*.test.yml"))
    proc = subprocess.run(
        ["promtool", "check", "rules", *rules], cwd=out, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = run_test_files(
        out, tests, None, {}, lambda name: float((out / name).stat().st_size), 2, Silent(), "test"
    )
    said = [f"{f.file}: " + "\n".join(f.lines) for f in report.failures]
    assert report.ok, "\n".join([*said, *report.silent])
    assert report.units >= len(tests)


def test_example_targets_match_golden(update_golden: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The example spec's PrometheusRule, Thanos and Mimir files (``--target``), byte for
    byte; its plain rule files are the committed ``rules/`` (checked by the drift test)."""
    repo = REPO
    monkeypatch.chdir(repo)
    result = build(
        discover([Path("specs")]),
        load_catalog([Path("signals")]),
        root=repo,
        targets=("operator", "thanos", "mimir", "victoriametrics"),
    )
    files = {
        name: text
        for name, text in result.files.items()
        if name.split("/")[0] in ("kubernetes", "thanos", "mimir", "victoriametrics")
    }
    on_disk = _golden(GOLDEN / "example-targets" / "expected", files, update_golden)
    assert sorted(on_disk) == [
        "kubernetes/deepseek-v4.yaml",
        "mimir/inference.yaml",
        "thanos/deepseek-v4.rules.yml",
        "victoriametrics/deepseek-v4.rules.yml",
        "victoriametrics/tests/deepseek-v4.slo.availability.history.test.yml",
        "victoriametrics/tests/deepseek-v4.slo.availability.rules.yml",
        "victoriametrics/tests/deepseek-v4.slo.availability.test.yml",
        "victoriametrics/tests/deepseek-v4.slo.goodput.history.test.yml",
        "victoriametrics/tests/deepseek-v4.slo.goodput.rules.yml",
        "victoriametrics/tests/deepseek-v4.slo.goodput.test.yml",
        "victoriametrics/tests/deepseek-v4.slo.itl.history.test.yml",
        "victoriametrics/tests/deepseek-v4.slo.itl.rules.yml",
        "victoriametrics/tests/deepseek-v4.slo.itl.test.yml",
        "victoriametrics/tests/deepseek-v4.slo.ttft.history.test.yml",
        "victoriametrics/tests/deepseek-v4.slo.ttft.rules.yml",
        "victoriametrics/tests/deepseek-v4.slo.ttft.test.yml",
        "victoriametrics/tests/deepseek-v4.test.yml",
    ]
    assert files == on_disk, "example targets differ; run make update-golden and review"
