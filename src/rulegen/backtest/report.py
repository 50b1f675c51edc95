"""Backtest output: a table per alert, one JSON row per alert and label set, a picture each.

Why: CI and notebooks read the JSON, people read the table; both come from the same reports.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from rulegen import units
from rulegen.backtest import plot
from rulegen.backtest.replay import Labels, Summary
from rulegen.backtest.targets import Report
from rulegen.errors import UsageError
from rulegen.render.prometheus import threshold_promql

# --- output ----------------------------------------------------------------------------------


def rfc3339(ms: int) -> str:
    """``2026-01-01T00:00:00Z`` (milliseconds only when not whole seconds)."""
    moment = datetime.fromtimestamp(ms / 1000, UTC)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    return f"{text}.{ms % 1000:03d}Z" if ms % 1000 else f"{text}Z"


def _seconds(ms: int) -> int | float:
    return ms // 1000 if ms % 1000 == 0 else ms / 1000


def _number(value: float) -> int | float:
    return int(value) if value.is_integer() and abs(value) < 2**53 else value


def _row_key(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row["alert"], row["group"], sorted(row["labels"].items()),
            sorted(row["rule_labels"].items()))  # fmt: skip


def json_rows(reports: Sequence[Report]) -> list[dict[str, Any]]:
    """One object per alert and label set (one with empty ``labels`` for an alert that never
    fired), sorted by alert, group, labels and the rule's own labels (``rule_labels``: they
    tell apart two rules of one name in one group, such as an SLO's page and ticket tiers)."""
    rows: list[dict[str, Any]] = []
    for report in reports:
        common: dict[str, Any] = {
            "warning": report.warning,
            "partial_until": _optional_time(report.partial_until),
            "history_from": _optional_time(report.history_from),
        }
        if report.per_week is not None:  # asked for: null when none can be made
            common["suggestion"] = None
        if report.suggestion is not None:
            s = report.suggestion
            common["suggestion"] = {
                "op": s.op, "threshold": _number(s.threshold), "direction": s.direction,
                "fired": s.fired, "allowed": s.allowed, "per_week": report.per_week,
                "current_fired": report.current_fired,
            }  # fmt: skip
        entries: list[tuple[Labels, Summary | None]] = [*sorted(report.summaries.items())]
        for labels, summary in entries or [((), None)]:
            row: dict[str, Any] = {
                "alert": report.target.alert,
                "group": report.target.group,
                "labels": dict(labels),
                "rule_labels": dict(report.target.labels),
                "episodes": [
                    {"start": rfc3339(e.start), "end": None if e.end is None else rfc3339(e.end)}
                    for e in (summary.episodes if summary else ())
                ],
                "firing_seconds": _seconds(summary.firing_ms) if summary else 0,
                "fired": summary.fired if summary else 0,
                "longest_seconds": _seconds(summary.longest_ms) if summary else 0,
                "flaps": summary.flaps if summary else 0,
                **common,
            }
            rows.append(row)
    return sorted(rows, key=_row_key)


def _optional_time(ms: int | None) -> str | None:
    return None if ms is None else rfc3339(ms)


def _duration(ms: int) -> str:
    return units.format_duration(Decimal(ms) / 1000)


def text_report(report: Report) -> str:
    """A readable block per alert: header, totals, a table per label set, warnings."""
    t = report.target
    fors = f"for {_duration(t.for_ms)}"
    if t.keep_firing_for_ms:
        fors += f", keep_firing_for {_duration(t.keep_firing_for_ms)}"
    own = ", ".join(f"{k}={v}" for k, v in t.labels)
    lines = [f"{t.alert} ({t.group}): {fors}, every {_duration(report.step_ms)}; {own}"]
    lines.extend(f"  {line}" for line in t.expr.splitlines())
    start, end = report.span
    total = sum(s.firing_ms for s in report.summaries.values())
    where = f"  {rfc3339(start)} .. {rfc3339(end)}: "
    if report.warning:
        lines.append(f"  warning: {report.warning}")
    if report.partial_until is not None and report.history_from is not None:
        lines.append(
            f"  partial: the server's history starts at {rfc3339(report.history_from)}, later "
            f"than the rules' windows reach back: results before "
            f"{rfc3339(min(report.partial_until, end))} read less history than deployed rules "
            "would have"
        )
    if not report.summaries:
        lines.append(where + ("no data to replay" if report.warning else "never fired"))
    else:
        times = "time" if report.fired == 1 else "times"
        lines.append(
            where + f"fired {report.fired} {times} on {len(report.summaries)} label set(s), "
            f"{_duration(total)} firing in total"
        )
        lines.extend(_table(report))
    lines.extend(f"  {note}" for note in report.notes)
    if report.suggestion is not None and report.comparison is not None:
        s = report.suggestion
        now = threshold_promql(report.comparison.threshold)
        lines.append(
            f"  suggestion: {s.op} {_number(s.threshold)} (fire when {s.direction}) would have "
            f"fired {s.fired} time(s), budget {s.allowed:.3g} ({report.per_week:g}/week over "
            f"this range); {s.op} {now} fired {report.current_fired}"
        )
    return "\n".join(lines) + "\n"


def _table(report: Report) -> list[str]:
    static = {name for name, _ in report.target.labels}
    head = ("labels", "fired", "firing", "longest", "flaps")
    rows = [
        (
            ", ".join(f"{k}={v}" for k, v in labels if k not in static) or "{}",
            str(s.fired),
            _duration(s.firing_ms),
            _duration(s.longest_ms),
            str(s.flaps),
        )  # fmt: skip
        for labels, s in sorted(report.summaries.items())
    ]
    widths = [max(len(r[i]) for r in (head, *rows)) for i in range(len(head))]
    out = []
    for row in (head, *rows):
        cells = [row[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)
        ]
        out.append("    " + "  ".join(cells).rstrip())
    return out


# --- plots ----------------------------------------------------------------------------------


def plot_stems(reports: Sequence[Report]) -> list[str]:
    """A file name (without extension) per alert: ``<alert>``, ``<group>.<alert>`` when two
    groups have an alert of that name, ``<group>.<alert>.<n>`` for the n-th rule of that
    name in one group (an SLO's tiers)."""
    names = [r.target.alert for r in reports]
    rules = [(r.target.group, r.target.alert) for r in reports]
    stems = []
    for index, report in enumerate(reports):
        t = report.target
        stem = t.alert if names.count(t.alert) == 1 else f"{t.group}.{t.alert}"
        if rules.count((t.group, t.alert)) > 1:
            stem += f".{rules[: index + 1].count((t.group, t.alert))}"
        stems.append(stem)
    return stems


def refuse_foreign(folder: Path, paths: Sequence[Path]) -> None:
    """``UsageError`` before anything is written when a file to write is not rulegen's."""
    for path in paths:
        if os.path.lexists(path) and not plot.written_by_rulegen(path):
            raise UsageError(
                f"--plot {folder}: {path.name} was not written by rulegen; refusing to "
                "overwrite (move it or choose another --plot folder)"
            )


def write_plots(reports: Sequence[Report], folder: Path, fmt: str = "png") -> list[Path]:
    """A picture per alert in ``folder`` (``plot_stems``), as ``fmt`` (png or svg)."""
    from rulegen.backtest.picture import backtest_picture

    paths = [folder / f"{stem}.{fmt}" for stem in plot_stems(reports)]
    refuse_foreign(folder, paths)
    for path, report in zip(paths, reports, strict=True):
        plot.write(path, backtest_picture(report), fmt)
    return paths
