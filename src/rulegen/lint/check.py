"""What a lint check is, and the scope one check runs in on one spec.

Why its own module: every check module imports these types, and the registry imports every
check module; with the types here neither imports the other.
"""

from __future__ import annotations

import inspect
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property
from typing import TYPE_CHECKING

from rulegen import units
from rulegen.errors import FieldPath, Severity

if TYPE_CHECKING:  # types only: ``lint --help`` reads ``TIMEOUT`` without loading the specs
    from rulegen.pipeline.service import ResolvedSpec
    from rulegen.promapi.client import PrometheusAPI
    from rulegen.source.fields import Collector
    from rulegen.source.loader import Positions, Where

_LITERAL = re.compile(r"``(.+?)``", re.DOTALL)  # a reST inline literal
MIN_SCRAPES_PER_WINDOW = 4  # one failed scrape plus ingestion races (Robust Perception)
TIMEOUT = 30.0
"""The default deadline of each request to ``--prometheus`` (``lint --timeout``), in seconds."""
ASK_LESS = "narrower alert selectors"


@dataclass(frozen=True)
class Check:
    """One lint check: a stable ``id`` (``area/name``, the page ``docs/checks/<id>.md``), the
    severity of its findings unless it says otherwise, a one-line ``summary`` (``lint
    --list``), and ``run``, whose docstring is the check's one-paragraph doc. An ``online``
    check reads a live Prometheus and runs only with ``--prometheus``; its ``prepare`` asks the
    server, once before any spec, what the check needs of it for every spec."""

    id: str
    severity: Severity
    summary: str
    run: Callable[[Scope], None]
    online: bool = False
    prepare: Callable[[Server], object] | None = None

    @property
    def doc(self) -> str:
        """The one-paragraph doc (the docstring of ``run``), as plain text: the docstring's
        reST literals (````x````) lose their backquotes, for ``lint --list --format json``
        readers that render text, not reST."""
        return _LITERAL.sub(r"\1", inspect.cleandoc(self.run.__doc__ or ""))


class Server:
    """The Prometheus that online checks ask, and the answers several checks share."""

    def __init__(self, url: str, timeout: float = TIMEOUT) -> None:
        from rulegen.promapi.client import PrometheusAPI  # the network modules: online only

        self.api: PrometheusAPI = PrometheusAPI(url, timeout=timeout, ask_less=ASK_LESS)
        self.now = time.time()
        self.seen: dict[str, bool] = {}  # selector → whether a series matched in the last day

    @cached_property
    def scrape_intervals(self) -> dict[str, Decimal]:
        """The longest scrape interval of the active targets, per job (targets whose interval
        the server does not give are left out)."""
        out: dict[str, Decimal] = {}
        for item in self.api.targets():
            if item.scrape_interval is None:
                continue
            job = item.labels.get("job") or item.scrape_pool
            out[job] = max(out.get(job, Decimal(0)), item.scrape_interval)
        return out


@dataclass
class Scope:
    """One check on one spec: what it reads, and where its findings go (each at the position
    of the value it is about, with the check's id and, unless given, its severity)."""

    check: Check
    spec: ResolvedSpec
    collector: Collector
    server: Server | None = field(default=None)
    # the alert names the user's own promtool tests (``specs/tests/``) check
    tested: frozenset[str] = field(default=frozenset())

    @property
    def positions(self) -> Positions:
        """Where each value of the spec file sits."""
        return self.collector.positions

    def report(self, path: Where, message: str, severity: Severity | None = None) -> None:
        """A finding about the value at ``path``."""
        self.collector.add(path, message, self.check.id, severity or self.check.severity)

    def field(self, base: Where, key: str | int) -> FieldPath:
        """``base`` then ``key`` when the file has that value, else ``base`` (a default has no
        line of its own)."""
        return self.collector.field(base, key)

    @property
    def online(self) -> Server:
        """The server of an online check (only those run, only with ``--prometheus``)."""
        assert self.server is not None, f"{self.check.id} runs only with --prometheus"
        return self.server


def fmt(seconds: Decimal) -> str:
    """A duration as the spec writes it (``1m30s``)."""
    return units.format_duration(seconds)
