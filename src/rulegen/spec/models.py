"""The user-facing spec (version 1) as pydantic models.

Why: pydantic checks the structure (unknown keys, types, required fields) and gives the
JSON Schema for editors; units and cross-references are checked by ``rulegen.pipeline.service`` and
each feature's ``resolve``, where the catalog is known. The alert union is built from the
catalog, so a team's own signal gets its own keys in the schema.
"""

from __future__ import annotations

import weakref
from typing import Annotated, Any, Literal, Union

from pydantic import Field, WithJsonSchema, create_model

from rulegen.catalog import Catalog
from rulegen.core.histograms import HistogramKind
from rulegen.source.base import (
    ALERT_NAME,
    SERVICE_NAME,
    SLO_NAME,
    Duration,
    Latency,
    Scalar,
    Severity,
    SeverityList,
    SpecBase,
)
from rulegen.spec.diagnoses import DiagnosisSpec

# Every field carries a description: editors show it as the key's help
# (tests/cli/test_json_schema.py checks none is missing).
ALERTS = "threshold alerts, each on a catalog signal or custom (its own PromQL)"
GROUP = "the rule group of exactly this name (one line); default: <service>-custom"
EXTENDS = "a defaults file (relative path) whose keys this spec inherits and overrides key by key"


class AlertBase(SpecBase):
    """Keys every alert accepts, whatever its signal."""

    name: str | None = Field(
        default=None,
        pattern=ALERT_NAME,
        description="the alert's name, unique per service; default: the signal's alert name",
    )
    severity: Severity
    for_: Duration = Field(
        default=None,
        alias="for",
        description="how long the condition must hold before it fires, e.g. 5m; default: the "
        "signal's",
    )
    labels: dict[str, str] = Field(default={}, description="extra labels of this alert")
    summary: str | None = Field(
        default=None,
        description="the summary annotation, with placeholders; default: the signal's text",
    )
    description: str | None = Field(
        default=None,
        description="the description annotation, with placeholders; default: the signal's text",
    )


class CatalogAlert(AlertBase):
    """Keys of an alert on a catalog signal (signal-specific params are added per signal)."""

    threshold: Scalar
    window: Duration = Field(
        default=None,
        description="the rate or quantile window, e.g. 5m (at most 1d, at least "
        "two scrapes); default: the signal's; gauge signals take none",
    )
    matchers: str | None = Field(
        default=None,
        description="extra matchers on the signal's series, e.g. 'device=~\"nvme.+\"'",
    )


class ExampleSeries(SpecBase):
    """One input series of a custom alert's example, in promtool's expanding notation."""

    series: str = Field(description="the series, e.g. 'name{label=\"value\"}'")
    values: str = Field(description="its samples in promtool's expanding notation, e.g. "
                        "'100 90 5x10'")  # fmt: skip


class CustomExample(SpecBase):
    """Input series and the times a custom alert must fire (and must not) on them."""

    series: Annotated[list[ExampleSeries], Field(min_length=1)] = Field(
        description="input series in promtool's expanding notation"
    )
    fires_at: list[Duration] = Field(
        default=[], description="durations from the start at which the alert fires"
    )
    silent_at: list[Duration] = Field(
        default=[],
        description="durations from the start at which no alert of this name "
        "fires (pending is not firing)",
    )
    labels: dict[str, str] = Field(
        default={},
        description="the labels of the expression's result for that alert, beyond the rule's own",
    )
    value: Scalar = Field(
        default=None,
        description="the expression's value at fires_at; required when the "
        "annotations print $value",
    )
    interval: Duration = Field(
        default=None,
        description="the interval between the samples of series; default: "
        "the spec's scrape_interval",
    )


class CustomAlert(AlertBase):
    """An alert on a user-written PromQL expression."""

    signal: Literal["custom"] = Field(description="custom: an alert on your own expression")
    name: str = Field(pattern=ALERT_NAME, description="the alert's name (required for custom)")
    for_: Duration = Field(
        default=None,
        alias="for",
        description="how long the condition must hold before it fires, at most 365d; default: 0s",
    )
    summary: str | None = Field(
        default=None,
        description="the summary annotation, with placeholders; default: the alert's name and "
        "the labels that identify the firing instance",
    )
    description: str | None = Field(
        default=None,
        description="the description annotation, with placeholders; default: the value, every "
        "label, the for and the runbook",
    )
    expr: str = Field(description="the PromQL of the alert; must return an instant vector")
    # how the default description prints the value (humanized); none prints it as is
    unit: Literal["duration", "percent", "number", "bandwidth", "bytes"] | None = Field(
        default=None,
        description="the unit the default description (and {value}) prints the "
        "value humanized in; none: as it is",
    )
    annotations: dict[str, str] | None = Field(
        default=None,
        description="annotation name → text, passed through as Go templates for Prometheus",
    )
    keep_firing_for: Duration = Field(
        default=None,
        description="how long the alert keeps firing after its condition clears, e.g. 10m",
    )
    group: str | None = Field(
        default=None,
        description=GROUP,
    )
    examples: Annotated[list[CustomExample], Field(min_length=1)] | None = Field(
        default=None,
        description="input series and the times the alert must fire and must "
        "not, turned into a promtool test",
    )


class RecordingSpec(SpecBase):
    """A user's own recording rule, written out as given (plus the ``service`` label)."""

    record: str = Field(description="the recorded metric's name")
    expr: str = Field(description="the PromQL expression recorded")
    labels: dict[str, str] = Field(default={}, description="labels added to the recording")
    group: str | None = Field(
        default=None,
        description=GROUP,
    )


class GroupSpec(SpecBase):
    """A rule group named by ``group:`` on custom alerts and recordings."""

    interval: Duration = Field(
        default=None,
        description="the group's evaluation interval; default: the spec's evaluation_interval",
    )
    query_offset: Duration = Field(
        default=None,
        description="the group's queries read the data this much in the past "
        "(late samples); needs Prometheus 2.53+",
    )
    labels: dict[str, str] = Field(
        default={},
        description="labels Prometheus adds to every rule of the group (3.0+); service is refused",
    )


_ERRORS = "counter selector of the errors, no rate(): rulegen adds increase(); or good"
_GOOD = "counter selector of the good events, no rate(); exactly one of errors and good"
_TOTAL = "counter selector of all events, no rate(): rulegen adds increase()"
_HISTOGRAM = ("how the histogram is stored: classic, nhcb or native; default: the spec's "
              "histograms: (else classic)")  # fmt: skip
_BUCKETS = ("the histogram's bucket bounds to check the threshold against; default: the "
            "catalog's")  # fmt: skip
_LATENCY_METRIC = "a histogram's base name, e.g. vllm:time_to_first_token_seconds"
_LATENCY_THRESHOLD = "a bucket bound of the histogram (a plain duration, e.g. 500ms)"
_EXPR_TEST = ("the raw series when every event is good and when every event is bad, for the "
              "generated test")  # fmt: skip


class RatioSLI(SpecBase):
    """Errors (or good events) over total, counter selectors (rulegen adds the ``increase``).
    Exactly one of ``errors`` and ``good`` (checked in ``rulegen.slo.resolve``)."""

    errors: str | None = Field(default=None, description=_ERRORS)
    good: str | None = Field(default=None, description=_GOOD)
    total: str = Field(description=_TOTAL)


class LatencySLI(SpecBase):
    """Requests slower than a bucket bound of a histogram are the errors."""

    metric: str = Field(description=_LATENCY_METRIC)
    threshold: Latency = Field(description=f"{_LATENCY_THRESHOLD}; slower requests are errors")
    matchers: str | None = Field(default=None, description="matchers on the histogram's series")
    buckets: Annotated[Any, WithJsonSchema({"type": "array", "items": {"type": "number"}})] = Field(
        default=None, description=_BUCKETS
    )
    # How the histogram is stored; default: the spec's ``histograms:`` (docs/histograms.md)
    histogram: HistogramKind | None = Field(default=None, description=_HISTOGRAM)


class GoodputLatency(SpecBase):
    """One latency target of a goodput SLI: a histogram and a bucket bound of it."""

    metric: str = Field(description=_LATENCY_METRIC)
    threshold: Latency = Field(description=f"{_LATENCY_THRESHOLD}; a request meets it if faster")
    buckets: Annotated[Any, WithJsonSchema({"type": "array", "items": {"type": "number"}})] = Field(
        default=None, description=_BUCKETS
    )
    # How the histogram is stored; default: the spec's ``histograms:`` (docs/histograms.md)
    histogram: HistogramKind | None = Field(default=None, description=_HISTOGRAM)


class GoodputSLI(SpecBase):
    """Requests that meet every latency target are good (docs/slos.md#goodput): histograms
    of the same requests, read with the same matchers."""

    latencies: list[GoodputLatency] = Field(
        description="at least two {metric, threshold} targets on histograms of the same "
        "requests; a request is good when it meets every one"
    )
    matchers: str | None = Field(
        default=None, description="matchers on every histogram of the goodput SLI"
    )


class ExpressionTest(SpecBase):
    """Series for an expression SLI's generated tests: what the raw series look like when
    every event is good, and when every event is bad. Keys are series (``name{a="b"}``),
    values a gauge's number or ``+N`` (a counter growing by N a scrape)."""

    good: dict[str, Scalar] = Field(
        description="series → a gauge's number or +N (a counter growing by N a scrape) when "
        "every event is good"
    )
    bad: dict[str, Scalar] = Field(
        description="series → a gauge's number or +N (a counter growing by N a scrape) when "
        "every event is bad"
    )


_WINDOWED = "a PromQL query with the window written {{.window}}"


class EventsSLI(SpecBase):
    """Errors (or good events) and total events as PromQL queries with a ``{{.window}}``
    placeholder (Sloth's ``events``), rendered per window (docs/slos.md#expression-slis)."""

    errors: str | None = Field(
        default=None, description=f"the errors in a window: {_WINDOWED}; or good"
    )
    good: str | None = Field(
        default=None, description=f"the good events in a window: {_WINDOWED}; or errors"
    )
    total: str = Field(description=f"all events in a window: {_WINDOWED}")
    test: ExpressionTest | None = Field(default=None, description=_EXPR_TEST)


class RawSLI(SpecBase):
    """The error ratio itself, a PromQL query with a ``{{.window}}`` placeholder (Sloth's
    ``raw``), rendered per window."""

    error_ratio: str = Field(description=f"the error ratio over a window: {_WINDOWED}")
    test: ExpressionTest | None = Field(default=None, description=_EXPR_TEST)


class SLISpec(SpecBase):
    """Exactly one kind of SLI (checked in ``rulegen.slo.resolve`` at this position)."""

    ratio: RatioSLI | None = Field(
        default=None, description="errors (or good) over total, counter selectors"
    )
    latency: LatencySLI | None = Field(
        default=None, description="requests slower than a histogram's bucket bound are errors"
    )
    goodput: GoodputSLI | None = Field(
        default=None, description="requests that meet every latency target are good"
    )
    events: EventsSLI | None = Field(
        default=None, description="errors (or good) and total as PromQL queries per window"
    )
    raw: RawSLI | None = Field(
        default=None, description="the error ratio as a PromQL query per window"
    )
    # false: do not add the spec's `selectors:` of the metric's family (docs/slos.md)
    selectors: bool = Field(
        default=True,
        description="add the spec's selectors: of the SLI metric's family to "
        "its selectors; false: do not",
    )


_OWN_LABELS = "labels of this alert alone, over alerting.labels"
_OWN_ANNOTATIONS = "annotations of this alert alone, beside rulegen's own (literal text)"


class PageSwitch(SpecBase):
    """The page alert of an SLO: its severity, whether it exists, and labels and annotations
    of its own (over ``alerting.labels``; docs/slos.md#alerting)."""

    # default: the first paging severity of the declaration (critical)
    severity: Severity = None
    enabled: bool = Field(default=True, description="false: no page alert")
    labels: dict[str, str] = Field(default={}, description=_OWN_LABELS)
    annotations: dict[str, str] = Field(default={}, description=_OWN_ANNOTATIONS)


class TicketSwitch(SpecBase):
    """The ticket alert of an SLO: its severity, whether it exists, and labels and
    annotations of its own (over ``alerting.labels``)."""

    # default: the first severity of the declaration that does not page (warning)
    severity: Severity = None
    enabled: bool = Field(default=True, description="false: no ticket alert")
    labels: dict[str, str] = Field(default={}, description=_OWN_LABELS)
    annotations: dict[str, str] = Field(default={}, description=_OWN_ANNOTATIONS)


class SLOFor(SpecBase):
    """``for`` of the page and ticket alerts."""

    page: Duration = Field(default="0s", description="for of the page alert, e.g. 2m")
    ticket: Duration = Field(default="0s", description="for of the ticket alert, e.g. 15m")


class AbsentAlertSpec(SpecBase):
    """An alert while the SLI has no data (no series of its total) for ``for``: the burn-rate
    alerts see no events then and cannot fire (docs/slos.md#absent)."""

    # default: the SLO's alerting.name + "Absent"
    name: str | None = Field(
        default=None,
        pattern=ALERT_NAME,
        description="the alert's name; default: alerting.name + Absent (ErrorBudgetBurnAbsent)",
    )
    for_: Duration = Field(
        default="10m",
        alias="for",
        description="how long no series may exist before it fires (at most 7d)",
    )
    # default: the page's severity
    severity: Severity = None
    labels: dict[str, str] = Field(default={}, description="labels of this alert alone")
    annotations: dict[str, str] = Field(default={}, description=_OWN_ANNOTATIONS)


class SLOAlerting(SpecBase):
    """How an SLO's burn-rate alerts are named, labelled and guarded."""

    name: str = Field(
        default="ErrorBudgetBurn", pattern=ALERT_NAME, description="the burn-rate alerts' name"
    )
    page: PageSwitch = Field(default=PageSwitch(), description="the page alert")
    ticket: TicketSwitch = Field(default=TicketSwitch(), description="the ticket alert")
    min_traffic: Scalar = Field(
        default=None,
        description="requests per second in a tier's short window below which "
        "that tier does not fire",
    )
    for_: SLOFor = Field(
        default=SLOFor(), alias="for", description="for of the page and ticket alerts"
    )
    labels: dict[str, str] = Field(default={}, description="extra labels on the SLO's alerts")
    absent: AbsentAlertSpec | None = Field(
        default=None,
        description="an alert while the SLI has no series of its total (no data) for a while",
    )


class TierSpec(SpecBase):
    """One multi-window burn-rate tier: ``budget`` of the error budget burnt in ``long``."""

    long: Duration = Field(description="the tier's long window, e.g. 1h")
    short: Duration = Field(description="the tier's short window, e.g. 5m")
    budget: Scalar = Field(
        description="the share of the error budget burnt in the long window, e.g. 2%"
    )
    alert: Literal["page", "ticket"] = Field(description="which alert the tier fires: page or "
                                             "ticket")  # fmt: skip
    # labels or annotations of this tier alone: it becomes an alert rule of its own (the
    # same name and severity), over its alert's (docs/slos.md#labels-per-tier)
    labels: dict[str, str] = Field(
        default={},
        description="labels of this tier alone (it becomes a rule of its own), over its alert's",
    )
    annotations: dict[str, str] = Field(
        default={},
        description="annotations of this tier alone (it becomes a rule of its "
        "own), over its alert's",
    )


class SLOSpec(SpecBase):
    """A service level objective with its burn-rate alerts."""

    name: str = Field(
        pattern=SLO_NAME,
        max_length=63,
        description='unique per service; the label slo="…" on its rules',
    )
    objective: Scalar = Field(description="in (0%, 100%) exclusive: 99.9%, or the fraction 0.999")
    window: Duration = Field(default="30d", description="the SLO window, e.g. 7d, 28d, 90d")
    evaluation_interval: Duration = Field(
        default=None, description="the SLO group's interval; default: the spec's"
    )
    description: str | None = Field(default=None, description="the annotation slo_description")
    sli: SLISpec = Field(description="the SLI: exactly one of ratio, latency, goodput, events, raw")
    group_by: list[str] = Field(default=[], description="one SLO per value of these labels")
    alerting: SLOAlerting = Field(
        default=SLOAlerting(),
        description="how the burn-rate alerts are named, labelled and guarded",
    )
    tiers: Annotated[list[TierSpec], Field(min_length=1)] | None = Field(
        default=None,
        description="the burn-rate tiers {long, short, budget, alert}; default: the SRE Workbook's",
    )


class OperatorTarget(SpecBase):
    """Metadata of the service's ``PrometheusRule`` (``--target operator``)."""

    namespace: str = Field(default="monitoring", pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
                           max_length=63, description="the PrometheusRule's namespace (a DNS "
                           "label)")  # fmt: skip
    labels: dict[str, str] = Field(
        default={},
        description="the PrometheusRule's labels (what the Prometheus' ruleSelector selects)",
    )


class ThanosTarget(SpecBase):
    """Thanos Ruler settings (``--target thanos``)."""

    partial_response_strategy: Literal["warn", "abort"] | None = Field(
        default=None, description="warn or abort, on every group; default: Thanos'"
    )


class MimirTarget(SpecBase):
    """Mimir ruler settings (``--target mimir``): the namespace defaults to the service."""

    namespace: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9_.-]+$",
        description="the ruler namespace; names the file mimir/<namespace>.yaml; default: the "
        "service",
    )
    grouping_label: str = Field(
        default="cluster",
        pattern=r"^[a-zA-Z_][a-zA-Z0-9_]*$",
        description="the label every aggregation keeps",
    )


class VictoriaMetricsTarget(SpecBase):
    """vmalert group settings (``--target victoriametrics``), on every group of the service."""

    concurrency: int | None = Field(
        default=None,
        ge=1,
        description="rules of a group vmalert evaluates at once; default: vmalert's (1)",
    )
    labels: dict[str, str] = Field(
        default={},
        description="labels vmalert adds to every rule of every group (over the rules' own)",
    )
    # The server's -search.maxQueryLen (VictoriaMetrics' default): no expression is written
    # longer when fewer inlined levels fit (docs/victoriametrics.md). Below 1024 bytes not
    # even a cascade level's own expression fits.
    max_query_len: int = Field(
        default=16384,
        ge=1024,
        description="the server's -search.maxQueryLen in bytes: no "
        "rule is written longer when fewer inlined levels fit",
    )
    # SLO alert descriptions without the `query` template, which vmalert 1.79's replay mode
    # refuses (docs/victoriametrics.md#backfilling-the-slo-recordings-of-a-new-deployment-replay)
    replay_safe: bool = Field(
        default=False,
        description="true: SLO alert descriptions do not call the query "
        "template, which vmalert 1.79's replay refuses",
    )


_VERSION = {"type": "string", "pattern": "^[0-9]+\\.[0-9]+$"}


class PrometheusSettings(SpecBase):
    """The Prometheus that evaluates the rules: its version decides the PromQL semantics the
    rules and generated tests are written for (docs/compatibility.md)."""

    # A string: YAML reads an unquoted 3.10 as the number 3.1 (rulegen.pipeline.service says so).
    version: Annotated[Any, WithJsonSchema({**_VERSION, "default": "3.5"})] = Field(
        default="3.5",
        description='a quoted MAJOR.MINOR from "2.42" on, e.g. "3.5": the '
        "rules and tests follow its PromQL semantics",
    )


class VllmSettings(SpecBase):
    """The vLLM release the spec's vLLM signals read: its metric names, labels and histogram
    bucket bounds (docs/signals.md#vllm-versions). Without it, the rules read every name a
    supported release exposes."""

    # A string, as prometheus.version: YAML reads an unquoted 0.10 as the number 0.1.
    version: Annotated[Any, WithJsonSchema(_VERSION)] = Field(
        description='a quoted MAJOR.MINOR from "0.6" on, e.g. "0.34"'
    )


class HASettings(SpecBase):
    """The Prometheus HA pair that evaluates the rules: two (or more) replicas with the same
    rules, told apart by one external label (docs/routing.md#high-availability)."""

    replica_label: str = Field(
        min_length=1,
        description="the external label whose value differs between the replicas (e.g. "
        "replica): dropped from the alerts they send, so Alertmanager deduplicates them",
    )


class TargetSettings(SpecBase):
    """Per-target settings; which targets are written is chosen with ``--target``."""

    operator: OperatorTarget = Field(
        default=OperatorTarget(), description="the PrometheusRule's metadata"
    )
    thanos: ThanosTarget = Field(default=ThanosTarget(), description="Thanos Ruler settings")
    mimir: MimirTarget = Field(default=MimirTarget(), description="Mimir ruler settings")
    victoriametrics: VictoriaMetricsTarget = Field(
        default=VictoriaMetricsTarget(), description="vmalert group settings"
    )


class SpecModel(SpecBase):
    """Common top-level keys of a version-1 service spec."""

    version: Literal[1] = Field(description="the spec format's version: 1")
    service: str = Field(
        pattern=SERVICE_NAME,
        max_length=63,
        description='the label service="…" on every alert and recording; names the output files',
    )
    labels: dict[str, str] = Field(
        default={}, description="labels added to every alert of this spec"
    )
    runbook_url: str | None = Field(
        default=None,
        description="the runbook_url annotation of every alert; {alert} is "
        "replaced by the alert's name",
    )
    evaluation_interval: Duration = Field(
        default="30s", description="the rule groups' interval; at most 1h"
    )
    scrape_interval: Duration = Field(
        default="15s", description="the interval of the generated tests' series; at most 1h"
    )
    prometheus: PrometheusSettings = Field(
        default=PrometheusSettings(), description="the Prometheus that evaluates the rules"
    )
    ha: HASettings | None = Field(
        default=None,
        description="{replica_label}: the rules run on a Prometheus HA pair; rulegen "
        "build writes the alerting block each replica merges into prometheus.yml",
    )
    vllm: VllmSettings | None = Field(
        default=None,
        description="the vLLM release the vLLM signals read; default: every "
        "name a release may expose",
    )
    selectors: dict[str, str] = Field(
        default={},
        description="exporter family (node, vllm, dcgm, …) → matchers added to "
        "every selector of that family",
    )
    # classic, nhcb or native, by exporter family or histogram metric (docs/histograms.md)
    histograms: dict[str, HistogramKind] = Field(
        default={},
        description="family or histogram base name → classic, nhcb or native: "
        "how its histograms are stored",
    )
    alerts: Annotated[list[Any], Field(min_length=1)] | None = Field(
        default=None, description=ALERTS
    )
    slos: Annotated[list[SLOSpec], Field(min_length=1)] | None = Field(
        default=None, description="service level objectives with burn-rate alerts"
    )
    host_label: str | None = Field(
        default=None,
        pattern=r"^[a-zA-Z_][a-zA-Z0-9_]*$",
        description="a label every node, vLLM and DCGM series carries for its machine; "
        "default: host from instance",
    )
    # How long Prometheus keeps samples (`--storage.tsdb.retention.time`), for `rulegen lint`.
    retention: Duration = Field(
        default=None,
        description="Prometheus' --storage.tsdb.retention.time, e.g. 15d; "
        "rulegen lint checks SLO windows against it",
    )
    # Split a family's rule group past this many rules (never a recording from its alerts).
    max_group_rules: int | None = Field(
        default=None, ge=2, description="split a family's rule group past this many rules"
    )
    targets: TargetSettings = Field(
        default=TargetSettings(),
        description="settings of the Operator, Thanos, Mimir and VictoriaMetrics outputs",
    )
    diagnoses: Annotated[list[DiagnosisSpec], Field(min_length=1)] | None = Field(
        default=None, description="root-cause alerts, one kind each"
    )
    # A defaults file this spec inherits from (docs/fleets.md). The loader merges the chain
    # and removes the key before validation; it is here so editors' schema knows it.
    extends: str | None = Field(default=None, description=EXTENDS)
    recordings: Annotated[list[RecordingSpec], Field(min_length=1)] | None = Field(
        default=None, description="recording rules of your own"
    )
    groups: dict[str, GroupSpec] = Field(
        default={},
        description="name → settings of the rule groups that custom alerts and "
        "recordings name with group:",
    )
    # The severities the alerts take, most severe first, and which page (docs/spec.md#severities);
    # none: critical, warning, info, critical paging.
    severities: SeverityList = None


_MODELS: weakref.WeakKeyDictionary[Catalog, type[SpecModel]] = weakref.WeakKeyDictionary()
# By the catalog's fingerprint too: the model is made of the definitions' content only, and
# catalogs of equal definitions (the same signals folder copied elsewhere) share it.
_MODELS_BY_FINGERPRINT: dict[str, type[SpecModel]] = {}
_MODELS_MAX = 16


def spec_model(catalog: Catalog) -> type[SpecModel]:
    """The spec model for this catalog: ``alerts`` is a union tagged by ``signal``."""
    if catalog not in _MODELS:
        model = _MODELS_BY_FINGERPRINT.get(catalog.fingerprint) if catalog.fingerprint else None
        _MODELS[catalog] = model or _build_model(catalog)
        if catalog.fingerprint:
            if len(_MODELS_BY_FINGERPRINT) >= _MODELS_MAX:
                _MODELS_BY_FINGERPRINT.clear()
            _MODELS_BY_FINGERPRINT[catalog.fingerprint] = _MODELS[catalog]
    return _MODELS[catalog]


def _build_model(catalog: Catalog) -> type[SpecModel]:
    variants: list[type[AlertBase]] = [CustomAlert]
    for name, signal in sorted(catalog.signals.items()):
        params: dict[str, Any] = {
            key: (_param_type(p.type), None) for key, p in sorted(signal.params.items())
        }
        tag: Any = Literal[name]
        params["signal"] = (tag, Field(description=f"the catalog signal {name}"))
        variants.append(
            create_model(f"Alert_{name}", __base__=CatalogAlert, __doc__=signal.about, **params)
        )
    union: Any = Union[tuple(variants)]  # noqa: UP007  # built at run time from the catalog
    alert: Any = Annotated[union, Field(discriminator="signal")]
    alerts: Any = Annotated[list[alert], Field(min_length=1)] | None
    field: Any = Field(default=None, description=ALERTS)
    model: type[SpecModel] = create_model("Spec", __base__=SpecModel, alerts=(alerts, field))
    return model


def _param_type(kind: str) -> Any:
    if kind == "buckets":
        return Annotated[Any, WithJsonSchema({"type": "array", "items": {"type": "number"}})]
    if kind in ("metric", "regex"):
        return Annotated[Any, WithJsonSchema({"type": "string"})]
    return Scalar
