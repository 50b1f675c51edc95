"""``rulegen --version`` and ``--help`` start without importing the pipeline.

Why a test of imports and not of time: start-up took most of a second because the command
line imported every module (pydantic, Jinja2, the PromQL parser, every feature) before it
parsed an argument. How long that takes depends on the machine, so the timing goal lives in
``benchmarks/``; what makes it slow is an import, which is what this pins. When a test here
fails, ``python -X importtime -m rulegen --version`` shows who imported the module: import
it inside the command that uses it instead.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import REPO

# Third-party packages a command may need, but never the parser (nor ``email``, which
# ``http.client`` and ``importlib.metadata`` bring).
HEAVY = frozenset(
    {"yaml", "jinja2", "promql_parser", "pydantic", "pydantic_core", "grafana_foundation_sdk",
     "jsonschema", "requests", "matplotlib", "email"}
)  # fmt: skip
# The network client and the standard library's modules under it (about 20 ms): only the
# commands that talk to a server (``lint --prometheus``, ``backtest``, ``repair``) load them.
NETWORK = frozenset({"http", "ssl", "rulegen.promapi.client"})

# The only rulegen modules the parser may import: what defines the commands' arguments. A
# module added here must stay light (no import of the pipeline).
STARTUP = frozenset(
    {
        "rulegen", "rulegen.__main__", "rulegen.cli", "rulegen.core", "rulegen.core.diagnostics",
        "rulegen.errors",
        "rulegen.units", "rulegen.promapi", "rulegen.progress", "rulegen.render",
        "rulegen.catalog", "rulegen.catalog.folders", "rulegen.lint", "rulegen.lint.check",
        "rulegen.backtest", "rulegen.backtest.command", "rulegen.diff", "rulegen.diff.command",
        "rulegen.importer", "rulegen.importer.command", "rulegen.repair", "rulegen.repair.command",
    }
)  # fmt: skip

PROBE = """
import json, sys
from rulegen import cli
try:
    cli.run(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)))
"""


def _modules_after(*argv: str) -> list[str]:
    """Every module loaded once ``rulegen ARGV`` has run, in a fresh interpreter."""
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    loaded: list[str] = json.loads(proc.stdout.splitlines()[-1])
    return loaded


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv",
    [
        ["--version"],
        ["--help"],
        ["build", "--help"],
        ["validate", "--help"],
        ["lint", "--help"],
        ["backtest", "--help"],
        ["diff", "--help"],
        ["import", "--help"],
        ["repair", "--help"],
        ["build", "--quiet", "--verbose"],
    ],
    ids=lambda argv: " ".join(argv),
)
def test_the_parser_imports_no_heavy_module(argv: list[str]) -> None:
    loaded = _modules_after(*argv)
    heavy = [m for m in loaded if m.split(".")[0] in HEAVY | NETWORK or m in NETWORK]
    assert heavy == [], f"rulegen {' '.join(argv)} imported {heavy}"
    ours = [m for m in loaded if m.split(".")[0] == "rulegen" and m not in STARTUP]
    assert ours == [], f"rulegen {' '.join(argv)} imported {ours}"


@pytest.mark.slow
def test_a_command_still_imports_what_it_runs() -> None:
    """The probe sees imports: a build with nothing to build loads the pipeline."""
    loaded = _modules_after("validate", "no-such-spec.yaml")
    assert "rulegen.build" in loaded
    assert "pydantic" in loaded


@pytest.mark.slow
def test_a_build_never_loads_the_network_client() -> None:
    """Only ``lint --prometheus``, ``backtest`` and ``repair`` talk to a server."""
    loaded = _modules_after("build", "--no-validate", "--out", "/nonexistent/x", "specs")
    assert "rulegen.build" in loaded
    network = [m for m in loaded if m.split(".")[0] in NETWORK or m in NETWORK]
    assert network == [], network


def test_the_library_api_is_the_functions_after_the_submodules_are_imported() -> None:
    """``rulegen.build`` and ``rulegen.validate`` are functions, as the library API says,
    even though modules of the same names are imported (on first use) behind them."""
    import rulegen
    import rulegen.build
    import rulegen.validate.promtool
    from rulegen.build import BuildResult

    assert rulegen.build is sys.modules["rulegen.build"].build
    assert rulegen.validate is sys.modules["rulegen.build"].validate
    assert rulegen.BuildResult is BuildResult
    assert set(rulegen.__all__) <= set(dir(rulegen))
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = rulegen.nothing
