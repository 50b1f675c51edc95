"""The pipeline, top to bottom: find specs → load → resolve → model → render → validate → write.

Why: one readable function per stage, so the CLI stays a thin shell and the library API
(``load_specs``, ``build``, ``validate``) is usable on its own.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from rulegen import units
from rulegen.catalog import Catalog
from rulegen.dashboard.build import service_dashboard
from rulegen.diagnosis.rules import diagnosis_group
from rulegen.diagnosis.tests import diagnosis_tests
from rulegen.errors import Diagnostic, SpecError, UsageError, ValidationFailed
from rulegen.groups import build_groups
from rulegen.model import Explanation, Origin, RuleGroup, ServiceOutput, SLOOutput, TestCase
from rulegen.output import dump_json, dump_yaml
from rulegen.render.grafana import dashboard_json, provisioning
from rulegen.render.mimir import mimir_namespace_file
from rulegen.render.operator import prometheus_rule, service_groups
from rulegen.render.prometheus import rule_file
from rulegen.render.tests import tests_file
from rulegen.render.thanos import thanos_rule_file
from rulegen.resolve import ResolvedSpec, resolve_spec
from rulegen.routing import output as routing_files
from rulegen.routing.load import LoadedRouting, is_routing_file, load_routing
from rulegen.routing.output import routing_output
from rulegen.slo.rules import slo_group
from rulegen.slo.series import SLOTestError
from rulegen.slo.tests import history_step, slo_tests
from rulegen.spec.loader import LoadError, load_file
from rulegen.spec.locate import pydantic_diagnostics
from rulegen.spec.models import spec_model
from rulegen.synth import build_tests
from rulegen.validate import promtool
from rulegen.validate.targets import check_targets

OWNED = ("prometheus", "tests", "alertmanager", "grafana", "kubernetes", "thanos", "mimir")
# Rule targets besides the plain rule files (always written: the tests run on them).
TARGETS = ("prometheus", "operator", "thanos", "mimir")
# promtool evaluates every rule of the file at every step of every test: about a million rule
# evaluations a minute on one core; this keeps a build well inside promtool's timeout.
MAX_TEST_COST = 5_000_000


@dataclass(frozen=True)
class SpecInputs:
    """The spec files of a build and the user test files found next to them."""

    specs: tuple[Path, ...]
    user_tests: tuple[Path, ...]


@dataclass
class BuildResult:
    """Everything a build would write, by path relative to the output folder."""

    services: list[ServiceOutput]
    files: dict[str, str] = field(default_factory=dict)
    routing_cases: list[tuple[str, Mapping[str, str], tuple[str, ...]]] = field(
        default_factory=list
    )
    reports: list[str] = field(default_factory=list)
    targets: tuple[str, ...] = ("prometheus",)

    def test_cost(self, name: str) -> int:
        """Rule evaluations promtool will do for a test file (0 for a user's own tests)."""
        for service in self.services:
            if name == f"tests/{service.service}.test.yml":
                rules = sum(len(g.rules) for g in service.groups)
                return rules * sum(t.evaluations for t in service.tests)
            for slo in service.slos:
                stem = f"tests/{service.service}.slo.{slo.name}"
                cases = {
                    f"{stem}.test.yml": slo.tests,
                    f"{stem}.history.test.yml": slo.history_tests,
                }
                if name in cases:
                    return len(slo.group.rules) * sum(t.evaluations for t in cases[name])
        return 0


def display(path: Path) -> str:
    """A stable, relative name for a path (the header and diagnostics use it)."""
    relative = os.path.relpath(path.resolve(), Path.cwd().resolve())
    return Path(relative).as_posix() if not relative.startswith("..") else path.as_posix()


def discover(paths: Sequence[Path]) -> SpecInputs:
    """Spec files named directly, or every ``*.yaml``/``*.yml`` directly inside a folder."""
    specs: list[Path] = []
    user_tests: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(
                p for p in path.iterdir() if p.is_file() and p.suffix in (".yaml", ".yml")
            )
            if not found:
                raise UsageError(
                    f"{display(path)}: no spec files (*.yaml, *.yml) in this directory"
                )
            specs.extend(found)
            tests = path / "tests"
            if tests.is_dir():
                user_tests.extend(
                    sorted(p for p in tests.iterdir() if p.suffix in (".yaml", ".yml"))
                )
        elif path.is_file():
            specs.append(path)
        else:
            raise UsageError(f"{display(path)}: no such file or directory")
    return SpecInputs(tuple(dict.fromkeys(specs)), tuple(user_tests))


@dataclass
class Loaded:
    """Every input file, resolved: the service specs and the one routing section."""

    specs: list[ResolvedSpec]
    routing: LoadedRouting | None = None


def load_specs(files: Sequence[Path], catalog: Catalog) -> list[ResolvedSpec]:
    """Load, check and resolve every service spec (a routing file is checked, then skipped)."""
    return load_inputs(files, catalog).specs


def load_inputs(files: Sequence[Path], catalog: Catalog) -> Loaded:
    """Load, check and resolve every input file; all errors of all files are raised together."""
    model = spec_model(catalog)
    diagnostics: list[Diagnostic] = []
    resolved: list[ResolvedSpec] = []
    routing: LoadedRouting | None = None
    services: dict[str, str] = {}
    for path in files:
        name = display(path)
        try:
            doc = load_file(path, name)
        except LoadError as exc:
            diagnostics.append(exc.diagnostic)
            continue
        if not isinstance(doc.data, dict):
            diagnostics.append(doc.positions.diag((), "a spec must be a YAML mapping"))
            continue
        if is_routing_file(doc.data):
            found, problems = load_routing(path, doc, routing)
            diagnostics.extend(problems)
            routing = routing or found
            continue
        try:
            spec = model.model_validate(doc.data)
        except ValidationError as exc:
            diagnostics.extend(pydantic_diagnostics(exc, doc.positions, doc.data))
            continue
        if spec.service in services:
            diagnostics.append(
                doc.positions.diag(
                    ("service",),
                    f"service {spec.service!r} is already defined at {services[spec.service]}",
                )
            )
            continue
        line, col = doc.positions.at(("service",))
        services[spec.service] = f"{name}:{line}:{col}"
        result, problems = resolve_spec(spec, doc.positions, catalog)
        diagnostics.extend(problems)
        if result is not None:
            resolved.append(result)
    if diagnostics:
        raise SpecError(diagnostics)
    return Loaded(resolved, routing)


def build(
    inputs: SpecInputs,
    catalog: Catalog,
    root: Path | None = None,
    targets: Sequence[str] = ("prometheus",),
) -> BuildResult:
    """Resolve the specs and render every output file in memory.

    ``root`` is the folder the headers' spec paths are relative to (the output folder's
    parent, normally the repo root), so the output does not depend on the working directory.
    """
    loaded = load_inputs(inputs.specs, catalog)
    specs = loaded.specs
    result = BuildResult([], targets=tuple(t for t in TARGETS if t in targets))
    diagnostics: list[Diagnostic] = []
    for spec in specs:
        try:
            service = _service_output(spec, catalog)
        except SpecError as exc:
            diagnostics.extend(exc.diagnostics)
            continue
        result.services.append(service)
        source = _header_source(spec.source, root)
        result.files.update(_service_files(service, spec, source))
        result.files[f"grafana/{spec.service}.json"] = dump_json(
            dashboard_json(service_dashboard(spec, source))
        )
    if diagnostics:
        raise SpecError(diagnostics)
    if specs:
        sources = ", ".join(sorted(_header_source(s.source, root) for s in specs))
        result.files["grafana/provisioning.yaml"] = dump_yaml(provisioning(), sources)
        _add_targets(result, specs, root)
    if loaded.routing is not None:
        _add_routing(result, loaded.routing, root)
    for path in inputs.user_tests:
        target = f"tests/{path.name}"
        if target in result.files:
            raise UsageError(f"{display(path)}: clashes with the generated {target}; rename it")
        result.files[target] = path.read_text("utf-8")
    return result


def _service_output(spec: ResolvedSpec, catalog: Catalog) -> ServiceOutput:
    """Rule groups and tests of one spec; SpecError when a test cannot be built or is too slow."""
    groups = build_groups(spec, catalog.families)
    tests = build_tests(spec)
    if spec.diagnoses:
        groups += (diagnosis_group(spec.service, _interval(spec), spec.diagnoses),)
        tests += diagnosis_tests(spec.diagnoses, spec.evaluation_interval, spec.scrape_interval)
    if spec.alerts or spec.diagnoses:
        first = (spec.alerts or spec.diagnoses)[0].origin
        _check_cost(groups, tests, Origin(first.file, first.line, first.col, "alerts"))
    slos = []
    for slo in spec.slos:
        group = slo_group(slo)
        try:
            cases, history = slo_tests(slo)
        except SLOTestError as exc:
            origin = slo.origin
            raise SpecError(
                [
                    Diagnostic(
                        origin.file,
                        origin.line,
                        origin.col,
                        origin.path,
                        f"no test can be built: {exc}",
                    )
                ]
            ) from None
        _check_cost((group,), cases + history, slo.origin)
        slos.append(
            SLOOutput(
                slo.name, units.format_duration(slo.evaluation), group, cases,
                units.format_duration(history_step(slo)), history, slo.group_by,
            )
        )  # fmt: skip
    explanations = tuple(
        Explanation(d.name, d.explains, d.host.label) for d in spec.diagnoses if d.explains
    )
    return ServiceOutput(
        spec.service, spec.source, _interval(spec), groups, tests, slos=tuple(slos),
        explanations=explanations,
    )  # fmt: skip


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
    raise SpecError([Diagnostic(origin.file, origin.line, origin.col, origin.path, message)])


def _service_files(service: ServiceOutput, spec: ResolvedSpec, source: str) -> dict[str, str]:
    """Output files of one service: its rules and tests, and one pair per SLO.

    Why one file pair per SLO: an SLO's tests replay days of history, and promtool evaluates
    every group of a test's rule files at every step; alone, an SLO's tests take seconds.
    """
    files: dict[str, str] = {}
    if service.groups:
        rules_name = f"prometheus/{spec.service}.rules.yml"
        files[rules_name] = dump_yaml(rule_file(service.groups), source)
        if service.tests:
            data = tests_file(f"../{rules_name}", service.evaluation_interval, service.tests)
            files[f"tests/{spec.service}.test.yml"] = dump_yaml(data, source)
    for slo in service.slos:
        rules_name = f"prometheus/{spec.service}.slo.{slo.name}.rules.yml"
        files[rules_name] = dump_yaml(rule_file((slo.group,)), source)
        data = tests_file(f"../{rules_name}", slo.evaluation_interval, slo.tests)
        files[f"tests/{spec.service}.slo.{slo.name}.test.yml"] = dump_yaml(data, source)
        if slo.history_tests:
            data = tests_file(f"../{rules_name}", slo.history_step, slo.history_tests)
            files[f"tests/{spec.service}.slo.{slo.name}.history.test.yml"] = dump_yaml(data, source)
    return files


def _add_targets(result: BuildResult, specs: Sequence[ResolvedSpec], root: Path | None) -> None:
    """The other rule targets asked for: PrometheusRule objects, Thanos and Mimir files."""
    namespaces: dict[str, list[tuple[ResolvedSpec, ServiceOutput]]] = {}
    for spec, service in zip(specs, result.services, strict=True):
        source = _header_source(spec.source, root)
        groups = service_groups(service)
        settings = spec.targets
        if "operator" in result.targets:
            operator = settings.operator
            rule = prometheus_rule(spec.service, groups, operator.namespace, operator.labels)
            result.files[f"kubernetes/{spec.service}.yaml"] = dump_yaml(rule, source)
        if "thanos" in result.targets:
            strategy = settings.thanos.partial_response_strategy
            data, flags = thanos_rule_file(groups, strategy)
            result.files[f"thanos/{spec.service}.rules.yml"] = dump_yaml(data, source)
            result.reports.extend(f"thanos: {f.group}/{f.rule}: {f.reason}" for f in flags)
        namespace = settings.mimir.namespace or spec.service
        namespaces.setdefault(namespace, []).append((spec, service))
    if "mimir" in result.targets:
        for namespace, members in sorted(namespaces.items()):
            label = {s.targets.mimir.grouping_label for s, _ in members}
            if len(label) > 1:
                raise UsageError(
                    f"mimir namespace {namespace}: its services disagree on grouping_label "
                    f"({', '.join(sorted(label))})"
                )
            groups = tuple(g for _, service in members for g in service_groups(service))
            sources = ", ".join(sorted(_header_source(s.source, root) for s, _ in members))
            data = mimir_namespace_file(namespace, groups, label.pop())
            result.files[f"mimir/{namespace}.yaml"] = dump_yaml(data, sources)


def _add_routing(result: BuildResult, loaded: LoadedRouting, root: Path | None) -> None:
    output = routing_output(loaded.routing, loaded.base, result.services)
    source = _header_source(loaded.routing.source, root)
    result.files[routing_files.CONFIG] = dump_yaml(output.config, source)
    result.files[routing_files.TESTS] = dump_yaml(output.tests, source)
    result.routing_cases = output.cases
    result.reports = output.reports


def _header_source(source: str, root: Path | None) -> str:
    if root is None:
        return source
    relative = os.path.relpath(Path(source).resolve(), root.resolve())
    return Path(relative).as_posix() if not relative.startswith("..") else Path(source).name


def _interval(spec: ResolvedSpec) -> str:
    from rulegen.units import format_duration

    return format_duration(spec.evaluation_interval)


def validate(folder: Path, result: BuildResult) -> list[str]:
    """Run promtool on a written output folder; returns a summary, raises on any failure."""
    rules = sorted(name for name in result.files if name.startswith("prometheus/"))
    tests = sorted(name for name in result.files if name.startswith("tests/"))
    checked = promtool.check_rules(rules, folder)
    if not checked.ok:
        raise ValidationFailed(
            ["promtool check rules failed:", *_map_rule_errors(checked.messages, result)]
        )
    summary = [f"{promtool.version()}", f"promtool check rules: {len(rules)} file(s) ok"]
    if tests:
        # One promtool per file, side by side, longest first: an SLO's tests take seconds each.
        tests.sort(key=result.test_cost, reverse=True)
        workers = max(1, min(len(tests), os.cpu_count() or 1))
        with ThreadPoolExecutor(workers) as pool:
            runs = list(pool.map(lambda name: promtool.run_tests([name], folder), tests))
        failures = [m for run in runs for m in run.messages if not run.ok]
        if any(not run.ok for run in runs):
            raise ValidationFailed(
                ["promtool test rules failed:", *_map_test_errors(failures, result)]
            )
        summary.append(f"promtool test rules: {len(tests)} file(s) passed")
    summary.extend(check_targets(result.files))
    if routing_files.CONFIG in result.files:
        summary.extend(routing_files.validate_routing(folder, result.routing_cases))
    summary.extend(f"warning: {report}" for report in result.reports)
    return summary


def _groups(result: BuildResult) -> dict[str, RuleGroup]:
    return {g.name: g for s in result.services for g in s.groups}


def _map_rule_errors(messages: Sequence[str], result: BuildResult) -> list[str]:
    groups = _groups(result)
    out = []
    for line in messages:
        parsed = promtool.parse_rule_error(line)
        if parsed is None or parsed[1] not in groups:
            out.append(f"  {line}")
            continue
        _, group, index, message = parsed
        rule = groups[group].rules[index - 1]
        origin = rule.origin
        out.append(f"{origin.file}:{origin.line}:{origin.col}: {origin.path}: promtool: {message}")
    return out


def _map_test_errors(messages: Sequence[str], result: BuildResult) -> list[str]:
    origins = {
        rule.alert: rule.origin
        for g in _groups(result).values()
        for rule in g.rules
        if hasattr(rule, "alert")
    }
    out = []
    for line in messages:
        match = re.search(r"alertname: ([A-Za-z_][A-Za-z0-9_]*)", line)
        origin = origins.get(match.group(1)) if match else None
        prefix = f"{origin.file}:{origin.line}:{origin.col}: {origin.path}: " if origin else ""
        out.append(f"{prefix}{line.strip()}" if prefix else line)
    return out
