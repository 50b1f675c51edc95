"""Recognise and load the one routing file, and the base Alertmanager file it may name."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from rulegen.errors import Diagnostic
from rulegen.fields import Collector
from rulegen.render.alertmanager import OWNED_KEYS
from rulegen.routing.model import ResolvedRouting
from rulegen.routing.resolve import resolve_routing
from rulegen.spec.loader import LoadedDocument as Document
from rulegen.spec.locate import pydantic_diagnostics
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
    try:
        spec = RoutingFile.model_validate(doc.data)
    except ValidationError as exc:
        return None, pydantic_diagnostics(exc, doc.positions, doc.data)
    col = Collector(doc.positions)
    routing = resolve_routing(col, spec)
    base = _base(col, path, spec.routing.base)
    if routing is None or base is None:
        return None, col.diagnostics
    return LoadedRouting(routing, base, where), col.diagnostics


def _base(col: Collector, path: Path, name: str | None) -> dict[str, Any] | None:
    """The base Alertmanager file (relative to the routing file), minus nothing: rulegen's
    keys in it are a conflict to resolve, not something to overwrite silently."""
    if name is None:
        return {}
    file = (path.parent / name).resolve()
    try:
        data = yaml.safe_load(file.read_text("utf-8"))
    except OSError as exc:
        col.error(("routing", "base"), f"cannot read {name}: {exc.strerror}")
        return None
    except yaml.YAMLError as exc:
        col.error(("routing", "base"), f"{name} is not valid YAML: {str(exc).splitlines()[0]}")
        return None
    if not isinstance(data, dict):
        col.error(("routing", "base"), f"{name} must be a YAML mapping")
        return None
    owned = [k for k in OWNED_KEYS if k in data]
    if owned:
        col.error(
            ("routing", "base"),
            f"{name} defines {', '.join(owned)}, which rulegen writes from this routing section; "
            "move that part here (or drop it from the base file)",
        )
        return None
    return data
