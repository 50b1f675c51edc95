"""``rulegen init [DIR]``: a starter monitoring repository that builds, tests and lints green
as generated (issue 20, stumble 7), and never writes over a file that is there."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import jsonschema
import pytest
import yaml
from conftest import REPO, CliResult, run_rulegen

from rulegen import starter

Cli = Callable[..., CliResult]

STARTER = [
    ".github/workflows/rules.yml",
    ".gitignore",
    ".pre-commit-config.yaml",
    "Makefile",
    "README.md",
    "schema/defaults.schema.json",
    "schema/routing.schema.json",
    "schema/rulegen.schema.json",
    "specs/alertmanager/base.yml",
    "specs/routing.yaml",
    "specs/tests/gpu-temperature.test.yml",
    "specs/vllm-chat.yaml",
]


def _files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


@pytest.mark.slow
@pytest.mark.skipif(
    shutil.which("promtool") is None or shutil.which("amtool") is None,
    reason="needs promtool and amtool",
)
def test_init_then_build_and_lint_pass(tmp_path: Path) -> None:
    made = run_rulegen("init", "repo", cwd=tmp_path)
    assert (made.code, made.out) == (0, "wrote 12 files to repo/; next: cd repo && rulegen build\n")
    root = tmp_path / "repo"
    assert _files(root) == STARTER
    built = run_rulegen("build", cwd=root)
    assert built.code == 0, built.err
    assert "promtool test rules: 6 file(s) passed" in built.out  # the user test among them
    assert "amtool routing tests: 12 passed" in built.out
    assert "warning" not in built.out
    linted = run_rulegen("lint", cwd=root)
    clean = "lint: 2 file(s), no findings\n"  # the spec and the routing file
    assert (linted.code, linted.out, linted.err) == (0, clean, "")


def test_each_starter_file_passes_the_schema_its_first_line_names(in_tmp: Path, cli: Cli) -> None:
    assert cli("init").code == 0
    for name in ("specs/vllm-chat.yaml", "specs/routing.yaml"):
        text = (in_tmp / name).read_text()
        first = text.splitlines()[0]
        assert first.startswith("# yaml-language-server: $schema=../schema/")
        schema = json.loads((in_tmp / "specs" / first.split("=", 1)[1]).read_text())
        errors = jsonschema.Draft202012Validator(schema).iter_errors(yaml.safe_load(text))
        assert list(errors) == [], name


@pytest.mark.slow  # runs make
@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_help_lists_every_target_of_the_makefile(tmp_path: Path) -> None:
    assert run_rulegen("init", "repo", cwd=tmp_path).code == 0
    makefile = (tmp_path / "repo/Makefile").read_text()
    targets = [line.split(":", 1)[0] for line in makefile.splitlines() if ":" in line
               and not line.startswith(("#", "\t", "."))]  # fmt: skip
    shown = subprocess.run(
        ["make", "-s", "help"], cwd=tmp_path / "repo", capture_output=True, text=True, check=True
    ).stdout
    assert [line.split()[0] for line in shown.splitlines()] == targets
    assert targets == ["build", "check", "lint", "test", "help"]
    assert "  lint   the specs' intent" in shown


def test_init_writes_nothing_where_a_starter_file_exists(in_tmp: Path, cli: Cli) -> None:
    (in_tmp / "specs").mkdir()
    (in_tmp / "specs/routing.yaml").write_text("mine\n")
    result = cli("init")
    assert result.code == 2
    assert result.err.startswith("rulegen: error: .: already has specs/routing.yaml;")
    assert _files(in_tmp) == ["specs/routing.yaml"]
    assert (in_tmp / "specs/routing.yaml").read_text() == "mine\n"


def test_the_getting_started_page_shows_the_files_init_writes() -> None:
    page = (REPO / "docs/getting-started.md").read_text()
    for text in (starter.SPEC, starter.ROUTING, starter.CI):
        assert f"\n{text}```\n" in page


CACHE = ".rulegen-cache"


def test_the_ci_page_and_the_readme_show_the_ci_job_and_hooks_init_writes() -> None:
    """One CI recipe and one hook configuration: what ``init`` writes is what the docs show."""
    ci_page = (REPO / "docs/ci.md").read_text()
    assert f"```yaml ci\n{starter.CI}```\n" in ci_page
    assert starter.PRE_COMMIT.split("repos:\n", 1)[1] in ci_page
    readme = (REPO / "README.md").read_text()
    steps = "\n".join(line.split("  #")[0].rstrip() for line in starter.CI.splitlines())
    shown = [line for line in steps.splitlines() if line and not line.lstrip().startswith("#")]
    assert "\n".join(shown) in readme


def test_ci_make_and_the_hooks_validate_once_with_one_ignored_cache() -> None:
    """The CI job, ``make build``/``check`` and the build-check hook (local and remote) run
    the build with the same ``--test-cache`` folder, the one ``.gitignore`` names, and CI runs
    no second build or promtool: the cache saves the tests only if every run uses it."""
    flag = f"--test-cache {CACHE}"
    ci_runs = [line for line in starter.CI.splitlines() if "rulegen build" in line]
    assert ci_runs == [f"          rulegen build --check --format github {flag}"]
    assert "promtool test" not in starter.CI
    triggers = yaml.safe_load(starter.CI)[True]  # YAML 1.1 reads the key `on` as true
    assert triggers == {"pull_request": None, "push": {"branches": ["main"]}}  # main saves
    assert f"\trulegen build {flag}\n" in starter.MAKEFILE
    assert f"\trulegen build --check {flag}\n" in starter.MAKEFILE
    local = {h["id"]: h for h in yaml.safe_load(starter.PRE_COMMIT)["repos"][0]["hooks"]}
    assert local["rulegen-build-check"]["entry"] == f"rulegen build --check {flag}"
    remote = {h["id"]: h for h in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())}
    for hook_id, hook in remote.items():
        assert " ".join([hook["entry"], *hook.get("args", [])]) == local[hook_id]["entry"]
    assert f"{CACHE}/" in starter.GITIGNORE.splitlines()


@pytest.mark.slow  # runs git (fast, but the suite's rule: a real tool is slow)
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_git_ignores_the_cache_of_an_initd_repository(in_tmp: Path, cli: Cli) -> None:
    assert cli("init").code == 0
    subprocess.run(["git", "init", "-q"], check=True)
    (in_tmp / CACHE / "render").mkdir(parents=True)
    (in_tmp / CACHE / "render/entry.json").write_text("{}")
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", f"{CACHE}/render/entry.json"], check=False
    )
    assert ignored.returncode == 0
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    assert CACHE not in status
    assert ".gitignore" in status
