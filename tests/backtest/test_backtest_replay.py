"""The backtest's alert state machine, episodes, flaps and threshold search, table-driven.

Patterns are one character per evaluation (15 s apart): ``#`` the expression returned the
label set, ``.`` it did not; the expected output marks the evaluations the alert is firing.
``test_backtest_promtool`` proves the same machine against promtool on real series; these
cases pin each rule of Prometheus's ``AlertingRule.Eval`` on its own.
"""

from __future__ import annotations

import math
import random

import pytest

from rulegen.backtest.replay import (
    WEEK_MS,
    Episode,
    Labels,
    clip,
    count_flaps,
    episodes,
    fired_with,
    firing_steps,
    flap_window,
    replay,
    suggest_threshold,
    summarize,
)

S = 15_000  # one evaluation step, ms
A: Labels = (("instance", "a"),)
B: Labels = (("instance", "b"),)


def times(n: int) -> list[int]:
    return [i * S for i in range(n)]


def run(pattern: str, for_ms: int, keep_ms: int = 0) -> str:
    """Replay one label set's pattern; the firing pattern back."""
    present = [{A} if c == "#" else set() for c in pattern]
    firing = firing_steps(times(len(pattern)), present, for_ms, keep_ms)
    return "".join("#" if A in now else "." for now in firing)


STATE_CASES = [
    # (case, presence, for, keep_firing_for, firing)
    ("for 0 fires at the first evaluation", "..##..#", 0, 0, "..##..#"),
    ("for 0, one evaluation", "#", 0, 0, "#"),
    ("for exactly 2 steps fires at the 3rd", "###...", 2 * S, 0, "..#..."),
    ("for 2 steps, held on", "#####.", 2 * S, 0, "..###."),
    ("one step short of for never fires", "##.##.", 2 * S, 0, "......"),
    ("for one step", "##.", S, 0, ".#."),
    ("for not a multiple of the step (20s) waits for 30s", "###", 20_000, 0, "..#"),
    ("20s after two evaluations (15s) is not yet", "##.", 20_000, 0, "..."),
    ("a gap restarts for", "##.###", 2 * S, 0, ".....#"),
    ("a resolved alert comes back pending", "##.##", S, 0, ".#..#"),
    ("keep_firing_for holds a firing alert", "##.....", 0, 2 * S, "####..."),
    ("keep_firing_for exactly one step", "#..", 0, S, "##."),
    ("keep_firing_for: back within it, still firing", "##.#....", 0, 2 * S, "######.."),
    ("keep_firing_for restarts at the next absence", "#.#.....", 0, 2 * S, "#####..."),
    ("keep_firing_for does not hold a pending alert", "##....", 2 * S, 4 * S, "......"),
    ("keep_firing_for after for", "####......", 2 * S, 2 * S, "..####...."),
    ("keep_firing_for: back while kept fires at once", "###.#.....", 2 * S, 2 * S, "..#####..."),
    ("keep_firing_for not a multiple (20s)", "#.....", 0, 20_000, "###..."),
]


@pytest.mark.parametrize(
    ("presence", "for_ms", "keep_ms", "expected"),
    [case[1:] for case in STATE_CASES],
    ids=[case[0] for case in STATE_CASES],
)
def test_state_machine(presence: str, for_ms: int, keep_ms: int, expected: str) -> None:
    assert run(presence, for_ms, keep_ms) == expected


def test_label_sets_are_independent() -> None:
    a = "###..###"
    b = ".####..."
    present = [{x for x, c in ((A, ca), (B, cb)) if c == "#"} for ca, cb in zip(a, b, strict=True)]
    firing = firing_steps(times(len(a)), present, S)
    assert "".join("#" if A in f else "." for f in firing) == ".##...##"
    assert "".join("#" if B in f else "." for f in firing) == "..###..."


def test_episodes_are_first_firing_to_first_not_firing() -> None:
    found = replay(times(10), [{A} if c == "#" else set() for c in "..###..##."], 0)
    assert found == {A: [Episode(2 * S, 5 * S), Episode(7 * S, 9 * S)]}
    still = replay(times(5), [{A} if c == "#" else set() for c in "...##"], 0)
    assert still == {A: [Episode(3 * S, None)]}
    assert episodes(times(3), [set(), set(), set()]) == {}


CLIP_CASES = [
    # (case, episodes, span, clipped)
    ("inside", [Episode(3 * S, 5 * S)], (2 * S, 8 * S), [Episode(3 * S, 5 * S)]),
    ("over before the span", [Episode(0, 2 * S)], (2 * S, 8 * S), []),
    ("firing at the start", [Episode(0, 4 * S)], (2 * S, 8 * S), [Episode(2 * S, 4 * S)]),
    ("still firing at the end", [Episode(6 * S, 10 * S)], (2 * S, 8 * S), [Episode(6 * S, None)]),
    ("open", [Episode(6 * S, None)], (2 * S, 8 * S), [Episode(6 * S, None)]),
    ("starts at the end", [Episode(8 * S, None)], (2 * S, 8 * S), [Episode(8 * S, None)]),
    ("after the span", [Episode(9 * S, None)], (2 * S, 8 * S), []),
    ("covers the span", [Episode(0, None)], (2 * S, 8 * S), [Episode(2 * S, None)]),
]


@pytest.mark.parametrize(
    ("found", "span", "expected"),
    [case[1:] for case in CLIP_CASES],
    ids=[case[0] for case in CLIP_CASES],
)
def test_clip(found: list[Episode], span: tuple[int, int], expected: list[Episode]) -> None:
    assert clip(found, *span) == expected


def test_summary_counts_only_firings_that_began_inside_the_span() -> None:
    found = [Episode(0, 4 * S), Episode(6 * S, 7 * S), Episode(9 * S, None)]
    summary = summarize(found, 2 * S, 10 * S, flap_window(0, S))
    assert summary.episodes == (Episode(2 * S, 4 * S), Episode(6 * S, 7 * S), Episode(9 * S, None))
    assert summary.fired == 2  # the one already firing at the start is not a new firing
    assert summary.firing_ms == 2 * S + S + S  # the open one counts up to the end
    assert summary.longest_ms == 2 * S
    assert summary.flaps == 2  # 6 starts 2 steps after 4, 9 starts 2 steps after 7


FLAP_CASES = [
    # (case, gap in steps between two episodes, for, flaps)
    ("gap of 5 evaluations is a flap", 5, 0, 1),
    ("gap of 6 evaluations is not", 6, 0, 0),
    ("gap of 1 evaluation", 1, 0, 1),
    ("for longer than 5 evaluations widens the window", 8, 8 * S, 1),
    ("just past for", 9, 8 * S, 0),
]


@pytest.mark.parametrize(
    ("gap", "for_ms", "flaps"), [c[1:] for c in FLAP_CASES], ids=[c[0] for c in FLAP_CASES]
)
def test_flaps(gap: int, for_ms: int, flaps: int) -> None:
    found = [Episode(0, 2 * S), Episode((2 + gap) * S, (4 + gap) * S)]
    assert count_flaps(found, flap_window(for_ms, S)) == flaps


def test_flaps_need_a_closed_previous_episode() -> None:
    assert count_flaps([Episode(0, None)], 5 * S) == 0


# --- threshold suggestion --------------------------------------------------------------------


def one_series(values: list[float | None]) -> dict[Labels, dict[int, float]]:
    return {A: {i * S: v for i, v in enumerate(values) if v is not None}}


def budget_of(firings: float, n: int) -> float:
    """``per_week`` that allows ``firings`` over the span of ``n`` evaluations."""
    return firings * WEEK_MS / ((n - 1) * S)


VALUES: list[float | None] = [1, 5, 1, 5, 5, 1, 9, 9, 9, 1]
SUGGEST_CASES = [
    # (case, op, for, allowed firings, threshold, firings with it)
    # > : t<1 fires once (always on), [1,5) three times, [5,9) once, >=9 never
    ("above, one firing allowed", ">", 0, 1, 5.0, 1),
    ("above, none allowed", ">", 0, 0, 9.0, 0),
    ("above, three allowed: the lowest value", ">", 0, 3, 1.0, 3),
    # < : t<=1 never, (1,5] four times, (5,9] twice
    ("below, one allowed", "<", 0, 1, 1.0, 0),
    ("below, two allowed stops at the first breach", "<", 0, 2, 1.0, 0),
    ("below, four allowed", "<", 0, 4, 9.0, 2),
    # >= : t in (1,5] three times (5,9] once
    ("at or above, one allowed", ">=", 0, 1, 9.0, 1),
    # with for 15s: [1,5) fires twice (a 1-step run never fires), [5,9) once
    ("above with for", ">", S, 1, 5.0, 1),
    ("above with for, two allowed", ">", S, 2, 1.0, 2),
]


@pytest.mark.parametrize(
    ("op", "for_ms", "allowed", "threshold", "fired"),
    [c[1:] for c in SUGGEST_CASES],
    ids=[c[0] for c in SUGGEST_CASES],
)
def test_suggest(op: str, for_ms: int, allowed: int, threshold: float, fired: int) -> None:
    n = len(VALUES)
    per_week = budget_of(allowed, n)
    found = suggest_threshold(
        times(n), one_series(VALUES), op, for_ms, 0, (0, (n - 1) * S), per_week
    )
    assert found is not None
    assert (found.threshold, found.fired) == (threshold, fired)
    assert found.direction == ("above" if op.startswith(">") else "below")
    assert found.allowed == pytest.approx(allowed)


def test_suggest_with_keep_firing_for_replays() -> None:
    """keep_firing_for merges the runs of 5 separated by one evaluation at 1."""
    n = len(VALUES)
    quantity = one_series(VALUES)
    span = (0, (n - 1) * S)
    found = suggest_threshold(times(n), quantity, ">", 0, 2 * S, span, budget_of(1, n))
    assert found is not None
    assert found.threshold == 1.0  # [1,5): runs at 1, 3-4, 6-8 all merge into one episode
    assert fired_with(times(n), quantity, ">", 1.0, 0, 2 * S, span) == 1


def test_suggest_without_values() -> None:
    assert suggest_threshold(times(3), {A: {}}, ">", 0, 0, (0, 2 * S), 1) is None


def test_suggest_nothing_fits_at_or_above() -> None:
    """``>=`` with a constant value: even the largest value fires, so just above it."""
    n = 4
    found = suggest_threshold(times(n), one_series([3, 3, 3, 3]), ">=", 0, 0, (0, 3 * S), 0)
    assert found is not None
    assert found.threshold == math.nextafter(3.0, math.inf)
    assert found.fired == 0


def reference(
    series: dict[Labels, dict[int, float]], op: str, for_ms: int, n: int, allowed: float
) -> tuple[float, int] | None:
    """The suggestion by brute force: replay every observed value, strictest first."""
    sign = 1 if op in (">", ">=") else -1
    values = sorted(
        {v for s in series.values() for v in s.values() if math.isfinite(v)},
        key=lambda v: sign * v,
    )
    best = None
    for value in reversed(values):
        fired = fired_with(times(n), series, op, value, for_ms, 0, (3 * S, (n - 1) * S))
        if fired > allowed:
            break
        best = (value, fired)
    return best


@pytest.mark.parametrize("seed", range(40))
def test_suggest_sweep_equals_brute_force(seed: int) -> None:
    """The O(n log n) sweep agrees with replaying each candidate (random series with gaps,
    NaN, ties, several label sets, every comparison, for on and off the step)."""
    rng = random.Random(seed)
    n = rng.randint(5, 60)
    series: dict[Labels, dict[int, float]] = {}
    for k in range(rng.randint(1, 3)):
        samples = {}
        for i in range(n):
            roll = rng.random()
            if roll < 0.15:
                continue
            samples[i * S] = math.nan if roll < 0.2 else float(rng.randint(0, 6))
        series[(("k", str(k)),)] = samples
    op = rng.choice((">", ">=", "<", "<="))
    for_ms = rng.choice((0, S, 20_000, 3 * S))
    allowed = rng.randint(0, 4)
    span = (3 * S, (n - 1) * S)
    per_week = allowed * WEEK_MS / (span[1] - span[0])
    found = suggest_threshold(times(n), series, op, for_ms, 0, span, per_week)
    expected = reference(series, op, for_ms, n, found.allowed if found else allowed)
    if found is None:
        assert expected is None
        assert not any(math.isfinite(v) for s in series.values() for v in s.values())
        return
    if expected is None:  # even the strictest value breaches: only ``>=``/``<=``
        assert op in (">=", "<=")
        assert found.fired == 0
        return
    assert (found.threshold, found.fired) == expected
    # and the count it reports is what a replay at that threshold gives
    assert found.fired == fired_with(times(n), series, op, found.threshold, for_ms, 0, span)
