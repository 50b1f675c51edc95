"""``rulegen import KIND FILE… [--service NAME] [-o OUT_DIR] [--severity LEVEL]``.

Why here and not in ``cli``: the command picks the KIND's module when it runs (a source
that is missing is one usage error), writes the specs and moved tests into ``OUT_DIR`` (or
one spec to stdout) and prints the summary on stderr; ``cli`` only dispatches and maps
errors to exit codes. Exit 0 when everything was imported, 1 when anything was refused (the
rest is written: the summary names what is missing), 2 for a usage error, an unreadable
input or an output file that ``rulegen import`` did not write (nothing is written then).
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, cast

from rulegen.errors import OutputConflict, UsageError, printable
from rulegen.importer import KINDS

# The model, the writer, the spec models and the loader are imported where they are used:
# ``rulegen --help`` reads ``add_parser`` and needs none of them (YAML, pydantic).
if TYPE_CHECKING:
    from rulegen.importer.model import Importer, ImportResult

SEVERITY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")  # rulegen.source.severities.NAME

EPILOG = """exit codes:
  0  everything was imported
  1  some rules were refused (the rest is written; the summary says why, FILE:LINE: field)
  2  usage, an unreadable input, or an output file rulegen import did not write (nothing
     written)
"""


def add_parser(sub: argparse._SubParsersAction[Any]) -> argparse.ArgumentParser:
    """The ``import`` subcommand's arguments."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "import",
        help="turn Prometheus rule files, Sloth, OpenSLO or Pyrra SLOs into specs",
        description="Import rules or SLOs into rulegen specs, one per service; promtool "
        "test files among prometheus inputs (a mapping with rule_files) move along.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("kind", choices=KINDS, metavar="KIND",
                        help=f"what the files are: {', '.join(KINDS)}")  # fmt: skip
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE")
    parser.add_argument("--service", metavar="NAME",
                        help="the service of every imported rule (default: the rules' service "
                        "label, else the file name)")  # fmt: skip
    parser.add_argument("-o", "--out", type=Path, metavar="OUT_DIR",
                        help="write OUT_DIR/<service>.yaml and OUT_DIR/tests/ (default: print "
                        "the one spec on stdout)")  # fmt: skip
    parser.add_argument("--severity", type=_severity, metavar="LEVEL",
                        help="severity of alerts without a severity label (critical, warning, "
                        "info, or one the spec then declares in severities:); without it they "
                        "are refused")  # fmt: skip
    return parser


def _severity(value: str) -> str:
    """``--severity``: a severity name (one outside critical, warning and info is declared in
    the imported spec's ``severities:``)."""
    if not SEVERITY.match(value):
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a severity name ([A-Za-z0-9][A-Za-z0-9_.-]*)"
        )
    return value


def importer(kind: str) -> Importer:
    """``rulegen.importer.<kind>.import_files``, looked up now; a usage error when absent."""
    name = f"rulegen.importer.{kind}"
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name:
            raise
        raise UsageError(f"import {kind}: this rulegen has no {kind} importer ({name})") from None
    function = getattr(module, "import_files", None)
    if not callable(function):
        raise UsageError(f"import {kind}: {name} has no import_files()")
    return cast("Importer", function)


def run(
    args: argparse.Namespace, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    """Run ``rulegen import``; the exit code (errors are raised for ``cli`` to report)."""
    from rulegen.importer.model import ImportOptions
    from rulegen.source.base import SERVICE_NAME
    from rulegen.source.loader import display

    out, err = stdout or sys.stdout, stderr or sys.stderr
    if args.service is not None and not (
        re.match(SERVICE_NAME, args.service) and len(args.service) <= 63
    ):
        raise UsageError(
            f"import: --service {args.service!r}: a service name is lower-case letters, "
            "digits and '-', at most 63 characters"
        )
    for path in args.files:
        if not path.is_file():
            what = "is a folder; name its files" if path.is_dir() else "no such file"
            raise UsageError(f"import: {display(path)}: {what}")
    result = importer(args.kind)(args.files, ImportOptions(args.service, args.severity))
    files = _files(args.kind, result)
    target: Path | None = args.out
    if target is None and len(result.services) > 1:
        _summary(err, args.kind, result)
        names = ", ".join(s.service for s in result.services)
        raise UsageError(f"import: {len(result.services)} services ({names}): name an output "
                         "folder with -o OUT_DIR; nothing written")  # fmt: skip
    if target is None and result.user_tests:
        _summary(err, args.kind, result)
        raise UsageError("import: test files are written only into a folder: add -o OUT_DIR; "
                         "nothing written")  # fmt: skip
    if target is not None:
        from rulegen.outdir import refuse_escapes

        refuse_escapes(target, files)
        _refuse_foreign(target, files)
    _summary(err, args.kind, result)
    if not result.services:
        err.write("rulegen: nothing imported\n")
        return 1
    if target is None:
        out.write(files[f"{result.services[0].service}.yaml"])
    else:
        from rulegen.core.confined import write_whole

        for name, text in files.items():
            write_whole(target / name, text.encode("utf-8"))
        shown = display(target)
        err.write(f"wrote {len(files)} file(s) to {printable(shown)}/: {', '.join(files)}\n")
    return 1 if result.refused else 0


def _files(kind: str, result: ImportResult) -> dict[str, str]:
    """Every file to write, by its name under OUT_DIR, each with the import header."""
    from rulegen.importer.writer import MARK, header, render_spec

    files: dict[str, str] = {}
    for service in result.services:
        files[f"{service.service}.yaml"] = header(kind, service.sources) + render_spec(service)
    for test in result.user_tests:
        text = test.text if test.text.startswith(MARK) else header(kind, [test.source]) + test.text
        files[f"tests/{test.name}"] = text
    return files


def _refuse_foreign(target: Path, files: dict[str, str]) -> None:
    """An existing file that ``rulegen import`` did not write is never replaced."""
    from rulegen.source.loader import display

    problems = []
    if target.exists() and not target.is_dir():
        problems.append(f"-o {display(target)}: is a file, not a folder")
    for name in files:
        path = target / name
        if path.is_dir() or (path.exists() and not _ours(path)):
            problems.append(
                f"{display(path)}: exists and was not written by rulegen import; refusing to "
                "overwrite (move it, or choose another -o)"
            )
    if problems:
        raise OutputConflict([*problems, "nothing written"])


def _ours(path: Path) -> bool:
    from rulegen.importer.writer import MARK

    try:
        with path.open("rb") as handle:
            return handle.read(len(MARK)) == MARK.encode()
    except OSError:
        return False


def _summary(err: TextIO, kind: str, result: ImportResult) -> None:
    lines = [
        f"rulegen import {kind}: imported {len(result.imported)}, adapted "
        f"{len(result.adapted)}, refused {len(result.refused)}"
    ]
    lines.extend(f"  adapted: {note}" for note in result.adapted)
    lines.extend(f"  refused: {note}" for note in result.refused)
    lines.extend(f"  test: tests/{t.name} (from {t.source})" for t in result.user_tests)
    lines.extend(f"  warning: {text}" for text in result.warnings)
    err.write("".join(f"{printable(line)}\n" for line in lines))
