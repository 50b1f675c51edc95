"""Where a team's own signals come from: ``--signals DIR``, its older name ``--templates DIR``,
and the default folder (``signals/``, else the old default ``templates/``; when both exist,
``signals/`` with one warning, never both and never silently)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO, CliResult, write_tree

Cli = Callable[..., CliResult]

NVLINK = (REPO / "signals" / "nvlink_utilization.yaml").read_text(encoding="utf-8")
# A second team signal, to tell which folders were loaded.
COPY = (
    NVLINK.replace("signal: nvlink_utilization", "signal: nvlink_copy")
    .replace("alert: NvlinkUtilizationHigh", "alert: NvlinkCopyHigh")
    .replace("dcgm_nvlink_bytes", "dcgm_nvlink_copy")
)
SIGNAL_FILES = {"nvlink": NVLINK, "copy": COPY}


def _spec(*signals: str) -> str:
    alerts = "".join(f"  - {{signal: {s}, threshold: 90%, severity: info}}\n" for s in signals)
    return f"version: 1\nservice: a\nalerts:\n{alerts}"


NVLINK_SPEC = _spec("nvlink_utilization")
BOTH_SPEC = _spec("nvlink_utilization", "nvlink_copy")
WARNING = (
    "rulegen: warning: templates/ is ignored: signals/ exists and is the default signals "
    "folder (move templates/'s files into signals/, or name both with --signals)\n"
)
UNKNOWN = (
    "specs/a.yaml:4:14: alerts[0].signal: unknown signal 'nvlink_utilization' (known: ",
    "rulegen: 1 error(s); nothing written",
)


@dataclass(frozen=True)
class Case:
    id: str
    folders: dict[str, str]  # folder → the signal file in it ("nvlink", "copy")
    argv: tuple[str, ...] = ()
    spec: str = NVLINK_SPEC
    err: str = ""  # the exact stderr; the command succeeds when it is "" or the warning
    failure: tuple[str, ...] = ()  # or: exit 2, these texts in stderr


CASES = [
    Case("signals/ is the default folder", {"signals": "nvlink"}),
    Case("templates/ is still the default when there is no signals/", {"templates": "nvlink"}),
    Case(
        "with both signals/ and templates/, only signals/ is loaded and one line warns",
        {"signals": "nvlink", "templates": "nvlink"},
        err=WARNING,
    ),
    Case(
        "templates/ is ignored next to signals/ even when a spec needs its signal",
        {"signals": "copy", "templates": "nvlink"},
        err=WARNING,
        failure=UNKNOWN,
    ),
    Case("without either folder only the built-in signals are known", {}, failure=UNKNOWN),
    Case(
        "--signals DIR is loaded instead of the default folder",
        {"mine": "nvlink", "signals": "nvlink", "templates": "nvlink"},
        argv=("--signals", "mine"),
    ),
    Case(
        "--templates DIR, the older name, is loaded like --signals DIR",
        {"mine": "nvlink", "signals": "nvlink"},
        argv=("--templates", "mine"),
    ),
    Case(
        "--signals and --templates add up, repeatable like one flag",
        {"a": "nvlink", "b": "copy"},
        argv=("--signals", "a", "--templates", "b"),
        spec=BOTH_SPEC,
    ),
    Case(
        "--signals signals --signals templates loads both default folders, with no warning",
        {"signals": "nvlink", "templates": "copy"},
        argv=("--signals", "signals", "--signals", "templates"),
        spec=BOTH_SPEC,
    ),
    Case(
        "the same signal in two named folders is an error, not a silent choice",
        {"signals": "nvlink", "templates": "nvlink"},
        argv=("--signals", "signals", "--templates", "templates"),
        failure=(
            "templates/nvlink.yaml:18:9: signal: signal 'nvlink_utilization' is already defined "
            "(signals/nvlink.yaml)\n",
            "rulegen: 1 error(s); nothing written",
        ),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_signals_folder(case: Case, in_tmp: Path, cli: Cli) -> None:
    write_tree(in_tmp, {"specs/a.yaml": case.spec})
    for folder, name in case.folders.items():
        write_tree(in_tmp, {f"{folder}/{name}.yaml": SIGNAL_FILES[name]})
    result = cli("validate", "specs", *case.argv)
    if case.failure:
        assert result.code == 2, result
        assert result.err.startswith(case.err), result.err
        for line in case.failure:
            assert line in result.err, result.err
    else:
        assert (result.code, result.out, result.err) == (0, "1 spec(s) valid\n", case.err)


# Every command that loads signals takes both flags; a missing folder is named the same way.
# backtest stops (at the folder, or at an alert the specs do not have) before it asks the
# server anything.
BACKTEST = ("backtest", "--prometheus", "http://127.0.0.1:9", "--from", "0", "--to", "60",
            "--alert", "NoSuchAlert")  # fmt: skip
COMMANDS = {
    "build": ("build", "--no-validate"),
    "validate": ("validate", "specs"),
    "lint": ("lint",),
    "backtest": BACKTEST,
    "schema": ("schema",),
}
FLAG_CASES = [(command, flag) for command in COMMANDS for flag in ("--signals", "--templates")]


@pytest.mark.parametrize(
    ("command", "flag"),
    FLAG_CASES,
    ids=[f"{c} {f} nope names the missing signals folder" for c, f in FLAG_CASES],
)
def test_every_command_takes_both_flags(command: str, flag: str, in_tmp: Path, cli: Cli) -> None:
    write_tree(in_tmp, {"specs/a.yaml": NVLINK_SPEC})
    result = cli(*COMMANDS[command], flag, "nope")
    assert (result.code, result.out, result.err) == (
        2,
        "",
        "rulegen: error: nope: signals folder does not exist\n",
    )


@pytest.mark.parametrize(
    "command",
    list(COMMANDS),
    ids=[f"{c} warns once that templates/ is ignored" for c in COMMANDS],
)
def test_every_command_warns_about_an_ignored_templates_folder(
    command: str, in_tmp: Path, cli: Cli
) -> None:
    write_tree(in_tmp, {"specs/a.yaml": NVLINK_SPEC, "signals/a.yaml": NVLINK})
    (in_tmp / "templates").mkdir()
    result = cli(*COMMANDS[command])
    assert result.err.count("warning:") == 1, result.err
    assert result.err.startswith(WARNING), result.err


@pytest.mark.parametrize(
    ("flag", "help_line"),
    [
        ("--signals", "a folder of your own signal definitions (repeatable; default:"),
        ("--templates", "the older name of --signals (still accepted)"),
    ],
    ids=["--help describes --signals", "--help says --templates is the older name"],
)
def test_help_describes_both_flags(
    flag: str, help_line: str, cli: Cli, capsys: pytest.CaptureFixture[str]
) -> None:
    for command in COMMANDS:
        with pytest.raises(SystemExit):
            cli(command, "--help")
        text = " ".join(capsys.readouterr().out.split())
        assert f"{flag} DIR {help_line}" in text, (command, text)


@pytest.mark.parametrize(
    "folder",
    ["signals", "templates"],
    ids=[
        "the example with its signals in signals/ checks up to date",
        "the example with its signals in the old templates/ checks up to date, no warning",
    ],
)
def test_the_committed_rules_are_what_either_layout_builds(
    folder: str, in_tmp: Path, cli: Cli
) -> None:
    for name in ("specs", "rules"):
        shutil.copytree(REPO / name, in_tmp / name)
    shutil.copytree(REPO / "signals", in_tmp / folder)
    result = cli("build", "--check", "--no-validate")
    assert (result.code, result.out, result.err) == (0, "rules: up to date (20 files)\n", "")


def test_the_warning_is_shown_in_the_docs_as_printed() -> None:
    page = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    assert f"  {WARNING}" in page
