"""The signal catalog: built-in definitions shipped in the package plus a team's own.

Why: signals are data (a small YAML definition with a Jinja2 PromQL template), so a platform
team adds one in ``signals/`` without forking rulegen.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rulegen.errors import Diagnostic, SpecError

if TYPE_CHECKING:
    from rulegen.catalog.definition import SignalDef

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


def load_catalog(extra_dirs: Iterable[Path] = ()) -> Catalog:
    """Load built-in signals, then every ``*.yaml``/``*.yml`` of ``extra_dirs``."""
    signals: dict[str, SignalDef] = {}
    diagnostics: list[Diagnostic] = []
    digest = hashlib.sha256()
    builtin = resources.files("rulegen.catalog").joinpath("signals")
    for entry in sorted(builtin.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".yaml"):
            text = entry.read_text("utf-8")
            digest.update(f"<builtin>/{entry.name}\0{text}\0".encode())
            _add(signals, diagnostics, text, f"<builtin>/{entry.name}", None)
    for index, folder in enumerate(extra_dirs):
        for path in sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")]):
            _add(signals, diagnostics, None, str(path), path)
            digest.update(f"{index}/{path.name}\0".encode() + _bytes_of(path) + b"\0")
    if diagnostics:
        raise SpecError(diagnostics)
    return Catalog(signals, digest.hexdigest())


def _bytes_of(path: Path) -> bytes:
    """A definition's bytes for the fingerprint (one ``_add`` has already read or refused)."""
    try:
        return path.read_bytes()
    except OSError:
        return b"\0unreadable"


def _add(
    signals: dict[str, SignalDef],
    diagnostics: list[Diagnostic],
    text: str | None,
    display: str,
    path: Path | None,
) -> None:
    from pydantic import ValidationError

    from rulegen.catalog.definition import SignalDef
    from rulegen.catalog.trial import trial
    from rulegen.source.loader import LoadError, load_file, load_text
    from rulegen.source.locate import pydantic_diagnostics

    try:
        doc = load_file(path, display) if path is not None else load_text(text or "", display)
    except LoadError as exc:
        diagnostics.append(exc.diagnostic)
        return
    if not isinstance(doc.data, dict):
        diagnostics.append(doc.positions.diag((), "a signal definition must be a mapping"))
        return
    try:
        signal = SignalDef.model_validate({**doc.data, "source": display})
    except ValidationError as exc:
        diagnostics.extend(pydantic_diagnostics(exc, doc.positions, doc.data, SignalDef))
        return
    if path is not None:  # a team's own signal: its templates must finish (built-ins do)
        runaway = trial(signal, doc.positions)
        if runaway:
            diagnostics.extend(runaway)
            return
    if signal.signal in signals or signal.signal == "custom":
        where = signals[signal.signal].source if signal.signal in signals else "built-in"
        diagnostics.append(
            doc.positions.diag(
                ("signal",), f"signal {signal.signal!r} is already defined ({where})"
            )
        )
        return
    signals[signal.signal] = signal
