"""Pydantic errors → one-line diagnostics at the YAML position of the bad value.

Why: pydantic's ``loc`` tuples and wording are for programmers; users need
``file:line:col: alerts[2].threshold: <plain message>``.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from rulegen.errors import Diagnostic
from rulegen.spec.loader import PathKey, Positions

_TAGGED = "function-after", "function-before", "function-plain", "function-wrap"


def pydantic_diagnostics(exc: ValidationError, positions: Positions, data: Any) -> list[Diagnostic]:
    """One diagnostic per pydantic error, deduplicated, positioned in the source file."""
    seen: set[tuple[PathKey, str]] = set()
    out: list[Diagnostic] = []
    for error in exc.errors(include_url=False):
        path = _data_path(error["loc"], data)
        message = _message(error)
        if (path, message) in seen:
            continue
        seen.add((path, message))
        if error["type"] == "extra_forbidden":
            out.append(positions.diag(path, message, key=True))
        elif error["type"] == "union_tag_invalid":
            out.append(positions.diag((*path, "signal"), message))
        elif error["type"] == "missing":
            out.append(positions.diag(path[:-1], f"{path[-1]}: {message}"))
        else:
            out.append(positions.diag(path, message))
    return out


def _data_path(loc: tuple[int | str, ...], data: Any) -> PathKey:
    """Drop pydantic's union tags and validator names so the path matches the YAML tree."""
    path: list[str | int] = []
    node = data
    for part in loc:
        if isinstance(part, str) and (part.startswith(_TAGGED) or "[" in part):
            continue
        if isinstance(node, dict):
            if part in node:
                node = node[part]
                path.append(part)
            elif isinstance(part, str) and node.get("signal") == part:
                continue
            else:
                path.append(part)
                node = None
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
            path.append(part)
        else:
            path.append(part)
            node = None
    return tuple(path)


def _message(error: ErrorDetails) -> str:
    kind = error["type"]
    got = error.get("input")
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "missing":
        return "required field is missing"
    if kind == "literal_error":
        expected = error.get("ctx", {}).get("expected", "")
        return f"must be one of {expected} (got {_show(got)})"
    if kind == "string_type":
        return f"must be a string (got {_show(got)})"
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return f"must be a mapping (got {_show(got)})"
    if kind == "list_type":
        return f"must be a list (got {_show(got)})"
    if kind == "int_type" or kind == "int_parsing":
        return f"must be an integer (got {_show(got)})"
    if kind == "bool_type" or kind == "bool_parsing":
        return f"must be true or false (got {_show(got)})"
    if kind == "string_pattern_mismatch":
        pattern = error.get("ctx", {}).get("pattern", "")
        return f"must match {pattern} (got {_show(got)})"
    if kind == "union_tag_invalid":
        tag = error.get("ctx", {}).get("tag", "")
        expected = error.get("ctx", {}).get("expected_tags", "")
        return f"unknown signal {tag!r} (known: {expected})"
    if kind == "union_tag_not_found":
        return "required field 'signal' is missing"
    message = error["msg"]
    for prefix in ("Value error, ", "Assertion failed, "):
        if message.startswith(prefix):
            message = message[len(prefix) :]
    return message


def _show(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
