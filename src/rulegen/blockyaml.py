"""The YAML writer's fast path: block-style YAML of plain data, libyaml's bytes without libyaml.

Why: a fleet's render writes hundreds of megabytes of YAML (rules, and four times as many
bytes of promtool tests), and handing libyaml a node graph costs a Python object and two
resolver calls per scalar. Generated files repeat the same keys, label values and
expressions thousands of times, so each distinct scalar is rendered once, by the real dumper
(``render``, libyaml), and reused; the layout around the scalars (block mappings, indentless
sequences in mappings, ``[]`` and ``{}`` for empty collections) is libyaml's emitter state
machine (``write_indent``, ``write_indicator``) ported for block collections only.

A scalar's rendering depends on its context only in ways this module checks: whether it is a
simple key (rendered as one), the indentation of a literal block's lines (re-indented), and
line folding, which libyaml does only past column 4,096: a document with a line that long is
refused here (``Unsupported``), as is any scalar whose rendering is not one line or a plain
literal block, and any type other than dict, list, str, int, bool, float and None. The caller
then writes the document with libyaml itself, so the bytes never depend on this path
(tests/unit/test_output_fast_yaml.py compares both on every generated file of the example and
on drawn data).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import yaml

# libyaml folds a scalar at a space only once the column passes its width (rulegen's: 4096).
WIDTH = 4096


class Unsupported(Exception):
    """Data this path does not write exactly as libyaml would; the caller uses libyaml."""


Render = Callable[[Any], str]
# A scalar as a mapping value or sequence item: ``(text, "", ())`` for a one-line rendering,
# ``(None, header, lines)`` for a literal block (``|`` or ``|-``; its lines without their
# indentation, ``""`` for an empty one); ``REFUSED`` for any other.
Rendering = tuple[str | None, str, tuple[str, ...]]
REFUSED: Rendering = (None, "", ())


class Scalars:
    """Each distinct scalar's rendering as a mapping value or sequence item, and as a simple
    key, found by dumping it with the real dumper (``render``: data → document) once."""

    def __init__(self, render: Render, limit: int = 40_000) -> None:
        self._render = render
        self._limit = limit
        self.values: dict[object, Rendering] = {}
        self.keys: dict[object, str] = {}

    def value(self, value: Any) -> Rendering:
        """The rendering of ``value`` (probed now if unknown)."""
        found = self.values.get(_key(value))
        return found if found is not None else self.probe([value])[_key(value)]

    def probe(self, values: list[Any]) -> dict[object, Rendering]:
        """Find (and remember) the renderings of ``values`` in one document, whose entries
        ``k0``, ``k1``, … render as each would alone: a scalar's style does not depend on
        its neighbours or its column, and a rendering on one line was not folded, which the
        entry's column (more than alone) would only make likelier. One refused there (a long
        one, folded) is probed again alone."""
        if len(self.values) + len(values) >= self._limit:
            self.values.clear()
        out: dict[object, Rendering] = {}
        unique = []
        for value in {_key(v): v for v in values}.values():
            known = _plain_literal(value) or _one_line(value)
            if known is not None:
                out[_key(value)] = known
            else:
                unique.append(value)
        found = _entries(self._render({f"k{i}": v for i, v in enumerate(unique)})) if unique else []
        if unique and len(found) == len(unique):
            out.update(zip(map(_key, unique), found, strict=True))
        for value in unique:
            if out.get(_key(value), REFUSED) is REFUSED:
                out[_key(value)] = _rendering(self._render({"k0": value}))
        self.values.update(out)
        return out

    def key(self, value: Any) -> str:
        """The rendering of a simple mapping key (``Unsupported`` if it would not be one)."""
        key = _key(value)
        found = self.keys.get(key)
        if found is None:
            if len(self.keys) >= self._limit:
                self.keys.clear()
            found = self.keys[key] = self._probe_key(value)
        if not found:
            raise Unsupported(f"key {value!r:.60}")
        return found

    def _probe_key(self, value: Any) -> str:
        """The key's rendering, ``""`` when it is not one line followed by ``: ``."""
        document = self._render({value: 0})
        text = document[: -len(": 0\n")]
        if not text or "\n" in text or document != text + ": 0\n" or text.startswith("? "):
            return ""
        return text


def _plain_literal(value: Any) -> Rendering | None:
    """The literal block libyaml writes for a multi-line string of printable ASCII whose
    lines have no trailing space, that neither starts with a space or a line break nor ends
    with two (rulegen's PromQL expressions), or ``None`` for any other value.

    Why without libyaml: these are most of a fleet's distinct scalars by size (each
    service's expressions name it), and for them libyaml's choice is fixed: rulegen asks for
    a literal block (``output._style``), which libyaml allows for text with no special
    character and no space before a line break (``yaml_emitter_analyze_scalar``), with no
    indentation indicator (no leading space or break) and the chomping indicator ``-``
    without a final line break, none with one (``yaml_emitter_write_block_scalar_hints``).
    """
    if type(value) is not str or "\n" not in value or _NOT_PLAIN_LITERAL.search(value):
        return None
    if value[0] in " \n" or value.endswith((" ", "\n\n")) or " \n" in value:
        return None
    if value.endswith("\n"):
        return None, "|", tuple(value[:-1].split("\n"))
    return None, "|-", tuple(value.split("\n"))


# A character outside printable ASCII and the line break.
_NOT_PLAIN_LITERAL = re.compile("[^\x20-\x7e\n]")


def _one_line(value: Any) -> Rendering | None:
    """``_plain`` or ``_single_quoted`` of a one-line printable-ASCII string (the checks
    they share made once), else ``None``."""
    if type(value) is not str or not value or _NOT_PLAIN_ONE_LINE.search(value):
        return None
    tag = _resolve(value)
    if _plain_allowed(value) and tag == _STR:
        return value, "", ()
    if _plain_refused(value) or tag != _STR:
        return "'" + value.replace("'", "''") + "'", "", ()
    return None


def _plain_allowed(value: str) -> bool:
    """Certain that ``yaml_emitter_analyze_scalar`` allows plain style in a block."""
    return not (
        value[0] in _INDICATORS or value[-1] in " :" or value.startswith("...")
        or ": " in value or " #" in value
    )  # fmt: skip


def _plain_refused(value: str) -> bool:
    """Certain that ``yaml_emitter_analyze_scalar`` refuses plain style in a block."""
    return (
        value[0] in _ALWAYS_INDICATORS
        or (value[0] in "-?:" and value[1:2] in ("", " "))
        or value.startswith(("---", "..."))
        or value[-1] in " :" or ": " in value or " #" in value
    )  # fmt: skip


def _plain(value: Any) -> Rendering | None:
    """The string itself, for a one-line string of printable ASCII that libyaml writes as a
    plain scalar (a mapping value or sequence item), or ``None`` when that is not certain.

    Certain when no rule of ``yaml_emitter_analyze_scalar`` refuses plain style in a block
    (no leading or trailing space, no indicator first, no ``: `` or trailing ``:``, no
    `` #``) and PyYAML's resolver reads it back as a string (not ``1``, ``yes``, ``null``)."""
    if type(value) is not str or not value or _NOT_PLAIN_ONE_LINE.search(value):
        return None
    if not _plain_allowed(value) or _resolve(value) != _STR:
        return None
    return value, "", ()


def _single_quoted(value: Any) -> Rendering | None:
    """``'value'`` (quotes doubled), for a one-line string of printable ASCII that libyaml
    certainly may not write plain (an indicator first, ``: `` or `` #`` inside, a space or
    ``:`` at an end, or text the resolver reads as another type), or ``None``.

    Certain because nothing in such text keeps libyaml from single quotes (no line break,
    tab or special character: ``yaml_emitter_analyze_scalar``), its next choice after plain.
    """
    if type(value) is not str or not value or _NOT_PLAIN_ONE_LINE.search(value):
        return None
    if not _plain_refused(value) and _resolve(value) == _STR:
        return None
    return "'" + value.replace("'", "''") + "'", "", ()


_NOT_PLAIN_ONE_LINE = re.compile("[^\x20-\x7e]")
_INDICATORS = frozenset(" -?:,[]{}#&*!|>'\"%@`")
# A first character that always keeps a scalar from plain style in a block (``-``, ``?``
# and ``:`` only when a space or the end follows).
_ALWAYS_INDICATORS = frozenset(" ,[]{}#&*!|>'\"%@`")
_STR = "tag:yaml.org,2002:str"


def _resolve(value: str) -> str:
    """The tag PyYAML's resolver gives ``value`` as a plain scalar (what the serializer asks
    before libyaml may write it plain)."""
    tag: str = _RESOLVER.resolve(yaml.ScalarNode, value, (True, False))  # type: ignore[no-untyped-call]
    return tag


_RESOLVER = yaml.resolver.Resolver()


def _entries(document: str) -> list[Rendering]:
    """The renderings of a document ``k0: …``, ``k1: …``, … in order (empty when it is not
    made of such entries)."""
    out: list[Rendering] = []
    lines = document.split("\n")
    if lines[-1] != "":
        return []
    begun: list[str] | None = None  # the entry being read, as a one-entry document's lines
    for line in lines[:-1]:
        if line[:1] == "k":  # an entry (a literal's lines are indented or empty)
            if begun is not None:
                out.append(_rendering("\n".join(begun) + "\n"))
            prefix = f"k{len(out)}: "
            if not line.startswith(prefix):
                return []
            begun = ["k0: " + line[len(prefix) :]]
        elif begun is None:
            return []
        else:
            begun.append(line)
    if begun is not None:
        out.append(_rendering("\n".join(begun) + "\n"))
    return out


def _rendering(document: str) -> Rendering:
    """The rendering of the value of a one-entry document ``k0: …``."""
    if not document.startswith("k0: ") or not document.endswith("\n"):
        return REFUSED
    body = document[4:-1]
    if "\n" not in body:
        return (body, "", ()) if body else REFUSED
    header, *lines = body.split("\n")
    if header not in ("|", "|-") or any(line and not line.startswith("  ") for line in lines):
        return REFUSED
    return None, header, tuple(line[2:] for line in lines)


def _key(value: Any) -> object:
    """A cache key that tells apart what compares equal but prints differently (``True`` and
    ``1``, ``0.0`` and ``-0.0``, ``1`` and ``1.0``)."""
    kind = type(value)
    if kind is str:
        return value
    if kind is float:
        return (float, repr(value))
    return (kind, value)


_SCALARS = (str, int, bool, float, type(None))


class Writer:
    """One document, as libyaml's emitter writes it (block style, indent 2).

    The emitter's state is ``indent``, ``column`` and, for its ``whitespace`` and
    ``indention`` flags, ``mode``: ``FRESH`` (both set: at a line's indentation), ``TEXT``
    (neither: after a scalar or an indicator) or ``DASH`` (after a sequence's ``-``: only
    ``indention``). The scalar paths of mappings are inlined (most of the document).

    A scalar not rendered yet is left as an empty slot and rendered with the document's
    other new ones in one probe (``Scalars.probe``) at the end. Its rendering never changes
    what follows: the next thing written is always a line break and indentation (the next
    key or item, or the document's end), which a literal block ends with and a one-line
    scalar is followed by; so a slot is written as a one-line scalar, and a literal block
    filled in without its last line break.
    """

    __slots__ = ("column", "indent", "mode", "out", "pending", "scalars")

    def __init__(self, scalars: Scalars) -> None:
        self.scalars = scalars
        self.out: list[str] = []
        self.indent = -1  # none yet (libyaml: ``None`` before the root collection)
        self.column = 0
        self.mode = FRESH
        # the slots: (index in ``out``, value, column and mode before it, literal indent)
        self.pending: list[tuple[int, Any, int, int, int]] = []

    def document(self, data: Any) -> str:
        """The document's text (without the ``---`` / ``...`` an implicit document lacks)."""
        if type(data) not in (dict, list):
            raise Unsupported("a scalar document")  # libyaml may mark it open-ended
        self.node(data, mapping=False)
        self._write_indent(0)
        if self.pending:
            self._fill()
        return "".join(self.out)

    def node(self, value: Any, mapping: bool) -> None:
        """A mapping value (``mapping``), sequence item or the root."""
        kind = type(value)
        if kind is dict:
            if value:
                self._block_mapping(value)
            else:
                self._text("{}")  # write_indicator("{", need_whitespace), then "}"
        elif kind is list:
            if value:
                self._block_sequence(value, mapping)
            else:
                self._text("[]")
        elif kind in _SCALARS:
            self._scalar(value)
        else:
            raise Unsupported(f"a {kind.__name__}")

    def _block_mapping(self, value: dict[Any, Any]) -> None:
        outer = self.indent
        self.indent = indent = 0 if outer < 0 else outer + 2
        out, append = self.out, self.out.append
        keys, values, pending = self.scalars.keys, self.scalars.values, self.pending
        breaking = "\n" + " " * indent
        column, mode = self.column, self.mode  # the emitter's state, kept local in the loop
        for key, item in value.items():
            # write_indent, then the key (never after a space: write_indent leaves one)
            text = keys.get(key) if type(key) is str else None
            if not text:
                text = self._key(key)
            if mode == TEXT or column > indent or (column == indent and mode == DASH):
                append(breaking + text + ":")
            else:
                append(" " * (indent - column) + text + ":")
            column, mode = indent + len(text) + 1, TEXT
            # the value: a one-line scalar after a space, a new string left for later, or
            # the general path
            if type(item) is str:
                found = values.get(item)
                if found is None:
                    pending.append((len(out), item, column, TEXT, indent + 2))
                    append("")
                    column += 1
                    continue
                if found[0] is not None:
                    text = found[0]
                    append(" " + text)
                    column += len(text) + 1
                    if column > WIDTH:
                        raise Unsupported("a line past libyaml's width")
                    continue
            self.column, self.mode = column, mode
            self.node(item, mapping=True)
            column, mode = self.column, self.mode
        self.column, self.mode = column, mode
        self.indent = outer

    def _key(self, key: Any) -> str:
        if type(key) not in _SCALARS:
            raise Unsupported("a key that is not a scalar")
        return self.scalars.key(key)

    def _block_sequence(self, value: list[Any], mapping: bool) -> None:
        outer = self.indent
        indentless = mapping and self.mode == TEXT  # libyaml: not ``indention``
        self.indent = indent = 0 if outer < 0 else outer if indentless else outer + 2
        for item in value:
            self._write_indent(indent)
            self.out.append("-")  # write_indicator("-", need_whitespace, indention)
            self.column += 1
            self.mode = DASH
            self.node(item, mapping=False)
        self.indent = outer

    def _scalar(self, value: Any) -> None:
        found = self.scalars.values.get(_key(value))
        if found is None:
            literal_indent = max(self.indent, 0) + 2
            self.pending.append((len(self.out), value, self.column, self.mode, literal_indent))
            self.out.append("")
            self.column += 1
            self.mode = TEXT
            return
        text, header, lines = found
        if text is not None:
            self._text(text)
            return
        if not header:
            raise Unsupported(f"value {value!r:.60}")
        self._text(header)
        pad = " " * (max(self.indent, 0) + 2)
        self.out.append("\n" + "".join(pad + line + "\n" if line else "\n" for line in lines))
        self.column = 0
        self.mode = FRESH

    def _fill(self) -> None:
        """Render the slots' scalars in one probe and put them in place."""
        found = self.scalars.probe([value for _, value, _, _, _ in self.pending])
        for index, value, column, mode, indent in self.pending:
            text, header, lines = found[_key(value)]
            space = "" if mode == FRESH else " "
            if text is not None:
                if column + len(space) + len(text) > WIDTH:
                    raise Unsupported("a line past libyaml's width")
                self.out[index] = space + text
            elif header:
                pad = " " * indent
                body = "".join(pad + line + "\n" if line else "\n" for line in lines)
                self.out[index] = space + header + "\n" + body[:-1]
            else:
                raise Unsupported(f"value {value!r:.60}")

    def _text(self, text: str) -> None:
        """A one-line scalar (or a literal's header, or ``[]``, ``{}``) after a space unless
        one is there (libyaml's ``write_indicator`` and ``write_plain``)."""
        if self.mode != FRESH:
            text = " " + text
        self.out.append(text)
        self.column += len(text)
        if self.column > WIDTH:
            raise Unsupported("a line past libyaml's width")
        self.mode = TEXT

    def _write_indent(self, indent: int) -> None:
        """A line break unless the line holds only indentation so far, then spaces up to
        ``indent`` (libyaml's ``yaml_emitter_write_indent``)."""
        column, mode = self.column, self.mode
        if mode == TEXT or column > indent or (column == indent and mode == DASH):
            self.out.append("\n")
            column = 0
        if column < indent:
            self.out.append(" " * (indent - column))
        self.column = max(column, indent)
        self.mode = FRESH


# ``Writer.mode``: libyaml's ``whitespace`` and ``indention`` both set; neither; ``indention``.
FRESH, TEXT, DASH = 0, 1, 2
