"""``rulegen repair``: find the holes in each SLO's recordings and re-record them.

Why a command: the repair needs the rules exactly as generated (the cascade's expressions,
in group order) and a server that takes writes; ``cli`` owns exit codes, and every problem
here is one ``UsageError`` line (exit 2), raised before anything is written.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from rulegen.backtest.command import TIME_HELP, parse_time
from rulegen.catalog import folders as signal_folders
from rulegen.errors import UsageError
from rulegen.promapi import timeout_arg

if TYPE_CHECKING:
    from rulegen.catalog import Catalog
    from rulegen.promapi.client import PrometheusAPI
    from rulegen.repair.journal import Journal
    from rulegen.repair.model import Repair, SLOGroup

TIMEOUT = 120.0
JOURNAL = Path(".rulegen-repair")


def add_parser(sub: argparse._SubParsersAction[Any]) -> argparse.ArgumentParser:
    """Add the ``repair`` subcommand to ``rulegen``'s subparsers; returns its parser."""
    p: argparse.ArgumentParser = sub.add_parser(
        "repair",
        help="re-record the SLO recordings of evaluations Prometheus missed",
        description=(
            "Find the evaluations each SLO's rule group missed (its base recording has no "
            "sample), delete the recordings the holes affect and write them again, "
            "evaluated from the raw series in rule order. Needs Prometheus started with "
            "--web.enable-admin-api and --web.enable-remote-write-receiver, and "
            "storage.tsdb.out_of_order_time_window in its configuration (docs/slos.md, Repair)."
        ),
    )
    p.add_argument("paths", nargs="*", type=Path, help="spec files or folders (default: specs/)")
    p.add_argument("--prometheus", required=True, metavar="URL", help="e.g. http://localhost:9090")
    p.add_argument("--from", dest="start", metavar="T",
                   help=f"{TIME_HELP} (default: one SLO window before --to)")  # fmt: skip
    p.add_argument("--to", dest="end", default="now", metavar="T", help="default: now")
    p.add_argument("--dry-run", action="store_true",
                   help="print the holes and what would be rewritten; write nothing")  # fmt: skip
    p.add_argument("--timeout", type=timeout_arg, default=TIMEOUT, metavar="SECONDS",
                   help=f"deadline of each request (default: {TIMEOUT:g})")  # fmt: skip
    p.add_argument("--journal", type=Path, default=JOURNAL, metavar="DIR",
                   help="where each repair records what it deletes and writes before it "
                   "starts, so that a rerun finishes an interrupted one "
                   f"(default: {JOURNAL}/)")  # fmt: skip
    signal_folders.add_arguments(p)
    return p


def run(args: argparse.Namespace, catalog: Catalog, out: TextIO | None = None) -> int:
    """Run ``rulegen repair``: 0 when every hole was repaired (or none found, or
    ``--dry-run``); ``UsageError`` for ``cli`` to map. An interrupted repair's journal is
    finished first, whatever the range asked for now."""
    from rulegen.promapi.client import PrometheusAPI
    from rulegen.repair.journal import locked

    stdout = out or sys.stdout
    now = time.time()
    end = parse_time(args.end, "--to", now)
    start = parse_time(args.start, "--from", now) if args.start is not None else None
    if start is not None and start >= end:
        raise UsageError(f"--from {args.start} must be before --to {args.end}")
    client = PrometheusAPI(args.prometheus, timeout=args.timeout)
    with contextlib.nullcontext() if args.dry_run else locked(args.journal):
        return _run(args, catalog, client, (start, end, now), stdout)


def _run(
    args: argparse.Namespace,
    catalog: Catalog,
    client: PrometheusAPI,
    times: tuple[int | None, int, float],
    stdout: TextIO,
) -> int:
    """The repair itself, the journal folder locked (unless ``--dry-run``)."""
    from rulegen.build import build
    from rulegen.load import discover
    from rulegen.repair.journal import Journal
    from rulegen.repair.plan import slo_group
    from rulegen.validate.server import declared_by, refuse_other_server

    start, end, now = times
    result = build(discover(args.paths or [Path("specs")]), catalog)
    groups = [slo_group(s.service, slo) for s in result.services for slo in s.slos]
    if not groups:
        raise UsageError("no SLOs in the specs")
    refuse_other_server(declared_by(result.services), client)
    again = _command(args, client.url)
    pending = [j for g in groups if (j := Journal.find(args.journal, g)) is not None]
    _finish(client, pending, args.dry_run, again, stdout)
    repairs = [
        r
        for g in groups
        if (r := _plan(client, g, start, end, round(now * 1000), stdout)) is not None
    ]
    verb = "would rewrite" if args.dry_run else "rewriting"
    for repair in repairs:
        print(f"{repair.group.name}: {verb} {len(repair.group.recordings)} recordings from "
              f"{_time(repair.start_ms)} to {_time(repair.end_ms)} ({repair.evaluations} "
              "evaluations each)", file=stdout)  # fmt: skip
    if args.dry_run or not repairs:
        return 0
    _check(client, repairs)
    for repair in repairs:
        journal = Journal.create(args.journal, repair)
        print(f"{repair.group.name}: journal {journal.folder} (removed when done)", file=stdout)
        _apply(client, journal, again, stdout)
    return 0


def _time(ms: int) -> str:
    from rulegen.backtest.report import rfc3339

    return rfc3339(ms)


def _check(client: PrometheusAPI, repairs: list[Repair]) -> None:
    from rulegen.repair.write import check_server

    check_server(client, min(r.start_ms for r in repairs), max(r.end_ms for r in repairs))


def _finish(
    client: PrometheusAPI, pending: list[Journal], dry_run: bool, again: str, stdout: TextIO
) -> None:
    """Finish the repairs an earlier run left unfinished (their journals)."""
    verb = "would finish" if dry_run else "finishing"
    for journal in pending:
        repair = journal.repair
        print(f"{repair.group.name}: {verb} the repair from {_time(repair.start_ms)} to "
              f"{_time(repair.end_ms)} an earlier run left unfinished (journal "
              f"{journal.folder})", file=stdout)  # fmt: skip
    if dry_run or not pending:
        return
    _check(client, [j.repair for j in pending])
    for journal in pending:
        _apply(client, journal, again, stdout)


def _apply(client: PrometheusAPI, journal: Journal, again: str, stdout: TextIO) -> None:
    """Run one journaled repair to its end and remove its journal; a failure names the
    recordings that may be deleted and the command that finishes the job."""
    from rulegen.repair.write import apply

    repair = journal.repair
    try:
        written, kept = apply(client, journal)
    except UsageError as exc:
        records = repair.group.recordings
        done = sum(journal.written(i) for i in range(len(records)))
        at = records[done].record if done < len(records) else records[-1].record
        raise UsageError(
            f"{exc}; {repair.group.name}: repair stopped at {at} ({done} of {len(records)} "
            f"recordings rewritten): its samples from {_time(repair.start_ms)} to "
            f"{_time(repair.end_ms)} may be deleted, and the journal {journal.folder} holds "
            f"what goes back: run `{again}` to finish the repair"
        ) from None
    journal.remove()
    print(f"{repair.group.name}: wrote {written:,} samples", file=stdout)
    if kept:
        sys.stderr.write(
            f"rulegen: warning: {repair.group.name}: {kept:,} samples of the range could "
            "not be deleted and keep their values (written out of order by an earlier "
            "repair: Prometheus keeps them until it compacts them into a block, about "
            "two hours; run the repair again then)\n"
        )


def _command(args: argparse.Namespace, url: str) -> str:
    """The command line that runs this repair again (the URL as messages show it)."""
    import shlex

    words = ["rulegen", "repair", *(str(p) for p in args.paths)]
    words += ["--prometheus", url]
    for folder in args.signals or []:
        words += ["--signals", str(folder)]
    if args.journal != JOURNAL:
        words += ["--journal", str(args.journal)]
    return shlex.join(words)


def _plan(
    client: PrometheusAPI, group: SLOGroup, start: int | None, end: int, now: int, stdout: TextIO
) -> Repair | None:
    """One SLO's holes (printed) and the repair they need, raw data checked; ``None``
    without a hole."""
    from rulegen.repair.interpolate import find_gaps
    from rulegen.repair.plan import check_raw, check_span, find_holes, repair_of

    span = (start if start is not None else end - group.window_ms, end)
    check_span(group, span)
    holes = find_holes(client, group, span, now)
    for hole in holes:
        print(f"{group.name}: hole from {_time(hole.first_ms)} to "
              f"{_time(hole.last_ms)} ({hole.evaluations} evaluation(s) missed)",
              file=stdout)  # fmt: skip
    repair = repair_of(group, holes, end)
    if repair is None:
        print(f"{group.name}: no hole from {_time(span[0])} to {_time(end)}", file=stdout)
        return None
    check_raw(client, repair)
    repair = replace(repair, gaps=tuple(find_gaps(client, group, repair.holes)))
    for gap in repair.gaps:
        print(f"{group.name}: no raw sample from {_time(gap.after_ms)} to "
              f"{_time(gap.before_ms)} (Prometheus down): counters bridged across it",
              file=stdout)  # fmt: skip
    return repair
