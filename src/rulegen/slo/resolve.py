"""SLO spec entries → ``ResolvedSLO``: objective, tiers and SLI checked, factors exact.

Why: every mistake that would give an SLO alert that cannot fire, or a number that is not
what the user wrote, is a spec error here, at its position, before any rule is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from math import gcd
from typing import Any

from rulegen import units
from rulegen.catalog import Catalog
from rulegen.core import promql
from rulegen.core.histograms import ALL_CLASSIC, HistogramKind, Histograms, native_problem
from rulegen.core.versions import DEFAULT, PrometheusVersion
from rulegen.slo import expression
from rulegen.slo.model import (
    PAGE,
    SLI,
    TICKET,
    AbsentAlert,
    EventsSLI,
    GoodputSLI,
    GoodRatioSLI,
    LatencySLI,
    RatioSLI,
    RawSLI,
    ResolvedSLO,
    Selector,
    SLOAlert,
    Tier,
)
from rulegen.source.fields import Collector, duration, labels
from rulegen.source.loader import PathKey
from rulegen.source.severities import DEFAULT as DEFAULT_SEVERITIES
from rulegen.source.severities import Severities, check

# Google SRE Workbook, ch. 5, "Multiwindow, Multi-Burn-Rate Alerts".
DEFAULT_TIERS = (
    ("1h", "5m", "2%", PAGE),
    ("6h", "30m", "5%", PAGE),
    ("1d", "2h", "10%", TICKET),
    ("3d", "6h", "10%", TICKET),
)
MAX_SLO_WINDOW = Decimal(365 * 86400)
INCOMPLETE_ALERT = "SLORecordingsIncomplete"  # rulegen.slo.rules.INCOMPLETE
MAX_MIN_TRAFFIC = Decimal(10) ** 6
RESERVED_GROUP_BY = frozenset({"service", "slo", "severity", "alertname", "alertstate", "le"})
OBJECTIVE_HINT = "must be a percentage like 99.9% or a ratio like 0.999"
SLI_KINDS = ("ratio", "latency", "goodput", "events", "raw")
# Histograms observed per output token or per engine iteration, not once per request: their
# counts are tokens (or steps), so they cannot share a goodput SLI's total of requests
# (docs/slos.md#goodput). vLLM's ``request_time_per_output_token_seconds`` (0.11 on) is
# observed once per finished request (its mean time per output token): it counts requests,
# and a goodput of TTFT and TPOT (DistServe's) may use it.
PER_TOKEN_HISTOGRAMS = frozenset({
    "vllm:inter_token_latency_seconds",
    "vllm:time_per_output_token_seconds",
    "vllm:iteration_tokens_total",
})  # fmt: skip


def resolve_slos(
    col: Collector, spec: Any, spec_labels: tuple[tuple[str, str], ...],
    evaluation: Decimal, scrape: Decimal, catalog: Catalog,
    version: PrometheusVersion = DEFAULT,
    histograms: Histograms = ALL_CLASSIC,
    severities: Severities = DEFAULT_SEVERITIES,
) -> tuple[ResolvedSLO, ...]:  # fmt: skip
    """Resolve every SLO of a spec; errors go to ``col``, broken SLOs are left out. The
    declared Prometheus ``version`` decides the shape of the base recordings (rules), the
    declared ``severities`` those of the alerts (``_severities``)."""
    out: list[ResolvedSLO] = []
    names: dict[str, int] = {}
    for index, slo in enumerate(spec.slos or ()):
        path: PathKey = ("slos", index)
        if slo.name in names:
            col.error(
                (*path, "name"), f"duplicate SLO name {slo.name!r} (also slos[{names[slo.name]}])"
            )
            continue
        names[slo.name] = index
        chosen = _severities(col, (*path, "alerting"), slo.alerting, severities)
        resolved = _slo(
            col, path, slo, spec, spec_labels, evaluation, scrape, catalog,
            _Histograms(histograms, version),
        )  # fmt: skip
        if resolved is not None:
            alerts = tuple(replace(a, severity=chosen[a.key]) for a in resolved.alerts)
            absent = _absent_severity(col, path, slo.alerting, resolved.absent, chosen[PAGE],
                                      severities)  # fmt: skip
            out.append(replace(resolved, alerts=alerts, left_open=version.left_open_ranges,
                               incomplete_severity=severities.ticket,
                               absent=absent))  # fmt: skip
    return tuple(out)


def _absent_severity(
    col: Collector, path: PathKey, alerting: Any, absent: AbsentAlert | None, page: str,
    severities: Severities,
) -> AbsentAlert | None:  # fmt: skip
    """The absent alert with its severity: its own, checked against the declaration, or the
    page's."""
    if absent is None:
        return None
    own = alerting.absent.severity
    where = (*path, "alerting", "absent", "severity")
    chosen = own if own is not None and check(col, where, own, severities) else page
    return replace(absent, severity=chosen)


def _severities(
    col: Collector, path: PathKey, alerting: Any, severities: Severities
) -> dict[str, str]:
    """The page's and the ticket's severity: their own, checked against the declaration, or
    its first paging severity for the page and its first other one for the ticket."""
    out = {PAGE: severities.page, TICKET: severities.ticket}
    for key in (PAGE, TICKET):
        own = getattr(alerting, key).severity
        if own is not None and check(col, (*path, key, "severity"), own, severities):
            out[key] = own
    return out


def _slo(
    col: Collector, path: PathKey, slo: Any, spec: Any, spec_labels: tuple[tuple[str, str], ...],
    evaluation: Decimal, scrape: Decimal, catalog: Catalog, histograms: _Histograms,
) -> ResolvedSLO | None:  # fmt: skip
    before = len(col.diagnostics)
    objective = parse_objective(col, (*path, "objective"), slo.objective)
    window = duration(col, (*path, "window"), slo.window, positive=True, most=MAX_SLO_WINDOW)
    if slo.evaluation_interval is not None:
        where = (*path, "evaluation_interval")
        interval = duration(col, where, slo.evaluation_interval, positive=True, most=Decimal(3600))
        if interval is None:
            return None
        evaluation = interval
    sli = _sli(col, (*path, "sli"), slo.sli, catalog, histograms)
    if sli is not None and slo.sli.selectors:
        sli = scoped(sli, spec.selectors, catalog)
    group_by = _group_by(col, (*path, "group_by"), slo.group_by, histograms.version)
    alerting = slo.alerting
    extra = labels(col, (*path, "alerting", "labels"), alerting.labels)
    min_traffic = _min_traffic(col, (*path, "alerting", "min_traffic"), alerting.min_traffic)
    fors = {
        key: duration(
            col, (*path, "alerting", "for", key), getattr(alerting.for_, key), most=Decimal(86400)
        )
        for key in (PAGE, TICKET)
    }
    if min_traffic is not None and slo.sli.raw is not None:
        col.error((*path, "alerting", "min_traffic"), "needs the total events, which a raw SLI "
                  "(an error ratio) does not give: write an events SLI")  # fmt: skip
    if objective is None or window is None:
        return None
    tiers = _tiers(col, path, slo, objective, window)
    own = _Own(col, path, slo.group_by)
    extras = {
        key: own.of((*path, "alerting", key), getattr(alerting, key)) for key in (PAGE, TICKET)
    }
    by_tier = {i: own.of((*path, "tiers", i), t) for i, t in enumerate(slo.tiers or ())}
    absent = _absent(col, path, alerting, own)
    if len(col.diagnostics) > before or sli is None:
        return None
    alerts = []
    for key in (PAGE, TICKET):
        switch = getattr(alerting, key)
        keyed = tuple(t for t in tiers if t.alert == key)
        if switch.enabled and keyed:
            made = _alerts_of(key, switch.severity, fors[key] or Decimal(0), keyed, extras[key],
                              by_tier)  # fmt: skip
            _distinct(col, path, made)
            alerts.extend(made)
    merged = dict(spec_labels)
    merged.update(extra)
    slo_result = ResolvedSLO(
        spec.service, slo.name, objective, window, slo.description, sli, group_by, alerting.name,
        tuple(alerts), min_traffic, tuple(sorted(merged.items())), spec.runbook_url, evaluation,
        scrape, col.origin(path), absent=absent,
    )  # fmt: skip
    _check_grid(col, path, slo_result)
    return slo_result if len(col.diagnostics) == before else None


# Annotations rulegen writes on an SLO's alerts: a user's own beside them may not reuse these.
OWN_ANNOTATIONS = frozenset({"summary", "description", "runbook_url", "slo_description"})
ABSENT_FOR_MOST = Decimal(7 * 86400)


# An alert's own labels and annotations, each sorted by name.
_Extra = tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]


@dataclass(frozen=True)
class _Own:
    """Checks the labels and annotations a spec gives one of an SLO's alerts
    (``alerting.page``, ``alerting.ticket``, a tier, ``alerting.absent``)."""

    col: Collector
    path: PathKey
    group_by: list[str]

    def labels(self, where: PathKey, raw: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
        """``raw`` checked as ``alerting.labels`` are, and none that rulegen sets on the
        alert (``slo``) or that its series carry (the ``group_by`` labels)."""
        out = labels(self.col, where, raw)
        for key in raw:
            if key == "slo" or key in self.group_by:
                what = "the SLO's name" if key == "slo" else "a group_by label of its series"
                self.col.error(
                    (*where, key), f"label {key!r} is set by rulegen ({what}) and cannot be "
                    "overridden",
                )  # fmt: skip
        return out

    def of(self, where: PathKey, spec: Any) -> _Extra:
        """The checked ``labels`` and ``annotations`` of ``spec`` at ``where`` (a page or
        ticket switch, a tier)."""
        return (
            self.labels((*where, "labels"), spec.labels),
            self.annotations((*where, "annotations"), spec.annotations),
        )

    def annotations(self, where: PathKey, raw: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
        """Annotation names Prometheus takes (label names), none of rulegen's own."""
        for key in raw:
            if not promql.LABEL_NAME.match(key) or key.startswith("__"):
                self.col.error(
                    (*where, key),
                    "invalid annotation name (expected [a-zA-Z_][a-zA-Z0-9_]*, no __ prefix)",
                )
            elif key in OWN_ANNOTATIONS:
                self.col.error(
                    (*where, key),
                    f"annotation {key!r} is written by rulegen and cannot be overridden",
                )
        return tuple(sorted(raw.items()))


def _alerts_of(
    key: str, severity: str, for_seconds: Decimal, tiers: tuple[Tier, ...], base: _Extra,
    by_tier: dict[int, _Extra],
) -> list[SLOAlert]:  # fmt: skip
    """The alert rules of the page (or ticket): one for its tiers, and one more per set of
    labels and annotations its explicit tiers give (tiers with the same share a rule)."""
    parts: dict[_Extra, list[Tier]] = {}
    for tier in tiers:
        parts.setdefault(by_tier.get(tier.index, ((), ())), []).append(tier)
    out: list[SLOAlert] = []
    for (tier_labels, tier_notes), members in parts.items():
        labels = {**dict(base[0]), **dict(tier_labels)}
        notes = {**dict(base[1]), **dict(tier_notes)}
        part = ""
        if tier_labels or tier_notes:
            part = "tiers[" + ", ".join(str(t.index) for t in members) + "]"
        own = SLOAlert(key, severity, for_seconds, tuple(members), part=part)
        out.append(replace(own, labels=tuple(sorted(labels.items())),
                           annotations=tuple(sorted(notes.items()))))  # fmt: skip
    return out


def _distinct(col: Collector, path: PathKey, alerts: list[SLOAlert]) -> None:
    """Each alert rule of the page (or ticket) carries labels no other of them has: rules
    of one name and severity with the same labels would be one alert to Alertmanager."""
    seen: dict[tuple[tuple[str, str], ...], SLOAlert] = {}
    for alert in alerts:
        other = seen.setdefault(alert.labels, alert)
        if other is alert:
            continue
        index = alert.tiers[0].index
        where: PathKey = (*path, "tiers", index)
        col.error(
            (*where, "labels") if col.positions.has((*where, "labels")) else where,
            f"the {alert.key} of tiers[{index}] would carry the same labels as the {other.key} "
            f"of {other.part or 'its other tiers'}: give the tier a label of its own (labels:) "
            "that tells its alert apart",
        )


def _absent(col: Collector, path: PathKey, alerting: Any, own: _Own) -> AbsentAlert | None:
    """``alerting.absent``: its name (``<alerting.name>Absent``), ``for``, severity (the
    page's), labels and annotations."""
    spec = alerting.absent
    if spec is None:
        return None
    where: PathKey = (*path, "alerting", "absent")
    name = spec.name or f"{alerting.name}Absent"
    if name in (alerting.name, INCOMPLETE_ALERT):
        col.error(
            (*where, "name") if spec.name else where,
            f"the absent alert is named {name!r}, as another alert of the SLO: give it a name "
            "of its own (alerting.absent.name)",
        )
    for_seconds = duration(col, (*where, "for"), spec.for_, most=ABSENT_FOR_MOST)
    return AbsentAlert(
        name, spec.severity or "", for_seconds or Decimal(0),  # the severity: _absent_severity
        own.labels((*where, "labels"), spec.labels),
        own.annotations((*where, "annotations"), spec.annotations), col.origin(where),
    )  # fmt: skip


def parse_objective(col: Collector, path: PathKey, raw: object) -> Decimal | None:
    """``99.9%`` or ``0.999`` → ``Decimal("0.999")``, strictly inside (0, 1).

    A bare ``99.9`` is refused with the hint every percent field gives (``units``): the same
    kind of number must not mean a fraction in one field and a percentage in another.
    """
    shown = repr(raw)
    if isinstance(raw, bool) or not isinstance(raw, int | float | str):
        col.error(path, f"{OBJECTIVE_HINT} (got {shown})")
        return None
    text = raw.strip() if isinstance(raw, str) else repr(raw)
    percent = text.endswith("%")
    try:
        value = Decimal(text[:-1].strip() if percent else text)
    except InvalidOperation:
        col.error(path, f"{OBJECTIVE_HINT} (got {shown})")
        return None
    if not value.is_finite():
        col.error(path, f"{OBJECTIVE_HINT} (got {shown})")
        return None
    if not percent and value == 1:
        col.error(path, f"is ambiguous (100% or 1%?): write a percentage like 99.9% (got {shown})")
        return None
    if not percent and value > 1:
        col.error(path, units.bare_percent_hint(value, raw))
        return None
    ratio = value / 100 if percent else value
    if not 0 < ratio < 1:
        col.error(path, f"must be between 0% and 100%, both exclusive (got {shown})")
        return None
    return ratio.normalize()


@dataclass(frozen=True)
class _Histograms:
    """The spec's ``histograms:`` and the declared version, which native kinds need."""

    choice: Histograms
    version: PrometheusVersion


def _sli(
    col: Collector, path: PathKey, sli: Any, catalog: Catalog, histograms: _Histograms
) -> SLI | None:
    kinds = [k for k in SLI_KINDS if getattr(sli, k) is not None]
    if len(kinds) != 1:
        if len(kinds) == 2:
            found = f"both {kinds[0]} and {kinds[1]}"
        elif kinds:
            found = ", ".join(kinds[:-1]) + f" and {kinds[-1]}"
        else:
            found = "neither ratio nor latency"
        kinds_text = (
            "ratio or latency"
            if not {"goodput", "events", "raw"} & set(kinds)
            else "ratio, latency, goodput, events or raw"
        )
        col.error(path, f"needs exactly one SLI kind, {kinds_text} (got {found})")
        return None
    if sli.goodput is not None:
        return _goodput(col, (*path, "goodput"), sli.goodput, catalog, histograms)
    if sli.ratio is not None:
        return _ratio(col, (*path, "ratio"), sli.ratio, histograms.version)
    if sli.events is not None:
        return expression.resolve_events(col, (*path, "events"), sli.events, histograms.version)
    if sli.raw is not None:
        return expression.resolve_raw(col, (*path, "raw"), sli.raw)
    return _latency(col, (*path, "latency"), sli.latency, catalog, histograms)


def _ratio(
    col: Collector, path: PathKey, spec: Any, version: PrometheusVersion
) -> RatioSLI | GoodRatioSLI | None:
    """``errors`` over ``total``, or ``good`` over ``total`` (exactly one of errors and good)."""
    if (spec.errors is None) == (spec.good is None):
        found = "both" if spec.errors is not None else "neither"
        col.error(path, f"needs exactly one of errors and good beside total (got {found})")
        return None
    key = "errors" if spec.errors is not None else "good"
    part = _selector(col, (*path, key), getattr(spec, key), version)
    total = _selector(col, (*path, "total"), spec.total, version)
    if part is None or total is None:
        return None
    problem = subset_problem(part, total, key)
    if problem is not None:
        col.error((*path, key), problem)
        return None
    return RatioSLI(part, total) if key == "errors" else GoodRatioSLI(part, total)


def scoped(sli: SLI, selectors: Mapping[str, str], catalog: Catalog) -> SLI:
    """The SLI with the spec's ``selectors:`` of its metrics' family added, as the catalog
    alerts get them: ``vllm:request_success_total`` reads ``job="vllm"`` only, not every
    service's series of that name. A label the SLI already matches on is left as written."""

    def more(metric: str, own: tuple[promql.Matcher, ...]) -> tuple[promql.Matcher, ...]:
        family = catalog.family_of(metric)
        if family is None or family not in selectors:
            return own
        try:
            extra = promql.parse_matchers(selectors[family])
        except ValueError:  # reported at the spec's selectors by ``service``
            return own
        named = {m.name for m in own}
        return (*own, *(m for m in extra if m.name not in named))

    if isinstance(sli, RatioSLI):
        errors, total = sli.errors, sli.total
        return RatioSLI(
            Selector(errors.metric, more(errors.metric, errors.matchers)),
            Selector(total.metric, more(total.metric, total.matchers)),
        )
    if isinstance(sli, GoodRatioSLI):
        good, total = sli.good, sli.total
        return GoodRatioSLI(
            Selector(good.metric, more(good.metric, good.matchers)),
            Selector(total.metric, more(total.metric, total.matchers)),
        )
    if isinstance(sli, GoodputSLI):
        return GoodputSLI(
            tuple(replace(one, matchers=more(one.metric, one.matchers)) for one in sli.latencies)
        )
    if isinstance(sli, EventsSLI | RawSLI):
        return sli  # the user's own queries: their selectors are as written
    return replace(sli, matchers=more(sli.metric, sli.matchers))


def _selector(
    col: Collector, path: PathKey, text: str, version: PrometheusVersion
) -> Selector | None:
    try:
        metric, matchers = promql.parse_selector(text)
    except ValueError as exc:
        col.error(path, str(exc))
        return None
    refused = promql.utf8_refusal(metric, matchers, version)
    if refused:
        col.error(path, refused)
        return None
    return Selector(metric, matchers)


def subset_problem(part: Selector, total: Selector, key: str = "errors") -> str | None:
    """The errors (or good events) must be some, not none and not all, of total's events.

    Of the same metric: their matchers must leave some of total's series in and some out.
    Of another metric (a bucket over a count, one family's successes over another's
    requests): the series cannot be compared, so every matcher of the total, but on ``le``,
    must be one of the part's too; otherwise the part counts events the total does not
    (``verb!="WATCH"`` on the count and not on the bucket), and the ratio is not a share.
    """
    if part.metric != total.metric:
        own = set(part.matchers)
        missing = [m for m in total.matchers if m.name != "le" and m not in own]
        if missing:
            shown = ", ".join(m.render() for m in missing)
            return (
                f"must select a subset of total's events: total matches {shown}, which "
                f"{key} does not (write the same matcher on both)"
            )
        return None
    try:
        bad = promql.satisfy((*part.matchers, *total.matchers), {})
    except ValueError:
        return f"selects no event of total ({total.render()}): {key} must be a subset of total"
    if promql.refused(part.matchers, total.matchers, bad) is None:
        other = "an error" if key == "good" else "good"
        return (
            f"selects every event of total ({total.render()}): no event could ever count as {other}"
        )
    return None


def _latency(
    col: Collector, path: PathKey, spec: Any, catalog: Catalog, histograms: _Histograms
) -> LatencySLI | None:
    before = len(col.diagnostics)
    matchers = _histogram_matchers(col, (*path, "matchers"), spec.matchers, histograms.version)
    read = _histogram_read(col, path, spec, matchers, catalog, histograms)
    return read if len(col.diagnostics) == before else None


def _goodput(
    col: Collector, path: PathKey, spec: Any, catalog: Catalog, histograms: _Histograms
) -> GoodputSLI | None:
    """At least two latency targets on histograms of the same requests: none per token."""
    before = len(col.diagnostics)
    if len(spec.latencies) < 2:
        col.error(
            (*path, "latencies"),
            f"needs at least two latency targets (got {len(spec.latencies)}): for one, "
            "write a latency SLI (sli: {latency: {metric, threshold}})",
        )
        return None
    matchers = _histogram_matchers(col, (*path, "matchers"), spec.matchers, histograms.version)
    reads: list[LatencySLI] = []
    seen: dict[str, int] = {}
    for index, entry in enumerate(spec.latencies):
        where: PathKey = (*path, "latencies", index)
        if entry.metric in PER_TOKEN_HISTOGRAMS:
            col.error(
                (*where, "metric"),
                f"{entry.metric} is observed per output token, not per request: a goodput SLI "
                "counts requests; write a latency SLI for it (it counts tokens)",
            )
            continue
        if entry.metric in seen:
            col.error((*where, "metric"), f"duplicate metric {entry.metric!r} (also "
                      f"latencies[{seen[entry.metric]}]): one target per histogram")  # fmt: skip
            continue
        seen[entry.metric] = index
        read = _histogram_read(col, where, entry, matchers, catalog, histograms)
        if read is not None:
            reads.append(read)
    if len(col.diagnostics) > before:
        return None
    return GoodputSLI(tuple(reads))


def _histogram_matchers(
    col: Collector, path: PathKey, text: str | None, version: PrometheusVersion
) -> tuple[promql.Matcher, ...]:
    """The matchers of a latency or goodput SLI's histograms (none on ``le``)."""
    matchers: tuple[promql.Matcher, ...] = ()
    try:
        matchers = promql.parse_matchers(text or "")
    except ValueError as exc:
        col.error(path, str(exc))
    if refused := promql.utf8_refusal("", matchers, version):
        col.error(path, refused)
    if any(m.name == "le" for m in matchers):
        col.error(path, "must not match on le: the threshold picks the bucket")
    return matchers


def _histogram_read(
    col: Collector, path: PathKey, spec: Any, matchers: tuple[promql.Matcher, ...],
    catalog: Catalog, histograms: _Histograms,
) -> LatencySLI | None:  # fmt: skip
    """One histogram and threshold (``metric``, ``threshold``, ``buckets``, ``histogram`` at
    ``path``): a latency SLI's, or one latency target of a goodput SLI."""
    before = len(col.diagnostics)
    metric = spec.metric
    version = histograms.version
    if not (promql.METRIC_NAME.match(metric) or _utf8_metric(metric, version)):
        col.error((*path, "metric"), f"invalid metric name {metric!r}")
    elif refused := promql.utf8_refusal(metric, (), version):
        col.error((*path, "metric"), refused)
    elif metric.endswith(("_bucket", "_count", "_sum")):
        base = metric.rsplit("_", 1)[0]
        col.error(
            (*path, "metric"), f"give the histogram's base name ({base!r}), not a series of it"
        )
    threshold = _latency_threshold(col, (*path, "threshold"), spec.threshold)
    kind = _histogram_kind(col, path, spec, catalog, histograms)
    if threshold is not None and kind != "native":
        _check_bucket(col, path, metric, threshold, spec.buckets, catalog)
    if len(col.diagnostics) > before or threshold is None:
        return None
    return LatencySLI(metric, threshold, matchers, kind)


def _utf8_metric(metric: str, version: PrometheusVersion) -> bool:
    """A metric name only Prometheus 3's UTF-8 names allow (``http.server.request.duration``,
    OpenTelemetry's): printable, no quote or brace, written quoted wherever rulegen writes it.
    Under 2.x it is still taken here, for ``utf8_refusal`` to say which version it needs."""
    del version  # the refusal, not the syntax, depends on it
    return bool(metric) and metric.isprintable() and not any(c in metric for c in '"{}\\')


def _histogram_kind(
    col: Collector, path: PathKey, spec: Any, catalog: Catalog, histograms: _Histograms
) -> HistogramKind:
    """The SLI's own ``histogram:``, else the spec's ``histograms:`` entry for its metric or
    family. An exponential histogram has no ``le`` bounds: ``buckets:`` is refused."""
    kind: HistogramKind = spec.histogram or histograms.choice.kind(
        spec.metric, catalog.family_of(spec.metric)
    )
    problem = native_problem(kind, histograms.version) if spec.histogram is not None else None
    if problem is not None:
        col.error((*path, "histogram"), problem)
    if kind == "native" and spec.buckets is not None:
        col.error((*path, "buckets"), "an exponential native histogram has no le bounds: "
                  "buckets: is for classic and nhcb histograms")  # fmt: skip
    return kind


def _latency_threshold(col: Collector, path: PathKey, raw: object) -> Decimal | None:
    hint = "must be a plain duration like 500ms or 1s, one number and one unit"
    if not isinstance(raw, str) or units.LATENCY.match(raw.strip()) is None:
        col.error(path, f"{hint} (got {raw!r})")
        return None
    value = units.parse_latency(raw)
    if value <= 0:
        col.error(path, f"must be longer than 0s (got {raw!r})")
        return None
    return value


def _check_bucket(
    col: Collector, path: PathKey, metric: str, threshold: Decimal, raw: object, catalog: Catalog
) -> None:
    """The threshold must be a bucket bound, or no bucket counts the good events."""
    bounds: list[Decimal] | None = None
    if raw is not None:
        if (
            not isinstance(raw, list)
            or not raw
            or not all(isinstance(b, int | float) and not isinstance(b, bool) for b in raw)
        ):
            col.error((*path, "buckets"), "must be a non-empty list of numbers (the le bounds)")
            return
        bounds = [Decimal(repr(b)) for b in raw]
        if not _bucket_bounds(col, (*path, "buckets"), bounds):
            return
    else:
        bounds = catalog.histogram_buckets(metric)
    if bounds is not None and threshold not in bounds:
        near = ", ".join(
            units.literal(b) for b in sorted(bounds, key=lambda b: abs(b - threshold))[:3]
        )
        col.error(
            (*path, "threshold"),
            f"{units.format_latency(threshold)} is not a bucket bound of {metric} "
            f"(nearest: {near} seconds); the SLI counts the bucket le=threshold",
        )


_NON_FINITE = {"NaN": "nan", "Infinity": "inf", "-Infinity": "-inf"}


def _bucket_bounds(col: Collector, path: PathKey, bounds: list[Decimal]) -> bool:
    """Each ``le`` bound is a finite latency, above the one before (as a histogram has them).

    Why: ``.nan`` or ``.inf`` is no bound a client writes (``+Inf`` is always there), a
    negative latency never happens, and an unsorted or repeated list is a typo.
    """
    ok = True
    for index, bound in enumerate(bounds):
        shown = units.literal(bound) if bound.is_finite() else _NON_FINITE[str(bound)]
        if not bound.is_finite():
            col.error(
                (*path, index),
                f"must be a finite number (got {shown}): the +Inf bucket is implicit",
            )
            ok = False
        elif bound < 0:
            col.error((*path, index), f"must not be negative (got {shown}): it is a latency")
            ok = False
        elif index and bounds[index - 1].is_finite() and bound <= bounds[index - 1]:
            col.error(
                (*path, index),
                f"must be above the bound before it (got {shown} after "
                f"{units.literal(bounds[index - 1])}): bounds are strictly increasing",
            )
            ok = False
    return ok


def _group_by(
    col: Collector, path: PathKey, names: list[str], version: PrometheusVersion
) -> tuple[str, ...]:
    """The labels the SLO is computed and alerted per. A UTF-8 name (``k8s.pod``) needs a
    3.x declaration, as in selectors; rulegen writes it quoted (``by ("k8s.pod")``) and
    reads it in templates with ``index $labels "k8s.pod"``."""
    seen: set[str] = set()
    for index, name in enumerate(names):
        if not promql.writable_label(name):
            col.error((*path, index), f"invalid label name {name!r}")
        elif refused := promql.label_refusal([name], version):
            col.error((*path, index), refused)
        elif name in RESERVED_GROUP_BY:
            col.error((*path, index), f"label {name!r} is set by rulegen and cannot be grouped by")
        elif name in seen:
            col.error((*path, index), f"duplicate label {name!r}")
        seen.add(name)
    return tuple(names)


def _min_traffic(col: Collector, path: PathKey, raw: object) -> Decimal | None:
    if raw is None:
        return None
    try:
        value = units.parse_number(raw)
    except units.UnitError:
        col.error(path, f"must be a number of requests per second like 0.1 (got {raw!r})")
        return None
    if value < 0 or value > MAX_MIN_TRAFFIC:
        col.error(path, f"must be between 0 and 1000000 requests per second (got {raw!r})")
        return None
    return value


def _tiers(
    col: Collector, path: PathKey, slo: Any, objective: Decimal, window: Decimal
) -> tuple[Tier, ...]:
    alerting = slo.alerting
    raw = (
        [(t.long, t.short, t.budget, t.alert) for t in slo.tiers]
        if slo.tiers
        else list(DEFAULT_TIERS)
    )
    out: list[Tier] = []
    for index, (long_text, short_text, budget_text, alert) in enumerate(raw):
        where: PathKey = (*path, "tiers", index) if slo.tiers else _default_tier_path(col, path)
        name = f"tiers[{index}]" if slo.tiers else f"default tier {long_text}/{short_text}"
        long = duration(col, (*where, "long") if slo.tiers else where, long_text, positive=True)
        short = duration(col, (*where, "short") if slo.tiers else where, short_text, positive=True)
        share = _budget_share(col, (*where, "budget") if slo.tiers else where, budget_text)
        if long is None or short is None or share is None:
            continue
        if short >= long:
            col.error(
                (*where, "short"), f"must be shorter than long ({long_text}) (got {short_text!r})"
            )
            continue
        if long > window:
            hint = "" if slo.tiers else "; set tiers: for windows this short"
            col.error(where if not slo.tiers else (*where, "long"),
                      f"{name}: long window {long_text} is longer than the SLO window "
                      f"{units.format_duration(window)}{hint}")  # fmt: skip
            continue
        factor = Fraction(share) * Fraction(window) / Fraction(long)
        enabled = getattr(alerting, alert).enabled
        if enabled and factor * Fraction(1 - objective) >= 1:
            col.error(
                where,
                f"{name} ({budget_text} of the budget in {long_text}) can never fire: its error "
                f"ratio threshold {format_fraction(factor)} × {units.literal(1 - objective)} is "
                f"{format_fraction(factor * Fraction(1 - objective))}, at least 100% of events; "
                f"raise the objective or lower the budget share, or disable alerting.{alert}",
            )
            continue
        out.append(Tier(index, long, short, share, alert, factor, col.origin(where)))
    return tuple(out)


def _default_tier_path(col: Collector, path: PathKey) -> PathKey:
    """Errors of a default tier point at the window the spec wrote, else at the SLO itself."""
    return (*path, "window") if col.positions.has((*path, "window")) else path


def _interval_path(col: Collector, path: PathKey) -> PathKey:
    """Where the evaluation interval of an SLO was written: its own, the spec's, or nowhere."""
    if col.positions.has((*path, "evaluation_interval")):
        return (*path, "evaluation_interval")
    if col.positions.has(("evaluation_interval",)):
        return ("evaluation_interval",)
    return path


def _budget_share(col: Collector, path: PathKey, raw: object) -> Decimal | None:
    try:
        value = units.parse_percent(raw)
    except units.BarePercentError as exc:
        col.error(path, str(exc))
        return None
    except units.UnitError:
        col.error(path, f"must be a share of the error budget like 2% (got {raw!r})")
        return None
    if not 0 < value <= 1:
        col.error(path, f"must be above 0% and at most 100% (got {raw!r})")
        return None
    return value


def _check_grid(col: Collector, path: PathKey, slo: ResolvedSLO) -> None:
    """Windows are sums of one base window read at offsets, so they must line up."""
    windows = windows_of(slo)
    base = base_window(windows)
    for tier in slo.tiers:
        for key, seconds in (("long", tier.long), ("short", tier.short)):
            if seconds % slo.evaluation:
                custom = _custom_tiers(col, path)
                where = (*path, "tiers", tier.index, key) if custom else _interval_path(col, path)
                name = "" if custom else f"default tier {_tier_name(tier)}: "
                interval = units.format_duration(slo.evaluation)
                col.error(
                    where,
                    f"{name}{units.format_duration(seconds)} is not a multiple of "
                    f"evaluation_interval {interval}; SLO windows are sums of recordings "
                    "read at offsets, which must fall on evaluations",
                )
                return
    if slo.window % slo.evaluation:
        col.error(
            (*path, "window")
            if col.positions.has((*path, "window"))
            else _interval_path(col, path),
            f"must be a multiple of evaluation_interval {units.format_duration(slo.evaluation)}",
        )
        return
    if base < 2 * slo.scrape:
        col.error(
            (*path, "tiers") if _custom_tiers(col, path) else _default_tier_path(col, path),
            f"the windows' common step {units.format_duration(base)} (their greatest common "
            f"divisor) holds fewer than two scrapes at scrape_interval "
            f"{units.format_duration(slo.scrape)}; make the windows multiples of a longer step",
        )


def _tier_name(tier: Tier) -> str:
    return f"{units.format_duration(tier.long)}/{units.format_duration(tier.short)}"


def _custom_tiers(col: Collector, path: PathKey) -> bool:
    return col.positions.has((*path, "tiers"))


DEFAULT_BASE = Decimal(300)


def windows_of(slo: ResolvedSLO) -> tuple[Decimal, ...]:
    """Every window an SLO's rules read: the tiers' long and short windows and the SLO window.

    Without alerts, the SLO window is still built from 5-minute recordings when it can be, so
    an SLI-only SLO does not scan 30 days of raw samples at every evaluation.
    """
    found = {slo.window}
    for tier in slo.tiers:
        found.update((tier.long, tier.short))
    if len(found) == 1 and not slo.window % DEFAULT_BASE and not DEFAULT_BASE % slo.evaluation:
        found.add(DEFAULT_BASE)
    return tuple(sorted(found))


def base_window(windows: tuple[Decimal, ...]) -> Decimal:
    """The longest window every other window is a multiple of (whole milliseconds)."""
    step = 0
    for window in windows:
        step = gcd(step, int(window * 1000))
    return Decimal(step) / 1000


def format_fraction(value: Fraction) -> str:
    """An exact PromQL number: a short decimal when there is one, else ``(p / q)``."""
    return units.fraction_literal(value)
