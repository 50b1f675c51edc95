"""The pipeline, top to bottom: find specs → load → resolve → generate → render → validate → write.

Why: one readable function per stage, so the CLI stays a thin shell and the library API
(``load_specs`` in ``rulegen.load``, ``build``, ``validate``) is usable on its own. Each spec
file goes through load, resolve, generate and render on its own (in a worker process for a
fleet); what spans files (duplicate services, routing, Mimir namespaces) follows in order.
"""

from __future__ import annotations

import os
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from xml.etree import ElementTree

from rulegen.alerts.rules import build_groups
from rulegen.alerts.testgen import build_tests
from rulegen.catalog import Catalog
from rulegen.core import diagnostics as codes
from rulegen.core import versions
from rulegen.core.confined import write_whole
from rulegen.core.histograms import is_native
from rulegen.dashboard.build import service_dashboard
from rulegen.diagnosis.rules import diagnosis_group
from rulegen.diagnosis.testgen import diagnosis_tests
from rulegen.errors import Diagnostic, FieldPath, SpecError, UsageError, ValidationFailed
from rulegen.fanout import fan_out, usable_cpus
from rulegen.generated import Explanation, RuleGroup, ServiceOutput, SLOOutput, TestCase
from rulegen.load import LoadedFile, SpecInputs, combine, display, load_one, read_user_test
from rulegen.output import FileSet, dump_yaml
from rulegen.pipeline import victoriametrics as vm_target
from rulegen.pipeline.packed import HaDeclared, PackedOutput, Services
from rulegen.pipeline.promtool_runs import run_test_files
from rulegen.pipeline.rendercache import CachedRender, RenderCache
from rulegen.pipeline.service import ResolvedSpec
from rulegen.pipeline.shapes import Identity
from rulegen.pipeline.vmalert_slo import vmalert_slo
from rulegen.progress import Progress, Silent
from rulegen.render import TARGETS
from rulegen.render.grafana import dashboard_text, provisioning
from rulegen.render.mimir import mimir_namespace_file
from rulegen.render.operator import prometheus_rule, service_groups
from rulegen.render.prometheus import rule_file
from rulegen.render.promtool_tests import tests_file
from rulegen.render.thanos import thanos_rule_file
from rulegen.render.victoriametrics import long_queries, vmalert_groups, vmalert_rule_file
from rulegen.routing import ha as ha_files
from rulegen.routing import output as routing_files
from rulegen.routing.load import LoadedRouting
from rulegen.routing.output import routing_output
from rulegen.slo.model import ResolvedSLO, histogram_reads
from rulegen.slo.rules import group_name as slo_group_name
from rulegen.slo.rules import replay_safe_group, slo_group
from rulegen.slo.series import SLOTestError
from rulegen.slo.testgen import history_step, slo_tests
from rulegen.source.loader import Origin
from rulegen.spec.models import TargetSettings
from rulegen.testruns import shared_runs
from rulegen.validate import promtool, vmalert
from rulegen.validate.alerting import validate_alerting
from rulegen.validate.cache import Key, TestCache
from rulegen.validate.routing import validate_routing
from rulegen.validate.targets import check_targets, run_vmalert_tests
from rulegen.validate.user_tests import refuse_unmatched_rule_files

# promtool evaluates every rule of the file at every step of every test: about a million rule
# evaluations a minute on one core; this keeps a build well inside promtool's timeout.
MAX_TEST_COST = 5_000_000
# The steps a build reports on its ``progress`` (the command line names the slowest tests).
LOAD_STEP = "specs loaded and rendered"
CHECK_STEP = "promtool check rules"
TEST_STEP = "promtool test files"
OTHER_STEP = "amtool and the other checks"
RECORDED = "unchanged since a recorded pass"


@dataclass
class BuildResult:
    """Everything a build would write, by path relative to the output folder.

    ``services`` holds each service's rule groups (what validation messages, routing and the
    other rule targets read); its generated tests are in ``files``, their cost in ``costs``.
    """

    services: Sequence[ServiceOutput]
    files: FileSet = field(default_factory=FileSet)
    costs: dict[str, int] = field(default_factory=dict)
    # the rule file each generated test file loads, as its ``rule_files`` names it
    loads: dict[str, str] = field(default_factory=dict)
    # the service each generated test file belongs to (what its test units' shapes rename)
    owners: dict[str, str] = field(default_factory=dict)
    routing_cases: list[tuple[str, Mapping[str, str], tuple[str, ...]]] = field(
        default_factory=list
    )
    # the spec position of each user routing test, by its case name
    routing_origins: dict[str, Origin] = field(default_factory=dict)
    reports: list[str] = field(default_factory=list)
    targets: tuple[str, ...] = ("prometheus",)
    # the inputs each file comes from, and every input the build read (spec files, user
    # tests), relative to the output folder's parent: what the output folder's manifest keeps
    sources: dict[str, tuple[str, ...]] = field(default_factory=dict)
    inputs: tuple[str, ...] = ()
    root: Path | None = None
    # one line per render cache entry that was there but refused (for the CLI to warn)
    cache_warnings: list[str] = field(default_factory=list)
    # the user's own tests: output name → the file copied (as ``sources`` names it)
    user_tests: dict[str, str] = field(default_factory=dict)

    def test_cost(self, name: str) -> int:
        """Rule evaluations promtool will do for a test file (0 for a user's own tests)."""
        return self.costs.get(name, 0)


def build(
    inputs: SpecInputs,
    catalog: Catalog,
    root: Path | None = None,
    targets: Sequence[str] = ("prometheus",),
    jobs: int | None = None,
    progress: Progress | None = None,
    render_cache: RenderCache | None = None,
    read_services: bool = True,
    spool: Path | None = None,
) -> BuildResult:
    """Resolve the specs and render every output file in memory.

    ``root`` is the folder the headers' spec paths are relative to (the output folder's
    parent, normally the repo root), so the output does not depend on the working directory.
    Each spec file is loaded and rendered in one go, by one of up to ``jobs`` worker
    processes for a fleet (default: every usable CPU); only its files and rule groups come
    back, each counted on ``progress``. With ``render_cache``, a service whose inputs were
    rendered before takes its files from there (only its rule groups are made again).
    ``read_services``: whether the caller reads ``result.services`` (validation does); if not,
    a worker sends each service's name and group names only, unless the build reads the
    rest itself (a routing file may be among the inputs, or the Mimir target). ``spool``:
    the folder the output is assembled in (``rulegen.outdir.staged``), where each worker
    writes the files it renders (``FileSet``) instead of sending them.
    """
    chosen = tuple(t for t in TARGETS if t in targets)
    steps = progress or Silent()
    steps.step(LOAD_STEP, total=len(inputs.specs))
    found = fan_out(
        _load_and_render,
        _Job(
            catalog, root, chosen, render_cache, _keeps(read_services, chosen, inputs.specs), spool
        ),  # fmt: skip
        inputs.specs,
        jobs,
        done=steps.advance,
    )
    combined = combine(inputs.specs, [f.loaded for f in found])
    if combined.diagnostics:
        raise SpecError(combined.diagnostics)
    rendered = [(inputs.specs[i], found[i].rendered) for i in combined.accepted]
    problems = [d for _, r in rendered if isinstance(r, list) for d in r]
    if problems:
        raise SpecError(problems)
    services = [(p, r) for p, r in rendered if isinstance(r, RenderedService)]
    _refuse_groups_across_services([s for _, s in services])
    # a spec's outputs come from it and from the defaults files it extends (--check and the
    # manifest see an edit of either)
    origins = {
        (spec := inputs.specs[i]): tuple(
            dict.fromkeys(_source_name(p, root) for p in (spec, *found[i].loaded.extends))
        )
        for i in combined.accepted
    }
    result = BuildResult(Services(), targets=chosen, root=root)
    outputs = Services()
    result.cache_warnings = [line for built in found for line in built.warnings]
    result.inputs = tuple(
        dict.fromkeys(
            [
                *(_source_name(p, root) for p in inputs.specs),
                *(name for names in origins.values() for name in names[1:]),
                *(_source_name(p, root) for p in inputs.user_tests),
            ]
        )
    )
    for path, service in services:
        outputs.append(service.output)
        result.files.merge(service.files)
        result.sources.update(dict.fromkeys(service.files, origins[path]))
        result.costs.update(service.costs)
        result.loads.update(service.loads)
        result.owners.update(dict.fromkeys(service.loads, service.output.service))
        result.reports.extend(service.reports)
    result.services = outputs
    if services:
        sources = ", ".join(sorted(s.source for _, s in services))
        result.files["grafana/provisioning.yaml"] = dump_yaml(provisioning(), sources)
        names = tuple(sorted(_source_name(p, root) for p, _ in services))
        result.sources["grafana/provisioning.yaml"] = names
        if "mimir" in chosen:
            _add_mimir(result, services, origins)
    declaring = result.services.declaring_ha()
    if declaring:
        _add_ha(result, services, origins, declaring)
    if combined.routing is not None:
        # (``_keeps`` keeps every service's rule groups when a routing file may be there)
        _add_routing(result, combined.routing, root)
    for path in inputs.user_tests:
        target = f"tests/{path.name}"
        if target in result.files:
            raise UsageError(f"{display(path)}: clashes with the generated {target}; rename it")
        result.files[target] = read_user_test(path)
        result.sources[target] = (_source_name(path, root),)
        result.user_tests[target] = display(path)
    _refuse_case_clashes(result.files)
    return result


def _refuse_case_clashes(files: Iterable[str]) -> None:
    """Two outputs whose names differ only in case (services ``Web`` and ``web``, Mimir
    namespaces ``Inference`` and ``inference``) would be one file on macOS and Windows."""
    seen: dict[str, str] = {}
    for name in files:
        other = seen.setdefault(name.casefold(), name)
        if other != name:
            raise UsageError(
                f"outputs {other} and {name} differ only in case: they would overwrite each "
                "other on a case-insensitive file system; rename one"
            )


def _source_name(path: Path, root: Path | None) -> str:
    """An input as the output folder's manifest names it: relative to ``root`` (the output
    folder's parent), ``..`` included, so that it is the same on every machine."""
    base = os.path.realpath(root or Path.cwd())
    return Path(os.path.relpath(os.path.realpath(path), base)).as_posix()


@dataclass
class RenderedService:
    """What the rest of a build needs of one rendered spec (it crosses process borders, so
    the resolved spec and the generated test cases stay behind: their files carry them; its
    rule groups travel packed, ``rulegen.pipeline.packed``)."""

    output: PackedOutput
    files: FileSet
    costs: dict[str, int]
    loads: dict[str, str]
    source: str
    targets: TargetSettings
    reports: list[str]
    # where ``group:`` names each rule group the user named (to report a clash across specs)
    named_groups: dict[str, Origin] = field(default_factory=dict)


@dataclass
class _Built:
    loaded: LoadedFile
    rendered: RenderedService | list[Diagnostic] | None = None
    # the render cache entries refused on the way, one line each
    warnings: list[str] = field(default_factory=list)


def _keeps(read_services: bool, targets: Sequence[str], specs: Sequence[Path]) -> bool:
    """Whether a build must keep its services' rule groups: the caller reads them, Mimir's
    namespaces gather them, or a routing file may be among the inputs (routing reads every
    alert). No file without the text ``routing`` (and no backslash, which could escape a
    letter of it) has a ``routing:`` key."""
    if read_services or "mimir" in targets:
        return True
    for path in specs:
        try:
            text = path.read_bytes()
        except OSError:
            return True  # the load reports it; keep everything meanwhile
        if b"routing" in text or b"\\" in text:
            return True
    return False


@dataclass(frozen=True)
class _Job:
    """What every spec of a build is loaded and rendered with (a worker inherits it)."""

    catalog: Catalog
    root: Path | None
    targets: tuple[str, ...]
    cache: RenderCache | None
    keep: bool  # each service's rule groups (``PackedOutput``), or their names only
    spool: Path | None  # where the rendered files are written (``FileSet``)


def _load_and_render(job: _Job, path: Path) -> _Built:
    catalog, root, targets, cache, keep = job.catalog, job.root, job.targets, job.cache, job.keep
    loaded = load_one(catalog, path)
    spec, loaded.resolved = loaded.resolved, None
    read, loaded.read = loaded.read, ()  # the bytes stay in this process
    if spec is None:
        return _Built(loaded)
    if cache is None:
        rendered = render_service(spec, catalog, root, targets, keep=keep, spool=job.spool)
        return _Built(loaded, rendered)
    key = _cache_key(cache, read, loaded.extends, spec, root, targets)
    built = _Built(loaded)
    entry = cache.load(key, built.warnings.append)
    if entry is not None:
        built.rendered = _cached_service(spec, catalog, root, entry, keep, job.spool)
        return built
    built.rendered = rendered = render_service(
        spec, catalog, root, targets, keep=keep, spool=job.spool
    )
    if isinstance(rendered, RenderedService):
        files = dict(rendered.files)
        cache.store(key, CachedRender(files, rendered.costs, rendered.loads, rendered.reports))
    return built


def _cache_key(
    cache: RenderCache,
    read: Sequence[bytes],
    extends: Sequence[Path],
    spec: ResolvedSpec,
    root: Path | None,
    targets: Sequence[str],
) -> str:
    """The render cache's key of one spec, from the bytes the loader parsed (``read``: the
    spec's, then each defaults file's). Why not read them again: a file replaced in between
    would put the files of one version under the key of another."""
    own, *others = read
    named = [(_source_name(p, root), data) for p, data in zip(extends, others, strict=True)]
    source = f"{spec.source}\0{_header_source(spec.source, root)}"
    return cache.key(own, named, source, targets)


def _cached_service(
    spec: ResolvedSpec, catalog: Catalog, root: Path | None, entry: CachedRender, keep: bool,
    spool: Path | None,
) -> RenderedService | list[Diagnostic]:  # fmt: skip
    """A service from the render cache: its files as recorded, its rule groups made again
    (validation, routing and the other targets read them)."""
    try:
        groups, slo_groups = rule_groups(spec, catalog)
    except SpecError as exc:
        return list(exc.diagnostics)
    slos = [(slo, group, (), ()) for slo, group in zip(spec.slos, slo_groups, strict=True)]
    output = _assemble(spec, groups, (), slos, vmalert=keep)
    return RenderedService(
        PackedOutput.of(output, keep), FileSet(entry.files, spool), entry.costs, entry.loads,
        _header_source(spec.source, root), spec.targets, entry.reports, _named_groups(spec),
    )  # fmt: skip


def render_service(
    spec: ResolvedSpec, catalog: Catalog, root: Path | None, targets: Sequence[str] = (),
    *, keep: bool = True, spool: Path | None = None,
) -> RenderedService | list[Diagnostic]:  # fmt: skip
    """One service's files (rules, tests, dashboard, the rule targets asked for; written
    into ``spool`` when given) and rule groups (their names only, without ``keep``), or its
    spec errors."""
    if "victoriametrics" in targets and (native := _native_readers(spec)):
        return native
    try:
        service = _service_output(spec, catalog, vmalert=keep or "victoriametrics" in targets)
    except SpecError as exc:
        return list(exc.diagnostics)
    source = _header_source(spec.source, root)
    written, loads = _service_files(service, spec, source)
    files = FileSet(written, spool)
    files[f"grafana/{spec.service}.json"] = dashboard_text(service_dashboard(spec, source))
    extra, reports = _target_files(service, spec, source, targets)
    files.update(extra)
    return RenderedService(
        PackedOutput.of(_rules_only(service), keep), files, _test_costs(service), loads, source,
        spec.targets, reports,
        _named_groups(spec),
    )  # fmt: skip


def _native_readers(spec: ResolvedSpec) -> list[Diagnostic]:
    """``--target victoriametrics`` of a spec reading native histograms: refused where each is
    read. MetricsQL has no native histogram functions (``histogram_count``,
    ``histogram_fraction`` of one series) and VictoriaMetrics keeps histograms as ``_bucket``
    series, so such rules would read nothing there."""
    why = (
        "reads a native histogram ({kind}), which --target victoriametrics cannot: VictoriaMetrics "
        "stores histograms as _bucket series (set histograms: classic for it)"
    )
    natives = [(slo, [h for h in histogram_reads(slo.sli) if h.native]) for slo in spec.slos]
    out = [slo.origin.diagnostic(why.format(kind=read[0].histogram)) for slo, read in natives
           if read]  # fmt: skip
    out += [a.origin.diagnostic(why.format(kind=a.histogram)) for a in spec.alerts
            if is_native(a.histogram)]  # fmt: skip
    return out


def _named_groups(spec: ResolvedSpec) -> dict[str, Origin]:
    """Each rule group a ``group:`` names, at its first mention (recordings, then alerts)."""
    out: dict[str, Origin] = {}
    mentions = [(r.group, r.group_origin) for r in spec.recordings]
    mentions += [(a.group, a.group_origin) for a in spec.alerts]
    for name, origin in mentions:
        if name is not None and origin is not None:
            out.setdefault(name, origin)
    return out


def _rules_only(service: ServiceOutput) -> ServiceOutput:
    slos = tuple(replace(slo, tests=(), history_tests=()) for slo in service.slos)
    return replace(service, tests=(), slos=slos)


def _test_costs(service: ServiceOutput) -> dict[str, int]:
    """Rule evaluations promtool will do for each generated test file (validation runs the
    costliest first)."""
    costs = {}
    if service.tests:
        rules = sum(len(g.rules) for g in service.groups)
        evaluations = sum(t.evaluations for t in service.tests)
        costs[f"tests/{service.service}.test.yml"] = rules * evaluations
    for slo in service.slos:
        stem = f"tests/{service.service}.slo.{slo.name}"
        for name, cases in (
            (f"{stem}.test.yml", slo.tests),
            (f"{stem}.history.test.yml", slo.history_tests),
        ):
            if cases:
                costs[name] = len(slo.group.rules) * sum(t.evaluations for t in cases)
    return costs


def rule_groups(
    spec: ResolvedSpec, catalog: Catalog
) -> tuple[tuple[RuleGroup, ...], tuple[RuleGroup, ...]]:
    """The rule groups of one spec without its tests: the service's own (signal families,
    then diagnoses) and one per SLO, in spec order."""
    groups = build_groups(
        spec.service, spec.alerts, spec.evaluation_interval, catalog.families, spec.max_group_rules,
        spec.recordings, spec.groups,
    )  # fmt: skip
    if spec.diagnoses:
        groups += (diagnosis_group(spec.service, spec.evaluation_interval, spec.diagnoses),)
    return groups, tuple(slo_group(slo) for slo in spec.slos)


def _service_output(spec: ResolvedSpec, catalog: Catalog, vmalert: bool = True) -> ServiceOutput:
    """Rule groups and tests of one spec (each SLO's vmalert group too, with ``vmalert``);
    SpecError when a test cannot be built or is too slow."""
    groups, slo_groups = rule_groups(spec, catalog)
    _refuse_group_clashes(spec, (*groups, *slo_groups))
    group_labels = {g.name: g.labels for g in spec.groups}
    tests = build_tests(
        spec.alerts, spec.evaluation_interval, spec.scrape_interval, spec.host_label,
        group_labels=group_labels,
    )  # fmt: skip
    if spec.diagnoses:
        tests += diagnosis_tests(spec.diagnoses, spec.evaluation_interval, spec.scrape_interval)
    tests = shared_runs(tests, groups)
    if spec.alerts or spec.diagnoses:
        first = (spec.alerts or spec.diagnoses)[0].origin
        _check_cost(
            groups, tests, Origin(first.file, first.line, first.col, FieldPath(("alerts",)))
        )
    slos = []
    for slo, group in zip(spec.slos, slo_groups, strict=True):
        try:
            cases, history = slo_tests(slo)
        except SLOTestError as exc:
            raise SpecError(
                [slo.origin.diagnostic(f"no test can be built: {exc}", codes.SPEC_TEST)]
            ) from None
        _check_cost((group,), cases + history, slo.origin)
        slos.append((slo, group, cases, history))
    return _assemble(spec, groups, tests, slos, vmalert)


def _assemble(
    spec: ResolvedSpec,
    groups: tuple[RuleGroup, ...],
    tests: tuple[TestCase, ...],
    slos: Sequence[tuple[ResolvedSLO, RuleGroup, tuple[TestCase, ...], tuple[TestCase, ...]]],
    vmalert: bool = True,
) -> ServiceOutput:
    """One service's output from its rule groups and generated tests (none for a service
    taken from the render cache, whose test files are already rendered). Without
    ``vmalert``, no SLO's vmalert group: only the VictoriaMetrics target reads it, and a
    service whose rule groups nobody reads (``PackedOutput`` without ``keep``) needs it
    only for that target (a second cascade per SLO, 3 ms a service of the example)."""
    stored = tuple(sorted(spec.targets.victoriametrics.labels))
    outputs = tuple(
        SLOOutput(
            slo.name,
            slo.evaluation,
            group,
            cases,
            history_step(slo),
            history,
            slo.group_by,
            _increase_group(slo, stored) if vmalert else None,
            tuple(a.key for a in slo.alerts),
        )  # fmt: skip
        for slo, group, cases, history in slos
    )
    explanations = tuple(
        Explanation(d.name, d.explains, d.host.label) for d in spec.diagnoses if d.explains
    )
    examples = tuple(
        (f"{alert.name}: examples[{index}]", example.origin)
        for alert in spec.alerts
        for index, example in enumerate(alert.examples)
    )
    return ServiceOutput(
        spec.service, spec.source, spec.evaluation_interval, groups, tests, slos=outputs,
        explanations=explanations, prometheus=spec.prometheus,
        prometheus_origin=spec.prometheus_origin, case_origins=examples, ha=spec.ha,
    )  # fmt: skip


def _increase_group(slo: ResolvedSLO, stored_labels: tuple[str, ...]) -> RuleGroup | None:
    """The SLO's group for MetricsQL (``SLOOutput``): ``increase()`` base windows, and the
    fallbacks' sums keeping the labels vmalert adds to every stored series
    (``stored_labels``); none where that is ``group`` already (the 2.x form, no labels) or for
    a native histogram SLI (refused for VictoriaMetrics, ``_native_readers``)."""
    if any(one.native for one in histogram_reads(slo.sli)):
        return None
    if not slo.left_open and not stored_labels:
        return None
    return slo_group(vmalert_slo(slo, stored_labels))


def _refuse_group_clashes(spec: ResolvedSpec, groups: Sequence[RuleGroup]) -> None:
    """A rule group named by ``group:`` must be the only group of that name in its spec
    (Prometheus refuses two in one file); across specs, see
    ``_refuse_groups_across_services``."""
    named = _named_groups(spec)
    seen: dict[str, str] = {}
    problems = []
    for group in groups:
        other = seen.get(group.name)
        if other is not None and group.name in named:
            message = (
                f"rule group {group.name!r} is also the name of a rule group rulegen "
                "generates; rule group names must be unique across the build"
            )
            problems.append(named[group.name].diagnostic(message, codes.SPEC_DUPLICATE))
        seen.setdefault(group.name, spec.service)
    if problems:
        raise SpecError(problems)


def _refuse_groups_across_services(services: Sequence[RenderedService]) -> None:
    """Two specs whose rule groups share a name that one of them chose with ``group:`` (Mimir's
    namespaces and the Operator's objects gather several services' groups)."""
    seen: dict[str, RenderedService] = {}
    problems = []
    for service in services:
        for name in service.output.group_names:
            other = seen.setdefault(name, service)
            if other is service:
                continue
            origin, also = service.named_groups.get(name), other
            if origin is None:  # the earlier spec chose the name: report it there
                origin, also = other.named_groups.get(name), service
            if origin is None:
                continue
            message = (
                f"rule group {name!r} is also a rule group of service "
                f"{also.output.service!r}; rule group names must be unique across the build"
            )
            problems.append(origin.diagnostic(message, codes.SPEC_DUPLICATE))
    if problems:
        raise SpecError(problems)


def _check_cost(groups: Sequence[RuleGroup], tests: Sequence[TestCase], origin: Origin) -> None:
    """Refuse a spec whose generated tests would keep promtool busy for minutes."""
    rules = sum(len(g.rules) for g in groups)
    cost = sum(t.evaluations for t in tests) * rules
    if cost <= MAX_TEST_COST:
        return
    message = (
        f"the generated tests would evaluate {rules} rules {cost // rules} times "
        f"(budget {MAX_TEST_COST} rule evaluations, about {MAX_TEST_COST // 10**6} min of "
        "promtool): shorten long windows and for durations, or split the spec"
    )
    raise SpecError([origin.diagnostic(message, codes.SPEC_TEST)])


def _service_files(
    service: ServiceOutput, spec: ResolvedSpec, source: str
) -> tuple[dict[str, str], dict[str, str]]:
    """Output files of one service: its rules and tests, and one pair per SLO; and the rule
    file each test file loads (``rule_files``, relative to the test).

    Why one file pair per SLO: an SLO's tests replay days of history, and promtool evaluates
    every group of a test's rule files at every step; alone, an SLO's tests take seconds.
    """
    files: dict[str, str] = {}
    loads: dict[str, str] = {}

    def add_tests(
        name: str, rules_name: str, interval: Decimal, cases: tuple[TestCase, ...]
    ) -> None:
        loads[name] = f"../{rules_name}"
        files[name] = dump_yaml(tests_file(loads[name], interval, cases), source)

    if service.groups:
        rules_name = f"prometheus/{spec.service}.rules.yml"
        files[rules_name] = dump_yaml(rule_file(service.groups), source)
        if service.tests:
            name = f"tests/{spec.service}.test.yml"
            add_tests(name, rules_name, service.evaluation_interval_seconds, service.tests)
    for slo in service.slos:
        rules_name = f"prometheus/{spec.service}.slo.{slo.name}.rules.yml"
        files[rules_name] = dump_yaml(rule_file((slo.group,)), source)
        stem = f"tests/{spec.service}.slo.{slo.name}"
        add_tests(f"{stem}.test.yml", rules_name, slo.evaluation_interval_seconds, slo.tests)
        if slo.history_tests:
            add_tests(
                f"{stem}.history.test.yml", rules_name, slo.history_step_seconds, slo.history_tests
            )
    return files, loads


def _replay_safe(
    groups: tuple[RuleGroup, ...], slos: Sequence[ResolvedSLO]
) -> tuple[RuleGroup, ...]:
    """The SLO groups with replay-safe alert descriptions (``slo.rules.replay_safe_group``)."""
    by_name = {slo_group_name(slo): slo for slo in slos}
    return tuple(replay_safe_group(by_name[g.name], g) if g.name in by_name else g for g in groups)


def _target_files(
    service: ServiceOutput, spec: ResolvedSpec, source: str, targets: Sequence[str]
) -> tuple[dict[str, str], list[str]]:
    """One service's PrometheusRule object, Thanos and vmalert files (and vmalert-tool
    tests), as asked; the Thanos and vmalert warnings."""
    settings = spec.targets
    files: dict[str, str] = {}
    reports: list[str] = []
    groups = service_groups(service)
    if "operator" in targets:
        operator = settings.operator
        rule = prometheus_rule(service.service, groups, operator.namespace, operator.labels)
        files[f"kubernetes/{service.service}.yaml"] = dump_yaml(rule, source)
    if "thanos" in targets:
        data, flags = thanos_rule_file(groups, settings.thanos.partial_response_strategy)
        files[f"thanos/{service.service}.rules.yml"] = dump_yaml(data, source)
        reports.extend(f"thanos: {f.group}/{f.rule}: {f.reason}" for f in flags)
    if "victoriametrics" in targets:
        vm = settings.victoriametrics
        vm_groups = vmalert_groups(service)
        if vm.replay_safe:
            vm_groups = _replay_safe(vm_groups, spec.slos)
        data = vmalert_rule_file(vm_groups, vm.concurrency, vm.labels, vm.max_query_len)
        files[vm_target.rules_name(service.service)] = dump_yaml(data, source)
        tests, notes = vm_target.vmalert_test_files(spec, service, vm_groups, data, source)
        files.update(tests)
        reports.extend(notes)
        # left above the limit: the rules too long even with no recording inlined (written
        # fully inlined, so that raising both limits to their size makes them exact)
        reports.extend(
            f"victoriametrics: {group}/{rule}: the expression is {size} bytes, above "
            f"max_query_len={vm.max_query_len} even with no recording inlined: start "
            f"victoria-metrics (vmselect) with -search.maxQueryLen={size} or more and set "
            "targets.victoriametrics.max_query_len to match"
            for group, rule, size in long_queries(data, vm.max_query_len)
        )
    return files, reports


def _add_mimir(
    result: BuildResult,
    services: Sequence[tuple[Path, RenderedService]],
    origins: Mapping[Path, tuple[str, ...]],
) -> None:
    """One Mimir namespace file per namespace, holding the groups of its services."""
    namespaces: dict[str, list[RenderedService]] = {}
    paths: dict[str, set[str]] = {}
    for path, service in services:
        namespace = service.targets.mimir.namespace or service.output.service
        namespaces.setdefault(namespace, []).append(service)
        paths.setdefault(namespace, set()).update(origins[path])
    for namespace, members in sorted(namespaces.items()):
        label = {m.targets.mimir.grouping_label for m in members}
        if len(label) > 1:
            raise UsageError(
                f"mimir namespace {namespace}: its services disagree on grouping_label "
                f"({', '.join(sorted(label))})"
            )
        groups = tuple(g for m in members for g in service_groups(m.output.unpack()))
        sources = ", ".join(sorted(m.source for m in members))
        data = mimir_namespace_file(namespace, groups, label.pop())
        result.files[f"mimir/{namespace}.yaml"] = dump_yaml(data, sources)
        result.sources[f"mimir/{namespace}.yaml"] = tuple(sorted(paths[namespace]))


def _add_ha(
    result: BuildResult,
    services: Sequence[tuple[Path, RenderedService]],
    origins: Mapping[Path, tuple[str, ...]],
    declaring: Sequence[HaDeclared],
) -> None:
    """The alerting block of the HA pairs' ``prometheus.yml`` (``routing.ha``), from the
    services that declare ``ha`` (``declaring``; their specs and defaults files are its
    sources): no service is unpacked for it."""
    dropped = ha_files.dropped_labels([ha.label for ha in declaring])
    problems = ha_files.carried([use for ha in declaring for use in ha.uses], dropped)
    if problems:
        raise SpecError(problems)
    found = [(path, s) for path, s in services if s.output.ha is not None]
    sources = ", ".join(sorted(s.source for _, s in found))
    text = dump_yaml(ha_files.alerting_block(list(dropped)), sources)
    head, body = text.split("\n", 1)
    said = ha_files.comment([(ha.prometheus, ha.label) for ha in declaring])
    result.files[ha_files.FILE] = f"{head}\n{said}{body}"
    result.sources[ha_files.FILE] = tuple(sorted({n for path, _ in found for n in origins[path]}))


def _add_routing(result: BuildResult, loaded: LoadedRouting, root: Path | None) -> None:
    output = routing_output(loaded.routing, loaded.base, result.services)
    source = _header_source(loaded.routing.source, root)
    result.files[routing_files.CONFIG] = dump_yaml(output.config, source)
    result.files[routing_files.TESTS] = dump_yaml(output.tests, source)
    name = _source_name(Path(loaded.routing.source), root)
    result.sources.update(dict.fromkeys((routing_files.CONFIG, routing_files.TESTS), (name,)))
    result.routing_cases = output.cases
    result.routing_origins = output.origins
    result.reports.extend(output.reports)


def _header_source(source: str, root: Path | None) -> str:
    if root is None:
        return source
    relative = os.path.relpath(Path(source).resolve(), root.resolve())
    return Path(relative).as_posix() if not relative.startswith("..") else Path(source).name


def validate(
    folder: Path,
    result: BuildResult,
    jobs: int | None = None,
    test_cache: Path | None = None,
    progress: Progress | None = None,
    junit: Path | None = None,
    *,
    read_only: bool = False,
    warn: Callable[[str], None] | None = None,
) -> list[str]:
    """Run promtool on a written output folder (up to ``jobs`` test files at once, default
    every usable CPU); returns a summary, raises on any failure. With ``test_cache``, a test
    file whose bytes, rule files and promtool release passed before is not run again
    (``read_only``: and no pass is recorded); a pass marker that is there but refused is
    named on ``warn``, one line each (default: a ``warning:`` line of the summary). Each
    step, and each test file with its time, is reported on ``progress``."""
    steps = progress or Silent()
    rules = sorted(name for name in result.files if name.startswith("prometheus/"))
    tests = sorted(name for name in result.files if name.startswith("tests/"))
    if any(name.startswith("victoriametrics/") for name in result.files):
        vmalert.find_vmalert()  # missing: fail before minutes of promtool tests, not after
    identity = promtool.build_info()  # one --version: the printed release and the cache key
    refuse_other_semantics(result.services, "promtool", identity)
    if junit is not None:
        refuse_junit_without_support(identity)
    cache = (
        TestCache(test_cache, identity, read_only=read_only, warn=warn)
        if test_cache and identity
        else None
    )
    refuse_unmatched_rule_files(result.files, result.user_tests)  # before minutes of promtool
    steps.step(CHECK_STEP)
    summary = [promtool.version_line(identity), _check_rules(folder, result, rules, cache)]
    # vmalert-tool's tests run beside promtool's (each is one process on one file)
    with ThreadPoolExecutor(max_workers=1) as beside:
        vm_tests = beside.submit(run_vmalert_tests, folder, result.files, jobs or 2)
        if tests:
            summary.extend(_validate_tests(folder, result, tests, jobs, cache, steps, junit))
            if test_cache and not cache:
                summary.append("warning: promtool prints no version; test results not cached")
        steps.step(OTHER_STEP)
        summary.extend(check_targets(result.files))
        summary.extend(vm_tests.result())
    if routing_files.CONFIG in result.files:
        summary.extend(
            validate_routing(folder, result.routing_cases, result.routing_origins, cache)
        )
    if ha_files.FILE in result.files:
        labels = [label.name for _, label in ha_files.declared(result.services)]
        summary.append(validate_alerting(folder, labels, cache))
    summary.extend(f"warning: {report}" for report in result.reports)
    summary.extend(f"warning: {line}" for line in (cache.warnings if cache else ()))
    return summary


def refuse_other_semantics(
    services: Sequence[ServiceOutput], tool: str, version_text: str | None
) -> None:
    """A tool that evaluates PromQL otherwise than the declared Prometheus would fail the
    generated tests for no fault of the rules: say so in one line per spec, naming both
    versions and the setting to change (exit 2, before anything is run or written)."""
    found = versions.tool_version(version_text or "")
    if found is None:
        return
    shown = ".".join(map(str, found))
    problems = []
    for service in services:
        declared = service.prometheus
        if versions.same_semantics(declared, found):
            continue
        wanted = "3.x" if declared.left_open_ranges else "2.x"
        message = (
            f"declares Prometheus {declared} ({declared.semantics} range selectors) but "
            f"{tool} is {shown}, whose generated tests would fail: set prometheus.version to "
            f'"{found[0]}.{found[1]}", or put a {tool} {wanted} first on PATH '
            f"(or RULEGEN_{tool.upper()})"
        )
        origin = service.prometheus_origin
        if origin is None:
            problems.append(Diagnostic(service.source, 0, 0, FieldPath(("prometheus", "version")),
                                       message, codes.TOOL_VERSION))  # fmt: skip
        else:
            problems.append(origin.diagnostic(message, codes.TOOL_VERSION))
    if problems:
        raise SpecError(problems)


def refuse_junit_without_support(version_text: str | None) -> None:
    """``--junit`` needs promtool's own report (``test rules --junit``, 2.55 on): an older
    promtool is one line and exit 2, before any test runs."""
    found = versions.tool_version(version_text or "")
    if found is not None and found[:2] >= versions.JUNIT:
        return
    shown = ".".join(map(str, found)) if found else "of an unknown version"
    need = ".".join(map(str, versions.JUNIT))
    raise UsageError(
        f"--junit needs promtool {need} or later, which writes the report; promtool is "
        f"{shown} (set RULEGEN_PROMTOOL or PATH to a newer one, or drop --junit)"
    )


def _report_name(test_file: str) -> str:
    """One test file's JUnit report among the others (``tests/a.yml`` → ``tests__a.yml.xml``)."""
    return test_file.replace("/", "__") + ".xml"


def write_junit(target: Path, reports: Sequence[Path]) -> None:
    """The JUnit reports of every promtool run as one ``<testsuites>`` document at
    ``target``, written whole or not at all (a temporary file renamed into place), in the
    mode the umask gives (``confined.write_whole``, as every file rulegen writes). A run
    that wrote no report (promtool stopped before testing) leaves its file out."""
    root = ElementTree.Element("testsuites")
    for report in reports:
        try:
            parsed = ElementTree.parse(report).getroot()
        except (OSError, ElementTree.ParseError):
            continue
        suites = [parsed] if parsed.tag == "testsuite" else list(parsed.iter("testsuite"))
        root.extend(suites)
    data = ElementTree.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"
    try:
        write_whole(target, data)
    except OSError as exc:
        raise UsageError(f"--junit {target}: cannot write the report ({exc.strerror})") from None


def _check_rules(
    folder: Path, result: BuildResult, rules: list[str], cache: TestCache | None
) -> str:
    """``promtool check rules`` on every rule file the cache holds no pass of by this promtool
    (each file is checked on its own, so each is keyed by its own bytes: an edit to one
    service rechecks one file); the summary line, or ``ValidationFailed``."""
    keys = {name: _rule_check_key(folder, name, cache) for name in rules}
    due = [name for name in rules if not (cache and cache.passed(keys[name]))]
    if due:
        checked = promtool.check_rules(due, folder)
        if not checked.ok:
            raise ValidationFailed(
                _map_rule_errors(checked.messages, result), "promtool check rules failed:"
            )
    if cache is not None:
        for name in due:
            cache.remember(keys[name])
        if not due:
            return f"promtool check rules: {len(rules)} file(s) ok ({RECORDED})"
        if len(due) < len(rules):
            return (
                f"promtool check rules: {len(rules)} file(s) ok "
                f"({len(rules) - len(due)} of them {RECORDED})"
            )
    return f"promtool check rules: {len(rules)} file(s) ok"


def _rule_check_key(folder: Path, name: str, cache: TestCache | None) -> Key | None:
    if cache is None:
        return None
    try:
        data = (folder / name).read_bytes()
    except OSError:
        return None
    return cache.key_of(cache.promtool_version, "check rules", [(name, data)])


def _validate_tests(
    folder: Path, result: BuildResult, tests: list[str], jobs: int | None,
    cache: TestCache | None, steps: Progress, junit: Path | None = None,
) -> list[str]:  # fmt: skip
    """``promtool test rules`` on the test files, as units (``rulegen.pipeline.
    promtool_runs``: each case against the rules it observes, one run per distinct unit or
    shape, none for a unit the cache vouches for); with ``junit``, every file whole, so the
    report holds them all. The summary lines, or ``ValidationFailed``."""
    if junit is not None:
        return _validate_whole_files(folder, result, tests, jobs, steps, junit)
    identities = {name: Identity(owner) for name, owner in result.owners.items()}
    weights = _weights(result, tests)
    loads = {name: [rule_file] for name, rule_file in result.loads.items()}
    report = run_test_files(
        folder, tests, cache, identities, weights.__getitem__, jobs, steps, TEST_STEP, loads
    )
    if not report.ok:
        _raise_test_failures(list(report.failures), report.silent, result)
    line = f"promtool test rules: {len(tests)} file(s) passed"
    if cache:
        line += f" ({report.files_reused} unchanged since a recorded pass, not rerun)"
    summary = [line]
    if report.cached or report.shared:
        summary.append(
            f"promtool test units: {report.units - report.cached - report.shared} of "
            f"{report.units} run ({report.cached} passed before, recorded in the test cache; "
            f"{report.shared} the same as another after renaming the service)"
        )
    if report.unrecorded:
        summary.append(f"warning: test cache not updated: {report.unrecorded[0]}")
    return summary


def _validate_whole_files(
    folder: Path, result: BuildResult, tests: list[str], jobs: int | None,
    steps: Progress, junit: Path,
) -> list[str]:  # fmt: skip
    """Every test file run whole, its JUnit report merged into ``junit`` (written before
    any failure is raised)."""
    due = sorted(tests, key=result.test_cost, reverse=True)
    with tempfile.TemporaryDirectory(prefix="rulegen-junit-") as reports:
        runs = _run_tests(folder, due, _weights(result, due), jobs, steps, Path(reports))
        write_junit(junit, [Path(reports, _report_name(name)) for name in sorted(due)])
    if any(not run.ok for run in runs):
        silent = [name for name, run in zip(due, runs, strict=True)
                  if not run.ok and not run.failures]  # fmt: skip
        _raise_test_failures([f for run in runs if not run.ok for f in run.failures],
                             silent, result)  # fmt: skip
    return [f"promtool test rules: {len(tests)} file(s) passed"]


def _raise_test_failures(
    failures: list[promtool.FailedAssertion], silent: Sequence[str], result: BuildResult
) -> None:
    found, report = _map_test_errors(failures, result)
    found += [  # a failure promtool printed no report for (text shows none either)
        Diagnostic(result.sources.get(name, (name,))[0], 0, 0, FieldPath(),
                   "promtool test rules failed without a report", codes.PROMTOOL_TEST)
        for name in silent
    ]  # fmt: skip
    raise ValidationFailed(found, "promtool test rules failed:", report=report)


def _weights(result: BuildResult, names: Sequence[str]) -> dict[str, float]:
    """Each test file's share of the work, for the time left: its cost estimate, or the
    average estimate for a file without one (a user's own tests)."""
    costs = [result.test_cost(n) for n in names]
    known = [c for c in costs if c > 0]
    average = sum(known) / len(known) if known else 1.0
    return {n: float(c) if c > 0 else average for n, c in zip(names, costs, strict=True)}


def _run_tests(
    folder: Path, due: Sequence[str], weights: Mapping[str, float], jobs: int | None,
    steps: Progress, reports: Path | None = None,
) -> list[promtool.ToolResult]:  # fmt: skip
    """One ``promtool test rules`` per file, up to ``jobs`` at once; the results in the order
    of ``due``, each file reported with its time as it finishes (and its JUnit report
    written into ``reports``, when given)."""
    steps.step(TEST_STEP, total=len(due), weight=sum(weights.values()))
    if not due:
        return []

    def run(name: str) -> tuple[promtool.ToolResult, float]:
        start = time.monotonic()
        report = reports / _report_name(name) if reports is not None else None
        outcome = promtool.run_tests([name], folder, junit=report)
        return outcome, time.monotonic() - start

    workers = max(1, min(len(due), jobs or usable_cpus()))
    with ThreadPoolExecutor(workers) as pool:
        futures: dict[Future[tuple[promtool.ToolResult, float]], str] = {
            pool.submit(run, name): name for name in due
        }
        for future in as_completed(futures):
            name = futures[future]
            steps.advance(name, future.result()[1], weights[name])
    return [future.result()[0] for future in futures]


def _groups(result: BuildResult) -> dict[str, RuleGroup]:
    return {g.name: g for s in result.services for g in s.groups}


def _map_rule_errors(messages: Sequence[str], result: BuildResult) -> list[Diagnostic]:
    """promtool's ``check rules`` errors, each at the spec position of its rule when the
    line names a generated group (else the line as promtool wrote it, with no position)."""
    groups = _groups(result)
    out = []
    for line in messages:
        parsed = promtool.parse_rule_error(line)
        if parsed is None or parsed[1] not in groups:
            out.append(Diagnostic("", 0, 0, FieldPath(), line, codes.PROMTOOL_CHECK))
            continue
        _, group, index, message = parsed
        origin = groups[group].rules[index - 1].origin
        out.append(origin.diagnostic(f"promtool: {message}", codes.PROMTOOL_CHECK))
    return out


def _map_test_errors(
    failures: Sequence[promtool.FailedAssertion], result: BuildResult
) -> tuple[list[Diagnostic], list[str]]:
    """One diagnostic per failed assertion, at the spec position of what it tests when
    rulegen generated it (a custom alert's example, else the alert), else at the input the
    test file comes from; and the text report: each file's ``FAILED:`` block as promtool
    wrote it, each assertion under a line naming that position."""
    origins = {
        rule.alert: rule.origin
        for g in _groups(result).values()
        for rule in g.rules
        if hasattr(rule, "alert")
    }
    cases = {name: origin for s in result.services for name, origin in s.case_origins}
    found: list[Diagnostic] = []
    report: list[str] = []
    shown = None
    for failure in failures:
        if failure.file and failure.file != shown:
            report.append(f"{failure.file}: FAILED:")
            shown = failure.file
        origin = _case_origin(failure, cases) or origins.get(failure.alertname or "")
        if origin is not None:
            report.append(_where(origin).rstrip())
        report.extend(f"  {line}" for line in failure.lines)
        message = textwrap.dedent("\n".join(failure.lines)).strip()
        if origin is not None:
            found.append(origin.diagnostic(message, codes.PROMTOOL_TEST))
        else:
            source = result.sources.get(failure.file, (failure.file,))[0]
            found.append(Diagnostic(source, 0, 0, FieldPath(), message, codes.PROMTOOL_TEST))
    return found, report


def _case_origin(failure: promtool.FailedAssertion, cases: Mapping[str, Origin]) -> Origin | None:
    """The spec position of the generated test case a failed assertion belongs to (its
    ``name:`` line; a shared run's name joins its cases' with `` | ``), when known."""
    for line in failure.lines:
        text = line.strip()
        if text.startswith("name: "):
            for name in text.removeprefix("name: ").rstrip(",").split(" | "):
                if name in cases:
                    return cases[name]
    return None


def _where(origin: Origin) -> str:
    """``FILE:LINE:COL: path: `` of a position, the prefix of a mapped line."""
    return f"{origin.where()}: {origin.path}: "
