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
import sys
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, TextIO

from rulegen import gotemplate, units
from rulegen.backtest import plot
from rulegen.backtest.query import (
    MAX_POINTS,
    TIMEOUT,
    Client,
    Progress,
    Samples,
    grid,
    grid_size,
    selectors,
)
from rulegen.backtest.replay import (
    Labels,
    fired_with,
    flap_window,
    replay,
    suggest_threshold,
    summarize,
)
from rulegen.backtest.report import json_rows, rfc3339, text_report, write_plots
from rulegen.backtest.targets import Report, Target, recordings, targets
from rulegen.build import build
from rulegen.catalog import Catalog
from rulegen.catalog import folders as signal_folders
from rulegen.errors import UsageError
from rulegen.load import discover, display
from rulegen.promapi import MAX_BYTES, QueryRejected, timeout_arg
from rulegen.render.prometheus import quantity_promql

TIME_HELP = "RFC3339 (2026-01-01T00:00:00Z) or Unix seconds"
LAST_SECOND = 253_402_300_799  # 9999-12-31T23:59:59Z
TIME_RANGE = "between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59Z"
MAX_EVALUATIONS = 10_000_000
"""The most evaluation points one run may ask for, across all chosen alerts and queries
(roughly 1,000 range queries of 11,000 points); more is refused before any query."""


def add_parser(sub: argparse._SubParsersAction[Any]) -> argparse.ArgumentParser:
    """Add the ``backtest`` subcommand to ``rulegen``'s subparsers; returns its parser."""
    p: argparse.ArgumentParser = sub.add_parser(
        "backtest",
        help="replay the specs' alerts over a Prometheus's history",
        description=(
            "Run every alert expression as a range query, apply for/keep_firing_for as "
            "Prometheus does, and report per alert and label set how often it would have "
            "fired. Reads rulegen's recording rules: deploy the rules first."
        ),
    )
    p.add_argument("paths", nargs="*", type=Path, help="spec files or folders (default: specs/)")
    p.add_argument("--prometheus", required=True, metavar="URL", help="e.g. http://localhost:9090")
    p.add_argument("--from", dest="start", required=True, metavar="T", help=TIME_HELP)
    p.add_argument("--to", dest="end", required=True, metavar="T", help=TIME_HELP)
    p.add_argument("--step", metavar="S", help="evaluation step (default: each group's interval)")
    p.add_argument("--alert", action="append", metavar="NAME", help="only this alert (repeatable)")
    p.add_argument("--plot", type=Path, metavar="DIR", help="write a PNG per alert (matplotlib)")
    p.add_argument(
        "--suggest",
        metavar="N",
        help="propose the threshold that would have fired at most N times per week",
    )
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--progress", action="store_true", help="progress bar even if not a TTY")
    p.add_argument("--timeout", type=timeout_arg, default=TIMEOUT, metavar="SECONDS",
                   help=f"deadline of each request, whole answer included (default: {TIMEOUT:g}); "
                   f"answers are capped at {MAX_BYTES // 2**20} MiB and a run at "
                   f"{MAX_EVALUATIONS:,} evaluation points")  # fmt: skip
    signal_folders.add_arguments(p)
    return p


def query_times(target: Target, span: tuple[int, int], step_ms: int | None = None) -> list[int]:
    """The evaluation times: from ``max(for, keep_firing_for)`` plus one step before the span
    (so an alert already pending or firing at ``span[0]`` is in the right state there) to
    its end, on multiples of the step."""
    return grid(*_grid_bounds(target, span, step_ms))


def query_points(target: Target, span: tuple[int, int], step_ms: int | None = None) -> int:
    """``len(query_times(...))``, without building the list."""
    return grid_size(*_grid_bounds(target, span, step_ms))


def _grid_bounds(
    target: Target, span: tuple[int, int], step_ms: int | None
) -> tuple[int, int, int]:
    step = step_ms or target.step_ms
    lead = max(target.for_ms, target.keep_firing_for_ms) + step
    return (span[0] - lead) // step * step, span[1], step


def alert_labels(series: Labels, rule_labels: Iterable[tuple[str, str]], value: float) -> Labels:
    """An alert's label set as Prometheus builds it: the series' labels without
    ``__name__``, then the rule's labels (templates expanded; an empty value removes)."""
    out = {k: v for k, v in series if k != "__name__"}
    data = dict(series)
    for name, text in rule_labels:
        expanded = text
        if "{{" in text:
            try:
                expanded = gotemplate.expand(text, data, value)
            except gotemplate.UnsupportedTemplate:
                expanded = text
        if expanded:
            out[name] = expanded
        else:
            out.pop(name, None)
    return tuple(sorted(out.items()))


def backtest(
    client: Client,
    target: Target,
    span: tuple[int, int],
    *,
    step_ms: int | None = None,
    recorded: frozenset[str] = frozenset(),
    with_quantity: bool = False,
    per_week: float | None = None,
    progress: Progress | None = None,
) -> Report:
    """Replay one alert over ``span``: query, state machine, per-label-set summaries; with
    ``with_quantity`` or ``per_week`` also the quantity (left of ``X > N``) and a suggestion."""
    step = step_ms or target.step_ms
    times = query_times(target, span, step)
    try:
        return _backtest(client, target, span, step, times, recorded, with_quantity, per_week,
                         progress)  # fmt: skip
    except QueryRejected as exc:
        raise UsageError(f"{target.alert} ({target.group}): {exc}") from None


def _backtest(
    client: Client,
    target: Target,
    span: tuple[int, int],
    step: int,
    times: list[int],
    recorded: frozenset[str],
    with_quantity: bool,
    per_week: float | None,
    progress: Progress | None,
) -> Report:
    raw = client.range_query(target.expr, times, progress)
    values: Samples = {}
    present: dict[int, set[Labels]] = {}
    for series, samples in raw.items():
        for t, value in samples.items():
            labels = alert_labels(series, target.labels, value)
            values.setdefault(labels, {})[t] = value
            present.setdefault(t, set()).add(labels)
    found = replay(times, [present.get(t, set()) for t in times], target.for_ms,
                   target.keep_firing_for_ms)  # fmt: skip
    flaps = flap_window(target.for_ms, step)
    summaries = {
        labels: summary
        for labels, runs in sorted(found.items())
        if (summary := summarize(runs, span[0], span[1], flaps)).episodes
    }
    report = Report(target, span, step, times, values, summaries)
    report.warning = _missing_recordings(client, target, span, recorded)
    report.comparison = target.comparison
    if with_quantity or per_week is not None:
        compared = report.comparison
        expr = quantity_promql(compared.quantity) if compared is not None else target.expr
        report.quantity = client.range_query(expr, times, progress)
    if per_week is not None:
        _suggest(report, per_week)
    return report


def _suggest(report: Report, per_week: float) -> None:
    target = report.target
    report.per_week = per_week
    if report.comparison is None or report.quantity is None:
        report.notes.append("no suggestion: the expression is not `quantity > number`")
        return
    args = (report.times, report.quantity, report.comparison.op)
    threshold = float(report.comparison.threshold.value)
    report.current_fired = fired_with(*args, threshold, target.for_ms,
                                      target.keep_firing_for_ms, report.span)  # fmt: skip
    report.suggestion = suggest_threshold(*args, target.for_ms, target.keep_firing_for_ms,
                                          report.span, per_week)  # fmt: skip
    if report.suggestion is None:
        report.notes.append("no suggestion: the quantity has no value in the range")


def _missing_recordings(
    client: Client, target: Target, span: tuple[int, int], recorded: frozenset[str]
) -> str | None:
    """A warning when a recording the alert reads has no samples in the span on the server:
    the rules are not deployed there (yet), so "never fired" would be a lie."""
    missing = [
        text
        for name, text in selectors(target.expr)
        if name in recorded and not client.has_series(text, span[0], span[1])
    ]
    if not missing:
        return None
    which = ("recording " if len(missing) == 1 else "recordings ") + ", ".join(missing)
    have = "has" if len(missing) == 1 else "have"
    return (
        f"{which} {have} no samples between {rfc3339(span[0])} and "
        f"{rfc3339(span[1])} on {client.url}: deploy the rules there first; "
        "until then this alert cannot fire in a backtest"
    )


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


def parse_time(text: str, flag: str) -> int:
    """RFC3339 (with a zone) or Unix seconds → Unix ms, from 1970 to the end of year 9999;
    ``UsageError`` otherwise."""
    seconds: Decimal | None
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


def _options(args: argparse.Namespace) -> tuple[tuple[int, int], int | None, float | None]:
    span = (parse_time(args.start, "--from"), parse_time(args.end, "--to"))
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


def run(args: argparse.Namespace, catalog: Catalog, out: TextIO | None = None) -> int:
    """Run ``rulegen backtest``: build the specs, replay every chosen alert, print; 0 on
    success (``UsageError``/``SpecError``/``ToolNotFoundError`` for ``cli`` to map)."""
    stdout = out or sys.stdout
    span, step, per_week = _options(args)
    folder: Path | None = args.plot
    if folder is not None:
        plot.require_matplotlib()
        if folder.exists() and not folder.is_dir():
            raise UsageError(f"--plot {display(folder)}: exists and is not a directory")
    result = build(discover(args.paths or [Path("specs")]), catalog)
    chosen = targets(result, args.alert or ())
    if not chosen:
        raise UsageError("no alerts in the specs")
    queries = 2 if (folder is not None or per_week is not None) else 1
    points = [query_points(t, span, step) for t in chosen]
    _check_points(queries * sum(points), len(chosen), queries, span, args.step)
    client = Client(args.prometheus, timeout=args.timeout)
    client.check()
    bar = _progress_bar(args, points, queries)
    recorded = recordings(result)
    reports = _replay_all(client, chosen, span, step, recorded, folder is not None, per_week, bar)
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
        write_plots(reports, folder)
    if args.format == "json":
        stdout.write(json.dumps(json_rows(reports), indent=2, sort_keys=True) + "\n")
    else:
        stdout.write("\n".join(text_report(r) for r in reports))
    return 0


def _check_points(
    total: int, alerts: int, queries: int, span: tuple[int, int], step: str | None
) -> None:
    """Refuse, before any query, a run of more than ``MAX_EVALUATIONS`` points."""
    if total <= MAX_EVALUATIONS:
        return
    every = f"every {step}" if step is not None else "at each group's interval"
    each = "1 query" if queries == 1 else f"{queries} queries"
    raise UsageError(
        f"this backtest needs {total:,} evaluation points ({alerts} alert(s), {each} each, "
        f"{every} from {rfc3339(span[0])} to {rfc3339(span[1])}), more than the "
        f"{MAX_EVALUATIONS:,} one run may evaluate: use a larger --step, a shorter range "
        "(--from/--to) or fewer alerts (--alert NAME)"
    )


def _progress_bar(
    args: argparse.Namespace, points: Sequence[int], queries: int
) -> ProgressBar | None:
    """A bar counting range queries: ``queries`` per alert of ``points`` points each."""
    if not (args.progress or sys.stderr.isatty()):
        return None
    total = sum(queries * -(-n // MAX_POINTS) for n in points)
    return ProgressBar(total, sys.stderr)


def _replay_all(
    client: Client,
    chosen: Sequence[Target],
    span: tuple[int, int],
    step: int | None,
    recorded: frozenset[str],
    with_quantity: bool,
    per_week: float | None,
    bar: ProgressBar | None,
) -> list[Report]:
    progress: Callable[[int], None] | None = bar.advance if bar else None
    try:
        return [
            backtest(client, target, span, step_ms=step, recorded=recorded,
                     with_quantity=with_quantity, per_week=per_week, progress=progress)
            for target in chosen
        ]  # fmt: skip
    finally:
        if bar is not None:
            bar.finish()
