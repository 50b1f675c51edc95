"""``rulegen backtest``: replay every alert of the specs over a Prometheus's history.

Why: the specs say what should page; the history says what would have. This command builds
the specs in memory (no promtool, nothing written), takes every alerting rule with its
group's evaluation interval, runs the expression as a range query on a real server, replays
``for``/``keep_firing_for`` with ``replay`` and prints how often each alert and label set
would have fired. ``cli`` owns exit codes: usage problems raise ``UsageError`` (2), a missing
matplotlib ``ToolNotFoundError`` (3).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from rulegen import units
from rulegen.backtest import MAX_EVALUATIONS, PARALLEL, TIMEOUT
from rulegen.catalog import folders as signal_folders
from rulegen.errors import UsageError
from rulegen.progress import Reporter
from rulegen.progress import add_arguments as verbosity_arguments
from rulegen.promapi import MAX_BYTES, timeout_arg

if TYPE_CHECKING:  # the rest is imported by ``run``: ``rulegen --help`` needs none of it
    from rulegen.backtest.deployed import Deployment
    from rulegen.backtest.query import Client
    from rulegen.backtest.targets import Report, Target
    from rulegen.catalog import Catalog

TIME_HELP = (
    "RFC3339 (2026-01-01T00:00:00Z), Unix seconds, or relative: now, -7d (or now-7d), today, "
    "yesterday (00:00 UTC)"
)
LAST_SECOND = 253_402_300_799  # 9999-12-31T23:59:59Z
TIME_RANGE = "between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59Z"


def add_parser(sub: argparse._SubParsersAction[Any]) -> argparse.ArgumentParser:
    """Add the ``backtest`` subcommand to ``rulegen``'s subparsers; returns its parser."""
    p: argparse.ArgumentParser = sub.add_parser(
        "backtest",
        help="replay the specs' alerts over a Prometheus's history",
        description=(
            "Run every alert expression as a range query, apply for/keep_firing_for as "
            "Prometheus does, and report per alert and label set how often it would have "
            "fired. The recording rules the alerts read are evaluated from the raw series, "
            "as if the specs had been deployed; --recorded reads the deployed ones instead."
        ),
    )
    p.add_argument("paths", nargs="*", type=Path, help="spec files or folders (default: specs/)")
    p.add_argument("--prometheus", required=True, metavar="URL", help="e.g. http://localhost:9090")
    p.add_argument("--from", dest="start", required=True, metavar="T", help=TIME_HELP)
    p.add_argument("--to", dest="end", required=True, metavar="T", help=TIME_HELP)
    p.add_argument("--step", metavar="S", help="evaluation step (default: each group's interval)")
    p.add_argument("--alert", action="append", metavar="NAME", help="only this alert (repeatable)")
    p.add_argument("--plot", type=Path, metavar="DIR",
                   help="write a picture per alert (needs matplotlib: pip install "
                   "'rulegen[plot]')")  # fmt: skip
    add_plot_format(p)
    p.add_argument(
        "--suggest",
        metavar="N",
        help="propose the threshold that would have fired at most N times per week",
    )
    p.add_argument("--recorded", action="store_true",
                   help="read the recordings deployed on the server instead of evaluating "
                   "them from raw series (compare with what production evaluated)")  # fmt: skip
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--progress", action="store_true", help="progress bar even if not a TTY")
    p.add_argument("--timeout", type=timeout_arg, default=TIMEOUT, metavar="SECONDS",
                   help=f"deadline of each request, whole answer included (default: {TIMEOUT:g}); "
                   f"answers are capped at {MAX_BYTES // 2**20} MiB and a run at "
                   f"{MAX_EVALUATIONS:,} evaluation points")  # fmt: skip
    p.add_argument("--parallel", type=_parallel_arg, default=PARALLEL, metavar="N",
                   help=f"range queries in flight at once (default: {PARALLEL}; the server "
                   "evaluates each on its own core)")  # fmt: skip
    signal_folders.add_arguments(p)
    verbosity_arguments(p, progress=False)  # its own --progress is above
    return p


PLOT_FORMATS = ("png", "svg")


def add_plot_format(p: argparse.ArgumentParser) -> None:
    """``--plot-format png|svg``, shared with ``rulegen diff``."""
    p.add_argument("--plot-format", choices=PLOT_FORMATS, default=None,
                   help="png (default) or svg (its text stays text: searchable)")  # fmt: skip


def plot_options(args: argparse.Namespace) -> tuple[Path | None, str]:
    """``--plot DIR`` (checked: a folder or nothing yet, matplotlib installed) and the format;
    ``--plot-format`` alone is a ``UsageError``."""
    from rulegen.backtest import plot
    from rulegen.load import display

    folder: Path | None = args.plot
    if folder is None:
        if args.plot_format is not None:
            raise UsageError(f"--plot-format {args.plot_format} needs --plot DIR")
        return None, "png"
    plot.require_matplotlib()
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"--plot {display(folder)}: exists and is not a directory")
    return folder, args.plot_format or "png"


def __getattr__(name: str) -> Any:
    """``query_times`` and ``replay_build``, re-exported for callers from ``session`` when
    first asked for (it imports the whole build)."""
    if name in ("query_times", "replay_build"):
        from rulegen.backtest import session

        return getattr(session, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _parallel_arg(text: str) -> int:
    """``--parallel N``: 1 to 16."""
    if not text.isdigit() or not 1 <= int(text) <= 16:
        raise argparse.ArgumentTypeError(f"expected a number of queries from 1 to 16, got {text!r}")
    return int(text)


class ProgressBar:
    """``backtest [#####.....] 12/40 chunks`` on one stderr line, redrawn in place."""

    def __init__(self, total: int, stream: TextIO, width: int = 30) -> None:
        self.total = max(total, 1)
        self.done = 0
        self.stream = stream
        self.width = width

    def advance(self, count: int = 1) -> None:
        """Count finished chunks and redraw."""
        self.done = min(self.total, self.done + count)
        filled = self.width * self.done // self.total
        bar = "#" * filled + "." * (self.width - filled)
        self.stream.write(f"\rbacktest [{bar}] {self.done}/{self.total} queries")
        self.stream.flush()

    def finish(self) -> None:
        """End the line."""
        self.stream.write("\n")
        self.stream.flush()


# --- the command -----------------------------------------------------------------------------


# ``now``, ``now-7d``, ``-7d``, ``-1h30m``: a Prometheus duration before the present.
_RELATIVE = re.compile(r"^(?:now)?(?:-([0-9][0-9ywdhms]*))?$")
_DAYS = {"today": 0, "yesterday": 1}


def parse_time(text: str, flag: str, now: float | None = None) -> int:
    """RFC3339 (with a zone), Unix seconds, or a time relative to ``now`` (``now``, ``-7d``,
    ``now-1h30m``, ``today`` and ``yesterday`` at 00:00 UTC) → Unix ms, from 1970 to the end
    of year 9999; ``UsageError`` otherwise.

    Why relative times: a backtest of "the last week" is the common case, and an RFC3339
    stamp typed by hand is where a user's first run goes wrong. ``now`` is passed by the
    caller so ``--from`` and ``--to`` read the same present.
    """
    seconds = _relative(text.strip(), flag, time.time() if now is None else now)
    if seconds is None:
        try:
            seconds = Decimal(text.strip())
        except InvalidOperation:
            seconds = None
    if seconds is None or not seconds.is_finite():
        try:
            moment = datetime.fromisoformat(text.strip())
        except ValueError:
            moment = None
        if moment is None or moment.tzinfo is None:
            raise UsageError(f"{flag} {text!r}: not a time; use {TIME_HELP}")
        seconds = Decimal(str(moment.timestamp()))
    # compared before any conversion: int(Decimal("1e999999")) would take forever
    if not 0 <= seconds <= LAST_SECOND:
        raise UsageError(f"{flag} {text!r}: not a time {TIME_RANGE}")
    return int(seconds * 1000)


def _relative(text: str, flag: str, now: float) -> Decimal | None:
    """Seconds since 1970 of a relative time, ``None`` for anything else."""
    if text in _DAYS:
        midnight = datetime.fromtimestamp(now, UTC).replace(hour=0, minute=0, second=0,
                                                            microsecond=0)  # fmt: skip
        return Decimal(int(midnight.timestamp()) - _DAYS[text] * 86400)
    match = _RELATIVE.match(text)
    if not text or match is None or text == "-" or (text[0] == "-" and text[1:].isdigit()):
        return None
    present = Decimal(str(now)).to_integral_value()
    if match.group(1) is None:
        return present
    try:
        return present - units.parse_duration(match.group(1))
    except units.UnitError:
        raise UsageError(f"{flag} {text!r}: not a time; use {TIME_HELP}") from None


def span_of(args: argparse.Namespace) -> tuple[int, int]:
    """``--from`` and ``--to`` in Unix ms, read against one present."""
    now = time.time()
    return parse_time(args.start, "--from", now), parse_time(args.end, "--to", now)


def _options(args: argparse.Namespace) -> tuple[tuple[int, int], int | None, float | None]:
    span = span_of(args)
    if span[0] >= span[1]:
        raise UsageError(f"--from {args.start} must be before --to {args.end}")
    step = None
    if args.step is not None:
        try:
            step = int(units.parse_duration(args.step) * 1000)
        except units.UnitError as exc:
            raise UsageError(f"--step: {exc}") from None
        if step <= 0:
            raise UsageError("--step must be longer than 0s")
    per_week = None
    if args.suggest is not None:
        try:
            per_week = float(args.suggest)
        except ValueError:
            per_week = -1.0
        if not (math.isfinite(per_week) and per_week >= 0):
            raise UsageError(f"--suggest {args.suggest!r}: expected a number of firings >= 0")
    return span, step, per_week


def run(
    args: argparse.Namespace, catalog: Catalog, out: TextIO | None = None,
    progress: Reporter | None = None,
) -> int:  # fmt: skip
    """Run ``rulegen backtest``: build the specs, replay every chosen alert, print; 0 on
    success (``UsageError``/``SpecError``/``ToolNotFoundError`` for ``cli`` to map). Its
    steps go to ``progress`` (``--verbose``, or a terminal's status line until the bar of
    range queries takes over)."""
    from rulegen.backtest.query import Client
    from rulegen.backtest.report import json_rows, text_report, write_plots
    from rulegen.backtest.session import left_open, plan_deployment, query_points
    from rulegen.backtest.targets import recordings, targets
    from rulegen.build import build
    from rulegen.load import discover
    from rulegen.validate.server import declared_by, refuse_other_server

    stdout = out or sys.stdout
    steps = progress or Reporter("silent", sys.stderr)
    span, step, per_week = _options(args)
    folder, fmt = plot_options(args)
    result = build(discover(args.paths or [Path("specs")]), catalog, progress=steps)
    chosen = targets(result, args.alert or ())
    if not chosen:
        raise UsageError("no alerts in the specs")
    with_quantity = folder is not None or per_week is not None
    queries = [_queries(t, folder is not None, per_week is not None) for t in chosen]
    client = Client(args.prometheus, timeout=args.timeout, parallel=args.parallel)
    steps.step("asking Prometheus")
    deployment = None if args.recorded else plan_deployment(client, result, chosen, span,
                                                             step, with_quantity)  # fmt: skip
    points = [query_points(t, span, step) for t in chosen]
    extra = deployment.points() if deployment is not None else 0
    alert_points = sum(q * n for q, n in zip(queries, points, strict=True))
    _check_points(alert_points, extra, len(chosen), queries, span, args.step)
    client.check()
    refuse_other_server(declared_by(result.services), client.api)
    if deployment is not None:
        deployment.left_open = left_open(client)
    bar = _progress_bar(args, points, queries, steps)
    recorded = recordings(result)
    reports = _replay_all(client, chosen, span, step, recorded, folder is not None, per_week,
                          bar, deployment)  # fmt: skip
    steps.step("writing the report")
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
        write_plots(reports, folder, fmt)
    if args.format == "json":
        stdout.write(json.dumps(json_rows(reports), indent=2, sort_keys=True) + "\n")
    else:
        stdout.write("\n".join(text_report(r) for r in reports))
    return 0


def _queries(target: Target, plotting: bool, suggesting: bool) -> int:
    """Range queries per evaluation point of an alert: its own, and what a picture draws
    (``Target.plotted``) or a suggestion moves (the quantity)."""
    if plotting and target.burns:
        return 1 + len(target.burns)
    return 2 if plotting or suggesting else 1


def _check_points(
    alert_points: int, recording_points: int, alerts: int, queries: Sequence[int],
    span: tuple[int, int], step: str | None,
) -> None:  # fmt: skip
    """Refuse, before any query, a run of more than ``MAX_EVALUATIONS`` points: the alerts'
    and those of the recordings computed from raw series (``recording_points``)."""
    from rulegen.backtest.report import rfc3339

    total = alert_points + recording_points
    if total <= MAX_EVALUATIONS:
        return
    every = f"every {step}" if step is not None else "at each group's interval"
    most = max(queries, default=1)
    each = "1 query" if most == 1 else f"{most} queries"
    if min(queries, default=1) != most:
        each = f"up to {each}"
    computed = f", and {recording_points:,} for recordings" if recording_points else ""
    raise UsageError(
        f"this backtest needs {total:,} evaluation points ({alerts} alert(s), {each} each, "
        f"{every} from {rfc3339(span[0])} to {rfc3339(span[1])}{computed}), more than the "
        f"{MAX_EVALUATIONS:,} one run may evaluate: use a larger --step, a shorter range "
        "(--from/--to) or fewer alerts (--alert NAME)"
    )


def _progress_bar(
    args: argparse.Namespace, points: Sequence[int], queries: Sequence[int], steps: Reporter
) -> ProgressBar | Reporter | None:
    """What counts the range queries (``queries`` of ``points`` points each, per alert): the
    bar, on a terminal or with ``--progress``; ``steps`` with ``--verbose``; else nothing."""
    from rulegen.backtest.query import MAX_POINTS

    total = sum(q * -(-n // MAX_POINTS) for q, n in zip(queries, points, strict=True))
    steps.step("range queries", total=total)
    if steps.mode in ("quiet", "verbose"):
        return steps if steps.mode == "verbose" else None
    if not (args.progress or sys.stderr.isatty()):
        return None
    steps.close()  # the bar takes the line over
    return ProgressBar(total, sys.stderr)


def _replay_all(
    client: Client,
    chosen: Sequence[Target],
    span: tuple[int, int],
    step: int | None,
    recorded: frozenset[str],
    with_quantity: bool,
    per_week: float | None,
    bar: ProgressBar | Reporter | None,
    deployment: Deployment | None = None,
) -> list[Report]:
    from rulegen.backtest.session import replay_targets

    progress: Callable[[int], None] | None = None
    if isinstance(bar, ProgressBar):
        progress = bar.advance
    elif bar is not None:
        progress = _counter(bar)
    try:
        return replay_targets(client, chosen, span, step_ms=step, recorded=recorded,
                              with_quantity=with_quantity, per_week=per_week,
                              progress=progress, deployment=deployment)  # fmt: skip
    finally:
        if isinstance(bar, ProgressBar):
            bar.finish()


def _counter(steps: Reporter) -> Callable[[int], None]:
    """A range-query progress callback (``count`` chunks done) that counts on ``steps``."""

    def advance(count: int) -> None:
        for _ in range(count):
            steps.advance()

    return advance
