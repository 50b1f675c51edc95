"""An imported spec as YAML text: block style, the choices made as comments, deterministic.

Why its own emitter: ``rulegen.output`` writes generated files, which carry no comments; an
imported spec is a file people go on to edit, so each choice the import made (a severity
from ``--severity``, a group without an interval) is a comment above its key. Keys keep the
document's order, lists are indented under their key as in the docs' examples, multi-line
PromQL is a literal block, and every scalar is quoted by PyYAML's own rules; the text is
parsed back and compared with the document before it is returned.
"""

from __future__ import annotations

from typing import Any

import yaml
import yaml.reader

from rulegen.errors import printable
from rulegen.importer.model import FieldPath, ImportedService

MARK = "# Imported by rulegen"
"""How every file ``rulegen import`` writes begins; an import replaces only such files."""

_BREAKS = ("\x85", "\u2028", "\u2029", "\r")


def header(kind: str, sources: list[str]) -> str:
    """The first line of an imported file: where it came from, and who may replace it."""
    names = ", ".join(printable(s) for s in sources) or "nothing"
    return (
        f"{MARK} import {kind} from {names}. A later import replaces this file while this "
        "line comes first: delete the line to keep your edits.\n"
    )


def render_spec(service: ImportedService) -> str:
    """The spec document of ``service`` with its comments, without a header."""
    return render(service.document, service.comments)


def render(data: dict[str, Any], comments: dict[FieldPath, str] | None = None) -> str:
    """A mapping as block YAML, with ``comments`` (one line each) above the keys they name."""
    lines: list[str] = []
    _mapping(data, (), 0, lines, comments or {})
    text = "".join(lines)
    if yaml.safe_load(text) != data:  # a bug of this emitter, never of the input
        raise RuntimeError("the imported spec does not read back as written")
    return text


def _mapping(
    data: dict[str, Any], path: FieldPath, indent: int, out: list[str],
    comments: dict[FieldPath, str],
) -> None:  # fmt: skip
    pad = " " * indent
    for key, value in data.items():
        here = (*path, key)
        if here in comments:
            out.extend(f"{pad}# {printable(line)}\n" for line in comments[here].splitlines())
        name = _scalar(str(key))
        if isinstance(value, dict) and value:
            out.append(f"{pad}{name}:\n")
            _mapping(value, here, indent + 2, out, comments)
        elif isinstance(value, list) and value:
            out.append(f"{pad}{name}:\n")
            _sequence(value, here, indent + 2, out, comments)
        else:
            out.append(f"{pad}{name}:{_inline(value, indent)}")


def _sequence(
    items: list[Any], path: FieldPath, indent: int, out: list[str],
    comments: dict[FieldPath, str],
) -> None:  # fmt: skip
    pad = " " * indent
    for index, item in enumerate(items):
        here = (*path, index)
        if here in comments:
            out.extend(f"{pad}# {printable(line)}\n" for line in comments[here].splitlines())
        if (isinstance(item, dict | list)) and item:
            body: list[str] = []
            if isinstance(item, dict):
                _mapping(item, here, indent + 2, body, comments)
            else:
                _sequence(item, here, indent + 2, body, comments)
            first = next(i for i, line in enumerate(body) if not line.lstrip().startswith("#"))
            body[first] = f"{pad}- {body[first][indent + 2 :]}"
            out.extend(body)
        else:
            out.append(f"{pad}-{_inline(item, indent)}")


def _inline(value: Any, indent: int) -> str:
    """What follows ``key:`` or ``-`` on its line (and the lines of a literal block)."""
    if isinstance(value, dict):
        return " {}\n"
    if isinstance(value, list):
        return " []\n"
    if isinstance(value, str) and _literal(value):
        body = value[:-1] if value.endswith("\n") else value
        chomp = "" if value.endswith("\n") else "-"
        pad = " " * (indent + 2)
        lines = "".join(f"{pad}{line}\n" if line else "\n" for line in body.split("\n"))
        return f" |{chomp}\n{lines}"
    return f" {_scalar(value)}\n"


def _literal(text: str) -> bool:
    """Whether ``text`` (multi-line) reads back exactly from a literal block."""
    body = text[:-1] if text.endswith("\n") else text
    return (
        "\n" in body
        and not body.endswith("\n")
        and not body.startswith((" ", "\n"))
        and not any(b in text for b in _BREAKS)
        and not yaml.reader.Reader.NON_PRINTABLE.search(text)
        and all(line == line.rstrip() for line in body.split("\n"))
    )


def _scalar(value: Any) -> str:
    """One scalar on one line, quoted as PyYAML quotes it (double quotes for line breaks)."""
    style = '"' if isinstance(value, str) and ("\n" in value or "\r" in value) else None
    text: str = yaml.dump(
        value, Dumper=yaml.SafeDumper, default_style=style, allow_unicode=True, width=2**30
    )
    return text.removesuffix("\n").removesuffix("\n...").rstrip("\n")
