"""Pydantic errors → one-line diagnostics at the YAML position of the bad value.

Why: pydantic's ``loc`` tuples and wording are for programmers; users need
``file:line:col: alerts[2].threshold: <plain message>``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from rulegen.core import diagnostics as codes
from rulegen.errors import Diagnostic
from rulegen.source import suggest
from rulegen.source.credentials import SECRET_FIELDS, has_url_credentials
from rulegen.source.loader import PathKey, Positions

_TAGGED = "function-after", "function-before", "function-plain", "function-wrap"


def pydantic_diagnostics(
    exc: ValidationError,
    positions: Positions,
    data: Any,
    model: type[BaseModel] | None = None,
) -> list[Diagnostic]:
    """One diagnostic per pydantic error, deduplicated, positioned in the source file; with
    the ``model`` that was validated, an unknown key names the closest key it accepts."""
    seen: set[tuple[PathKey, str]] = set()
    out: list[Diagnostic] = []
    for error in exc.errors(include_url=False):
        path = data_path(error["loc"], data)
        message = _message(error)
        if error["type"] == "extra_forbidden" and model is not None:
            message += suggest.did_you_mean(
                str(error["loc"][-1]), suggest.accepted_keys(model, error["loc"][:-1])
            )
        if (path, message) in seen:
            continue
        seen.add((path, message))
        code = code_of(error["type"])
        if error["type"] == "extra_forbidden":
            out.append(positions.diag(path, message, key=True, code=code))
        elif error["type"] == "union_tag_invalid":
            out.append(positions.diag((*path, _tag_key(error)), message, code=code))
        elif error["type"] == "missing":
            out.append(positions.diag(path[:-1], f"{path[-1]}: {message}", code=code))
        else:
            out.append(positions.diag(path, message, code=code))
    return out


_CODES = {
    "extra_forbidden": codes.SPEC_UNKNOWN_KEY,
    "missing": codes.SPEC_MISSING,
    "union_tag_not_found": codes.SPEC_MISSING,
}


def code_of(error_type: str) -> str:
    """The diagnostic code of a pydantic error type: an unknown key, a missing one, a value
    of the wrong type (``*_type``, ``*_parsing``), else a refused value."""
    if error_type in _CODES:
        return _CODES[error_type]
    if error_type.endswith(("_type", "_parsing")):
        return codes.SPEC_TYPE
    return codes.SPEC_VALUE


def data_path(loc: tuple[int | str, ...], data: Any) -> PathKey:
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
            elif isinstance(part, str) and part in (node.get("signal"), node.get("kind")):
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


_SIMPLE = {
    "extra_forbidden": "unknown key",
    "missing": "required field is missing",
    "union_tag_not_found": "required field {discriminator} is missing",
    "string_type": "must be a string (got {got})",
    "dict_type": "must be a mapping (got {got})",
    "model_type": "must be a mapping (got {got})",
    "model_attributes_type": "must be a mapping (got {got})",
    "list_type": "must be a list (got {got})",
    "int_type": "must be an integer (got {got})",
    "int_parsing": "must be an integer (got {got})",
    "bool_type": "must be true or false (got {got})",
    "bool_parsing": "must be true or false (got {got})",
    "literal_error": "must be {expected} (got {got})",
    "string_pattern_mismatch": "must match {pattern} (got {got})",
    "string_too_long": "must be at most {max_length} characters",
    "string_too_short": "must not be empty",
    "greater_than_equal": "must be at least {ge} (got {got})",
    "too_short": "must not be empty",
    "union_tag_invalid": "unknown {tag_kind} {tag!r} (known: {expected_tags})",
}
# What a tagged union's tag is called in messages, by its key.
_TAG_KINDS = {"signal": "signal", "kind": "diagnosis kind"}


def _tag_key(error: ErrorDetails) -> str:
    return str(error.get("ctx", {}).get("discriminator", "'signal'")).strip("'")


def _message(error: ErrorDetails) -> str:
    """Pydantic's error in the words of the spec, through one table."""
    template = _SIMPLE.get(error["type"])
    if template is not None:
        context = {
            "expected": "", "pattern": "", "tag": "", "expected_tags": "", "max_length": "",
            "ge": "",
        }  # fmt: skip
        context.update({k: v for k, v in error.get("ctx", {}).items()})
        context["discriminator"] = context.get("discriminator", "'signal'")
        context["tag_kind"] = _TAG_KINDS.get(_tag_key(error), "tag")
        return template.format(got=_show(error.get("input"), error["loc"]), **context)
    message = error["msg"]
    for prefix in ("Value error, ", "Assertion failed, "):
        if message.startswith(prefix):
            message = message[len(prefix) :]
    return message


def _show(value: Any, loc: tuple[int | str, ...] = ()) -> str:
    """The bad input as the message quotes it; never the value of a credential field, nor a
    URL with credentials in it (the message would print the secret it refuses)."""
    names = [part for part in loc if isinstance(part, str)]
    if (names and names[-1] in SECRET_FIELDS) or (
        isinstance(value, str) and has_url_credentials(value)
    ):
        return "a hidden value"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
