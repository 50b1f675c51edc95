"""``rulegen import sloth``: Sloth ``prometheus/v1`` specs, ``sloth.slok.dev/v1``
``PrometheusServiceLevel`` objects and ``AlertWindows`` catalogs → rulegen SLOs.

What maps: the service and its labels, each SLO's name, objective (Sloth's ``99.9`` is a
percentage), description and labels; an events SLI whose queries are exactly
``sum(rate(SELECTOR[{{.window}}]))`` (``by`` allowed) becomes a ratio SLI, and Sloth's latency
idiom (``X_count`` minus ``X_bucket{le=…}``) a latency SLI; a raw ``error_ratio_query`` only
when it is such an events ratio; the alert name and labels, the page and ticket switches and
severities. Sloth takes the SLO period from the command line (``--default-slo-period``, 30d);
an ``AlertWindows`` file among the inputs gives the period and the windows, which become
``tiers`` unless they are rulegen's defaults (Sloth's google-30d and google-28d catalogs are
the Workbook's, and so are rulegen's defaults). Everything else is refused with its line.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

from rulegen.importer import slo_common as common
from rulegen.importer.model import FieldPath, ImportOptions, ImportResult
from rulegen.importer.slo_common import Burn, Services, Source

TOOL = "Sloth"
DEFAULT_PERIOD = Fraction(30 * 86400)
_RUNBOOK_KEYS = ("runbook_url", "runbook")
# Sloth's field names in the prometheus/v1 file format and in the Kubernetes object.
_SNAKE = {
    "error_query": "error_query", "total_query": "total_query",
    "error_ratio_query": "error_ratio_query", "page_alert": "page_alert",
    "ticket_alert": "ticket_alert",
}  # fmt: skip
_CAMEL = {
    "error_query": "errorQuery", "total_query": "totalQuery",
    "error_ratio_query": "errorRatioQuery", "page_alert": "pageAlert",
    "ticket_alert": "ticketAlert",
}  # fmt: skip


def import_files(files: Sequence[Path], options: ImportOptions) -> ImportResult:
    """Map every Sloth document of ``files`` (see the module's docstring)."""
    result = ImportResult()
    services = Services(result, options)
    specs: list[tuple[Source, dict[str, Any], FieldPath, dict[str, str]]] = []
    windows: list[tuple[Source, dict[str, Any]]] = []
    for path in files:
        name, documents = common.read_documents(path)
        for document in documents:
            src = Source(name, document, result)
            data = document.data
            if not isinstance(data, dict):
                src.refuse((), "not a mapping: not a Sloth document")
            elif data.get("version") == "prometheus/v1":
                src.known(data, (), ("version", "service", "labels", "slos"), TOOL)
                specs.append((src, data, (), _SNAKE))
            elif data.get("apiVersion") == "sloth.slok.dev/v1" and data.get("kind") in (
                "PrometheusServiceLevel", "AlertWindows",
            ):  # fmt: skip
                src.known(data, (), ("apiVersion", "kind", "metadata", "spec"), TOOL)
                spec = src.mapping(data, (), "spec")
                if spec is None:
                    continue
                if data["kind"] == "AlertWindows":
                    windows.append((src, spec))
                else:
                    src.known(spec, ("spec",), ("service", "labels", "slos"), TOOL)
                    specs.append((src, spec, ("spec",), _CAMEL))
            else:
                key = "apiVersion" if "apiVersion" in data else "version"
                src.refuse(
                    (key,) if key in data else (),
                    "not a Sloth document (version: prometheus/v1, or apiVersion: "
                    "sloth.slok.dev/v1 with kind PrometheusServiceLevel or AlertWindows)",
                )
    period, burns, windows_note = _windows(windows)
    for src, spec, base, names in specs:
        _service(services, src, spec, base, names, period, burns, windows_note)
    services.finish()
    return result


def _windows(
    found: list[tuple[Source, dict[str, Any]]],
) -> tuple[Fraction, list[Burn] | None, str]:
    """The SLO period and burn windows: Sloth's defaults, or the one AlertWindows given."""
    if not found:
        return DEFAULT_PERIOD, None, "Sloth's default period (30d) and windows (google-30d)"
    for src, _spec in found[1:]:
        src.refuse(("spec",), "a second AlertWindows: Sloth generates with one catalog")
    src, spec = found[0]
    base: FieldPath = ("spec",)
    src.known(spec, base, ("sloPeriod", "page", "ticket"), TOOL)
    period = common.window_seconds(spec.get("sloPeriod"))
    if period is None:
        src.refuse((*base, "sloPeriod"), "must be a duration like 30d; windows not used")
        return DEFAULT_PERIOD, None, "Sloth's default period (30d) and windows (google-30d)"
    burns: list[Burn] = []
    for alert in ("page", "ticket"):
        block = src.mapping(spec, base, alert)
        if not block:
            src.refuse((*base, alert), "missing: windows not used")
            return Fraction(period), None, "Sloth's default windows"
        src.known(block, (*base, alert), ("quick", "slow"), TOOL)
        for speed in ("quick", "slow"):
            where = (*base, alert, speed)
            entry = src.mapping(block, (*base, alert), speed)
            if not entry:
                src.refuse(where, "missing: windows not used")
                return Fraction(period), None, "Sloth's default windows"
            src.known(entry, where, ("errorBudgetPercent", "shortWindow", "longWindow"), TOOL)
            share = common.decimal_of(entry.get("errorBudgetPercent"))
            long = common.window_seconds(entry.get("longWindow"))
            short = common.window_seconds(entry.get("shortWindow"))
            if share is None or not 0 < share <= 100 or long is None or short is None:
                src.refuse(where, "needs errorBudgetPercent (0, 100] and two windows")
                return Fraction(period), None, "Sloth's default windows"
            burns.append(Burn(alert, Fraction(long), Fraction(short), Fraction(share) / 100))
    shown = common.duration_text(period)
    return Fraction(period), burns, f"Sloth's AlertWindows for {shown} ({src.where(base)})"


def _service(
    services: Services, src: Source, spec: dict[str, Any], base: FieldPath,
    names: dict[str, str], period: Fraction, burns: list[Burn] | None, windows_note: str,
) -> None:  # fmt: skip
    service = services.name(src, spec.get("service"), (*base, "service"), "Sloth's service")
    if service is None:
        return
    for key, value in src.labels(spec, base, "labels").items():
        if services.set_top(service, src, ("labels", key), value, (*base, "labels", key)):
            services.comment(service, src, ("labels",), "Sloth's labels: on every alert")
    slos = spec.get("slos")
    if not isinstance(slos, list) or not slos:
        src.refuse((*base, "slos"), "must be a non-empty list of SLOs")
        return
    for index, slo in enumerate(slos):
        path = (*base, "slos", index)
        if not isinstance(slo, dict):
            src.refuse(path, "must be a mapping")
            continue
        _slo(services, service, src, slo, path, names, period, burns, windows_note)


def _slo(
    services: Services, service: str, src: Source, slo: dict[str, Any], path: FieldPath,
    names: dict[str, str], period: Fraction, burns: list[Burn] | None, windows_note: str,
) -> None:  # fmt: skip
    src.known(slo, path, ("name", "objective", "description", "labels", "sli", "alerting"), TOOL)
    name = common.slo_name_of(src, slo.get("name"), (*path, "name"))
    objective, why = common.objective(slo.get("objective"), percent=True)
    if objective is None:
        src.refuse((*path, "objective"), f"{why}; SLO not imported")
    mapped = _sli(src, slo, (*path, "sli"), names)
    if name is None or objective is None or mapped is None:
        if name is not None:
            src.refuse(path, f"SLO {name} not imported: its objective or SLI does not map")
        return
    comments: dict[FieldPath, str] = {
        ("objective",): f"Sloth: objective: {slo['objective']} (a percentage)",
        ("window",): windows_note,
    }
    out: dict[str, Any] = {"name": name, "objective": objective}
    out["window"] = common.duration_text(period)
    description = src.text(slo, path, "description")
    if description is not None:
        out["description"] = description
    out["sli"] = mapped.sli
    comments[("sli",)] = f"Sloth: {mapped.note}" if mapped.note else (
        "Sloth's sum(rate(SELECTOR[{{.window}}])) queries: their selectors; rulegen adds increase()"
    )  # fmt: skip
    if mapped.group_by:
        out["group_by"] = list(mapped.group_by)
        comments[("group_by",)] = "Sloth's sum by (…): one SLO per value"
    labels = src.labels(slo, path, "labels")
    if labels:
        src.adapt((*path, "labels"), "Sloth's SLO labels go on its alerts (alerting.labels)")
    alerting = _alerting(services, service, src, slo, path, names, labels, mapped.group_by)
    if alerting:
        out["alerting"] = alerting
        comments.update(_alerting_comments(alerting))
    chosen = common.tiers(burns, period, objective)
    for burn in chosen.never:
        src.adapt((*path, "objective"), common.never_text(burn, period, objective))
    if chosen.tiers is not None:
        out["tiers"] = chosen.tiers
        comments[("tiers",)] = f"{windows_note}: errorBudgetPercent → budget" + (
            " (rounded up)" if chosen.rounded else ""
        )
    services.add_slo(service, src, out, comments, path)


def _sli(
    src: Source, slo: dict[str, Any], path: FieldPath, names: dict[str, str]
) -> common.SLIMapping | None:
    sli = src.mapping(slo, path[:-1], "sli")
    if not sli:
        src.refuse(path, "missing: an SLO needs an SLI")
        return None
    src.known(sli, path, ("events", "raw", "plugin"), TOOL)
    if "plugin" in sli:
        plugin = sli["plugin"] if isinstance(sli["plugin"], dict) else {}
        named = f" {str(plugin['id'])[:80]!r}" if plugin.get("id") else ""
        src.refuse(
            (*path, "plugin"),
            f"the Sloth SLI plugin{named} writes its queries in Go code rulegen cannot read: "
            "write its queries as sli.events or sli.raw",
        )
        return None
    found = _raw(src, sli, path, names) if "raw" in sli else _events(src, sli, path, names)
    if found is None:
        return None
    where, mapped = found
    problem = common.group_by_problem(mapped.group_by)
    if problem is not None:
        src.refuse(where, problem)
        return None
    if "latency" in mapped.sli:
        src.adapt(where, f"a latency SLI: {mapped.note}")
    return mapped


def _raw(
    src: Source, sli: dict[str, Any], path: FieldPath, names: dict[str, str]
) -> tuple[FieldPath, common.SLIMapping] | None:
    raw = src.mapping(sli, path, "raw")
    if raw is None:
        return None
    key = names["error_ratio_query"]
    where = (*path, "raw", key)
    src.known(raw, (*path, "raw"), (key,), TOOL)
    query = src.text(raw, (*path, "raw"), key)
    if query is None:
        src.refuse(where, "missing")
        return None
    parts = common.split_top(query, "/")
    mapped = common.events_sli(*parts) if parts else "not errors / total"
    if isinstance(mapped, str):
        expression = common.expression_sli("raw", {"error_ratio": query})
        if isinstance(expression, str):
            src.refuse(where, expression)
            return None
        src.adapt(where, expression.note)
        return where, expression
    src.adapt(where, "the raw error ratio is errors / total of two counters")
    return where, mapped


def _events(
    src: Source, sli: dict[str, Any], path: FieldPath, names: dict[str, str]
) -> tuple[FieldPath, common.SLIMapping] | None:
    block = src.mapping(sli, path, "events")
    if not block:
        src.refuse(path, "needs events (or raw): no SLI")
        return None
    where = (*path, "events")
    errors_key, total_key = names["error_query"], names["total_query"]
    src.known(block, where, (errors_key, total_key), TOOL)
    errors, total = src.text(block, where, errors_key), src.text(block, where, total_key)
    if errors is None or total is None:
        src.refuse(where, f"needs {errors_key} and {total_key}")
        return None
    mapped = common.events_sli(errors, total)
    if isinstance(mapped, str):
        expression = common.expression_sli("events", {"errors": errors, "total": total})
        if isinstance(expression, str):
            src.refuse((*where, errors_key), expression)
            return None
        src.adapt((*where, errors_key), expression.note)
        return (*where, errors_key), expression
    return (*where, errors_key), mapped


def _alerting(
    services: Services, service: str, src: Source, slo: dict[str, Any], path: FieldPath,
    names: dict[str, str], labels: dict[str, str], group_by: tuple[str, ...],
) -> dict[str, Any]:  # fmt: skip
    where = (*path, "alerting")
    alerting = src.mapping(slo, path, "alerting") or {}
    src.known(
        alerting, where,
        ("name", "labels", "annotations", names["page_alert"], names["ticket_alert"]), TOOL,
    )  # fmt: skip
    name = src.text(alerting, where, "name")
    if name is not None and not common.is_alert_name(name):
        src.refuse((*where, "name"), "not a Prometheus alert name; rulegen's default used")
        name = None
    merged = dict(labels)
    merged.update(src.labels(alerting, where, "labels"))
    if "severity" in merged:
        src.refuse((*where, "labels", "severity"), "rulegen sets severity per alert (page, ticket)")
        del merged["severity"]
    annotations = src.mapping(alerting, where, "annotations") or {}
    shared = _annotations(services, service, src, annotations, (*where, "annotations"))
    switches: dict[str, dict[str, Any]] = {}
    for kind in ("page", "ticket"):
        key = names[f"{kind}_alert"]
        switches[kind] = _switch(
            src, alerting, where, key, kind, group_by, shared,
            lambda value, at: services.severity(service, src, value, at),
        )  # fmt: skip
    enabled = [k for k in ("page", "ticket") if switches[k].get("enabled", True)]
    if enabled and name is None:
        src.adapt(where, "no alerting.name: rulegen's default ErrorBudgetBurn")
    return common.alerting_block(name, switches["page"], switches["ticket"], merged)


def _alerting_comments(alerting: dict[str, Any]) -> dict[FieldPath, str]:
    """Where the page or ticket has labels or annotations of its own: whose they were."""
    return {
        ("alerting", kind): f"Sloth's {kind} alert labels and annotations: the {kind}'s own"
        for kind in ("page", "ticket")
        if set(alerting.get(kind, {})) & {"labels", "annotations"}
    }


def _annotations(
    services: Services, service: str, src: Source, annotations: dict[str, Any], where: FieldPath
) -> dict[str, str]:
    """The annotations of both alerts: the runbook becomes the spec's ``runbook_url``, the
    others each alert's own (``alerting.page``/``ticket.annotations``)."""
    rest: dict[str, Any] = {}
    for key, value in annotations.items():
        if key in _RUNBOOK_KEYS and isinstance(value, str) and value.strip():
            if services.set_top(service, src, ("runbook_url",), value, (*where, key)):
                src.adapt((*where, key), "the runbook is the spec's runbook_url (every alert)")
            continue
        rest[key] = value
    shared = common.own_annotations(src, rest, where, "alerts")
    for key in shared:
        src.adapt(
            (*where, key),
            "an annotation of both alerts: on the page and on the ticket "
            "(alerting.page.annotations, alerting.ticket.annotations)",
        )
    return shared


def _switch(
    src: Source, alerting: dict[str, Any], where: FieldPath, key: str, kind: str,
    group_by: tuple[str, ...], shared: dict[str, str],
    severity_of: Callable[[str, FieldPath], str | None],
) -> dict[str, Any]:  # fmt: skip
    """The page (or ticket): disabled, its severity, and its own labels and annotations
    (``alerting.<kind>.labels``/``annotations``, over those of both alerts)."""
    block = src.mapping(alerting, where, key) or {}
    here = (*where, key)
    src.known(block, here, ("disable", "labels", "annotations"), TOOL)
    out: dict[str, Any] = {}
    if src.flag(block, here, "disable"):
        out["enabled"] = False
    labels = src.labels(block, here, "labels")
    severity = labels.pop("severity", None)
    if severity is not None:
        chosen = severity_of(severity, (*here, "labels", "severity"))
        if chosen is not None:
            out["severity"] = chosen
    own = common.own_labels(src, labels, (*here, "labels"), group_by, kind)
    notes = src.mapping(block, here, "annotations") or {}
    merged = {**shared, **common.own_annotations(src, notes, (*here, "annotations"), kind)}
    if out.get("enabled", True):
        out.update({k: v for k, v in (("labels", own), ("annotations", merged)) if v})
    return out
