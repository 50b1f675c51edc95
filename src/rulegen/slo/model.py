"""Resolved SLOs: every default filled, every number exact.

Why: burn factors and thresholds are exact fractions (``14.4``, ``14/15``) computed once here,
so rules, annotations and tests print the same value and never float noise.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

from rulegen.core import promql
from rulegen.core.histograms import CLASSIC, HistogramKind, is_native
from rulegen.source.loader import Origin

PAGE, TICKET = "page", "ticket"


@dataclass(frozen=True)
class Selector:
    """A counter selector: metric name and matchers."""

    metric: str
    matchers: tuple[promql.Matcher, ...]

    def render(self) -> str:
        """``name{a="b"}``, or the bare name without matchers; a UTF-8 name quoted inside
        the braces (``{"http.requests", a="b"}``, Prometheus 3)."""
        return promql.selector_text(self.metric, self.matchers)


@dataclass(frozen=True)
class RatioSLI:
    """Errors over total events."""

    errors: Selector
    total: Selector


@dataclass(frozen=True)
class GoodRatioSLI:
    """Good events over total events, from two counters: a histogram's bucket over its count,
    or one family's successes over another's requests. The good events must be a subset of
    the total's (``rulegen.slo.resolve`` checks the matchers); the errors are total − good."""

    good: Selector
    total: Selector


@dataclass(frozen=True)
class LatencySLI:
    """Events slower than ``threshold`` (a bucket bound of the histogram ``metric``).

    ``histogram``: how the histogram is stored; classic is read through its ``_bucket`` and
    ``_count`` series, a native one (NHCB or exponential) through its one ``series``.
    """

    metric: str
    threshold: Decimal
    matchers: tuple[promql.Matcher, ...]
    histogram: HistogramKind = CLASSIC

    @property
    def good(self) -> Selector:
        """The bucket counting events at most ``threshold`` seconds long (classic)."""
        return Selector(
            f"{self.metric}_bucket", (*self.matchers, promql.le_matcher(self.threshold))
        )

    @property
    def total(self) -> Selector:
        """The histogram's event count (classic)."""
        return Selector(f"{self.metric}_count", self.matchers)

    @property
    def series(self) -> Selector:
        """The native histogram series."""
        return Selector(self.metric, self.matchers)

    @property
    def native(self) -> bool:
        return is_native(self.histogram)


@dataclass(frozen=True)
class GoodputSLI:
    """Requests that meet every latency target are good: ``latencies`` (at least two) are
    histograms of the same requests (TTFT, end-to-end, queue time), read with the same
    matchers, each a ``LatencySLI`` of its own metric, threshold and histogram kind.

    The joint count (requests fast in every histogram) is not observable from separate
    histograms, so the SLI is its exact lower bound: the errors of a window are
    ``min(total, Σᵢ badᵢ)``, ``badᵢ`` the events of histogram ``i`` slower than its threshold,
    and the good events ``max(0, total − Σᵢ badᵢ) = Σᵢ goodᵢ − (n − 1)·total`` at least. The
    total is the first latency's count (docs/slos.md#goodput).
    """

    latencies: tuple[LatencySLI, ...]

    @property
    def first(self) -> LatencySLI:
        """The latency whose count is the SLI's total."""
        return self.latencies[0]

    @property
    def matchers(self) -> tuple[promql.Matcher, ...]:
        """The matchers every latency shares."""
        return self.first.matchers

    @property
    def total(self) -> Selector:
        """The total events (classic): the first latency's count."""
        return self.first.total


WINDOW = "{{.window}}"
"""Where an expression SLI's query takes its window, as Sloth writes it."""


@dataclass(frozen=True)
class Query:
    """A PromQL query with ``WINDOW`` placeholders."""

    text: str

    def at(self, window: str) -> str:
        """The query over ``window`` (``5m``, ``30d``)."""
        return self.text.replace(WINDOW, window)


@dataclass(frozen=True)
class TestSeries:
    """An expression SLI's test series: each raw series' value when every event is good and
    when every event is bad (``rulegen.slo.expression_tests``). A value is a gauge's number,
    or the increase a scrape of a counter (``counter``)."""

    good: tuple[tuple[str, Decimal], ...]
    bad: tuple[tuple[str, Decimal], ...]
    counters: frozenset[str] = frozenset()


@dataclass(frozen=True)
class EventsSLI:
    """Errors (or good events) and total events as queries over a window: rendered per
    window the alerts read, not added up in a cascade (docs/slos.md#expression-slis)."""

    part: Query
    total: Query
    good: bool  # ``part`` counts good events (errors = total − good)
    test: TestSeries | None = None


@dataclass(frozen=True)
class RawSLI:
    """The error ratio itself as a query over a window (Sloth's ``raw``)."""

    error_ratio: Query
    test: TestSeries | None = None


ExpressionSLI = EventsSLI | RawSLI

SLI = RatioSLI | GoodRatioSLI | LatencySLI | GoodputSLI | EventsSLI | RawSLI


def histogram_reads(sli: SLI) -> tuple[LatencySLI, ...]:
    """The histograms an SLI reads, each with its threshold: a latency SLI's one, a goodput
    SLI's every latency, none for a ratio."""
    if isinstance(sli, GoodputSLI):
        return sli.latencies
    if isinstance(sli, LatencySLI):
        return (sli,)
    return ()


def total_series(sli: SLI) -> Selector:
    """The series whose absence means the SLI has no data (``alerting.absent``): a ratio's
    total, a classic histogram's ``_count``, a native histogram's one series; a goodput SLI's
    first latency's (the one that counts its total)."""
    one = sli.first if isinstance(sli, GoodputSLI) else sli
    if isinstance(one, LatencySLI):
        return one.series if one.native else one.total
    if isinstance(one, EventsSLI | RawSLI):
        return _first_selector(one.error_ratio if isinstance(one, RawSLI) else one.total)
    return one.total


def _first_selector(query: Query) -> Selector:
    """An expression SLI's series: the first series selector its (total) query reads."""
    found = promql.selectors(query.at("5m"))
    if not found:
        return Selector("", ())
    metric, matchers = promql.parse_selector(found[0][1])
    return Selector(metric, matchers)


@dataclass(frozen=True)
class Tier:
    """One multi-window tier: ``budget_share`` of the error budget burnt within ``long``."""

    index: int
    long: Decimal
    short: Decimal
    budget_share: Decimal
    alert: str
    factor: Fraction
    origin: Origin


@dataclass(frozen=True)
class SLOAlert:
    """The page or ticket alert of an SLO: fires when any of its tiers does.

    ``labels`` and ``annotations`` are its own (``alerting.page``/``ticket``), over the SLO's
    labels and beside rulegen's annotations. An explicit tier with labels or annotations of its
    own is an alert rule of its own (the same name, severity and ``for``): ``part`` names its
    tiers (``tiers[2]``), empty for the alert of the tiers without any.
    """

    key: str
    severity: str
    for_seconds: Decimal
    tiers: tuple[Tier, ...]
    labels: tuple[tuple[str, str], ...] = ()
    annotations: tuple[tuple[str, str], ...] = ()
    part: str = ""

    @property
    def role(self) -> str:
        """``page``, ``ticket``, or ``page tiers[2]`` for a tier's alert of its own."""
        return f"{self.key} {self.part}" if self.part else self.key


@dataclass(frozen=True)
class AbsentAlert:
    """``alerting.absent``: an alert while no series of the SLI's total exists for ``for``
    (``absent()``, Pyrra's default alert); ``labels`` and ``annotations`` are its own, over the
    SLO's labels and beside rulegen's annotations."""

    name: str
    severity: str
    for_seconds: Decimal
    labels: tuple[tuple[str, str], ...]
    annotations: tuple[tuple[str, str], ...]
    origin: Origin


@dataclass(frozen=True)
class ResolvedSLO:
    """One SLO of a service, ready for rules and tests."""

    service: str
    name: str
    objective: Decimal
    window: Decimal
    description: str | None
    sli: SLI
    group_by: tuple[str, ...]
    alert_name: str
    alerts: tuple[SLOAlert, ...]
    min_traffic: Decimal | None
    labels: tuple[tuple[str, str], ...]
    runbook_url: str | None
    evaluation: Decimal
    scrape: Decimal
    origin: Origin
    # Range selectors are left-open (Prometheus 3): the base recordings take the 3.x shape
    # (rulegen.slo.rules, docs/slos.md#prometheus-3)
    left_open: bool = False
    # Labels the ruler adds to every series the group stores (vmalert's group ``labels``,
    # ``targets.victoriametrics.labels``): a fallback's sum keeps them, so that ``or`` matches
    # it with the stored term it stands in for (rulegen.slo.rules._fallback)
    stored_labels: tuple[str, ...] = ()
    # The rules run on VictoriaMetrics (vmalert): the generated tests model MetricsQL's
    # ``increase()`` and its 12-digit storage (rulegen.slo.coverage, render.vmalert_tests)
    metricsql: bool = False
    # The severity of the alert on incomplete recordings: the declaration's first severity
    # that does not page (rulegen.source.severities)
    incomplete_severity: str = "warning"
    # ``alerting.absent``: the alert on no data, none unless given
    absent: AbsentAlert | None = None

    @property
    def budget(self) -> Decimal:
        """The error budget as a ratio of events (``0.001`` for 99.9%)."""
        return 1 - self.objective

    @property
    def tiers(self) -> tuple[Tier, ...]:
        """Every tier of an enabled alert, in spec order."""
        return tuple(sorted((t for a in self.alerts for t in a.tiers), key=lambda t: t.index))
