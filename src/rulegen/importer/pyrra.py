"""``rulegen import pyrra``: Pyrra ``pyrra.dev/v1alpha1`` ``ServiceLevelObjective`` objects →
rulegen SLOs.

What maps: ``target`` (a percentage) → objective, ``window``, ``description``; a ``ratio``
indicator (two counter selectors) → a ratio SLI and its ``grouping`` → ``group_by``; a
``latency`` indicator (``X_bucket{le=…}`` over ``X_count``, the same other matchers) → a
latency SLI; ``alerting.name``, ``alerting.disabled``/``burnrates``, the severities Pyrra puts on
its page and ticket windows. Pyrra's burn windows are not the Workbook's (factors 14, 7, 2, 1 on
windows scaled from 28 days, with a ``for`` each): they become explicit ``tiers``, so rulegen
pages on exactly the burns Pyrra pages on (a share with no exact decimal rounded up: never
less strict), and the page's ``for`` is the shortest of Pyrra's page windows (never later on an
outage). Pyrra's absent alert (on unless ``alerting.absent: false``) becomes
``alerting.absent`` with its name, severity and ``for`` (``AbsentDuration``). A ``latencyNative``
indicator is a latency SLI on a native histogram, a ``bool_gauge`` an events SLI (its samples
the events, its zeros the errors) with its own test series. Refused: anything unknown.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

from rulegen import units
from rulegen.core import promql
from rulegen.importer import slo_common as common
from rulegen.importer.model import FieldPath, ImportOptions, ImportResult
from rulegen.importer.slo_common import Burn, Services, Source

TOOL = "Pyrra"
_SERVICE_LABELS = ("service", "app.kubernetes.io/part-of", "app.kubernetes.io/name", "app")
_DAY28 = Fraction(28 * 86400)
_ABSENT_NAME = "SLOMetricAbsent"  # Pyrra's default name of its absent alert (slo/slo.go)
_MINUTE = Fraction(60)
# Pyrra's windows for a 28-day SLO (slo/rules.go, Windows()): severity, for, long, short,
# factor; each duration scales with the SLO window and is rounded to the minute.
_PYRRA_28D = (
    ("page", 2 * 60, 3600, 5 * 60, 14),
    ("page", 15 * 60, 6 * 3600, 30 * 60, 7),
    ("ticket", 3600, 86400, 2 * 3600, 2),
    ("ticket", 3 * 3600, 4 * 86400, 6 * 3600, 1),
)


def _round_minute(seconds: Fraction) -> Fraction:
    """Go's ``Duration.Round(time.Minute)``: to the nearest minute, halves away from zero."""
    minutes = seconds / _MINUTE
    whole = int(minutes)
    return _MINUTE * (whole + 1 if minutes - whole >= Fraction(1, 2) else whole)


def pyrra_windows(window: Fraction) -> list[tuple[str, Fraction, Fraction, Fraction, int]]:
    """Pyrra's burn windows for an SLO window: ``(alert, for, long, short, factor)``."""
    scale = window / _DAY28
    return [
        (alert, _round_minute(scale * for_), _round_minute(scale * long),
         _round_minute(scale * short), factor)
        for alert, for_, long, short, factor in _PYRRA_28D
    ]  # fmt: skip


def pyrra_absent_for(window: Fraction, target: float) -> Fraction:
    """Pyrra's ``AbsentDuration()`` (slo/slo.go): the time its first page window (factor 14)
    takes to fire on a total outage, ``14 × (1 − target)`` of its long window (truncated to
    whole seconds, as Go converts the float), plus that window's ``for``, rounded to the
    minute. ``target`` is Pyrra's ratio (its percentage over 100, a float)."""
    _alert, for_, long, _short, factor = pyrra_windows(window)[0]
    seconds = int(factor * (1 - target) * float(long))
    return _round_minute(Fraction(seconds) + for_)


def import_files(files: Sequence[Path], options: ImportOptions) -> ImportResult:
    """Map every Pyrra ``ServiceLevelObjective`` of ``files`` (see the module's docstring)."""
    result = ImportResult()
    services = Services(result, options)
    for path in files:
        name, documents = common.read_documents(path)
        for document in documents:
            src = Source(name, document, result)
            data = document.data
            if (
                not isinstance(data, dict)
                or data.get("apiVersion") != "pyrra.dev/v1alpha1"
                or data.get("kind") != "ServiceLevelObjective"
            ):
                where: FieldPath = ("apiVersion",) if isinstance(data, dict) else ()
                src.refuse(
                    where,
                    "not a Pyrra object (apiVersion: pyrra.dev/v1alpha1, kind: "
                    "ServiceLevelObjective)",
                )
                continue
            _objective(services, src, data)
    services.finish()
    return result


def _objective(services: Services, src: Source, data: dict[str, Any]) -> None:
    src.known(data, (), ("apiVersion", "kind", "metadata", "spec"), TOOL)
    metadata = src.mapping(data, (), "metadata")
    spec = src.mapping(data, (), "spec")
    if metadata is None or spec is None:
        return
    src.known(metadata, ("metadata",), ("name", "namespace", "labels", "annotations"), TOOL)
    name = common.slo_name_of(src, metadata.get("name"), ("metadata", "name"))
    if name is None:
        return
    labels = _k8s_labels(src, metadata)
    service = _service(services, src, metadata, labels)
    if service is None:
        return
    _operator(services, service, src, metadata, labels)
    for key in metadata.get("annotations") or {}:
        src.refuse(("metadata", "annotations", key), "Kubernetes annotations have no place")
    _slo(services, service, src, name, spec, labels)


def _slo(
    services: Services, service: str, src: Source, name: str, spec: dict[str, Any],
    labels: dict[str, str],
) -> None:  # fmt: skip
    base: FieldPath = ("spec",)
    src.known(spec, base, ("target", "window", "description", "indicator", "alerting"), TOOL)
    objective, why = common.objective(spec.get("target"), percent=True)
    if objective is None:
        src.refuse((*base, "target"), f"{why}; SLO not imported")
    window = common.window_seconds(spec.get("window"))
    if window is None:
        src.refuse((*base, "window"), "must be a duration like 28d or 4w; SLO not imported")
    mapped = _indicator(src, spec, base)
    if objective is None or window is None or mapped is None:
        src.refuse(("metadata", "name"), f"SLO {name} not imported: see the refusals of it")
        return
    period = Fraction(window)
    out: dict[str, Any] = {"name": name, "objective": objective}
    comments: dict[FieldPath, str] = {("objective",): f"Pyrra: target: {spec['target']!r}"}
    out["window"] = common.duration_text(period)
    description = spec.get("description")
    if isinstance(description, str) and description.strip():
        out["description"] = description
    out["sli"] = mapped.sli
    if mapped.note:
        comments[("sli",)] = f"Pyrra: {mapped.note}"
    if mapped.group_by:
        out["group_by"] = list(mapped.group_by)
        comments[("group_by",)] = "Pyrra's grouping: one SLO per value"

    def severity_of(value: str, at: FieldPath) -> str | None:
        return services.severity(service, src, value, at)

    _alerts(src, spec, base, labels, period, objective, out, comments, severity_of)
    services.add_slo(service, src, out, comments, ("metadata", "name"))


def _alerts(
    src: Source, spec: dict[str, Any], base: FieldPath, labels: dict[str, str],
    period: Fraction, objective: str, out: dict[str, Any], comments: dict[FieldPath, str],
    severity_of: Callable[[str, FieldPath], str | None],
) -> None:  # fmt: skip
    """``alerting`` and ``tiers``: Pyrra's windows, exactly, as rulegen tiers."""
    alerting, fors = _alerting(src, spec, base, labels, severity_of)
    burns = [
        Burn(alert, long, short, factor * long / period, for_)
        for alert, for_, long, short, factor in pyrra_windows(period)
    ]
    chosen = common.tiers(burns, period, objective)
    for burn in chosen.never:
        src.adapt((*base, "target"), common.never_text(burn, period, objective))
    assert chosen.tiers is not None  # Pyrra's factors are never the Workbook's
    if alerting is not None:
        out["alerting"] = alerting
        if "absent" in alerting:
            comments[("alerting", "absent")] = (
                "Pyrra's absent alert: for = 14 × (1 − target) × its first page window's long "
                "window, + that window's for, to the minute"
            )
    out["tiers"] = chosen.tiers
    comments[("tiers",)] = (
        f"Pyrra's burn windows for {out['window']}: factors 14 and 7 page, 2 and 1 ticket; "
        "budget = factor × long / window" + (", rounded up" if chosen.rounded else "")
    )
    if fors:
        comments[("alerting", "for")] = (
            "Pyrra waits per window; rulegen has one for per alert: the shortest"
        )


def _operator(
    services: Services, service: str, src: Source, metadata: dict[str, Any], labels: dict[str, str]
) -> None:
    """The PrometheusRule's namespace and labels (Pyrra's controller copies them there)."""
    namespace = metadata.get("namespace")
    if isinstance(namespace, str):
        where: FieldPath = ("metadata", "namespace")
        if services.set_top(service, src, ("targets", "operator", "namespace"), namespace, where):
            services.comment(service, src, ("targets",), "Pyrra's namespace and labels")
    for key, value in labels.items():
        if key.startswith("pyrra.dev/"):
            continue
        where = ("metadata", "labels", key)
        if services.set_top(service, src, ("targets", "operator", "labels", key), value, where):
            services.comment(service, src, ("targets",), "Pyrra's namespace and labels")


def _k8s_labels(src: Source, metadata: dict[str, Any]) -> dict[str, str]:
    raw = src.mapping(metadata, ("metadata",), "labels") or {}
    out: dict[str, str] = {}
    for key, value in raw.items():
        if isinstance(key, str) and isinstance(value, str):
            out[key] = value
        else:
            src.refuse(("metadata", "labels", str(key)), "a Kubernetes label value is a string")
    return out


def _service(
    services: Services, src: Source, metadata: dict[str, Any], labels: dict[str, str]
) -> str | None:
    for key in _SERVICE_LABELS:
        if key in labels:
            what = f"label {key}"
            return services.name(src, labels[key], ("metadata", "labels", key), what)
    if services.options.service is None:
        namespace = metadata.get("namespace")
        key = "namespace" if isinstance(namespace, str) else "name"
        src.adapt(
            ("metadata", key),
            f"Pyrra has no service: the service is metadata.{key} (or give --service)",
        )
        return services.name(src, metadata.get(key), ("metadata", key), f"metadata.{key}")
    return services.options.service


def _indicator(src: Source, spec: dict[str, Any], base: FieldPath) -> common.SLIMapping | None:
    indicator = src.mapping(spec, base, "indicator")
    where = (*base, "indicator")
    if not indicator or len(indicator) != 1:
        src.refuse(where, "needs exactly one indicator")
        return None
    kind = next(iter(indicator))
    body = indicator[kind]
    here = (*where, kind)
    if not _known_kind(src, kind, body, here):
        return None
    if kind in ("bool_gauge", "boolGauge"):
        return _bool_gauge(src, body, here)
    if kind in ("latencyNative", "latency_native"):
        return _latency_native(src, body, here)
    return _events_indicator(src, kind, body, here)


def _known_kind(src: Source, kind: str, body: object, here: FieldPath) -> bool:
    if kind not in KINDS or not isinstance(body, dict):
        src.refuse(here, "not an indicator rulegen knows (ratio, latency, latencyNative, "
                   "bool_gauge)")  # fmt: skip
        return False
    return True


KINDS = ("ratio", "latency", "latencyNative", "latency_native", "bool_gauge", "boolGauge")


def _grouping(src: Source, body: dict[str, Any], here: FieldPath) -> tuple[str, ...] | None:
    """Pyrra's ``grouping``: one SLO per value of these labels (rulegen's ``group_by``)."""
    grouping = body.get("grouping") or []
    if not isinstance(grouping, list) or not all(isinstance(g, str) for g in grouping):
        src.refuse((*here, "grouping"), "must be a list of label names")
        return None
    problem = common.group_by_problem(tuple(grouping))
    if problem is not None:
        src.refuse((*here, "grouping"), problem)
        return None
    return tuple(grouping)


def _metric(src: Source, body: dict[str, Any], here: FieldPath) -> common.Events | None:
    """``{metric: SELECTOR}`` at ``here`` as a plain selector, or refused."""
    metric = src.text(body, here, "metric")
    if metric is None:
        src.refuse(here, "needs metric: a selector")
        return None
    selector = common.plain_selector(metric)
    if isinstance(selector, str):
        src.refuse((*here, "metric"), selector)
        return None
    return selector


def _bool_gauge(src: Source, body: dict[str, Any], here: FieldPath) -> common.SLIMapping | None:
    """A 0/1 gauge (1 good): each sample an event, the zeros the errors, as Pyrra counts it
    (``count_over_time − sum_over_time`` over ``count_over_time``): an events SLI, with test
    series (the gauge at 1, then at 0) since what good and bad look like is known."""
    src.known(body, here, ("metric", "grouping"), TOOL)
    selector = _metric(src, body, here)
    by = _grouping(src, body, here)
    if selector is None or by is None:
        return None
    gauge = selector.selector()
    summed = f"sum by ({', '.join(by)})" if by else "sum"
    count = f"{summed} (count_over_time({gauge}[{{{{.window}}}}]))"
    ones = f"{summed} (sum_over_time({gauge}[{{{{.window}}}}]))"
    try:
        labels = promql.satisfy(selector.matchers, {g: "rulegen-a" for g in by})
    except ValueError as exc:
        src.refuse((*here, "metric"), f"no series matches it: {exc}")
        return None
    series = promql.series_text(selector.metric, labels)
    sli = {"events": {"errors": f"{count} - {ones}", "total": count,
                      "test": {"good": {series: 1}, "bad": {series: 0}}}}  # fmt: skip
    note = "a 0/1 gauge: its samples are the events, its zeros the errors (an events SLI)"
    return common.SLIMapping(sli, by, note)


def _latency_native(src: Source, body: dict[str, Any], here: FieldPath) -> common.SLIMapping | None:
    """A native histogram and a latency: rulegen's latency SLI on ``histogram: native``."""
    src.known(body, here, ("latency", "total", "grouping"), TOOL)
    total = src.mapping(body, here, "total")
    selector = _metric(src, total or {}, (*here, "total"))
    by = _grouping(src, body, here)
    latency = body.get("latency")
    try:
        seconds = units.parse_duration(latency.strip()) if isinstance(latency, str) else None
    except units.UnitError:
        seconds = None
    if seconds is None or seconds <= 0:
        src.refuse((*here, "latency"), f"must be a duration like 200ms (got {latency!r})")
        return None
    if selector is None or by is None:
        return None
    threshold = units.format_latency(seconds)
    sli: dict[str, Any] = {"metric": selector.metric, "threshold": threshold,
                           "histogram": "native"}  # fmt: skip
    if selector.matchers:
        sli["matchers"] = ",".join(m.render() for m in selector.matchers)
    note = f"a native histogram: requests slower than {threshold} are the errors"
    return common.SLIMapping({"latency": sli}, by, note)


def _events_indicator(
    src: Source, kind: str, body: dict[str, Any], here: FieldPath
) -> common.SLIMapping | None:
    first, second = ("errors", "total") if kind == "ratio" else ("success", "total")
    src.known(body, here, (first, second, "grouping"), TOOL)
    parsed: dict[str, common.Events] = {}
    for key in (first, second):
        entry = src.mapping(body, here, key)
        metric = src.text(entry or {}, (*here, key), "metric")
        if metric is None:
            src.refuse((*here, key), "needs metric: a selector")
            return None
        src.known(entry or {}, (*here, key), ("metric",), TOOL)
        selector = common.plain_selector(metric)
        if isinstance(selector, str):
            src.refuse((*here, key, "metric"), selector)
            return None
        parsed[key] = selector
    by = _grouping(src, body, here)
    if by is None:
        return None
    if kind == "ratio":
        mapped = common.ratio_sli(parsed["errors"], parsed["total"])
    else:
        mapped = common.latency_sli(parsed["total"], parsed["success"])
    if isinstance(mapped, str):
        src.refuse(here, mapped)
        return None
    return common.SLIMapping(mapped.sli, by, mapped.note)


def _alerting(
    src: Source, spec: dict[str, Any], base: FieldPath, labels: dict[str, str],
    severity_of: Callable[[str, FieldPath], str | None],
) -> tuple[dict[str, Any] | None, dict[str, str]]:  # fmt: skip
    where = (*base, "alerting")
    alerting = src.mapping(spec, base, "alerting") or {}
    known = ("name", "disabled", "burnrates", "absent", "absentName", "severities")
    src.known(alerting, where, known, TOOL)
    name = src.text(alerting, where, "name")
    if name is not None and not common.is_alert_name(name):
        src.refuse((*where, "name"), "not a Prometheus alert name; rulegen's default used")
        name = None
    disabled = bool(src.flag(alerting, where, "disabled")) or (
        src.flag(alerting, where, "burnrates") is False
    )
    switches: dict[str, dict[str, Any]] = {"page": {}, "ticket": {}}
    severities = src.mapping(alerting, where, "severities") or {}
    picked = {"page": ("fastBurn", "mediumBurn"), "ticket": ("slowBurn", "longTermBurn")}
    src.known(
        severities, (*where, "severities"), (*picked["page"], *picked["ticket"], "absent"), TOOL
    )
    for alert, keys in picked.items():
        if not any(k in severities for k in keys):
            continue
        default = "critical" if alert == "page" else "warning"
        chosen = {str(severities.get(k, default)) for k in keys}
        if len(chosen) == 1:
            value = severity_of(next(iter(chosen)), (*where, "severities"))
            if value is not None:
                switches[alert]["severity"] = value
        else:
            src.refuse(
                (*where, "severities"),
                f"the {alert} windows' severities {sorted(chosen)}: rulegen's {alert} has one "
                "severity",
            )
    if disabled:
        switches["page"]["enabled"] = False
        switches["ticket"]["enabled"] = False
    extra = {
        key.removeprefix("pyrra.dev/"): value
        for key, value in labels.items()
        if key.startswith("pyrra.dev/") and promql.LABEL_NAME.match(key[10:])
    }
    windows = pyrra_windows(Fraction(_window(spec))) if _window(spec) else []
    fors = {
        alert: common.duration_text(min(w[1] for w in windows if w[0] == alert))
        for alert in ("page", "ticket")
        if windows
    }
    fors = {k: v for k, v in fors.items() if v != "0s"}
    absent = _absent(src, spec, alerting, where, switches["page"].get("severity", "critical"),
                     severity_of)  # fmt: skip
    block = common.alerting_block(
        name, switches["page"], switches["ticket"], extra, fors or None, absent
    )
    return (block or None), fors


def _absent(
    src: Source, spec: dict[str, Any], alerting: dict[str, Any], where: FieldPath, page: str,
    severity_of: Callable[[str, FieldPath], str | None],
) -> dict[str, Any] | None:  # fmt: skip
    """Pyrra's absent alert (on by default, whatever ``disabled``/``burnrates`` say: Pyrra
    writes it with the recordings) as ``alerting.absent``: its name (``absentName``, Pyrra's
    ``SLOMetricAbsent``), severity (``severities.absent``, critical) and ``for``."""
    if src.flag(alerting, where, "absent") is False:
        return None
    window, target = _window(spec), _target(spec)
    if not window or target is None:
        return None  # the SLO is refused for its target or window
    name = src.text(alerting, where, "absentName")
    if name is not None and not common.is_alert_name(name):
        src.refuse((*where, "absentName"), f"not a Prometheus alert name; {_ABSENT_NAME} used")
        name = None
    out: dict[str, Any] = {"name": name or _ABSENT_NAME}
    out["for"] = common.duration_text(pyrra_absent_for(Fraction(window), target))
    raw = str((alerting.get("severities") or {}).get("absent", "critical"))
    severity = severity_of(raw, (*where, "severities", "absent")) or page
    if severity != page:
        out["severity"] = severity
    _absent_errors_note(src, spec, where)
    return out


def _absent_errors_note(src: Source, spec: dict[str, Any], where: FieldPath) -> None:
    """Pyrra alerts on its second metric's absence too (the errors, the success bucket);
    rulegen's absent alert reads the total only."""
    indicator = spec.get("indicator")
    body = next(iter(indicator.values()), None) if isinstance(indicator, dict) else None
    if not isinstance(body, dict):
        return
    metrics = {
        str(body[key].get("metric", "")).split("{")[0]
        for key in ("errors", "success", "total")
        if isinstance(body.get(key), dict)
    }
    if len(metrics) > 1:
        src.adapt(
            where,
            "Pyrra's absent alerts: one on the total and one on the errors (or success bucket) "
            "metric; rulegen's reads the total only (no error series is zero errors)",
        )


def _target(spec: dict[str, Any]) -> float | None:
    """Pyrra's target as its generator reads it: the percentage parsed as a float, over 100."""
    try:
        return float(str(spec.get("target"))) / 100
    except ValueError:
        return None


def _window(spec: dict[str, Any]) -> int:
    seconds = common.window_seconds(spec.get("window"))
    return int(seconds) if seconds is not None else 0
