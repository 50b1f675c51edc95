"""``severities:``: the severity values a repository's alerts take, most severe first, and
which of them page.

Why: real rule sets use more than critical, warning and info (kube-prometheus'
``InfoInhibitor`` has ``severity: none``; others use ``page`` and ``ticket``, ``high``,
``P1``…). A spec declares its own (usually through the defaults file it extends), and so may
the routing file; without a declaration the default (critical, warning and info, critical
paging) keeps every output as it was. Every severity a spec names (an alert's, an SLO's page
or ticket, a diagnosis') must be declared, and what rulegen picks itself follows the
declaration: an SLO's page and the diagnoses that page take the first paging severity, an
SLO's ticket and the other diagnoses the first one that does not page; lint ranks severities
by their order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from rulegen.core import diagnostics as codes
from rulegen.source.fields import Collector
from rulegen.source.loader import PathKey

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
NAME_TEXT = "[A-Za-z0-9][A-Za-z0-9_.-]*"
ENTRY_KEYS = ("name", "pages")
HINT = "a severity of your own is declared with `severities:` (docs/spec.md#severities)"


@dataclass(frozen=True)
class Severities:
    """A declaration: the names, most severe first, the ones that page, and where it was
    written (``FILE:LINE:COL``; empty for the default)."""

    names: tuple[str, ...]
    paging: frozenset[str]
    where: str = ""

    @property
    def declared(self) -> bool:
        """Whether a file declares it (the default is declared nowhere)."""
        return bool(self.where)

    def rank(self, name: str) -> int:
        """How severe ``name`` is: higher is more severe (0 for a name not declared)."""
        return len(self.names) - self.names.index(name) if name in self.names else 0

    @property
    def page(self) -> str:
        """What an alert that pages takes by default: the first paging severity (the first
        severity when none pages)."""
        return next((n for n in self.names if n in self.paging), self.names[0])

    @property
    def ticket(self) -> str:
        """What an alert that does not page takes by default: the first severity that does
        not page (the last one when every severity pages)."""
        return next((n for n in self.names if n not in self.paging), self.names[-1])

    def choices(self) -> str:
        """``'critical', 'warning' or 'info'``: the names as a message lists them."""
        quoted = [repr(n) for n in self.names]
        return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"

    def shown(self) -> str:
        """``critical (pages), warning, info``: the declaration as a message shows it."""
        return ", ".join(f"{n} (pages)" if n in self.paging else n for n in self.names)


DEFAULT = Severities(("critical", "warning", "info"), frozenset({"critical"}))


def declaration(col: Collector, path: PathKey, raw: Any) -> Severities | None:
    """The declaration at ``path`` (``None`` when the file has none there); each problem at
    its entry. What stands of a broken declaration is returned, so the severities it does
    declare are not reported again where they are used."""
    if raw is None:
        return None
    if not isinstance(raw, list) or not raw:
        col.error(path, "must be a list of severities, most severe first, such as "
                  f"[critical, warning, info, none] (got {raw!r})")  # fmt: skip
        return DEFAULT
    names: list[str] = []
    paging: set[str] = set()
    for index, item in enumerate(raw):
        entry = _entry(col, (*path, index), item, first=index == 0)
        if entry is None:
            continue
        name, pages = entry
        if name in names:
            col.error((*path, index), f"duplicate severity {name!r} (also "
                      f"{path[-1]}[{names.index(name)}])")  # fmt: skip
            continue
        names.append(name)
        if pages:
            paging.add(name)
    if not names:
        return DEFAULT
    return Severities(tuple(names), frozenset(paging), col.origin(path).where())


def _entry(col: Collector, path: PathKey, item: Any, *, first: bool) -> tuple[str, bool] | None:
    """One entry: a name (the first pages, the others do not) or ``{name, pages}``."""
    pages: Any = first
    if isinstance(item, dict):
        for key in item:
            if key not in ENTRY_KEYS:
                col.diagnostics.append(col.positions.diag((*path, key), "unknown key (a "
                                       "severity has name and pages)", key=True))  # fmt: skip
        if "name" not in item:
            col.error(path, "name: required field is missing")
            return None
        pages = item.get("pages", first)
        if not isinstance(pages, bool):
            col.error((*path, "pages"), f"must be true or false (got {pages!r})")
            return None
        name: Any = item["name"]
        where: PathKey = (*path, "name")
    else:
        name, where = item, path
    if not isinstance(name, str) or not NAME.match(name):
        col.error(where, f"a severity is a name of {NAME_TEXT} (got {name!r})")
        return None
    return name, bool(pages)


def check(col: Collector, path: PathKey, value: Any, severities: Severities) -> bool:
    """Whether ``value`` is a declared severity; an error at ``path`` naming them if not."""
    if isinstance(value, str) and value in severities.names:
        return True
    if severities.declared:
        message = (f"must be {severities.choices()}, the severities declared at "
                   f"{severities.where} (got {value!r})")  # fmt: skip
    else:
        message = f"must be {severities.choices()} (got {value!r})"
    col.add(path, message, codes.SPEC_VALUE, "error", HINT)
    return False


def disagreement(spec: Severities, routing: Severities) -> str | None:
    """Why a spec's severities do not fit the routing file's, or ``None`` when they do: a
    spec's are the routing file's or a part of them, in the same order, paging alike."""
    missing = [n for n in spec.names if n not in routing.names]
    if missing:
        return f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not declared there"
    order = [n for n in routing.names if n in spec.names]
    if order != list(spec.names):
        return f"the order differs (there: {', '.join(order)})"
    differs = [n for n in spec.names if (n in spec.paging) != (n in routing.paging)]
    if differs:
        return f"paging differs for {', '.join(differs)}"
    return None
