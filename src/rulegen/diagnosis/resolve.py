"""``diagnoses:`` entries → ``ResolvedDiagnosis``: thresholds exact, host-level PromQL rendered.

Why: a diagnosis joins series of three exporters (node, vLLM, DCGM) that never share an
``instance``; every join goes through one host label, set here once, and every value that
would make the diagnosis unable to fire (or its test unable to tell) is a spec error here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from decimal import Decimal
from typing import Any

from rulegen import units
from rulegen.catalog import Catalog
from rulegen.core import promql
from rulegen.core.histograms import ALL_CLASSIC, Histograms
from rulegen.diagnosis.evidence import EvidenceBuilder
from rulegen.diagnosis.model import (
    ALERT_NAMES,
    EXPLAINS,
    EXPLAINS_DIAGNOSES,
    ResolvedDiagnosis,
)
from rulegen.diagnosis.params import (
    TTFT_METRIC,
    XID_SIGNAL,
    Context,
    Params,
    test_devices,
    window_of,
)
from rulegen.host import host_of
from rulegen.source.fields import Collector, duration, labels
from rulegen.source.loader import PathKey
from rulegen.source.severities import DEFAULT as DEFAULT_SEVERITIES
from rulegen.source.severities import Severities, check

# With the default severities; a declaration of its own gives each kind its first paging
# severity for critical, its first severity that does not page for warning.
DEFAULT_SEVERITY = {
    "ttft_disk_bound": "critical",
    "throughput_network_bound": "warning",
    "gpu_kernel_contention": "warning",
    "gpu_health": "critical",
}


def _ttft_readable(ctx: Context, diagnosis: ResolvedDiagnosis) -> bool:
    """A diagnosis reads TTFT from a classic or an NHCB histogram; its generated tests model
    the linear interpolation inside a bucket those have, not an exponential histogram's."""
    if ctx.ttft_histogram != "native" or all(e.quantity != "ttft" for e in diagnosis.evidence):
        return True
    ctx.col.error(ctx.path, f"reads TTFT from {TTFT_METRIC}, which histograms: makes an "
                  "exponential native histogram: diagnoses read classic or nhcb histograms "
                  "(docs/histograms.md)")  # fmt: skip
    return False


def resolve_diagnoses(
    col: Collector,
    spec: Any,
    spec_labels: tuple[tuple[str, str], ...],
    alert_signals: Mapping[str, str],
    selectors: Mapping[str, tuple[promql.Matcher, ...]],
    intervals: tuple[Decimal, Decimal],
    catalog: Catalog,
    left_open: bool = False,
    histograms: Histograms = ALL_CLASSIC,
    severities: Severities = DEFAULT_SEVERITIES,
) -> tuple[ResolvedDiagnosis, ...]:
    """Every diagnosis of a spec; ``alert_signals`` maps the spec's alert names to signals.

    The spec's ``host_label`` is checked before (``rulegen.pipeline.service``, against
    ``rulegen.host.RESERVED_HOST_LABELS`` and the labels of its alerts' series).
    """
    if not spec.diagnoses:
        return ()
    evaluation, scrape = intervals
    if evaluation % scrape:
        col.error(
            ("evaluation_interval",),
            f"diagnoses need evaluation_interval ({units.format_duration(evaluation)}) to be a "
            f"multiple of scrape_interval ({units.format_duration(scrape)})",
        )
        return ()
    host = host_of(spec.host_label)
    out: list[ResolvedDiagnosis] = []
    taken = dict.fromkeys(alert_signals, "alerts")
    for slo in spec.slos or ():
        taken.setdefault(slo.alerting.name, "slos")
    for index, entry in enumerate(spec.diagnoses):
        path: PathKey = ("diagnoses", index)
        name = entry.name or ALERT_NAMES[entry.kind]
        if name in taken:
            col.error(
                (*path, "name") if entry.name else (*path, "kind"),
                f"alert name {name!r} is already used in {taken[name]}; give this diagnosis "
                "a unique name",
            )
            continue
        taken[name] = "diagnoses"
        entry = entry.model_copy(update={"severity": _severity(col, path, entry, severities)})
        ttft = histograms.kind(TTFT_METRIC, "vllm")
        context = Context(col, path, spec.service, host, selectors, scrape, catalog, ttft)
        resolved = _diagnosis(context, entry, name, spec_labels, alert_signals, spec.runbook_url)
        if resolved is not None and _ttft_readable(context, resolved):
            out.append(replace(resolved, left_open=left_open, ttft_histogram=ttft))
    return _explain_diagnoses(out)


def _severity(col: Collector, path: PathKey, entry: Any, severities: Severities) -> str:
    """A diagnosis' own severity, checked against the declaration, or its kind's default
    (the declaration's paging severity for a kind that pages, its first other one if not)."""
    pages = DEFAULT_SEVERITY[entry.kind] == "critical"
    default = severities.page if pages else severities.ticket
    if entry.severity is None:
        return default
    own: str = entry.severity
    return own if check(col, (*path, "severity"), own, severities) else default


def _explain_diagnoses(diagnoses: list[ResolvedDiagnosis]) -> tuple[ResolvedDiagnosis, ...]:
    """A kind of ``EXPLAINS_DIAGNOSES`` also holds back the other diagnoses of the spec (their
    alerts carry the same host label), after the catalog alerts it explains."""
    out = []
    for diagnosis in diagnoses:
        if diagnosis.kind in EXPLAINS_DIAGNOSES:
            others = tuple(d.name for d in diagnoses if d.kind not in EXPLAINS_DIAGNOSES)
            diagnosis = replace(diagnosis, explains=(*diagnosis.explains, *others))
        out.append(diagnosis)
    return tuple(out)


def _diagnosis(
    ctx: Context,
    entry: Any,
    name: str,
    spec_labels: tuple[tuple[str, str], ...],
    alert_signals: Mapping[str, str],
    runbook: str | None,
) -> ResolvedDiagnosis | None:
    col, path = ctx.col, ctx.path
    before = len(col.diagnostics)
    for_seconds = duration(col, (*path, "for"), entry.for_, most=Decimal(86400))
    raw_window = entry.window
    if entry.kind == "gpu_health" and "window" not in entry.model_fields_set:
        raw_window = ctx.catalog.signals[XID_SIGNAL].defaults.window or raw_window
    window = window_of(ctx, raw_window)
    if (
        entry.kind == "gpu_health"
        and for_seconds is not None
        and window is not None
        and for_seconds >= window
    ):
        col.error(
            (*path, "for"),
            f"must be shorter than the window ({units.format_duration(window)}): an XID is "
            f"new for one window only, so the alert could never fire (got {entry.for_})",
        )  # fmt: skip
    extra = labels(col, (*path, "labels"), entry.labels)
    if "diagnosis" in dict(extra):
        col.error((*path, "labels", "diagnosis"), "label 'diagnosis' is set by rulegen")
    params = Params(ctx, entry)
    if for_seconds is None or window is None or len(col.diagnostics) > before:
        return None
    baseline = params.baseline(window)
    builder = EvidenceBuilder(ctx, window, params, baseline or Decimal(0))
    evidence = builder.evidence(entry.kind)
    if len(col.diagnostics) > before or evidence is None:
        return None
    severity = entry.severity
    merged = {**dict(spec_labels), **dict(extra)}
    merged.update(severity=severity, service=ctx.service, diagnosis=entry.kind)
    explains = tuple(a for a, s in alert_signals.items() if s in EXPLAINS[entry.kind])
    devices = test_devices(ctx, entry)
    if devices is None:
        return None
    return ResolvedDiagnosis(
        entry.kind, name, ctx.service, severity, for_seconds, window, baseline or Decimal(0),
        evidence, ctx.host, tuple(sorted(merged.items())), explains, params.buckets,
        params.quantile, params.gpu_scale, params.link_speed,
        getattr(entry, "gpu_metric", "DCGM_FI_DEV_GPU_UTIL"), *devices, ctx.selectors,
        col.origin(path), runbook.replace("{alert}", name) if runbook else None,
        ignore_xids=params.ignore_xids if entry.kind == "gpu_health" else None,
        uncorrectable_rows=params.uncorrectable_rows or Decimal(512),
    )  # fmt: skip
