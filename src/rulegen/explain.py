"""``rulegen explain SPEC``: the effective spec, each value with the file and line it came from.

Why: with ``extends:`` a spec's values are written in several files; this prints what the
spec amounts to after the defaults are merged under it, as YAML a reader can paste back,
with a trailing comment on every value (``# specs/a.yaml:12`` for the spec's own,
``# from specs/defaults.yaml:7`` for an inherited one). Keys neither file sets keep the
built-in defaults of docs/spec.md and are not shown. The output is deterministic: the
top-level keys in the order of the spec's model (``SpecModel``'s fields), the others as
written (the spec's keys first, then the inherited ones).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import yaml

from rulegen.catalog import Catalog
from rulegen.core import diagnostics as codes
from rulegen.errors import SpecError, UsageError
from rulegen.load import display, vocabulary
from rulegen.routing.load import is_routing_file
from rulegen.source.extends import extend, is_defaults
from rulegen.source.loader import LoadError, PathKey, Positions, load_file
from rulegen.spec.models import SpecModel

__all__ = ["explain"]

INDENT = "  "


def explain(path: Path, catalog: Catalog) -> str:
    """The effective spec of the service spec at ``path`` (``SpecError`` when its file or a
    file of its ``extends:`` chain cannot be read or merged). Its values are not checked:
    ``rulegen validate`` does that."""
    shown = display(path)
    if not path.is_file():
        raise UsageError(f"{shown}: no such file")
    try:
        doc = load_file(path, shown)
    except LoadError as exc:
        raise SpecError([exc.diagnostic]) from None
    data = doc.data
    if not isinstance(data, dict) or is_routing_file(data) or is_defaults(data):
        what = "a defaults file" if is_defaults(data) else "not a service spec"
        message = f"{what}: explain shows a service spec (one with service:)"
        raise SpecError([doc.positions.diag((), message, code=codes.SPEC_TYPE)])
    extended = extend(doc, path, vocabulary(catalog))
    if extended.problems:
        raise SpecError(extended.problems)
    chain = ", ".join(display(p) for p in extended.files) or "nothing"
    lines = [
        f"# rulegen explain {shown}: the effective spec; it extends {chain}",
        "# each value: the file and line it was written on (from: inherited)",
    ]
    merged = extended.doc
    order = [f.alias or name for name, f in SpecModel.model_fields.items()]
    top = sorted(merged.data, key=lambda k: order.index(k) if k in order else len(order))
    _mapping(lines, {k: merged.data[k] for k in top}, (), 0, merged.positions)
    return "\n".join(lines) + "\n"


def _mapping(
    lines: list[str], data: dict[str, Any], path: PathKey, depth: int, where: Positions
) -> None:
    for key, value in data.items():
        _entry(lines, f"{INDENT * depth}{_scalar(key)}:", value, (*path, key), depth, where)


def _entry(
    lines: list[str], head: str, value: Any, path: PathKey, depth: int, where: Positions
) -> None:
    """``head`` (``key:`` or ``-``) then ``value``: inline when it is plain or empty, else
    below it, one level deeper."""
    note = _origin(path, where)
    if isinstance(value, dict) and value:
        lines.append(f"{head}{note}")
        _mapping(lines, value, path, depth + 1, where)
    elif isinstance(value, list) and value:
        lines.append(f"{head}{note}")
        for index, item in enumerate(value):
            _item(lines, item, (*path, index), depth + 1, where)
    else:
        lines.append(f"{head} {_scalar(value)}{note}")


def _item(lines: list[str], value: Any, path: PathKey, depth: int, where: Positions) -> None:
    """A list entry; a mapping's first key goes on the ``-`` line."""
    pad = INDENT * depth
    if isinstance(value, dict) and value:
        start = len(lines)
        _mapping(lines, value, path, depth + 1, where)
        lines[start] = f"{pad}- {lines[start][len(pad) + len(INDENT) :]}"
    else:
        _entry(lines, f"{pad}-", value, path, depth, where)


def _origin(path: PathKey, where: Positions) -> str:
    """The line of the value's key (a mapping's own line is its first key's), else its own."""
    line = where.keys[path][0] if path in where.keys else where.at(path)[0]
    if path in where.sources:
        return f"  # from {where.sources[path][0]}:{line}"
    return f"  # {where.file}:{line}"


def _scalar(value: Any) -> str:
    """A value as YAML reads it back; quoted (JSON escapes) when plain text would not."""
    if isinstance(value, dict):
        return "{}"
    if isinstance(value, list):
        return "[]"
    if value is None or isinstance(value, bool | int):
        return json.dumps(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else json.dumps(str(value))
    text = str(value)
    if _plain(text):
        return text
    return json.dumps(text, ensure_ascii=not text.isprintable())


def _plain(text: str) -> bool:
    """Whether ``text`` reads back as the same string unquoted (and prints as it is)."""
    if not text or not text.isprintable() or text != text.strip() or " #" in text:
        return False
    try:
        return bool(yaml.safe_load(f"k: {text}") == {"k": text})
    except yaml.YAMLError:
        return False
