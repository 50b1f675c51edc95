"""``rulegen lint``: checks of intent on the specs, offline and against a live Prometheus.

Each check is one module under ``checks/``, registered in ``registry.CHECKS``; findings are
``Diagnostic`` records with the check's id as their code. ``--disable ID`` and a
``# rulegen: disable=ID`` comment in a spec silence a check.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path

from rulegen.catalog import Catalog
from rulegen.errors import Diagnostic, SpecError, UsageError
from rulegen.lint.check import TIMEOUT, Check, Scope, Server
from rulegen.lint.registry import BY_ID, CHECKS
from rulegen.lint.suppress import Suppressions, scan, unknown
from rulegen.load import display, load_inputs, read_user_test
from rulegen.source.fields import Collector
from rulegen.source.loader import LoadError, Positions, load_text, read_source

__all__ = ["CHECKS", "TIMEOUT", "Check", "exit_code", "lint"]


def lint(
    files: Sequence[Path],
    catalog: Catalog,
    prometheus: str | None = None,
    *,
    timeout: float = TIMEOUT,
    disable: Collection[str] = (),
    user_tests: Sequence[Path] | None = None,
) -> list[Diagnostic]:
    """Every finding on the spec files, in file order (``SpecError`` if a spec does not even
    build, or a disable comment names no check); with ``prometheus``, the online checks too
    (each request ends within ``timeout`` seconds). The checks in ``disable`` do not run.
    ``user_tests`` are the user's promtool tests (default: those in the ``tests/`` folder
    beside each spec file, where ``build`` finds them)."""
    bad = unknown(sorted(disable), BY_ID)
    if bad:
        raise UsageError(_unknown_message(bad))
    loaded = load_inputs(files, catalog)
    sources: dict[str, tuple[Positions, Suppressions]] = {}
    problems: list[Diagnostic] = []
    for path in files:
        name = display(path)
        try:
            text = read_source(path, name)
            # a spec's own positions, with those of the values it inherits (extends:)
            positions = loaded.positions.get(name) or load_text(text, name).positions
        except LoadError as exc:  # it changed since it was loaded
            raise SpecError([exc.diagnostic]) from None
        suppressions, wrong = scan(name, text, BY_ID)
        sources[name] = (positions, suppressions)
        problems += wrong
    if problems:
        raise SpecError(problems)
    checks = [c for c in CHECKS if c.id not in disable and (prometheus or not c.online)]
    server = Server(prometheus, timeout) if prometheus and any(c.online for c in checks) else None
    for check in checks:
        if server is not None and check.prepare is not None:
            check.prepare(server)
    tested = _tested_alerts(files if user_tests is None else None, user_tests or ())
    findings: list[Diagnostic] = []
    for spec in loaded.specs:
        positions, suppressions = sources[spec.source]
        collector = Collector(positions)
        for check in checks:
            check.run(Scope(check, spec, collector, server, tested))
        findings += [d for d in collector.diagnostics if not suppressions.silences(d, positions)]
    return sorted(findings, key=Diagnostic.sort_key)


def _tested_alerts(specs: Sequence[Path] | None, user_tests: Sequence[Path]) -> frozenset[str]:
    """Every ``alertname`` an ``alert_rule_test`` of the user's promtool tests checks (the
    tests are those given, or, for ``specs``, the ``*.yml``/``*.yaml`` in ``tests/`` beside
    each spec file)."""
    paths = list(user_tests)
    for folder in dict.fromkeys(p.parent / "tests" for p in specs or ()):
        if folder.is_dir():
            paths += sorted(p for p in folder.iterdir() if p.suffix in (".yaml", ".yml"))
    names: set[str] = set()
    for path in dict.fromkeys(paths):
        data = load_text(read_user_test(path), display(path)).data
        for case in data.get("tests") or () if isinstance(data, dict) else ():
            for check in case.get("alert_rule_test") or () if isinstance(case, dict) else ():
                if isinstance(check, dict) and isinstance(check.get("alertname"), str):
                    names.add(check["alertname"])
    return frozenset(names)


def _unknown_message(ids: Sequence[str]) -> str:
    shown = ", ".join(repr(i) for i in ids)
    return f"lint: --disable: unknown check {shown} (rulegen lint --list shows the checks)"


def exit_code(findings: Sequence[Diagnostic]) -> int:
    """1 when any finding is an error, else 0 (warnings and infos do not fail CI)."""
    return 1 if any(f.severity == "error" for f in findings) else 0
