"""Loading: spec files → checked, resolved specs, each file on its own, on all cores.

Why its own module: ``rulegen lint`` and the library's ``load_specs`` stop here, and
``build`` reuses the per-file step (loading and rendering a file in the same worker). What
needs every file at once (a service defined twice, a second routing section) is one step
after the per-file work, in file order.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ValidationError

from rulegen.catalog import Catalog
from rulegen.core import diagnostics as codes
from rulegen.errors import Diagnostic, SpecError, UsageError
from rulegen.fanout import fan_out
from rulegen.pipeline.service import ResolvedSpec, resolve_spec
from rulegen.routing.load import LoadedRouting, is_routing_file, load_routing
from rulegen.routing.secrets import url_credentials
from rulegen.source.extends import Vocabulary, extend, is_defaults, looks_like_defaults
from rulegen.source.loader import (
    LoadedDocument,
    LoadError,
    Positions,
    display,
    load_file,
    load_text,
    read_source,
)
from rulegen.source.locate import pydantic_diagnostics
from rulegen.source.salvage import salvage
from rulegen.source.severities import DEFAULT as DEFAULT_SEVERITIES
from rulegen.source.severities import Severities, disagreement
from rulegen.spec.models import CatalogAlert, CustomAlert, SLOSpec, SpecModel, spec_model

__all__ = [
    "Combined", "Loaded", "LoadedFile", "SpecInputs", "combine", "discover", "display",
    "load_inputs", "load_one", "load_specs", "read_user_test", "vocabulary",
]  # fmt: skip


@dataclass(frozen=True)
class SpecInputs:
    """The spec files of a build, the user test files found next to them, and what was
    skipped on the way (``warnings``, one line each, for the CLI to print)."""

    specs: tuple[Path, ...]
    user_tests: tuple[Path, ...]
    warnings: tuple[str, ...] = ()


def _broken_link(path: Path) -> bool:
    """A symbolic link whose target is missing, or that loops back to itself."""
    return path.is_symlink() and not path.exists()


_BROKEN = "broken symbolic link (its target is missing or it loops)"
_DEFAULTS_FILE = (
    "a defaults file (defaults: and no service:) builds nothing by itself; "
    "build the specs that extend it"
)


def discover(paths: Sequence[Path]) -> SpecInputs:
    """Spec files named directly, or every ``*.yaml``/``*.yml`` directly inside a folder.

    A broken symbolic link named on the command line is a usage error; one inside a folder is
    skipped with a warning (never silently: it may be the spec someone meant to build). A
    defaults file (``defaults:`` and no ``service:``, what specs ``extends:``) builds nothing:
    skipped in a folder, skipped with a warning when named (a usage error when it is all).
    """
    specs: list[Path] = []
    user_tests: list[Path] = []
    warnings: list[str] = []
    skipped: list[str] = []
    for path in paths:
        if _broken_link(path):
            raise UsageError(f"{display(path)}: {_BROKEN}")
        if path.is_dir():
            candidates = sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml"))
            warnings.extend(
                f"{display(p)}: skipped: {_BROKEN}" for p in candidates if _broken_link(p)
            )
            found = [p for p in candidates if p.is_file() and not looks_like_defaults(p)]
            if not found:
                raise UsageError(
                    f"{display(path)}: no spec files (*.yaml, *.yml) in this directory"
                )
            specs.extend(found)
            tests = path / "tests"
            if tests.is_dir():
                user_tests.extend(
                    sorted(p for p in tests.iterdir() if p.suffix in (".yaml", ".yml"))
                )
        elif path.is_file() and looks_like_defaults(path):
            skipped.append(display(path))
            warnings.append(f"{display(path)}: skipped: {_DEFAULTS_FILE}")
        elif path.is_file():
            specs.append(path)
        else:
            raise UsageError(f"{display(path)}: no such file or directory")
    if skipped and not specs:
        raise UsageError(f"{', '.join(skipped)}: {_DEFAULTS_FILE}")
    return SpecInputs(tuple(dict.fromkeys(specs)), tuple(user_tests), tuple(warnings))


def read_user_test(path: Path) -> str:
    """A user's promtool test file, checked like a spec (size, UTF-8, depth, tags, aliases,
    a mapping at the top) and returned as written; raises ``SpecError``.

    Why: rulegen copies it into ``rules/tests/`` and the test cache parses it; a file that
    would break either is reported here, at its position, before anything is written.
    """
    shown = display(path)
    try:
        text = read_source(path, shown)
        doc = load_text(text, shown)
    except LoadError as exc:
        raise SpecError([exc.diagnostic]) from None
    if not isinstance(doc.data, dict):
        raise SpecError(
            [
                doc.positions.diag(
                    (), "a promtool test file must be a YAML mapping", code=codes.SPEC_TYPE
                )
            ]
        )
    return text


@dataclass
class Loaded:
    """Every input file, resolved: the service specs and the one routing section."""

    specs: list[ResolvedSpec]
    routing: LoadedRouting | None = None
    # each spec's positions by its file, inherited values where they were written
    positions: dict[str, Positions] = field(default_factory=dict)


def load_specs(files: Sequence[Path], catalog: Catalog) -> list[ResolvedSpec]:
    """Load, check and resolve every service spec (a routing file is checked, then skipped)."""
    return load_inputs(files, catalog).specs


def load_inputs(files: Sequence[Path], catalog: Catalog) -> Loaded:
    """Load, check and resolve every input file; all errors of all files are raised together."""
    found = fan_out(load_one, catalog, files)
    combined = combine(files, found)
    if combined.diagnostics:
        raise SpecError(combined.diagnostics)
    specs = [found[i].resolved for i in combined.accepted]
    positions = {p.file: p for i in combined.accepted if (p := found[i].positions) is not None}
    return Loaded([s for s in specs if s is not None], combined.routing, positions)


@dataclass
class LoadedFile:
    """One input file, loaded on its own (in a worker when there are many)."""

    problems: list[Diagnostic] = field(default_factory=list)
    routing: LoadedDocument | None = None
    service: str | None = None
    positions: Positions | None = None
    resolved: ResolvedSpec | None = None
    resolve_problems: list[Diagnostic] = field(default_factory=list)
    # the defaults files the spec extends, nearest first (its outputs come from them too)
    extends: tuple[Path, ...] = ()
    # the bytes parsed: the spec's, then each of ``extends``' (what the render cache hashes)
    read: tuple[bytes, ...] = ()
    # the severities the spec declares or inherits (checked against the routing file's)
    severities: Severities = DEFAULT_SEVERITIES


def load_one(catalog: Catalog, path: Path) -> LoadedFile:
    """Parse, validate and resolve one file; a routing file is only parsed."""
    try:
        doc = load_file(path, display(path))
    except LoadError as exc:
        return LoadedFile([exc.diagnostic])
    if not isinstance(doc.data, dict):
        return LoadedFile(
            [doc.positions.diag((), "a spec must be a YAML mapping", code=codes.SPEC_TYPE)]
        )
    if is_routing_file(doc.data):
        return LoadedFile(routing=doc)
    if is_defaults(doc.data):  # named in a way discover() did not recognise
        message = f"not a service spec: {_DEFAULTS_FILE}"
        return LoadedFile([doc.positions.diag(("defaults",), message, key=True)])
    extended = extend(doc, path, vocabulary(catalog))
    read = (doc.raw, *extended.read)
    if extended.problems:
        return LoadedFile(extended.problems)
    doc, extends = extended.doc, extended.files
    leaks = url_credentials(doc.data, doc.positions)
    if leaks:  # a runbook URL with a password would be copied into every alert
        return LoadedFile(leaks, extends=extends)
    model = spec_model(catalog)
    try:
        spec = model.model_validate(doc.data)
    except ValidationError as exc:
        problems = pydantic_diagnostics(exc, doc.positions, doc.data, model)
        rest = salvage(model, exc, doc.data, doc.positions)
        if rest is not None:  # the semantic errors of what stands, in the same run
            problems += rest.follow(resolve_spec(rest.model, rest.positions, catalog)[1])
        return LoadedFile(in_file_order(problems, doc.positions.file), extends=extends)
    resolved, problems = resolve_spec(spec, doc.positions, catalog)
    ordered = in_file_order(problems, doc.positions.file)
    severities = resolved.severities if resolved is not None else DEFAULT_SEVERITIES
    return LoadedFile(
        [], None, spec.service, doc.positions, resolved, ordered, extends, read, severities
    )


def in_file_order(problems: Sequence[Diagnostic], file: str) -> list[Diagnostic]:
    """A file's diagnostics by line and column, the way a reader fixes them; those located
    in another file (a defaults file it extends) after its own, in the order found."""

    def place(diagnostic: Diagnostic) -> tuple[int, int, int]:
        own = diagnostic.file == file
        return (0, diagnostic.line, diagnostic.col) if own else (1, 0, 0)

    return sorted(problems, key=place)


_VOCABULARIES: weakref.WeakKeyDictionary[Catalog, Vocabulary] = weakref.WeakKeyDictionary()
# Service-level keys that are not a default: the spec's identity and its entries.
_NOT_DEFAULTS = frozenset(
    {"version", "service", "alerts", "slos", "diagnoses", "recordings", "extends"}
)
# SLO keys that name or define one SLO.
_PER_SLO = frozenset({"name", "sli", "description"})


def vocabulary(catalog: Catalog) -> Vocabulary:
    """What a defaults file may set for this catalog (read from the spec's models)."""
    if catalog not in _VOCABULARIES:
        catalog_alert = _keys(CatalogAlert)
        alert = {
            name: frozenset(catalog_alert | set(signal.params))
            for name, signal in catalog.signals.items()
        }
        alert["custom"] = frozenset(_keys(CustomAlert))
        _VOCABULARIES[catalog] = Vocabulary(
            frozenset(_keys(SpecModel) - _NOT_DEFAULTS), frozenset(_keys(SLOSpec) - _PER_SLO), alert
        )
    return _VOCABULARIES[catalog]


def _keys(model: type[BaseModel]) -> set[str]:
    """A model's keys as a spec writes them (``for``, not ``for_``)."""
    return {f.alias or name for name, f in model.model_fields.items()}


@dataclass
class Combined:
    """The verdict across files: every problem, the routing section, the specs that stand."""

    diagnostics: list[Diagnostic]
    routing: LoadedRouting | None
    accepted: list[int]


def _disagrees(loaded: LoadedFile, routing: Severities) -> Diagnostic | None:
    """A spec whose severities are not the routing file's (or a part of them, in the same
    order, paging alike): an error at its ``severities:``, or at its top for the default."""
    own = loaded.severities
    why = disagreement(own, routing)
    if why is None or loaded.positions is None:
        return None
    if own.declared:
        message = (f"these severities ({own.shown()}) do not fit the routing file's at "
                   f"{routing.where} ({routing.shown()}): {why}")  # fmt: skip
        return loaded.positions.diag(("severities",), message, key=True)
    message = (f"this spec takes the default severities ({own.shown()}), which do not fit the "
               f"routing file's at {routing.where} ({routing.shown()}): {why}; declare its "
               "severities: (here or in the defaults file it extends)")  # fmt: skip
    return loaded.positions.diag((), message)


def combine(files: Sequence[Path], found: Sequence[LoadedFile]) -> Combined:
    """Checks that need every file, in file order: the first definition of a service wins
    (the others are errors, not resolved further), one routing section at most."""
    result = Combined([], None, [])
    services: dict[str, str] = {}
    for index, (path, loaded) in enumerate(zip(files, found, strict=True)):
        result.diagnostics.extend(loaded.problems)
        if loaded.routing is not None:
            section, problems = load_routing(path, loaded.routing, result.routing)
            result.diagnostics.extend(problems)
            result.routing = result.routing or section
        if loaded.service is None or loaded.positions is None:
            continue
        service, positions = loaded.service, loaded.positions
        if service in services:
            message = f"service {service!r} is already defined at {services[service]}"
            result.diagnostics.append(
                positions.diag(("service",), message, code=codes.SPEC_DUPLICATE)
            )
            continue
        line, col = positions.at(("service",))
        services[service] = f"{positions.file}:{line}:{col}"
        result.diagnostics.extend(loaded.resolve_problems)
        if not loaded.resolve_problems:
            result.accepted.append(index)
    if result.routing is not None and result.routing.routing.severities is not None:
        declared = result.routing.routing.severities
        result.diagnostics.extend(
            problem for i in result.accepted if (problem := _disagrees(found[i], declared))
        )
    # a defaults file's own error comes once, however many specs extend it
    result.diagnostics = list(dict.fromkeys(result.diagnostics))
    return result
