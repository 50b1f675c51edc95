"""``rulegen repair``: find the holes in each SLO's recordings and re-record them.

Why a command: the repair needs the rules exactly as generated (the cascade's expressions,
in group order) and a server that takes writes; ``cli`` owns exit codes, and every problem
here is one ``UsageError`` line (exit 2), raised before anything is written.
"""

from __future__ import annotations

import argparse
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
    from rulegen.repair.model import Repair, SLOGroup

TIMEOUT = 120.0


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
    signal_folders.add_arguments(p)
    return p


def run(args: argparse.Namespace, catalog: Catalog, out: TextIO | None = None) -> int:
    """Run ``rulegen repair``: 0 when every hole was repaired (or none found, or
    ``--dry-run``); ``UsageError`` for ``cli`` to map."""
    from rulegen.backtest.report import rfc3339
    from rulegen.build import build
    from rulegen.load import discover
    from rulegen.promapi.client import PrometheusAPI
    from rulegen.repair.plan import slo_group
    from rulegen.repair.write import apply, check_server
    from rulegen.validate.server import declared_by, refuse_other_server

    stdout = out or sys.stdout
    now = time.time()
    end = parse_time(args.end, "--to", now)
    start = parse_time(args.start, "--from", now) if args.start is not None else None
    if start is not None and start >= end:
        raise UsageError(f"--from {args.start} must be before --to {args.end}")
    client = PrometheusAPI(args.prometheus, timeout=args.timeout)
    result = build(discover(args.paths or [Path("specs")]), catalog)
    groups = [slo_group(s.service, slo) for s in result.services for slo in s.slos]
    if not groups:
        raise UsageError("no SLOs in the specs")
    refuse_other_server(declared_by(result.services), client)
    repairs = [r for g in groups if (r := _plan(client, g, start, end, stdout)) is not None]
    verb = "would rewrite" if args.dry_run else "rewriting"
    for repair in repairs:
        print(f"{repair.group.name}: {verb} {len(repair.group.recordings)} recordings from "
              f"{rfc3339(repair.start_ms)} to {rfc3339(repair.end_ms)} ({repair.evaluations} "
              "evaluations each)", file=stdout)  # fmt: skip
    if args.dry_run or not repairs:
        return 0
    check_server(client, min(r.start_ms for r in repairs), max(r.end_ms for r in repairs))
    for repair in repairs:
        written, kept = apply(client, repair)
        print(f"{repair.group.name}: wrote {written:,} samples", file=stdout)
        if kept:
            sys.stderr.write(
                f"rulegen: warning: {repair.group.name}: {kept:,} samples of the range could "
                "not be deleted and keep their values (written out of order by an earlier "
                "repair: Prometheus keeps them until it compacts them into a block, about "
                "two hours; run the repair again then)\n"
            )
    return 0


def _plan(
    client: PrometheusAPI, group: SLOGroup, start: int | None, end: int, stdout: TextIO
) -> Repair | None:
    """One SLO's holes (printed) and the repair they need, raw data checked; ``None``
    without a hole."""
    from rulegen.backtest.report import rfc3339
    from rulegen.repair.interpolate import find_gaps
    from rulegen.repair.plan import check_raw, find_holes, repair_of

    span = (start if start is not None else end - group.window_ms, end)
    holes = find_holes(client, group, span)
    for hole in holes:
        print(f"{group.name}: hole from {rfc3339(hole.first_ms)} to "
              f"{rfc3339(hole.last_ms)} ({hole.evaluations} evaluation(s) missed)",
              file=stdout)  # fmt: skip
    repair = repair_of(group, holes, end)
    if repair is None:
        print(f"{group.name}: no hole from {rfc3339(span[0])} to {rfc3339(end)}", file=stdout)
        return None
    check_raw(client, repair)
    repair = replace(repair, gaps=tuple(find_gaps(client, group, repair.holes)))
    for gap in repair.gaps:
        print(f"{group.name}: no raw sample from {rfc3339(gap.after_ms)} to "
              f"{rfc3339(gap.before_ms)} (Prometheus down): counters bridged across it",
              file=stdout)  # fmt: skip
    return repair
