"""The whole service spec → ``ResolvedSpec``: its own keys checked, then its alerts, SLOs and
diagnoses resolved, each by its feature.

Why: the spec-wide keys (intervals, selectors, labels, host label, targets, the user's own
recordings and rule groups) are read once here and handed to every feature as plain values,
and what links the features is decided here too (the alerts a diagnosis explains carry its
host label), so no feature imports another.
Every semantic error of the file is collected before giving up.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from rulegen.alerts.custom import resolve_groups, resolve_recordings
from rulegen.alerts.model import NamedGroup, ResolvedAlert, ResolvedRecording
from rulegen.alerts.resolve import recipe_labels, resolve_alerts
from rulegen.catalog import Catalog
from rulegen.catalog.vllm import VllmVersion
from rulegen.core import promql
from rulegen.core.histograms import HistogramKind, Histograms, native_problem
from rulegen.core.versions import DEFAULT, PrometheusVersion
from rulegen.diagnosis.model import ResolvedDiagnosis
from rulegen.diagnosis.params import TTFT_METRIC
from rulegen.diagnosis.resolve import resolve_diagnoses
from rulegen.errors import Diagnostic
from rulegen.generated import ReplicaLabel
from rulegen.host import RESERVED_HOST_LABELS
from rulegen.slo.model import ResolvedSLO, histogram_reads
from rulegen.slo.resolve import resolve_slos
from rulegen.source.fields import Collector, duration
from rulegen.source.fields import labels as label_set
from rulegen.source.loader import Origin, PathKey, Positions
from rulegen.source.severities import DEFAULT as DEFAULT_SEVERITIES
from rulegen.source.severities import Severities, declaration
from rulegen.spec.models import TargetSettings

# The longest evaluation_interval and scrape_interval a spec may set.
MAX_INTERVAL = Decimal(3600)


@dataclass(frozen=True)
class ResolvedSpec:
    """A service spec after resolution."""

    service: str
    source: str
    evaluation_interval: Decimal
    scrape_interval: Decimal
    alerts: tuple[ResolvedAlert, ...]
    slos: tuple[ResolvedSLO, ...] = ()
    diagnoses: tuple[ResolvedDiagnosis, ...] = ()
    host_label: str | None = None
    retention: Decimal | None = None
    max_group_rules: int | None = None
    targets: TargetSettings = TargetSettings()
    # the user's own recording rules, and the interval of each rule group named by ``group:``
    recordings: tuple[ResolvedRecording, ...] = ()
    groups: tuple[NamedGroup, ...] = ()
    # the Prometheus the rules are written for (``prometheus: {version: …}``)
    prometheus: PrometheusVersion = DEFAULT
    # where it is declared (the spec's top when it is not): what a version mismatch names
    prometheus_origin: Origin | None = None
    # the vLLM release the vLLM signals read (``vllm: {version: …}``; None: every release)
    vllm: VllmVersion | None = None
    # the severities the spec declares (or inherits), most severe first; the default if none
    severities: Severities = DEFAULT_SEVERITIES
    # the Prometheus HA pair's replica label (``ha: {replica_label: …}``), None without ``ha``
    ha: ReplicaLabel | None = None


def resolve_spec(
    spec: Any, positions: Positions, catalog: Catalog
) -> tuple[ResolvedSpec | None, list[Diagnostic]]:
    """Resolve one validated spec; returns the result or the diagnostics that prevent it."""
    col = Collector(positions)
    evaluation = duration(
        col, ("evaluation_interval",), spec.evaluation_interval, positive=True, most=MAX_INTERVAL
    )
    scrape = duration(
        col, ("scrape_interval",), spec.scrape_interval, positive=True, most=MAX_INTERVAL
    )
    version = prometheus_version(col, spec.prometheus.version)
    severities = declaration(col, ("severities",), spec.severities) or DEFAULT_SEVERITIES
    vllm = vllm_version(col, spec.vllm.version) if spec.vllm is not None else None
    selectors = _selectors(col, spec.selectors, catalog, version or DEFAULT)
    _refuse_utf8_matchers(col, spec, version or DEFAULT)
    histograms = _histograms(col, spec.histograms, catalog, version)
    spec_labels = label_set(col, ("labels",), spec.labels)
    retention = None
    if spec.retention is not None:
        retention = duration(col, ("retention",), spec.retention, positive=True)
    if spec.runbook_url is not None and not re.match(r"^https?://\S+$", spec.runbook_url):
        col.error(("runbook_url",), f"must be an http(s) URL (got {spec.runbook_url!r})")
    if not spec.alerts and not spec.slos and not spec.diagnoses and not spec.recordings:
        col.error((), "a spec needs at least one entry in alerts, slos, diagnoses or recordings")
    _kubernetes_labels(col, spec.targets.operator.labels)
    _mimir_namespace(col, spec.targets.mimir.namespace)
    _vmalert_labels(col, spec.targets.victoriametrics.labels)
    host_ok = _host_label(col, spec, catalog)
    ha = _replica_label(col, spec, version or DEFAULT)
    # A bad interval is reported once; the entries are still checked, against the default,
    # so its error hides none of theirs.
    intervals = (evaluation or Decimal(30), scrape or Decimal(15))
    alerts = resolve_alerts(
        col, spec, spec_labels, intervals, selectors, catalog, histograms, vllm, severities
    )
    recordings = resolve_recordings(col, spec)
    groups = resolve_groups(col, spec, intervals[0], version or DEFAULT)
    slos = resolve_slos(
        col, spec, spec_labels, intervals[0], intervals[1], catalog, version or DEFAULT,
        histograms, severities,
    )  # fmt: skip
    diagnoses: tuple[ResolvedDiagnosis, ...] = ()
    signals = {a.name: a.signal.signal if a.signal else "custom" for a in alerts}
    if host_ok:
        diagnoses = resolve_diagnoses(
            col, spec, spec_labels, signals, selectors, intervals, catalog,
            (version or DEFAULT).left_open_ranges, histograms, severities,
        )  # fmt: skip
    _histograms_used(col, histograms, alerts, slos, diagnoses, catalog)
    if col.diagnostics or evaluation is None or scrape is None or version is None:
        return None, col.diagnostics
    explained = {name for d in diagnoses for name in d.explains}
    if explained:
        host = diagnoses[0].host
        alerts = [replace(a, host=host) if a.name in explained else a for a in alerts]
    resolved = ResolvedSpec(
        spec.service, positions.file, evaluation, scrape, tuple(alerts), slos, diagnoses,
        spec.host_label, retention, spec.max_group_rules, spec.targets, tuple(recordings),
        groups, version, col.origin(("prometheus", "version")), vllm, severities, ha,
    )  # fmt: skip
    return resolved, []


def prometheus_version(col: Collector, value: Any) -> PrometheusVersion | None:
    """``prometheus.version``: a quoted ``MAJOR.MINOR`` from 2.42 on (YAML reads an unquoted
    ``3.10`` as the number 3.1, so a number is refused rather than guessed)."""
    where = ("prometheus", "version")
    if not isinstance(value, str):
        col.error(where, f'must be a quoted string such as "3.5" (got {value!r}: YAML reads '
                  "an unquoted 3.10 as 3.1)")  # fmt: skip
        return None
    try:
        return PrometheusVersion.parse(value)
    except ValueError as exc:
        col.error(where, str(exc))
        return None


def vllm_version(col: Collector, value: Any) -> VllmVersion | None:
    """``vllm.version``: a quoted ``MAJOR.MINOR`` from 0.6 on (an unquoted 0.10 is 0.1)."""
    where = ("vllm", "version")
    if not isinstance(value, str):
        col.error(where, f'must be a quoted string such as "0.11" (got {value!r}: YAML reads '
                  "an unquoted 0.10 as 0.1)")  # fmt: skip
        return None
    try:
        return VllmVersion.parse(value)
    except ValueError as exc:
        col.error(where, str(exc))
        return None


_K8S_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_K8S_KEY = re.compile(rf"^([a-z0-9]([-a-z0-9.]{{0,251}}[a-z0-9])?/)?{_K8S_NAME}$")
_K8S_VALUE = re.compile(rf"^({_K8S_NAME})?$")


def _kubernetes_labels(col: Collector, labels: Mapping[str, str]) -> None:
    """The PrometheusRule's labels must be Kubernetes labels (the API server rejects others)."""
    for key, value in labels.items():
        path: PathKey = ("targets", "operator", "labels", key)
        if not _K8S_KEY.match(key):
            col.error(path, "invalid Kubernetes label key (prefix/name, name at most 63 chars)")
        elif not _K8S_VALUE.match(value):
            col.error(path, f"invalid Kubernetes label value {value!r} (at most 63 chars of "
                            "[A-Za-z0-9_.-], starting and ending alphanumeric)")  # fmt: skip


# Labels the SLO rules select on: a vmalert group label overwrites the rules' own labels.
_SLO_LABELS = ("slo", "slo_term")


def _vmalert_labels(col: Collector, labels: Mapping[str, str]) -> None:
    """vmalert's group ``labels`` overwrite the same labels of every rule of the group, so
    they must not name a label rulegen sets (``service``, ``severity``, ``slo``…)."""
    path: PathKey = ("targets", "victoriametrics", "labels")
    label_set(col, path, labels)
    for key in labels:
        if key in _SLO_LABELS:
            col.error((*path, key), f"label {key!r} is set by rulegen and cannot be overridden")


# A file name is at most 255 bytes on the usual file systems; ``.yaml`` takes five.
MAX_MIMIR_NAMESPACE = 250


def _mimir_namespace(col: Collector, namespace: str | None) -> None:
    """The Mimir namespace names the file ``mimir/<namespace>.yaml``: it must be one plain name.

    Why: ``.`` and ``..`` would write ``..yaml`` and ``...yaml``, hidden files that
    ``mimirtool rules load mimir/*.yaml`` never loads (so do other names starting with ``.``);
    a name past the file system's limit fails the write. The spec's pattern already keeps
    ``/``, controls and the empty name out.
    """
    if namespace is None:
        return
    path: PathKey = ("targets", "mimir", "namespace")
    where = f"it names the output file mimir/{namespace}.yaml"
    if namespace.startswith("."):
        col.error(path, f"must not start with '.' (got {namespace!r}): {where}, a hidden file")
    elif len(namespace) > MAX_MIMIR_NAMESPACE:
        col.error(
            path,
            f"must be at most {MAX_MIMIR_NAMESPACE} characters (got {len(namespace)}): it names "
            "the output file mimir/<namespace>.yaml",
        )


# Labels a replica label may not be: those the generated alerts carry (rulegen sets them, or
# reads them from the series, or an SLO's series keep them); dropping one of them from every
# alert a replica sends would strip it from the alerts themselves.
_ALERT_LABELS = RESERVED_HOST_LABELS | {"slo", "slo_term", "host"}


def _replica_label(col: Collector, spec: Any, version: PrometheusVersion) -> ReplicaLabel | None:
    """``ha.replica_label``: a label name the declared Prometheus takes as an external label
    (UTF-8 names from 3.0 on), that no generated alert carries.

    Why refused here: the alerting block rulegen writes drops this label from every alert a
    replica sends; an alert label of the same name (``instance``, ``severity``, the host
    label, one of ``labels:``) would vanish with it and break routing and inhibitions.
    """
    if spec.ha is None:
        return None
    name = spec.ha.replica_label
    where = ("ha", "replica_label")
    own = {spec.host_label or "host", *spec.labels}
    if name.startswith("__"):
        problem = "labels starting with __ are reserved for Prometheus' internal use"
    elif not promql.LABEL_NAME.match(name) and (refused := promql.label_refusal([name], version)):
        problem = refused
    elif not promql.writable_label(name):
        problem = "not a label name rulegen can write (no space, quote, backslash, brace, % or $)"
    elif name in _ALERT_LABELS or name in own:
        problem = (
            "the generated alerts carry it, and the replicas drop the replica label from "
            "every alert they send; choose a label only the replicas' external_labels set"
        )
    else:
        return ReplicaLabel(name, col.origin(where))
    col.error(where, f"{name!r} cannot be the replica label: {problem}")
    return None


def _host_label(col: Collector, spec: Any, catalog: Catalog) -> bool:
    """``host_label`` must be a label every series of one host shares, and nothing else.

    Why: it is kept through the catalog signals' aggregations and set on every series of
    their generated tests, so a label those series already carry (``le``, ``grpc_method``,
    ``device``…) would be overwritten, and a label starting with ``__`` never reaches a result.
    """
    label = spec.host_label
    if label is None:
        return True
    if label.startswith("__"):
        col.error(
            ("host_label",),
            f"{label!r} cannot be the host label: labels starting with __ are reserved for "
            "Prometheus' internal use",
        )
        return False
    taken = set(RESERVED_HOST_LABELS)
    for alert in spec.alerts or ():
        if alert.signal != "custom":
            taken.update(recipe_labels(catalog.signals[alert.signal]))
    if label in taken:
        col.error(
            ("host_label",),
            f"{label!r} cannot be the host label: rulegen sets it or it differs between the "
            "series of one host",
        )
        return False
    return True


def _selectors(
    col: Collector, selectors: Mapping[str, str], catalog: Catalog, version: PrometheusVersion
) -> dict[str, tuple[promql.Matcher, ...]]:
    """``selectors:``, family by family; a UTF-8 label name (``"k8s.cluster"="prod"``) is
    quoted wherever the matchers are written, and needs a 3.x declaration."""
    out: dict[str, tuple[promql.Matcher, ...]] = {}
    for family, text in selectors.items():
        if family not in catalog.families:
            col.error(
                ("selectors", family), f"unknown family (known: {', '.join(catalog.families)})"
            )
            continue
        try:
            matchers = promql.parse_matchers(text)
        except ValueError as exc:
            col.error(("selectors", family), str(exc))
            continue
        refused = promql.utf8_refusal("", matchers, version)
        if refused:
            col.error(("selectors", family), refused)
            continue
        out[family] = matchers
    return out


def _refuse_utf8_matchers(col: Collector, spec: Any, version: PrometheusVersion) -> None:
    """An alert's or latency SLI's ``matchers`` with a UTF-8 label name under a 2.x
    declaration (a matcher that does not parse is reported where it is resolved)."""
    if version.at_least(*promql.UTF8_SINCE):
        return
    fields: list[tuple[PathKey, str | None]] = [
        (("alerts", i, "matchers"), getattr(a, "matchers", None))
        for i, a in enumerate(spec.alerts or ())
    ]
    for i, slo in enumerate(spec.slos or ()):
        latency = slo.sli.latency if slo.sli is not None else None
        if latency is not None:
            fields.append((("slos", i, "sli", "latency", "matchers"), latency.matchers))
    for path, text in fields:
        try:
            refused = promql.utf8_refusal("", promql.parse_matchers(text or ""), version)
        except ValueError:
            continue
        if refused:
            col.error(path, refused)


def _histograms(
    col: Collector,
    entries: Mapping[str, HistogramKind],
    catalog: Catalog,
    version: PrometheusVersion | None,
) -> Histograms:
    """``histograms:``: a key is an exporter family (``vllm``) or a histogram's base name.

    Why the version check here: native histograms and NHCB are written for Prometheus 3.0 on
    (``rulegen.core.histograms.NATIVE_SINCE``); a 2.x declaration with them is a spec error at
    the entry, not a failing test later.
    """
    families: dict[str, HistogramKind] = {}
    metrics: dict[str, HistogramKind] = {}
    for key, kind in entries.items():
        path: PathKey = ("histograms", key)
        if key in catalog.families:
            families[key] = kind
        elif not promql.METRIC_NAME.match(key) or key.endswith(("_bucket", "_count", "_sum")):
            col.error(path, f"must be a family ({', '.join(catalog.families)}) or a "
                      "histogram's base name (no _bucket, _count or _sum)")  # fmt: skip
            continue
        else:
            metrics[key] = kind
        problem = native_problem(kind, version) if version is not None else None
        if problem is not None:
            col.error(path, problem)
    return Histograms.of(families, metrics)


def _histograms_used(
    col: Collector,
    histograms: Histograms,
    alerts: list[ResolvedAlert],
    slos: tuple[ResolvedSLO, ...],
    diagnoses: tuple[ResolvedDiagnosis, ...],
    catalog: Catalog,
) -> None:
    """A metric entry no latency SLI, histogram alert or diagnosis reads is a typo (of a family or a
    metric name): it would change nothing, silently."""
    read = {one.metric for slo in slos for one in histogram_reads(slo.sli)}
    read.update(a.histogram_metric for a in alerts if a.histogram_metric is not None)
    if any(e.quantity == "ttft" for d in diagnoses for e in d.evidence):
        read.add(TTFT_METRIC)
    for metric, _ in histograms.metrics:
        if metric not in read:
            col.error(("histograms", metric), "no latency SLI or histogram alert of this spec "
                      f"reads {metric!r} (families: {', '.join(catalog.families)})")  # fmt: skip
