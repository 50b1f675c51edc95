"""What a backtest replays: every alerting rule of a build, and the replay of one of them.

Why: the command, the output and the plots all read the same two objects, so they live apart
from the code that fetches and replays.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from rulegen.backtest.query import Samples
from rulegen.backtest.replay import Labels, Suggestion, Summary
from rulegen.build import BuildResult
from rulegen.errors import UsageError
from rulegen.generated import AlertRule, Comparison, RecordingRule, RuleGroup, comparison_of
from rulegen.render.prometheus import condition_promql
from rulegen.slo.rules import INCOMPLETE

# --- what to replay --------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """One alerting rule as the replay needs it (times in ms).

    ``keep_firing_for_ms`` is a custom alert's ``keep_firing_for`` (0 for every other rule).
    ``comparison`` is the rule's one ``quantity op threshold`` from the typed model (``None``
    for a compound condition): what ``--suggest`` moves.
    """

    alert: str
    group: str
    expr: str
    for_ms: int
    step_ms: int
    labels: tuple[tuple[str, str], ...] = ()
    keep_firing_for_ms: int = 0
    comparison: Comparison | None = None


def _ms(seconds: Decimal) -> int:
    return int(seconds * 1000)


def _target(group: RuleGroup, rule: AlertRule) -> Target:
    return Target(
        rule.alert, group.name, condition_promql(rule.condition), _ms(rule.for_seconds),
        _ms(group.interval_seconds), rule.labels, _ms(rule.keep_firing_for_seconds),
        comparison=comparison_of(rule.condition),
    )  # fmt: skip


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
