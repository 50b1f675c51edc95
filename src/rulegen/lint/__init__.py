"""``rulegen lint``: checks of intent on the specs, offline and against a live Prometheus.

Each check is one module under ``checks/``, registered in ``registry.CHECKS``; findings are
``Diagnostic`` records with the check's id as their code. ``--disable ID`` and a
``# rulegen: disable=ID`` comment in a spec silence a check.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rulegen.errors import Diagnostic, SpecError, UsageError
from rulegen.lint.check import TIMEOUT, Check, Scope, Server
from rulegen.progress import Progress, Silent

if TYPE_CHECKING:
    from rulegen.catalog import Catalog
    from rulegen.lint.registry import CHECKS
    from rulegen.lint.suppress import Suppressions
    from rulegen.source.loader import Positions

__all__ = ["CHECKS", "TIMEOUT", "Check", "exit_code", "lint"]


def __getattr__(name: str) -> Any:
    """``CHECKS``, imported when first asked for: the registry imports every check and the
    spec models behind them, which ``lint --help`` (``TIMEOUT``) does not need."""
    if name == "CHECKS":
        from rulegen.lint.registry import CHECKS

        return CHECKS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def lint(
    files: Sequence[Path],
    catalog: Catalog,
    prometheus: str | None = None,
    *,
    timeout: float = TIMEOUT,
    disable: Collection[str] = (),
    user_tests: Sequence[Path] | None = None,
    progress: Progress | None = None,
) -> list[Diagnostic]:
    """Every finding on the spec files, in file order (``SpecError`` if a spec does not even
    build, or a disable comment names no check); with ``prometheus``, the online checks too
    (each request ends within ``timeout`` seconds). The checks in ``disable`` do not run.
    ``user_tests`` are the user's promtool tests (default: those in the ``tests/`` folder
    beside each spec file, where ``build`` finds them). Each step, and each spec checked, is
    reported on ``progress``."""
    from rulegen.lint.registry import BY_ID, CHECKS
    from rulegen.lint.suppress import unknown
    from rulegen.load import load_inputs
    from rulegen.source.fields import Collector

    steps = progress or Silent()
    bad = unknown(sorted(disable), BY_ID)
    if bad:
        raise UsageError(_unknown_message(bad))
    steps.step("loading specs")
    loaded = load_inputs(files, catalog)
    sources = _sources(files, loaded.positions)
    checks = [c for c in CHECKS if c.id not in disable and (prometheus or not c.online)]
    server = Server(prometheus, timeout) if prometheus and any(c.online for c in checks) else None
    if server is not None:
        from rulegen.validate.server import declared_by, refuse_other_server

        steps.step("asking Prometheus for its version")
        refuse_other_server(declared_by(loaded.specs), server.api)
    for check in checks:
        if server is not None and check.prepare is not None:
            steps.step(f"asking Prometheus for {check.id}")
            check.prepare(server)
    tested = _tested_alerts(files if user_tests is None else None, user_tests or ())
    findings: list[Diagnostic] = []
    steps.step("checking specs", total=len(loaded.specs))
    for spec in loaded.specs:
        positions, suppressions = sources[spec.source]
        collector = Collector(positions)
        for check in checks:
            check.run(Scope(check, spec, collector, server, tested))
        findings += [d for d in collector.diagnostics if not suppressions.silences(d, positions)]
        steps.advance()
    return sorted(findings, key=Diagnostic.sort_key)


def _sources(
    files: Sequence[Path], known: dict[str, Positions]
) -> dict[str, tuple[Positions, Suppressions]]:
    """Each spec file's positions (``known``: those loading found, with the values it
    inherits) and its ``# rulegen: disable=`` comments; ``SpecError`` for a comment naming no
    check."""
    from rulegen.lint.registry import BY_ID
    from rulegen.lint.suppress import scan
    from rulegen.load import display
    from rulegen.source.loader import LoadError, load_text, read_source

    sources: dict[str, tuple[Positions, Suppressions]] = {}
    problems: list[Diagnostic] = []
    for path in files:
        name = display(path)
        try:
            text = read_source(path, name)
            positions = known.get(name) or load_text(text, name).positions
        except LoadError as exc:  # it changed since it was loaded
            raise SpecError([exc.diagnostic]) from None
        suppressions, wrong = scan(name, text, BY_ID)
        sources[name] = (positions, suppressions)
        problems += wrong
    if problems:
        raise SpecError(problems)
    return sources


def _tested_alerts(specs: Sequence[Path] | None, user_tests: Sequence[Path]) -> frozenset[str]:
    """Every ``alertname`` an ``alert_rule_test`` of the user's promtool tests checks (the
    tests are those given, or, for ``specs``, the ``*.yml``/``*.yaml`` in ``tests/`` beside
    each spec file)."""
    from rulegen.load import display, read_user_test
    from rulegen.source.loader import load_text

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
