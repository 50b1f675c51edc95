"""Serialisation: one YAML and one JSON writer, the generated-file header, the file store.

Why: CI compares committed output byte for byte, so every file goes through the same dumper
with fixed options. Writing the output folder is ``rulegen.outdir``'s job.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import re
import zlib
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from rulegen.blockyaml import Scalars, Unsupported, Writer
from rulegen.errors import printable

# libyaml's emitter when PyYAML has it (about 10× faster; the same bytes for rulegen's data,
# checked by the golden and drift tests), else the pure-Python one.
_Emitter: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def plain_relative(name: Any) -> bool:
    """Whether ``name`` is a plain relative path inside a folder: no ``..``, no absolute path,
    no empty or ``.`` parts, no backslashes or control characters (an output file's name as
    read back from the manifest or a cache, which anyone may have edited)."""
    if not isinstance(name, str) or not 0 < len(name) <= 4096:
        return False
    if "\\" in name or any(ord(c) < 32 or ord(c) == 127 for c in name):
        return False
    parts = name.split("/")
    return not PurePosixPath(name).is_absolute() and all(p not in ("", ".", "..") for p in parts)


class _BlockDumper(_Emitter):  # type: ignore[misc,valid-type]
    """Multi-line strings (PromQL) as literal blocks; everything else as PyYAML decides."""

    def resolve(self, kind: type[yaml.Node], value: Any, implicit: tuple[bool, bool]) -> str:
        """The resolver's answer, remembered: the emitter asks it twice per scalar, and
        generated files repeat the same keys and values thousands of times."""
        if kind is not yaml.ScalarNode:
            tag: str = super().resolve(kind, value, implicit)
            return tag
        key = (value, implicit)
        found = _RESOLVED.get(key)
        if found is None:
            if len(_RESOLVED) > _REMEMBERED:
                _RESOLVED.clear()
            found = _RESOLVED[key] = super().resolve(kind, value, implicit)
        return found


_RESOLVED: dict[tuple[str, tuple[bool, bool]], str] = {}
# How many strings each memo of this module keeps before starting over: every service of a
# fleet adds strings of its own (its name in series and selectors) that no other service
# repeats, so an unbounded memo grows a worker by ~0.5 MB a service.
_REMEMBERED = 40_000


# YAML reads these as line breaks inside plain, single-quoted and block scalars.
_YAML_BREAKS = re.compile("[\x85\u2028\u2029\r]")


def _str(_dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = _STYLES.get(value, _UNKNOWN)
    if style is _UNKNOWN:
        if len(_STYLES) > _REMEMBERED:
            _STYLES.clear()
        style = _STYLES[value] = _style(value)
    return yaml.ScalarNode("tag:yaml.org,2002:str", value, style=style)


def _style(value: str) -> str | None:
    """Double quotes for a string with a character YAML reads as a line break, a literal
    block for other multi-line strings (none has trailing spaces: a block would drop them),
    else PyYAML's choice."""
    if _YAML_BREAKS.search(value):
        return '"'
    if "\n" in value and not any(line != line.rstrip() for line in value.splitlines()):
        return "|"
    return None


# Each string's style, remembered: generated files repeat the same keys, label values and
# expressions thousands of times, and the checks above read the whole string.
_UNKNOWN = "?"
_STYLES: dict[str, str | None] = {}


_BlockDumper.add_representer(str, _str)


class FileSet(MutableMapping[str, str]):
    """Rendered files by path, in insertion order, each with its SHA-256: held
    zlib-compressed, or written out to a spool folder (``spool``).

    Why: a build keeps every file until promtool has passed (nothing half-written in the
    output folder), and a fleet's YAML runs to hundreds of megabytes that compress about 10×;
    level 1 costs about 4 ms per megabyte. Workers compress and hash what they render, so only
    compressed bytes cross process borders (``merge`` takes them as they are) and the output
    folder's manifest takes each file's hash from here, without the text (``digest``). A
    build that writes an output folder gives its workers the folder the new output is
    assembled in (``rulegen.outdir.Staged``) as ``spool``: each file is written there once,
    by the worker that rendered it, and only its path and hash travel.
    """

    def __init__(self, files: Mapping[str, str] | None = None, spool: Path | None = None) -> None:
        # name -> (compressed bytes, or the file's path in the spool folder; its SHA-256)
        self._blobs: dict[str, tuple[bytes | Path, str]] = {}
        self._spool = spool
        if files:
            self.update(files)

    def __getitem__(self, name: str) -> str:
        return self.data(name).decode("utf-8")

    def __setitem__(self, name: str, text: str) -> None:
        data = text.encode("utf-8")
        digest = hashlib.sha256(data).hexdigest()
        if self._spool is None:
            self._blobs[name] = (zlib.compress(data, 1), digest)
            return
        if not plain_relative(name):
            raise ValueError(f"not a file name inside the output folder: {name!r}")
        path = self._spool / name
        try:  # a worker writes thousands of files into a few folders: made when missing
            write_output(path, data)
        except FileNotFoundError:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_output(path, data)
        self._blobs[name] = (path, digest)

    def __delitem__(self, name: str) -> None:
        del self._blobs[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._blobs)

    def __len__(self) -> int:
        return len(self._blobs)

    def data(self, name: str) -> bytes:
        """The file's UTF-8 bytes (what is written to disk)."""
        held = self._blobs[name][0]
        return held.read_bytes() if isinstance(held, Path) else zlib.decompress(held)

    def digest(self, name: str) -> str:
        """The SHA-256 of the file's bytes, in hex (``rulegen.outdir.manifest.digest``)."""
        return self._blobs[name][1]

    def spooled(self, name: str) -> Path | None:
        """Where the file was written, when it was (``spool``)."""
        held = self._blobs[name][0]
        return held if isinstance(held, Path) else None

    def held_bytes(self) -> int:
        """What the files take in memory, compressed (a spooled file: nothing)."""
        return sum(len(held) for held, _ in self._blobs.values() if isinstance(held, bytes))

    def merge(self, other: FileSet) -> None:
        """Add ``other``'s files without decompressing them."""
        self._blobs.update(other._blobs)

    def take(self, other: FileSet, name: str) -> None:
        """Add ``other``'s file ``name`` without decompressing it."""
        self._blobs[name] = other._blobs[name]


def write_output(path: Path, data: bytes) -> None:
    """``data`` (UTF-8) as ``Path.write_text`` writes its text: line breaks as the system
    writes them (unchanged on POSIX), in the mode the umask gives."""
    if os.linesep == "\n":
        path.write_bytes(data)
    else:
        path.write_text(data.decode("utf-8"), encoding="utf-8")


def header(source: str) -> str:
    """The first line of every generated file (a spec's name with a line break or another
    control character is escaped: it would end the comment and break the YAML)."""
    return f"# Code generated by rulegen from {printable(source)}. DO NOT EDIT.\n"


def dump_yaml(data: Any, source: str) -> str:
    """Serialise ``data`` deterministically, with the generated-file header.

    Plain block data goes through ``rulegen.blockyaml`` (libyaml's bytes, each distinct
    scalar rendered by libyaml once); anything it does not write exactly as libyaml would,
    through libyaml itself.
    """
    try:
        text = Writer(_SCALARS).document(data)
    except Unsupported:
        text = _libyaml(data)
    return header(source) + text


def _libyaml(data: Any) -> str:
    """``data`` as the C emitter writes it, with rulegen's styles and options."""
    stream = io.StringIO()
    dumper = _BlockDumper(
        stream, allow_unicode=True, width=4096, default_flow_style=False, sort_keys=False
    )
    try:
        dumper.open()
        dumper.serialize(_Nodes(dumper).node(data))
        dumper.close()
    finally:
        dumper.dispose()
    return stream.getvalue()


# Every scalar's rendering by the writer above, for the fast path.
_SCALARS = Scalars(_libyaml)


_STR, _INT, _FLOAT = "tag:yaml.org,2002:str", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"
_BOOL, _NULL = "tag:yaml.org,2002:bool", "tag:yaml.org,2002:null"
_MAP, _SEQ = "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"


class _Nodes:
    """The node graph PyYAML's safe representer would build for plain data, built directly.

    Why: the generic representer (type dispatch through the MRO, alias bookkeeping) costs more
    than libyaml's emitter for rulegen's output; generated files have no anchors either way.
    """

    def __init__(self, dumper: yaml.SafeDumper) -> None:
        self.dumper = dumper

    def node(self, value: Any) -> yaml.Node:
        kind = type(value)
        if kind is str:
            return _str(self.dumper, value)
        if kind is dict:
            pairs = [(self.node(k), self.node(v)) for k, v in value.items()]
            return yaml.MappingNode(_MAP, pairs, flow_style=False)
        if kind is list:
            return yaml.SequenceNode(_SEQ, [self.node(v) for v in value], flow_style=False)
        if kind is bool:
            return yaml.ScalarNode(_BOOL, "true" if value else "false")
        if kind is int:
            return yaml.ScalarNode(_INT, str(value))
        if value is None:
            return yaml.ScalarNode(_NULL, "null")
        node: yaml.Node = self.dumper.represent_data(value)  # floats and anything unusual
        return node


def dump_json(data: Any) -> str:
    """Serialise ``data`` as JSON deterministically (sorted keys; JSON has no comments, so
    the generated-file note lives inside the data): the bytes of ``json.dumps(data,
    indent=2, sort_keys=True, ensure_ascii=False)``.

    Why not that call itself: with ``indent`` the standard library has no C encoder, and a
    fleet's dashboards take longer to encode that way than everything else they cost; a
    direct walk over plain JSON data (the strings still escaped by the C function) takes
    half the time. Data of any other shape goes to ``json.dumps``.
    """
    text = json_text(data)
    if text is None:
        return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    return text


def json_text(data: Any, convert: Callable[[Any], Any] | None = None) -> str | None:
    """``dump_json``'s bytes for plain JSON data, ``None`` for data of any other shape.

    ``convert`` replaces each value of a type JSON does not have (an object, a subclass of
    ``str``) with the plain value it stands for, walked in turn: objects written as they
    are (the Grafana SDK's), without a plain copy of the whole first.
    """
    out: list[str] = []
    try:
        _json_into(out, data, "\n", convert)
    except _NotPlainJSON:
        return None
    out.append("\n")
    return "".join(out)


class _NotPlainJSON(Exception):
    """A value ``_json_into`` leaves to ``json.dumps`` (a tuple, a non-string key, …)."""


# The types ``_json_into`` writes itself (or refuses: a float that is not finite).
_JSON_KINDS = frozenset({str, dict, list, bool, int, float, type(None)})


_ESCAPE = json.encoder.encode_basestring  # ensure_ascii=False's escaping (C when built)


def _json_into(
    out: list[str], value: Any, newline: str, convert: Callable[[Any], Any] | None
) -> None:
    """``value`` as ``json.dumps(indent=2, sort_keys=True, ensure_ascii=False)`` writes it,
    ``newline`` being the line break plus the current indentation."""
    kind = type(value)
    if kind is str:
        out.append(_ESCAPE(value))
    elif kind is dict:
        _json_object(out, value, newline, convert)
    elif kind is list:
        _json_array(out, value, newline, convert)
    elif value is True or value is False or value is None:
        out.append("true" if value is True else "false" if value is False else "null")
    elif kind is int or (kind is float and math.isfinite(value)):
        out.append(repr(value))
    elif convert is not None and kind not in _JSON_KINDS:
        _json_into(out, convert(value), newline, convert)
    else:
        raise _NotPlainJSON


def _json_object(
    out: list[str], value: dict[Any, Any], newline: str, convert: Callable[[Any], Any] | None
) -> None:
    if not value:
        out.append("{}")
        return
    try:
        ordered = sorted(value)
    except TypeError:  # keys of several types: not JSON's
        raise _NotPlainJSON from None
    inner = newline + "  "
    lead = "{" + inner
    for key in ordered:
        if type(key) is not str:
            raise _NotPlainJSON
        head = _KEYS.get(key)
        if head is None:
            if len(_KEYS) >= 20_000:
                _KEYS.clear()
            head = _KEYS[key] = _ESCAPE(key) + ": "
        item = value[key]
        text = _scalar_json(item)
        if text is not None:
            out.append(lead + head + text)
        else:
            out.append(lead + head)
            _json_into(out, item, inner, convert)
        lead = "," + inner
    out.append(newline + "}")


def _json_array(
    out: list[str], value: list[Any], newline: str, convert: Callable[[Any], Any] | None
) -> None:
    if not value:
        out.append("[]")
        return
    inner = newline + "  "
    lead = "[" + inner
    for item in value:
        text = _scalar_json(item)
        if text is not None:
            out.append(lead + text)
        else:
            out.append(lead)
            _json_into(out, item, inner, convert)
        lead = "," + inner
    out.append(newline + "]")


def _scalar_json(value: Any) -> str | None:
    """A string, a whole number or a constant as ``_json_into`` writes it; ``None`` for
    anything else (written by ``_json_into``). Why: most values of a dashboard are these,
    and a call of ``_json_into`` each was a tenth of its JSON's cost."""
    kind = type(value)
    if kind is str:
        text: str = _ESCAPE(value)
        return text
    if kind is int:
        return repr(value)
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    return None


# Each mapping key as written before its value (``"key": ``): a dashboard repeats a few dozen.
_KEYS: dict[str, str] = {}
