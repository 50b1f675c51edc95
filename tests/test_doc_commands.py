"""The documentation's commands run: every ```` ```sh ```` block that runs ``rulegen`` runs here.

The convention (README.md and every page of docs/):

- A ```` ```sh ```` block with a ``rulegen`` command is run, block after block in page order,
  in one temporary folder per page that starts as a git repository holding a copy of the
  example's ``specs/`` and ``signals/`` (one commit, so ``rulegen diff`` has a ``HEAD``). Its
  lines are ``rulegen …`` (run in-process, exit 0), ``cd DIR`` and ``git …``, joined by
  ``&&``; ``#`` starts a comment. ``rulegen build`` (and ``--check``) gets ``--no-validate``:
  promtool's minutes are proved elsewhere (tests/cli/test_init.py, the example's build).
- A block that cannot run (it needs a server, a secret, an install) says so in its info
  string: ```` ```sh norun REASON ````. Its ``rulegen`` commands are still parsed by rulegen's
  own argument parser: the subcommand and every flag must exist.
- A ```` ```sh ```` block without any ``rulegen`` command (installs, ``make``, ``cp``) is the
  machine's business, not rulegen's, and is left alone.
- A transcript line ``$ rulegen …`` in any other block (a command shown with its output) is
  parsed like a ``norun`` command.

Why: examples rot silently (``backtest`` without its required ``--prometheus``, a flag
renamed); a run catches what reading does not.
"""

from __future__ import annotations

import contextlib
import io
import os
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO, copy_specs
from test_docs import PAGES, Block, fenced_blocks

from rulegen.cli import _parser, _time_values, run
from rulegen.errors import UsageError

GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "docs", "GIT_AUTHOR_EMAIL": "docs@example.com",
    "GIT_COMMITTER_NAME": "docs", "GIT_COMMITTER_EMAIL": "docs@example.com",
}  # fmt: skip
NO_VALIDATE = {"build"}  # the commands run with --no-validate (promtool's minutes)


def commands(text: str) -> Iterator[list[str]]:
    """The commands of a block: continued lines joined, comments dropped, ``&&`` split."""
    for line in text.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        while words:
            cut = words.index("&&") if "&&" in words else len(words)
            if words[:cut]:
                yield words[:cut]
            words = words[cut + 1 :]


def is_sh(block: Block) -> bool:
    return block.info[:1] == ("sh",)


def runs_rulegen(block: Block) -> bool:
    return any(words[0] == "rulegen" for words in commands(block.text))


def transcript_commands(block: Block) -> list[list[str]]:
    """The ``$ rulegen …`` lines of a block that shows commands with their output."""
    lines = block.text.splitlines()
    out = []
    for index, line in enumerate(lines):
        if line.startswith("$ rulegen"):
            text = line[2:]
            while text.endswith("\\") and index + 1 < len(lines):
                index += 1
                text = text[:-1] + " " + lines[index]
            out.append(shlex.split(text, comments=True))
    return out


def parse_problem(words: list[str]) -> str | None:
    """Why rulegen's argument parser refuses ``rulegen …`` (``None`` when it accepts it)."""
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr):
            _parser().parse_args(_time_values(words[1:]))
    except UsageError as exc:
        return f"`{shlex.join(words)}`: {exc}"
    except SystemExit as exc:  # --help, --version
        if exc.code:
            return f"`{shlex.join(words)}`: {stderr.getvalue().strip()}"
    return None


class Session:
    """One page's commands, run in order in one folder (``cd`` moves within it)."""

    def __init__(self, root: Path) -> None:
        self.cwd = root

    def run_block(self, block: Block) -> list[str]:
        """Run every command of ``block``; the problems, one line each (the first stops it)."""
        for words in commands(block.text):
            problem = self._run(words)
            if problem is not None:
                return [f"{block.where}: `{shlex.join(words)}`: {problem}"]
        return []

    def _run(self, words: list[str]) -> str | None:
        if words[0] == "cd" and len(words) == 2:
            self.cwd = (self.cwd / words[1]).resolve()
            return None if self.cwd.is_dir() else "no such folder"
        if words[0] == "git":
            env = {**os.environ, **GIT_IDENTITY}
            done = subprocess.run(words, cwd=self.cwd, env=env, capture_output=True, text=True)
            return None if done.returncode == 0 else f"exit {done.returncode}: {done.stderr}"
        if words[0] == "rulegen":
            return self._rulegen(words[1:])
        return "a command this test cannot run: mark the block ```sh norun REASON"

    def _rulegen(self, argv: list[str]) -> str | None:
        if argv[:1] and argv[0] in NO_VALIDATE and "--no-validate" not in argv:
            argv = [*argv, "--no-validate"]
        out, err = io.StringIO(), io.StringIO()
        before = Path.cwd()
        os.chdir(self.cwd)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = run(argv)
        finally:
            os.chdir(before)
        return None if code == 0 else f"exit {code}: {err.getvalue().strip()}"


def session_root(tmp: Path) -> Path:
    """A git repository holding a copy of the example's specs/ and signals/, committed."""
    copy_specs(REPO / "specs", tmp / "specs")
    shutil.copytree(REPO / "signals", tmp / "signals")
    env = {**os.environ, **GIT_IDENTITY}
    for words in (["git", "init", "-q"], ["git", "add", "."], ["git", "commit", "-qm", "docs"]):
        subprocess.run(words, cwd=tmp, env=env, check=True, capture_output=True)
    return tmp


RUN_PAGES = [
    page
    for page in PAGES
    if any(is_sh(b) and b.info[1:2] != ("norun",) and runs_rulegen(b) for b in fenced_blocks(page))
]


def test_there_are_command_blocks_to_run() -> None:
    names = {page.relative_to(REPO).as_posix() for page in RUN_PAGES}
    assert {"README.md", "docs/getting-started.md"} <= names


@pytest.mark.slow  # git, and a few in-process builds
@pytest.mark.parametrize("page", RUN_PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_command_block_runs(page: Path, tmp_path: Path) -> None:
    session = Session(session_root(tmp_path))
    problems = []
    for block in fenced_blocks(page):
        if is_sh(block) and block.info[1:2] != ("norun",) and runs_rulegen(block):
            problems += session.run_block(block)
    assert problems == []


NOT_RUN = [
    (block, words)
    for page in PAGES
    for block in fenced_blocks(page)
    for words in (
        [w for w in commands(block.text) if w[0] == "rulegen"]
        if is_sh(block) and block.info[1:2] == ("norun",)
        else transcript_commands(block)
        if not is_sh(block)
        else []
    )
]


def test_there_are_transcripts_to_parse() -> None:
    assert len(NOT_RUN) > 5


@pytest.mark.parametrize(("block", "words"), NOT_RUN, ids=[f"{b.where} {w[1]}" for b, w in NOT_RUN])
def test_commands_not_run_use_real_subcommands_and_flags(block: Block, words: list[str]) -> None:
    assert parse_problem(words) is None, block.where


def test_a_norun_block_says_why() -> None:
    for page in PAGES:
        for block in fenced_blocks(page):
            if is_sh(block) and block.info[1:2] == ("norun",):
                assert len(block.info) > 2, f"{block.where}: ```sh norun REASON"


# --- the checks themselves fail on broken examples ------------------------------------------


def _block(text: str, info: tuple[str, ...] = ("sh",)) -> Block:
    return Block(REPO / "docs/broken.md", 1, 3, info, text)


@pytest.mark.slow  # git
def test_a_broken_example_fails(tmp_path: Path) -> None:
    session = Session(session_root(tmp_path))
    assert session.run_block(_block("rulegen build\nrulegen build --check\nrulegen lint\n")) == []
    broken = session.run_block(_block("rulegen backtest --from -7d --to now\n"))
    assert len(broken) == 1
    assert broken[0].startswith("docs/broken.md:1: `rulegen backtest --from -7d --to now`: exit 2")
    assert "--prometheus" in broken[0]
    stale = session.run_block(_block("rulegen explain specs/docs-example.yaml\n"))
    assert stale[0].endswith("rulegen: error: specs/docs-example.yaml: no such file")
    other = session.run_block(_block("rulegen lint && make lint\n"))
    assert other == [
        "docs/broken.md:1: `make lint`: a command this test cannot run: mark the block "
        "```sh norun REASON"
    ]


def test_a_flag_that_does_not_exist_fails_the_parse() -> None:
    problem = parse_problem(["rulegen", "build", "--no-such-flag"])
    assert problem is not None
    assert "unrecognized arguments: --no-such-flag" in problem
    assert parse_problem(["rulegen", "backtest", "--prometheus", "http://x", "--from", "-7d",
                          "--to", "now"]) is None  # fmt: skip
