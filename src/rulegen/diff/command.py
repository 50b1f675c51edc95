"""``rulegen diff``: build the specs at a base (a git revision or a folder) and now, compare.

Why a command of its own and not ``git diff rules/``: the generated files say *how* the rules
changed (a PromQL literal, a rewritten test), the diff says *what*: each alert's fields in the
spec's units, the receivers its labels now reach, and with ``--prometheus`` how often it would
have fired before and after. ``cli`` owns exit codes: 0 whatever changed (a diff is
information), 1 with ``--exit-code`` when anything changed; spec errors of either version are
a ``SpecError`` (2), each line naming its version.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from rulegen.backtest import TIMEOUT
from rulegen.backtest.command import TIME_HELP, add_plot_format, plot_options, span_of
from rulegen.catalog import folders as signal_folders
from rulegen.errors import SpecError, UsageError
from rulegen.promapi import MAX_BYTES, timeout_arg

if TYPE_CHECKING:  # the rest is imported when the command runs: ``rulegen --help`` needs none
    from rulegen.backtest.query import Client
    from rulegen.catalog import Catalog
    from rulegen.diff.model import Diff
    from rulegen.diff.versions import Version

FORMATS = ("text", "markdown", "json")
EPILOG = """exit codes:
  0  the diff was printed, whatever changed
  1  with --exit-code: something changed
  2  a spec error in either version (each line says which), a bad argument or revision,
     a server problem with --prometheus
  3  git is missing (--base)
"""


def add_parser(sub: argparse._SubParsersAction[Any]) -> argparse.ArgumentParser:
    """Add the ``diff`` subcommand to ``rulegen``'s subparsers; returns its parser."""
    p: argparse.ArgumentParser = sub.add_parser(
        "diff",
        help="what an edit of the specs changes, alert by alert",
        description=(
            "Build the specs at a base (a git revision, default HEAD, or a folder) and as\n"
            "they are now, and compare them per service and alert: added, removed, changed\n"
            "(each changed field in the spec's units, and the receivers the alert reaches),\n"
            "unchanged. With --prometheus, backtest both versions of every changed alert."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("paths", nargs="*", type=Path, help="spec files or folders (default: specs/)")
    base = p.add_mutually_exclusive_group()
    base.add_argument("--base", metavar="REV", default=None,
                      help="the git revision to compare with (default: HEAD)")  # fmt: skip
    base.add_argument("--base-dir", type=Path, metavar="DIR", default=None,
                      help="a folder of specs to compare with, instead of a revision")  # fmt: skip
    p.add_argument("--prometheus", metavar="URL", help="backtest both versions on this server")
    p.add_argument("--from", dest="start", metavar="T", help=f"backtest from: {TIME_HELP}")
    p.add_argument("--to", dest="end", metavar="T", help=f"backtest to: {TIME_HELP}")
    p.add_argument("--timeout", type=timeout_arg, default=TIMEOUT, metavar="SECONDS",
                   help=f"deadline of each request to --prometheus (default: {TIMEOUT:g}); "
                   f"answers are capped at {MAX_BYTES // 2**20} MiB")  # fmt: skip
    p.add_argument("--plot", type=Path, metavar="DIR",
                   help="with --prometheus: a picture per replayed alert, before and after "
                   "(needs matplotlib: pip install 'rulegen[plot]')")  # fmt: skip
    add_plot_format(p)
    p.add_argument("--format", choices=FORMATS, default="text",
                   help="text (default), markdown (a pull request comment) or one JSON "
                   "object")  # fmt: skip
    p.add_argument("--exit-code", action="store_true", help="exit 1 when anything changed")
    signal_folders.add_arguments(p)
    return p


def _span(args: argparse.Namespace) -> tuple[int, int] | None:
    """The backtest's range, when ``--prometheus`` asks for one (all three go together)."""
    given = [f for f, v in (("--from", args.start), ("--to", args.end)) if v is not None]
    if args.prometheus is None:
        if given:
            raise UsageError(f"{given[0]} needs --prometheus URL (the server to backtest on)")
        return None
    missing = [f for f in ("--from", "--to") if f not in given]
    if missing:
        raise UsageError(f"--prometheus needs {' and '.join(missing)} (the range to backtest)")
    span = span_of(args)
    if span[0] >= span[1]:
        raise UsageError(f"--from {args.start} must be before --to {args.end}")
    return span


def run(
    args: argparse.Namespace, catalog: Catalog, out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:  # fmt: skip
    """Run ``rulegen diff``: both versions built, compared, printed in ``--format``; the exit
    code (``UsageError``/``SpecError``/``ToolNotFoundError`` for ``cli`` to map)."""
    from rulegen.backtest.query import Client
    from rulegen.diff.compare import compare
    from rulegen.diff.history import backtest_diff
    from rulegen.diff.report import json_report, markdown_report, text_report
    from rulegen.load import display

    reports = {"text": text_report, "markdown": markdown_report, "json": json_report}
    stdout, stderr = out or sys.stdout, err or sys.stderr
    span = _span(args)
    if args.plot is not None and span is None:
        raise UsageError("--plot needs --prometheus URL (the pictures are of the backtest)")
    folder, fmt = plot_options(args)
    old, new = _versions(args, catalog)
    for warning in (*old.warnings, *new.warnings):
        stderr.write(f"rulegen: warning: {warning}\n")
    name = display(args.base_dir) if args.base_dir is not None else args.base or "HEAD"
    diff = compare(old.facts, new.facts, name)
    if span is not None:
        client = Client(args.prometheus, timeout=args.timeout)
        client.check()
        _check_server(client, old, new, stderr)
        replays = backtest_diff(diff, old, new, client, span, with_quantity=folder is not None)
        for warning in diff.warnings:
            stderr.write(f"rulegen: warning: {warning}\n")
        if folder is not None:
            from rulegen.diff.plots import write_diff_plots

            folder.mkdir(parents=True, exist_ok=True)
            write_diff_plots(diff, replays, folder, fmt)
    stdout.write(reports[args.format](diff))
    return exit_code(diff, args.exit_code)


def _check_server(client: Client, old: Version, new: Version, stderr: TextIO) -> None:
    """The current specs must declare the server's Prometheus semantics (``SpecError``
    otherwise); the base may be the other side of a migration: its rules are replayed on
    this server all the same, with a warning."""
    from rulegen.core.versions import same_semantics
    from rulegen.diff.versions import errors_of
    from rulegen.validate.server import declared_by, mismatches, server_version

    found = server_version(client.api)
    with errors_of(new.label):
        problems = mismatches(declared_by(new.result.services), client.api, found)
        if problems:
            raise SpecError(problems)
    if found is None:
        return
    other = sorted(
        {str(d.version) for d in declared_by(old.result.services)
         if not same_semantics(d.version, found)}
    )  # fmt: skip
    if other:
        stderr.write(
            f"rulegen: warning: {old.label}: its rules are for Prometheus {', '.join(other)}, "
            f"replayed on the Prometheus at {client.api.url} ({'.'.join(map(str, found))}), "
            "which evaluates them otherwise\n"
        )


def _versions(args: argparse.Namespace, catalog: Catalog) -> tuple[Version, Version]:
    """The base and the current version, built; the spec errors of both raised together."""
    import tempfile

    from rulegen.diff.versions import (
        CURRENT,
        VersionErrors,
        build_version,
        folder_version,
        git_version,
        raise_together,
    )
    from rulegen.load import discover

    paths: list[Path] = args.paths or [Path("specs")]
    inputs = discover(paths)
    old = new = None
    failures: list[SpecError | None] = [None, None]
    with tempfile.TemporaryDirectory(prefix="rulegen-diff-") as folder:
        try:
            if args.base_dir is not None:
                old = folder_version(args.base_dir, catalog)
            else:
                old = git_version(args.base or "HEAD", paths, args.signals, Path(folder))
        except VersionErrors as exc:
            failures[0] = exc
    try:
        new = build_version(CURRENT, inputs, catalog)
    except VersionErrors as exc:
        failures[1] = exc
    raise_together(failures)
    assert old is not None
    assert new is not None
    return old, new


def exit_code(diff: Diff, strict: bool) -> int:
    """0 whatever changed; with ``--exit-code``, 1 when anything did."""
    return 1 if strict and diff.changed else 0
