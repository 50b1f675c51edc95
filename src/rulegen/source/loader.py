"""YAML loading that remembers where every value came from.

Why: a spec error is only useful when it names the file, line and column of the bad value,
so the loader walks PyYAML's node graph itself and records the position of each path.
It also refuses what the safe loader alone would accept but a spec must not contain:
duplicate keys, alias bombs, non-string keys, explicit tags, nesting deep enough to exhaust
the parser's recursion, and text Python cannot write back (lone surrogates). Every other YAML
file rulegen reads from a user (the routing base file, promtool test files, signal
definitions) goes through here too, so the same guards hold for all of them.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
import yaml.reader

from rulegen.core import diagnostics as codes
from rulegen.errors import Diagnostic, FieldPath

PathKey = tuple[str | int, ...]
Where = PathKey | FieldPath  # a field, as a plain tuple of parts or a typed path
MAX_NODES = 20_000
MAX_BYTES = 2_000_000
# Lists and mappings inside each other; a spec needs about ten, a deep routing tree thirty.
MAX_DEPTH = 64


@dataclass
class Positions:
    """Maps a field path (``("alerts", 0, "threshold")``) to its 1-based (line, col).

    A spec that ``extends:`` defaults files holds values written elsewhere: ``sources`` maps
    the path of each such value (and of each whole mapping or list taken over) to the file it
    was written in and its path there; its line and column are that file's. A diagnostic of
    such a value names that file and says which spec inherited it.
    """

    file: str
    values: dict[PathKey, tuple[int, int]] = field(default_factory=dict)
    keys: dict[PathKey, tuple[int, int]] = field(default_factory=dict)
    sources: dict[PathKey, tuple[str, PathKey]] = field(default_factory=dict)
    # each text scalar's style and where it ends (its start is in ``values``), and the
    # source's lines: where a position inside a value (a PromQL parse error's) is in the file
    scalars: dict[PathKey, tuple[str | None, tuple[int, int]]] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list, repr=False)

    def inner(self, path: Where, line: int, col: int) -> tuple[int, int] | None:
        """The file's line and column of the character at 1-based ``line``:``col`` of the text
        value at ``path`` (a PromQL parser's position inside an expression), or ``None`` when
        it cannot be told for certain: the value is inherited, folded, or a quoted scalar
        over several lines (its escapes and folding move the characters)."""
        key = tuple(path)
        if key not in self.scalars or key in self.sources or key not in self.values:
            return None
        style, end = self.scalars[key]
        start = self.values[key]
        if style == "|":
            return _in_literal_block(self.lines, start, end, line, col)
        if line != 1 or start[0] != end[0] or style == ">":
            return None
        source = self.lines[start[0] - 1] if start[0] <= len(self.lines) else ""
        index = _decoded_index(source, start[1] - 1, style, col - 1)
        return None if index is None else (start[0], index + 1)

    def has(self, path: Where) -> bool:
        """Whether the file itself has a value at ``path`` (a default has none)."""
        return tuple(path) in self.values

    def at(self, path: Where, *, key: bool = False) -> tuple[int, int]:
        """The position of ``path``, or of its nearest ancestor that exists in the file."""
        return self._found(path, key=key)[1]

    def _found(self, path: Where, *, key: bool = False) -> tuple[PathKey, tuple[int, int]]:
        """The path that has a position (``path`` or its nearest ancestor), and the position."""
        table = self.keys if key else self.values
        probe = tuple(path)
        while probe:
            if probe in table:
                return probe, table[probe]
            if probe in self.values:
                return probe, self.values[probe]
            probe = probe[:-1]
        return (), self.values.get((), (1, 1))

    def written_in(self, path: Where) -> str:
        """The file the value at ``path`` (or its nearest ancestor) was written in."""
        found = self._found(path)[0]
        return self.sources[found][0] if found in self.sources else self.file

    def place(self, path: Where, message: str, *, key: bool = False) -> tuple[str, int, int, str]:
        """Where a message about ``path`` goes: file, line, column, and the message, which
        for an inherited value also says which spec got it and from which field."""
        found, (line, col) = self._found(path, key=key)
        if found not in self.sources:
            return self.file, line, col, message
        file, written = self.sources[found]
        return file, line, col, f"{message} ({self._via(written)})"

    def _via(self, written: PathKey) -> str:
        return f"inherited by {self.file} from {FieldPath.of(written)}"

    def diag(
        self, path: Where, message: str, *, key: bool = False, code: str = codes.SPEC_VALUE
    ) -> Diagnostic:
        """A diagnostic located at ``path`` (at its key, with ``key``)."""
        file, line, col, text = self.place(path, message, key=key)
        return Diagnostic(file, line, col, FieldPath.of(path), text, code)

    def origin(self, path: Where) -> Origin:
        """The position of ``path``, kept by what is resolved from it."""
        found, (line, col) = self._found(path)
        if found not in self.sources:
            return Origin(self.file, line, col, FieldPath.of(path))
        file, written = self.sources[found]
        return Origin(file, line, col, FieldPath.of(path), self._via(written))


@dataclass(frozen=True)
class Origin:
    """Where in a spec a rule comes from, to map promtool's messages back to the user.

    Why here: it is a position in an input file, like a diagnostic's; resolved objects and
    generated rules carry it, so a problem found as late as promtool still names the spec line,
    and ``lint`` finds the fields below it without parsing a path back from text.
    """

    file: str
    line: int
    col: int
    path: FieldPath
    # for a value a spec inherited from a defaults file (``file``): which spec, from where
    via: str = ""

    def where(self) -> str:
        """``FILE:LINE:COL``."""
        return f"{self.file}:{self.line}:{self.col}"

    def diagnostic(
        self, message: str, code: str = codes.SPEC_VALUE, *, path: FieldPath | None = None
    ) -> Diagnostic:
        """A problem of what came from here (at ``path`` below it, shown instead)."""
        shown = self.path if path is None else path
        text = f"{message} ({self.via})" if self.via else message
        return Diagnostic(self.file, self.line, self.col, shown, text, code)


def _decoded_index(source: str, start: int, style: str | None, wanted: int) -> int | None:
    """The index in ``source`` (a line) of the ``wanted``-th character of the one-line scalar
    starting at ``start``: plain text as it is; quoted text past its quote, an escape or a
    doubled quote counting as the one character it stands for."""
    if style is None:  # plain
        return start + wanted
    index, count = start + 1, 0
    while index < len(source):
        char = source[index]
        if char == style and not (style == "'" and source[index + 1 : index + 2] == "'"):
            # the closing quote: right after the value (``unexpected end of input``) or past it
            return index if count == wanted else None
        if count == wanted:
            return index
        if style == "'" and char == "'":
            index += 2
        elif style == '"' and char == "\\":
            index += _ESCAPE_WIDTHS.get(source[index + 1 : index + 2], 2)
        else:
            index += 1
        count += 1
    return None


_ESCAPE_WIDTHS = {"x": 4, "u": 6, "U": 10}  # ``\xNN``, ``\uNNNN``, ``\UNNNNNNNN``


def _in_literal_block(
    lines: list[str], start: tuple[int, int], end: tuple[int, int], line: int, col: int
) -> tuple[int, int] | None:
    """``line``:``col`` of a literal block scalar (``|``, ``|-``) in the file: its content
    starts on the line after the header, each line indented as the first non-empty one."""
    first = next((n for n in range(start[0], min(end[0], len(lines))) if lines[n].strip()), None)
    if first is None:
        return None
    indent = len(lines[first]) - len(lines[first].lstrip(" "))
    content = []
    for n in range(first, min(end[0], len(lines))):
        if lines[n].strip() and len(lines[n]) - len(lines[n].lstrip(" ")) < indent:
            break  # the next key: the block ended
        if lines[n].strip():
            content.append(n)
    target = start[0] + line  # 1-based: the header is on line start[0]
    if target - 1 > content[-1]:  # past the last line (the end of input): right after it
        return content[-1] + 1, len(lines[content[-1]]) + 1
    return target, indent + col


@dataclass
class LoadedDocument:
    """A parsed YAML document and where each of its values sits in the file."""

    data: Any
    positions: Positions
    # the bytes parsed (``load_file``; empty for text from memory): what a cache key hashes,
    # so that the key is of exactly what was parsed, never of a second read
    raw: bytes = b""


class LoadError(Exception):
    """The file is not a YAML document rulegen can read; carries one diagnostic."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        self.diagnostic = diagnostic
        super().__init__(diagnostic.render())

    def __reduce__(self) -> tuple[type[LoadError], tuple[Diagnostic]]:
        return (LoadError, (self.diagnostic,))


# Files that stand for something else, by the name messages give them: the copy of a spec
# read from standard input (``-``) is ``<stdin>``, not a temporary path.
_NAMED: dict[str, str] = {}


def name_file(path: Path, name: str) -> None:
    """Messages and headers call ``path`` ``name`` from now on (``<stdin>``)."""
    _NAMED[os.path.realpath(path)] = name


def display(path: Path) -> str:
    """A stable, relative name for a path (the header and diagnostics use it).

    A broken symbolic link (its target missing, or a loop, where ``Path.resolve`` raises on
    Python 3.11) is named by itself, which is what its error message needs.
    """
    if _NAMED and (named := _NAMED.get(os.path.realpath(path))) is not None:
        return named
    cwd = os.path.realpath(Path.cwd())
    try:
        resolved = path.resolve(strict=True)
    except (OSError, RuntimeError):
        resolved = Path(os.path.realpath(path.parent)) / path.name
    relative = os.path.relpath(resolved, cwd)
    return Path(relative).as_posix() if not relative.startswith("..") else path.as_posix()


def read_capped(path: Path) -> bytes:
    """The file's first ``MAX_BYTES + 1`` bytes (enough to tell it is too large); a device
    or a FIFO named by mistake never makes rulegen read without end. Raises ``OSError``."""
    with path.open("rb") as handle:
        return handle.read(MAX_BYTES + 1)


def read_source(path: Path, display: str) -> str:
    """The text of a user's YAML file: at most ``MAX_BYTES``, UTF-8; else ``LoadError``."""
    return decode_source(read_raw(path, display), display)


def read_raw(path: Path, display: str) -> bytes:
    """``read_capped``, with a failure to read as ``LoadError`` (the file named)."""
    try:
        return read_capped(path)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise LoadError(_whole(display, f"cannot read file: {reason}")) from None


def decode_source(raw: bytes, display: str) -> str:
    """``raw`` as text: at most ``MAX_BYTES``, UTF-8; else ``LoadError``."""
    if len(raw) > MAX_BYTES:
        raise LoadError(_whole(display, f"file is larger than {MAX_BYTES} bytes"))
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LoadError(_whole(display, f"file is not UTF-8 ({exc.reason})")) from None


def _whole(file: str, message: str) -> Diagnostic:
    """A problem of the whole file (it cannot be read, or is no YAML), at its start."""
    return Diagnostic(file, 1, 1, FieldPath(), message, codes.SPEC_YAML)


def load_file(path: Path, display: str) -> LoadedDocument:
    """Read and parse one spec file (read once: ``raw`` holds the bytes parsed); raises
    ``LoadError`` with a positioned message."""
    raw = read_raw(path, display)
    doc = load_text(decode_source(raw, display), display)
    doc.raw = raw
    return doc


def load_text(text: str, display: str) -> LoadedDocument:
    """Parse YAML text; the document must be exactly one mapping."""
    if len(text) > MAX_BYTES:
        raise LoadError(_whole(display, f"file is larger than {MAX_BYTES} bytes"))
    positions = Positions(display)
    node = _fast_compose(text)
    if node is None:
        node = _compose(text, display)
    positions.lines = text.split("\n")
    builder = _Builder(positions, yaml.SafeLoader(""))
    data = builder.build(node, ())
    return LoadedDocument(data, positions)


_FastLoader: Any = getattr(yaml, "CSafeLoader", None)
# Where libyaml and PyYAML part ways (libyaml accepts tabs as separators, reads a bare ``!``
# tag, a ``|#`` header or a second BOM otherwise, places empty flow values and complex keys
# elsewhere): a tab, a BOM, a ``!`` or ``?`` that may start a token (``{"a":!!int 5}`` puts a
# tag right after a ``:``), a block scalar header running into a comment, a ``:`` closed at
# once in flow. Every explicit tag takes the Python path, which rejects it with its position.
# Plenty of ordinary text matches too (``a != b``); it only takes the slower, reference path.
_UNUSUAL = re.compile(r"[\t\ufeff]|(?:^|[\s,\[{:])[!?]|[|>][-+0-9]*#|:[ ]*[,}\]]", re.MULTILINE)
_SURROGATE = re.compile("[\ud800-\udfff]")
# The tags the safe loader resolves plain scalars and collections to; anything else was
# written by hand.
_IMPLICIT_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}"
    for name in ("str", "int", "float", "bool", "null", "timestamp", "seq", "map", "merge", "value")
)


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
        or _depth_bound(text) > MAX_DEPTH
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


def _depth_bound(text: str) -> int:
    """A cheap upper bound of how deeply lists and mappings nest in ``text``.

    Why: a deep document goes to the Python composer below, which stops at the first node
    deeper than ``MAX_DEPTH`` and names it; libyaml would build the whole graph first. Block
    collections nest at most two per indentation column (a list may share its key's column),
    plus those a line opens itself (``- - a``, ``- a: b``), plus open flow brackets. Brackets
    inside quoted text can skew it; that only picks the parser, since the Python composer and
    the builder both check the real depth. Comment lines are left out (a comment aligned far
    to the right of its entry would count as dozens of levels).
    """
    if len(text) <= MAX_DEPTH:
        return len(text)  # every level takes at least one character
    worst = flow = 0
    for line in text.splitlines():
        body = line.lstrip(" ")
        if body.startswith("#"):
            continue  # a comment opens nothing, however far it is indented
        opens = body.count("[") + body.count("{")
        starts = body.count("- ") + body.count(": ") + body.count("? ") + 1
        worst = max(worst, 2 * (len(line) - len(body)) + 2 + starts + flow + opens)
        flow = max(0, flow + opens - body.count("]") - body.count("}"))
    return worst


def _too_deep(file: str, line: int, col: int, path: PathKey) -> Diagnostic:
    """The first node past ``MAX_DEPTH``; its path is cut short to keep the line readable."""
    shown = FieldPath(path[:4], more=len(path) > 4)
    message = f"nested more than {MAX_DEPTH} levels deep (lists and mappings inside each other)"
    return Diagnostic(file, line, col, shown, message, codes.SPEC_YAML)


def _tagged(tag: str) -> str:
    shown = tag.replace("tag:yaml.org,2002:", "!!")
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    return f"explicit YAML tags are not allowed (got {shown}); write the plain value"


class _GuardedLoader(yaml.SafeLoader):
    """PyYAML's safe loader that refuses explicit tags and nesting deeper than ``MAX_DEPTH``.

    Why here: the composer recurses once per level, so a document ``[[[[…`` a thousand deep
    ends in ``RecursionError``; it is stopped at the first event past the limit, with the
    position and field path of that node.
    """

    def __init__(self, text: str, display: str) -> None:
        super().__init__(text)
        self.display = display
        self.open: list[PathKey] = []  # the paths of the collections being composed

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        event = self.peek_event()  # type: ignore[no-untyped-call]  # untyped in the stubs
        if isinstance(event, yaml.AliasEvent):
            return super().compose_node(parent, index)
        path = self._path(parent, index)
        line, col = event.start_mark.line + 1, event.start_mark.column + 1
        tag = getattr(event, "tag", None)
        if tag is not None:
            raise LoadError(_at(self.display, (line, col), path, _tagged(tag)))
        if not isinstance(event, yaml.CollectionStartEvent):
            return super().compose_node(parent, index)
        if len(self.open) >= MAX_DEPTH:
            raise LoadError(_too_deep(self.display, line, col, path))
        self.open.append(path)
        try:
            return super().compose_node(parent, index)
        finally:
            self.open.pop()

    def _path(self, parent: yaml.Node | None, index: object) -> PathKey:
        if parent is None or not self.open:
            return ()
        if isinstance(index, int):
            return (*self.open[-1], index)
        if isinstance(index, yaml.ScalarNode):
            return (*self.open[-1], str(index.value))
        return self.open[-1]  # a key that is itself a collection: reported by the builder


def _compose(text: str, display: str) -> yaml.Node:
    """The node graph from PyYAML's own parser; raises ``LoadError`` with its message."""
    try:
        loader = _GuardedLoader(text, display)
    except yaml.reader.ReaderError as exc:
        raise LoadError(_reader_error(text, exc, display)) from None
    try:
        node = loader.get_single_node()
    except yaml.reader.ReaderError as exc:
        raise LoadError(_reader_error(text, exc, display)) from None
    except yaml.MarkedYAMLError as exc:
        raise LoadError(_marked_error(exc, display)) from None
    except yaml.YAMLError as exc:
        raise LoadError(_whole(display, f"invalid YAML: {exc}")) from None
    finally:
        loader.dispose()
    if node is None:
        raise LoadError(_whole(display, "file is empty (expected a spec mapping)"))
    return node


def _reader_error(text: str, exc: yaml.reader.ReaderError, display: str) -> Diagnostic:
    before = text[: exc.position]
    line = before.count("\n") + 1
    col = exc.position - (before.rfind("\n") + 1) + 1
    char = f"U+{exc.character:04X}" if isinstance(exc.character, int) else repr(exc.character)
    return Diagnostic(
        display, line, col, FieldPath(), f"invalid YAML: character {char} is not allowed",
        codes.SPEC_YAML,
    )  # fmt: skip


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
    return Diagnostic(display, line, col, FieldPath(), f"invalid YAML: {problem}", codes.SPEC_YAML)


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
                    code=codes.SPEC_YAML,
                )
            )
        here = (node.start_mark.line + 1, node.start_mark.column + 1)
        self.positions.values[path] = here
        if isinstance(node, yaml.CollectionNode) and len(path) >= MAX_DEPTH:
            # also an alias that nests a structure in itself (``&a [*a]``) or a chain of them
            raise LoadError(_too_deep(self.positions.file, *here, path))
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, path)
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
        assert isinstance(node, yaml.ScalarNode)
        return self._scalar(node, path, here)

    def _scalar(self, node: yaml.Node, path: PathKey, here: tuple[int, int]) -> Any:
        """The node's value. A tag written by hand, a constructor's failure (``2020-99-99``,
        an integer of 5000 digits) or a lone surrogate is a positioned error, not a
        traceback (or a ``UnicodeEncodeError`` when the output is written)."""
        if node.tag not in _IMPLICIT_TAGS:  # the Python path refuses them first
            raise LoadError(_at(self.positions.file, here, path, _tagged(node.tag)))
        try:
            value = self.constructor.construct_object(node, deep=True)
        except yaml.constructor.ConstructorError as exc:
            problem = exc.problem
        except Exception as exc:  # any other constructor failure: ValueError, OverflowError ...
            problem = str(exc).split(";")[0]  # not Python's advice on raising its digit limit
        else:
            if isinstance(value, str) and _SURROGATE.search(value):
                raise LoadError(_at(self.positions.file, here, path, _surrogate(value)))
            if isinstance(value, str):
                end = (node.end_mark.line + 1, node.end_mark.column + 1)
                # (plain is None in PyYAML, "" in libyaml: one value for both parsers)
                self.positions.scalars[path] = (getattr(node, "style", None) or None, end)
            return value
        raise LoadError(_at(self.positions.file, here, path, f"invalid value: {problem}"))

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
            key = str(self._scalar(key_node, path, key_pos))
            if key in result:
                first = self.positions.keys[(*path, key)]
                raise LoadError(
                    _at(
                        self.positions.file,
                        key_pos,
                        (*path, key),
                        f"duplicate key {key!r} (first defined on line {first[0]})",
                        codes.SPEC_DUPLICATE,
                    )
                )
            self.positions.keys[(*path, key)] = key_pos
            result[key] = self.build(value_node, (*path, key))
        return result


def _at(
    file: str, pos: tuple[int, int], path: PathKey, message: str, code: str = codes.SPEC_YAML
) -> Diagnostic:
    return Diagnostic(file, pos[0], pos[1], FieldPath.of(path), message, code)


def _surrogate(text: str) -> str:
    found = _SURROGATE.search(text)
    assert found is not None
    code = f"U+{ord(found.group()):04X}"
    return (
        f"contains a lone surrogate {code} (from a \\u escape), which is not text; "
        "write the character itself or its \\U00XXXXXX escape"
    )
