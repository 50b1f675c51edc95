"""A resolved spec → its dashboard: one panel per alert, showing what the alert evaluates.

Why: an on-call engineer paged by an alert should land on a panel that shows exactly the
quantity the alert compares (the recording it reads, with the same selectors), in the alert's
unit, with the threshold drawn, the ``for`` in the description and the runbook one click away.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from decimal import Decimal

from rulegen import units
from rulegen.alerts.model import ResolvedAlert
from rulegen.alerts.resolve import render_quantity
from rulegen.alerts.rules import record_names
from rulegen.catalog import SignalDef
from rulegen.core import promql
from rulegen.dashboard.model import FILTERS, Dashboard, Panel, Query, Row
from rulegen.diagnosis.model import Evidence, ResolvedDiagnosis
from rulegen.diagnosis.rules import record_names as diagnosis_records
from rulegen.generated import Comparison, Expression, Threshold, Verbatim
from rulegen.pipeline.service import ResolvedSpec
from rulegen.slo.model import ResolvedSLO, Tier
from rulegen.slo.resolve import format_fraction
from rulegen.slo.rules import (
    BUDGET_LEFT,
    COVERAGE,
    CURRENT_BURN,
    INCOMPLETE,
    OBJECTIVE,
    RATIO,
    own_selector,
    window_name,
)
from rulegen.templating import quantile_name

UNITS = {"duration": "s", "percent": "percentunit", "bandwidth": "Bps", "number": "short"}
# Rows in the order an on-call reads them: resources first, then the model server, then edges.
FAMILY_ROWS = {
    "node": "Node",
    "weights": "Model weights",
    "vllm": "vLLM",
    "dcgm": "GPU",
    "grpc": "gRPC",
    "smartctl": "NVMe",
}
# Targets first: with an exporter down, the rows below it are blind.
ROW_ORDER = (
    "Targets",
    "Disk",
    "Network",
    "CPU",
    "Memory",
    "Node",
    "Model weights",
    "vLLM",
    "GPU",
    "gRPC",
    "NVMe",
)
_OP_TEXT = {">": "above", "<": "below", "<=": "at most"}
UID_LIMIT = 40  # Grafana's limit on a dashboard uid


def dashboard_uid(service: str) -> str:
    """A stable uid from the service name (readable when it fits Grafana's 40 characters)."""
    uid = f"rulegen-{service}"
    if len(uid) <= UID_LIMIT:
        return uid
    digest = hashlib.sha256(service.encode()).hexdigest()[:8]
    return f"{uid[: UID_LIMIT - 9]}-{digest}"


def service_dashboard(spec: ResolvedSpec, source: str) -> Dashboard:
    """Rows per signal family, then the diagnoses, then one row per SLO."""
    records = record_names(spec.alerts)
    by_row: dict[str, list[Panel]] = {}
    for alert in spec.alerts:
        if alert.signal is not None:
            panel = _catalog_panel(spec, alert, records)
            by_row.setdefault(_row_of(alert.signal), []).append(panel)
        else:
            by_row.setdefault("Custom", []).append(_custom_panel(alert))
    order = [*ROW_ORDER, *sorted(set(by_row) - {*ROW_ORDER, "Custom"}), "Custom"]
    rows = [Row(title, tuple(by_row[title])) for title in order if title in by_row]
    if spec.diagnoses:
        rows.append(Row("Diagnoses", tuple(_diagnosis_panels(spec.diagnoses))))
    rows.extend(_slo_row(slo) for slo in spec.slos)
    used = {f for row in rows for p in row.panels for q in p.queries for f in _filters_in(q.expr)}
    host = spec.diagnoses[0].host.label if spec.diagnoses else "host"
    names = [("host" if f == "host" else f) for f in FILTERS]
    names[names.index("host")] = host
    filters = tuple(f for f in names if f in used)
    firing = f"ALERTS{{alertstate={promql.quote('firing')}, service={promql.quote(spec.service)}}}"
    return Dashboard(
        dashboard_uid(spec.service), f"{spec.service} (rulegen)", spec.service, source, filters,
        tuple(rows), firing,
    )  # fmt: skip


def _filters_in(expr: str) -> set[str]:
    return set(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)=~"\$\1"', expr))


def _row_of(signal: SignalDef) -> str:
    return signal.row or FAMILY_ROWS.get(signal.family, signal.family.title())


def _filter_matchers(labels: Iterable[str]) -> tuple[promql.Matcher, ...]:
    return tuple(promql.Matcher(name, "=~", f"${name}") for name in labels)


def _legend(labels: Iterable[str]) -> str:
    return " ".join(f"{{{{{name}}}}}" for name in labels)


def _catalog_panel(spec: ResolvedSpec, alert: ResolvedAlert, records: dict[str, str]) -> Panel:
    signal = alert.signal
    compared = alert.condition
    assert signal is not None  # a catalog alert ...
    assert isinstance(compared, Comparison)  # ... compares its quantity with its threshold
    labels = signal.series_labels()
    filters = _filter_matchers(f for f in FILTERS if f in labels)
    if alert.record is not None:
        own = (promql.Matcher("service", "=", spec.service), *filters)
        inner = ", ".join(m.render() for m in own)
        expr = f"{records[alert.name]}{{{inner}}}"
    else:
        expr = render_quantity(alert, filters, spec.host_label)
    limit = compared.threshold
    threshold = units.format_human(_decimal(limit), limit.unit)
    wait = units.format_duration(alert.for_seconds) if alert.for_seconds else "0s"
    window = f" over {alert.window}" if alert.window else ""
    description = (
        f"{signal.about.strip()}\n\n{alert.name} ({alert.severity}) fires when this is "
        f"{_OP_TEXT[compared.op]} {threshold}{window} for {wait} (the red line). "
        "Alert expression:"
    )
    return Panel(
        "timeseries",
        f"{alert.name} ({compared.op} {threshold} for {wait})",
        description,
        UNITS[limit.unit],
        (Query(" ".join(expr.split()), _legend(labels)),),
        (_decimal(limit),),
        _runbook(alert.annotations),
        condition=compared,
    )


def _decimal(threshold: Threshold) -> Decimal:
    """A threshold's exact value as the Decimal a panel draws (a fraction is divided out)."""
    value = threshold.value
    if isinstance(value, Decimal):
        return value
    return Decimal(value.numerator) / Decimal(value.denominator)


def _runbook(annotations: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    url = dict(annotations).get("runbook_url")
    if url is None:
        return ()
    return (("Runbook", url.replace('{{ "{" }}', "{")),)


def _custom_panel(alert: ResolvedAlert) -> Panel:
    """The quantity of a custom alert that compares with a number (its threshold drawn), or
    the whole expression."""
    condition = alert.condition
    assert isinstance(condition, Verbatim)  # a custom alert
    reading, expr = condition.reading, condition.promql
    if reading is not None and isinstance(reading.quantity, Expression):
        expr = reading.quantity.promql
    wait = units.format_duration(alert.for_seconds) if alert.for_seconds else "0s"
    shown = ""
    if reading is not None:
        shown = f" ({reading.op} {units.literal(_decimal(reading.threshold))} for {wait})"
    return Panel(
        "timeseries",
        f"{alert.name}{shown}",
        f"{alert.name} ({alert.severity}, for {wait}) evaluates",
        "short",
        (Query(" ".join(expr.split()), ""),),
        (_decimal(reading.threshold),) if reading is not None else (),
        _runbook(alert.annotations),
        condition=condition,
    )


def _diagnosis_panels(diagnoses: tuple[ResolvedDiagnosis, ...]) -> list[Panel]:
    names = diagnosis_records(diagnoses)
    out = []
    for diagnosis in diagnoses:
        for index, item in enumerate(diagnosis.evidence):
            record = names[(diagnosis.name, item.quantity)]
            out.append(_evidence_panel(diagnosis, item, record, first=index == 0))
    return out


def _evidence_panel(
    diagnosis: ResolvedDiagnosis, item: Evidence, record: str, *, first: bool
) -> Panel:
    host = diagnosis.host.label
    labels = (host, "model_name") if item.recording.by_model else (host,)
    own = (promql.Matcher("service", "=", diagnosis.service), *_filter_matchers(labels))
    selector = f"{record}{{{', '.join(m.render() for m in own)}}}"
    expr = selector
    if item.quantity == "throughput":
        baseline = units.format_duration(diagnosis.baseline_seconds)
        window = units.format_duration(diagnosis.window_seconds)
        expr = f"{selector} / (avg_over_time({selector}[{baseline}] offset {window}) > 0)"
    # one series per faulty GPU: the legend says which GPU and which XID
    shown = (*labels, "gpu", "xid", "fault") if item.quantity == "gpu_health" else labels
    threshold = units.format_human(item.threshold, item.unit)
    short = _SHORT[item.quantity].format(
        quantile=quantile_name(diagnosis.quantile),
        baseline=units.format_duration(diagnosis.baseline_seconds),
    )
    role = "the value of the alert" if first else "evidence"
    wait = units.format_duration(diagnosis.for_seconds) if diagnosis.for_seconds else "0s"
    return Panel(
        "timeseries",
        f"{diagnosis.name}: {short} ({item.op} {threshold})",
        f"{item.about[0].upper()}{item.about[1:]}, per {host}: {role} of {diagnosis.name} "
        f"({diagnosis.severity}), which needs it {_OP_TEXT[item.op]} {threshold} (the red "
        f"line) together with its other evidence for {wait}.",
        UNITS[item.unit],
        (Query(expr, _legend(shown)),),
        (item.threshold,),
        (("Runbook", diagnosis.runbook_url),) if diagnosis.runbook_url else (),
    )


_SHORT = {
    "ttft": "TTFT {quantile}",
    "disk": "busiest disk %util",
    "network": "busiest NIC utilisation",
    "throughput": "tokens/s vs the {baseline} before",
    "gpu": "mean GPU utilisation",
    "waiting": "requests waiting",
    "gpu_health": "new XID code or row remap failure (1) per GPU",
}


def _slo_row(slo: ResolvedSLO) -> Row:
    scope = tuple(slo.group_by)
    filters = _filter_matchers(f for f in FILTERS if f in scope)
    own = (
        promql.Matcher("service", "=", slo.service),
        promql.Matcher("slo", "=", slo.name),
        *filters,
    )
    inner = ", ".join(m.render() for m in own)

    def sel(metric: str) -> str:
        return f"{metric}{{{inner}}}"

    legend = _legend(scope) or slo.name
    window = window_name(slo.window)
    objective = units.literal(slo.objective * 100)
    budget = units.literal(slo.budget)
    left = sel(BUDGET_LEFT)
    seconds = units.literal(slo.window)
    panels = [
        Panel("stat", "Objective", f"The SLO's objective over {window}.", "percentunit",
              (Query(own_selector(slo, OBJECTIVE), ""),), width=4),
        Panel("stat", f"SLI over {window}",
              f"Share of good events over the last {window} (objective {objective}%).",
              "percentunit", (Query(f"1 - {sel(RATIO + window)}", legend),),
              (slo.objective,), width=5),
        Panel("stat", "Error budget left",
              f"Share of the {window} error budget ({budget} of events) not yet spent.",
              "percentunit", (Query(left, legend),), (Decimal(0),), width=5),
        Panel("stat", "Time to exhaustion",
              "Time until the budget is spent at the current burn rate "
              f"({window_name(min((t.short for t in slo.tiers), default=slo.window))}).",
              "s",
              (Query(f"clamp_min({left}, 0) * {seconds} / ({sel(CURRENT_BURN)} > 0)", legend),),
              width=6),
        Panel("stat", "Window recorded",
              f"Share of the {window} window's terms the recordings hold (coverage); below "
              f"100% events are missing from the SLI and the budget ({INCOMPLETE} fires).",
              "percentunit", (Query(own_selector(slo, COVERAGE), ""),), (Decimal(1),),
              width=4),
        Panel("timeseries", "Error budget left",
              f"Error budget left over time; 0 (the red line) means the {window} budget is "
              "spent.", "percentunit", (Query(left, legend),), (Decimal(0),)),
        Panel("timeseries", f"SLI over {window}",
              f"Share of good events over the last {window}; the red line is the objective.",
              "percentunit", (Query(f"1 - {sel(RATIO + window)}", legend),), (slo.objective,)),
    ]  # fmt: skip
    # every tier window has an error-ratio recording (``ratio_windows``)
    panels.extend(_tier_panel(slo, tier, sel, budget, legend) for tier in slo.tiers)
    return Row(f"SLO {slo.name} ({objective}% over {window})", tuple(panels))


def _tier_panel(
    slo: ResolvedSLO, tier: Tier, sel: Callable[[str], str], budget: str, legend: str
) -> Panel:
    long, short = window_name(tier.long), window_name(tier.short)
    factor = format_fraction(tier.factor)
    alert = next(a for a in slo.alerts if tier in a.tiers)
    fires = f"{slo.alert_name} ({alert.severity}) fires while both are above it"
    prefix = f"{legend} " if legend != slo.name else ""
    return Panel(
        "timeseries",
        f"Burn rate {long}/{short} ({tier.alert} above {_factor(tier)}×)",
        f"Error ratio over {long} and {short} divided by the budget ({budget}): 1× spends the "
        f"budget exactly over the SLO window. The red line is this tier's factor {factor}; "
        f"{fires}.",
        "suffix:×",
        (
            Query(f"{sel(RATIO + long)} / {budget}", f"{prefix}{long}"),
            Query(f"{sel(RATIO + short)} / {budget}", f"{prefix}{short}"),
        ),
        (Decimal(tier.factor.numerator) / Decimal(tier.factor.denominator),),
        (("Runbook", slo.runbook_url.replace("{alert}", slo.alert_name)),)
        if slo.runbook_url
        else (),
    )


def _factor(tier: Tier) -> str:
    text = format_fraction(tier.factor)
    return text if not text.startswith("(") else f"{float(tier.factor):.4g}"
