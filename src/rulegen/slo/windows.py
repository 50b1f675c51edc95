"""Which window recordings an SLO needs, and how each is summed from shorter ones.

Why: a 30-day error ratio computed from raw series reads every sample of 30 days at every
evaluation. Here only the base window (5m) reads raw series; every longer window is the sum of
a few recordings of shorter windows read at offsets (``1h = 12 × 5m``, ``3d = 3 × 1d``), which
tiles time exactly, stays fresh to the last evaluation, and reads one sample per term. Errors
and totals are summed separately, so every window stays traffic-weighted.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

MAX_TERMS = 12
LOOKBACK = Decimal(300)  # Prometheus' default --query.lookback-delta
COARSE = 100  # a term holding 1/100 of the SLO window or more falls back when missing


MAX_STEPS = 10  # the most evaluation steps the 3.x base form adds up (docs/slos.md)


def base_steps(base: Decimal, evaluation: Decimal) -> tuple[int, Decimal]:
    """How the Prometheus 3 base form cuts the base window: (number of steps, step length).

    One step per evaluation, so that a counter reset loses nothing (each step sees it), up
    to ``MAX_STEPS`` (longer steps then, of a whole number of evaluations). A base window
    longer than the lookback (5m) is one step: a read one evaluation back must find the
    sample that began the window even where samples are a base window apart (the long
    history tests, a scrape interval as long as the window)."""
    evaluations = int(base / evaluation)
    if base > LOOKBACK:
        return 1, base
    count = max(k for k in range(1, min(evaluations, MAX_STEPS) + 1) if evaluations % k == 0)
    return count, base / count


@dataclass(frozen=True)
class Term:
    """One addend of a window: the recording of ``window`` read ``offset`` seconds ago."""

    window: Decimal
    offset: Decimal


def plan_windows(needed: tuple[Decimal, ...], base: Decimal) -> dict[Decimal, tuple[Term, ...]]:
    """For every window to record (needed ones plus helpers), its terms, shortest first.

    The base window has no terms (it reads raw series). Every other window ``W`` is
    ``q × V`` (``V`` the longest shorter window recorded, ``q`` ≤ ``MAX_TERMS``) plus at most one
    recording of the remainder, so a 30-day window costs about ten samples per series.
    """
    recorded: dict[Decimal, tuple[Term, ...]] = {base: ()}
    for window in sorted(needed):
        _ensure(window, recorded)
    return dict(sorted(recorded.items()))


def _ensure(window: Decimal, recorded: dict[Decimal, tuple[Term, ...]]) -> None:
    if window in recorded:
        return
    while True:
        longest = max(w for w in recorded if w < window)
        count = int(window // longest)
        if count <= MAX_TERMS:
            break
        _ensure(longest * MAX_TERMS, recorded)
    terms = [Term(longest, longest * i) for i in range(count)]
    rest = window - longest * count
    if rest:
        _ensure(rest, recorded)
        terms.append(Term(rest, longest * count))
    recorded[window] = tuple(terms)


def chain_of(plan: dict[Decimal, tuple[Term, ...]], window: Decimal) -> tuple[Decimal, ...]:
    """``window`` and every recorded window its sum reads, transitively, shortest first: the
    windows a count of present base terms needs to follow ``window``'s cascade."""
    found = {window}
    pending = [window]
    while pending:
        for term in plan[pending.pop()]:
            if term.window not in found:
                found.add(term.window)
                pending.append(term.window)
    return tuple(sorted(found))


def fallback(
    plan: dict[Decimal, tuple[Term, ...]], term: Term, slo_window: Decimal
) -> tuple[Term, ...]:
    """The finer terms that tile ``term``'s chunk (its window's own terms shifted by its
    offset: ``3d offset 3d`` → ``1d offset 3d``, ``1d offset 4d``, ``1d offset 5d``), for a
    coarse term read at an offset; empty otherwise.

    Why: a coarse recording whose evaluation was missed (a restart) drops its whole chunk each
    time a longer window reads it at that offset, while the finer recordings it is made of
    mostly exist. Only coarse terms fall back (a chunk of at least 1/``COARSE`` of the SLO
    window): a finer chunk changes the SLI by less than that, and every fallback costs its
    finer samples at every evaluation. The term read without offset is made in the same
    evaluation and cannot have been missed.
    """
    if not term.offset or not plan[term.window] or term.window * COARSE < slo_window:
        return ()
    return tuple(Term(t.window, t.offset + term.offset) for t in plan[term.window])
