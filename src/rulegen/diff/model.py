"""The diff of two versions of the specs as plain objects: what every report format reads.

Why one model: the text for a terminal, the markdown for a pull request and the JSON for CI
tell the same facts, so they are decided once (``compare``) and only printed three ways.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from rulegen.diff.facts import AlertKey

Change = Literal["changed", "added", "removed", "unchanged"]
CHANGES: tuple[Change, ...] = ("changed", "added", "removed", "unchanged")
Labels = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class FieldChange:
    """One field of an alert in both versions (``None``: that version has no such field)."""

    name: str
    old: str | None
    new: str | None


@dataclass(frozen=True)
class History:
    """One version of one alert replayed over the backtest's range.

    ``episodes`` counts the firing periods that overlap the range (one already firing at its
    start included), summed over every label set; ``label_sets`` are the label sets that fired,
    without the rule's own labels (so a changed ``severity`` or ``team`` does not make every
    label set look new).
    """

    episodes: int
    firing_ms: int
    label_sets: frozenset[Labels]


@dataclass
class AlertDiff:
    """One alert: how it changed, which fields differ, and (with a backtest) both replays."""

    key: AlertKey
    change: Change
    fields: tuple[FieldChange, ...]
    old: History | None = None
    new: History | None = None
    replayed: bool = False

    @property
    def starts_firing(self) -> list[Labels]:
        """Label sets that fire after the edit and did not before."""
        before = self.old.label_sets if self.old else frozenset()
        after = self.new.label_sets if self.new else frozenset()
        return sorted(after - before)

    @property
    def stops_firing(self) -> list[Labels]:
        """Label sets that fired before the edit and do not after."""
        before = self.old.label_sets if self.old else frozenset()
        after = self.new.label_sets if self.new else frozenset()
        return sorted(before - after)


@dataclass(frozen=True)
class Names:
    """What was added, removed or changed among named things (recording rules, panels)."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)


@dataclass
class ServiceDiff:
    """One service: its alerts (changed first), and a summary of its recordings and panels."""

    service: str
    change: Change
    alerts: list[AlertDiff]
    recordings: Names = Names()
    panels: Names = Names()
    dashboard_changed: bool = False

    def count(self, change: Change) -> int:
        """How many of its alerts changed this way."""
        return sum(1 for alert in self.alerts if alert.change == change)


@dataclass
class Diff:
    """Every service of both versions, by name; ``base`` names the old version (``HEAD``)."""

    base: str
    services: list[ServiceDiff]
    span: tuple[int, int] | None = None  # the backtest's range (Unix ms), if one ran
    warnings: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        """Whether anything differs: an alert, a recording rule or a dashboard."""
        return any(s.change != "unchanged" for s in self.services)

    def count(self, change: Change) -> int:
        """How many alerts of all services changed this way."""
        return sum(s.count(change) for s in self.services)
