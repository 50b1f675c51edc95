"""Offline lint checks: rules that build and pass their tests, but do not do what was meant.

Why: rulegen knows the intent behind every rule (the signal, its unit, its physical range,
the scrape interval), so it can tell a window that a failed scrape empties, a ``for`` that a
rate window swallows, or a diagnosis that silences a page, before anyone reviews PromQL.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from rulegen import units
from rulegen.alerts.model import ResolvedAlert
from rulegen.diagnosis.model import ResolvedDiagnosis
from rulegen.lint.findings import Finding, Severity
from rulegen.service import ResolvedSpec
from rulegen.slo.model import ResolvedSLO
from rulegen.source.loader import PathKey, Positions

SEVERITY_RANK = {"info": 0, "warning": 1, "critical": 2}
MIN_SCRAPES_PER_WINDOW = 4  # one failed scrape plus ingestion races (Robust Perception)


@dataclass(frozen=True)
class LintTarget:
    """A resolved spec and the positions of its file's values."""

    spec: ResolvedSpec
    positions: Positions


def path_key(text: str) -> PathKey:
    """``alerts[3].labels`` → ``("alerts", 3, "labels")`` (an origin's path, parsed back)."""
    return tuple(
        int(index) if index else name for name, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", text)
    )


def _fmt(seconds: Decimal) -> str:
    return units.format_duration(seconds)


class Reporter:
    """Collects one spec's findings, each at the position of the value it is about."""

    def __init__(self, target: LintTarget) -> None:
        self.positions = target.positions
        self.findings: list[Finding] = []

    def add(self, path: PathKey, check: str, severity: Severity, message: str) -> None:
        line, col = self.positions.at(path)
        self.findings.append(Finding(self.positions.file, line, col, check, severity, message))

    def field(self, base: PathKey, key: str) -> PathKey:
        """``base + key`` when the file has that key, else ``base`` (a default has no line)."""
        return (*base, key) if self.positions.has((*base, key)) else base


def lint_offline(targets: Sequence[LintTarget]) -> list[Finding]:
    """Every offline check on every spec."""
    out: list[Finding] = []
    for target in targets:
        report = Reporter(target)
        spec = target.spec
        for alert in spec.alerts:
            _alert_checks(report, spec, alert)
        for diagnosis in spec.diagnoses:
            _diagnosis_checks(report, spec, diagnosis)
        for slo in spec.slos:
            _slo_checks(report, spec, slo)
        _runbook_check(report, spec)
        _label_conflicts(report, spec)
        out.extend(report.findings)
    return out


def _window_check(
    report: Reporter, spec: ResolvedSpec, path: PathKey, name: str, window: Decimal
) -> None:
    if window and window < MIN_SCRAPES_PER_WINDOW * spec.scrape_interval:
        least = _fmt(MIN_SCRAPES_PER_WINDOW * spec.scrape_interval)
        report.add(
            report.field(path, "window"),
            "rate/window",
            "warning",
            f"{name}: window {_fmt(window)} holds fewer than {MIN_SCRAPES_PER_WINDOW} scrapes at "
            f"scrape_interval {_fmt(spec.scrape_interval)}: one failed scrape leaves rate() "
            f"too few samples (gaps, then false alarms); use at least {least}",
        )


def _for_check(
    report: Reporter, spec: ResolvedSpec, path: PathKey, name: str, for_seconds: Decimal
) -> None:
    interval = spec.evaluation_interval
    if 0 < for_seconds < 2 * interval:
        report.add(
            report.field(path, "for"),
            "for/too-short",
            "warning",
            f"{name}: for {_fmt(for_seconds)} is shorter than two evaluations "
            f"(evaluation_interval {_fmt(interval)}): it behaves as no for at all; use at "
            f"least {_fmt(2 * interval)} or 0s",
        )


def _alert_checks(report: Reporter, spec: ResolvedSpec, alert: ResolvedAlert) -> None:
    path = path_key(alert.origin.path)
    _window_check(report, spec, path, alert.name, alert.window_seconds)
    _for_check(report, spec, path, alert.name, alert.for_seconds)
    signal = alert.signal
    if signal is None or signal.test.settle != "window" or signal.threshold.op != ">":
        return
    top = signal.threshold.max
    if top is None or not alert.for_seconds or not alert.window_seconds:
        return
    # A burst at the signal's maximum makes rate() cross the threshold share of the window
    # in, and stay above it until that share of the window after the burst ends.
    delay = (2 * alert.threshold / top - 1) * alert.window_seconds
    if delay > alert.for_seconds:
        shortest = alert.for_seconds + delay
        full = units.format_human(top, signal.threshold.unit)
        report.add(
            report.field(path, "for"),
            "for/unreachable",
            "warning",
            f"{alert.name}: a burst at {full} must last {_fmt(shortest)} before it fires (the "
            f"{alert.window} window adds {_fmt(delay)} to for {_fmt(alert.for_seconds)}); "
            f"bursts of {_fmt(alert.for_seconds)} to {_fmt(shortest)} never fire: shorten the "
            "window or lower the threshold",
        )


def _diagnosis_checks(report: Reporter, spec: ResolvedSpec, diagnosis: ResolvedDiagnosis) -> None:
    path = path_key(diagnosis.origin.path)
    _window_check(report, spec, path, diagnosis.name, diagnosis.window_seconds)
    _for_check(report, spec, path, diagnosis.name, diagnosis.for_seconds)
    held = {a.name: a for a in spec.alerts if a.name in diagnosis.explains}
    for name, alert in held.items():
        if SEVERITY_RANK[alert.severity] > SEVERITY_RANK[diagnosis.severity]:
            report.add(
                report.field(path, "severity"),
                "label/severity",
                "error",
                f"{diagnosis.name} ({diagnosis.severity}) holds back {name} ({alert.severity}) "
                "on its host: while the diagnosis fires, that page is lost; give the diagnosis "
                f"severity {alert.severity}",
            )


def _slo_checks(report: Reporter, spec: ResolvedSpec, slo: ResolvedSLO) -> None:
    path = path_key(slo.origin.path)
    severities = {a.key: a.severity for a in slo.alerts}
    page, ticket = severities.get("page"), severities.get("ticket")
    if page and ticket and SEVERITY_RANK[ticket] > SEVERITY_RANK[page]:
        report.add(
            (*path, "alerting"),
            "label/severity",
            "warning",
            f"SLO {slo.name}: the ticket ({ticket}) is more severe than the page ({page})",
        )
    for alert in slo.alerts:
        _for_check(report, spec, (*path, "alerting"), f"SLO {slo.name} {alert.key}",
                   alert.for_seconds)  # fmt: skip
    for tier in slo.tiers:
        needed = Decimal(tier.factor.numerator) / Decimal(tier.factor.denominator) * slo.budget
        if needed > Decimal("0.5"):
            report.add(
                path_key(tier.origin.path),
                "slo/unreachable-tier",
                "warning",
                f"SLO {slo.name}: tier {_fmt(tier.long)}/{_fmt(tier.short)} fires only when "
                f"more than {units.literal(needed * 100)}% of events fail (burn rate "
                f"{float(tier.factor):.4g}× a {units.literal(slo.budget * 100)}% budget): a "
                "partial outage never reaches it; use a longer window or a smaller budget share",
            )
    retention = spec.retention
    longest = max((slo.window, *(t.long for t in slo.tiers)))
    if retention is not None and longest > retention:
        report.add(
            report.field(path, "window"),
            "slo/retention",
            "error",
            f"SLO {slo.name}: reads {_fmt(longest)} of history but Prometheus keeps "
            f"{_fmt(retention)} (retention): the SLI and budget silently cover less than "
            "the window",
        )


def _runbook_check(report: Reporter, spec: ResolvedSpec) -> None:
    if any(slo.runbook_url for slo in spec.slos) or any(
        "runbook_url" in dict(a.annotations) for a in spec.alerts
    ):
        return
    critical = [a.name for a in spec.alerts if a.severity == "critical"]
    critical += [d.name for d in spec.diagnoses if d.severity == "critical"]
    critical += [s.alert_name for s in spec.slos if any(a.severity == "critical" for a in s.alerts)]
    total = len(spec.alerts) + len(spec.diagnoses) + len(spec.slos)
    if not total:
        return
    severity: Severity = "warning" if critical else "info"
    pages = f", {len(critical)} of them critical ({', '.join(critical[:3])}…)" if critical else ""
    report.add(
        (),
        "annotation/runbook",
        severity,
        f"no runbook_url: {total} alert(s) reach on-call without a runbook{pages}; set "
        "runbook_url (with {alert} for the alert's name)",
    )


def _label_conflicts(report: Reporter, spec: ResolvedSpec) -> None:
    """A spec label named like a label of the alert's series overwrites it: every series'
    alert then has the same identity, and Alertmanager merges them into one."""
    for alert in spec.alerts:
        if alert.signal is None:
            continue
        path = path_key(alert.origin.path)
        series = set(alert.signal.series_labels())
        for name in sorted(dict(alert.labels).keys() & series):
            where = (*path, "labels", name)
            if not report.positions.has(where):
                where = ("labels", name)
            report.add(
                where,
                "label/conflict",
                "error",
                f"{alert.name}: label {name!r} overwrites the series label of the same name "
                f"({', '.join(sorted(series))}): all its alerts get one identity and "
                "Alertmanager merges them; rename the label",
            )
    for diagnosis in spec.diagnoses:
        keep = (
            {diagnosis.host.label, "model_name"} if diagnosis.by_model else {diagnosis.host.label}
        )
        for name in sorted(dict(diagnosis.labels).keys() & keep):
            report.add(
                (*path_key(diagnosis.origin.path), "labels", name),
                "label/conflict",
                "error",
                f"{diagnosis.name}: label {name!r} overwrites the {name} the diagnosis names",
            )
