"""Hand-written promtool tests of the SLO rules, checked against the Google SRE Workbook.

Each case renders a small SLO spec with ``rulegen build --no-validate``, writes series by hand
(``http_requests_total`` by code for a ratio SLI, a classic histogram for a latency SLI) and
runs the real ``promtool test rules`` on them. Every expected time and value is derived here
from the Workbook's definitions (ch. 5, "Alerting on SLOs"), never from rulegen's simulator
(``rulegen.slo.simulate``), so the test is an independent check of the rules:

* the error ratio of a window is errors / events in that window (traffic-weighted);
* a tier "burns ``share`` of the budget in ``long``": its burn rate is
  ``share × SLO window / long`` (``14.4`` for 2% of 30 days in 1 hour), and it holds while
  both its long and its short window show an error ratio above ``burn rate × (1 - SLO)``;
* time to detect = ``(1 - SLO) / error ratio × long window × burn rate``.

The conditions are strict (``>``), so an alert fires at the first evaluation strictly after the
detection time. Every scenario is built so that no evaluation lands exactly on a threshold.

Firing and pending are checked on ``ALERTS`` with a ``promql_expr_test`` (the annotations ask
Prometheus for the budget left, so ``exp_alerts`` would pin the wording); ``alert_rule_test``
checks the evaluations at which no alert at all may fire.

Runtime: promtool evaluates every rule of the group at every step from 0 (a few ms per step
for one SLO), so the multi-day histories step 5m (every window recording sits on multiples of
the 5m base window, so the values at those times are the same), and scenarios that share a
history run in one promtool test as separate ``group_by`` regions (an outage and its recovery,
two burn rates).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from math import floor
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import promtool_test, write_tree

from rulegen.cli import run

SERVICE = "shop"
ALERT = "ErrorBudgetBurn"
MINUTE, HOUR, DAY = 60, 3600, 86400
PAGE, TICKET = "critical", "warning"  # the page and ticket severities (rulegen's defaults)

Check = dict[str, Any]


# --- the Workbook ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Tier:
    """A multiwindow, multi-burn-rate tier: ``share`` of the budget burnt within ``long``."""

    long: int
    short: int
    share: Fraction
    severity: str

    @property
    def name(self) -> str:
        return f"{dur(self.long)}/{dur(self.short)}"


# Workbook ch. 5, table "Recommended parameters for multiwindow, multi-burn-rate alerts".
WORKBOOK_TIERS = (
    Tier(1 * HOUR, 5 * MINUTE, Fraction(2, 100), PAGE),
    Tier(6 * HOUR, 30 * MINUTE, Fraction(5, 100), PAGE),
    Tier(1 * DAY, 2 * HOUR, Fraction(10, 100), TICKET),
    Tier(3 * DAY, 6 * HOUR, Fraction(10, 100), TICKET),
)
PAGE_TIERS = tuple(t for t in WORKBOOK_TIERS if t.severity == PAGE)
TICKET_TIERS = tuple(t for t in WORKBOOK_TIERS if t.severity == TICKET)


@dataclass(frozen=True)
class Variant:
    """One SLO under test: its SLI kind, objective and window."""

    key: str
    kind: str  # "ratio" or "latency"
    objective: str | float  # as written in the spec
    budget: Fraction  # 1 - objective, the error budget as a ratio of events
    window_days: int
    le: str = "1"  # how the hand-written histogram spells its 1 s bucket bound
    default_window: bool = False  # leave ``window`` out of the spec (rulegen's default: 30d)

    @property
    def slo(self) -> str:
        return "availability" if self.kind == "ratio" else "latency"

    @property
    def window(self) -> int:
        return self.window_days * DAY

    @property
    def rules(self) -> str:
        return f"{SERVICE}.slo.{self.slo}.rules.yml"

    def burn_rate(self, tier: Tier) -> Fraction:
        """Workbook: burning ``share`` of the budget in ``long`` is a burn rate of
        ``share × SLO window / long``."""
        return tier.share * self.window / tier.long

    def threshold(self, tier: Tier) -> Fraction:
        """The error ratio both windows of ``tier`` must exceed: burn rate × (1 - SLO)."""
        return self.burn_rate(tier) * self.budget

    def detection(self, tier: Tier, error_ratio: Fraction) -> Fraction:
        """Workbook "time to detect" of ``tier`` after clean history (seconds): (1 - SLO) /
        error ratio × window × burn rate, for the long and the short window (the later one)."""
        return max(
            self.budget / error_ratio * window * self.burn_rate(tier)
            for window in (tier.long, tier.short)
        )

    def own(self, metric: str, group: str = "") -> str:
        """A selector of one of this SLO's recordings (``group``: its group_by labels)."""
        return f'{metric}{{service="{SERVICE}", slo="{self.slo}"{group}}}'

    def condition(self, tier: Tier, group: str = "") -> str:
        """The tier's Workbook condition, written here (not copied from the rules)."""
        budget, factor = number(self.budget), number(self.burn_rate(tier))
        long, short = (f"slo:sli_error:ratio_rate{dur(w)}" for w in (tier.long, tier.short))
        return (
            f"{self.own(long, group)} / {budget} > {factor}"
            f" and {self.own(short, group)} / {budget} > {factor}"
        )


RATIO_30D = Variant("ratio-30d", "ratio", "99.9%", Fraction(1, 1000), 30, default_window=True)
RATIO_28D = Variant("ratio-28d", "ratio", 0.999, Fraction(1, 1000), 28)
# Prometheus 2 keeps the Go exporter's le="1"; Prometheus 3 normalises it to le="1.0".
LATENCY_30D = Variant("latency-30d", "latency", "99%", Fraction(1, 100), 30, le="1")
LATENCY_28D = Variant("latency-28d", "latency", "99%", Fraction(1, 100), 28, le="1.0")
VARIANTS = (RATIO_30D, RATIO_28D, LATENCY_30D, LATENCY_28D)
IDS = [v.key for v in VARIANTS]


def number(value: Fraction) -> str:
    """A PromQL number for an exact fraction: a decimal when it terminates, else ``(p / q)``."""
    rest = value.denominator
    for prime in (2, 5):
        while rest % prime == 0:
            rest //= prime
    if rest != 1:
        return f"({value.numerator} / {value.denominator})"
    text = f"{float(value):.12f}".rstrip("0").rstrip(".")
    assert Fraction(text) == value
    return text


def dur(seconds: int) -> str:
    """``93784`` → ``1d2h3m4s`` (a Prometheus duration; ``0s`` for 0)."""
    out = ""
    for unit, size in (("d", DAY), ("h", HOUR), ("m", MINUTE), ("s", 1)):
        if seconds >= size:
            out += f"{seconds // size}{unit}"
            seconds %= size
    return out or "0s"


def first_evaluation_after(seconds: Fraction, step: int) -> int:
    """The first evaluation (a multiple of ``step``) strictly after ``seconds``.

    A detection time on the grid itself would make the test hinge on float rounding of
    ``errors / total / budget`` against the factor, so the scenarios avoid it.
    """
    assert seconds % step != 0, f"{seconds}s is on the {step}s grid: pick other figures"
    return (floor(seconds / step) + 1) * step


# --- series ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Phase:
    """``samples`` scrapes, each adding ``total`` requests of which ``errors`` fail (or are
    slower than the 1 s threshold)."""

    samples: int
    total: int
    errors: int


def counter(phases: Sequence[Phase], per_sample: Callable[[Phase], int]) -> str:
    """A counter from 0 growing by ``per_sample(phase)`` at every scrape, in expanding notation."""
    parts, value = ["0"], 0
    for phase in phases:
        step = per_sample(phase)
        parts.append(f"{value + step}+{step}x{phase.samples - 1}")
        value += step * phase.samples
    return " ".join(parts)


def input_series(v: Variant, phases: Sequence[Phase], group: str = "") -> list[dict[str, str]]:
    """The raw series an exporter would show for ``phases`` of traffic (``group``: extra
    target labels such as ``, region="eu"``)."""

    def good(p: Phase) -> int:
        return p.total - p.errors

    def fast(p: Phase) -> int:  # half the good requests take at most 0.5 s
        return (p.total - p.errors) // 2

    def total(p: Phase) -> int:
        return p.total

    def errors(p: Phase) -> int:
        return p.errors

    job = f'job="shop"{group}'
    if v.kind == "ratio":
        shapes = [
            (f'http_requests_total{{code="200", {job}}}', good),
            (f'http_requests_total{{code="500", {job}}}', errors),
        ]
    else:
        # Slow requests take between 1 s and 2.5 s; a matcher picking le="0.5" instead of the
        # threshold bucket would count the good requests between 0.5 s and 1 s as slow.
        hist = "http_request_duration_seconds"
        shapes = [
            (f'{hist}_bucket{{{job}, le="0.5"}}', fast),
            (f'{hist}_bucket{{{job}, le="{v.le}"}}', good),
            (f'{hist}_bucket{{{job}, le="2.5"}}', total),
            (f'{hist}_bucket{{{job}, le="+Inf"}}', total),
            (f"{hist}_count{{{job}}}", total),
        ]
    return [{"series": name, "values": counter(phases, shape)} for name, shape in shapes]


# --- specs, promtool -------------------------------------------------------------------------


def slo_entry(
    v: Variant, step: int, ticket_for: str | None = None, group_by: Sequence[str] = ()
) -> dict[str, Any]:
    """The spec entry of ``v`` (Workbook tiers by default), evaluated every ``step``."""
    sli: dict[str, Any]
    if v.kind == "ratio":
        sli = {
            "ratio": {
                "errors": 'http_requests_total{job="shop", code=~"5.."}',
                "total": 'http_requests_total{job="shop"}',
            }
        }
    else:
        sli = {
            "latency": {
                "metric": "http_request_duration_seconds",
                "threshold": "1s",
                "matchers": 'job="shop"',
                "buckets": [0.5, 1, 2.5],
            }
        }
    alerting: dict[str, Any] = {"name": ALERT}
    if ticket_for is not None:
        alerting["for"] = {"ticket": ticket_for}
    entry: dict[str, Any] = {
        "name": v.slo,
        "objective": v.objective,
        **({} if v.default_window else {"window": f"{v.window_days}d"}),
        "evaluation_interval": dur(step),
        "sli": sli,
        "alerting": alerting,
    }
    if group_by:
        entry["group_by"] = list(group_by)
    return entry


def render(root: Path, *slos: dict[str, Any]) -> Path:
    """Write the spec, build it, return the directory of the rendered rule files."""
    spec = {"version": 1, "service": SERVICE, "evaluation_interval": "30s", "slos": list(slos)}
    write_tree(root, {f"specs/{SERVICE}.yaml": yaml.safe_dump(spec, sort_keys=False)})
    assert run(["build", "--no-validate"]) == 0, "rulegen build failed (see captured stderr)"
    return root / "rules" / "prometheus"


def expr(at: int, query: str, *samples: tuple[str, float]) -> Check:
    """A promql_expr_test: ``query`` at ``at`` seconds gives exactly ``samples``."""
    return {
        "expr": query,
        "eval_time": dur(at),
        "exp_samples": [{"labels": labels, "value": value} for labels, value in samples],
    }


def holds(at: int, query: str, yes: bool) -> Check:
    """``query`` (a condition) is non-empty at ``at``, or empty."""
    return expr(at, f"count({query})", *([("{}", 1.0)] if yes else []))


def alert_is(v: Variant, at: int, severity: str, state: str | None, group: str = "") -> Check:
    """The SLO's alert of ``severity`` is ``state`` (pending, firing) at ``at``, or absent.

    ``group`` is the group_by labels, such as ``, region="eu"``.
    """
    query = f'ALERTS{{alertname="{ALERT}", severity="{severity}"{group}}}'
    labels = (
        f'ALERTS{{alertname="{ALERT}", alertstate="{state}"{group}, service="{SERVICE}", '
        f'severity="{severity}", slo="{v.slo}"}}'
    )
    return expr(at, query, *([(labels, 1.0)] if state else []))


def never_alerts(v: Variant, end: int, severity: str) -> Check:
    """Over the whole run up to ``end``, the alert of ``severity`` was never pending or firing."""
    alerts = f'ALERTS{{alertname="{ALERT}", severity="{severity}", slo="{v.slo}"}}'
    query = f"count_over_time({alerts}[{dur(end)}])"
    return expr(end, query)


def silent(at: int) -> Check:
    """An alert_rule_test: no SLO alert at all fires at ``at``."""
    return {"eval_time": dur(at), "alertname": ALERT, "exp_alerts": []}


def promtool(
    rules_dir: Path,
    rule_files: Sequence[str],
    step: int,
    series: list[dict[str, str]],
    checks: list[Check],
    alerts: Sequence[Check] = (),
) -> None:
    """Run ``promtool test rules`` on one hand-written test group and assert it passes."""
    test = {
        "rule_files": list(rule_files),
        "evaluation_interval": dur(step),
        "tests": [
            {
                "interval": dur(step),
                "input_series": series,
                "alert_rule_test": list(alerts),
                "promql_expr_test": checks,
            }
        ],
    }
    test_file = rules_dir / "hand-written.test.yml"
    test_file.write_text(yaml.safe_dump(test, sort_keys=False), "utf-8")
    proc = promtool_test(test_file, timeout=300)
    assert proc.returncode == 0, (
        f"promtool test rules failed (exit {proc.returncode}):\n{proc.stdout}{proc.stderr}"
    )


def seconds(phases: Sequence[Phase], step: int) -> int:
    """The time of the last sample."""
    return step * sum(p.samples for p in phases)


# --- 1 and 3. total outage: detection and reset ----------------------------------------------

STEP = 30  # the evaluation grid (and scrape interval) of the minute-scale cases

# Seconds of total outage (error ratio 1) each page tier tolerates, 1h/5m then 6h/30m:
# (1 - SLO) / 1 × long × share × window / long = (1 - SLO) × share × SLO window.
OUTAGE_DETECTION = {
    RATIO_30D: (Fraction("51.84"), Fraction("129.6")),  # 0.001 × 2% | 5% × 2592000 s
    RATIO_28D: (Fraction("48.384"), Fraction("120.96")),  # 0.001 × 2% | 5% × 2419200 s
    LATENCY_30D: (Fraction("518.4"), Fraction("1296")),  # 0.01 × 2% | 5% × 2592000 s
    LATENCY_28D: (Fraction("483.84"), Fraction("1209.6")),  # 0.01 × 2% | 5% × 2419200 s
}
# ... and the first 30 s evaluation strictly after them (seconds into the outage).
OUTAGE_ONSET = {
    RATIO_30D: (60, 150),  # 30 < 51.84 < 60; 120 < 129.6 < 150
    RATIO_28D: (60, 150),  # 30 < 48.384 < 60; 120 < 120.96 < 150
    LATENCY_30D: (540, 1320),  # 510 < 518.4 < 540; 1290 < 1296 < 1320
    LATENCY_28D: (510, 1230),  # 480 < 483.84 < 510; 1200 < 1209.6 < 1230
}

# Two outages per SLO, (seconds of total outage, seconds after it ends until the page
# resolves): a short one that only the 1h/5m tier sees (longer than its detection time,
# shorter than the 6h/30m tier's), and a long one that the 6h/30m tier sees too.
#
# Workbook reset time: a tier stops once its short window is clean, or rather once the errors
# left in it are at most burn rate × (1 - SLO) × short window.
OUTAGE_RESET = {
    # 90 s: 14.4 × 0.001 × 300 s = 4.32 s; 4m30s after the end the 5m window still holds 30 s
    # of errors, at 5m none. 600 s > 129.6 s: the 6h/30m tier holds until its 30m window
    # holds at most 6 × 0.001 × 1800 s = 10.8 s: still 30 s at 29m30s, none at 30m.
    RATIO_30D: ((90, 5 * MINUTE), (600, 30 * MINUTE)),
    # the same on 28d: 13.44 × 0.001 × 300 s = 4.032 s; 5.6 × 0.001 × 1800 s = 10.08 s
    RATIO_28D: ((90, 5 * MINUTE), (600, 30 * MINUTE)),
    # 900 s: the 5m window falls to 14.4 × 0.01 × 300 s = 43.2 s of slow requests 256.8 s
    # after the end, so the page resolves at 270 s, before the 5m window is clean. 1800 s >
    # 1296 s: 6h/30m holds until its 30m window holds 6 × 0.01 × 1800 s = 108 s, 1692 s after.
    LATENCY_30D: ((900, 270), (1800, 1710)),
    # 28d: 13.44 × 0.01 × 300 s = 40.32 s (259.68 s after) and 5.6 × 0.01 × 1800 s = 100.8 s
    # (1699.2 s after).
    LATENCY_28D: ((900, 270), (1800, 1710)),
}


def page_holds(v: Variant, outage: int, at: int) -> bool:
    """Whether a page tier holds ``at`` seconds after a total outage of ``outage`` seconds
    began, with steady traffic and clean history filling every window before it.

    Each window's error ratio is its errored seconds over its length (the Workbook's ratio of
    events at a steady rate).
    """

    def above(tier: Tier, window: int) -> bool:
        errored = max(0, min(at, outage) - max(at - window, 0))
        ratio = Fraction(errored, window)
        assert ratio != v.threshold(tier), "an evaluation on the threshold: pick other figures"
        return ratio > v.threshold(tier)

    return any(above(tier, tier.long) and above(tier, tier.short) for tier in PAGE_TIERS)


@pytest.mark.parametrize("v", VARIANTS, ids=IDS)
@pytest.mark.slow
def test_total_outage_pages_at_the_workbook_detection_time_and_resolves_at_its_reset_time(
    v: Variant, in_tmp: Path
) -> None:
    detect = tuple(v.detection(tier, Fraction(1)) for tier in PAGE_TIERS)
    assert detect == OUTAGE_DETECTION[v]
    onsets = tuple(first_evaluation_after(d, STEP) for d in detect)
    assert onsets == OUTAGE_ONSET[v]
    page = min(onsets)
    (short, short_reset), (long, long_reset) = OUTAGE_RESET[v]
    assert onsets[0] < short < detect[1] < long

    # One run, two regions (group_by): both start their outage after 6h of clean history (as
    # long as the longest page window); region="short" and region="long" differ in its length.
    start = 6 * HOUR
    end = start + long + long_reset + 2 * STEP
    checks: list[Check] = []
    series: list[dict[str, str]] = []
    for name, outage, reset in (("short", short, short_reset), ("long", long, long_reset)):
        grid = range(0, end - start + STEP, STEP)
        assert next(t for t in grid if page_holds(v, outage, t)) == page
        resolved = next(t for t in grid if t > page and not page_holds(v, outage, t))
        assert resolved == outage + reset
        group = f', region="{name}"'
        phases = [
            Phase(start // STEP, 1000, 0),
            Phase(outage // STEP, 1000, 1000),
            Phase((end - start - outage) // STEP, 1000, 0),
        ]
        assert seconds(phases, STEP) == end
        series += input_series(v, phases, group)
        checks += [
            alert_is(v, start + page - STEP, PAGE, None, group),  # not one evaluation early
            alert_is(v, start + page, PAGE, "firing", group),
            alert_is(v, start + outage + reset - STEP, PAGE, "firing", group),
            alert_is(v, start + outage + reset, PAGE, None, group),
        ]
    # each page tier's own detection, on the long outage
    for tier, onset in zip(PAGE_TIERS, onsets, strict=True):
        checks.append(holds(start + onset - STEP, v.condition(tier, ', region="long"'), yes=False))
        checks.append(holds(start + onset, v.condition(tier, ', region="long"'), yes=True))
    checks.append(alert_is(v, end, PAGE, None))
    rules = render(in_tmp, slo_entry(v, STEP, group_by=["region"]))
    promtool(rules, [v.rules], STEP, series, checks, [silent(start)])


# --- 2. slow burn ----------------------------------------------------------------------------

HISTORY_STEP = 5 * MINUTE  # every window recording sits on multiples of 5m (the base window)


@dataclass(frozen=True)
class SlowBurn:
    """A steady burn after 3 days of clean history, and when the Workbook says it is seen."""

    burn: Fraction
    detection: tuple[Fraction | None, ...]  # per ticket tier; None: its burn rate is higher
    ticket: int  # seconds after the burn starts: the first evaluation after the detection


SLOW_BURNS = {
    RATIO_30D: (
        # 5x: 0.001 / 0.005 × 1d × 3 = 14.4h and 0.001 / 0.005 × 3d × 1 = 14.4h (3d × 1 / 5);
        # 51840 s / 300 s = 172.8 evaluations → the 173rd, 14h25m. 5 < 6 < 14.4: no page.
        SlowBurn(Fraction(5), (Fraction(51840), Fraction(51840)), 14 * HOUR + 25 * MINUTE),
    ),
    LATENCY_28D: (
        # 5x: 0.01 / 0.05 × 1d × 2.8 = 13.44h and × 3d × 14/15 = 13.44h = 48384 s → 161.28
        # evaluations → the 162nd, 13h30m. 5 < 5.6 < 13.44: no page.
        SlowBurn(Fraction(5), (Fraction(48384), Fraction(48384)), 13 * HOUR + 30 * MINUTE),
        # 2x: 1d/2h needs 2.8x; 3d/6h: 3d × (14/15) / 2 = 33.6h = 120960 s → 403.2 → 33h40m.
        SlowBurn(Fraction(2), (None, Fraction(120960)), 33 * HOUR + 40 * MINUTE),
    ),
}


@pytest.mark.parametrize("v", list(SLOW_BURNS), ids=[v.key for v in SLOW_BURNS])
@pytest.mark.slow
def test_slow_burn_opens_a_ticket_at_the_workbook_detection_time_and_never_pages(
    v: Variant, in_tmp: Path
) -> None:
    # One run, one region per burn rate (group_by), each after 3d of clean history (as long as
    # the longest ticket window).
    start = 3 * DAY
    end = start + max(b.ticket for b in SLOW_BURNS[v]) + 2 * HISTORY_STEP
    n = round(1 / v.budget)  # requests per scrape: 1000 (100), errors are whole numbers
    checks: list[Check] = [never_alerts(v, end, PAGE)]
    series: list[dict[str, str]] = []
    for slow in SLOW_BURNS[v]:
        ratio = slow.burn * v.budget
        assert all(v.burn_rate(tier) > slow.burn for tier in PAGE_TIERS)
        computed = tuple(
            v.detection(tier, ratio) if v.burn_rate(tier) < slow.burn else None
            for tier in TICKET_TIERS
        )
        assert computed == slow.detection
        onsets = [None if d is None else first_evaluation_after(d, HISTORY_STEP) for d in computed]
        assert min(o for o in onsets if o is not None) == slow.ticket
        assert ratio * n == int(ratio * n)
        group = f', region="burn{float(slow.burn):g}x"'
        phases = [
            Phase(start // HISTORY_STEP, n, 0),
            Phase((end - start) // HISTORY_STEP, n, int(ratio * n)),
        ]
        series += input_series(v, phases, group)
        checks += [
            alert_is(v, start + slow.ticket - HISTORY_STEP, TICKET, None, group),  # not early
            alert_is(v, start + slow.ticket, TICKET, "firing", group),
        ]
        for tier, onset in zip(TICKET_TIERS, onsets, strict=True):
            if onset is None:
                checks.append(holds(end, v.condition(tier, group), yes=False))
                continue
            checks.append(holds(start + onset - HISTORY_STEP, v.condition(tier, group), yes=False))
            checks.append(holds(start + onset, v.condition(tier, group), yes=True))
    rules = render(in_tmp, slo_entry(v, HISTORY_STEP, group_by=["region"]))
    promtool(rules, [v.rules], HISTORY_STEP, series, checks, [silent(start)])


# --- 4. zero traffic -------------------------------------------------------------------------


def recordings(rules_dir: Path, v: Variant) -> list[str]:
    """The names of every recording the SLO's rule file defines."""
    groups = yaml.safe_load((rules_dir / v.rules).read_text("utf-8"))["groups"]
    return [rule["record"] for group in groups for rule in group["rules"] if "record" in rule]


def no_nan_or_inf(v: Variant, metric: str, end: int, step: int) -> Check:
    """``metric`` was never NaN (``x != x``) nor infinite at any evaluation up to ``end``."""
    m = v.own(metric)
    bad = f"({m} != {m}) or ({m} == +Inf) or ({m} == -Inf)"
    return expr(end, f"count_over_time(({bad})[{dur(end)}:{dur(step)}])")


@pytest.mark.parametrize("v", VARIANTS, ids=IDS)
@pytest.mark.slow
def test_zero_traffic_records_no_ratio_no_nan_no_alert_and_keeps_the_budget_left(
    v: Variant, in_tmp: Path
) -> None:
    # Scrapes every minute: 10m idle (counters flat at 0), 30m of traffic burning half the
    # budget, then 25m idle.
    step = MINUTE
    n = round(2 / v.budget)  # 1 error (or slow request) in 2000 (200) is half the budget
    phases = [Phase(10, 0, 0), Phase(30, n, 1), Phase(25, 0, 0)]
    idle, stop, end = 10 * step, 40 * step, seconds(phases, step)
    # The SLO window holds all the traffic: 30 errors in 30 n requests; the budget left is
    # 1 - (errors / total) / (1 - SLO), in float64 as PromQL computes it.
    ratio = 30 / (30 * n)
    left = 1 - ratio / float(v.budget)
    assert left == pytest.approx(0.5)
    window = f"slo:sli_error:ratio_rate{v.window_days}d"
    derived = "slo:(sli_error:ratio_rate.+|error_budget_remaining:ratio|current_burn_rate:ratio)"
    budget_left = v.own("slo:error_budget_remaining:ratio")
    checks = [
        # idle: events and errors are 0, every ratio (hence burn and budget) is absent
        expr(idle, v.own("slo:sli_total:increase5m"), (v.own("slo:sli_total:increase5m"), 0.0)),
        expr(idle, v.own("slo:sli_errors:increase5m"), (v.own("slo:sli_errors:increase5m"), 0.0)),
        expr(idle, f'count({{__name__=~"{derived}", service="{SERVICE}", slo="{v.slo}"}})'),
        # traffic stopped 25m ago: no 5m ratio, no current burn; the budget left is unchanged
        expr(end, f"count({v.own('slo:sli_error:ratio_rate5m')})"),
        expr(end, f"count({v.own('slo:current_burn_rate:ratio')})"),
        expr(stop, v.own(window), (v.own(window), ratio)),
        expr(end, v.own(window), (v.own(window), ratio)),
        expr(stop, budget_left, (budget_left, left)),
        expr(end, budget_left, (budget_left, left)),
        expr(
            end,
            f"{budget_left} - {budget_left} offset {dur(end - stop)}",
            (f'{{service="{SERVICE}", slo="{v.slo}"}}', 0.0),
        ),
        never_alerts(v, end, PAGE),
        never_alerts(v, end, TICKET),
    ]
    rules = render(in_tmp, slo_entry(v, step))
    checks += [no_nan_or_inf(v, name, end, step) for name in recordings(rules, v)]
    promtool(rules, [v.rules], step, input_series(v, phases), checks, [silent(idle), silent(end)])


# --- 5. uneven traffic -----------------------------------------------------------------------


@pytest.mark.parametrize("v", VARIANTS, ids=IDS)
@pytest.mark.slow
def test_window_error_ratio_is_traffic_weighted_not_the_mean_of_phase_ratios(
    v: Variant, in_tmp: Path
) -> None:
    # Scrapes every minute: 30m at 120 requests per scrape with 6 errors (5%), then 30m at 8
    # requests with 4 errors (50%).
    step = MINUTE
    phases = [Phase(30, 120, 6), Phase(30, 8, 4)]
    busy, quiet = Fraction(6, 120), Fraction(4, 8)
    # Over the whole hour: (30×6 + 30×4) / (30×120 + 30×8) = 300 / 3840 = 5/64 = 0.078125,
    # exact in binary; the mean of the two phases' ratios, (5% + 50%) / 2, is 0.275.
    weighted = Fraction(30 * 6 + 30 * 4, 30 * 120 + 30 * 8)
    assert weighted == Fraction(5, 64)
    mean = (busy + quiet) / 2
    assert mean == Fraction(275, 1000) != weighted
    end = seconds(phases, step)
    left = 1 - float(weighted) / float(v.budget)

    def ratio(window: str) -> str:
        return v.own(f"slo:sli_error:ratio_rate{window}")

    own = f'{{service="{SERVICE}", slo="{v.slo}"}}'
    budget_left = v.own("slo:error_budget_remaining:ratio")
    burn = v.own("slo:current_burn_rate:ratio")
    objective = v.own("slo:objective:ratio")
    checks = [
        # the first 30m window holds only the busy phase, the last one only the quiet phase
        expr(30 * MINUTE, ratio("30m"), (ratio("30m"), float(busy))),
        expr(end, ratio("30m"), (ratio("30m"), float(quiet))),
        # the middle 30m: 15 scrapes of each, (15×6 + 15×4) / (15×120 + 15×8) = 5/64 again
        expr(45 * MINUTE, ratio("30m"), (ratio("30m"), float(weighted))),
        expr(end, ratio("1h"), (ratio("1h"), float(weighted))),
        expr(end, f"{ratio('1h')} == bool {float(mean)}", (own, 0.0)),
        expr(end, ratio("6h"), (ratio("6h"), float(weighted))),
        expr(end, ratio(f"{v.window_days}d"), (ratio(f"{v.window_days}d"), float(weighted))),
        expr(end, budget_left, (budget_left, left)),
        # the current burn rate is the 5m window's (the quiet phase) over the budget
        expr(end, burn, (burn, float(quiet) / float(v.budget))),
        expr(end, objective, (objective, float(1 - v.budget))),
    ]
    rules = render(in_tmp, slo_entry(v, step))
    promtool(rules, [v.rules], step, input_series(v, phases), checks)


# --- 6. the 28-day burn rates ----------------------------------------------------------------

# Workbook burn rates, share × SLO window / long, for the four default tiers:
BURN_RATES = {
    30: ("14.4", "6", "3", "1"),  # 2% × 720h / 1h, 5% × 720h / 6h, 10% × 30d / 1d, 10% × 30d / 3d
    28: ("13.44", "5.6", "2.8", "(14 / 15)"),  # 2% × 672h / 1h, ..., 10% × 28d / 3d = 14/15
}


@pytest.mark.parametrize("v", VARIANTS, ids=IDS)
def test_rendered_alerts_use_the_workbook_burn_rates_of_their_slo_window(
    v: Variant, in_tmp: Path
) -> None:
    factors = tuple(number(v.burn_rate(tier)) for tier in WORKBOOK_TIERS)
    assert factors == BURN_RATES[v.window_days]
    text = (render(in_tmp, slo_entry(v, STEP)) / v.rules).read_text("utf-8")
    for tier, factor in zip(WORKBOOK_TIERS, factors, strict=True):
        for window in (tier.long, tier.short):
            expected = f"{v.own(f'slo:sli_error:ratio_rate{dur(window)}')} / "
            expected += f"{number(v.budget)} > {factor}\n"
            assert expected in text, f"{tier.name}: {expected!r} not in the rules"


# Steady burns of 0.95 and 0.93 (of the budget): on a 28d window the 3d/6h tier needs 14/15
# = 0.9333..., so 0.95 opens a ticket and 0.93 does not; on a 30d window it needs 1: neither.
FLIPS = [RATIO_28D, LATENCY_28D, RATIO_30D]


@pytest.mark.parametrize("v", FLIPS, ids=[v.key for v in FLIPS])
@pytest.mark.slow
def test_3d_6h_ticket_tier_flips_between_a_093_and_a_095_burn_on_28d_only(
    v: Variant, in_tmp: Path
) -> None:
    three_days = TICKET_TIERS[1]
    n = round(100 / v.budget)  # 100000 (10000) requests per scrape: 95 or 93 errors
    at = 6 * HOUR  # every window shows the steady ratio; the 6h one is full
    phases = {burn: [Phase(at // HISTORY_STEP, n, burn)] for burn in (95, 93)}
    series: list[dict[str, str]] = []
    checks: list[Check] = [never_alerts(v, at, PAGE)]
    for burn, steady in phases.items():
        group = f', region="burn{burn}"'
        fires = Fraction(burn, 100) > v.burn_rate(three_days)
        assert fires == (burn == 95 and v.window_days == 28)
        series += input_series(v, steady, group)
        three_day_ratio = v.own("slo:sli_error:ratio_rate3d", group)
        scrapes = at // HISTORY_STEP
        checks += [
            # the 3d window holds every scrape so far; its labels are service, slo and region
            expr(at, three_day_ratio, (three_day_ratio, (scrapes * burn) / (scrapes * n))),
            holds(at, v.condition(three_days, group), yes=fires),
            holds(at, v.condition(TICKET_TIERS[0], group), yes=False),  # 1d/2h needs 2.8 or 3
            alert_is(v, at, TICKET, "firing" if fires else None, group),
        ]
    rules = render(in_tmp, slo_entry(v, HISTORY_STEP, group_by=["region"]))
    promtool(rules, [v.rules], HISTORY_STEP, series, checks)


# --- 7. for ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_ticket_for_keeps_the_alert_pending_for_exactly_that_long_before_firing(
    in_tmp: Path,
) -> None:
    v = RATIO_30D
    # A steady 2x burn from the start: every window shows 0.002, above the 3d/6h tier's
    # 1 × 0.001 (not the 1d/2h tier's 3 × 0.001). The first ratio exists at 30s (a 5m window
    # needs two samples), so the tier holds from 30s; with for: 15m the ticket is pending
    # from 30s and fires at 30s + 15m = 15m30s, not one evaluation earlier.
    phases = [Phase(35, 1000, 2)]
    checks = [
        alert_is(v, 0, TICKET, None),
        holds(STEP, v.condition(TICKET_TIERS[1]), yes=True),
        holds(STEP, v.condition(TICKET_TIERS[0]), yes=False),
        alert_is(v, STEP, TICKET, "pending"),
        alert_is(v, 15 * MINUTE, TICKET, "pending"),
        alert_is(v, 15 * MINUTE + STEP, TICKET, "firing"),
        never_alerts(v, seconds(phases, STEP), PAGE),
    ]
    rules = render(in_tmp, slo_entry(v, STEP, ticket_for="15m"))
    promtool(rules, [v.rules], STEP, input_series(v, phases), checks, [silent(15 * MINUTE)])
