"""``extends:``: a spec's shared defaults, merged under it before the spec is validated.

A spec may say ``extends: ../defaults.yaml``; a defaults file (``version: 1``,
``defaults:``, maybe ``extends:`` itself) holds service-level keys, per-signal alert defaults
(``alerts: {disk_await: {...}}``, applied to every alert entry on that signal) and SLO
defaults (``slos: {...}``, applied to every SLO). The nearer file wins key by key: mappings
merge, lists and plain values replace.

Why here, on the YAML with positions: every merged value keeps the file and line it was
written on (``Positions.sources``), so the model's errors, the resolvers' and lint's findings
on an inherited value name the defaults file's line and the spec that got it, with no second
error path. Defaults files are hostile input like specs: the same guarded loader, relative
paths only, regular ``*.yaml``/``*.yml`` files, a bounded chain and no cycles.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rulegen.core import diagnostics as codes
from rulegen.errors import Diagnostic
from rulegen.source import suggest
from rulegen.source.loader import (
    LoadedDocument,
    LoadError,
    PathKey,
    Positions,
    decode_source,
    display,
    load_text,
    read_capped,
    read_raw,
)

__all__ = [
    "MAX_CHAIN", "Extended", "Vocabulary", "extend", "is_defaults", "looks_like_defaults",
]  # fmt: skip

# Defaults files one spec may extend, through each other.
MAX_CHAIN = 16
ALERTS, SLOS = "alerts", "slos"
TOP_KEYS = ("version", "extends", "defaults")
# Keys an alert default may not set: they pick, name or test one alert, not a fleet's habit.
PER_ALERT = frozenset({"signal", "name", "expr", "examples"})


@dataclass(frozen=True)
class Vocabulary:
    """What a defaults file may set: the service-level keys, the SLO keys, and the keys of an
    alert on each signal (by signal name; ``custom`` included)."""

    service: frozenset[str]
    slo: frozenset[str]
    alert: Mapping[str, frozenset[str]]


@dataclass
class Extended:
    """The effective spec (merged data, positions with each value's origin) and the defaults
    files it read, nearest first."""

    doc: LoadedDocument
    files: tuple[Path, ...] = ()
    problems: list[Diagnostic] = field(default_factory=list)
    # each of ``files``' bytes, as parsed (what the render cache's key hashes)
    read: tuple[bytes, ...] = ()


def is_defaults(data: Any) -> bool:
    """A defaults file is a mapping with ``defaults:`` and no ``service:``."""
    return isinstance(data, dict) and "defaults" in data and "service" not in data


_DEFAULTS_KEY = re.compile(r"^(?:defaults|['\"]defaults['\"])[ \t]*:", re.MULTILINE)
_SERVICE_KEY = re.compile(r"^(?:service|['\"]service['\"])[ \t]*:", re.MULTILINE)


def looks_like_defaults(path: Path) -> bool:
    """Whether ``path`` is a defaults file (for ``discover``, which must not build one).

    Why the text first: a folder of a thousand specs is not parsed twice; only a file with a
    top-level ``defaults:`` line and no ``service:`` line is parsed to be sure. A file that
    cannot be read or parsed is left to the build, which reports it at its position.
    """
    try:
        text = decode_source(read_capped(path), display(path))
    except (OSError, LoadError):
        return False
    if not _DEFAULTS_KEY.search(text) or _SERVICE_KEY.search(text):
        return False
    try:
        return is_defaults(load_text(text, display(path)).data)
    except LoadError:
        return False


def extend(doc: LoadedDocument, path: Path, vocabulary: Vocabulary) -> Extended:
    """``doc`` (the spec at ``path``) with the defaults of its ``extends:`` chain merged under
    it; ``problems`` holds every error of the chain (then ``doc`` is the spec as written)."""
    if not isinstance(doc.data, dict) or "extends" not in doc.data:
        return Extended(doc)
    chain: list[tuple[Path, LoadedDocument]] = []
    problems = _load_chain(doc, path, chain, vocabulary)
    spec_data = {k: v for k, v in doc.data.items() if k != "extends"}
    if problems:
        return Extended(LoadedDocument(spec_data, doc.positions), (), problems)
    defaults: _Node | None = None
    for _, defaults_doc in reversed(chain):  # the farthest first: nearer files override
        node = _wrap(defaults_doc.data["defaults"], defaults_doc.positions, ("defaults",))
        defaults = node if defaults is None else _merge(defaults, node)
    assert defaults is not None
    spec = _wrap(spec_data, doc.positions, ())
    merged = _apply(defaults, spec)
    positions = Positions(doc.positions.file)
    data = _flatten(merged, (), positions, doc.positions)
    files, read = tuple(p for p, _ in chain), tuple(d.raw for _, d in chain)
    return Extended(LoadedDocument(data, positions), files, read=read)


def _load_chain(
    doc: LoadedDocument,
    path: Path,
    chain: list[tuple[Path, LoadedDocument]],
    vocabulary: Vocabulary,
) -> list[Diagnostic]:
    """Read the defaults files ``doc`` extends, nearest first, into ``chain``; the errors."""
    seen = [(_real(path), doc.positions.file)]
    current = doc
    folder = path.parent
    while isinstance(current.data, dict) and "extends" in current.data:
        here = current.positions
        value = current.data["extends"]
        if not isinstance(value, str) or not value.strip():
            return [here.diag(("extends",), "must be the path of a defaults file (a string)")]
        if len(chain) >= MAX_CHAIN:
            names = " -> ".join(name for _, name in seen)
            message = f"more than {MAX_CHAIN} defaults files in one chain ({names} -> ...)"
            return [here.diag(("extends",), message)]
        target, problem = _target(folder, value)
        if problem is not None:
            return [here.diag(("extends",), problem)]
        assert target is not None
        real = _real(target)
        if any(real == earlier for earlier, _ in seen):
            names = " -> ".join([*(name for _, name in seen), display(target)])
            return [here.diag(("extends",), f"a cycle of defaults files: {names}")]
        try:
            loaded = _load_defaults(target)
        except LoadError as exc:
            return [exc.diagnostic]
        problems = _check_defaults(loaded, vocabulary)
        if problems is None:
            message = f"{value} is not a defaults file (a mapping with defaults: and no service:)"
            return [here.diag(("extends",), message)]
        if problems:
            return problems
        chain.append((target, loaded))
        seen.append((real, loaded.positions.file))
        current, folder = loaded, target.parent
    return []


def _load_defaults(target: Path) -> LoadedDocument:
    """``load_file`` of a defaults file, parsed once for the same name and bytes: every spec
    of a fleet extends the same file (what is parsed is only read, never changed: ``_wrap``
    copies it)."""
    name = display(target)
    raw = read_raw(target, name)
    key = (name, raw)
    found = _PARSED.get(key)
    if found is None:
        found = load_text(decode_source(raw, name), name)
        found.raw = raw
        if len(_PARSED) >= 64:
            _PARSED.clear()
        _PARSED[key] = found
    return found


_PARSED: dict[tuple[str, bytes], LoadedDocument] = {}


def _real(path: Path) -> str:
    return os.path.realpath(path)


def _target(folder: Path, value: str) -> tuple[Path | None, str | None]:
    """The file ``value`` names (relative to ``folder``), or why it cannot be read."""
    if Path(value).is_absolute() or value.startswith("~"):
        return None, f"must be a path relative to this file (got {value!r})"
    if not value.endswith((".yaml", ".yml")):
        return None, f"must name a .yaml or .yml file (got {value!r})"
    target = folder / value
    try:
        info = target.stat()
    except OSError as exc:
        reason = "no such file" if isinstance(exc, FileNotFoundError) else exc.strerror
        return None, f"cannot read {value}: {reason or type(exc).__name__}"
    if not stat.S_ISREG(info.st_mode):
        return None, f"cannot read {value}: not a regular file"
    return target, None


def _check_defaults(doc: LoadedDocument, vocabulary: Vocabulary) -> list[Diagnostic] | None:
    """The structural errors of a defaults file (``None``: it is not one). Its values are
    checked where they land, in each spec, with the spec's models."""
    data, positions = doc.data, doc.positions
    if not is_defaults(data):
        return None
    out = _check_top(data, positions)
    defaults = data["defaults"]
    if not _mapping(positions, ("defaults",), defaults, out):
        return out
    allowed = vocabulary.service | {ALERTS, SLOS}
    for key, value in defaults.items():
        where: PathKey = ("defaults", key)
        if key == "service":
            message = "cannot have a default: each spec names its own service"
            out.append(positions.diag(where, message, key=True, code=codes.SPEC_UNKNOWN_KEY))
        elif key not in allowed:
            hint = suggest.did_you_mean(key, allowed)
            message = f"unknown key{hint} (a default may be set for: {', '.join(sorted(allowed))})"
            out.append(positions.diag(where, message, key=True, code=codes.SPEC_UNKNOWN_KEY))
        elif key == ALERTS and _mapping(positions, where, value, out):
            _check_alert_defaults(positions, value, vocabulary, out)
        elif key == SLOS and _mapping(positions, where, value, out):
            _check_keys(positions, where, value, vocabulary.slo, "an SLO default", out)
    return out


def _check_top(data: dict[str, Any], positions: Positions) -> list[Diagnostic]:
    """A defaults file's own keys: ``version: 1``, ``extends`` and ``defaults`` only."""
    out: list[Diagnostic] = []
    for key in data:
        if key not in TOP_KEYS:
            hint = suggest.did_you_mean(key, TOP_KEYS)
            message = f"unknown key{hint} (a defaults file holds version, extends and defaults)"
            out.append(positions.diag((key,), message, key=True, code=codes.SPEC_UNKNOWN_KEY))
    if "version" not in data:
        out.append(
            positions.diag((), "version: required field is missing", code=codes.SPEC_MISSING)
        )
    elif data["version"] != 1 or isinstance(data["version"], bool):
        out.append(positions.diag(("version",), f"must be 1 (got {data['version']!r})"))
    return out


def _check_alert_defaults(
    positions: Positions, alerts: dict[str, Any], vocabulary: Vocabulary, out: list[Diagnostic]
) -> None:
    for signal, value in alerts.items():
        where: PathKey = ("defaults", ALERTS, signal)
        if signal not in vocabulary.alert:
            known = ", ".join(sorted(vocabulary.alert))
            message = f"unknown signal {signal!r} (known: {known})"
            out.append(positions.diag(where, message, key=True, code=codes.SPEC_VALUE))
        elif _mapping(positions, where, value, out):
            keys = vocabulary.alert[signal] - PER_ALERT
            _check_keys(positions, where, value, keys, f"a {signal} alert default", out)


def _check_keys(
    positions: Positions,
    where: PathKey,
    value: dict[str, Any],
    allowed: Collection[str],
    what: str,
    out: list[Diagnostic],
) -> None:
    for key in value:
        if key not in allowed:
            hint = suggest.did_you_mean(key, allowed)
            message = f"unknown key{hint} (keys {what} may set: {', '.join(sorted(allowed))})"
            out.append(
                positions.diag((*where, key), message, key=True, code=codes.SPEC_UNKNOWN_KEY)
            )


def _mapping(positions: Positions, where: PathKey, value: Any, out: list[Diagnostic]) -> bool:
    if isinstance(value, dict):
        return True
    got = "a list" if isinstance(value, list) else repr(value)
    out.append(positions.diag(where, f"must be a mapping (got {got})", code=codes.SPEC_TYPE))
    return False


@dataclass
class _Node:
    """A value with the file it was written in and its path there."""

    value: Any  # a plain value, dict[str, _Node] or list[_Node]
    positions: Positions
    path: PathKey


def _wrap(data: Any, positions: Positions, path: PathKey) -> _Node:
    if isinstance(data, dict):
        return _Node({k: _wrap(v, positions, (*path, k)) for k, v in data.items()}, positions, path)
    if isinstance(data, list):
        return _Node([_wrap(v, positions, (*path, i)) for i, v in enumerate(data)], positions, path)
    return _Node(data, positions, path)


def _merge(base: _Node, over: _Node) -> _Node:
    """``over`` on top of ``base``: two mappings merge key by key (``over``'s keys first, in
    its order, then the keys only ``base`` has); anything else is ``over``."""
    if not (isinstance(base.value, dict) and isinstance(over.value, dict)):
        return over
    merged = {
        key: _merge(base.value[key], node) if key in base.value else node
        for key, node in over.value.items()
    }
    merged.update({k: v for k, v in base.value.items() if k not in over.value})
    return _Node(merged, over.positions, over.path)


def _apply(defaults: _Node, spec: _Node) -> _Node:
    """The spec with the defaults under it: service-level keys, then each alert entry over
    its signal's defaults, each SLO over the SLO defaults."""
    if not isinstance(spec.value, dict):
        return spec
    table: dict[str, _Node] = defaults.value
    service = {k: v for k, v in table.items() if k not in (ALERTS, SLOS)}
    merged = _merge(_Node(service, defaults.positions, defaults.path), spec)
    alerts, slos = table.get(ALERTS), table.get(SLOS)
    entries = merged.value.get(ALERTS)
    if alerts is not None and entries is not None and isinstance(entries.value, list):
        entries.value = [_alert(alerts, entry) for entry in entries.value]
    entries = merged.value.get(SLOS)
    if slos is not None and entries is not None and isinstance(entries.value, list):
        entries.value = [
            _merge(slos, entry) if isinstance(entry.value, dict) else entry
            for entry in entries.value
        ]
    return merged


def _alert(defaults: _Node, entry: _Node) -> _Node:
    if not isinstance(entry.value, dict):
        return entry
    signal = entry.value.get("signal")
    if signal is None or not isinstance(signal.value, str) or signal.value not in defaults.value:
        return entry
    return _merge(defaults.value[signal.value], entry)


def _flatten(node: _Node, at: PathKey, out: Positions, spec: Positions) -> Any:
    """Plain data for ``node``, recording in ``out`` where each value (at ``at``) was
    written."""
    out.values[at] = node.positions.values.get(node.path, (1, 1))
    key = node.positions.keys.get(node.path)
    if key is not None:
        out.keys[at] = key
    if node.positions is not spec:
        out.sources[at] = (node.positions.file, node.path)
    if isinstance(node.value, dict):
        return {k: _flatten(v, (*at, k), out, spec) for k, v in node.value.items()}
    if isinstance(node.value, list):
        return [_flatten(v, (*at, i), out, spec) for i, v in enumerate(node.value)]
    return node.value
