"""What a repair is made of: an SLO's rule group, the holes found, the range rewritten.

Why typed: the planner, the dry-run report and the writer read the same few numbers (Unix ms
on the group's evaluation grid), and a bare tuple of ints is easy to swap.
"""

from __future__ import annotations

from dataclasses import dataclass

from rulegen.generated import RecordingRule


@dataclass(frozen=True)
class SLOGroup:
    """One SLO's rule group as deployed: its recordings in evaluation order (times in ms)."""

    service: str
    slo: str
    interval_ms: int
    base_ms: int  # the base window, the only one that reads raw series
    window_ms: int  # the SLO window
    recordings: tuple[RecordingRule, ...]
    base_total: RecordingRule  # the base window's total, which every evaluation records
    group_by: tuple[str, ...] = ()  # the SLO's group_by labels, which its recordings carry

    @property
    def name(self) -> str:
        """``service/slo``, as the report names it."""
        return f"{self.service}/{self.slo}"


@dataclass(frozen=True)
class Hole:
    """Evaluations the group missed: the first and last missing instants (inclusive)."""

    first_ms: int
    last_ms: int
    interval_ms: int

    @property
    def evaluations(self) -> int:
        """How many evaluations are missing."""
        return (self.last_ms - self.first_ms) // self.interval_ms + 1


@dataclass(frozen=True)
class RawGap:
    """No raw sample strictly between ``after_ms`` (the last before) and ``before_ms``
    (the first after): Prometheus itself was down."""

    after_ms: int
    before_ms: int


@dataclass(frozen=True)
class Repair:
    """One SLO's holes and the range of its evaluation grid rewritten for them: from the
    first missing instant to where the last window that reads a hole ends (inclusive)."""

    group: SLOGroup
    holes: tuple[Hole, ...]
    start_ms: int
    end_ms: int
    gaps: tuple[RawGap, ...] = ()  # raw scrape gaps in the holes, bridged

    @property
    def evaluations(self) -> int:
        """Evaluation instants rewritten."""
        return (self.end_ms - self.start_ms) // self.group.interval_ms + 1
