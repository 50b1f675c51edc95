"""What a long command is doing, on stderr: a status line redrawn in place, or plain lines.

Why: a validated build spends most of a minute in promtool, and used to print nothing until
its summary. On a terminal, one status line, drawn once the command has run for about a
second and redrawn in place at most ten times a second, says which step it is in (N/M, the
slowest file so far, the time left). A CI log is not a terminal: there, redrawn lines are
noise, so nothing is printed unless asked: ``--progress`` prints a plain line per step,
``--verbose`` each step (and each promtool file) with its time, ``--quiet`` nothing.

The pipeline reports through ``Progress`` (``step`` and ``advance``) and never knows which
mode it talks to; the clock and the stream are injected, so tests drive a ``Reporter``
without sleeping or a terminal.
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Literal, Protocol, TextIO

from rulegen.core.diagnostics import printable

Mode = Literal["quiet", "silent", "plain", "tty", "verbose"]
"""``quiet`` (``--quiet``) and ``silent`` (not a terminal, nothing asked) print nothing;
``plain`` (``--progress`` off a terminal) a line per step; ``tty`` redraws one status line;
``verbose`` (``--verbose``) a line per step and item, with its time."""

DELAY = 1.0  # seconds before the status line appears: a quick command shows none
INTERVALS: dict[Mode, float] = {"tty": 0.1, "plain": 1.0}  # at most one redraw / line per
CLEAR = "\x1b[K"  # erase from the cursor to the end of the line
SHOWS_SLOWEST: frozenset[Mode] = frozenset({"tty", "plain", "verbose"})


def add_arguments(parser: argparse.ArgumentParser, *, progress: bool = True) -> None:
    """``--quiet``/``-q`` and ``--verbose``/``-v`` (one or the other), and ``--progress``
    unless the command has its own."""
    if progress:
        parser.add_argument("--progress", action="store_true",
                            help="show progress on stderr even when it is not a terminal "
                            "(a line per step)")  # fmt: skip
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--quiet", "-q", action="store_true",
                       help="print errors only: no progress, summary, notes or "
                       "warnings")  # fmt: skip
    group.add_argument("--verbose", "-v", action="store_true",
                       help="print each step with its time on stderr")  # fmt: skip


def choose_mode(*, quiet: bool, verbose: bool, progress: bool, tty: bool) -> Mode:
    """The mode of ``--quiet``, ``--verbose`` and ``--progress`` on a stream that is a
    terminal (``tty``) or not; the quieter flag wins."""
    if quiet:
        return "quiet"
    if verbose:
        return "verbose"
    if tty:
        return "tty"
    return "plain" if progress else "silent"


class Progress(Protocol):
    """What a long step of the pipeline reports: that it starts, and each item it finishes."""

    def step(
        self, label: str, total: int | None = None, weight: float | None = None, workers: int = 1
    ) -> None:
        """A new step (ending the one before), of ``total`` items weighing ``weight`` in all
        (the items' estimated costs, for the time left), done ``workers`` at a time, when it
        counts items."""

    def advance(self, item: str = "", seconds: float | None = None, weight: float = 1.0) -> None:
        """One more item of the step is done: ``item``, which took ``seconds``."""


class Silent:
    """A ``Progress`` that reports nothing (the library's default)."""

    def step(
        self, label: str, total: int | None = None, weight: float | None = None, workers: int = 1
    ) -> None:
        """Nothing to report."""

    def advance(self, item: str = "", seconds: float | None = None, weight: float = 1.0) -> None:
        """Nothing to report."""


@dataclass
class _Step:
    label: str
    total: int | None
    weight: float | None
    start: float
    done: int = 0
    weight_done: float = 0.0
    workers: int = 1
    seconds_done: float | None = 0.0  # the items' own times (None: one came untimed)
    slowest: tuple[str, float] | None = None
    times: list[tuple[str, float]] = field(default_factory=list)

    def count(self, item: str, seconds: float | None, weight: float) -> None:
        """One more item done, never past the total (backtest counts range queries it
        could not foresee); timed when ``seconds`` is given."""
        self.done = self.done + 1 if self.total is None else min(self.done + 1, self.total)
        self.weight_done += weight
        if seconds is None or self.seconds_done is None:
            self.seconds_done = None
        else:
            self.seconds_done += seconds
        if seconds is not None and item:
            self.times.append((item, seconds))
            if self.slowest is None or seconds > self.slowest[1]:
                self.slowest = (item, seconds)


class Reporter:
    """A ``Progress`` that writes to ``stream`` in one ``Mode``; ``with reporter:`` starts
    the redraw of a terminal's status line and erases the line at the end (before the
    summary or the errors are printed)."""

    def __init__(
        self, mode: Mode, stream: TextIO, clock: Callable[[], float] = time.monotonic,
        *, delay: float = DELAY, interval: float | None = None, width: int | None = None,
    ) -> None:  # fmt: skip
        self.mode = mode
        self.stream = stream
        self.clock = clock
        self.delay = delay
        self.interval = INTERVALS.get(mode, 0.0) if interval is None else interval
        self.width = width if width is not None else _columns(stream)
        self.started = clock()
        self.current: _Step | None = None
        self.finished: list[_Step] = []
        self.last_draw: float | None = None
        self.drawn = False  # a status line is on the terminal
        self.shown = ""  # what it says
        self.lock = threading.Lock()
        self.ticker: threading.Thread | None = None
        self.stop = threading.Event()

    # --- what the pipeline calls -----------------------------------------------------------

    def step(
        self, label: str, total: int | None = None, weight: float | None = None, workers: int = 1
    ) -> None:
        """End the step in progress and start ``label``."""
        with self.lock:
            self._end()
            self.current = _Step(label, total, weight, self.clock(), workers=max(1, workers))
            if self.mode == "plain":
                self._print(self._status(self.current, ", "))
            self._draw()

    def advance(self, item: str = "", seconds: float | None = None, weight: float = 1.0) -> None:
        """Count an item of the step in progress (and time it, when ``seconds`` is given)."""
        with self.lock:
            step = self.current
            if step is None:
                return
            step.count(item, seconds, weight)
            if self.mode == "verbose" and seconds is not None and item:
                self._print(f"{step.label}: {printable(item)} ({_seconds(seconds)})")
            if self.mode == "plain" and (step.done == step.total or self._due()):
                self._print(self._status(step, ", "))
            self._draw()

    # --- what the command line calls -------------------------------------------------------

    def tick(self) -> None:
        """Redraw the status line if it is due (the elapsed time moves on)."""
        with self.lock:
            self._draw()

    def close(self) -> None:
        """End the step in progress and erase the status line, for good (what comes next
        is the summary, or another display of progress)."""
        self.stop.set()
        if self.ticker is not None:
            self.ticker.join()
            self.ticker = None
        with self.lock:
            self._end()
            self._erase()

    def slowest(self, label: str, count: int = 3) -> list[tuple[str, float]]:
        """The ``count`` slowest items of the steps named ``label``, slowest first."""
        times = [t for s in self._steps() if s.label == label for t in s.times]
        return sorted(times, key=lambda t: -t[1])[:count]

    def slowest_line(self, label: str, count: int = 3) -> str | None:
        """``slowest: A 12.7s, B 5.5s, C 4.5s``: the slowest items of ``label``, in the modes
        that show them (a terminal, ``--progress``, ``--verbose``); ``None`` otherwise."""
        found = self.slowest(label, count)
        if self.mode not in SHOWS_SLOWEST or not found:
            return None
        return "slowest: " + ", ".join(f"{printable(n)} {_seconds(s)}" for n, s in found)

    def line(self, text: str) -> None:
        """A line that stays (the status line, if any, is erased first)."""
        with self.lock:
            self._erase()
            self.stream.write(f"{text}\n")
            self.stream.flush()

    def __enter__(self) -> Reporter:
        if self.mode == "tty":
            self.ticker = threading.Thread(target=self._tick, name="rulegen-progress", daemon=True)
            self.ticker.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # --- inside ----------------------------------------------------------------------------

    def _tick(self) -> None:
        while not self.stop.wait(self.interval):
            self.tick()

    def _steps(self) -> list[_Step]:
        return [*self.finished, *([self.current] if self.current else [])]

    def _end(self) -> None:
        step, self.current = self.current, None
        if step is None:
            return
        self.finished.append(step)
        if self.mode == "verbose":
            elapsed = self.clock() - step.start
            self._print(f"{self._counted(step)} ({_seconds(elapsed)})")

    def _due(self) -> bool:
        now = self.clock()
        return self.last_draw is None or now - self.last_draw >= self.interval

    def _draw(self) -> None:
        """The terminal's status line, redrawn when the command has run ``delay`` seconds and
        the last redraw is ``interval`` old."""
        if self.mode != "tty" or self.current is None or self.stop.is_set():
            return
        now = self.clock()
        if now - self.started < self.delay or not self._due():
            return
        text = _fit(f"rulegen: {self._status(self.current, ' · ')}", self.width)
        if self.drawn and text == self.shown:
            return
        self.stream.write(f"\r{text}{CLEAR}")
        self.stream.flush()
        self.last_draw, self.drawn, self.shown = now, True, text

    def _erase(self) -> None:
        if self.drawn:
            self.stream.write(f"\r{CLEAR}")
            self.stream.flush()
            self.drawn = False

    def _print(self, text: str) -> None:
        self.stream.write(f"rulegen: {text}\n")
        self.stream.flush()
        self.last_draw = self.clock()

    def _status(self, step: _Step, separator: str) -> str:
        """``promtool test files 3/7 · 12s · about 20s left · slowest tests/a.yml 4.20s``
        (the file name last: a line too long for the terminal loses its end)."""
        parts = [self._counted(step)]
        elapsed = self.clock() - step.start
        if self.mode == "tty" and elapsed >= 1:
            parts.append(f"{elapsed:.0f}s")
        left = _time_left(step, elapsed)
        if left is not None:
            parts.append(f"about {max(left, 1):.0f}s left")
        if step.slowest is not None:
            parts.append(f"slowest {printable(step.slowest[0])} {_seconds(step.slowest[1])}")
        return separator.join(parts)

    @staticmethod
    def _counted(step: _Step) -> str:
        return step.label if step.total is None else f"{step.label} {step.done}/{step.total}"


def _time_left(step: _Step, elapsed: float) -> float | None:
    """The step's time left: the weight still to do (the items' cost estimates, or one
    each) at the pace of the weight done. Items done several at a time: the pace is their
    own times over their weight, shared by the workers (elapsed time alone would count one
    worker's finished item and none of the others' work in progress: twice the time left
    on two cores)."""
    if step.total is None or not 0 < step.done < step.total or step.weight_done <= 0:
        return None
    weight = step.weight if step.weight is not None else float(step.total)
    left = weight - step.weight_done
    if step.workers > 1 and step.seconds_done:
        return max(0.0, left * step.seconds_done / step.weight_done / step.workers)
    return max(0.0, elapsed * left / step.weight_done)


def _seconds(seconds: float) -> str:
    return f"{seconds:.1f}s" if seconds >= 10 else f"{seconds:.2f}s"


def _fit(text: str, width: int) -> str:
    """``text`` cut to one terminal row: a longer line would wrap, and ``\\r`` goes back to
    the start of its last row only."""
    limit = max(width - 1, 10)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _columns(stream: TextIO) -> int:
    """The terminal's width (80 when it says none: a new pseudo-terminal says 0)."""
    try:
        columns = os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return 80
    return columns if columns > 0 else 80
