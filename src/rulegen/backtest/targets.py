"""What a backtest replays: every alerting rule of a build, and the replay of one of them.

Why: the command, the output and the plots all read the same two objects, so they live apart
from the code that fetches and replays.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from rulegen import units
from rulegen.backtest.query import Samples
from rulegen.backtest.replay import Labels, Suggestion, Summary
from rulegen.build import BuildResult
from rulegen.core import promql
from rulegen.errors import UsageError
from rulegen.generated import (
    AlertRule,
    AnyOf,
    Comparison,
    Condition,
    Divided,
    HostFromInstance,
    RecordingRule,
    RuleGroup,
    Threshold,
    comparison_of,
    comparisons,
)
from rulegen.host import HOST_FROM_INSTANCE
from rulegen.render.prometheus import condition_promql, quantity_promql
from rulegen.slo.rules import BUDGET_LEFT, INCOMPLETE, RATIO

# --- what to replay --------------------------------------------------------------------------


@dataclass(frozen=True)
class Burn:
    """One window's burn rate that an SLO alert compares with its tiers' factors: the window
    as the spec writes it (``1h``) and the PromQL of the burn rate (error ratio / budget)."""

    window: str
    expr: str


@dataclass(frozen=True)
class TierLine:
    """One tier of an SLO alert: its windows (``1h``, ``5m``) and the factor both must exceed."""

    windows: tuple[str, ...]
    factor: Threshold


@dataclass(frozen=True)
class Target:
    """One alerting rule as the replay needs it (times in ms).

    ``keep_firing_for_ms`` is a custom alert's ``keep_firing_for`` (0 for every other rule).
    ``comparison`` is the rule's one ``quantity op threshold`` from the typed model (``None``
    for a compound condition): what ``--suggest`` moves. ``condition`` is the whole typed
    condition, ``subject`` what the alert watches in the spec's words (a picture's title).
    An SLO's burn-rate alert has its ``burns`` (each window's burn rate, what ``--plot``
    draws), its ``tiers`` and its SLO's window (``slo_window_ms``: how much budget a burn
    spends).
    """

    alert: str
    group: str
    expr: str
    for_ms: int
    step_ms: int
    labels: tuple[tuple[str, str], ...] = ()
    keep_firing_for_ms: int = 0
    comparison: Comparison | None = None
    condition: Condition | None = None
    subject: str = ""
    burns: tuple[Burn, ...] = ()
    tiers: tuple[TierLine, ...] = ()
    slo_window_ms: int = 0

    def quantity_expr(self) -> str | None:
        """The PromQL of the compared quantity, with the labels the alert adds to it (a
        host derived from the instance), so its series are the alert's label sets."""
        if self.comparison is None:
            return None
        expr = quantity_promql(self.comparison.quantity)
        if isinstance(self.condition, HostFromInstance):
            return f"label_replace({expr}, {HOST_FROM_INSTANCE})"
        return expr

    def plotted(self) -> list[str]:
        """The expressions a picture of the alert evaluates besides the alert's own: its
        quantity, or each window's burn rate."""
        if self.burns:
            return [burn.expr for burn in self.burns]
        expr = self.quantity_expr()
        return [expr] if expr is not None else []


def _ms(seconds: Decimal) -> int:
    return int(seconds * 1000)


def _target(group: RuleGroup, rule: AlertRule) -> Target:
    burns, tiers = slo_burns(rule.condition)
    return Target(
        rule.alert, group.name, condition_promql(rule.condition), _ms(rule.for_seconds),
        _ms(group.interval_seconds), rule.labels, _ms(rule.keep_firing_for_seconds),
        comparison=comparison_of(rule.condition), condition=rule.condition,
        subject=rule.subject, burns=burns, tiers=tiers,
        slo_window_ms=_slo_window_ms(group) if burns else 0,
    )  # fmt: skip


def _burn_window(comparison: Comparison) -> str | None:
    """``1h`` for ``slo:sli_error:ratio_rate1h{…} / budget > factor``, else ``None``."""
    quantity = comparison.quantity
    if comparison.threshold.unit != "ratio" or not isinstance(quantity, Divided):
        return None
    record = quantity.dividend.record
    return record[len(RATIO) :] if record.startswith(RATIO) else None


def slo_burns(condition: Condition) -> tuple[tuple[Burn, ...], tuple[TierLine, ...]]:
    """An SLO burn-rate alert's burn rates (one per window, in the order the tiers read them)
    and its tiers; nothing for any other condition."""
    parts = condition.conditions if isinstance(condition, AnyOf) else (condition,)
    burns: dict[str, Burn] = {}
    tiers: list[TierLine] = []
    for part in parts:
        found = [(w, c) for c in comparisons(part) if (w := _burn_window(c)) is not None]
        if not found:
            return (), ()
        for window, compared in found:
            burns.setdefault(window, Burn(window, quantity_promql(compared.quantity)))
        tiers.append(TierLine(tuple(w for w, _ in found), found[0][1].threshold))
    return tuple(burns.values()), tuple(tiers)


def _slo_window_ms(group: RuleGroup) -> int:
    """The SLO's window (``30d``) from its group's budget-left recording, which reads the
    error ratio over it; 0 when there is none."""
    for rule in group.rules:
        if isinstance(rule, RecordingRule) and rule.record == BUDGET_LEFT:
            for name, _ in promql.selectors(rule.expr):
                if name.startswith(RATIO):
                    return _ms(units.parse_duration(name[len(RATIO) :]))
    return 0


def targets(result: BuildResult, names: Sequence[str] = ()) -> list[Target]:
    """Every alerting rule of a build (signal, diagnosis and SLO groups), sorted by name and
    group; only those named in ``names`` when given (an unknown name is a ``UsageError``).

    ``SLORecordingsIncomplete`` is replayed only when named: it reports on the health of the
    SLO's recordings, not on the service, and a replay that computes the recordings from raw
    series has them complete by construction (``--recorded`` reads what was deployed, which
    may have started within the window: a report of the deployment's age, not of an incident).
    """
    groups: list[RuleGroup] = [g for s in result.services for g in s.groups]
    groups += [slo.group for s in result.services for slo in s.slos]
    rules = [(group, rule) for group in groups for rule in group.rules]
    found = sorted(
        (_target(group, rule) for group, rule in rules if isinstance(rule, AlertRule)),
        key=lambda t: (t.alert, t.group),
    )
    if not names:
        return [t for t in found if t.alert != INCOMPLETE]
    known = {t.alert for t in found}
    for name in names:
        if name not in known:
            listed = ", ".join(sorted(known)[:12]) + (", …" if len(known) > 12 else "")
            raise UsageError(f"--alert {name}: no such alert in the specs (alerts: {listed})")
    return [t for t in found if t.alert in names]


def recordings(result: BuildResult) -> frozenset[str]:
    """The names of every recording rule of a build."""
    return frozenset(record for record, _expr, _labels, _step in deployable(result))


def deployable(result: BuildResult) -> list[tuple[str, str, tuple[tuple[str, str], ...], int]]:
    """Every recording rule of a build as the rule manager runs it: ``(record, expr,
    labels, interval in ms)``, in the order of the rule files."""
    groups = [g for s in result.services for g in s.groups]
    groups += [slo.group for s in result.services for slo in s.slos]
    return [
        (rule.record, rule.expr, rule.labels, _ms(group.interval_seconds))
        for group in groups
        for rule in group.rules
        if isinstance(rule, RecordingRule)
    ]


# --- one alert -------------------------------------------------------------------------------


@dataclass
class Report:
    """The replay of one alert over ``span`` (Unix ms, both ends included)."""

    target: Target
    span: tuple[int, int]
    step_ms: int
    times: list[int]
    values: Samples
    summaries: dict[Labels, Summary]
    warning: str | None = None
    quantity: Samples | None = None
    burns: dict[str, Samples] | None = None
    """An SLO alert's burn rate per window (``--plot``)."""
    comparison: Comparison | None = None
    suggestion: Suggestion | None = None
    current_fired: int | None = None
    per_week: float | None = None
    notes: list[str] = field(default_factory=list)
    partial_until: int | None = None
    """Evaluations before this time read less history than the rules need (the server's
    history starts at ``history_from``): their results are partial."""
    history_from: int | None = None

    @property
    def fired(self) -> int:
        """Firings of all label sets inside the span."""
        return sum(s.fired for s in self.summaries.values())
