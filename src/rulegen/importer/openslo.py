"""``rulegen import openslo``: OpenSLO ``v1alpha`` and ``v1`` ``SLO`` documents (and the ``v1``
``SLI`` documents they reference) → rulegen SLOs.

What maps: ``spec.service`` (else ``--service``), the SLO's name, description, a rolling time
window, ``Occurrences`` budgeting, each objective's ``target`` (a ratio) or ``targetPercent``,
and a Prometheus ``ratioMetric`` whose queries are counter selectors (``counter: true``) or
``sum(rate(SELECTOR[{{.window}}]))`` (Sloth's OpenSLO dialect): ``bad`` and ``total`` become a
ratio SLI as they are; ``good`` and ``total`` when good is total with exactly one more matcher
(the errors are total with that matcher inverted: exactly the events good leaves out).
Refused with the reason: ``Timeslices``/``RatioTimeslices`` budgeting (rulegen counts events,
not good minutes), calendar windows, ``thresholdMetric`` SLIs (a threshold on one query's value
is not a count of events), other metric sources, and ``alertPolicies`` (rulegen's tiers alert).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

from rulegen.importer import slo_common as common
from rulegen.importer.model import FieldPath, ImportOptions, ImportResult
from rulegen.importer.slo_common import Services, Source
from rulegen.source.loader import LoadedDocument

TOOL = "OpenSLO"
_VERSIONS = ("openslo/v1alpha", "openslo/v1")
_UNITS = {"Second": 1, "Minute": 60, "Hour": 3600, "Day": 86400, "Week": 7 * 86400}
_TIMESLICES = ("Timeslices", "RatioTimeslices")


def import_files(files: Sequence[Path], options: ImportOptions) -> ImportResult:
    """Map every OpenSLO ``SLO`` of ``files`` (see the module's docstring)."""
    result = ImportResult()
    services = Services(result, options)
    slos: list[tuple[Source, dict[str, Any]]] = []
    indicators: dict[str, tuple[Source, dict[str, Any]]] = {}
    for path in files:
        name, documents = common.read_documents(path)
        for document, prefix, data in _objects(documents):
            src = Source(name, document, result, prefix)
            version = data.get("apiVersion") if isinstance(data, dict) else None
            kind = data.get("kind") if isinstance(data, dict) else None
            if version not in _VERSIONS:
                where: FieldPath = ("apiVersion",) if isinstance(data, dict) else ()
                src.refuse(where, "not an OpenSLO document (apiVersion openslo/v1 or v1alpha)")
            elif kind == "SLO":
                slos.append((src, data))
            elif kind == "SLI" and version == "openslo/v1":
                sli_name = (data.get("metadata") or {}).get("name")
                if isinstance(sli_name, str):
                    indicators.setdefault(sli_name, (src, data))
            else:
                src.refuse(("kind",), f"kind {kind!r}: only SLO (and v1 SLI) documents map")
    for src, data in slos:
        _slo_document(services, src, data, indicators)
    services.finish()
    return result


def _objects(
    documents: Sequence[LoadedDocument],
) -> Iterator[tuple[LoadedDocument, FieldPath, Any]]:
    """Each OpenSLO object of a file: every YAML document, and every item of a document that
    is a list of objects (``- apiVersion: openslo/v1 …``, as OpenSLO's SDK writes them)."""
    for document in documents:
        data = document.data
        if isinstance(data, list) and data and all(isinstance(d, dict) for d in data):
            for index, item in enumerate(data):
                yield document, (index,), item
        else:
            yield document, (), data


def _metadata(src: Source, data: dict[str, Any]) -> dict[str, Any]:
    """The object's ``metadata``: its name is the SLO's; its labels and annotations (for
    tools that list SLOs) are noted and left out."""
    metadata = src.mapping(data, (), "metadata") or {}
    src.known(metadata, ("metadata",), ("name", "displayName", "labels", "annotations"), TOOL)
    for key in ("labels", "annotations"):
        if metadata.get(key):
            src.adapt(("metadata", key), f"the OpenSLO object's {key} (for tools that list "
                      "SLOs) are not put on rulegen's alerts; left out")  # fmt: skip
    return metadata


def _slo_document(
    services: Services, src: Source, data: dict[str, Any],
    indicators: dict[str, tuple[Source, dict[str, Any]]],
) -> None:  # fmt: skip
    v1 = data["apiVersion"] == "openslo/v1"
    src.known(data, (), ("apiVersion", "kind", "metadata", "spec"), TOOL)
    metadata = _metadata(src, data)
    spec = src.mapping(data, (), "spec")
    if spec is None:
        return
    base: FieldPath = ("spec",)
    keys = (
        ("service", "description", "indicator", "indicatorRef", "timeWindow", "budgetingMethod",
         "objectives", "alertPolicies")
        if v1
        else ("service", "description", "indicator", "timeWindows", "budgetingMethod",
              "objectives", "alertPolicies")
    )  # fmt: skip
    src.known(spec, base, keys, TOOL)
    name = common.slo_name_of(src, metadata.get("name"), ("metadata", "name"))
    if name is None:
        return
    service = services.name(src, spec.get("service"), (*base, "service"), "spec.service")
    if service is None:
        return
    ok = _budgeting(src, spec, base)
    period = _window(src, spec, base, v1)
    _policies(src, spec, base)
    shared = _indicator(src, spec, base, v1, indicators)
    objectives = spec.get("objectives")
    if not isinstance(objectives, list) or not objectives:
        src.refuse((*base, "objectives"), "must be a non-empty list")
        return
    if not ok or period is None:
        src.refuse(("metadata", "name"), f"SLO {name} not imported: see the refusals of it")
        return
    for index, entry in enumerate(objectives):
        where = (*base, "objectives", index)
        if not isinstance(entry, dict):
            src.refuse(where, "must be a mapping")
            continue
        own = f"{name}-{index}" if len(objectives) > 1 else name
        if len(objectives) > 1:
            src.adapt(where, f"one SLO per objective: {own}")
        _objective(services, service, src, spec, entry, where, own, period, shared, v1)


def _budgeting(src: Source, spec: dict[str, Any], base: FieldPath) -> bool:
    method = spec.get("budgetingMethod", "Occurrences")
    if method == "RatioTimeslices":
        src.refuse(
            (*base, "budgetingMethod"),
            f"{method}: the SLI is the mean of the slices' ratios, which no event count "
            "gives; SLO not imported",
        )
        return False
    if method not in ("Occurrences", "Timeslices"):
        src.refuse((*base, "budgetingMethod"), f"unknown budgeting method {method!r:.60}")
        return False
    return True


def _policies(src: Source, spec: dict[str, Any], base: FieldPath) -> None:
    policies = spec.get("alertPolicies") or []
    if not isinstance(policies, list):
        src.refuse((*base, "alertPolicies"), "must be a list")
        return
    for index, policy in enumerate(policies):
        src.refuse(
            (*base, "alertPolicies", index),
            f"alert policy {policy!r:.60}: OpenSLO alert policies are not mapped; rulegen's "
            "page and ticket tiers alert instead",
        )


def _window(src: Source, spec: dict[str, Any], base: FieldPath, v1: bool) -> Fraction | None:
    key = "timeWindow" if v1 else "timeWindows"
    windows = spec.get(key)
    if windows is None:
        src.adapt((*base, key), "no time window: rulegen's default 30d")
        return Fraction(30 * 86400)
    if not isinstance(windows, list) or len(windows) != 1 or not isinstance(windows[0], dict):
        src.refuse((*base, key), "must be a list of one time window")
        return None
    window = windows[0]
    where = (*base, key, 0)
    if window.get("isRolling") is False or "calendar" in window:
        src.refuse(where, "a calendar window: rulegen's SLO windows are rolling")
        return None
    if "isRolling" not in window:
        src.adapt(where, "no isRolling and no calendar: a rolling window (as Sloth reads it)")
    if v1:
        src.known(window, where, ("duration", "isRolling"), TOOL)
        seconds = common.window_seconds(window.get("duration"))
    else:
        src.known(window, where, ("count", "unit", "isRolling"), TOOL)
        count, unit = window.get("count"), window.get("unit")
        seconds = None
        if isinstance(count, int) and not isinstance(count, bool) and unit in _UNITS:
            seconds = common.window_seconds(f"{count * _UNITS[str(unit)]}s")
    if seconds is None:
        src.refuse(where, "not a rolling window rulegen knows (like 28d, or count 30 unit Day)")
        return None
    return Fraction(seconds)


def _indicator(
    src: Source, spec: dict[str, Any], base: FieldPath, v1: bool,
    indicators: dict[str, tuple[Source, dict[str, Any]]],
) -> tuple[Source, dict[str, Any], FieldPath] | None:  # fmt: skip
    """The SLO-wide indicator's spec (``None``: each objective names its own, v1alpha)."""
    if "indicatorRef" in spec:
        ref = spec["indicatorRef"]
        if isinstance(ref, str) and ref in indicators:
            other, data = indicators[ref]
            body = data.get("spec")
            return (other, body, ("spec",)) if isinstance(body, dict) else None
        src.refuse((*base, "indicatorRef"), f"no SLI named {ref!r:.60} among the inputs")
        return None
    indicator = spec.get("indicator")
    if not isinstance(indicator, dict):
        return None
    if v1:
        body = indicator.get("spec")
        if isinstance(body, dict):
            return src, body, (*base, "indicator", "spec")
        src.refuse((*base, "indicator"), "needs spec: the SLI")
        return None
    return src, indicator, (*base, "indicator")


def _objective(
    services: Services, service: str, src: Source, spec: dict[str, Any], entry: dict[str, Any],
    where: FieldPath, name: str, period: Fraction,
    shared: tuple[Source, dict[str, Any], FieldPath] | None, v1: bool,
) -> None:  # fmt: skip
    keys = ("displayName", "target", "targetPercent", "ratioMetrics", "op", "value",
            "timeSliceTarget", "timeSliceWindow", "name")  # fmt: skip
    src.known(entry, where, keys, TOOL)
    objective, shown = _target(src, entry, where)
    if objective is None:
        return
    mapped = _objective_sli(src, entry, where, shared, v1)
    if mapped is None:
        src.refuse(where, f"SLO {name} not imported: its SLI does not map")
        return
    budgeted = _budgeted(src, spec, entry, where, mapped)
    if budgeted is None:
        src.refuse(where, f"SLO {name} not imported: its threshold or time slices do not map")
        return
    if THRESHOLD not in mapped.sli:
        for key in ("op", "value"):
            if key in entry:
                src.adapt((*where, key), "a threshold of a ratio SLO: ignored, as OpenSLO "
                          "ignores it")  # fmt: skip
    mapped = budgeted
    out: dict[str, Any] = {"name": name, "objective": objective,
                           "window": common.duration_text(period)}  # fmt: skip
    comments: dict[FieldPath, str] = {("objective",): f"OpenSLO: {shown}"}
    description = spec.get("description")
    if isinstance(description, str) and description.strip():
        out["description"] = description
    _fill(src, spec, where, period, objective, mapped, out, comments)
    services.add_slo(service, src, out, comments, where)


def _budgeted(
    src: Source, spec: dict[str, Any], entry: dict[str, Any], where: FieldPath,
    mapped: common.SLIMapping,
) -> common.SLIMapping | None:  # fmt: skip
    """The objective's SLI as budgeted: a threshold's events (its value every slice, or every
    minute for Occurrences), Timeslices' slices of a ratio, or the ratio itself."""
    timeslices = spec.get("budgetingMethod") == "Timeslices"
    if THRESHOLD in mapped.sli:
        raw = entry.get("timeSliceWindow") if timeslices else "1m"
        seconds = common.window_seconds(raw) if isinstance(raw, str) else None
        if seconds is None:
            src.refuse((*where, "timeSliceWindow"), "must be a duration like 1m (Timeslices)")
            return None
        return _threshold_objective(src, entry, where, mapped, common.duration_text(seconds))
    if timeslices:
        return _timeslices(src, entry, where, mapped)
    return mapped


def _timeslices(
    src: Source, entry: dict[str, Any], where: FieldPath, mapped: common.SLIMapping
) -> common.SLIMapping | None:
    """``Timeslices`` budgeting: the events are the slices, a slice bad when its ratio of good
    events is below ``timeSliceTarget``: an events SLI counting slices through a subquery
    stepping one slice (docs/migrating.md)."""
    target = common.decimal_of(entry.get("timeSliceTarget"))
    if target is None or not 0 < target < 1:
        src.refuse((*where, "timeSliceTarget"), "must be a ratio between 0 and 1 (Timeslices)")
        return None
    raw = entry.get("timeSliceWindow")
    seconds = common.window_seconds(raw) if isinstance(raw, str) else None
    if seconds is None:
        src.refuse((*where, "timeSliceWindow"), "must be a duration like 1m (Timeslices)")
        return None
    timeslice = common.timeslice_sli(mapped, target, common.duration_text(seconds))
    if isinstance(timeslice, str):
        src.refuse(where, timeslice)
        return None
    src.adapt((*where, "timeSliceTarget"), timeslice.note)
    return timeslice


def _target(src: Source, entry: dict[str, Any], where: FieldPath) -> tuple[str | None, str]:
    if "targetPercent" in entry:
        objective, why = common.objective(entry["targetPercent"], percent=True)
        shown = f"targetPercent: {entry['targetPercent']}"
    else:
        objective, why = common.objective(entry.get("target"), percent=False)
        shown = f"target: {entry.get('target')} (a ratio)"
    if objective is None:
        src.refuse((*where, "target"), f"{why}; SLO not imported")
    return objective, shown


def _objective_sli(
    src: Source, entry: dict[str, Any], where: FieldPath,
    shared: tuple[Source, dict[str, Any], FieldPath] | None, v1: bool,
) -> common.SLIMapping | None:  # fmt: skip
    if "ratioMetrics" in entry and not v1:
        return _ratio(src, entry["ratioMetrics"], (*where, "ratioMetrics"), v1)
    if shared is not None:
        return _sli(*shared, v1)
    src.refuse(where, "no indicator: no SLI")
    return None


def _fill(
    src: Source, spec: dict[str, Any], where: FieldPath, period: Fraction, objective: str,
    mapped: common.SLIMapping, out: dict[str, Any], comments: dict[FieldPath, str],
) -> None:  # fmt: skip
    """The SLI, group_by and tiers of one objective's SLO."""
    out["sli"] = mapped.sli
    if mapped.note:
        comments[("sli",)] = f"OpenSLO: {mapped.note}"
    if mapped.group_by:
        out["group_by"] = list(mapped.group_by)
    chosen = common.tiers(None, period, objective)
    for burn in chosen.never:
        src.adapt((*where, "target"), common.never_text(burn, period, objective))
    if chosen.tiers is not None:
        out["tiers"] = chosen.tiers
    if not spec.get("alertPolicies"):
        src.adapt(
            where,
            "the SLO has no alert policy: rulegen adds its default page and ticket tiers "
            "(the Workbook's)",
        )
        comments[("window",)] = "OpenSLO defines no alerting here: rulegen's default tiers alert"


def _sli(src: Source, body: dict[str, Any], where: FieldPath, v1: bool) -> common.SLIMapping | None:
    if "thresholdMetric" in body:
        return _threshold_metric(src, body["thresholdMetric"], (*where, "thresholdMetric"), v1)
    key = "ratioMetric" if v1 else "ratioMetrics"
    if key not in body:
        src.refuse(where, f"needs {key}: no SLI rulegen can read")
        return None
    return _ratio(src, body[key], (*where, key), v1)


def _threshold_metric(
    src: Source, body: object, where: FieldPath, v1: bool
) -> common.SLIMapping | None:
    """A threshold on one query's value: its query, for each objective's ``op`` and ``value``
    to make an events SLI of (``_threshold_objective``)."""
    if not isinstance(body, dict):
        src.refuse(where, "must be a mapping")
        return None
    query = _prometheus_query(src, body, where, v1)
    if query is None:
        return None
    return common.SLIMapping({THRESHOLD: query}, (), "")


THRESHOLD = "threshold_query"  # an SLIMapping's SLI that still needs an objective's op and value


def _threshold_objective(
    src: Source, entry: dict[str, Any], where: FieldPath, mapped: common.SLIMapping,
    timeslice: str,
) -> common.SLIMapping | None:  # fmt: skip
    """The threshold query sampled every ``timeslice`` (an event each series and sample), an
    event bad when the value fails ``op value``: an events SLI of subqueries."""
    op, value = entry.get("op"), common.decimal_of(entry.get("value"))
    if op not in common.THRESHOLD_OPS or value is None:
        src.refuse((*where, "op"), "a threshold SLI needs op (lt, lte, gt, gte) and a value")
        return None
    found = common.threshold_sli(str(mapped.sli[THRESHOLD]), str(op), value, timeslice)
    if isinstance(found, str):
        src.refuse(where, found)
        return None
    src.adapt((*where, "op"), found.note)
    return found


def _ratio(src: Source, body: object, where: FieldPath, v1: bool) -> common.SLIMapping | None:
    if not isinstance(body, dict):
        src.refuse(where, "must be a mapping")
        return None
    src.known(
        body, where, ("counter", "good", "bad", "total", "incremental", "rawType", "raw"), TOOL
    )
    if "raw" in body:
        src.refuse((*where, "raw"), "a precomputed ratio gives rulegen no events to count")
        return None
    queries = _queries(src, body, where, v1)
    if queries is None:
        return None
    if "total" not in queries or ("good" in queries) == ("bad" in queries):
        src.refuse(where, "needs total and exactly one of good and bad")
        return None
    if "bad" in queries:
        mapped = common.ratio_sli(queries["bad"], queries["total"])
    else:
        mapped = common.complement_sli(queries["good"], queries["total"])
    if isinstance(mapped, str):
        src.refuse(where, mapped)
        return None
    problem = common.group_by_problem(mapped.group_by)
    if problem is not None:
        src.refuse(where, problem)
        return None
    if "good" in queries:
        src.adapt((*where, "good"), mapped.note)
    return mapped


def _queries(
    src: Source, body: dict[str, Any], where: FieldPath, v1: bool
) -> dict[str, common.Events] | None:
    counter = bool(body.get("counter")) or bool(body.get("incremental"))
    queries: dict[str, common.Events] = {}
    for part in ("good", "bad", "total"):
        if part not in body:
            continue
        parsed = _query(src, body[part], (*where, part), v1, counter)
        if parsed is None:
            return None
        queries[part] = parsed
    return queries


def _prometheus_query(src: Source, body: dict[str, Any], where: FieldPath, v1: bool) -> str | None:
    """A metric's Prometheus query (v1: ``metricSource``; v1alpha: ``source``/``query``)."""
    if v1:
        source = body.get("metricSource")
        kind = source.get("type") if isinstance(source, dict) else None
        spec = source.get("spec") if isinstance(source, dict) else None
        query = spec.get("query") if isinstance(spec, dict) else None
        here = (*where, "metricSource")
    else:
        kind, query, here = body.get("source"), body.get("query"), where
    if not isinstance(kind, str) or kind.lower() != "prometheus":
        src.refuse(here, f"metric source {kind!r:.40}: only Prometheus queries map")
        return None
    if not isinstance(query, str) or not query.strip():
        src.refuse(here, "needs a query")
        return None
    return query


def _query(
    src: Source, body: object, where: FieldPath, v1: bool, counter: bool
) -> common.Events | None:
    if not isinstance(body, dict):
        src.refuse(where, "must be a mapping")
        return None
    query = _prometheus_query(src, body, where, v1)
    if query is None:
        return None
    here = (*where, "metricSource") if v1 else where
    plain = "{{" not in query and counter
    parsed = common.counter_query(query) if plain else common.events(query)
    if isinstance(parsed, str):
        src.refuse(here, parsed)
        return None
    return parsed
