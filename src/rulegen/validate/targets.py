"""Validation of the other rule targets: PrometheusRule objects against the operator's CRD
schema, Thanos and Mimir files with promtool once their extra keys are stripped, vmalert
files with ``vmalert -dryRun``.

Why: each engine loads a different envelope around the same rules; a file one of them would
reject must fail the build, like a rule promtool rejects.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from rulegen.core import diagnostics as codes
from rulegen.errors import Diagnostic, FieldPath, ToolNotFoundError, ValidationFailed
from rulegen.render.victoriametrics import DEFAULT_MAX_QUERY_LEN, long_queries
from rulegen.validate import promtool, vmalert
from rulegen.validate.crd import validate_prometheus_rule

# Keys promtool does not know: Thanos' per-group strategy, Mimir's top-level namespace.
_EXTRA_GROUP_KEYS = ("partial_response_strategy",)
_EXTRA_FILE_KEYS = ("namespace",)


def check_targets(files: Mapping[str, str]) -> list[str]:
    """Summary lines; ``ValidationFailed`` naming the file and field on any rejection."""
    summary: list[str] = []
    kubernetes = sorted(n for n in files if n.startswith("kubernetes/"))
    for name in kubernetes:
        problems = validate_prometheus_rule(yaml.safe_load(files[name]))
        if problems:
            raise ValidationFailed(
                [Diagnostic(name, 0, 0, FieldPath(), p, codes.CRD_SCHEMA) for p in problems],
                f"{name}: rejected by the PrometheusRule CRD schema:",
            )
    if kubernetes:
        summary.append(f"PrometheusRule CRD schema: {len(kubernetes)} object(s) valid")
    others = sorted(n for n in files if n.startswith(("thanos/", "mimir/")))
    if others:
        with tempfile.TemporaryDirectory(prefix="rulegen-targets-") as tmp:
            for name in others:
                path = Path(tmp) / name
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(yaml.safe_dump(_plain(yaml.safe_load(files[name]))), "utf-8")
            checked = promtool.check_rules(others, Path(tmp))
        if not checked.ok:
            raise ValidationFailed(
                [
                    Diagnostic("", 0, 0, FieldPath(), m, codes.PROMTOOL_CHECK)
                    for m in checked.messages
                ],
                "promtool check rules failed on a target file:",
            )
        summary.append(f"promtool check rules: {len(others)} thanos/mimir file(s) ok")
    summary.extend(_check_victoriametrics(files))
    return summary


def _check_victoriametrics(files: Mapping[str, str]) -> list[str]:
    """``vmalert -dryRun`` on the vmalert files (``ToolNotFoundError`` when vmalert is not
    installed: a file nothing checked must not pass for a valid one)."""
    names = sorted(n for n in files if _is_vm_rules(n))
    if not names:
        return []
    with tempfile.TemporaryDirectory(prefix="rulegen-vmalert-") as tmp:
        for name in names:
            path = Path(tmp) / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(files[name], "utf-8")
        checked = vmalert.dry_run(names, Path(tmp))
    if not checked.ok:
        raise ValidationFailed(
            [Diagnostic("", 0, 0, FieldPath(), m, codes.VMALERT_CHECK) for m in checked.messages],
            "vmalert -dryRun failed on a victoriametrics file:",
        )
    return [vmalert.version(), f"vmalert -dryRun: {len(names)} victoriametrics file(s) ok"]


VM_TESTS = "victoriametrics/tests/"


def _is_vm_rules(name: str) -> bool:
    """A vmalert rule file of the target (the tests folder's copies of SLO groups are not
    checked twice)."""
    return name.startswith("victoriametrics/") and not name.startswith(VM_TESTS)


def _is_vm_test(name: str) -> bool:
    """A vmalert-tool test file (the tests folder also holds each SLO's group, which its
    tests load: ``pipeline.vmalert_slo``)."""
    return name.startswith(VM_TESTS) and name.endswith(".test.yml")


def run_vmalert_tests(folder: Path, files: Mapping[str, str], jobs: int = 2) -> list[str]:
    """``vmalert-tool unittest`` on each generated VictoriaMetrics test file in the written
    ``folder`` (``jobs`` at once); ``ValidationFailed`` naming the file and each failed check.
    Without vmalert-tool (VictoriaMetrics before 1.95, such as Debian bookworm's 1.79), or
    with a rule longer than vmalert-tool can evaluate, the files are left unrun with a
    warning: the rule files were checked by ``vmalert -dryRun``."""
    names = sorted(n for n in files if _is_vm_test(n))
    if not names:
        return []
    try:
        vmalert.find_vmalert_tool()
    except ToolNotFoundError as exc:
        return [f"warning: {len(names)} victoriametrics test file(s) not run: {exc}"]
    too_long = _too_long_for_vmalert_tool(files)
    if too_long:
        return [f"warning: {len(names)} victoriametrics test file(s) not run: {too_long}"]
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        results = list(pool.map(lambda name: vmalert.unittest(name, folder), names))
    failed = [
        Diagnostic(name, 0, 0, FieldPath(), message, codes.VMALERT_TEST)
        for name, result in zip(names, results, strict=True)
        if not result.ok
        for message in result.failures or ("failed (vmalert-tool printed no reason)",)
    ]
    if failed:
        raise ValidationFailed(failed, "vmalert-tool unittest failed on a victoriametrics test:")
    return [f"vmalert-tool unittest: {len(names)} victoriametrics test file(s) passed"]


def _too_long_for_vmalert_tool(files: Mapping[str, str]) -> str:
    """Why vmalert-tool cannot run the files (empty: it can): its in-process VictoriaMetrics
    refuses a query longer than the default ``-search.maxQueryLen`` (16384 bytes), and it
    takes no flag to raise it (``flag provided but not defined``)."""
    for name in sorted(n for n in files if _is_vm_rules(n)):
        for group, rule, size in long_queries(yaml.safe_load(files[name]), DEFAULT_MAX_QUERY_LEN):
            return (
                f"{name}: {group}/{rule} is {size} bytes, and vmalert-tool evaluates with "
                f"VictoriaMetrics' default -search.maxQueryLen={DEFAULT_MAX_QUERY_LEN} (it has "
                "no flag to raise it); targets.victoriametrics.max_query_len at its default "
                "keeps every rule within it"
            )
    return ""


def _plain(data: Any) -> Any:
    """A Thanos or Mimir file as a plain Prometheus rule file."""
    plain = {k: v for k, v in data.items() if k not in _EXTRA_FILE_KEYS}
    plain["groups"] = [
        {k: v for k, v in group.items() if k not in _EXTRA_GROUP_KEYS} for group in data["groups"]
    ]
    return plain
