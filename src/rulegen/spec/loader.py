"""YAML loading that remembers where every value came from.

Why: a spec error is only useful when it names the file, line and column of the bad value,
so the loader walks PyYAML's node graph itself and records the position of each path.
It also refuses what the safe loader alone would accept but a spec must not contain:
duplicate keys, alias bombs, non-string keys.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
import yaml.reader

from rulegen.errors import Diagnostic

PathKey = tuple[str | int, ...]
MAX_NODES = 20_000
MAX_BYTES = 2_000_000


@dataclass
class Positions:
    """Maps a field path (``("alerts", 0, "threshold")``) to its 1-based (line, col)."""

    file: str
    values: dict[PathKey, tuple[int, int]] = field(default_factory=dict)
    keys: dict[PathKey, tuple[int, int]] = field(default_factory=dict)

    def has(self, path: PathKey) -> bool:
        """Whether the file itself has a value at ``path`` (a default has none)."""
        return tuple(path) in self.values

    def at(self, path: PathKey, *, key: bool = False) -> tuple[int, int]:
        """The position of ``path``, or of its nearest ancestor that exists in the file."""
        table = self.keys if key else self.values
        probe = tuple(path)
        while probe:
            if probe in table:
                return table[probe]
            if probe in self.values:
                return self.values[probe]
            probe = probe[:-1]
        return self.values.get((), (1, 1))

    def diag(self, path: PathKey, message: str, *, key: bool = False) -> Diagnostic:
        """A diagnostic located at ``path``."""
        line, col = self.at(path, key=key)
        return Diagnostic(self.file, line, col, format_path(path), message)


@dataclass
class LoadedDocument:
    """A parsed YAML document and where each of its values sits in the file."""

    data: Any
    positions: Positions


class LoadError(Exception):
    """The file is not a YAML document rulegen can read; carries one diagnostic."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        self.diagnostic = diagnostic
        super().__init__(diagnostic.render())

    def __reduce__(self) -> tuple[type[LoadError], tuple[Diagnostic]]:
        return (LoadError, (self.diagnostic,))


_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def format_path(path: PathKey) -> str:
    """``("alerts", 0, "threshold")`` → ``alerts[0].threshold``; odd keys as ``["a b"]``.

    Why: a key with a line break or a dot must not break the one-line diagnostic or read as
    two fields.
    """
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _PLAIN_KEY.match(part):
            out += f".{part}" if out else part
        else:
            out += f"[{json.dumps(part)}]"
    return out


def load_file(path: Path, display: str) -> LoadedDocument:
    """Read and parse one spec file; raises ``LoadError`` with a positioned message."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise LoadError(
            Diagnostic(display, 1, 1, "", f"cannot read file: {exc.strerror}")
        ) from None
    if len(raw) > MAX_BYTES:
        raise LoadError(Diagnostic(display, 1, 1, "", f"file is larger than {MAX_BYTES} bytes"))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LoadError(
            Diagnostic(display, 1, 1, "", f"file is not UTF-8 ({exc.reason})")
        ) from None
    return load_text(text, display)


def load_text(text: str, display: str) -> LoadedDocument:
    """Parse YAML text; the document must be exactly one mapping."""
    positions = Positions(display)
    node = _fast_compose(text)
    if node is None:
        node = _compose(text, display)
    builder = _Builder(positions, yaml.SafeLoader(""))
    data = builder.build(node, ())
    return LoadedDocument(data, positions)


_FastLoader: Any = getattr(yaml, "CSafeLoader", None)
# Where libyaml and PyYAML part ways (libyaml accepts tabs as separators, reads a bare ``!``
# tag, a ``|#`` header or a second BOM otherwise, places empty flow values and complex keys
# elsewhere): a tab, a BOM, a ``!`` or ``?`` that may start a token, a block scalar header
# running into a comment, a ``:`` closed at once in flow. Plenty of ordinary text matches
# too (``a != b``); it only takes the slower, reference path.
_UNUSUAL = re.compile(r"[\t\ufeff]|(?:^|[\s,\[{])[!?]|[|>][-+0-9]*#|:[ ]*[,}\]]", re.MULTILINE)


def _fast_compose(text: str) -> yaml.Node | None:
    """The node graph from libyaml's parser, or ``None`` to take the pure-Python path.

    Why: libyaml parses a spec about five times faster, which matters for fleets of specs.
    Anything unusual (an error, a character the Python reader refuses, text where the two
    parsers are known to differ) goes through the Python parser, the reference the
    diagnostics and positions are written against.
    """
    if (
        _FastLoader is None
        or _UNUSUAL.search(text)
        or yaml.reader.Reader.NON_PRINTABLE.search(text)
    ):
        return None
    loader = _FastLoader(text)
    try:
        node: yaml.Node | None = loader.get_single_node()
    except yaml.YAMLError:
        return None
    finally:
        loader.dispose()
    return node


def _compose(text: str, display: str) -> yaml.Node:
    """The node graph from PyYAML's own parser; raises ``LoadError`` with its message."""
    try:
        loader = yaml.SafeLoader(text)
    except yaml.reader.ReaderError as exc:
        raise LoadError(_reader_error(text, exc, display)) from None
    try:
        node = loader.get_single_node()
    except yaml.reader.ReaderError as exc:
        raise LoadError(_reader_error(text, exc, display)) from None
    except yaml.MarkedYAMLError as exc:
        raise LoadError(_marked_error(exc, display)) from None
    except yaml.YAMLError as exc:
        raise LoadError(Diagnostic(display, 1, 1, "", f"invalid YAML: {exc}")) from None
    finally:
        loader.dispose()
    if node is None:
        raise LoadError(Diagnostic(display, 1, 1, "", "file is empty (expected a spec mapping)"))
    return node


def _reader_error(text: str, exc: yaml.reader.ReaderError, display: str) -> Diagnostic:
    before = text[: exc.position]
    line = before.count("\n") + 1
    col = exc.position - (before.rfind("\n") + 1) + 1
    char = f"U+{exc.character:04X}" if isinstance(exc.character, int) else repr(exc.character)
    return Diagnostic(display, line, col, "", f"invalid YAML: character {char} is not allowed")


def _marked_error(exc: yaml.MarkedYAMLError, display: str) -> Diagnostic:
    """PyYAML's problem, with its context ("while scanning a quoted scalar at 2:10")."""
    mark = exc.problem_mark or exc.context_mark
    line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
    problem = exc.problem or "invalid YAML"
    if problem.startswith("but found another document"):
        problem = "found a second document (a spec file holds exactly one)"
    elif problem.startswith("expected <block end>"):
        problem = "bad indentation or a missing ':' (a key is not aligned with its siblings)"
    context = exc.context
    if context and exc.context_mark is not None and exc.context_mark is not mark:
        where = f"{exc.context_mark.line + 1}:{exc.context_mark.column + 1}"
        if "expected a single document" not in context and "block" not in context:
            problem += f" ({context} at {where})"
    return Diagnostic(display, line, col, "", f"invalid YAML: {problem}")


class _Builder:
    """Turns a node graph into plain Python data, recording positions on the way."""

    def __init__(self, positions: Positions, constructor: yaml.SafeLoader) -> None:
        self.positions = positions
        self.constructor = constructor
        self.count = 0

    def build(self, node: yaml.Node, path: PathKey) -> Any:
        self.count += 1
        if self.count > MAX_NODES:
            raise LoadError(
                self.positions.diag(
                    path,
                    f"document expands to more than {MAX_NODES} values "
                    "(YAML alias bomb or runaway anchors)",
                )
            )
        self.positions.values[path] = (node.start_mark.line + 1, node.start_mark.column + 1)
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, path)
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
        assert isinstance(node, yaml.ScalarNode)
        try:
            return self.constructor.construct_object(node, deep=True)
        except yaml.constructor.ConstructorError as exc:
            raise LoadError(self.positions.diag(path, f"invalid value: {exc.problem}")) from None

    def _mapping(self, node: yaml.MappingNode, path: PathKey) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key_pos = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise LoadError(
                    _at(self.positions.file, key_pos, path, "merge keys (<<) are not supported")
                )
            if not isinstance(key_node, yaml.ScalarNode):
                raise LoadError(
                    _at(self.positions.file, key_pos, path, "keys must be plain strings")
                )
            key = str(self.constructor.construct_object(key_node))
            if key in result:
                first = self.positions.keys[(*path, key)]
                raise LoadError(
                    _at(
                        self.positions.file,
                        key_pos,
                        (*path, key),
                        f"duplicate key {key!r} (first defined on line {first[0]})",
                    )
                )
            self.positions.keys[(*path, key)] = key_pos
            result[key] = self.build(value_node, (*path, key))
        return result


def _at(file: str, pos: tuple[int, int], path: PathKey, message: str) -> Diagnostic:
    return Diagnostic(file, pos[0], pos[1], format_path(path), message)
