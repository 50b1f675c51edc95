"""Shared fixtures: file trees from inline YAML, and the CLI run in-process or as a subprocess.

Also the guard of the ``slow`` marker: a test that starts a process (promtool, amtool,
Prometheus, ``python -m rulegen``, a forked build or worker) or a server without being marked
``slow`` fails, so that ``make test-fast`` (``-m "not slow"``) needs no external tool and
stays fast.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import socket
import subprocess
import sys
import textwrap
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest
import yaml
from support import shards

from rulegen.catalog import load_catalog
from rulegen.cli import run
from rulegen.core import promql
from rulegen.load import vocabulary
from rulegen.source.extends import extend
from rulegen.source.loader import display, load_file
from rulegen.validate.promtool import find_promtool

REPO = Path(__file__).resolve().parent.parent
# The example spec and the defaults file it extends (``extends: defaults.yaml``).
EXAMPLE_SPEC = REPO / "specs" / "llm-serving.yaml"
EXAMPLE_DEFAULTS = REPO / "specs" / "defaults.yaml"


def example_spec() -> dict[str, Any]:
    """The example spec as rulegen reads it: ``specs/llm-serving.yaml`` with the defaults of
    its ``extends:`` chain merged under it (no ``extends:`` left), as plain data."""
    doc = load_file(EXAMPLE_SPEC, display(EXAMPLE_SPEC))
    extended = extend(doc, EXAMPLE_SPEC, vocabulary(load_catalog([REPO / "signals"])))
    assert not extended.problems, extended.problems
    assert isinstance(extended.doc.data, dict)
    data = cast(dict[str, Any], extended.doc.data)
    if STACK_VERSION is not None:  # the stack under test's (see for_stack)
        data = {**data, "prometheus": {"version": STACK_VERSION}}
    return data


# --- the slow-marker guard -------------------------------------------------------------------
# What the running test started (from any thread, fixtures included): processes by name,
# ``a forked process`` and ``a server`` (a listening socket).
_STARTED: list[str] = []
_PATCH = pytest.MonkeyPatch()


def _process_name(args: object) -> str:
    """``promtool`` for ``[".../promtool", ...]``, ``rulegen`` for ``python -m rulegen``."""
    if isinstance(args, str | bytes | os.PathLike):
        words = [os.fsdecode(args)]
    else:
        words = [os.fsdecode(word) for word in cast("Sequence[str]", args)]
    if len(words) >= 3 and words[1] == "-m":
        return words[2]
    return Path(words[0]).name if words else "?"


# matplotlib runs fc-list once per machine, in whichever test first draws text, to build its
# font cache (~/.cache/matplotlib): a fresh CI machine's first plot test is not a slow test
_NOT_A_TEST_PROCESS = frozenset({"fc-list"})


def _watch_starts() -> None:
    """Note every process start and every listening socket.

    Why these three places: every ``subprocess`` call (``run``, ``Popen``, ``check_output``,
    asyncio's) goes through ``Popen._execute_child``; forked children (a build killed
    mid-commit, ``multiprocessing`` workers) through ``os.fork``; and every server
    (``http.server``, ``socket.create_server``, asyncio) through ``socket.listen``.
    """
    execute_child = subprocess.Popen._execute_child  # type: ignore[attr-defined]  # private, not in typeshed
    fork = os.fork
    listen = socket.socket.listen

    def watched_execute_child(self: object, args: object, *rest: object) -> object:
        name = _process_name(args)
        if name not in _NOT_A_TEST_PROCESS:
            _STARTED.append(name)
        return execute_child(self, args, *rest)

    def watched_fork() -> int:
        _STARTED.append("a forked process")
        return fork()

    def watched_listen(self: socket.socket, *backlog: int) -> None:
        _STARTED.append("a server")
        listen(self, *backlog)

    _PATCH.setattr(subprocess.Popen, "_execute_child", watched_execute_child)
    _PATCH.setattr(os, "fork", watched_fork)
    _PATCH.setattr(socket.socket, "listen", watched_listen)


def pytest_configure(config: pytest.Config) -> None:  # noqa: ARG001  # pytest's hook signature
    # Go's collector in the promtool, Prometheus and Alertmanager processes the tests start:
    # collecting at 5x the live heap instead of 2x spares promtool about an eighth of its CPU
    # (the suite's main cost) for a few hundred MB; what the tools compute is the same.
    os.environ.setdefault("GOGC", "400")
    _watch_starts()


def pytest_unconfigure(config: pytest.Config) -> None:  # noqa: ARG001  # pytest's hook signature
    _PATCH.undo()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:  # noqa: ARG001  # pytest's hook signature
    _STARTED.clear()  # before the test's fixtures, so a module fixture counts for its first test


# The working directory pytest started in: every test must leave the process there.
_SESSION_CWD = Path.cwd()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> object:  # noqa: ARG001
    """A test whose fixtures left the process in another folder is an error (the next test
    would read ``specs/`` and ``signals/`` from there), and the folder is restored."""
    result = yield
    now = Path.cwd()
    if now != _SESSION_CWD:
        os.chdir(_SESSION_CWD)
        raise AssertionError(f"{item.nodeid} left the working directory at {now}")
    return result


@pytest.fixture(autouse=True)
def _promql_errors_without_promtool(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test not marked ``slow`` gets the Python parser's PromQL messages: rulegen asks
    promtool for a parse error's position (``promql.syntax_error``), a process such a test
    may not start; the slow tests see promtool's.

    (A patch of its own, not the ``monkeypatch`` fixture: an autouse fixture that asks for
    ``monkeypatch`` sets it up before every other fixture and so undoes it after them, and
    a test's ``monkeypatch.chdir`` then moved the process back into ``in_tmp``'s folder
    after ``in_tmp`` had left it: the next test ran in a dead test's folder.)"""
    with pytest.MonkeyPatch.context() as patch:
        if request.node.get_closest_marker("slow") is None:
            patch.setattr(promql, "PROMTOOL_PARSE_ERRORS", False)
        yield


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """After a test's teardown: a test not marked ``slow`` that started a process or a server
    fails (its teardown is reported as an error, so the session fails too)."""
    report = yield
    if call.when == "teardown" and _STARTED and item.get_closest_marker("slow") is None:
        report.outcome = "failed"
        report.longrepr = (
            f"{item.nodeid} started {', '.join(sorted(set(_STARTED)))} but is not marked slow: "
            "add @pytest.mark.slow (or pytestmark = pytest.mark.slow for a whole file)"
        )
    return report


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="rewrite tests/golden/*/expected from the current output",
    )
    parser.addoption(
        "--shard",
        metavar="I/N",
        help="run only the I-th of N shares of the selected tests: whole test files, balanced "
        "by their cost (tests/support/shards.py); make test and make test-fast run the N "
        "shares side by side, one per core",
    )


@pytest.hookimpl(trylast=True)  # after -m and -k have deselected theirs
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``--shard I/N``: keep the I-th of N shares of the selected tests.

    Why whole files, balanced by a table of their cost: see ``support/shards.py``.
    """
    shard = config.getoption("--shard")
    if shard is None:
        return
    index, _, count = str(shard).partition("/")
    if not (index.isdigit() and count.isdigit() and 1 <= int(index) <= int(count)):
        raise pytest.UsageError(f"--shard {shard}: expected I/N with 1 <= I <= N, like 1/2")
    plan = shards.assign(
        [
            (item.nodeid.split("::")[0], item.get_closest_marker("slow") is not None)
            for item in items
        ],
        int(count),
    )
    keep = int(index) - 1
    config.hook.pytest_deselected(
        items=[item for item, (shard, _, _) in zip(items, plan, strict=True) if shard != keep]
    )
    # The files of this share, longest first; a stable sort keeps each file's tests together
    # and in their order.
    mine = sorted(
        ((item, cost, unit) for item, (shard, cost, unit) in zip(items, plan, strict=True)
         if shard == keep),
        key=lambda entry: (-entry[1], entry[2]),
    )  # fmt: skip
    items[:] = [item for item, _, _ in mine]


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


# --- the tool stack under test -----------------------------------------------------------
# `make test-bookworm` runs the tool tests on Debian bookworm's Prometheus 2.42: the specs the
# tests write then declare that version (rulegen refuses a promtool of other semantics than
# the declared version), unless they declare one themselves. `make test-current` (3.5 LTS,
# the default version) leaves them as written.
STACK_VERSION = os.environ.get("RULEGEN_TEST_PROMETHEUS") or None
ON_PROMETHEUS_2 = STACK_VERSION is not None and STACK_VERSION.startswith("2.")


# A test whose expectations (hand-written times and values, or a real server's answers) are
# still Prometheus 2.x's: it must fail on the 3.5 stack until they are redone for 3.x (strict:
# a pass there fails too, so the mark cannot outlive the difference). Issue 28's closing
# note lists them.
def prometheus_2_expectations(why: str) -> pytest.MarkDecorator:
    return pytest.mark.xfail(not ON_PROMETHEUS_2, reason=f"Prometheus 3: {why}", strict=True)


# promtool's refusal of a Prometheus 3 function: unknown to 2.x, experimental (off) in 3.x
SMOOTHING_REFUSED = (
    'unknown function with name "double_exponential_smoothing"'
    if ON_PROMETHEUS_2
    else 'function "double_exponential_smoothing" is not enabled'
)
_TOP_SERVICE = re.compile(r"^service[ \t]*:", re.MULTILINE)
_TOP_PROMETHEUS = re.compile(r"^prometheus[ \t]*:", re.MULTILINE)
_DECLARED = re.compile(r'^(\s*prometheus: \{version: )"[0-9.]+"\}', re.MULTILINE)


def for_stack(text: str, redeclare: bool = False) -> str:
    """A spec's (or defaults file's) text for the stack under test: as written on the current
    stack; on another, a declaration added at its end when it has none, and with
    ``redeclare`` (a copy of the example, which declares 3.5) its declared version replaced."""
    if STACK_VERSION is None:
        return text
    if _DECLARED.search(text):
        if not redeclare:
            return text  # the test chose its version
        return _DECLARED.sub(rf'\1"{STACK_VERSION}"}}', text)
    if _TOP_SERVICE.search(text) and not _TOP_PROMETHEUS.search(text) and _a_mapping(text):
        return text.rstrip("\n") + f'\nprometheus: {{version: "{STACK_VERSION}"}}\n'
    return text


def _a_mapping(text: str) -> bool:
    """Whether ``text`` is a YAML mapping (a broken spec is left as its test wrote it)."""
    try:
        return isinstance(yaml.safe_load(text), dict)
    except yaml.YAMLError:
        return False


def specs_for_stack(folder: Path) -> Path:
    """Every spec under ``folder`` (not its ``tests/``) rewritten ``for_stack``, in place: for
    specs a command wrote (``rulegen import``, ``rulegen init``)."""
    if STACK_VERSION is not None:
        for path in folder.rglob("*.y*ml"):
            if "tests" not in path.relative_to(folder).parts:
                path.write_text(for_stack(path.read_text(encoding="utf-8"), redeclare=True),
                                encoding="utf-8")  # fmt: skip
    return folder


def copy_specs(source: Path, target: Path) -> Path:
    """``shutil.copytree`` of a specs folder, every YAML file ``for_stack``."""
    shutil.copytree(source, target)
    if STACK_VERSION is not None:
        for path in target.rglob("*.y*ml"):
            text = path.read_text(encoding="utf-8")
            path.write_text(for_stack(text, redeclare=True), encoding="utf-8")
    return target


def write_tree(root: Path, files: Mapping[str, str]) -> Path:
    """Create ``files`` (path → dedented text) under ``root``; returns ``root``. A spec under
    ``specs/`` is written ``for_stack``."""
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        body = textwrap.dedent(text).lstrip("\n")
        if path.suffix in (".yaml", ".yml") and "tests" not in Path(relative).parts:
            body = for_stack(body)
        path.write_text(body, encoding="utf-8")
    return root


@dataclass(frozen=True)
class CliResult:
    code: int
    out: str
    err: str


@pytest.fixture
def in_tmp(tmp_path: Path) -> Iterator[Path]:
    """Run the test with ``tmp_path`` as the working directory (specs/, rules/ relative to it)."""
    before = Path.cwd()
    os.chdir(tmp_path)
    try:
        yield tmp_path
    finally:
        os.chdir(before)


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> object:
    """Call ``rulegen`` in-process: ``cli("build", "--no-validate")`` → CliResult."""

    def call(*argv: str) -> CliResult:
        code = run(list(argv))
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return call


def no_tools(root: Path) -> Path:
    """A PATH folder with no tool in it (under ``root``): ``run_rulegen`` starts
    ``sys.executable -m rulegen``, and the folder of a system python3 (``/usr/bin`` on Debian)
    holds promtool and amtool too."""
    folder = root / "no-tools"
    folder.mkdir(exist_ok=True)
    return folder


def run_rulegen(*argv: str, cwd: Path, env: Mapping[str, str] | None = None) -> CliResult:
    """Run the installed console script as a real process (for exit codes and tracebacks)."""
    proc = subprocess.run(
        [sys.executable, "-m", "rulegen", *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **(env or {})},
        timeout=300,
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


@dataclass(frozen=True)
class ExampleBuild:
    """The example (``specs/`` and ``signals/``) built once, fully validated, in ``root``.

    ``cache`` is the ``--test-cache`` folder of that build: it started empty, so promtool ran
    every test file, and it now vouches for exactly the bytes that passed.
    """

    root: Path
    result: CliResult
    cache: Path


@pytest.fixture(scope="session")
def example_build(tmp_path_factory: pytest.TempPathFactory) -> ExampleBuild:
    """One validated build of the example for the whole session.

    Why: the example's SLO tests take promtool about 40 CPU-seconds. The test whose point is
    that build (``test_cli.py``) checks this one; tests whose point is something else (the
    committed rules are not stale, a failing user test) pass ``--test-cache`` with its
    cache, so the example's unchanged files are not run again while whatever they change is.
    """
    root = tmp_path_factory.mktemp("example")
    copy_specs(REPO / "specs", root / "specs")
    shutil.copytree(REPO / "signals", root / "signals")
    cache = tmp_path_factory.mktemp("example-test-cache")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(root), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run(["build", "--test-cache", str(cache)])
    return ExampleBuild(root, CliResult(code, out.getvalue(), err.getvalue()), cache)


def rendered_rules(root: Path, files: Mapping[str, str]) -> Path:
    """``files`` written under ``root`` and built by the real ``rulegen build --no-validate``;
    the ``rules/`` folder (mutation tests then run promtool on edited copies of it)."""
    write_tree(root, files)
    result = run_rulegen("build", "--no-validate", cwd=root)
    assert result.code == 0, result.err
    return root / "rules"


def spec_errors(*lines: str, writes: bool = True) -> tuple[str, ...]:
    """The stderr of a spec error: the diagnostics, then the summary line (which says
    "nothing written" when the command writes files: not ``lint``, ``explain``, ``diff``)."""
    written = "; nothing written" if writes else ""
    return (*lines, f"rulegen: {len(lines)} error(s){written}")


def promtool_test(test_file: Path, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    """The real ``promtool test rules`` on one hand-written test file, run from its folder."""
    return subprocess.run(
        [find_promtool(), "test", "rules", test_file.name],
        cwd=test_file.parent,
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )


SENTINEL = {
    "rules/prometheus/x.rules.yml": "# sentinel: must survive a failed build\ngroups: []\n",
    "rules/tests/x.test.yml": "# sentinel test file\nrule_files: []\ntests: []\n",
}


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and folder (``None``) under ``folder``, staging leftovers included."""
    return {
        p.relative_to(folder).as_posix(): (p.read_bytes() if p.is_file() else None)
        for p in sorted(folder.rglob("*"))
    }


def assert_rejected(
    root: Path, cli: Callable[..., CliResult], spec: str, stderr: Sequence[str]
) -> None:
    """``specs/web.yaml`` = ``spec`` gives exactly ``stderr`` and exit 2: with no ``rules/``
    none is created (render only), and an existing one is left byte for byte (full build)."""
    write_tree(root, {"specs/web.yaml": spec})
    fresh = cli("build", "--no-validate")
    assert (fresh.code, fresh.err.splitlines(), fresh.out) == (2, list(stderr), "")
    assert not (root / "rules").exists()
    write_tree(root, SENTINEL)
    before = snapshot(root / "rules")
    again = cli("build")
    assert (again.code, again.err.splitlines(), again.out) == (2, list(stderr), "")
    assert snapshot(root / "rules") == before


def assert_rejected_by_process(root: Path, spec: str, stderr: Sequence[str]) -> None:
    """The real ``rulegen build`` process: exit 2, exactly ``stderr``, no traceback, and the
    existing ``rules/`` untouched."""
    write_tree(root, {"specs/web.yaml": spec, **SENTINEL})
    before = snapshot(root / "rules")
    result = run_rulegen("build", cwd=root)
    assert (result.code, result.err.splitlines(), result.out) == (2, list(stderr), "")
    assert "Traceback" not in result.err
    assert snapshot(root / "rules") == before
