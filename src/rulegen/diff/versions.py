"""One version of the specs built in memory, from the working tree, a git revision or a folder;
its errors name the version.

Why name the version: the same spec file usually exists in both versions, and
``specs/a.yaml:3:5: alerts[0].threshold: …`` alone does not say whether the edit or the base
is broken. Each error line starts with ``base (HEAD): `` or ``current: `` and is otherwise
the line ``rulegen build`` prints, with the file named as in the repository (never the
temporary copy's path).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from rulegen.build import BuildResult, build
from rulegen.catalog import Catalog, load_catalog
from rulegen.catalog import folders as signal_folders
from rulegen.core.diagnostics import Diagnostic, printable
from rulegen.diff.checkout import SPEC_SUFFIXES, Checkout, Repository, Runner, run_git
from rulegen.diff.facts import ServiceFacts, version_facts
from rulegen.errors import SpecError, UsageError
from rulegen.load import SpecInputs, discover, display, load_inputs

CURRENT = "current"


@dataclass(frozen=True)
class VersionDiagnostic(Diagnostic):
    """A diagnostic of one version of the specs: its line starts with the version."""

    version: str = ""

    def render(self) -> str:
        """``base (HEAD): FILE:LINE:COL: field.path: message``."""
        return f"{printable(self.version)}: {super().render()}"

    def as_dict(self) -> dict[str, object]:
        """The JSON object, with the version."""
        return {**super().as_dict(), "version": self.version}


class VersionErrors(SpecError):
    """Spec errors of one or both versions: the base's first, each version's in file order."""

    def __init__(self, diagnostics: Sequence[Diagnostic]) -> None:
        super().__init__(diagnostics)
        self.diagnostics = list(diagnostics)

    def __reduce__(self) -> tuple[type[VersionErrors], tuple[list[Diagnostic]]]:
        return (VersionErrors, (self.diagnostics,))


def _same(text: str) -> str:
    return text


@contextmanager
def errors_of(label: str, shown: Callable[[str], str] = _same) -> Iterator[None]:
    """Name the version in the spec and usage errors raised inside (paths as ``shown``)."""
    try:
        yield
    except SpecError as exc:
        named = [
            VersionDiagnostic(
                shown(d.file), d.line, d.col, d.path, shown(d.message), d.code, d.severity,
                shown(d.hint), version=label,
            )
            for d in exc.diagnostics
        ]  # fmt: skip
        raise VersionErrors(named) from None
    except UsageError as exc:
        raise UsageError(f"{label}: {shown(str(exc))}") from None


@dataclass
class Version:
    """One version of the specs: its build (what a backtest replays) and its facts."""

    label: str
    result: BuildResult
    facts: dict[str, ServiceFacts]
    warnings: list[str] = field(default_factory=list)


def build_version(
    label: str, inputs: SpecInputs, catalog: Catalog, shown: Callable[[str], str] = _same
) -> Version:
    """Build the specs in memory (no promtool, nothing written) and gather their facts.

    Your promtool tests (``specs/tests/``) are left out: they are not part of what a diff
    compares.
    """
    warnings = [f"{label}: {shown(w)}" for w in inputs.warnings]
    if not inputs.specs:
        return Version(label, BuildResult([]), {}, warnings)
    with errors_of(label, shown):
        result = build(replace(inputs, user_tests=()), catalog)
        loaded = load_inputs(inputs.specs, catalog)
    routing = loaded.routing.routing if loaded.routing is not None else None
    facts = version_facts(result.services, loaded.specs, routing)
    return Version(label, result, facts, warnings)


def _has_specs(folder: Path) -> bool:
    return any(p.suffix in SPEC_SUFFIXES for p in folder.iterdir())


def folder_version(folder: Path, catalog: Catalog) -> Version:
    """``--base-dir DIR``: the specs directly in ``DIR`` (none: every alert is added), with
    the current version's signals."""
    label = f"base ({display(folder)})"
    if not folder.is_dir():
        raise UsageError(f"--base-dir {display(folder)}: not a directory")
    inputs = discover([folder]) if _has_specs(folder) else SpecInputs((), ())
    return build_version(label, inputs, catalog)


def git_version(
    rev: str,
    paths: Sequence[Path],
    folders: Sequence[Path] | None,
    into: Path,
    runner: Runner = run_git,
) -> Version:
    """``--base REV``: the same PATHs and signals folders as they were in commit ``REV``,
    copied into ``into`` and built there. A PATH that did not exist then holds no specs (its
    alerts are added); a signals folder outside the repository is the same in both versions.
    """
    repository = Repository(Path.cwd(), rev, runner)
    checkout = Checkout(repository, into, f"base ({rev})")
    roots: list[Path] = []
    for path in paths:
        name = repository.relative(path)
        if name is None:
            raise UsageError(
                f"{display(path)}: outside the git repository at {repository.top}; --base reads "
                "the specs from git (compare with a folder instead: --base-dir DIR)"
            )
        if checkout.copy_specs(name):
            roots.append(checkout.place(name))
    checkout.copy_routing_bases(sorted(checkout.written))
    checkout.copy_defaults(sorted(checkout.written))
    chosen = _folders(repository, checkout, folders)
    with errors_of(checkout.label, checkout.shown):
        catalog = load_catalog(chosen)
        inputs = discover(roots) if roots else SpecInputs((), ())
    version = build_version(checkout.label, inputs, catalog, checkout.shown)
    version.warnings[:0] = checkout.warnings
    return version


def _folders(
    repository: Repository, checkout: Checkout, folders: Sequence[Path] | None
) -> list[Path]:
    """The signals folders at the revision: those named, or the default one as it was."""
    if folders is None:
        for default in (signal_folders.DEFAULT, signal_folders.OLD_DEFAULT):
            name = repository.relative(default)
            if name is not None and checkout.copy_folder(name):
                return [checkout.place(name)]
        return []
    out = []
    for folder in folders:
        name = repository.relative(folder)
        if name is None:
            out.append(folder)
        elif checkout.copy_folder(name):
            out.append(checkout.place(name))
    return out


def raise_together(failures: Sequence[SpecError | None]) -> None:
    """Raise the spec errors of both versions as one, in the order given (none: return)."""
    diagnostics = [d for failure in failures if failure is not None for d in failure.diagnostics]
    if diagnostics:
        raise VersionErrors(diagnostics)
