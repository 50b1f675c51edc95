"""Progress and verbosity: the status line of a terminal, ``--progress``, ``--verbose``,
``--quiet``, and a CI log that stays as it was.

The ``Reporter`` runs on a fake clock and a string stream (no sleeping, no terminal); the
command line runs in-process on a ``--no-validate`` build; and one build runs for real with
its stderr on a pseudo-terminal, then on a pipe.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult, write_tree

from rulegen.progress import CLEAR, Mode, Reporter, choose_mode

Cli = Callable[..., CliResult]
TESTS = "promtool test files"
SPEC = {
    "specs/web.yaml": "version: 1\nservice: web\nalerts:\n"
    "  - {signal: disk_await, threshold: 5ms, severity: warning}\n"
}


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _reporter(mode: Mode, width: int = 200) -> tuple[Reporter, Clock, io.StringIO]:
    clock, stream = Clock(), io.StringIO()
    return Reporter(mode, stream, clock, width=width), clock, stream


# --- the Reporter ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("quiet", "verbose", "progress", "tty", "mode"),
    [
        (False, False, False, True, "tty"),
        (False, False, False, False, "silent"),
        (False, False, True, False, "plain"),
        (False, False, True, True, "tty"),
        (False, True, False, True, "verbose"),
        (False, True, True, False, "verbose"),
        (True, False, True, True, "quiet"),
    ],
    ids=[
        "a terminal redraws a status line",
        "a pipe shows nothing",
        "--progress off a terminal prints lines",
        "--progress on a terminal still redraws",
        "--verbose on a terminal prints lines",
        "--verbose wins over --progress",
        "--quiet wins over everything",
    ],
)
def test_the_mode_follows_the_flags_and_the_terminal(
    quiet: bool, verbose: bool, progress: bool, tty: bool, mode: Mode
) -> None:
    assert choose_mode(quiet=quiet, verbose=verbose, progress=progress, tty=tty) == mode


def test_a_terminal_sees_nothing_in_the_first_second() -> None:
    reporter, clock, stream = _reporter("tty")
    reporter.step(TESTS, total=3)
    clock.now += 0.9
    reporter.advance("tests/a.yml", 0.9)
    reporter.tick()
    reporter.close()
    assert stream.getvalue() == ""


def test_a_terminal_redraws_one_line_with_the_slowest_file_and_the_time_left() -> None:
    reporter, clock, stream = _reporter("tty")
    reporter.step(TESTS, total=3)
    clock.now += 0.5
    reporter.advance("tests/a.yml", 0.5)
    clock.now += 0.7
    reporter.tick()
    first = f"\rrulegen: {TESTS} 1/3 · 1s · about 2s left · slowest tests/a.yml 0.50s{CLEAR}"
    assert stream.getvalue() == first
    clock.now += 0.05  # within the redraw interval: nothing
    reporter.advance("tests/b.yml", 0.55)
    reporter.tick()
    assert stream.getvalue() == first
    clock.now += 0.1
    reporter.tick()
    second = f"\rrulegen: {TESTS} 2/3 · 1s · about 1s left · slowest tests/b.yml 0.55s{CLEAR}"
    assert stream.getvalue() == first + second
    clock.now += 0.1
    reporter.tick()  # the same text: not written again
    assert stream.getvalue() == first + second
    reporter.close()
    assert stream.getvalue() == first + second + f"\r{CLEAR}"


def test_the_time_left_weighs_the_files_by_their_cost() -> None:
    reporter, clock, stream = _reporter("tty")
    reporter.step(TESTS, total=3, weight=10)
    clock.now += 2
    reporter.advance("tests/big.yml", 2.0, weight=8)
    reporter.tick()  # 2s for 8 of 10: 0.5s left (shown as at least 1s), not 2s × 2 files
    assert stream.getvalue() == (
        f"\rrulegen: {TESTS} 1/3 · 2s · about 1s left · slowest tests/big.yml 2.00s{CLEAR}"
    )


def test_the_time_left_of_files_run_side_by_side_counts_every_worker() -> None:
    reporter, clock, stream = _reporter("tty")
    reporter.step(TESTS, total=3, weight=60, workers=2)
    clock.now += 20
    # 20s for the first 20 of 60, but the other worker was busy all along: the 40 left take
    # 40s of promtool, 20s on two workers (the elapsed time alone said 40s)
    reporter.advance("tests/big.yml", 20.0, weight=20)
    reporter.tick()
    assert "· about 20s left ·" in stream.getvalue()


def test_a_terminal_line_is_cut_to_the_width_and_escapes_control_characters() -> None:
    reporter, clock, stream = _reporter("tty", width=40)
    reporter.step(TESTS, total=2)
    clock.now += 1.5
    reporter.advance("tests/\x1b[2Jevil-and-a-very-long-name.yml", 1.5)
    text = stream.getvalue()
    assert text.startswith("\rrulegen: promtool test files 1/2 ·")
    shown = text.removeprefix("\r").removesuffix(CLEAR)
    assert (len(shown), shown[-1], text[-len(CLEAR) :]) == (39, "…", CLEAR)
    assert "\x1b[2J" not in text


def test_progress_off_a_terminal_prints_plain_lines_at_most_once_a_second() -> None:
    reporter, clock, stream = _reporter("plain")
    reporter.step("specs loaded and rendered", total=3)
    clock.now += 0.5
    reporter.advance()  # half a second after the last line: not printed
    clock.now += 0.5
    reporter.advance()
    reporter.advance()  # the last item is always printed
    reporter.step("promtool check rules")
    reporter.close()
    assert stream.getvalue() == (
        "rulegen: specs loaded and rendered 0/3\n"
        "rulegen: specs loaded and rendered 2/3, about 1s left\n"
        "rulegen: specs loaded and rendered 3/3\n"
        "rulegen: promtool check rules\n"
    )


def test_verbose_prints_each_step_and_each_file_with_its_time() -> None:
    reporter, clock, stream = _reporter("verbose")
    reporter.step(TESTS, total=2)
    clock.now += 12.7
    reporter.advance("tests/a.yml", 12.7)
    clock.now += 0.3
    reporter.advance("tests/b.yml", 5.5)
    reporter.step("amtool and the other checks")
    clock.now += 0.25
    reporter.close()
    assert stream.getvalue() == (
        "rulegen: promtool test files: tests/a.yml (12.7s)\n"
        "rulegen: promtool test files: tests/b.yml (5.50s)\n"
        "rulegen: promtool test files 2/2 (13.0s)\n"
        "rulegen: amtool and the other checks (0.25s)\n"
    )
    assert reporter.slowest_line(TESTS) == "slowest: tests/a.yml 12.7s, tests/b.yml 5.50s"


def test_the_slowest_line_names_three_files_slowest_first() -> None:
    reporter, _, _ = _reporter("tty")
    reporter.step(TESTS, total=4)
    for name, seconds in (("a", 1.0), ("b", 4.0), ("c", 2.0), ("d", 3.0)):
        reporter.advance(f"tests/{name}.yml", seconds)
    assert reporter.slowest_line(TESTS) == (
        "slowest: tests/b.yml 4.00s, tests/d.yml 3.00s, tests/c.yml 2.00s"
    )


@pytest.mark.parametrize("mode", ["quiet", "silent"])
def test_quiet_and_silent_print_nothing(mode: Mode) -> None:
    reporter, clock, stream = _reporter(mode)
    with reporter:
        reporter.step(TESTS, total=1)
        clock.now += 5
        reporter.advance("tests/a.yml", 5.0)
        reporter.tick()
    assert stream.getvalue() == ""
    assert reporter.slowest_line(TESTS) is None


def test_a_closed_reporter_draws_no_more() -> None:
    """``backtest`` closes it when its bar of range queries takes the line over."""
    reporter, clock, stream = _reporter("tty")
    reporter.close()
    clock.now += 5
    reporter.step("writing the report")
    reporter.tick()
    assert stream.getvalue() == ""


# --- the command line, in-process --------------------------------------------------------------


def test_the_default_output_off_a_terminal_is_unchanged(in_tmp: Path, cli: Cli) -> None:
    write_tree(in_tmp, SPEC)
    assert cli("build", "--no-validate") == CliResult(0, "wrote 4 files to rules/\n", "")


def test_quiet_prints_nothing_when_all_is_well(in_tmp: Path, cli: Cli) -> None:
    write_tree(in_tmp, SPEC)
    assert cli("build", "--no-validate", "--quiet") == CliResult(0, "", "")
    assert (in_tmp / "rules" / "prometheus" / "web.rules.yml").is_file()
    assert cli("build", "--no-validate", "-q", "--format", "json") == CliResult(0, "[]\n", "")


def test_quiet_still_prints_errors(in_tmp: Path, cli: Cli) -> None:
    write_tree(in_tmp, {"specs/web.yaml": "version: 1\nservice: web\nalerts: 5\n"})
    result = cli("build", "--no-validate", "--quiet")
    assert result.code == 2
    assert result.err.endswith("rulegen: 1 error(s); nothing written\n")


def test_quiet_and_verbose_together_are_a_usage_error(in_tmp: Path, cli: Cli) -> None:
    write_tree(in_tmp, SPEC)
    for command in ("build", "lint"):
        result = cli(command, "--quiet", "-v")
        assert result == CliResult(
            2,
            "",
            f"rulegen: error: {command}: argument --verbose/-v: not allowed with argument "
            "--quiet/-q\n",
        )
    assert not (in_tmp / "rules").exists()


def test_verbose_prints_each_step_with_its_time_on_stderr(in_tmp: Path, cli: Cli) -> None:
    write_tree(in_tmp, SPEC)
    result = cli("build", "--no-validate", "--verbose")
    assert (result.code, result.out) == (0, "wrote 4 files to rules/\n")
    steps = [re.sub(r"\(\d+\.\d+s\)$", "(…)", line) for line in result.err.splitlines()]
    assert steps == [
        "rulegen: loading signals (…)",
        "rulegen: specs loaded and rendered 1/1 (…)",
        "rulegen: staging rules/ (…)",
        "rulegen: writing rules/ (…)",
    ]


def test_progress_off_a_terminal_prints_lines_without_control_characters(
    in_tmp: Path, cli: Cli
) -> None:
    write_tree(in_tmp, SPEC)
    result = cli("build", "--no-validate", "--progress")
    assert (result.code, result.out) == (0, "wrote 4 files to rules/\n")
    assert "rulegen: specs loaded and rendered 1/1\n" in result.err
    assert not re.search(r"[\r\x1b]", result.err)


def test_lint_quiet_prints_error_findings_only(in_tmp: Path, cli: Cli) -> None:
    write_tree(
        in_tmp,
        {
            "specs/web.yaml": "version: 1\nservice: web\nretention: 7d\nalerts:\n"
            "  - {signal: disk_await, threshold: 5ms, severity: critical}\n"
            "slos:\n  - name: availability\n    objective: 99.9%\n    sli:\n      ratio:\n"
            "        errors: 'http_requests_total{code=~\"5..\"}'\n"
            "        total: 'http_requests_total'\n"
        },
    )
    everything = cli("lint")
    assert everything.code == 1
    assert "[annotation/runbook] warning" in everything.out
    quiet = cli("lint", "--quiet")
    assert (quiet.code, quiet.err) == (1, "")
    assert quiet.out == "".join(
        f"{line}\n" for line in everything.out.splitlines() if "] error: " in line
    )
    assert quiet.out.startswith("specs/web.yaml:7:5: [slo/retention] error:")


# --- a real build, on a terminal and on a pipe --------------------------------------------------


def _slow_promtool(folder: Path) -> Path:
    """promtool behind half a second of sleep per call: a build that takes seconds."""
    real = shutil.which("promtool")
    assert real is not None
    wrapper = folder / "slow-promtool"
    wrapper.write_text(f'#!/bin/sh\nsleep 0.5\nexec {real} "$@"\n', encoding="utf-8")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return wrapper


def _on_terminal(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str, str]:
    """Run ``argv`` with its stderr on a pseudo-terminal; exit code, stdout, what the
    terminal received."""
    main, sub = os.openpty()
    try:
        proc = subprocess.Popen(
            argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=sub
        )
    finally:
        os.close(sub)
    received = b""
    try:
        while chunk := os.read(main, 4096):
            received += chunk
    except OSError:  # EIO: the process closed the terminal
        pass
    finally:
        os.close(main)
    out, _ = proc.communicate(timeout=300)
    return proc.returncode, out.decode(), received.decode()


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("promtool") is None, reason="needs promtool")
def test_a_terminal_shows_progress_and_a_pipe_does_not(tmp_path: Path) -> None:
    write_tree(tmp_path, SPEC)
    env = {**os.environ, "RULEGEN_PROMTOOL": str(_slow_promtool(tmp_path))}
    argv = [sys.executable, "-m", "rulegen", "build"]
    code, out, terminal = _on_terminal(argv, tmp_path, env)
    assert code == 0, terminal
    assert re.search(r"\rrulegen: promtool (check rules|test files)", terminal), terminal
    assert CLEAR in terminal
    assert re.search(r"slowest: tests/web\.test\.yml \d+\.\d+s\r?\n", terminal), terminal
    piped = subprocess.run(
        argv, cwd=tmp_path, env=env, capture_output=True, text=True, check=False, timeout=300
    )
    assert (piped.returncode, piped.stderr) == (0, "")
    # the second build finds rules/ as the first left it
    assert piped.stdout == out.replace(
        "wrote 4 files to rules/", "rules/ is up to date: 4 files unchanged"
    )
    assert out.endswith("promtool test rules: 1 file(s) passed\nwrote 4 files to rules/\n")
