"""A fleet of specs builds on all cores with exactly the output and errors of one core.

Why: ``build`` loads and renders each spec file in a forked worker once a batch is large
enough; the output must stay byte for byte what an in-process build writes (CI compares it),
errors must read the same, and the in-memory file store and the libyaml parsing path must not
change a byte or a position.
"""

from __future__ import annotations

import os
import pickle
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import EXAMPLE_DEFAULTS, EXAMPLE_SPEC, REPO, CliResult

from rulegen import fanout
from rulegen.build import build
from rulegen.catalog import load_catalog
from rulegen.errors import (
    Diagnostic,
    FieldPath,
    SpecError,
    StaleOutput,
    UsageError,
    ValidationFailed,
)
from rulegen.load import SpecInputs, discover
from rulegen.outdir import staged, write
from rulegen.outdir.manifest import digest
from rulegen.output import FileSet
from rulegen.pipeline.packed import Services
from rulegen.source import loader
from rulegen.source.loader import LoadError

EXAMPLE = EXAMPLE_SPEC.read_text()  # extends: defaults.yaml, copied beside each fleet
TWO_CORES = pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs two cores")


def _pid(_context: None, item: int) -> tuple[int, int]:
    return item, os.getpid()


def _pid_among_two(folder: Path, item: int) -> tuple[int, int]:
    """``_pid``, once two processes have taken items. Why: on a busy machine the first worker
    can take every chunk of such quick items before the second is scheduled, so each waits
    (30 s at most) until a second worker has left its mark in ``folder``."""
    (folder / str(os.getpid())).touch()
    deadline = time.monotonic() + 30
    while len(list(folder.iterdir())) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    return item, os.getpid()


def _die_on_seven(_context: None, item: int) -> int:
    if item == 7:
        os._exit(9)  # what the OOM killer leaves behind: no exception, no result
    return item


def _fail_on_seven(_context: None, item: int) -> int:
    if item == 7:
        raise ValueError("item seven")
    return item


@TWO_CORES
@pytest.mark.slow
def test_a_large_batch_runs_in_worker_processes_and_keeps_its_order(tmp_path: Path) -> None:
    results = fanout.fan_out(_pid_among_two, tmp_path, list(range(40)))
    assert [item for item, _ in results] == list(range(40))
    workers = {pid for _, pid in results}
    assert os.getpid() not in workers
    assert len(workers) >= 2


def test_a_small_batch_or_one_job_stays_in_process() -> None:
    assert {pid for _, pid in fanout.fan_out(_pid, None, [1, 2, 3])} == {os.getpid()}
    assert {pid for _, pid in fanout.fan_out(_pid, None, list(range(40)), jobs=1)} == {os.getpid()}


@pytest.mark.usefixtures("in_tmp")
@pytest.mark.parametrize("jobs", ["0", "-2", "two", "1.5"])
def test_jobs_must_be_a_whole_number_of_at_least_one(
    jobs: str, cli: Callable[..., CliResult]
) -> None:
    result = cli("build", "--jobs", jobs)
    message = (
        "rulegen: error: build: argument --jobs/-j: "
        f"expected a whole number of at least 1, not {jobs!r}"
    )
    assert (result.code, result.err.splitlines()) == (2, [message])


@TWO_CORES
@pytest.mark.slow
def test_an_error_in_a_worker_reaches_the_caller() -> None:
    with pytest.raises(ValueError, match="item seven"):
        fanout.fan_out(_fail_on_seven, None, list(range(40)))


X = FieldPath(("x",))
ROOT = FieldPath()


def _spec_error_on_seven(_context: None, item: int) -> int:
    if item == 7:
        raise SpecError([Diagnostic("f.yaml", 3, 1, X, "bad")])
    return item


@TWO_CORES
@pytest.mark.slow
def test_a_spec_error_raised_in_a_worker_arrives_whole() -> None:
    with pytest.raises(SpecError) as raised:
        fanout.fan_out(_spec_error_on_seven, None, list(range(40)))
    assert raised.value.diagnostics == [Diagnostic("f.yaml", 3, 1, X, "bad")]


@pytest.mark.parametrize(
    "error",
    [
        SpecError([Diagnostic("b.yaml", 2, 1, ROOT, "two"), Diagnostic("a.yaml", 1, 1, X, "one")]),
        LoadError(Diagnostic("a.yaml", 1, 1, ROOT, "invalid YAML", "spec/yaml")),
        ValidationFailed(
            [Diagnostic("tests/x.yml", 0, 0, ROOT, "alertname: A", "promtool/test")],
            "promtool test rules failed:",
            report=["tests/x.yml: FAILED:", "    alertname: A"],
        ),
        StaleOutput("--- a\n+++ b\n", [("stale:", "rules/x.yml")]),
        UsageError("no spec files"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_errors_cross_process_borders_intact(error: Exception) -> None:
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error)
    assert str(copy) == str(error)
    assert vars(copy) == vars(error)


@TWO_CORES
@pytest.mark.slow
def test_a_dead_worker_is_one_clear_error() -> None:
    with pytest.raises(fanout.WorkerDied, match="Rerun with --jobs 1"):
        fanout.fan_out(_die_on_seven, None, list(range(40)))


def _fleet(folder: Path, size: int, extra: dict[str, str] | None = None) -> SpecInputs:
    """``size`` copies of the example spec with their own service names and thresholds."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(EXAMPLE_DEFAULTS, folder / "defaults.yaml")  # what every copy extends
    for index in range(size):
        text = EXAMPLE.replace("service: deepseek-v4", f"service: svc-{index:02d}")
        # vary a threshold so services differ in more than their name
        text = text.replace("threshold: 95%", f"threshold: {90 + index % 5}%", 1)
        (folder / f"svc{index:02d}.yaml").write_text(text)
    for name, text in (extra or {}).items():
        (folder / name).write_text(text)
    return discover([folder])


@TWO_CORES
@pytest.mark.slow
def test_a_fleet_builds_byte_for_byte_as_in_one_process(tmp_path: Path) -> None:
    assert "threshold: 95%" in EXAMPLE
    inputs = _fleet(tmp_path / "specs", 9)
    catalog = load_catalog([REPO / "signals"])
    targets = ("prometheus", "operator", "thanos", "mimir")
    parallel = build(inputs, catalog, root=tmp_path, targets=targets)
    serial = build(inputs, catalog, root=tmp_path, targets=targets, jobs=1)
    assert list(parallel.files) == list(serial.files)
    assert dict(parallel.files) == dict(serial.files)
    assert parallel.services == serial.services
    assert parallel.costs == serial.costs
    assert len(parallel.costs) == 9 * 9  # per service: its alerts' file, two per SLO
    assert parallel.reports == serial.reports
    first, second = (
        parallel.files[f"prometheus/svc-0{i}.rules.yml"].replace(f"svc-0{i}", "svc") for i in (0, 1)
    )
    assert first != second  # the services differ in more than their names


def _errors_both_ways(inputs: SpecInputs) -> list[str]:
    """The build's error lines on all cores, checked equal to those of an in-process build."""
    catalog = load_catalog([REPO / "signals"])
    with pytest.raises(SpecError) as parallel:
        build(inputs, catalog)
    with pytest.raises(SpecError) as serial:
        build(inputs, catalog, jobs=1)
    assert str(parallel.value) == str(serial.value)
    return str(parallel.value).splitlines()


@TWO_CORES
@pytest.mark.slow
def test_a_fleet_reports_the_same_errors_as_one_process(tmp_path: Path) -> None:
    duplicate = EXAMPLE.replace("service: deepseek-v4", "service: svc-03")
    broken = EXAMPLE.replace("service: deepseek-v4", "service: broken").replace(
        "threshold: 95%", "threshold: lots", 1
    )
    inputs = _fleet(tmp_path / "specs", 9, {"z-dup.yaml": duplicate, "z-broken.yaml": broken})
    messages = _errors_both_ways(inputs)
    assert len(messages) == 2
    assert "z-broken.yaml" in messages[0]
    assert "threshold" in messages[0]
    assert "z-dup.yaml" in messages[1]
    assert "service 'svc-03' is already defined at" in messages[1]


SLOW_TESTS = "version: 1\nservice: NAME\nevaluation_interval: 10s\nalerts:\n" + "".join(
    f"  - {{signal: disk_await, name: A{i}, threshold: 5ms, severity: warning, "
    "window: 1d, for: 1d}\n"
    for i in range(25)
)


@TWO_CORES
@pytest.mark.slow
def test_a_render_error_in_a_worker_reads_as_in_one_process(tmp_path: Path) -> None:
    """A spec that loads but whose tests would be too slow fails in the worker that renders it."""
    extra = {f"slow{i}.yaml": SLOW_TESTS.replace("NAME", f"slow-{i}") for i in range(2)}
    lines = _errors_both_ways(_fleet(tmp_path / "specs", 8, extra))
    assert [line.split(":")[0].rsplit("/", 1)[-1] for line in lines] == ["slow0.yaml", "slow1.yaml"]
    assert all("the generated tests would evaluate 26 rules" in line for line in lines)


def test_the_file_store_holds_text_compressed_and_gives_it_back() -> None:
    files = FileSet()
    texts = {"b/x.yml": "ü" * 10_000, "a/y.yml": "groups: []\n", "c/empty": ""}
    files.update(texts)
    assert list(files) == list(texts)
    assert dict(files) == texts
    assert files == texts
    assert files.held_bytes() < 200
    other = FileSet({"d/z.yml": "z"})
    files.merge(other)
    assert files["d/z.yml"] == "z"
    assert len(files) == 4
    del files["c/empty"]
    assert "c/empty" not in files
    assert len(files) == 3
    assert files["a/y.yml"] == "groups: []\n"


def test_the_file_store_keeps_each_files_bytes_and_hash_for_the_manifest() -> None:
    """Workers hash what they render, so the output folder's manifest takes each file's
    hash from the store (``digest``) and the writer its bytes (``data``) without the text."""
    files = FileSet({"a/x.yml": "é\n", "b/y.json": "{}\n"})
    assert files.data("a/x.yml") == "é\n".encode()
    assert files.digest("a/x.yml") == digest("é\n".encode())
    other = FileSet()
    other.take(files, "b/y.json")
    assert dict(other) == {"b/y.json": "{}\n"}
    assert other.digest("b/y.json") == digest(b"{}\n")


@TWO_CORES
@pytest.mark.slow
def test_writing_a_fleet_without_validation_never_unpacks_its_services(tmp_path: Path) -> None:
    """A build written without validation reads only each service's name and group names
    (``rulegen.pipeline.packed``): the rule groups stay packed through the write, and
    unpacked they are those of an in-process build."""
    inputs = _fleet(tmp_path / "specs", 9)
    catalog = load_catalog([REPO / "signals"])
    result = build(inputs, catalog, root=tmp_path)
    write(result, tmp_path / "rules")
    assert isinstance(result.services, Services)
    assert result.services.packed() == 9
    # (the example's defaults declare ``ha``: its file reads what each service carries packed)
    assert (
        "regex: replica\n"
        in (tmp_path / "rules" / "alertmanager/prometheus-alerting.yml").read_text()
    )
    assert result.services == build(inputs, catalog, root=tmp_path, jobs=1).services
    assert result.services.packed() == 0


def test_a_build_whose_services_nobody_reads_keeps_only_their_names(tmp_path: Path) -> None:
    """``rulegen build --no-validate`` reads no service's rule groups (unless a routing file
    or the Mimir target does): the same files, the group-name check intact, and a service
    read by mistake is a clear error, not an empty one."""
    inputs = _fleet(tmp_path / "specs", 2)
    catalog = load_catalog([REPO / "signals"])
    for targets in (("prometheus",), ("prometheus", "victoriametrics")):
        kept = build(inputs, catalog, root=tmp_path, targets=targets)
        names = build(inputs, catalog, root=tmp_path, targets=targets, read_services=False)
        assert dict(names.files) == dict(kept.files)
        assert "alertmanager/prometheus-alerting.yml" in names.files  # ``ha`` in the defaults
    with pytest.raises(RuntimeError, match="not kept"):
        _ = names.services[0]
    routed = build(discover([REPO / "specs"]), catalog, read_services=False)
    assert routed.services[0].groups  # a routing file reads every alert: kept
    assert "alertmanager/alertmanager.yml" in routed.files


@TWO_CORES
@pytest.mark.slow
def test_workers_write_the_output_folder_as_they_render(tmp_path: Path) -> None:
    """``rulegen build`` holds the output folder and makes its staging folder before the
    build; each worker writes its files there (no text held or sent), and the folder ends
    up as an in-memory build would write it."""
    inputs = _fleet(tmp_path / "specs", 9)
    catalog = load_catalog([REPO / "signals"])
    with staged(tmp_path / "rules") as held:
        result = build(inputs, catalog, root=tmp_path, spool=held.staging)
        spooled = [name for name in result.files if result.files.spooled(name) is not None]
        assert len(spooled) == 9 * 15  # rules, tests and a dashboard per service
        assert all(result.files.spooled(n) == held.staging / n for n in spooled)
        assert result.files.held_bytes() < 10_000  # only what the parent made
        held.write(result)
    memory = build(inputs, catalog, root=tmp_path)
    write(memory, tmp_path / "again")
    written = {p.relative_to(tmp_path / "rules"): p.read_bytes()
               for p in (tmp_path / "rules").rglob("*") if p.is_file()}  # fmt: skip
    again = {p.relative_to(tmp_path / "again"): p.read_bytes()
             for p in (tmp_path / "again").rglob("*") if p.is_file()}  # fmt: skip
    assert written == again
    assert not [p for p in tmp_path.iterdir() if "staging" in p.name]


def test_a_build_that_fails_leaves_no_staging_folder_and_the_output_as_it_was(
    tmp_path: Path,
) -> None:
    """A spec error found after some files were written into the staging folder: the
    staging folder goes, the output folder is untouched."""
    inputs = _fleet(tmp_path / "specs", 2, {"broken.yaml": "service: x\nalerts: 3\n"})
    out = tmp_path / "rules"
    out.mkdir()
    (out / "mine.txt").write_text("the user's")
    catalog = load_catalog([REPO / "signals"])
    with pytest.raises(SpecError), staged(out) as held:
        build(inputs, catalog, root=tmp_path, spool=held.staging, jobs=1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rules", "specs"]
    assert [p.name for p in out.iterdir()] == ["mine.txt"]


def test_the_example_output_compresses_at_least_fivefold() -> None:
    result = build(discover([REPO / "specs"]), load_catalog([REPO / "signals"]))
    text = sum(len(result.files[name].encode()) for name in result.files)
    held = result.files.held_bytes()
    assert text > 5 * held


TRICKY = """\
version: 1   # comment
service: "wéb-ü"
description: |
  two lines
  and ünïcode ✓
labels: {team: "a:b", 'quoted key': x}
alerts:
  - signal: disk_utilization
    threshold: 85%   # trailing
    severity: warning
  - {signal: disk_await, threshold: 5ms, severity: page}
weird: [1, 2.5, true, null, ~, 0x10, 1e3, "", '', 2026-11-29]
"""


@pytest.mark.parametrize(
    "path",
    [
        *sorted((REPO / "specs").glob("*.yaml")),
        *sorted((REPO / "tests" / "golden").glob("*/specs/*.yaml")),
        "tricky",
    ],
    ids=lambda p: p if isinstance(p, str) else f"{p.parent.parent.name}/{p.name}",
)
def test_libyaml_parsing_gives_the_same_data_and_positions(
    path: Path | str, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = TRICKY if path == "tricky" else Path(path).read_text()
    assert loader._fast_compose(text) is not None
    fast = loader.load_text(text, "x.yaml")
    monkeypatch.setattr(loader, "_FastLoader", None)
    slow = loader.load_text(text, "x.yaml")
    assert fast.data == slow.data
    assert fast.positions == slow.positions


@pytest.mark.parametrize(
    "text",
    [
        "a: [1, 2\n", "a: 1\na: 2\n", "a: \x07\n", "", "--- 1\n--- 2\n", "a:\n\tb: 1\n",
        "service: web\t\n", "a:\t1\n", "a: [1,\t2]\n", "key: value\t# c\n", "a: |\t\n  x\n",
        "a: !\n", "a: |#\n  x\n", "\ufeffa: 1\n\ufeffb: 2\n", "a: {b: }\n", "? [a, b]\n: 1\n",
        "a: !!str 1\n", "a: 'x'\n? b\n",
    ],
    ids=[
        "unclosed", "duplicate", "control-char", "empty", "two-docs", "tab-indent",
        "trailing-tab", "tab-after-colon", "tab-in-flow", "tab-before-comment", "tab-in-header",
        "bare-tag", "header-comment", "second-bom", "empty-flow-value", "complex-key",
        "explicit-tag", "question-key",
    ],
)  # fmt: skip
def test_anything_libyaml_would_word_differently_takes_the_python_path(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def outcome() -> str:
        try:
            loaded = loader.load_text(text, "x.yaml")
        except loader.LoadError as exc:
            return exc.diagnostic.render()
        return repr(loaded.data) + repr(loaded.positions)

    fast = outcome()
    monkeypatch.setattr(loader, "_FastLoader", None)
    assert fast == outcome()
