"""Structural errors without a stop: what stands of a spec after its broken parts are cut out.

Why: a spec with a typo'd key used to stop at pydantic, so its semantic errors (a bad
``evaluation_interval``, a threshold out of range) only appeared once the structure was fixed:
errors in stages, one hiding another. Here every value pydantic refused is cut out (an entry
that then lacks a required key goes with it) until the rest validates; the resolver then checks
what stands, and its diagnostics are mapped back to the paths the user wrote. A diagnostic
about a value that was cut, or about the entry that held it, is a consequence and is dropped.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any, Generic, Literal, TypeVar, get_args, get_origin

from pydantic import BaseModel, ValidationError

from rulegen.errors import Diagnostic, FieldPath
from rulegen.source import suggest
from rulegen.source.loader import PathKey, Positions
from rulegen.source.locate import data_path

M = TypeVar("M", bound=BaseModel)

# Keys every spec needs and whose value matters little to the other checks: a missing one is
# filled for the check of the rest (the spec would have nothing left to check without it).
PLACEHOLDERS: dict[str, Any] = {"version": 1, "service": "unnamed"}
# Keys whose value is one of a set the file declares (an alert's ``severity``): a missing one
# is filled with a value the resolver refuses at that path, a refusal dropped as a consequence.
CHOICES: dict[str, Any] = {"severity": ""}
# How many rounds of cutting before giving up (each round cuts every value refused in it).
ROUNDS = 8


@dataclass(frozen=True)
class Salvaged(Generic[M]):
    """The spec without its refused values, validated, and how its paths map to the file's."""

    model: M
    positions: Positions
    cut: frozenset[PathKey]
    # each list whose items were cut (by its path in the file): the file's index of each item
    # that stands, in order
    lists: dict[PathKey, tuple[int, ...]]

    def original(self, path: Iterable[str | int]) -> PathKey:
        """A path of the salvaged spec as the file writes it (list indexes shifted back)."""
        return _original(self.lists, path)

    def follow(self, diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
        """The resolver's diagnostics at the file's paths, its consequences of a cut dropped."""
        out: list[Diagnostic] = []
        for diagnostic in diagnostics:
            path = self.original(diagnostic.path.parts)
            if not any(_consequence(path, cut) for cut in self.cut):
                out.append(replace(diagnostic, path=FieldPath(path, diagnostic.path.more)))
        return out


def salvage(
    model: type[M], error: ValidationError, data: Any, positions: Positions
) -> Salvaged[M] | None:
    """``data`` without every value ``model`` refuses, validated; ``None`` when nothing stands.

    A missing key whose value can stand in without meaning anything (the first of a fixed
    set of choices like ``severity``, an empty block with no required key) is filled instead,
    so the entry's other values are still checked.
    """
    cut: set[PathKey] = set()
    filled: dict[PathKey, Any] = {}
    current: Any = data
    lists: dict[PathKey, tuple[int, ...]] = {}
    for _ in range(ROUNDS):
        for problem in error.errors(include_url=False):
            path = _original(lists, data_path(problem["loc"], current))
            missing = problem["type"] == "missing"
            stand_in = _stand_in(model, problem["loc"], path) if missing else _NONE
            if stand_in is not _NONE and path not in filled:
                filled[path] = stand_in
                cut.discard(path)  # a refused value cut in an earlier round: filled instead
                continue
            target = path[:-1] if missing or path in filled else path
            if not target:
                return None
            cut.add(target)
        current, lists = _prune(_filled(data, filled), frozenset(cut))
        if not isinstance(current, dict):
            return None
        try:
            result = model.model_validate(current)
        except ValidationError as again:
            error = again
            continue
        done = frozenset(cut | set(filled))
        shown = Salvaged(result, positions, done, lists)
        return Salvaged(result, _moved(positions, shown), done, lists)
    return None


_NONE = object()


def _stand_in(model: type[BaseModel], loc: tuple[int | str, ...], path: PathKey) -> Any:
    """A value for a missing key that makes no claim of its own, or ``_NONE``."""
    if len(path) == 1 and str(path[0]) in PLACEHOLDERS:
        return PLACEHOLDERS[str(path[0])]
    kind = suggest.field_type(model, loc)
    if get_origin(kind) is Literal:
        return get_args(kind)[0]
    if kind is Any and path and str(path[-1]) in CHOICES:
        return CHOICES[str(path[-1])]
    block = isinstance(kind, type) and issubclass(kind, BaseModel)
    if block and not any(field.is_required() for field in kind.model_fields.values()):
        return {}
    return _NONE


def _filled(data: Any, filled: dict[PathKey, Any]) -> Any:
    """``data`` with each stand-in set at its path (the file's paths; nothing cut yet)."""
    if not filled:
        return data
    out = copy.deepcopy(data)
    for path, value in filled.items():
        node: Any = out
        for part in path[:-1]:
            if isinstance(node, dict):
                node = node.get(part)
            elif isinstance(node, list) and isinstance(part, int) and part < len(node):
                node = node[part]
            else:
                node = None
        if isinstance(node, dict):
            node[path[-1]] = value
    return out


def _original(lists: dict[PathKey, tuple[int, ...]], path: Iterable[str | int]) -> PathKey:
    out: list[str | int] = []
    for part in path:
        kept = lists.get(tuple(out))
        out.append(kept[part] if isinstance(part, int) and kept is not None else part)
    return tuple(out)


def _consequence(path: PathKey, cut: PathKey) -> bool:
    """``path`` is the cut value, lies inside it, or is the entry (or mapping) that held it,
    up to its nearest list item: what the resolver says there follows from the cut."""
    if path[: len(cut)] == cut:
        return True
    if cut[: len(path)] != path:
        return False
    return not path or not any(isinstance(part, int) for part in cut[len(path) :])


_GONE = object()


def _prune(data: Any, cut: frozenset[PathKey]) -> tuple[Any, dict[PathKey, tuple[int, ...]]]:
    lists: dict[PathKey, tuple[int, ...]] = {}

    def walk(node: Any, path: PathKey) -> Any:
        if path in cut:
            return _GONE
        if isinstance(node, dict):
            kept = {k: walk(v, (*path, k)) for k, v in node.items()}
            return {k: v for k, v in kept.items() if v is not _GONE}
        if isinstance(node, list):
            items = [(i, walk(v, (*path, i))) for i, v in enumerate(node)]
            standing = [(i, v) for i, v in items if v is not _GONE]
            if len(standing) != len(node):
                lists[path] = tuple(i for i, _ in standing)
            return [v for _, v in standing]
        return node

    return walk(data, ()), lists


def _moved(positions: Positions, salvaged: Salvaged[Any]) -> Positions:
    """``positions`` keyed by the salvaged spec's paths (values and keys cut are left out)."""
    inverse = {
        path: {old: new for new, old in enumerate(kept)} for path, kept in salvaged.lists.items()
    }

    def new_path(path: PathKey) -> PathKey | None:
        if any(path[: len(cut)] == cut for cut in salvaged.cut):
            return None
        out: list[str | int] = []
        original: list[str | int] = []
        for part in path:
            table = inverse.get(tuple(original))
            original.append(part)
            if isinstance(part, int) and table is not None:
                if part not in table:
                    return None
                out.append(table[part])
            else:
                out.append(part)
        return tuple(out)

    def remap(table: dict[PathKey, Any]) -> dict[PathKey, Any]:
        return {new: value for path, value in table.items() if (new := new_path(path)) is not None}

    return Positions(
        positions.file, remap(positions.values), remap(positions.keys), remap(positions.sources)
    )
