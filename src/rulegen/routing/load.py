"""Recognise and load the one routing file, and the base Alertmanager file it may name.

The base file is read like a spec (size, UTF-8, depth, tags, aliases: ``source.loader``), and
both files are searched for inline credentials (``routing.secrets``), since both end up in the
generated ``alertmanager.yml``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from rulegen.errors import Diagnostic
from rulegen.routing.config import OWNED_KEYS
from rulegen.routing.model import ResolvedRouting
from rulegen.routing.resolve import resolve_routing
from rulegen.routing.secrets import find_secrets
from rulegen.source.fields import Collector
from rulegen.source.loader import LoadedDocument as Document
from rulegen.source.loader import LoadError, decode_source, display, load_text, read_capped
from rulegen.source.locate import pydantic_diagnostics
from rulegen.source.salvage import salvage
from rulegen.spec.routing import RoutingFile


@dataclass(frozen=True)
class LoadedRouting:
    """The routing section, where it is, and the base file's content."""

    routing: ResolvedRouting
    base: dict[str, Any]
    where: str


def is_routing_file(data: dict[str, Any]) -> bool:
    """A routing file has ``routing:`` and no ``service:``."""
    return "routing" in data and "service" not in data


def load_routing(
    path: Path, doc: Document, previous: LoadedRouting | None
) -> tuple[LoadedRouting | None, list[Diagnostic]]:
    """The routing section of ``doc``; a second one is an error naming both files."""
    line, column = doc.positions.at(("routing",), key=True)
    where = f"{doc.positions.file}:{line}:{column}"
    if previous is not None:
        message = f"a second routing section (the first is at {previous.where}); keep one"
        return None, [doc.positions.diag(("routing",), message, key=True)]
    secrets = find_secrets(doc.data, doc.positions)
    try:
        spec = RoutingFile.model_validate(doc.data)
    except ValidationError as exc:
        problems = pydantic_diagnostics(exc, doc.positions, doc.data, RoutingFile)
        rest = salvage(RoutingFile, exc, doc.data, doc.positions)
        if rest is not None:  # what stands is checked too: one error never hides another
            checked = Collector(rest.positions)
            resolve_routing(checked, rest.model)
            problems += rest.follow(checked.diagnostics)
        return None, secrets + sorted(problems, key=lambda d: (d.line, d.col))
    col = Collector(doc.positions)
    base = _base(col, path, spec.routing.base)
    found = base.get("global") if base is not None else None
    routing = resolve_routing(col, spec, found if isinstance(found, dict) else {})
    problems = secrets + col.diagnostics
    if routing is None or base is None or problems:
        return None, problems
    return LoadedRouting(routing, base, where), problems


def _base(col: Collector, path: Path, name: str | None) -> dict[str, Any] | None:
    """The base Alertmanager file (relative to the routing file), minus nothing: rulegen's
    keys in it are a conflict to resolve, not something to overwrite silently."""
    if name is None:
        return {}
    file = path.parent / name
    try:
        raw = read_capped(file)
    except OSError as exc:
        col.error(("routing", "base"), f"cannot read {name}: {exc.strerror or exc}")
        return None
    shown = display(file)
    try:
        text = decode_source(raw, shown)
        if not _has_content(text):
            col.error(("routing", "base"), f"{name} must be a YAML mapping")
            return None
        doc = load_text(text, shown)
    except LoadError as exc:
        col.diagnostics.append(exc.diagnostic)
        return None
    data = doc.data
    if not isinstance(data, dict):
        col.error(("routing", "base"), f"{name} must be a YAML mapping")
        return None
    secrets = find_secrets(data, doc.positions)
    col.diagnostics.extend(secrets)
    owned = [k for k in OWNED_KEYS if k in data]
    if owned:
        col.error(
            ("routing", "base"),
            f"{name} defines {', '.join(owned)}, which rulegen writes from this routing section; "
            "move that part here (or drop it from the base file)",
        )
        return None
    return None if secrets else data


def _has_content(text: str) -> bool:
    """Whether the text holds more than blank lines and comments (an empty base file is not a
    mapping, as before; it is not an empty *spec*)."""
    return any(line.strip() and not line.lstrip().startswith("#") for line in text.splitlines())
