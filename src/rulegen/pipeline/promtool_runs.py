"""The promtool tests of a build, run as units: cut, deduplicated, cached, side by side.

Why: a test file's cases each pay for every rule of the files they load at every step
(``rulegen.pipeline.testunits`` cuts them down to what they observe); a fleet repeats the
same units under other names (``rulegen.pipeline.shapes`` recognises them); and a change to
one alert should rerun only the units that load it. So each unit is keyed by what its
result depends on (its bytes, or its shape's, and promtool's version): a key recorded as
passed in the test cache is not run again, and a key seen earlier in the same build runs
once for all the units that have it.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rulegen.fanout import usable_cpus
from rulegen.pipeline import testunits
from rulegen.pipeline.shapes import Identity, shape_of
from rulegen.pipeline.testunits import TEST_NAME, Unit
from rulegen.progress import Progress
from rulegen.validate import promtool
from rulegen.validate.cache import Key, TestCache, check_key


@dataclass(frozen=True)
class _Planned:
    unit: Unit
    key: Key
    shape: bool  # keyed by its shape (identity renamed), not its own bytes


@dataclass
class RunReport:
    """What the test units of a build came to.

    ``failures``: each failed assertion, under the test file it belongs to; ``silent``: the
    files of a failed run promtool printed no report for; ``files_reused``: files none of
    whose units ran; ``units``, ``cached``, ``shared``: units in all, taken from the cache,
    and sharing the run of another unit of the same key; ``unrecorded``: why a pass could
    not be recorded.
    """

    failures: list[promtool.FailedAssertion] = field(default_factory=list)
    silent: list[str] = field(default_factory=list)
    files_reused: int = 0
    units: int = 0
    cached: int = 0
    shared: int = 0
    unrecorded: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether every unit passed."""
        return not self.failures and not self.silent


def run_test_files(
    folder: Path,
    files: Sequence[str],
    cache: TestCache | None,
    identities: Mapping[str, Identity],
    weight_of: Callable[[str], float],
    jobs: int | None,
    steps: Progress,
    step: str,
    loads: Mapping[str, Sequence[str]] | None = None,
) -> RunReport:
    """Cut each of ``files`` (relative to ``folder``) into units, run each distinct unit the
    cache does not vouch for (``jobs`` at once, the longest first) and report per file on
    ``steps``. ``identities``: the identity of the service each generated file belongs to
    (its units' shapes; it also marks the file as rulegen's own output); ``weight_of``: a
    file's estimated cost when it cannot be cut; ``loads``: the rule files a generated test
    file loads (spares reading them from it).

    A file whose every unit passed is also recorded whole (its bytes and its rule files'),
    so an unchanged file is vouched for without being cut again."""
    loads = loads or {}
    whole = {name: _whole_key(folder, name, cache, loads.get(name)) for name in files}
    vouched = [name for name in files if cache and cache.passed(whole[name])]
    memo: dict[Any, Any] = {}
    planned = {
        name: _plan(folder, name, cache, identities.get(name), weight_of, memo)
        for name in files
        if name not in vouched
    }
    first: dict[str, _Planned] = {}
    for units in planned.values():
        for item in units:
            first.setdefault(item.key.name, item)
    due = [p for p in first.values() if not (cache and cache.passed(p.key))]
    due.sort(key=lambda p: p.unit.weight, reverse=True)
    report = RunReport(units=sum(len(u) for u in planned.values()), files_reused=len(vouched))
    results = _run(folder, due, planned, jobs, steps, step)
    ran = {p.key.name for p in due}
    for name, units in planned.items():
        if not any(item.key.name in ran for item in units):
            report.files_reused += 1
        for item in units:
            _account(report, name, item, results, ran, first)
    if cache is not None:
        _record(cache, due, planned, results, whole, report)
    return report


def _record(
    cache: TestCache,
    due: Sequence[_Planned],
    planned: Mapping[str, Sequence[_Planned]],
    results: Mapping[str, promtool.ToolResult],
    whole: Mapping[str, Key | None],
    report: RunReport,
) -> None:
    """Each passed unit, and each file all of whose units passed (whole)."""
    for item in due:
        if results[item.key.name].ok and (problem := cache.remember(item.key)):
            report.unrecorded.append(problem)
    for name, units in planned.items():
        if all(item.key.name not in results or results[item.key.name].ok for item in units):
            cache.remember(whole[name])


def _whole_key(
    folder: Path, name: str, cache: TestCache | None, rule_files: Sequence[str] | None
) -> Key | None:
    """The key of a test file run whole: its bytes, its rule files' and promtool's version."""
    if cache is None:
        return None
    return cache.key(folder, name, list(rule_files) if rule_files is not None else None)


def unit_keys(folder: Path, name: str, cache: TestCache, service: str | None = None) -> list[Key]:
    """The cache keys of the units of test file ``name`` (of ``service``'s generated tests,
    keyed by their shapes where they have one), as a build with ``cache`` computes them."""
    identity = Identity(service) if service is not None else None
    return [item.key for item in _plan(folder, name, cache, identity, lambda _: 1.0)]


def _account(
    report: RunReport,
    name: str,
    item: _Planned,
    results: Mapping[str, promtool.ToolResult],
    ran: set[str],
    first: Mapping[str, _Planned],
) -> None:
    key = item.key.name
    if key not in ran:
        report.cached += 1
        return
    if first[key] is not item:
        report.shared += 1
    outcome = results[key]
    if outcome.ok:
        return
    if not outcome.failures:
        if name not in report.silent:
            report.silent.append(name)
        return
    report.failures.extend(promtool.FailedAssertion(name, f.lines) for f in outcome.failures)


def _plan(
    folder: Path,
    name: str,
    cache: TestCache | None,
    identity: Identity | None,
    weight_of: Callable[[str], float],
    memo: dict[Any, Any] | None = None,
) -> list[_Planned]:
    version = cache.promtool_version if cache else ""
    units = testunits.split(folder, name, trusted=identity is not None, memo=memo)
    if units is None:
        whole = Unit(name, (), (), weight_of(name), True)
        key = cache.key(folder, name) if cache else None
        if key is None:  # not keyable (a glob, a file it cannot read): a key of its own
            key = Key(f"unkeyed:{name}", {})
        return [_Planned(whole, key, False)]
    out = []
    for unit in units:
        shape = shape_of(unit.files, identity, unit.data) if identity is not None else None
        if shape is None:
            key = check_key(version, "test unit", unit.files)
        else:
            key = check_key(version, "test unit shape", shape)
        out.append(_Planned(unit, key, shape is not None))
    return out


def _run(
    folder: Path,
    due: Sequence[_Planned],
    planned: Mapping[str, Sequence[_Planned]],
    jobs: int | None,
    steps: Progress,
    step: str,
) -> dict[str, promtool.ToolResult]:
    """Run the due units, reporting each file on ``steps`` once its last due unit is done
    (with the time its units took), weighted by their estimated cost."""
    keys_of = {name: {p.key.name for p in units} for name, units in planned.items()}
    due_keys = {p.key.name for p in due}
    waiting = {name: keys & due_keys for name, keys in keys_of.items() if keys & due_keys}
    weight = {p.key.name: p.unit.weight for p in due}
    workers = max(1, min(len(due), jobs or usable_cpus()))
    steps.step(step, total=len(waiting), weight=sum(weight.values()) or None, workers=workers)
    results: dict[str, promtool.ToolResult] = {}
    spent: dict[str, float] = {}
    if not due:
        return results
    with (
        tempfile.TemporaryDirectory(prefix="rulegen-units-") as scratch,
        ThreadPoolExecutor(workers) as pool,
    ):
        futures = {
            pool.submit(_run_one, folder, Path(scratch, f"u{n}"), item): item
            for n, item in enumerate(due)
        }
        for future in as_completed(futures):
            item = futures[future]
            outcome, seconds = future.result()
            results[item.key.name] = outcome
            spent[item.key.name] = seconds
            _advance(steps, waiting, item.key.name, spent, weight)
    return results


def _advance(
    steps: Progress,
    waiting: dict[str, set[str]],
    key: str,
    spent: Mapping[str, float],
    weight: Mapping[str, float],
) -> None:
    for name in sorted(waiting):
        keys = waiting[name]
        if key not in keys or not all(k in spent for k in keys):
            continue
        del waiting[name]
        steps.advance(name, sum(spent[k] for k in keys), sum(weight[k] for k in keys))


def _run_one(folder: Path, scratch: Path, item: _Planned) -> tuple[promtool.ToolResult, float]:
    start = time.monotonic()
    unit = item.unit
    if not unit.files:
        return promtool.run_tests([unit.source], folder), time.monotonic() - start
    scratch.mkdir(parents=True)
    for name, data in unit.files:
        (scratch / name).write_bytes(data)
    return promtool.run_tests([TEST_NAME], scratch), time.monotonic() - start
