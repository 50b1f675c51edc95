"""Resolved diagnoses → one rule group: host-level recordings, then one alert per diagnosis.

Why: each piece of evidence is recorded once per host, so the alert is a readable join
(``ttft > 0.5 and on (host) disk > 0.7``), the description can show every value with
``query``, and a dashboard can draw the same series.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal

from rulegen import gotemplate, units
from rulegen.core import promql
from rulegen.diagnosis.model import Evidence, Quantity, ResolvedDiagnosis
from rulegen.generated import (
    AlertRule,
    And,
    Comparison,
    Condition,
    Recorded,
    RecordingRule,
    RuleGroup,
    Threshold,
    VersusBaseline,
)
from rulegen.generated import Quantity as Compared
from rulegen.templating import go_escape

_OP_TEXT = {">": "above", "<": "below", "<=": "at most"}
_FORMAT = {
    "duration": "humanizeDuration",
    "percent": "humanizePercentage",
    "number": "humanize",
}
_CONCLUSION = {
    "ttft_disk_bound": (
        "The disk is the cause, not the model server: find the device near 100% "
        "(iostat -x 1) and what reads it (weight loading, swap, page-cache eviction)."
    ),
    "throughput_network_bound": (
        "The network is the cause: requests start on time but tokens leave the host slowly; "
        "check the busiest NIC (sar -n DEV 1), TCP retransmits and softirq load."
    ),
    "gpu_kernel_contention": (
        "GPU kernels are the cause: requests wait while the GPUs idle and disk and network "
        "are fine; look for processes sharing the GPUs (nvidia-smi pmon), NCCL stalls or "
        "CUDA graph recaptures."
    ),
    "gpu_health": (
        "The GPU is the cause: slow or stalled requests on this host come from failing "
        "hardware, not from load; drain the node, look the XID up in NVIDIA's XID catalog "
        "(nvidia-smi -q -d ROW_REMAPPER shows the remapping) and reset or replace the GPU."
    ),
}


def diagnosis_group(
    service: str, interval_seconds: Decimal, diagnoses: tuple[ResolvedDiagnosis, ...]
) -> RuleGroup:
    """``<service>-diagnoses``: the recordings every diagnosis reads, then the alerts."""
    names = record_names(diagnoses)
    own = (("service", service),)
    recordings: dict[str, RecordingRule] = {}
    alerts = []
    for diagnosis in diagnoses:
        for item in diagnosis.evidence:
            name = names[(diagnosis.name, item.quantity)]
            recordings.setdefault(
                name, RecordingRule(name, item.recording.expr, own, diagnosis.origin)
            )
        alerts.append(
            AlertRule(
                diagnosis.name,
                alert_condition(diagnosis, names),
                diagnosis.for_seconds,
                # Prometheus expands label values as Go templates: a spec's ``{{`` stays text.
                tuple((name, go_escape(value)) for name, value in diagnosis.labels),
                diagnosis_annotations(diagnosis, names),
                diagnosis.origin,
                subject=diagnosis.kind.replace("_", " "),
            )
        )
    return RuleGroup(f"{service}-diagnoses", interval_seconds, (*recordings.values(), *alerts))


def record_names(diagnoses: tuple[ResolvedDiagnosis, ...]) -> dict[tuple[str, Quantity], str]:
    """A recording name per (diagnosis, quantity): shared when the PromQL is the same."""
    expr_of: dict[str, str] = {}
    out: dict[tuple[str, Quantity], str] = {}
    for diagnosis in diagnoses:
        for item in diagnosis.evidence:
            name = item.recording.record
            if expr_of.setdefault(name, item.recording.expr) != item.recording.expr:
                snake = re.sub(r"(?<!^)(?=[A-Z])", "_", diagnosis.name).lower()
                name = f"{name}_{snake}"
                expr_of[name] = item.recording.expr
            out[(diagnosis.name, item.quantity)] = name
    return out


def evidence_quantity(
    diagnosis: ResolvedDiagnosis, item: Evidence, names: Mapping[tuple[str, Quantity], str]
) -> Compared:
    """What the evidence compares: its recording, or for throughput the recording over its
    mean in the ``baseline`` before the current window."""
    own = (promql.Matcher("service", "=", diagnosis.service),)
    current = Recorded(names[(diagnosis.name, item.quantity)], own)
    if item.quantity != "throughput":
        return current
    return VersusBaseline(current, diagnosis.baseline_seconds, diagnosis.window_seconds)


def alert_condition(
    diagnosis: ResolvedDiagnosis, names: Mapping[tuple[str, Quantity], str]
) -> Condition:
    """Every piece of evidence on the same host (and model, between vLLM quantities)."""
    host = diagnosis.host.label
    condition: Condition | None = None
    for item in diagnosis.evidence:
        quantity = evidence_quantity(diagnosis, item, names)
        holds = Comparison(quantity, item.op, Threshold(item.threshold, item.unit))
        if condition is None:
            condition = holds
            continue
        both_model = item.recording.by_model and diagnosis.by_model
        condition = And(condition, holds, (host, "model_name") if both_model else (host,))
    assert condition is not None  # a diagnosis has evidence (resolve() checks it)
    return condition


@dataclass(frozen=True)
class _Query:
    """A value the description asks Prometheus for, on the alert's own host (and model)."""

    item: Evidence
    promql: str
    args: tuple[str, ...]


def _parts(
    diagnosis: ResolvedDiagnosis, names: Mapping[tuple[str, Quantity], str]
) -> list[str | _Query | Evidence]:
    """The description as literal Go-template text, the alert's value, and queries."""
    host = diagnosis.host.label
    where = "{{ $labels." + host + " }}"
    model = " of {{ $labels.model_name }}" if diagnosis.by_model else ""
    parts: list[str | _Query | Evidence] = [f"Evidence on {where}{model}: "]
    if diagnosis.kind == "gpu_health":
        parts.append(_gpu_fault(diagnosis))
    for index, item in enumerate(() if diagnosis.kind == "gpu_health" else diagnosis.evidence):
        if index:
            parts.append("; ")
        parts.append(go_escape(f"{item.about} is ", before_action=True))
        if index == 0:
            parts.append(item)
        else:
            record = names[(diagnosis.name, item.quantity)]
            matchers = [f"service={promql.quote(diagnosis.service)}", f"{host}=%q"]
            args = [f"$labels.{host}"]
            if item.recording.by_model and diagnosis.by_model:
                matchers.append("model_name=%q")
                args.append("$labels.model_name")
            parts.append(_Query(item, f"{record}{{{', '.join(matchers)}}}", tuple(args)))
        parts.append(go_escape(f" ({_OP_TEXT[item.op]} {_human(item)})"))
    parts.append(". " + go_escape(_CONCLUSION[diagnosis.kind]))
    if diagnosis.explains:
        parts.append(
            go_escape(
                " Held back for this host while this fires: " + ", ".join(diagnosis.explains) + "."
            )
        )
    return parts


def _gpu_fault(diagnosis: ResolvedDiagnosis) -> str:
    """Which GPU, and which XID (the alert's value) or a row remap failure (``fault``)."""
    window = units.format_duration(diagnosis.window_seconds)
    ignored = (
        f", XIDs {diagnosis.ignore_xids} not counted" if diagnosis.ignore_xids is not None else ""
    )
    rows = units.literal(diagnosis.uncorrectable_rows)
    xid = go_escape(f" within the last {window} (new: not reported {window} before{ignored})")
    remap = go_escape(
        "can no longer remap memory rows (DCGM_FI_DEV_ROW_REMAP_FAILURE set, or at least "
        f"{rows} rows remapped for uncorrectable errors)"
    )
    return (
        "GPU {{ $labels.gpu }} "
        '{{ if eq $labels.fault "xid" }}reported XID {{ $value }}'
        + xid
        + "{{ else }}"
        + remap
        + "{{ end }}"
    )


def _human(item: Evidence) -> str:
    return units.format_human(item.threshold, item.unit)


def diagnosis_annotations(
    diagnosis: ResolvedDiagnosis, names: Mapping[tuple[str, Quantity], str]
) -> tuple[tuple[str, str], ...]:
    """Summary and a description that walks through the evidence with its values."""
    out = []
    for part in _parts(diagnosis, names):
        if isinstance(part, str):
            out.append(part)
        elif isinstance(part, Evidence):
            out.append("{{ $value | " + _FORMAT[part.unit] + " }}")
        else:
            call = f"query (printf `{part.promql}` {' '.join(part.args)})"
            out.append(
                f"{{{{ with {call} }}}}{{{{ . | first | value | {_FORMAT[part.item.unit]} }}}}"
                "{{ else }}no data{{ end }}"
            )
    texts = [("summary", summary(diagnosis)), ("description", "".join(out))]
    if diagnosis.runbook_url:
        texts.append(("runbook_url", go_escape(diagnosis.runbook_url)))
    return tuple(texts)


def summary(diagnosis: ResolvedDiagnosis) -> str:
    """One line naming the cause and where."""
    where = "{{ $labels." + diagnosis.host.label + " }}"
    model = "{{ $labels.model_name }} " if diagnosis.by_model else ""
    return {
        "ttft_disk_bound": f"{model}time to first token on {where} is disk-bound",
        "throughput_network_bound": f"{model}throughput on {where} is network-bound",
        "gpu_kernel_contention": f"GPU kernels on {where} are contended: requests wait, GPUs idle",
        "gpu_health": (
            "GPU {{ $labels.gpu }} on " + where + ' is failing: {{ if eq $labels.fault "xid" '
            "}}XID {{ $value }}{{ else }}row remap failure{{ end }}"
        ),
    }[diagnosis.kind]


def predict_description(
    diagnosis: ResolvedDiagnosis,
    labels: Mapping[str, str],
    values: Mapping[Quantity, float],
) -> str:
    """The description Prometheus prints for an alert with ``labels`` when the evidence has
    ``values`` (the generated tests' expectation)."""
    names = record_names((diagnosis,))
    out = []
    first = diagnosis.evidence[0]
    for part in _parts(diagnosis, names):
        if isinstance(part, str):
            out.append(gotemplate.expand(part, labels, values[first.quantity]))
        else:
            item = part if isinstance(part, Evidence) else part.item
            out.append(_PYTHON_FORMAT[item.unit](values[item.quantity]))
    return "".join(out)


_PYTHON_FORMAT: dict[str, Callable[[float], str]] = {
    "duration": gotemplate.humanize_duration,
    "percent": gotemplate.humanize_percentage,
    "number": gotemplate.humanize,
}
