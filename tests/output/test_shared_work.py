"""Work a fleet's services share gives each service the files it gets alone.

Why: a worker renders hundreds of services one after the other and remembers what depends
only on numbers (the SLO tests' simulations and series, the scrape-gap model, the diagnosis
readings, the forecast's timing, scalar renderings), keyed by every input it reads. A key
missing one input would hand a service another's numbers. Each variant of the example below
changes one such input; rendered after the others in one process (every cache warm), its
files must be those of a ``rulegen build`` that renders it alone in a fresh process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import EXAMPLE_DEFAULTS, EXAMPLE_SPEC, REPO

from rulegen.build import build
from rulegen.catalog import load_catalog
from rulegen.load import discover

EXAMPLE = EXAMPLE_SPEC.read_text()
# (what the variant changes, the text replaced, its replacement)
VARIANTS = [
    ("an SLO objective", "    objective: 99.9%", "    objective: 99.5%"),
    ("the forecast's threshold", "threshold: 98%  ", "threshold: 97%  "),
    ("a diagnosis threshold", "    ttft: 500ms", "    ttft: 400ms"),
    ("Prometheus 2.x", "version: 1\n", 'version: 1\nprometheus: {version: "2.42"}\n'),
]


def _spec(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True)
    (folder / EXAMPLE_DEFAULTS.name).write_text(EXAMPLE_DEFAULTS.read_text())
    (folder / "svc.yaml").write_text(text)
    return folder


def _alone(folder: Path) -> dict[str, str]:
    """The files of the spec in ``folder``, rendered alone by a fresh ``rulegen`` process."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    out = folder.parent / f"{folder.name}-out"
    subprocess.run(
        [sys.executable, "-m", "rulegen", "build", "--no-validate", "--signals",
         str(REPO / "signals"), "--out", str(out), str(folder)],
        cwd=folder.parent, env=env, check=True, capture_output=True,
    )  # fmt: skip
    return {
        p.relative_to(out).as_posix(): p.read_text()
        for p in sorted(out.rglob("*"))
        if p.is_file() and p.name != ".rulegen-manifest.json"
    }


@pytest.mark.slow
def test_each_variant_renders_after_the_others_as_it_does_alone(tmp_path: Path) -> None:
    catalog = load_catalog([REPO / "signals"])
    build(discover([_spec(tmp_path / "base", EXAMPLE)]), catalog, root=tmp_path, jobs=1)
    for index, (what, old, new) in enumerate(VARIANTS):
        assert old in EXAMPLE, what
        folder = _spec(tmp_path / f"variant{index}", EXAMPLE.replace(old, new, 1))
        result = build(discover([folder]), catalog, root=tmp_path, jobs=1)
        assert dict(result.files) == _alone(folder), what
