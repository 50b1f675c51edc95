"""The signal catalog: built-in definitions shipped in the package plus a team's own.

Why: signals are data (a small YAML definition with a Jinja2 PromQL template), so a platform
team adds one in ``signals/`` without forking rulegen.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rulegen.errors import Diagnostic, SpecError

if TYPE_CHECKING:
    from rulegen.catalog.definition import SignalDef
    from rulegen.source.loader import Positions

FAMILIES = ("node", "vllm", "dcgm", "grpc", "smartctl", "weights")
# How a family's metric names start, for a metric no signal names (an SLI's counters).
FAMILY_PREFIXES = {
    "node": ("node_",),
    "vllm": ("vllm:",),
    "dcgm": ("DCGM_",),
    "grpc": ("grpc_",),
    "smartctl": ("smartctl_",),
}

__all__ = ["FAMILIES", "Catalog", "SignalDef", "load_catalog"]


@dataclass(frozen=True, eq=False)
class Catalog:
    """Every known signal by name.

    ``fingerprint``: the hash of the definitions' file names and bytes (what a render cache
    keys on; empty when unknown, e.g. a catalog made in code, which caches nothing).
    """

    signals: Mapping[str, SignalDef]
    fingerprint: str = ""

    @property
    def families(self) -> tuple[str, ...]:
        """Exporter families a spec's ``selectors:`` may name."""
        extra = sorted({s.family for s in self.signals.values()} - set(FAMILIES))
        return (*FAMILIES, *extra)

    def family_of(self, metric: str) -> str | None:
        """The exporter family ``metric`` comes from: the family of a signal whose ``metric``
        parameter defaults to it, else the family whose prefix it has (``vllm:``, ``node_``)."""
        for signal in self.signals.values():
            param = signal.params.get("metric")
            if param is not None and param.default == metric:
                return signal.family
        for family, prefixes in FAMILY_PREFIXES.items():
            if metric.startswith(prefixes):
                return family
        return None

    def histogram_buckets(self, metric: str) -> list[Decimal] | None:
        """The bucket bounds a catalog signal declares for histogram ``metric``, if any."""
        for signal in self.signals.values():
            name, buckets = signal.params.get("metric"), signal.params.get("buckets")
            if name is not None and buckets is not None and name.default == metric:
                return [Decimal(str(b)) for b in buckets.default]
        return None


def __getattr__(name: str) -> Any:
    """``SignalDef``, imported when first asked for: it brings pydantic and Jinja2, which
    ``folders`` (the command line's ``--signals``) does not need."""
    if name == "SignalDef":
        from rulegen.catalog.definition import SignalDef

        return SignalDef
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Catalogs loaded in this process, by fingerprint and the files' names as shown (a definition
# knows its file, for messages; the fingerprint leaves the folder out): a process that builds
# many times (a test suite, a fleet's diff of two versions) parses and validates each
# definition once, and gets the same object, so the spec model built for it (``spec_model``)
# is reused too.
_LOADED: dict[tuple[str, tuple[str, ...]], Catalog] = {}
_LOADED_MAX = 8
_LOADED_LOCK = threading.Lock()  # builds may run in threads of one process (the tests do)


def load_catalog(extra_dirs: Iterable[Path] = ()) -> Catalog:
    """Load built-in signals, then every ``*.yaml``/``*.yml`` of ``extra_dirs``."""
    sources = [*_builtin_sources(), *_own_sources(extra_dirs)]
    digest = hashlib.sha256()
    for source in sources:
        digest.update(source.fingerprint_part)
    fingerprint = digest.hexdigest()
    key = (fingerprint, tuple(source.display for source in sources))
    with _LOADED_LOCK:
        known = _LOADED.get(key)
    if known is not None:
        return known
    signals: dict[str, SignalDef] = {}
    diagnostics: list[Diagnostic] = []
    for source in sources:
        _add(signals, diagnostics, _definition(source, diagnostics))
    if diagnostics:
        raise SpecError(diagnostics)
    catalog = Catalog(signals, fingerprint)
    with _LOADED_LOCK:
        if len(_LOADED) >= _LOADED_MAX:
            del _LOADED[next(iter(_LOADED))]
        return _LOADED.setdefault(key, catalog)


@dataclass(frozen=True)
class _Source:
    """One definition file as read (once: what is hashed is what is parsed): its text, or
    why it cannot be read; ``own`` for a team's file, whose templates are tried first."""

    display: str
    text: str  # "" when ``problem`` says why it cannot be read
    problem: Diagnostic | None
    fingerprint_part: bytes
    own: bool


def _builtin_sources() -> list[_Source]:
    builtin = resources.files("rulegen.catalog").joinpath("signals")
    sources = []
    for entry in sorted(builtin.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".yaml"):
            text = entry.read_text("utf-8")
            part = f"<builtin>/{entry.name}\0{text}\0".encode()
            sources.append(_Source(f"<builtin>/{entry.name}", text, None, part, own=False))
    return sources


def _own_sources(extra_dirs: Iterable[Path]) -> list[_Source]:
    from rulegen.source.loader import LoadError, decode_source, read_raw

    sources = []
    for index, folder in enumerate(extra_dirs):
        for path in sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")]):
            display, head = str(path), f"{index}/{path.name}\0".encode()
            try:
                raw = read_raw(path, display)
            except LoadError as exc:
                part = head + b"\0unreadable\0"
                sources.append(_Source(display, "", exc.diagnostic, part, own=True))
                continue
            try:
                text, problem = decode_source(raw, display), None
            except LoadError as exc:
                text, problem = "", exc.diagnostic
            sources.append(_Source(display, text, problem, head + raw + b"\0", own=True))
    return sources


# Each definition as parsed, validated and tried, by its file's name as shown and bytes: the
# built-in ones, read by every catalog of a process, are made once (a team's file again when
# it moves: a definition names its file). A file with problems is never remembered.
_DEFINITIONS: dict[tuple[str, bytes], tuple[SignalDef, Positions]] = {}
_DEFINITIONS_MAX = 1024


def _definition(
    source: _Source, diagnostics: list[Diagnostic]
) -> tuple[SignalDef, Positions] | None:
    """``source``'s signal and the positions of its file, or ``None`` with its problems
    added to ``diagnostics``."""
    if source.problem is not None:
        diagnostics.append(source.problem)
        return None
    key = (source.display, hashlib.sha256(source.fingerprint_part).digest())
    with _LOADED_LOCK:
        known = _DEFINITIONS.get(key)
    if known is not None:
        return known
    made = _make_definition(source, diagnostics)
    if made is not None:
        with _LOADED_LOCK:
            if len(_DEFINITIONS) >= _DEFINITIONS_MAX:
                _DEFINITIONS.clear()
            _DEFINITIONS[key] = made
    return made


def _make_definition(
    source: _Source, diagnostics: list[Diagnostic]
) -> tuple[SignalDef, Positions] | None:
    from pydantic import ValidationError

    from rulegen.catalog.definition import SignalDef
    from rulegen.catalog.trial import trial
    from rulegen.source.loader import LoadError, load_text
    from rulegen.source.locate import pydantic_diagnostics

    display = source.display
    try:
        doc = load_text(source.text, display)
    except LoadError as exc:
        diagnostics.append(exc.diagnostic)
        return None
    if not isinstance(doc.data, dict):
        diagnostics.append(doc.positions.diag((), "a signal definition must be a mapping"))
        return None
    try:
        signal = SignalDef.model_validate({**doc.data, "source": display})
    except ValidationError as exc:
        diagnostics.extend(pydantic_diagnostics(exc, doc.positions, doc.data, SignalDef))
        return None
    if source.own:  # a team's own signal: its templates must finish (built-ins do)
        runaway = trial(signal, doc.positions)
        if runaway:
            diagnostics.extend(runaway)
            return None
    return signal, doc.positions


def _add(
    signals: dict[str, SignalDef],
    diagnostics: list[Diagnostic],
    made: tuple[SignalDef, Positions] | None,
) -> None:
    """Add a made definition, unless its name is taken (a diagnostic at its ``signal:``)."""
    if made is None:
        return
    signal, positions = made
    if signal.signal in signals or signal.signal == "custom":
        where = signals[signal.signal].source if signal.signal in signals else "built-in"
        diagnostics.append(
            positions.diag(("signal",), f"signal {signal.signal!r} is already defined ({where})")
        )
        return
    signals[signal.signal] = signal
