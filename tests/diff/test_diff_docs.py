"""docs/diff.md shows what ``rulegen diff`` prints: its example is committed to a real git
repository, edited as the page says, and the text, markdown, JSON and error lines on the page
must be the command's own. (The backtest example is checked in ``test_diff_backtest.py``.)"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import REPO, CliResult, write_tree

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("git") is None, reason="needs git"),
]
Cli = Callable[..., CliResult]
PAGE = REPO / "docs" / "diff.md"
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def example() -> list[tuple[str, str]]:
    """The fenced blocks of the page's "Example" section: (info string, text)."""
    text = PAGE.read_text(encoding="utf-8")
    section = text[text.index("\n## Example\n") : text.index("\n## Backtest")]
    return [(m.group(1).strip(), m.group(2)) for m in FENCE.finditer(section)]


def errors() -> list[str]:
    """The error lines of the "Exit codes" section."""
    text = PAGE.read_text(encoding="utf-8")
    section = text[text.index("\n## Exit codes\n") : text.index("\n## Limits")]
    (block,) = [m.group(2) for m in FENCE.finditer(section)]
    return block.splitlines()


def git(repo: Path, *argv: str) -> None:
    env = {
        **os.environ, "GIT_AUTHOR_NAME": "docs", "GIT_AUTHOR_EMAIL": "docs@example.com",
        "GIT_COMMITTER_NAME": "docs", "GIT_COMMITTER_EMAIL": "docs@example.com",
        "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
    }  # fmt: skip
    proc = subprocess.run(["git", "-C", str(repo), *argv], capture_output=True, text=True,
                          check=False, timeout=60, env=env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr


@pytest.fixture
def repo(in_tmp: Path) -> Path:
    """The example's base committed, its edit in the working tree."""
    blocks = dict(reversed(example()))  # the first block of each kind
    specs = [text for info, text in example() if info == "yaml spec"]
    assert len(specs) == 2
    write_tree(in_tmp, {"specs/checkout.yaml": specs[0],
                        "specs/routing.yaml": blocks["yaml routing"]})  # fmt: skip
    git(in_tmp, "init", "-q", "-b", "main")
    git(in_tmp, "add", "-A")
    git(in_tmp, "commit", "-q", "-m", "base")
    write_tree(in_tmp, {"specs/checkout.yaml": specs[1]})
    return in_tmp


@pytest.mark.usefixtures("repo")
def test_the_text_example_is_what_the_command_prints(cli: Cli) -> None:
    result = cli("diff")
    assert (result.code, result.err) == (0, "")
    assert result.out == dict(example())["text"]


@pytest.mark.usefixtures("repo")
def test_the_markdown_example_is_what_the_command_prints(cli: Cli) -> None:
    assert cli("diff", "--format", "markdown").out == dict(example())["markdown"]


@pytest.mark.usefixtures("repo")
def test_the_json_example_is_an_excerpt_of_what_the_command_prints(cli: Cli) -> None:
    shown = json.loads(dict(example())["json"])
    real = json.loads(cli("diff", "--format", "json").out)
    (service,) = shown["services"]
    (found,) = real["services"]
    assert {k: v for k, v in shown.items() if k != "services"} == {
        k: v for k, v in real.items() if k != "services"
    }
    assert {k: v for k, v in service.items() if k != "alerts"} == {
        k: v for k, v in found.items() if k != "alerts"
    }
    assert service["alerts"] == found["alerts"][: len(service["alerts"])]


def test_the_error_lines_are_what_the_command_prints(repo: Path, cli: Cli) -> None:
    specs = [text for info, text in example() if info == "yaml spec"]
    write_tree(repo, {"specs/checkout.yaml": specs[0].replace("threshold: 90%", "threshold: 150%")})
    git(repo, "commit", "-q", "-a", "-m", "broken")
    write_tree(repo, {"specs/checkout.yaml": specs[1].replace("99.5%", "100.5%")})
    *spec_errors, usage = errors()
    result = cli("diff")
    assert (result.code, result.out, result.err.splitlines()) == (2, "", spec_errors)
    result = cli("diff", "--base", "nope")
    assert (result.code, result.out, result.err.splitlines()) == (2, "", [usage])
