"""The closest valid key for a typo (``treshold`` → ``did you mean "threshold"?``).

Why: "unknown key" alone sends the user to the docs for a one-letter slip; the model that
refused the key knows every key it accepts at that place, so the message can name the one
meant. The walk follows pydantic's error location through the model's field types (tagged
unions by their tag, lists by index, maps by key).
"""

from __future__ import annotations

import difflib
import types
from collections.abc import Iterable
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel

# How close a key must be to count as the one meant (difflib's ratio, 0..1).
CUTOFF = 0.6


def did_you_mean(key: str, accepted: Iterable[str]) -> str:
    """``; did you mean "threshold"?`` for the closest accepted key, else nothing."""
    close = difflib.get_close_matches(key, sorted(accepted), n=1, cutoff=CUTOFF)
    return f'; did you mean "{close[0]}"?' if close else ""


def accepted_keys(model: type[BaseModel], loc: tuple[int | str, ...]) -> list[str]:
    """The keys the mapping at pydantic's ``loc`` accepts (empty when the walk is lost)."""
    current: Any = model
    for part in loc:
        current = _step(current, part)
        if current is None:
            return []
    found = _model_of(current, None)
    if found is None:
        return []
    return [field.alias or name for name, field in found.model_fields.items()]


def field_type(model: type[BaseModel], loc: tuple[int | str, ...]) -> Any:
    """The declared type of the value at pydantic's ``loc`` (``None`` when the walk is lost),
    optional and annotated wrappers removed."""
    current: Any = model
    for part in loc:
        current = _step(current, part)
        if current is None:
            return None
    return _unwrap(current)


def _step(kind: Any, part: int | str) -> Any:
    """The type one step below ``kind`` along ``part`` (``None`` when there is none)."""
    kind = _unwrap(kind)
    origin = get_origin(kind)
    if isinstance(part, int):
        return get_args(kind)[0] if origin is list and get_args(kind) else None
    if origin is dict:
        return get_args(kind)[1] if len(get_args(kind)) == 2 else None
    if _is_union(kind):
        tagged = _model_of(kind, part)
        return tagged if tagged is not None else kind  # pydantic's tag or validator name
    if isinstance(kind, type) and issubclass(kind, BaseModel):
        for name, field in kind.model_fields.items():
            if part in (name, field.alias):
                return field.annotation
        return kind if "[" in part or "-" in part else None
    return None


def _model_of(kind: Any, tag: str | None) -> type[BaseModel] | None:
    """The model ``kind`` stands for: itself, or the member of a union whose tag is ``tag``
    (the only model member when ``tag`` is ``None``)."""
    kind = _unwrap(kind)
    if isinstance(kind, type) and issubclass(kind, BaseModel):
        return kind
    if not _is_union(kind):
        return None
    members = [m for m in (_unwrap(a) for a in get_args(kind)) if isinstance(m, type)]
    models = [m for m in members if issubclass(m, BaseModel)]
    if tag is None:
        return models[0] if len(models) == 1 else None
    for member in models:
        for name in ("signal", "kind"):
            field = member.model_fields.get(name)
            annotation = field.annotation if field is not None else None
            if get_origin(annotation) is Literal and tag in get_args(annotation):
                return member
    return None


def _unwrap(kind: Any) -> Any:
    """``Annotated[X, ...]`` → ``X``; ``X | None`` → ``X``."""
    while True:
        if get_origin(kind) is Annotated:
            kind = get_args(kind)[0]
            continue
        if _is_union(kind):
            rest = [a for a in get_args(kind) if a is not type(None)]
            if len(rest) == 1:
                kind = rest[0]
                continue
        return kind


def _is_union(kind: Any) -> bool:
    return get_origin(kind) in (Union, types.UnionType)
