"""The output model: generated rules and promtool tests as plain typed objects.

Why: every feature (alerts, SLOs, diagnoses) produces these and every renderer and target
reads only these, so defaults, label merges and unit conversions all happen before this
point and renderers are pure functions from these objects to YAML-ready data. (Each
feature's ``model.py`` is its resolved *input*; this module is the one *output* model.)

An alert's condition is a tree of typed nodes, not PromQL text: its thresholds are exact
numbers with their unit, its durations exact seconds. Only ``rulegen.render.prometheus``
writes them as PromQL and Prometheus durations, so a dashboard, a backtest or a diff reads a
threshold from the model instead of parsing it back out of an expression.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import Literal

from rulegen.core.promql import Matcher
from rulegen.core.versions import DEFAULT, PrometheusVersion
from rulegen.source.loader import Origin

# --- alert conditions ---------------------------------------------------------------------

Operator = Literal[">", "<", ">=", "<=", "==", "!="]
# The catalog's units, plus what SLO alerts compare: ``ratio`` a plain multiple (a burn rate:
# an error ratio over the error budget), ``rate`` events per second (``min_traffic``).
ThresholdUnit = Literal["duration", "percent", "number", "bandwidth", "ratio", "rate"]


@dataclass(frozen=True)
class Threshold:
    """An exact number and its unit: ``0.005`` ``duration`` is 5ms, ``0.8`` ``percent`` 80%.

    ``value`` is a ``Decimal`` (what a spec wrote, converted exactly), or a ``Fraction`` where
    the number is a quotient with no finite decimal (an SLO's burn factor over a 7h window,
    ``720/7``, written ``(720 / 7)``).
    """

    value: Decimal | Fraction
    unit: ThresholdUnit


@dataclass(frozen=True)
class Recorded:
    """The series of a recording rule, selected by ``matchers``: ``name{service="web"}``."""

    record: str
    matchers: tuple[Matcher, ...] = ()


@dataclass(frozen=True)
class Divided:
    """A recording over a constant: an error ratio over the error budget (a burn rate), an
    increase over its window in seconds (a per-second rate)."""

    dividend: Recorded
    divisor: Decimal


@dataclass(frozen=True)
class VersusBaseline:
    """``current`` over its own mean in the ``baseline_seconds`` before the last
    ``offset_seconds`` (a throughput against what it was before it dropped); no value while
    that mean is 0."""

    current: Recorded
    baseline_seconds: Decimal
    offset_seconds: Decimal


@dataclass(frozen=True)
class Expression:
    """A quantity as PromQL text: a catalog signal's rendered template, or the left side of a
    user's comparison."""

    promql: str


Quantity = Recorded | Divided | VersusBaseline | Expression


@dataclass(frozen=True)
class Comparison:
    """``quantity op threshold``: the series of ``quantity`` whose value passes."""

    quantity: Quantity
    op: Operator
    threshold: Threshold


@dataclass(frozen=True)
class And:
    """Both conditions hold for the same labels: ``left and right``, or with ``on`` only
    these labels must agree (``and on (host)``: evidence on the same host)."""

    left: Condition
    right: Condition
    on: tuple[str, ...] | None = None


@dataclass(frozen=True)
class AnyOf:
    """Any of the conditions holds (an SLO alert's tiers): ``(a) or (b)``."""

    conditions: tuple[Condition, ...]


@dataclass(frozen=True)
class HostFromInstance:
    """``condition`` with a ``host`` label derived from ``instance`` (its port stripped), so a
    diagnosis on the same host can inhibit the alert."""

    condition: Condition


@dataclass(frozen=True)
class Verbatim:
    """A user's own PromQL (a ``custom`` alert), written out exactly as given.

    ``reading`` is what it compares when it is a plain ``quantity op number`` (read once, when
    the spec is resolved), so the dashboard can draw its threshold and a backtest suggest
    one; ``None`` for any other expression.
    """

    promql: str
    reading: Comparison | None = None


Condition = Comparison | And | AnyOf | HostFromInstance | Verbatim


def comparison_of(condition: Condition) -> Comparison | None:
    """The one comparison a condition is (through the host label, or a verbatim expression's
    reading), or ``None`` for a compound condition: what a single threshold line shows."""
    if isinstance(condition, HostFromInstance):
        return comparison_of(condition.condition)
    if isinstance(condition, Verbatim):
        return condition.reading
    return condition if isinstance(condition, Comparison) else None


def comparisons(condition: Condition) -> tuple[Comparison, ...]:
    """Every comparison of a condition, in the order the expression reads them (a verbatim
    expression's reading, if any): the thresholds a diff of two builds compares."""
    if isinstance(condition, Comparison):
        return (condition,)
    if isinstance(condition, And):
        return comparisons(condition.left) + comparisons(condition.right)
    if isinstance(condition, AnyOf):
        return tuple(c for item in condition.conditions for c in comparisons(item))
    if isinstance(condition, HostFromInstance):
        return comparisons(condition.condition)
    return (condition.reading,) if condition.reading is not None else ()


# --- rules ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RecordingRule:
    """A recording rule carrying a derived quantity (``level:metric:operations``).

    Its ``expr`` stays PromQL text: a recording *is* an expression, and nothing reads a
    threshold out of it.
    """

    record: str
    expr: str
    labels: tuple[tuple[str, str], ...]
    origin: Origin


@dataclass(frozen=True)
class AlertRule:
    """An alerting rule; labels and annotations are final (Go-template safe) strings.

    ``for_seconds`` is exact (0: no ``for``); the renderer writes it as ``5m``, and
    ``keep_firing_for_seconds`` likewise (0: none, not written). ``subject`` is what the
    alert watches in the spec's words (``await`` for the signal ``disk_await``, ``page burn
    rate`` for an SLO's page): a backtest picture's title; no renderer writes it.
    """

    alert: str
    condition: Condition
    for_seconds: Decimal
    labels: tuple[tuple[str, str], ...]
    annotations: tuple[tuple[str, str], ...]
    origin: Origin
    keep_firing_for_seconds: Decimal = Decimal(0)
    subject: str = ""


@dataclass(frozen=True)
class RuleGroup:
    """A rule group: recordings first, then the alerts that read them, one interval (exact
    seconds)."""

    name: str
    interval_seconds: Decimal
    rules: tuple[RecordingRule | AlertRule, ...]
    # a named group's ``query_offset`` (Prometheus 2.53+; 0: none) and group ``labels``
    # (Prometheus 3.0+: added to every rule, whose own labels win)
    query_offset_seconds: Decimal = Decimal(0)
    labels: tuple[tuple[str, str], ...] = ()


# --- promtool tests -----------------------------------------------------------------------


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
    """One promtool test: the input series (one sample per ``interval_seconds``) and the
    checks run on them."""

    name: str
    interval_seconds: Decimal
    series: tuple[InputSeries, ...]
    alert_checks: tuple[AlertCheck, ...]
    expr_checks: tuple[ExprCheck, ...]
    evaluations: int = 0


@dataclass(frozen=True)
class SLOOutput:
    """One SLO's rule group and its generated tests (written to their own files): the tests
    evaluated every ``evaluation_interval_seconds``, the history tests (if any) every
    ``history_step_seconds``."""

    name: str
    evaluation_interval_seconds: Decimal
    group: RuleGroup
    tests: tuple[TestCase, ...]
    history_step_seconds: Decimal = Decimal(0)
    history_tests: tuple[TestCase, ...] = ()
    group_by: tuple[str, ...] = ()
    # the group for MetricsQL: ``increase()`` base windows (MetricsQL's does not
    # extrapolate), fallbacks keeping vmalert's group labels; set where ``group`` differs
    increase_group: RuleGroup | None = None
    # ``page`` or ``ticket`` for each burn-rate alert rule of ``group``, in its order (a tier
    # with labels of its own is a rule of its own): which rules the page inhibits
    alert_keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class Explanation:
    """A diagnosis alert and the alerts it explains on the same host (to inhibit them)."""

    alert: str
    explains: tuple[str, ...]
    host_label: str


@dataclass(frozen=True)
class ReplicaLabel:
    """``ha.replica_label``: the external label that tells the replicas of a Prometheus HA
    pair apart, dropped from the alerts they send (so Alertmanager sees one alert, not one a
    replica), and where the spec (or its defaults file) declares it."""

    name: str
    origin: Origin


@dataclass(frozen=True)
class ServiceOutput:
    """Everything generated for one service spec."""

    service: str
    source: str
    evaluation_interval_seconds: Decimal
    groups: tuple[RuleGroup, ...]
    tests: tuple[TestCase, ...]
    slos: tuple[SLOOutput, ...] = field(default=())
    explanations: tuple[Explanation, ...] = field(default=())
    # the Prometheus the rules and tests are written for, and where the spec says so
    prometheus: PrometheusVersion = DEFAULT
    prometheus_origin: Origin | None = None
    # the spec position of each generated test case written from the user's own words (a
    # custom alert's example), by the case's name: where a failure of it points
    case_origins: tuple[tuple[str, Origin], ...] = ()
    # the Prometheus HA pair's replica label (``ha:``), None when the spec declares none
    ha: ReplicaLabel | None = None
