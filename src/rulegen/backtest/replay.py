"""Prometheus's alert state machine, replayed over a sequence of evaluations (pure, no I/O).

Why: a range query only says which label sets the expression returned at each step; whether
an alert *fires* depends on ``for`` and ``keep_firing_for``, which Prometheus applies in its
rule manager (``rules/alerting.go``), not in PromQL. This module is that state machine, step
for step, so a backtest fires exactly when the real server (and promtool) would.

Times are integer milliseconds (Prometheus's resolution), so ``t - active_at >= for`` is
exact at the boundary. A label set is a sorted tuple of ``(name, value)`` pairs.
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import pairwise

Labels = tuple[tuple[str, str], ...]
"""A label set, sorted by name: hashable and ordered, so output is deterministic."""

WEEK_MS = 7 * 24 * 3600 * 1000
FLAP_EVALUATIONS = 5
COMPARISONS = (">", ">=", "<", "<=")


@dataclass(frozen=True)
class Episode:
    """One firing period of one label set.

    ``start`` is the first evaluation at which the alert is firing; ``end`` the first
    evaluation at which it no longer is (Prometheus's ``ResolvedAt``), or ``None`` while it is
    still firing at the last evaluation (or past the end of a clipped range).
    """

    start: int
    end: int | None

    def duration(self, until: int) -> int:
        """Milliseconds firing, counting an open episode up to ``until``."""
        return (self.end if self.end is not None else until) - self.start


@dataclass
class _Active:
    """Prometheus's per-label-set alert entry: ``ActiveAt``, the state, ``KeepFiringSince``."""

    active_at: int
    firing: bool = False
    keep_since: int | None = None


def firing_steps(
    times: Sequence[int],
    present: Sequence[Collection[Labels]],
    for_ms: int,
    keep_firing_for_ms: int = 0,
) -> list[frozenset[Labels]]:
    """The label sets firing at each evaluation, given those the expression returned.

    The rules of Prometheus's ``AlertingRule.Eval``: a label set the expression returns and
    that has no active alert becomes pending with ``active_at = t``; a pending alert fires at
    the first evaluation with ``t - active_at >= for`` (so with ``for: 0`` at once); a label set
    the expression no longer returns is dropped (pending) or resolved (firing), except that a
    firing alert with ``keep_firing_for`` keeps firing while ``t - keep_since <
    keep_firing_for``, ``keep_since`` being the first evaluation it was absent (reset when it
    comes back). A resolved alert that comes back starts pending again.
    """
    if len(times) != len(present):
        raise ValueError("times and present must have the same length")
    active: dict[Labels, _Active] = {}
    out: list[frozenset[Labels]] = []
    for t, returned in zip(times, present, strict=True):
        now = returned if isinstance(returned, set | frozenset) else frozenset(returned)
        for labels in now:
            if labels not in active:
                active[labels] = _Active(t)
        firing: set[Labels] = set()
        for labels in list(active):
            state = active[labels]
            if labels in now:
                state.keep_since = None
            elif not _keeps_firing(state, t, keep_firing_for_ms):
                del active[labels]
                continue
            if not state.firing and t - state.active_at >= for_ms:
                state.firing = True
            if state.firing:
                firing.add(labels)
        out.append(frozenset(firing))
    return out


def _keeps_firing(state: _Active, t: int, keep_firing_for_ms: int) -> bool:
    """Whether an alert whose label set is absent at ``t`` stays (``keep_firing_for``)."""
    if not state.firing or keep_firing_for_ms <= 0:
        return False
    if state.keep_since is None:
        state.keep_since = t
    return t - state.keep_since < keep_firing_for_ms


def episodes(
    times: Sequence[int], firing: Sequence[Collection[Labels]]
) -> dict[Labels, list[Episode]]:
    """Firing periods per label set, in time order, from the firing label sets of each step."""
    opened: dict[Labels, int] = {}
    out: dict[Labels, list[Episode]] = {}
    for t, now in zip(times, firing, strict=True):
        for labels in [k for k in opened if k not in now]:
            out.setdefault(labels, []).append(Episode(opened.pop(labels), t))
        for labels in now:
            opened.setdefault(labels, t)
    for labels, start in opened.items():
        out.setdefault(labels, []).append(Episode(start, None))
    return out


def replay(
    times: Sequence[int],
    present: Sequence[Collection[Labels]],
    for_ms: int,
    keep_firing_for_ms: int = 0,
) -> dict[Labels, list[Episode]]:
    """Episodes per label set: ``firing_steps`` then ``episodes``."""
    return episodes(times, firing_steps(times, present, for_ms, keep_firing_for_ms))


def clip(found: Iterable[Episode], start: int, end: int) -> list[Episode]:
    """The episodes as seen inside ``[start, end]``: those over before ``start`` are dropped,
    starts are moved up to ``start``, and an episode still firing at ``end`` is open."""
    out = []
    for episode in found:
        if episode.start > end or (episode.end is not None and episode.end <= start):
            continue
        closed = episode.end if episode.end is not None and episode.end <= end else None
        out.append(Episode(max(episode.start, start), closed))
    return out


def flap_window(for_ms: int, step_ms: int) -> int:
    """How soon after an episode's end a new one counts as a flap: ``max(for, 5 steps)``."""
    return max(for_ms, FLAP_EVALUATIONS * step_ms)


def count_flaps(found: Sequence[Episode], window_ms: int) -> int:
    """Flaps: episodes of one label set that start at most ``window_ms`` after the previous
    episode of the same label set ended.

    Why this definition: a condition hovering around the threshold resolves and re-fires
    within a few evaluations (or within ``for``, which was meant to absorb exactly that), and
    each re-fire is a new notification for the same problem. Only episodes in the list are
    compared, so a previous episode outside the reported range is not seen.
    """
    return sum(
        1
        for previous, following in pairwise(found)
        if previous.end is not None and following.start - previous.end <= window_ms
    )


@dataclass(frozen=True)
class Summary:
    """One label set's replay over ``[start, end]``.

    ``fired`` counts the episodes that *began* inside the range (one already firing at
    ``start`` is listed, clipped, but is not a new firing); ``firing_ms`` and ``longest_ms``
    measure the clipped episodes, an open one up to ``end``.
    """

    episodes: tuple[Episode, ...]
    fired: int
    firing_ms: int
    longest_ms: int
    flaps: int


def summarize(found: Sequence[Episode], start: int, end: int, flap_ms: int) -> Summary:
    """Clip a label set's episodes to ``[start, end]`` and measure them."""
    clipped = clip(found, start, end)
    durations = [e.duration(end) for e in clipped]
    return Summary(
        episodes=tuple(clipped),
        fired=sum(1 for e in found if start <= e.start <= end),
        firing_ms=sum(durations),
        longest_ms=max(durations, default=0),
        flaps=count_flaps(clipped, flap_ms),
    )


# --- threshold suggestion --------------------------------------------------------------------


def compare(value: float, op: str, threshold: float) -> bool:
    """PromQL's filter comparison (NaN never passes)."""
    if op == ">":
        return value > threshold
    if op == ">=":
        return value >= threshold
    if op == "<":
        return value < threshold
    if op == "<=":
        return value <= threshold
    raise ValueError(f"not a comparison: {op}")


def fired_with(
    times: Sequence[int],
    quantity: Mapping[Labels, Mapping[int, float]],
    op: str,
    threshold: float,
    for_ms: int,
    keep_firing_for_ms: int,
    span: tuple[int, int],
) -> int:
    """How many times ``quantity op threshold`` would have fired (episodes beginning inside
    ``span``), by replaying the state machine."""
    present = [
        frozenset(
            k
            for k, samples in quantity.items()
            if t in samples and compare(samples[t], op, threshold)
        )
        for t in times
    ]
    start, end = span
    found = replay(times, present, for_ms, keep_firing_for_ms)
    return sum(1 for runs in found.values() for e in runs if start <= e.start <= end)


@dataclass(frozen=True)
class Suggestion:
    """A threshold that keeps an alert within a firing budget over the replayed range.

    ``threshold`` is the least strict value (lowest for ``>``, highest for ``<``) such that
    this threshold *and every stricter one* would have fired at most ``allowed`` times: the
    number of firings is not monotonic in the threshold (raising it can split one long episode
    into two short ones), and a suggestion that a slightly stricter value would break is no
    suggestion.
    """

    op: str
    threshold: float
    fired: int
    allowed: float

    @property
    def direction(self) -> str:
        """``above`` for ``>``/``>=`` alerts, ``below`` for ``<``/``<=``."""
        return "above" if self.op in (">", ">=") else "below"


def allowed_firings(per_week: float, span: tuple[int, int]) -> float:
    """The budget over ``span`` for ``per_week`` firings a week (pro rata)."""
    return per_week * (span[1] - span[0]) / WEEK_MS


def suggest_threshold(
    times: Sequence[int],
    quantity: Mapping[Labels, Mapping[int, float]],
    op: str,
    for_ms: int,
    keep_firing_for_ms: int,
    span: tuple[int, int],
    per_week: float,
) -> Suggestion | None:
    """The least strict observed value of ``quantity`` that keeps ``quantity op threshold``
    within ``per_week`` firings a week over ``span`` (see ``Suggestion``); ``None`` when the
    quantity has no finite value at all.

    Candidates are the quantity's finite values at the evaluation times, tried from the
    strictest down until one fires too often. Without ``keep_firing_for`` each try costs
    ``O(log n)`` after one sweep: with keys ordered by strictness (``v`` for ``>``, ``-v`` for
    ``<``), the alert fires at step ``j`` exactly when every key over the last ``for``
    (``w_j``, their minimum) passes the threshold, so an episode starts at ``j`` for exactly
    the thresholds between ``w_{j-1}`` and ``w_j``. With ``keep_firing_for`` (an absent
    series keeps firing, and a returning one fires without waiting for ``for``) each
    candidate is replayed.
    """
    if op not in COMPARISONS:
        raise ValueError(f"not a comparison: {op}")
    sign = 1.0 if op in (">", ">=") else -1.0
    observed = sorted(
        {
            sign * v
            for samples in quantity.values()
            for t in times
            if math.isfinite(v := samples.get(t, math.nan))
        }
    )
    if not observed:
        return None
    allowed = allowed_firings(per_week, span)
    count: Callable[[float], int]
    if keep_firing_for_ms > 0:
        count = partial(_replayed, times, quantity, op, sign, for_ms, keep_firing_for_ms, span)
    else:
        count = _sweep(times, quantity, sign, op in (">", "<"), for_ms, span)
    best: tuple[float, int] | None = None
    for key in reversed(observed):
        fired = count(key)
        if fired > allowed:
            break
        best = (key, fired)
    if best is None:  # even the strictest observed value fires too often (``>=``/``<=`` only)
        key = math.nextafter(observed[-1], math.inf)
        best = (key, count(key))
    return Suggestion(op, sign * best[0] + 0.0, best[1], allowed)


def _replayed(
    times: Sequence[int],
    quantity: Mapping[Labels, Mapping[int, float]],
    op: str,
    sign: float,
    for_ms: int,
    keep_firing_for_ms: int,
    span: tuple[int, int],
    key: float,
) -> int:
    return fired_with(times, quantity, op, sign * key, for_ms, keep_firing_for_ms, span)


def _sweep(
    times: Sequence[int],
    quantity: Mapping[Labels, Mapping[int, float]],
    sign: float,
    strict: bool,
    for_ms: int,
    span: tuple[int, int],
) -> Callable[[float], int]:
    """``count(key)``: episodes starting in ``span`` with the threshold at ``key``, for every
    key from one pass (then ``O(log n)`` per key)."""
    lows: list[float] = []
    highs: list[float] = []
    start, end = span
    for samples in quantity.values():
        keys = [_key(samples.get(t), sign) for t in times]
        window: deque[int] = deque()  # indices of increasing keys: the sliding minimum
        first = 0  # the earliest index of the current window
        previous = -math.inf
        for j, t in enumerate(times):
            while window and keys[window[-1]] >= keys[j]:
                window.pop()
            window.append(j)
            # the window is [s, j], s the last index with times[j] - times[s] >= for
            while first + 1 <= j and t - times[first + 1] >= for_ms:
                first += 1
            while window[0] < first:
                window.popleft()
            current = keys[window[0]] if t - times[first] >= for_ms else -math.inf
            if start <= t <= end and previous < current:
                lows.append(previous)
                highs.append(current)
            previous = current
    lows.sort()
    highs.sort()
    side = bisect.bisect_right if strict else bisect.bisect_left

    def count(key: float) -> int:
        # strict (``>``): an episode starts at j for keys in [low, high); else in (low, high]
        return side(lows, key) - side(highs, key)

    return count


def _key(value: float | None, sign: float) -> float:
    """A sample's key: larger passes more thresholds; absent or NaN passes none."""
    if value is None or math.isnan(value):
        return -math.inf
    return sign * value
