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


class AlertBase(SpecBase):
    """Keys every alert accepts, whatever its signal."""

    name: str | None = Field(default=None, pattern=ALERT_NAME)
    severity: Severity
    for_: Duration = Field(default=None, alias="for")
    labels: dict[str, str] = {}
    summary: str | None = None
    description: str | None = None


class CatalogAlert(AlertBase):
    """Keys of an alert on a catalog signal (signal-specific params are added per signal)."""

    threshold: Scalar
    window: Duration = None
    matchers: str | None = None


class ExampleSeries(SpecBase):
    """One input series of a custom alert's example, in promtool's expanding notation."""

    series: str
    values: str


class CustomExample(SpecBase):
    """Input series and the times a custom alert must fire (and must not) on them."""

    series: Annotated[list[ExampleSeries], Field(min_length=1)]
    fires_at: list[Duration] = []
    silent_at: list[Duration] = []
    labels: dict[str, str] = {}
    value: Scalar = None
    interval: Duration = None


class CustomAlert(AlertBase):
    """An alert on a user-written PromQL expression."""

    signal: Literal["custom"]
    name: str = Field(pattern=ALERT_NAME)
    expr: str
    # how the default description prints the value (humanized); none prints it as is
    unit: Literal["duration", "percent", "number", "bandwidth", "bytes"] | None = None
    annotations: dict[str, str] | None = None
    keep_firing_for: Duration = None
    group: str | None = None
    examples: Annotated[list[CustomExample], Field(min_length=1)] | None = None


class RecordingSpec(SpecBase):
    """A user's own recording rule, written out as given (plus the ``service`` label)."""

    record: str
    expr: str
    labels: dict[str, str] = {}
    group: str | None = None


class GroupSpec(SpecBase):
    """A rule group named by ``group:`` on custom alerts and recordings."""

    interval: Duration = None
    query_offset: Duration = None
    labels: dict[str, str] = {}


class RatioSLI(SpecBase):
    """Errors (or good events) over total, counter selectors (rulegen adds the ``increase``).
    Exactly one of ``errors`` and ``good`` (checked in ``rulegen.slo.resolve``)."""

    errors: str | None = None
    good: str | None = None
    total: str


class LatencySLI(SpecBase):
    """Requests slower than a bucket bound of a histogram are the errors."""

    metric: str
    threshold: Latency
    matchers: str | None = None
    buckets: Annotated[Any, WithJsonSchema({"type": "array", "items": {"type": "number"}})] = None
    # How the histogram is stored; default: the spec's ``histograms:`` (docs/histograms.md)
    histogram: HistogramKind | None = None


class GoodputLatency(SpecBase):
    """One latency target of a goodput SLI: a histogram and a bucket bound of it."""

    metric: str
    threshold: Latency
    buckets: Annotated[Any, WithJsonSchema({"type": "array", "items": {"type": "number"}})] = None
    # How the histogram is stored; default: the spec's ``histograms:`` (docs/histograms.md)
    histogram: HistogramKind | None = None


class GoodputSLI(SpecBase):
    """Requests that meet every latency target are good (docs/slos.md#goodput): histograms
    of the same requests, read with the same matchers."""

    latencies: list[GoodputLatency]
    matchers: str | None = None


class ExpressionTest(SpecBase):
    """Series for an expression SLI's generated tests: what the raw series look like when
    every event is good, and when every event is bad. Keys are series (``name{a="b"}``),
    values a gauge's number or ``+N`` (a counter growing by N a scrape)."""

    good: dict[str, Scalar]
    bad: dict[str, Scalar]


class EventsSLI(SpecBase):
    """Errors (or good events) and total events as PromQL queries with a ``{{.window}}``
    placeholder (Sloth's ``events``), rendered per window (docs/slos.md#expression-slis)."""

    errors: str | None = None
    good: str | None = None
    total: str
    test: ExpressionTest | None = None


class RawSLI(SpecBase):
    """The error ratio itself, a PromQL query with a ``{{.window}}`` placeholder (Sloth's
    ``raw``), rendered per window."""

    error_ratio: str
    test: ExpressionTest | None = None


class SLISpec(SpecBase):
    """Exactly one kind of SLI (checked in ``rulegen.slo.resolve`` at this position)."""

    ratio: RatioSLI | None = None
    latency: LatencySLI | None = None
    goodput: GoodputSLI | None = None
    events: EventsSLI | None = None
    raw: RawSLI | None = None
    # false: do not add the spec's `selectors:` of the metric's family (docs/slos.md)
    selectors: bool = True


class PageSwitch(SpecBase):
    """The page alert of an SLO: its severity, whether it exists, and labels and annotations
    of its own (over ``alerting.labels``; docs/slos.md#alerting)."""

    # default: the first paging severity of the declaration (critical)
    severity: Severity = None
    enabled: bool = True
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}


class TicketSwitch(SpecBase):
    """The ticket alert of an SLO: its severity, whether it exists, and labels and
    annotations of its own (over ``alerting.labels``)."""

    # default: the first severity of the declaration that does not page (warning)
    severity: Severity = None
    enabled: bool = True
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}


class SLOFor(SpecBase):
    """``for`` of the page and ticket alerts."""

    page: Duration = "0s"
    ticket: Duration = "0s"


class AbsentAlertSpec(SpecBase):
    """An alert while the SLI has no data (no series of its total) for ``for``: the burn-rate
    alerts see no events then and cannot fire (docs/slos.md#absent)."""

    # default: the SLO's alerting.name + "Absent"
    name: str | None = Field(default=None, pattern=ALERT_NAME)
    for_: Duration = Field(default="10m", alias="for")
    # default: the page's severity
    severity: Severity = None
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}


class SLOAlerting(SpecBase):
    """How an SLO's burn-rate alerts are named, labelled and guarded."""

    name: str = Field(default="ErrorBudgetBurn", pattern=ALERT_NAME)
    page: PageSwitch = PageSwitch()
    ticket: TicketSwitch = TicketSwitch()
    min_traffic: Scalar = None
    for_: SLOFor = Field(default=SLOFor(), alias="for")
    labels: dict[str, str] = {}
    absent: AbsentAlertSpec | None = None


class TierSpec(SpecBase):
    """One multi-window burn-rate tier: ``budget`` of the error budget burnt in ``long``."""

    long: Duration
    short: Duration
    budget: Scalar
    alert: Literal["page", "ticket"]
    # labels or annotations of this tier alone: it becomes an alert rule of its own (the
    # same name and severity), over its alert's (docs/slos.md#labels-per-tier)
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}


class SLOSpec(SpecBase):
    """A service level objective with its burn-rate alerts."""

    name: str = Field(pattern=SLO_NAME, max_length=63)
    objective: Scalar
    window: Duration = "30d"
    evaluation_interval: Duration = None
    description: str | None = None
    sli: SLISpec
    group_by: list[str] = []
    alerting: SLOAlerting = SLOAlerting()
    tiers: Annotated[list[TierSpec], Field(min_length=1)] | None = None


class OperatorTarget(SpecBase):
    """Metadata of the service's ``PrometheusRule`` (``--target operator``)."""

    namespace: str = Field(default="monitoring", pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
                           max_length=63)  # fmt: skip
    labels: dict[str, str] = {}


class ThanosTarget(SpecBase):
    """Thanos Ruler settings (``--target thanos``)."""

    partial_response_strategy: Literal["warn", "abort"] | None = None


class MimirTarget(SpecBase):
    """Mimir ruler settings (``--target mimir``): the namespace defaults to the service."""

    namespace: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_.-]+$")
    grouping_label: str = Field(default="cluster", pattern=r"^[a-zA-Z_][a-zA-Z0-9_]*$")


class VictoriaMetricsTarget(SpecBase):
    """vmalert group settings (``--target victoriametrics``), on every group of the service."""

    concurrency: int | None = Field(default=None, ge=1)
    labels: dict[str, str] = {}
    # The server's -search.maxQueryLen (VictoriaMetrics' default): no expression is written
    # longer when fewer inlined levels fit (docs/victoriametrics.md). Below 1024 bytes not
    # even a cascade level's own expression fits.
    max_query_len: int = Field(default=16384, ge=1024)
    # SLO alert descriptions without the `query` template, which vmalert 1.79's replay mode
    # refuses (docs/victoriametrics.md#backfilling-the-slo-recordings-of-a-new-deployment-replay)
    replay_safe: bool = False


class PrometheusSettings(SpecBase):
    """The Prometheus that evaluates the rules: its version decides the PromQL semantics the
    rules and generated tests are written for (docs/compatibility.md)."""

    # A string: YAML reads an unquoted 3.10 as the number 3.1 (rulegen.pipeline.service says so).
    version: Annotated[
        Any, WithJsonSchema({"type": "string", "pattern": "^[0-9]+\\.[0-9]+$", "default": "3.5"})
    ] = "3.5"


class VllmSettings(SpecBase):
    """The vLLM release the spec's vLLM signals read: its metric names, labels and histogram
    bucket bounds (docs/signals.md#vllm-versions). Without it, the rules read every name a
    supported release exposes."""

    # A string, as prometheus.version: YAML reads an unquoted 0.10 as the number 0.1.
    version: Annotated[Any, WithJsonSchema({"type": "string", "pattern": "^[0-9]+\\.[0-9]+$"})]


class TargetSettings(SpecBase):
    """Per-target settings; which targets are written is chosen with ``--target``."""

    operator: OperatorTarget = OperatorTarget()
    thanos: ThanosTarget = ThanosTarget()
    mimir: MimirTarget = MimirTarget()
    victoriametrics: VictoriaMetricsTarget = VictoriaMetricsTarget()


class SpecModel(SpecBase):
    """Common top-level keys of a version-1 service spec."""

    version: Literal[1]
    service: str = Field(pattern=SERVICE_NAME, max_length=63)
    labels: dict[str, str] = {}
    runbook_url: str | None = None
    evaluation_interval: Duration = "30s"
    scrape_interval: Duration = "15s"
    prometheus: PrometheusSettings = PrometheusSettings()
    vllm: VllmSettings | None = None
    selectors: dict[str, str] = {}
    # classic, nhcb or native, by exporter family or histogram metric (docs/histograms.md)
    histograms: dict[str, HistogramKind] = {}
    alerts: Annotated[list[Any], Field(min_length=1)] | None = None
    slos: Annotated[list[SLOSpec], Field(min_length=1)] | None = None
    host_label: str | None = Field(default=None, pattern=r"^[a-zA-Z_][a-zA-Z0-9_]*$")
    # How long Prometheus keeps samples (`--storage.tsdb.retention.time`), for `rulegen lint`.
    retention: Duration = None
    # Split a family's rule group past this many rules (never a recording from its alerts).
    max_group_rules: int | None = Field(default=None, ge=2)
    targets: TargetSettings = TargetSettings()
    diagnoses: Annotated[list[DiagnosisSpec], Field(min_length=1)] | None = None
    # A defaults file this spec inherits from (docs/fleets.md). The loader merges the chain
    # and removes the key before validation; it is here so editors' schema knows it.
    extends: str | None = None
    recordings: Annotated[list[RecordingSpec], Field(min_length=1)] | None = None
    groups: dict[str, GroupSpec] = {}
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
        params["signal"] = (tag, ...)
        variants.append(
            create_model(f"Alert_{name}", __base__=CatalogAlert, __doc__=signal.about, **params)
        )
    union: Any = Union[tuple(variants)]  # noqa: UP007  # built at run time from the catalog
    alert: Any = Annotated[union, Field(discriminator="signal")]
    alerts: Any = Annotated[list[alert], Field(min_length=1)] | None
    model: type[SpecModel] = create_model("Spec", __base__=SpecModel, alerts=(alerts, None))
    return model


def _param_type(kind: str) -> Any:
    if kind == "buckets":
        return Annotated[Any, WithJsonSchema({"type": "array", "items": {"type": "number"}})]
    if kind in ("metric", "regex"):
        return Annotated[Any, WithJsonSchema({"type": "string"})]
    return Scalar
