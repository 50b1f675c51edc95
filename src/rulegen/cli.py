"""The command line: the only place that prints or exits.

Exit codes: 0 ok; 1 promtool failure, stale output or a lint error; 2 invalid spec or usage;
3 a required tool (promtool, amtool, matplotlib for plots) is missing; 4 internal error (a bug:
anything unexpected is one line, and ``--debug`` shows its traceback).

``--format text|json|github`` (build, validate, lint) picks how diagnostics are printed: text
(the default) as always; json as one JSON list of diagnostics on stdout, whatever the exit
code, with every other line on stderr; github as workflow-command annotations on stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

# Only what the parser needs is imported here; each command imports the pipeline it runs
# (pydantic, Jinja2, the PromQL parser, every feature), so ``rulegen --version`` and
# ``--help`` start at once. ``tests/cli/test_startup.py`` holds the line.
from rulegen import __version__
from rulegen.backtest import command as backtest
from rulegen.catalog import Catalog, load_catalog
from rulegen.catalog import folders as signal_folders
from rulegen.core import diagnostics as codes
from rulegen.core.diagnostics import FORMATS, Diagnostic, FieldPath, as_json, github
from rulegen.diff import command as diff
from rulegen.errors import (
    OutputConflict,
    RulegenError,
    SpecError,
    StaleOutput,
    ToolNotFoundError,
    UsageError,
    ValidationFailed,
    printable,
)
from rulegen.importer import command as importer
from rulegen.lint import TIMEOUT
from rulegen.progress import Reporter, choose_mode
from rulegen.progress import add_arguments as verbosity_arguments
from rulegen.promapi import MAX_BYTES, timeout_arg
from rulegen.render import TARGETS
from rulegen.repair import command as repair

if TYPE_CHECKING:
    from rulegen.build import BuildResult
    from rulegen.catalog import Catalog
    from rulegen.load import SpecInputs
    from rulegen.outdir import Staged
    from rulegen.outdir.plan import Plan
    from rulegen.pipeline.rendercache import RenderCache

EPILOG = """exit codes:
  0  success
  1  promtool rejected the rules or a unit test failed; --check found stale output;
     lint found an error; diff --exit-code found a change
  2  invalid spec or usage
  3  a required tool (promtool, amtool; matplotlib for backtest --plot) is missing
  4  internal error: a bug in rulegen (run again with --debug for the traceback)
"""


PATHS_HELP = "spec files or folders, - for a spec on stdin (default: specs/)"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        command = self.prog.removeprefix("rulegen").strip()
        raise UsageError(f"{command}: {message}" if command else message)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="rulegen",
        description="Typed YAML specs → Prometheus rules and promtool tests (validated).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"rulegen {__version__}")
    parser.add_argument(
        "--debug", action="store_true", help="show an internal error's traceback (anywhere)"
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    b = sub.add_parser("build", help="render, validate and test specs into DIR", epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    b.add_argument("paths", nargs="*", type=Path, help="spec files or folders (default: specs/)")
    b.add_argument(
        "--out", type=Path, default=Path("rules"), help="output folder (default: rules/)"
    )
    b.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 with a diff if DIR is stale"
    )
    b.add_argument("--no-validate", action="store_true", help="skip promtool check/test")
    b.add_argument("--target", action="append", choices=TARGETS, default=None,
                   help="rule target to write besides the plain rule files (repeatable): "
                   "operator (kubernetes/), thanos (thanos/), mimir (mimir/), "
                        "victoriametrics (victoriametrics/)")  # fmt: skip
    signal_folders.add_arguments(b)
    b.add_argument("--test-cache", type=Path, default=None, metavar="DIR",
                   help="remember passing promtool test files in DIR and skip those whose "
                   "test, rule files and promtool release are unchanged; keep each service's "
                   "rendered files there too (DIR/render) and reuse them while its inputs "
                   "and rulegen are unchanged")  # fmt: skip
    b.add_argument("--read-only", action="store_true",
                   help="use the --test-cache entries but write nothing into DIR "
                   "(a pull request's CI job)")  # fmt: skip
    b.add_argument("--junit", type=Path, default=None, metavar="FILE",
                   help="write promtool's JUnit XML report of every test file to FILE, "
                   "also when a test fails (promtool 2.55 or later)")  # fmt: skip
    b.add_argument("--jobs", "-j", type=_jobs, default=None, metavar="N",
                   help="processes rendering specs and promtool runs at once "
                   "(default: the CPUs rulegen may use)")  # fmt: skip
    _format_argument(b)
    verbosity_arguments(b)
    v = sub.add_parser("validate", help="check specs only; write nothing")
    v.add_argument("paths", nargs="*", type=Path, help=PATHS_HELP)
    signal_folders.add_arguments(v)
    _format_argument(v)
    lint = sub.add_parser(
        "lint",
        help="check the specs' intent (exit 1 on an error finding)",
        description="Checks with stable ids; text output is FILE:LINE:COL: [id] severity: message.",
    )
    lint.add_argument("paths", nargs="*", type=Path, help=PATHS_HELP)
    lint.add_argument("--prometheus", metavar="URL", help="also check against this Prometheus")
    _format_argument(lint)
    signal_folders.add_arguments(lint)
    lint.add_argument("--timeout", type=timeout_arg, default=TIMEOUT, metavar="SECONDS",
                      help="deadline of each request to --prometheus, whole answer included "
                      f"(default: {TIMEOUT:g}); answers are capped at "
                      f"{MAX_BYTES // 2**20} MiB")  # fmt: skip
    lint.add_argument("--disable", action="append", default=[], metavar="ID",
                      help="do not run this check (repeatable); see --list")  # fmt: skip
    lint.add_argument("--list", action="store_true", help="print the checks and exit")
    verbosity_arguments(lint)
    backtest.add_parser(sub)
    diff.add_parser(sub)
    repair.add_parser(sub)
    e = sub.add_parser("explain", help="print a spec with its defaults merged, and where each "
                       "value comes from")  # fmt: skip
    e.add_argument("spec", type=Path, help="a service spec file")
    signal_folders.add_arguments(e)
    importer.add_parser(sub)
    i = sub.add_parser("init", help="start a monitoring repository in DIR: a commented spec, "
                       "routing, a test, CI and pre-commit")  # fmt: skip
    i.add_argument("dir", nargs="?", type=Path, default=Path(),
                   help="the folder to write into (default: the current one)")  # fmt: skip
    s = sub.add_parser("schema", help="print the JSON Schema of a spec, routing or defaults "
                       "file (for editors)")  # fmt: skip
    s.add_argument("--kind", choices=("spec", "routing", "defaults"), default="spec",
                   help="the kind of input file (default: spec)")  # fmt: skip
    signal_folders.add_arguments(s)
    return parser


FORMATTED = ("build", "validate", "lint")  # the commands with --format text|json|github
# The commands that only read and print: their errors do not end "; nothing written"
# (validate, the build without its writing, keeps it: it says the build wrote nothing).
READ_ONLY = frozenset({"lint", "explain", "diff", "schema"})


def _format_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=FORMATS, default="text",
                        help="diagnostics as text (default), one JSON list on stdout, or "
                        "GitHub workflow annotations")  # fmt: skip


class _Output:
    """Where a command's lines and diagnostics go, by ``--format``.

    Why one place: with ``json`` stdout must hold exactly one JSON document, whatever
    happens, so every line meant for people goes to stderr instead; with ``github`` the
    diagnostics are annotations and the lines stay where text puts them.
    """

    def __init__(self, fmt: str) -> None:
        self.format = fmt
        self.findings: list[Diagnostic] = []  # lint's, shown without their field path
        self.errors: list[Diagnostic] = []  # the error's, shown with it
        self.document: str | None = None  # printed instead (``lint --list --format json``)
        self.quiet = False  # ``--quiet``: errors only
        self.writes = True  # the command writes files (its errors say "nothing written")
        self.progress = Reporter("silent", sys.stderr)  # set by ``--progress`` and the others

    def line(self, text: str) -> None:
        """A line for people (a summary, a note): stdout, or stderr under ``json``; none
        under ``--quiet``."""
        if not self.quiet:
            print(text, file=sys.stderr if self.format == "json" else sys.stdout)

    def warn(self, text: str) -> None:
        """``rulegen: warning: …`` on stderr (over a status line), unless ``--quiet``."""
        if not self.quiet:
            self.progress.line(f"rulegen: warning: {printable(text)}")

    def finish(self) -> None:
        """The diagnostics, as JSON or annotations (text prints them as they come)."""
        if self.document is not None:
            sys.stdout.write(self.document)
        elif self.format == "json":
            sys.stdout.write(as_json([*self.findings, *self.errors]))
        elif self.format == "github":
            sys.stdout.write(github(self.findings, with_path=False) + github(self.errors))


def _requested_format(argv: Sequence[str]) -> str:
    """The ``--format`` of a command line that may not parse (its errors are reported in
    the format asked for, when one was)."""
    command = next((a for a in argv if not a.startswith("-")), None)
    if command not in FORMATTED:
        return "text"
    for index, arg in enumerate(argv):
        value = arg.removeprefix("--format=") if arg.startswith("--format=") else None
        if arg == "--format" and index + 1 < len(argv):
            value = argv[index + 1]
        if value in FORMATS:
            return value
    return "text"


def _jobs(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, not {text!r}")
    return int(text)


def _catalog(folders: list[Path] | None, out: _Output | None = None) -> Catalog:
    """The catalog with the signals of ``--signals`` (or ``--templates``) folders, or of the
    default folder (``signals/``, else ``templates/``); a step of ``out``'s progress."""
    from rulegen.load import display

    if out is not None:
        out.progress.step("loading signals")
    if folders is None:
        folders, warning = signal_folders.default_folders()
        if warning is not None and out is not None:
            out.warn(warning)
        elif warning is not None:
            print(f"rulegen: warning: {warning}", file=sys.stderr)
    for folder in folders:
        if not folder.is_dir():
            raise UsageError(f"{display(folder)}: signals folder does not exist")
    return load_catalog(folders)


def _build(args: argparse.Namespace, out: _Output) -> int:
    from rulegen.build import TEST_STEP, build
    from rulegen.load import discover
    from rulegen.outdir import folder_name

    steps = out.progress
    target: Path = args.out
    shown = folder_name(target)
    with steps:
        catalog = _catalog(args.signals, out)
        paths = args.paths or [Path("specs")]
        inputs = discover(paths)
        if target.exists() and not target.is_dir():
            raise UsageError(f"--out {shown}: exists and is not a directory")
        if args.junit is not None and args.no_validate:
            raise UsageError("--junit reports the tests that --no-validate skips: drop one")
        if args.read_only and args.test_cache is None:
            raise UsageError("--read-only is about the --test-cache DIR: give one, or drop it")
        _refuse_out_among_inputs(target, shown, [*paths, *(args.signals or [])], inputs)
        for warning in inputs.warnings:
            out.warn(warning)
        root = Path(os.path.realpath(target)).parent
        cache = _render_cache(args.test_cache, catalog, read_only=args.read_only)

        def render(spool: Path | None = None) -> BuildResult:
            result = build(inputs, catalog, root=root, targets=args.target or (),
                           jobs=args.jobs, progress=steps, render_cache=cache,
                           read_services=not args.no_validate, spool=spool)  # fmt: skip
            for warning in result.cache_warnings:
                out.warn(warning)
            return result

        summary = _render_and_write(args, out, target, shown, render)
    for line in summary:
        out.line(line)
    slowest = steps.slowest_line(TEST_STEP)
    if slowest is not None:
        steps.line(slowest)
    return 0


def _render_cache(folder: Path | None, catalog: Catalog, *, read_only: bool) -> RenderCache | None:
    """The render cache beside the test cache's markers (``DIR/render``), keyed with
    rulegen's own code and the catalog, its entries signed with ``RULEGEN_CACHE_SECRET``
    when set; none without ``--test-cache``."""
    from rulegen.core.integrity import cache_secret
    from rulegen.pipeline.rendercache import RenderCache, code_fingerprint

    if folder is None or not catalog.fingerprint:
        return None
    fingerprint = f"{code_fingerprint()}-{catalog.fingerprint}"
    return RenderCache(folder / "render", fingerprint, read_only, cache_secret())


def _run_checks(
    args: argparse.Namespace, out: _Output, folder: Path, result: BuildResult
) -> list[str]:
    """``validate`` with the command line's cache settings; a refused pass marker is a
    ``rulegen: warning:`` line on stderr as soon as it is found."""
    from rulegen.build import validate

    return validate(folder, result, args.jobs, args.test_cache, out.progress, args.junit,
                    read_only=args.read_only, warn=out.warn)  # fmt: skip


def _render_and_write(
    args: argparse.Namespace, out: _Output, target: Path, shown: str,
    render: Callable[[Path | None], BuildResult],
) -> list[str]:  # fmt: skip
    """``--check``: render, then compare. Else render and write: with the output folder held
    and its staging folder made first (``outdir.staged``), so that the build's workers
    write their files there as they render them; where the folder's parent does not exist
    yet (a build that fails must leave nothing), in memory first, as ``--check`` does."""
    from rulegen.outdir import staged

    if args.check:
        return _check(args, out, target, shown, render(None))
    if not Path(os.path.realpath(target)).parent.is_dir():
        return _write(args, out, target, shown, render(None))
    with staged(target) as held:
        return _write(args, out, target, shown, render(held.staging), held)


def _write(
    args: argparse.Namespace, out: _Output, target: Path, shown: str, result: BuildResult,
    held: Staged | None = None,
) -> list[str]:  # fmt: skip
    """Write the build into ``target`` once it is validated (unless ``--no-validate``),
    through ``held`` when the build was made for it; the summary to print."""
    from rulegen.outdir import write

    summary: list[str] = []

    def check(staging: Path) -> None:
        if not args.no_validate:
            summary.extend(_run_checks(args, out, staging, result))
        out.progress.step(f"writing {shown}/")

    out.progress.step(f"staging {shown}/")
    plan = held.write(result, check) if held is not None else write(result, target, check)
    summary.extend(f"note: {printable(note)}" for note in plan.notes)
    return [*summary, _written(plan, shown)]


def _written(plan: Plan, shown: str) -> str:
    """What a build did to the output folder: the files whose content changed, those left as
    they were, those removed (a warm build that changes nothing says so)."""
    changed = len(plan.write) - len(plan.unchanged)
    removed = f" (removed {len(plan.remove)}: {', '.join(plan.remove)})" if plan.remove else ""
    if not changed and not plan.remove:
        return f"{shown}/ is up to date: {len(plan.unchanged)} files unchanged"
    same = f", {len(plan.unchanged)} unchanged" if plan.unchanged else ""
    return f"wrote {changed} files to {shown}/{same}{removed}"


def _check(
    args: argparse.Namespace, out: _Output, target: Path, shown: str, result: BuildResult
) -> list[str]:
    """``build --check``: compare what a build would leave in ``target`` with what is there,
    then validate the rendered files (in a temporary folder) as a build would; the summary
    to print."""
    import tempfile

    from rulegen.outdir import check_output
    from rulegen.outdir.transaction import pending_journal

    if pending_journal(target) is not None:
        raise UsageError(
            f"--out {shown}: an interrupted build left it half-written; "
            "run `rulegen build` to complete it"
        )
    out.progress.step(f"comparing {shown}/")
    found = check_output(result, target)
    if found:
        raise StaleOutput(found.diff, [(kind, f"{shown}/{name}") for kind, name in found.items()])
    summary: list[str] = []
    if not args.no_validate:
        with tempfile.TemporaryDirectory(prefix="rulegen-check-") as folder:
            for name, text in result.files.items():
                path = Path(folder, name)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
            summary = _run_checks(args, out, Path(folder), result)
    return [*summary, f"{shown}: up to date ({len(result.files)} files)"]


def _refuse_out_among_inputs(
    out: Path, shown: str, named: Sequence[Path], inputs: SpecInputs
) -> None:
    """``--out`` may not be an input, hold one, or lie inside a folder of inputs: a build
    would write among (or over) the files it reads."""
    from rulegen.load import display

    target = Path(os.path.realpath(out))
    for path in named:
        real = Path(os.path.realpath(path))
        if real == target:
            raise UsageError(f"--out {shown}: is an input of the build; choose another --out")
        if real.is_dir() and target.is_relative_to(real):
            raise UsageError(
                f"--out {shown}: lies inside the input folder {display(path)}; choose another --out"
            )
    for path in (*named, *inputs.specs, *inputs.user_tests):
        real = Path(os.path.realpath(path))
        if real.is_relative_to(target):
            raise UsageError(
                f"--out {shown}: holds the input {display(path)}; choose another --out"
            )


def _validate(args: argparse.Namespace, out: _Output) -> int:
    from rulegen.build import build
    from rulegen.load import discover

    catalog = _catalog(args.signals, out)
    with _stdin(args.paths or [Path("specs")]) as paths:
        result = build(discover(paths), catalog)
    out.line(f"{len(result.services)} spec(s) valid")
    return 0


@contextlib.contextmanager
def _stdin(paths: list[Path]) -> Iterator[list[Path]]:
    """``paths`` with ``-`` replaced by a temporary copy of standard input, named ``<stdin>``
    in every message (a spec piped in from an editor or a generator)."""
    import tempfile

    from rulegen.source.loader import MAX_BYTES as MAX_SPEC_BYTES
    from rulegen.source.loader import name_file

    if Path("-") not in paths:
        yield paths
        return
    with tempfile.TemporaryDirectory(prefix="rulegen-stdin-") as folder:
        copy = Path(folder, "stdin.yaml")
        copy.write_bytes(sys.stdin.buffer.read(MAX_SPEC_BYTES + 1))
        name_file(copy, "<stdin>")
        yield [copy if path == Path("-") else path for path in paths]


def _lint(args: argparse.Namespace, out: _Output) -> int:
    from rulegen.lint import exit_code, lint
    from rulegen.load import discover

    if args.list:
        return _list_checks(out)
    with out.progress:
        catalog = _catalog(args.signals, out)
        with _stdin(args.paths or [Path("specs")]) as paths:
            inputs = discover(paths)
            findings = lint(inputs.specs, catalog, args.prometheus, timeout=args.timeout,
                            disable=args.disable, progress=out.progress)  # fmt: skip
    if out.format == "text":
        shown = [f for f in findings if f.severity == "error"] if out.quiet else findings
        sys.stdout.write("".join(f"{d.finding()}\n" for d in shown))
    else:
        out.findings = findings
    if not findings and out.format != "json":  # a clean run says so: silence reads as "not run"
        out.line(f"lint: {len(inputs.specs)} file(s), no findings")
    return exit_code(findings)


def _list_checks(out: _Output) -> int:
    """``lint --list``: the checks, as a table or (``--format json``) one JSON list."""
    from rulegen.lint.registry import CHECKS, listing

    if out.format == "json":
        checks = [
            {"id": c.id, "severity": c.severity, "online": c.online, "summary": c.summary,
             "doc": c.doc}
            for c in CHECKS
        ]  # fmt: skip
        out.document = json.dumps(checks, indent=2, ensure_ascii=False) + "\n"
    else:
        sys.stdout.write(listing())
    return 0


def _backtest(args: argparse.Namespace, out: _Output) -> int:
    with out.progress:
        return backtest.run(args, _catalog(args.signals, out), progress=out.progress)


def _explain(args: argparse.Namespace) -> int:
    from rulegen.explain import explain

    text = explain(args.spec, _catalog(args.signals))
    sys.stdout.write("".join(f"{printable(line)}\n" for line in text.splitlines()))
    return 0


def _init(args: argparse.Namespace) -> int:
    """Write the starter files into ``DIR``; nothing when any of them exists already."""
    from rulegen.core.confined import write_whole
    from rulegen.load import display, vocabulary
    from rulegen.outdir import refuse_escapes
    from rulegen.spec.schema import KINDS, schema
    from rulegen.starter import starter_files

    catalog = load_catalog([])  # the built-in signals: a new repository has none of its own
    schemas: dict[str, dict[str, Any]] = {k: schema(k, catalog, vocabulary(catalog)) for k in KINDS}
    files = starter_files(schemas)
    target: Path = args.dir
    refuse_escapes(target, files)
    taken = [name for name in files if os.path.lexists(target / name)]
    if taken:
        raise UsageError(
            f"{display(target)}: already has {', '.join(taken)}; rulegen init writes into a "
            "folder without them (nothing written)"
        )
    for name, text in files.items():
        write_whole(target / name, (text if text.endswith("\n") else text + "\n").encode())
    shown = display(target)
    print(f"wrote {len(files)} files to {shown}/; next: cd {shown} && rulegen build")
    return 0


def _schema(args: argparse.Namespace) -> int:
    from rulegen.load import vocabulary
    from rulegen.spec.schema import schema

    catalog = _catalog(args.signals)
    print(json.dumps(schema(args.kind, catalog, vocabulary(catalog)), indent=2, sort_keys=True))
    return 0


def run(argv: Sequence[str] | None = None) -> int:
    """Parse arguments, run the command, map errors to exit codes.

    ``--debug`` (anywhere on the line) lets an unexpected exception's traceback through.
    """
    arguments = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in arguments
    arguments = [a for a in arguments if a != "--debug"]
    try:
        return _run(arguments)
    except KeyboardInterrupt:
        print("rulegen: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader went away (``rulegen lint | head``): say nothing more on that pipe
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:
        if debug:
            raise
        message = f"internal error: {_one_line(exc)} (run with --debug for the traceback)"
        print(f"rulegen: {message}", file=sys.stderr)
        out = _Output(_requested_format(arguments))
        out.errors.append(Diagnostic("", 0, 0, FieldPath(), message, codes.INTERNAL))
        out.finish()
        return 4


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or "no message"
    text = text if len(text) <= 300 else text[:297] + "..."
    return printable(f"{type(exc).__name__}: {text}")


def _run(argv: list[str]) -> int:
    out = _Output(_requested_format(argv))
    if not argv:  # a first try: show what there is to run, not just that something is missing
        sys.stderr.write(_parser().format_help())
        print("rulegen: error: a command is required", file=sys.stderr)
        return 2
    try:
        args = _parser().parse_args(_time_values(argv))
        out.format = args.format if args.command in FORMATTED else "text"
        out.quiet = getattr(args, "quiet", False)
        out.writes = args.command not in READ_ONLY
        out.progress = _progress(args)
        commands: dict[str, Callable[[argparse.Namespace, _Output], int]] = {
            "build": _build,
            "validate": _validate,
            "lint": _lint,
            "backtest": _backtest,
            "diff": lambda a, _: diff.run(a, _catalog(a.signals)),
            "repair": lambda a, _: repair.run(a, _catalog(a.signals)),
            "explain": lambda a, _: _explain(a),
            "import": lambda a, _: importer.run(a),
            "schema": lambda a, _: _schema(a),
            "init": lambda a, _: _init(a),
        }
        code = commands[args.command](args, out)
    except RulegenError as exc:
        report, code = next(_REPORTS[k] for k in type(exc).__mro__ if k in _REPORTS)
        if out.format == "text":
            report(exc, out.writes)
        else:
            out.errors = exc.as_diagnostics()
            _after(exc, out)
    except OSError as exc:
        where = f" {exc.filename}" if exc.filename else ""
        message = f"{where}: {exc.strerror or exc}"
        code = 2
        if out.format == "text":
            print(f"rulegen: error:{printable(message)}; nothing written", file=sys.stderr)
        else:
            text = f"{message.strip()}; nothing written"
            out.errors = [Diagnostic("", 0, 0, FieldPath(), text, codes.IO)]
    out.finish()
    return code


def _time_values(argv: list[str]) -> list[str]:
    """``--from -7d`` as ``--from=-7d``: argparse takes a value starting with ``-`` for an
    option, and a relative time starts with one."""
    out: list[str] = []
    index = 0
    while index < len(argv):
        arg = argv[index]
        following = argv[index + 1] if index + 1 < len(argv) else ""
        if arg in ("--from", "--to") and following.startswith("-") and following != "-":
            out.append(f"{arg}={following}")
            index += 2
        else:
            out.append(arg)
            index += 1
    return out


def _progress(args: argparse.Namespace) -> Reporter:
    """Where the steps of ``build``, ``lint`` and ``backtest`` are shown: a status line on a
    terminal's stderr, lines with ``--progress`` or ``--verbose``, nothing otherwise
    (``backtest --progress`` is its bar of range queries, not these lines)."""
    if not hasattr(args, "quiet"):
        return Reporter("silent", sys.stderr)
    asked = args.progress and args.command != "backtest"
    tty = sys.stderr.isatty()
    mode = choose_mode(quiet=args.quiet, verbose=args.verbose, progress=asked, tty=tty)
    return Reporter(mode, sys.stderr)


def _spec_error(exc: Any, writes: bool) -> None:
    for diagnostic in exc.diagnostics:
        print(diagnostic.render(), file=sys.stderr)
    _trailer(exc, writes)


def _output_conflict(exc: Any, _writes: bool) -> None:
    for message in exc.messages:
        print(f"rulegen: {printable(message)}", file=sys.stderr)


def _stale_output(exc: Any, writes: bool) -> None:
    sys.stdout.write(exc.diff)
    for line in exc.files:
        print(printable(line), file=sys.stderr)
    _trailer(exc, writes)


def _validation_failed(exc: Any, writes: bool) -> None:
    for line in exc.lines():
        print(printable(line), file=sys.stderr)
    _trailer(exc, writes)


def _plain(exc: Any, _writes: bool) -> None:
    for line in str(exc).splitlines() or [""]:
        print(f"rulegen: error: {printable(line)}", file=sys.stderr)


def _trailer(exc: RulegenError, writes: bool) -> None:
    """The last line of a report of several problems, in every format; "nothing written"
    only from a command that writes files (``explain``, ``lint`` never do)."""
    written = "; nothing written" if writes else ""
    if isinstance(exc, SpecError):
        print(f"rulegen: {len(exc.diagnostics)} error(s){written}", file=sys.stderr)
    elif isinstance(exc, ValidationFailed):
        print(f"rulegen: validation failed{written}", file=sys.stderr)
    elif isinstance(exc, StaleOutput):
        print(f"rulegen: output is stale; {StaleOutput.HINT}", file=sys.stderr)


def _after(exc: RulegenError, out: _Output) -> None:
    """Under ``json`` or ``github``: what text prints besides the diagnostics (the diff of
    ``--check``, as a line for people; the closing line)."""
    if isinstance(exc, StaleOutput):
        (sys.stderr if out.format == "json" else sys.stdout).write(exc.diff)
    _trailer(exc, out.writes)


# Each error class's text report and exit code; the most specific class that is listed wins.
_REPORTS: dict[type[RulegenError], tuple[Callable[[Any, bool], None], int]] = {
    SpecError: (_spec_error, 2),
    OutputConflict: (_output_conflict, 2),
    StaleOutput: (_stale_output, 1),
    ValidationFailed: (_validation_failed, 1),
    ToolNotFoundError: (_plain, 3),
    UsageError: (_plain, 2),
    RulegenError: (_plain, 2),
}


def main() -> None:
    """Console-script entry point."""
    sys.exit(run())
