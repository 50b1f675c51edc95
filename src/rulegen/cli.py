"""The command line: the only place that prints or exits.

Exit codes: 0 ok; 1 promtool failure, stale output or a lint error; 2 invalid spec or usage;
3 a required tool (promtool, amtool, matplotlib for plots) is missing.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from rulegen import __version__
from rulegen.backtest import command as backtest
from rulegen.build import OWNED, TARGETS, build, validate
from rulegen.catalog import Catalog, load_catalog
from rulegen.errors import (
    RulegenError,
    SpecError,
    StaleOutput,
    ToolNotFoundError,
    UsageError,
    ValidationFailed,
)
from rulegen.lint import lint
from rulegen.lint.findings import FORMATS, exit_code
from rulegen.load import discover, display
from rulegen.output import diff_tree, write_tree
from rulegen.spec.models import spec_model

EPILOG = """exit codes:
  0  success
  1  promtool rejected the rules or a unit test failed; --check found stale output;
     lint found an error
  2  invalid spec or usage
  3  a required tool (promtool, amtool; matplotlib for backtest --plot) is missing
"""


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
                   "operator (kubernetes/), thanos (thanos/), mimir (mimir/)")  # fmt: skip
    b.add_argument("--templates", type=Path, action="append", default=None,
                   help="extra signal definitions folder (default: templates/)")  # fmt: skip
    b.add_argument("--test-cache", type=Path, default=None, metavar="DIR",
                   help="remember passing promtool test files in DIR and skip those whose "
                   "test, rule files and promtool release are unchanged")  # fmt: skip
    b.add_argument("--jobs", "-j", type=_jobs, default=None, metavar="N",
                   help="processes rendering specs and promtool runs at once "
                   "(default: the CPUs rulegen may use)")  # fmt: skip
    v = sub.add_parser("validate", help="check specs only; write nothing")
    v.add_argument("paths", nargs="+", type=Path)
    v.add_argument("--templates", type=Path, action="append", default=None)
    lint = sub.add_parser(
        "lint",
        help="check the specs' intent (exit 1 on an error finding)",
        description="Checks with stable ids; text output is FILE:LINE:COL: [id] severity: message.",
    )
    lint.add_argument("paths", nargs="*", type=Path, help="spec files or folders (default: specs/)")
    lint.add_argument("--prometheus", metavar="URL", help="also check against this Prometheus")
    lint.add_argument("--format", choices=sorted(FORMATS), default="text")
    lint.add_argument("--templates", type=Path, action="append", default=None)
    backtest.add_parser(sub)
    s = sub.add_parser("schema", help="print the JSON Schema of the spec (for editors)")
    s.add_argument("--templates", type=Path, action="append", default=None)
    return parser


def _jobs(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, not {text!r}")
    return int(text)


def _catalog(templates: list[Path] | None) -> Catalog:
    if templates is None:
        default = Path("templates")
        templates = [default] if default.is_dir() else []
    for folder in templates:
        if not folder.is_dir():
            raise UsageError(f"{display(folder)}: templates folder does not exist")
    return load_catalog(templates)


def _build(args: argparse.Namespace) -> int:
    catalog = _catalog(args.templates)
    inputs = discover(args.paths or [Path("specs")])
    out: Path = args.out
    result = build(
        inputs, catalog, root=out.resolve().parent, targets=args.target or (), jobs=args.jobs
    )
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {display(out)}: exists and is not a directory")
    if args.check:
        diff = diff_tree(out, result.files, OWNED)
        if diff:
            raise StaleOutput(diff)
        print(f"{display(out)}: up to date ({len(result.files)} files)")
        return 0
    summary: list[str] = []

    def check(staging: Path) -> None:
        if not args.no_validate:
            summary.extend(validate(staging, result, args.jobs, args.test_cache))

    write_tree(out, result.files, OWNED, check)
    for line in summary:
        print(line)
    print(f"wrote {len(result.files)} files to {display(out)}/")
    return 0


def _validate(args: argparse.Namespace) -> int:
    catalog = _catalog(args.templates)
    inputs = discover(args.paths)
    result = build(inputs, catalog)
    print(f"{len(result.services)} spec(s) valid")
    return 0


def _lint(args: argparse.Namespace) -> int:
    catalog = _catalog(args.templates)
    inputs = discover(args.paths or [Path("specs")])
    findings = lint(inputs.specs, catalog, args.prometheus)
    sys.stdout.write(FORMATS[args.format](findings))
    return exit_code(findings)


def _schema(args: argparse.Namespace) -> int:
    schema = spec_model(_catalog(args.templates)).model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "rulegen spec (version 1)"
    print(json.dumps(schema, indent=2, sort_keys=True))
    return 0


def run(argv: Sequence[str] | None = None) -> int:
    """Parse arguments, run the command, map errors to exit codes."""
    try:
        args = _parser().parse_args(argv)
        commands = {
            "build": _build,
            "validate": _validate,
            "lint": _lint,
            "backtest": lambda a: backtest.run(a, _catalog(a.templates)),
            "schema": _schema,
        }
        command = commands[args.command]
        return command(args)
    except SpecError as exc:
        for diagnostic in exc.diagnostics:
            print(diagnostic.render(), file=sys.stderr)
        print(f"rulegen: {len(exc.diagnostics)} error(s); nothing written", file=sys.stderr)
        return 2
    except UsageError as exc:
        print(f"rulegen: error: {exc}", file=sys.stderr)
        return 2
    except StaleOutput as exc:
        sys.stdout.write(exc.diff)
        print(
            "rulegen: output is stale; run `rulegen build` and commit the result", file=sys.stderr
        )
        return 1
    except ValidationFailed as exc:
        for message in exc.messages:
            print(message, file=sys.stderr)
        print("rulegen: validation failed; nothing written", file=sys.stderr)
        return 1
    except ToolNotFoundError as exc:
        print(f"rulegen: error: {exc}", file=sys.stderr)
        return 3
    except OSError as exc:
        where = f" {exc.filename}" if exc.filename else ""
        print(f"rulegen: error:{where}: {exc.strerror or exc}; nothing written", file=sys.stderr)
        return 2
    except RulegenError as exc:
        print(f"rulegen: error: {exc}", file=sys.stderr)
        return 2


def main() -> None:
    """Console-script entry point."""
    sys.exit(run())
