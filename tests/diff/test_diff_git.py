"""``rulegen diff --base REV`` in a real git repository made in ``tmp_path``: the specs,
signals and routing base file at the revision, read from git's objects and never from (or
into) the working tree; errors that name the version; links in a commit that point out of the
repository; the repository left exactly as it was.

The repository is made with the ``git`` on the machine (author and committer set in the
environment, so it works on a fresh CI runner without a git identity).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult, write_tree

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("git") is None, reason="needs git"),
]
Cli = Callable[..., CliResult]

WEB = """\
version: 1
service: web
alerts:
  - {signal: disk_await, threshold: 5ms, for: 5m, severity: warning, labels: {team: storage}}
"""
ROUTING = """\
version: 1
routing:
  base: ../alertmanager/base.yml
  default_receiver: platform
  receivers:
    - {name: platform, webhook: {url: 'http://sink:9095/platform'}}
    - {name: storage, webhook: {url: 'http://sink:9095/storage'}}
  routes:
    - match: {team: storage}
      receiver: storage
"""
BASE_FILE = "global: {resolve_timeout: 5m}\n"
IDENTITY = {
    "GIT_AUTHOR_NAME": "rulegen tests", "GIT_AUTHOR_EMAIL": "tests@example.com",
    "GIT_COMMITTER_NAME": "rulegen tests", "GIT_COMMITTER_EMAIL": "tests@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}  # fmt: skip


def git(repo: Path, *argv: str) -> str:
    env = {**os.environ, **IDENTITY, "GIT_CONFIG_GLOBAL": os.devnull}
    proc = subprocess.run(
        ["git", "-C", str(repo), *argv], capture_output=True, text=True, check=False,
        timeout=60, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def commit(repo: Path, files: dict[str, str], message: str = "specs") -> None:
    """Write ``files`` and commit everything."""
    write_tree(repo, files)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


@pytest.fixture
def repo(in_tmp: Path) -> Path:
    """A repository (the working directory) with ``specs/web.yaml`` committed."""
    git(in_tmp, "init", "-q", "-b", "main")
    commit(in_tmp, {"specs/web.yaml": WEB})
    return in_tmp


def snapshot(repo: Path) -> dict[str, bytes]:
    """Every file of the repository, ``.git`` included (its index, refs, objects)."""
    return {
        p.relative_to(repo).as_posix(): p.read_bytes()
        for p in sorted(repo.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def test_a_working_tree_edit_is_compared_with_the_last_commit(repo: Path, cli: Cli) -> None:
    write_tree(repo, {"specs/web.yaml": WEB.replace("5ms", "10ms")})
    before = snapshot(repo)
    result = cli("diff", "--exit-code")
    assert (result.code, result.err) == (1, "")
    assert result.out == (
        "web: 1 alert changed\n"
        "  changed  DiskAwaitHigh\n"
        "    threshold: 5ms → 10ms\n"
        "    annotations.summary: …await above 5ms on {{ $labels.instance… → …await above 10ms "
        "on {{ $labels.instance…\n"
        "    annotations.description: …threshold is 5ms for 5m. → …threshold is 10ms for 5m.\n"
        "  dashboard panels: 1 changed (Disk / DiskAwaitHigh)\n"
        "\n"
        "1 service changed; 1 alert changed (base: HEAD)\n"
    )
    assert snapshot(repo) == before  # nothing written into the repository, .git included


def test_base_names_any_revision(repo: Path, cli: Cli) -> None:
    commit(repo, {"specs/web.yaml": WEB.replace("5ms", "10ms")}, "raise the threshold")
    assert cli("diff").out == "no changes against HEAD: 1 alert unchanged in 1 service\n"
    main = git(repo, "rev-parse", "main").strip()
    for rev in ("HEAD~1", "main~1", main[:12] + "~1"):
        result = cli("diff", "--base", rev)
        assert "    threshold: 5ms → 10ms\n" in result.out, rev
        assert result.out.endswith(f"(base: {rev})\n")


def test_a_spec_file_new_since_the_revision_is_an_added_service(repo: Path, cli: Cli) -> None:
    write_tree(repo, {"specs/api.yaml": WEB.replace("service: web", "service: api")})
    out = cli("diff").out
    assert out.splitlines()[0] == "api (added): 1 alert added"
    assert out.endswith("1 service changed, 1 unchanged; 1 alert added, 1 unchanged (base: HEAD)\n")


def test_a_path_that_did_not_exist_at_the_revision_holds_no_specs(repo: Path, cli: Cli) -> None:
    write_tree(repo, {"more/api.yaml": WEB.replace("service: web", "service: api")})
    result = cli("diff", "more")
    assert (result.code, result.out.splitlines()[0]) == (0, "api (added): 1 alert added")


def test_signals_and_the_routing_base_file_are_read_at_the_revision(repo: Path, cli: Cli) -> None:
    """A team signal and a base file outside ``specs/`` are taken from the commit: the
    signal's template changed since, and the base file is gone from the working tree."""
    signal = (Path(__file__).parents[2] / "signals" / "nvlink_utilization.yaml").read_text()
    spec = WEB + "  - {signal: nvlink_utilization, threshold: 90%, severity: info}\n"
    commit(repo, {"signals/nvlink.yaml": signal, "specs/web.yaml": spec,
                  "specs/routing.yaml": ROUTING, "alertmanager/base.yml": BASE_FILE})  # fmt: skip
    edited = signal.replace("* {{ scale | literal }} /", "* {{ scale | literal }} / 2 /")
    assert edited != signal
    write_tree(repo, {"signals/nvlink.yaml": edited})
    (repo / "alertmanager" / "base.yml").unlink()
    result = cli("diff", "--base", "HEAD")
    assert result.code == 2  # the working tree's routing file names a base file that is gone
    assert result.err.startswith("current: specs/routing.yaml:")
    write_tree(repo, {"alertmanager/base.yml": BASE_FILE})
    out = cli("diff").out
    assert "  changed  NvlinkUtilizationHigh\n    expr: …* 1024000 / 600000000000 → " in out
    assert "  recording rules: 1 changed (instance_gpu:dcgm_nvlink_bytes:utilization)\n" in out
    assert "DiskAwaitHigh" not in out


def test_a_spec_error_at_the_revision_names_it(repo: Path, cli: Cli) -> None:
    broken = WEB.replace("threshold: 5ms", "threshold: fast")
    commit(repo, {"specs/web.yaml": broken}, "broken")
    line = (
        "specs/web.yaml:4:37: alerts[0].threshold: invalid duration 'fast' (expected a "
        "latency like 5ms, 500ms, 2s)"
    )
    result = cli("diff")
    assert (result.code, result.out) == (2, "")
    assert result.err.splitlines() == [
        f"base (HEAD): {line}",
        f"current: {line}",
        "rulegen: 2 error(s)",
    ]
    write_tree(repo, {"specs/web.yaml": WEB})
    result = cli("diff")
    assert (result.code, result.err.splitlines()) == (
        2, [f"base (HEAD): {line}", "rulegen: 1 error(s)"]
    )  # fmt: skip
    assert cli("diff", "--base", "HEAD~1").out.startswith("no changes against HEAD~1")


BAD_BASES = [
    # (case, --base, the error line)
    ("an unknown revision", "nope", "rulegen: error: --base nope: unknown revision (no commit "
     "of this repository)"),
    ("a revision that is not a commit", "HEAD:specs", "rulegen: error: --base HEAD:specs: "
     "unknown revision (no commit of this repository)"),
    ("an option in disguise", "--output=x", "rulegen: error: --base '--output=x': not a git "
     "revision"),
]  # fmt: skip


@pytest.mark.parametrize(("rev", "line"), [b[1:] for b in BAD_BASES], ids=[b[0] for b in BAD_BASES])
def test_a_bad_revision_is_one_line(repo: Path, cli: Cli, rev: str, line: str) -> None:
    result = cli("diff", f"--base={rev}")
    assert (result.code, result.out, result.err.splitlines()) == (2, "", [line])
    assert not (repo / "x").exists()


def test_outside_a_repository_the_base_is_a_usage_error(in_tmp: Path, cli: Cli) -> None:
    write_tree(in_tmp, {"specs/web.yaml": WEB})
    env = {"GIT_CEILING_DIRECTORIES": str(in_tmp.parent)}
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        result = cli("diff")
    assert (result.code, result.out) == (2, "")
    assert result.err.startswith(
        "rulegen: error: --base HEAD: no git repository at . (git: fatal: "
    )
    assert result.err.endswith("compare with a folder instead: --base-dir DIR\n")


def test_links_in_the_commit_are_followed_only_inside_the_repository(
    repo: Path, cli: Cli, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A spec that is a link to another file of the commit is read as that file; a link to a
    file outside the repository (absolute, or up with ``..``) is skipped with a warning, and
    nothing outside is read or written."""
    outside = tmp_path_factory.mktemp("outside") / "secret.yaml"
    outside.write_text(WEB.replace("service: web", "service: secret"))
    shared = WEB.replace("service: web", "service: shared")
    write_tree(repo, {"shared/shared.yaml": shared})
    (repo / "specs" / "shared.yaml").symlink_to("../shared/shared.yaml")
    (repo / "specs" / "abs.yaml").symlink_to(outside)
    (repo / "specs" / "up.yaml").symlink_to(os.path.relpath(outside, repo / "specs"))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "links")
    for name in ("abs.yaml", "up.yaml"):  # the working tree's links point nowhere now
        (repo / "specs" / name).unlink()
    result = cli("diff")
    assert result.code == 0
    assert result.out == "no changes against HEAD: 2 alerts unchanged in 2 services\n"
    target = os.path.relpath(outside, repo / "specs")
    assert result.err.splitlines() == [
        f"rulegen: warning: base (HEAD): specs/abs.yaml: skipped: a symbolic link to "
        f"{str(outside)!r}, which is not a file of the repository",
        f"rulegen: warning: base (HEAD): specs/up.yaml: skipped: a symbolic link to "
        f"{target!r}, which is not a file of the repository",
    ]


def test_from_a_subfolder_paths_are_relative_to_it(repo: Path, cli: Cli) -> None:
    commit(repo, {"specs/web.yaml": WEB.replace("5ms", "fast")}, "broken")
    os.chdir(repo / "specs")
    result = cli("diff", ".")
    assert result.err.splitlines()[:2] == [
        "base (HEAD): ../specs/web.yaml:4:37: alerts[0].threshold: invalid duration 'fast' "
        "(expected a latency like 5ms, 500ms, 2s)",
        "current: web.yaml:4:37: alerts[0].threshold: invalid duration 'fast' (expected a "
        "latency like 5ms, 500ms, 2s)",
    ]


FLEET_SPEC = """\
version: 1
service: web
extends: ../fleet/base.yaml
alerts:
  - {signal: disk_await, for: 5m, severity: warning}
"""
FLEET_BASE = "version: 1\nextends: root.yaml\ndefaults: {labels: {team: storage}}\n"
FLEET_ROOT = "version: 1\ndefaults:\n  alerts: {disk_await: {threshold: 5ms}}\n"


def test_defaults_files_are_read_at_the_revision_along_the_chain(in_tmp: Path, cli: Cli) -> None:
    """A spec ``extends:`` a defaults file outside the spec folder, which extends another:
    both are read from the revision, so an edit to the farthest one is the diff."""
    git(in_tmp, "init", "-q", "-b", "main")
    files = {"specs/web.yaml": FLEET_SPEC, "fleet/base.yaml": FLEET_BASE,
             "fleet/root.yaml": FLEET_ROOT}  # fmt: skip
    commit(in_tmp, files)
    assert cli("diff", "specs").out == "no changes against HEAD: 1 alert unchanged in 1 service\n"
    write_tree(in_tmp, {"fleet/root.yaml": FLEET_ROOT.replace("5ms", "8ms")})
    result = cli("diff", "specs")
    assert result.err == ""
    assert "    threshold: 5ms → 8ms\n" in result.out
