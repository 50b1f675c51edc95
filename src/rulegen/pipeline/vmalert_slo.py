"""The SLOs' generated tests for vmalert: each SLO's scenarios as ``vmalert-tool unittest``
files, predicted for the group vmalert runs.

Why a pair of files per SLO, as for promtool (``<service>.slo.<name>.test.yml`` and
``….history.test.yml``): the long-history scenarios step at the base window, the others at the
group's interval, and vmalert-tool, like promtool, evaluates every group of its rule files at
the file's ``evaluation_interval``.

What differs from the promtool files: the predictions are made for the ``increase()`` form
of the base windows (the one the vmalert file holds, whatever Prometheus version the spec
declares), with MetricsQL's coverage rules (``rulegen.slo.coverage``), and the recordings'
labels and stored values as vmalert and VictoriaMetrics give them back
(``render.vmalert_tests``).

A rule that ``max_query_len`` made read a recording of its group stored
(``render.victoriametrics``: "reads one evaluation late") sees the newest part of its windows
one evaluation late, which the SLO model does not predict; nor does any rule that reads what
such a rule recorded. Their checks are left out of the files, and the build says which rules
they are (``late_notes``): raise ``max_query_len`` to have them inlined, and tested.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from rulegen.core import diagnostics as codes
from rulegen.core.promql import parse_matchers
from rulegen.errors import SpecError
from rulegen.generated import ExprCheck, TestCase
from rulegen.output import dump_yaml
from rulegen.pipeline.service import ResolvedSpec
from rulegen.render.victoriametrics import late_rules
from rulegen.render.vmalert_tests import vmalert_tests_file
from rulegen.slo.model import ResolvedSLO
from rulegen.slo.rules import group_name
from rulegen.slo.series import SLOTestError
from rulegen.slo.testgen import history_step, slo_tests

TESTS_FOLDER = "victoriametrics/tests"
_NAME = re.compile(r"(?<![A-Za-z0-9_:])[a-zA-Z_:][a-zA-Z0-9_:]*(?=\s*\{)")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')


def vmalert_slo(slo: ResolvedSLO, stored_labels: tuple[str, ...] = ()) -> ResolvedSLO:
    """The SLO as vmalert runs it: ``increase()`` base windows (exact in MetricsQL), MetricsQL's
    semantics in its generated tests, the fallbacks keeping the group labels vmalert stores."""
    return replace(slo, left_open=False, metricsql=True, stored_labels=stored_labels)


def slo_tests_stem(service: str, slo: str) -> str:
    """The vmalert-tool test files of one SLO, without ``.test.yml``/``.history.test.yml``."""
    return f"{TESTS_FOLDER}/{service}.slo.{slo}"


@dataclass(frozen=True)
class Late:
    """The rules of one SLO group whose results the SLO model does not predict on vmalert:
    recordings by name, alerts by (name, severity)."""

    recordings: frozenset[str]
    alerts: frozenset[tuple[str, str]]

    def __bool__(self) -> bool:
        return bool(self.recordings or self.alerts)

    def covers(self, check: ExprCheck) -> bool:
        """Whether the check reads one of these rules' results by name. (The zero-traffic
        check that no derived series exists yet selects them by a ``__name__`` regex and
        stays: a rule reading late is absent one evaluation longer, never present sooner.)"""
        names = set(_names(check.expr))
        if names & self.recordings:
            return True
        if "ALERTS" not in names:
            return False
        inner = check.expr.partition("{")[2].rpartition("}")[0]
        pinned = {m.name: m.value for m in parse_matchers(inner)}
        return (pinned.get("alertname", ""), pinned.get("severity", "")) in self.alerts


def late_by_group(data: Mapping[str, Any]) -> dict[str, Late]:
    """Per group of a vmalert file, its rules that read late: those ``max_query_len`` cut,
    and then every rule that reads (stored, at any offset) a recording of one of them."""
    late: dict[str, set[str]] = {}
    alerts: dict[str, set[tuple[str, str]]] = {}
    for group, rule in late_rules(data):
        _mark(rule, late.setdefault(group, set()), alerts.setdefault(group, set()))
    for group in data["groups"]:
        name = str(group["name"])
        if name not in late:
            continue
        changed = True
        while changed:
            changed = False
            for rule in group["rules"]:
                key = _key(rule)
                known = late[name] if "record" in rule else alerts[name]
                if key not in known and set(_names(str(rule["expr"]))) & late[name]:
                    _mark(rule, late[name], alerts[name])
                    changed = True
    return {g: Late(frozenset(late[g]), frozenset(alerts[g])) for g in late}


def _key(rule: Mapping[str, Any]) -> Any:
    if "record" in rule:
        return str(rule["record"])
    return (str(rule["alert"]), str((rule.get("labels") or {}).get("severity", "")))


def _mark(rule: Mapping[str, Any], recordings: set[str], alerts: set[tuple[str, str]]) -> None:
    key = _key(rule)
    if isinstance(key, str):
        recordings.add(key)
    else:
        alerts.add(key)


def _names(expr: str) -> list[str]:
    """The metric names an expression selects (with matchers), string literals left out."""
    return _NAME.findall(_STRING.sub('""', expr))


def slo_test_files(
    spec: ResolvedSpec,
    group_of: Mapping[str, str],
    data: Mapping[str, Any],
    source: str,
) -> tuple[dict[str, str], list[str]]:
    """Each SLO's vmalert-tool test files, and a note per SLO whose late rules' checks were
    left out; ``data`` is the service's vmalert file as written.

    The files of an SLO load its group alone, copied byte for byte from the service's file
    into ``<stem>.rules.yml`` beside them: vmalert-tool evaluates every group of its rule
    files at the group's own interval over the whole test, and the history scenarios span
    weeks, so with the service's file the threshold alerts' 15s groups alone cost minutes of
    CPU per SLO. The SLO's group reads only raw series and its own recordings, so alone it
    computes what it computes in the service's file.
    """
    late = late_by_group(data)
    rule_groups: Sequence[Mapping[str, Any]] = data["groups"]
    labels = spec.targets.victoriametrics.labels
    files: dict[str, str] = {}
    notes: list[str] = []
    for slo in spec.slos:
        model = vmalert_slo(slo)
        try:
            cases, history = slo_tests(model)
        except SLOTestError as exc:
            message = f"no vmalert-tool test can be built: {exc}"
            raise SpecError([slo.origin.diagnostic(message, codes.SPEC_TEST)]) from None
        group = group_name(slo)
        own = late.get(group, Late(frozenset(), frozenset()))
        # SLOs may share an alert name (ErrorBudgetBurn): this SLO's checks are of its group
        groups = {**group_of, slo.alert_name: group}
        if slo.absent is not None:
            groups[slo.absent.name] = group
        stem = slo_tests_stem(spec.service, slo.name)
        own_groups = [g for g in rule_groups if g["name"] == group]
        files[f"{stem}.rules.yml"] = dump_yaml({"groups": own_groups}, source)
        rules = f"{stem.rsplit('/', 1)[1]}.rules.yml"
        for name, interval, chosen in (
            (f"{stem}.test.yml", model.evaluation, cases),
            (f"{stem}.history.test.yml", history_step(model), history),
        ):
            kept = _without(chosen, own, slo.alert_name)
            if kept:
                tests = vmalert_tests_file(rules, interval, kept, groups, labels, recorded=True)
                files[name] = dump_yaml(tests, source)
        if own:
            notes.append(_note(slo, own, spec.targets.victoriametrics.max_query_len))
    return files, notes


def _without(cases: Sequence[TestCase], late: Late, burn: str) -> tuple[TestCase, ...]:
    """The cases with the checks of late rules left out (a case left with none, too), and
    those of the burn-rate alerts' annotations (named ``burn``): their descriptions ask
    ``query`` for the tiers firing and the budget left, which vmalert answers from what it
    stored (one evaluation behind the alert), so only their labels (``ALERTS``) are checked
    here. The absent alert's check (literal annotations) stays."""
    out = []
    for case in cases:
        checks = tuple(c for c in case.expr_checks if not late.covers(c))
        alerts = tuple(c for c in case.alert_checks if c.alertname != burn)
        if checks or alerts:
            out.append(replace(case, expr_checks=checks, alert_checks=alerts))
    return tuple(out)


def _note(slo: ResolvedSLO, late: Late, limit: int) -> str:
    alerts = [f"{name} ({severity})" for name, severity in sorted(late.alerts)]
    rules = ", ".join([*alerts, *sorted(late.recordings)])
    return (
        f"victoriametrics: SLO {slo.name}: {rules} read recordings of their group stored "
        f"(max_query_len={limit}), one evaluation late; their checks are left out of its "
        "vmalert-tool tests (docs/victoriametrics.md#slo-tests)"
    )
