"""The pipeline, top to bottom: find specs → load → resolve → model → render → validate → write.

Why: one readable function per stage, so the CLI stays a thin shell and the library API
(``load_specs``, ``build``, ``validate``) is usable on its own.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from rulegen.catalog import Catalog
from rulegen.errors import Diagnostic, SpecError, UsageError, ValidationFailed
from rulegen.model import RuleGroup, ServiceOutput
from rulegen.output import dump_yaml
from rulegen.render.prometheus import rule_file
from rulegen.render.tests import tests_file
from rulegen.resolve import ResolvedSpec, build_groups, resolve_spec
from rulegen.spec.loader import LoadError, load_file
from rulegen.spec.locate import pydantic_diagnostics
from rulegen.spec.models import spec_model
from rulegen.synth import build_tests
from rulegen.validate import promtool

OWNED = ("prometheus", "tests")
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


def load_specs(files: Sequence[Path], catalog: Catalog) -> list[ResolvedSpec]:
    """Load, check and resolve every spec; all errors of all files are raised together."""
    model = spec_model(catalog)
    diagnostics: list[Diagnostic] = []
    resolved: list[ResolvedSpec] = []
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
    return resolved


def build(inputs: SpecInputs, catalog: Catalog, root: Path | None = None) -> BuildResult:
    """Resolve the specs and render every output file in memory.

    ``root`` is the folder the headers' spec paths are relative to (the output folder's
    parent, normally the repo root), so the output does not depend on the working directory.
    """
    specs = load_specs(inputs.specs, catalog)
    result = BuildResult([])
    diagnostics: list[Diagnostic] = []
    for spec in specs:
        groups = build_groups(spec, catalog.families)
        try:
            tests = build_tests(spec)
        except SpecError as exc:
            diagnostics.extend(exc.diagnostics)
            continue
        rules = sum(len(g.rules) for g in groups)
        cost = sum(t.evaluations for t in tests) * rules
        if cost > MAX_TEST_COST:
            message = (
                f"the generated tests would evaluate {rules} rules {cost // rules} times "
                f"(budget {MAX_TEST_COST} rule evaluations, about {MAX_TEST_COST // 10**6} min of "
                "promtool): shorten long windows and for durations, or split the spec"
            )
            first = spec.alerts[0].origin
            diagnostics.append(Diagnostic(first.file, first.line, first.col, "alerts", message))
            continue
        service = ServiceOutput(spec.service, spec.source, _interval(spec), groups, tests)
        result.services.append(service)
        source = _header_source(spec.source, root)
        rules_name = f"prometheus/{spec.service}.rules.yml"
        result.files[rules_name] = dump_yaml(rule_file(groups), source)
        if tests:
            data = tests_file(f"../{rules_name}", service.evaluation_interval, tests)
            result.files[f"tests/{spec.service}.test.yml"] = dump_yaml(data, source)
    if diagnostics:
        raise SpecError(diagnostics)
    for path in inputs.user_tests:
        target = f"tests/{path.name}"
        if target in result.files:
            raise UsageError(f"{display(path)}: clashes with the generated {target}; rename it")
        result.files[target] = path.read_text("utf-8")
    return result


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
        tested = promtool.run_tests(tests, folder)
        if not tested.ok:
            raise ValidationFailed(
                ["promtool test rules failed:", *_map_test_errors(tested.messages, result)]
            )
        summary.append(f"promtool test rules: {len(tests)} file(s) passed")
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
