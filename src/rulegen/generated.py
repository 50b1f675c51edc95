"""The output model: generated rules and promtool tests as plain typed objects.

Why: every feature (alerts, SLOs, diagnoses) produces these and every renderer and target
reads only these, so defaults, label merges and unit conversions all happen before this
point and renderers are pure functions from these objects to YAML-ready data. (Each
feature's ``model.py`` is its resolved *input*; this module is the one *output* model.)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rulegen.source.loader import Origin


@dataclass(frozen=True)
class RecordingRule:
    """A recording rule carrying a derived quantity (``level:metric:operations``)."""

    record: str
    expr: str
    labels: tuple[tuple[str, str], ...]
    origin: Origin


@dataclass(frozen=True)
class AlertRule:
    """An alerting rule; labels and annotations are final (Go-template safe) strings."""

    alert: str
    expr: str
    for_: str
    labels: tuple[tuple[str, str], ...]
    annotations: tuple[tuple[str, str], ...]
    origin: Origin


@dataclass(frozen=True)
class RuleGroup:
    """A rule group: recordings first, then the alerts that read them, one interval."""

    name: str
    interval: str
    rules: tuple[RecordingRule | AlertRule, ...]


@dataclass(frozen=True)
class InputSeries:
    """A promtool input series in expanding notation (``'0+15x40'``)."""

    series: str
    values: str


@dataclass(frozen=True)
class ExpectedAlert:
    """A firing alert promtool must see, with its exact labels and annotations."""

    labels: tuple[tuple[str, str], ...]
    annotations: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class AlertCheck:
    """At ``eval_time`` exactly these alerts named ``alertname`` are firing."""

    eval_time: str
    alertname: str
    alerts: tuple[ExpectedAlert, ...]
    comment: str


@dataclass(frozen=True)
class ExprCheck:
    """At ``eval_time`` ``expr`` returns exactly these samples."""

    eval_time: str
    expr: str
    samples: tuple[tuple[str, str], ...]
    comment: str


@dataclass(frozen=True)
class TestCase:
    """One promtool test: the input series and the checks run on them."""

    name: str
    interval: str
    series: tuple[InputSeries, ...]
    alert_checks: tuple[AlertCheck, ...]
    expr_checks: tuple[ExprCheck, ...]
    evaluations: int = 0


@dataclass(frozen=True)
class SLOOutput:
    """One SLO's rule group and its generated tests (written to their own files)."""

    name: str
    evaluation_interval: str
    group: RuleGroup
    tests: tuple[TestCase, ...]
    history_step: str = ""
    history_tests: tuple[TestCase, ...] = ()
    group_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class Explanation:
    """A diagnosis alert and the alerts it explains on the same host (to inhibit them)."""

    alert: str
    explains: tuple[str, ...]
    host_label: str


@dataclass(frozen=True)
class ServiceOutput:
    """Everything generated for one service spec."""

    service: str
    source: str
    evaluation_interval: str
    groups: tuple[RuleGroup, ...]
    tests: tuple[TestCase, ...]
    slos: tuple[SLOOutput, ...] = field(default=())
    explanations: tuple[Explanation, ...] = field(default=())
