"""``rulegen init DIR`` never writes outside ``DIR``, and what rulegen writes for a user has
the mode the umask gives.

A symbolic link in ``DIR`` (a sub-folder, or the file itself) that leads out of it refuses
the whole init: one line naming the link, exit 2, nothing written anywhere; a link that
stays inside ``DIR`` is followed. ``rulegen init``, ``rulegen import -o``, ``rulegen build``'s
output folder and its ``--junit`` report are written 0644 under umask 022 and 0640 under 027
(never ``mkstemp``'s 0600). (Links in ``import -o``: ``tests/importer/test_import_safety.py``.)
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult, write_tree

Cli = Callable[..., CliResult]

LINKS = [
    ("the specs folder", "specs"),
    ("the .github folder", ".github"),
    ("a folder inside a folder", "specs/tests"),
    ("a file", "README.md"),
    ("a file in a folder", "specs/routing.yaml"),
]


@pytest.mark.parametrize("link", [c[1] for c in LINKS], ids=[c[0] for c in LINKS])
def test_a_link_out_of_the_folder_refuses_init_and_nothing_is_written(
    tmp_path: Path, cli: Cli, link: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # a folder links to the empty folder elsewhere, a file to a file there that is not yet
    target = elsewhere / Path(link).name if "." in Path(link).name[1:] else elsewhere
    (tmp_path / "repo" / link).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / "repo" / link).symlink_to(target)
    got = cli("init", "repo")
    assert (got.code, got.out) == (2, "")
    assert got.err == (
        f"rulegen: repo/{link} is a symbolic link to {os.path.realpath(target)}, outside repo: "
        "nothing written\n"
    )
    assert list(elsewhere.iterdir()) == []
    made = {p.relative_to(tmp_path / "repo").as_posix() for p in (tmp_path / "repo").rglob("*")}
    assert made == {link, *(p.as_posix() for p in Path(link).parents if p != Path())}


def test_a_link_that_stays_in_the_folder_is_followed(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "repo/my-specs").mkdir(parents=True)
    (tmp_path / "repo/specs").symlink_to("my-specs")
    assert cli("init", "repo").code == 0
    assert (tmp_path / "repo/my-specs/vllm-chat.yaml").is_file()
    assert (tmp_path / "repo/my-specs/tests/gpu-temperature.test.yml").is_file()


# Every writer of a user's files in one process: init, import -o, a build's output folder
# (no promtool: --no-validate) and the --junit report (its writer, as the build calls it).
WRITERS = """
import sys
from pathlib import Path
from rulegen import cli
from rulegen.build import write_junit
codes = [cli.run(["init", "repo"]),
         cli.run(["import", "prometheus", "rules.yml", "-o", "imported"]),
         cli.run(["build", "imported", "--out", "rules", "--no-validate"])]
write_junit(Path("reports/junit.xml"), [])
sys.exit(max(codes))
"""
RULES = """
    groups:
    - name: g
      rules:
      - alert: Up
        expr: up == 0
        labels: {severity: warning}
"""


@pytest.mark.slow  # a rulegen process under another umask
@pytest.mark.parametrize(("umask", "file_mode"), [(0o022, 0o644), (0o027, 0o640)])
def test_files_get_the_mode_the_umask_gives(tmp_path: Path, umask: int, file_mode: int) -> None:
    write_tree(tmp_path, {"rules.yml": RULES})
    proc = subprocess.run(
        [sys.executable, "-c", WRITERS], cwd=tmp_path, capture_output=True, text=True,
        check=False, timeout=120, umask=umask,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    written = [
        p for top in ("repo", "imported", "rules", "reports") for p in (tmp_path / top).rglob("*")
    ]
    files = {p.relative_to(tmp_path).as_posix(): stat.S_IMODE(p.stat().st_mode)
             for p in written if p.is_file()}  # fmt: skip
    folders = {p.relative_to(tmp_path).as_posix(): stat.S_IMODE(p.stat().st_mode)
               for p in written if p.is_dir()}  # fmt: skip
    assert {"repo/README.md", "imported/rules.yaml", "reports/junit.xml"} <= set(files)
    assert "rules/prometheus/rules.rules.yml" in files
    assert files == dict.fromkeys(files, file_mode)
    assert folders == dict.fromkeys(folders, 0o777 & ~umask)
