"""What an import produces: spec documents to write, and every choice and refusal, positioned.

Why one shape for every source (Prometheus rule files, Sloth, OpenSLO, Pyrra): the command,
the writer and the summary are the same whatever the input; each source only maps its own
fields onto rulegen's spec and says, with the file, line and field it read, what it had to
adapt or could not take.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FieldPath = tuple[str | int, ...]
"""A place in a spec document: ``("alerts", 3, "severity")``."""


@dataclass(frozen=True)
class Note:
    """Something an import did or refused, where the source says it: ``file:line: field``."""

    file: str
    line: int | None
    field: str
    text: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        return f"{where}: {self.field}: {self.text}" if self.field else f"{where}: {self.text}"


@dataclass
class ImportedService:
    """One spec to write: its data (plain YAML-ready values, in the order to write them) and
    the comments to write above some of its keys (where a choice was made)."""

    service: str
    document: dict[str, Any]
    comments: dict[FieldPath, str] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class UserTest:
    """A promtool test file of the imported rules, its ``rule_files`` rewritten to the
    generated paths, to be placed where the build runs user tests."""

    name: str
    text: str
    source: str


@dataclass
class ImportResult:
    """Everything one ``rulegen import`` run produced."""

    services: list[ImportedService] = field(default_factory=list)
    imported: list[str] = field(default_factory=list)
    """One line per rule or SLO taken as it is (``DiskFull (node.rules.yml:12)``)."""
    adapted: list[Note] = field(default_factory=list)
    refused: list[Note] = field(default_factory=list)
    user_tests: list[UserTest] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    """What the import could not do that is not the input's fault (a check it could not run)."""


@dataclass(frozen=True)
class ImportOptions:
    """The command line's choices: ``--service NAME`` and ``--severity LEVEL``."""

    service: str | None = None
    severity: str | None = None


Importer = Callable[[Sequence[Path], ImportOptions], ImportResult]
"""``import_files(files, options)``: one per KIND, in ``rulegen.importer.<kind>``; every
problem with the input is a ``Note`` in ``refused`` (or a ``rulegen.errors.SpecError``
when a file cannot be read at all), never an exception."""
