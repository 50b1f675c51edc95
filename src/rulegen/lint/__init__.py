"""``rulegen lint``: checks of intent on the specs, offline and against a live Prometheus."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rulegen.catalog import Catalog
from rulegen.lint.checks import LintTarget, lint_offline
from rulegen.lint.findings import Finding
from rulegen.lint.online import TIMEOUT, lint_online
from rulegen.load import display, load_inputs
from rulegen.source.loader import load_file

__all__ = ["Finding", "lint"]


def lint(
    files: Sequence[Path],
    catalog: Catalog,
    prometheus: str | None = None,
    *,
    timeout: float = TIMEOUT,
) -> list[Finding]:
    """Every finding on the spec files (``SpecError`` if a spec does not even build); with
    ``prometheus``, the online checks too (each request ends within ``timeout`` seconds)."""
    loaded = load_inputs(files, catalog)
    positions = {}
    for path in files:
        name = display(path)
        positions[name] = load_file(path, name).positions
    targets = [LintTarget(spec, positions[spec.source]) for spec in loaded.specs]
    findings = lint_offline(targets)
    if prometheus:
        findings += lint_online(targets, prometheus, timeout)
    return sorted(findings)
