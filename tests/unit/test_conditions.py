"""Typed alert conditions: each node kind renders to exact PromQL, and the dashboard and the
backtest take thresholds from the typed model, never from PromQL text.

Why: an alert carries its condition as data (quantity, operator, exact threshold with its
unit, durations in seconds); ``rulegen.render.prometheus`` is the only writer of its PromQL.
The rendering table pins the bytes of every node kind; the model tests show that a threshold
changed in the model is what the dashboard draws and the backtest moves, and that a
comparison left only in text is never parsed back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from rulegen.alerts.model import ResolvedAlert
from rulegen.backtest import session
from rulegen.backtest.query import Client, Progress, Samples
from rulegen.backtest.targets import Target, targets
from rulegen.build import build
from rulegen.catalog import load_catalog
from rulegen.core.promql import Matcher
from rulegen.dashboard.build import service_dashboard
from rulegen.dashboard.model import Panel
from rulegen.generated import (
    AlertRule,
    And,
    AnyOf,
    Comparison,
    Condition,
    Divided,
    Expression,
    HostFromInstance,
    Recorded,
    RuleGroup,
    Threshold,
    Verbatim,
    VersusBaseline,
    comparison_of,
    comparisons,
)
from rulegen.load import discover, load_one
from rulegen.pipeline.service import ResolvedSpec
from rulegen.render.grafana import dashboard_json
from rulegen.render.prometheus import condition_promql, rule_file
from rulegen.slo.rules import tier_alert_condition, tier_condition

WEB = (Matcher("service", "=", "web"),)
DISK = Recorded("instance_device:node_disk_io_time_seconds:rate1m", WEB)
BURN_1H = Divided(Recorded("slo:sli_error:ratio_rate1h", WEB), Decimal("0.001"))
BURN_5M = Divided(Recorded("slo:sli_error:ratio_rate5m", WEB), Decimal("0.001"))
OVER = Threshold(Decimal("14.4"), "ratio")
PAGE = And(Comparison(BURN_1H, ">", OVER), Comparison(BURN_5M, ">", OVER))
TICKET = And(
    Comparison(Divided(Recorded("slo:sli_error:ratio_rate6h", WEB), Decimal("0.001")), ">",
               Threshold(Decimal(6), "ratio")),
    Comparison(Divided(Recorded("slo:sli_error:ratio_rate30m", WEB), Decimal("0.001")), ">",
               Threshold(Decimal(6), "ratio")),
)  # fmt: skip
TTFT = Comparison(Recorded("host_model:ttft:p99", WEB), ">", Threshold(Decimal("0.5"), "duration"))
BUSY = Comparison(Recorded("host:disk:busiest", WEB), ">", Threshold(Decimal("0.7"), "percent"))
HOST = '"host", "$1", "instance", "(.+?)(?::[0-9]+)?"'

RENDERED: list[tuple[str, Condition, str]] = [
    (
        "a recording with no matchers is its bare name",
        Comparison(Recorded("up"), "<", Threshold(Decimal(1), "number")),
        "up < 1",
    ),
    (
        "a recording is read with its matchers, the threshold as its shortest exact literal",
        Comparison(DISK, ">", Threshold(Decimal("0.950"), "percent")),
        'instance_device:node_disk_io_time_seconds:rate1m{service="web"} > 0.95',
    ),
    (
        "a tiny threshold is written with an exponent, never as float noise",
        Comparison(Recorded("x"), ">", Threshold(Decimal("0.000000000001"), "ratio")),
        "x > 1e-12",
    ),
    (
        "a bandwidth threshold is written in bytes per second",
        Comparison(Recorded("x"), ">", Threshold(Decimal("12500000000"), "bandwidth")),
        "x > 12500000000",
    ),
    (
        "a one-token expression is compared without parentheses",
        Comparison(
            Expression('vllm:num_requests_waiting{job="vllm"}'),
            ">",
            Threshold(Decimal(10), "number"),
        ),
        'vllm:num_requests_waiting{job="vllm"} > 10',
    ),  # fmt: skip
    (
        "an expression with spaces is compared in parentheses",
        Comparison(Expression("a or b"), ">", Threshold(Decimal(1), "number")),
        "(a or b) > 1",
    ),
    (
        "a multi-line expression is compared in parentheses, its lines kept",
        Comparison(Expression("max(\n  x\n)"), "<=", Threshold(Decimal(2), "number")),
        "(max(\n  x\n)) <= 2",
    ),
    (
        "a recording over a constant needs no parentheses before a comparison",
        Comparison(BURN_1H, ">", OVER),
        'slo:sli_error:ratio_rate1h{service="web"} / 0.001 > 14.4',
    ),
    (
        "a fraction with no finite decimal is written as a division",
        Comparison(BURN_1H, ">", Threshold(Fraction(720, 7), "ratio")),
        'slo:sli_error:ratio_rate1h{service="web"} / 0.001 > (720 / 7)',
    ),
    (
        "a fraction with a finite decimal is written as that decimal",
        Comparison(BURN_1H, ">", Threshold(Fraction(72, 5), "ratio")),
        'slo:sli_error:ratio_rate1h{service="web"} / 0.001 > 14.4',
    ),
    (
        "a value against its baseline is one parenthesised operand over lines",
        Comparison(
            VersusBaseline(Recorded("host_model:tokens:rate", WEB), Decimal(3600), Decimal(300)),
            "<",
            Threshold(Decimal("0.5"), "percent"),
        ),
        '(\n  host_model:tokens:rate{service="web"}\n'
        '  / (avg_over_time(host_model:tokens:rate{service="web"}[1h] offset 5m) > 0)\n) < 0.5',
    ),  # fmt: skip
    (
        "and puts each side on its own line",
        PAGE,
        'slo:sli_error:ratio_rate1h{service="web"} / 0.001 > 14.4\nand\n'
        'slo:sli_error:ratio_rate5m{service="web"} / 0.001 > 14.4',
    ),
    (
        "and on names the labels that must agree",
        And(TTFT, BUSY, ("host", "model_name")),
        'host_model:ttft:p99{service="web"} > 0.5\nand on (host, model_name)\n'
        'host:disk:busiest{service="web"} > 0.7',
    ),
    (
        "a chain of and reads left to right, each join with its own labels",
        And(
            And(TTFT, BUSY, ("host",)),
            Comparison(Recorded("r"), ">=", Threshold(Decimal("0.1"), "rate")),
        ),
        'host_model:ttft:p99{service="web"} > 0.5\nand on (host)\n'
        'host:disk:busiest{service="web"} > 0.7\nand\nr >= 0.1',
    ),  # fmt: skip
    (
        "an and on the right is grouped (and groups to the left)",
        And(TTFT, And(BUSY, TTFT)),
        'host_model:ttft:p99{service="web"} > 0.5\nand\n(host:disk:busiest{service="web"} > '
        '0.7\nand\nhost_model:ttft:p99{service="web"} > 0.5)',
    ),
    (
        "an or inside an and is grouped in an indented block",
        And(AnyOf((TTFT, BUSY)), Verbatim("up == 0")),
        '(\n  (\n    host_model:ttft:p99{service="web"} > 0.5\n  )\n  or\n  (\n'
        '    host:disk:busiest{service="web"} > 0.7\n  )\n)\nand\n(up == 0)',
    ),
    (
        "any of: each condition indented in parentheses of its own lines",
        AnyOf((PAGE, TICKET)),
        '(\n  slo:sli_error:ratio_rate1h{service="web"} / 0.001 > 14.4\n  and\n'
        '  slo:sli_error:ratio_rate5m{service="web"} / 0.001 > 14.4\n)\nor\n(\n'
        '  slo:sli_error:ratio_rate6h{service="web"} / 0.001 > 6\n  and\n'
        '  slo:sli_error:ratio_rate30m{service="web"} / 0.001 > 6\n)',
    ),
    (
        "the host label wraps the whole condition in label_replace",
        HostFromInstance(Comparison(DISK, ">", Threshold(Decimal("0.9"), "percent"))),
        f'label_replace(instance_device:node_disk_io_time_seconds:rate1m{{service="web"}} > 0.9, '
        f"{HOST})",
    ),
    (
        "a verbatim expression is written exactly as the user gave it, reading or not",
        Verbatim(
            "max by (gpu) (temp)  >  85",
            Comparison(Expression("max by (gpu)(temp)"), ">", Threshold(Decimal(85), "number")),
        ),
        "max by (gpu) (temp)  >  85",
    ),
]


@pytest.mark.parametrize(
    ("condition", "promql"), [(c, p) for _, c, p in RENDERED], ids=[i for i, _, _ in RENDERED]
)
def test_condition_renders_as_exact_promql(condition: Condition, promql: str) -> None:
    assert condition_promql(condition) == promql


DURATIONS = [
    ("no for is left out", Decimal(0), Decimal(30), None, "30s"),
    ("whole minutes", Decimal(300), Decimal(60), "5m", "1m"),
    ("mixed units, shortest form", Decimal(5430), Decimal(90), "1h30m30s", "1m30s"),
    ("milliseconds", Decimal("0.5"), Decimal("1.5"), "500ms", "1s500ms"),
]


@pytest.mark.parametrize(
    ("for_seconds", "interval", "shown_for", "shown_interval"),
    [d[1:] for d in DURATIONS],
    ids=[d[0] for d in DURATIONS],
)
def test_durations_are_seconds_until_the_renderer_writes_them(
    for_seconds: Decimal,
    interval: Decimal,
    shown_for: str | None,
    shown_interval: str,
    resolved: ResolvedSpec,
) -> None:
    origin = _alert(resolved, "NodeDown").origin
    rule = AlertRule("A", Verbatim("up == 0"), for_seconds, (), (), origin)
    group = rule_file((RuleGroup("g", interval, (rule,)),))["groups"][0]
    assert group["interval"] == shown_interval
    assert group["rules"][0].get("for") == shown_for
    assert list(group["rules"][0]) == (
        ["alert", "expr", "for", "labels", "annotations"]
        if shown_for
        else ["alert", "expr", "labels", "annotations"]
    )


READINGS: list[tuple[str, Condition, Comparison | None, int]] = [
    ("a comparison is its own", TTFT, TTFT, 1),
    ("through the host label", HostFromInstance(BUSY), BUSY, 1),
    ("a verbatim expression's reading", Verbatim("x > 1", TTFT), TTFT, 1),
    ("a verbatim expression without a reading has none", Verbatim("x > 1"), None, 0),
    ("and has no single threshold", And(TTFT, BUSY), None, 2),
    ("nor has any of", AnyOf((PAGE, TICKET)), None, 4),
]


@pytest.mark.parametrize(
    ("condition", "single", "count"),
    [r[1:] for r in READINGS],
    ids=[r[0] for r in READINGS],
)
def test_thresholds_are_read_from_the_tree(
    condition: Condition, single: Comparison | None, count: int
) -> None:
    assert comparison_of(condition) == single
    assert len(comparisons(condition)) == count


# --- what reads the model ---------------------------------------------------------------------

SPEC = """\
version: 1
service: web
evaluation_interval: 15s
alerts:
  - signal: disk_await
    threshold: 5ms
    severity: warning
  - signal: requests_waiting
    threshold: 10
    severity: critical
  - signal: custom
    name: GpuHot
    expr: 'max by (instance) (DCGM_FI_DEV_GPU_TEMP{job="dcgm"}) > 85'
    severity: info
  - signal: custom
    name: NodeDown
    expr: 'up{job="node"} == 0'
    severity: critical
slos:
  - name: availability
    objective: 99.9%
    sli:
      ratio:
        errors: 'grpc_server_handled_total{grpc_code!="OK"}'
        total: grpc_server_handled_total
    alerting:
      min_traffic: 0.1
"""


@pytest.fixture(scope="module")
def spec_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("conditions") / "specs" / "web.yaml"
    path.parent.mkdir()
    path.write_text(SPEC, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def resolved(spec_file: Path) -> ResolvedSpec:
    loaded = load_one(load_catalog(), spec_file)
    assert loaded.resolved is not None
    return loaded.resolved


def _alert(spec: ResolvedSpec, name: str) -> ResolvedAlert:
    return next(a for a in spec.alerts if a.name == name)


def test_a_catalog_alert_compares_the_specs_exact_decimal_in_its_unit(
    resolved: ResolvedSpec,
) -> None:
    disk = _alert(resolved, "DiskAwaitHigh")
    assert disk.condition == Comparison(
        Recorded("instance_device:node_disk_await_seconds:rate1m"),
        ">",
        Threshold(Decimal("0.005"), "duration"),
    )
    waiting = _alert(resolved, "RequestQueueBacklog")
    assert isinstance(waiting.condition, Comparison)
    assert waiting.condition.threshold == Threshold(Decimal(10), "number")


def test_a_custom_alert_is_verbatim_with_its_comparison_read_once(
    resolved: ResolvedSpec,
) -> None:
    hot = _alert(resolved, "GpuHot")
    assert hot.condition == Verbatim(
        'max by (instance) (DCGM_FI_DEV_GPU_TEMP{job="dcgm"}) > 85',
        Comparison(
            Expression('max by (instance)(DCGM_FI_DEV_GPU_TEMP{job="dcgm"})'),
            ">",
            Threshold(Decimal(85), "number"),
        ),
    )
    assert _alert(resolved, "NodeDown").condition == Verbatim('up{job="node"} == 0')


def _panels(spec: ResolvedSpec) -> dict[str, dict[str, Any]]:
    board = dashboard_json(service_dashboard(spec, "specs/web.yaml"))
    return {p["title"].split(" ")[0]: p for p in board["panels"] if p["type"] != "row"}


def _red_lines(panel: dict[str, Any]) -> list[float]:
    steps = panel["fieldConfig"]["defaults"]["thresholds"]["steps"]
    return [s["value"] for s in steps if s["color"] == "red"]


def test_the_dashboard_draws_the_typed_threshold(resolved: ResolvedSpec) -> None:
    """A threshold changed in the model (and only there) is what the panel draws and its
    title and description show; the PromQL quoted is rendered from the same condition."""
    disk = _alert(resolved, "DiskAwaitHigh")
    assert isinstance(disk.condition, Comparison)
    moved = replace(disk.condition, threshold=Threshold(Decimal("0.042"), "duration"))
    spec = replace(
        resolved, alerts=tuple(replace(a, condition=moved) if a is disk else a
                               for a in resolved.alerts)
    )  # fmt: skip
    panel = _panels(spec)["DiskAwaitHigh"]
    assert _red_lines(panel) == [0.042]
    assert panel["title"] == "DiskAwaitHigh (> 42ms for 5m)"
    assert "fires when this is above 42ms" in panel["description"]
    assert panel["description"].endswith(
        "Alert expression: `instance_device:node_disk_await_seconds:rate1m > 0.042`"
    )


def test_a_custom_alert_draws_only_what_its_reading_says(resolved: ResolvedSpec) -> None:
    """With a reading, its threshold; without one, no line, even when the text holds a
    comparison: the dashboard never parses PromQL."""
    panels = _panels(resolved)
    assert _red_lines(panels["GpuHot"]) == [85.0]
    assert panels["GpuHot"]["title"] == "GpuHot (> 85 for 0s)"
    assert panels["NodeDown"]["title"] == "NodeDown"
    assert _red_lines(panels["NodeDown"]) == []
    hot = _alert(resolved, "GpuHot")
    unread = replace(hot, condition=Verbatim('max by (instance) (x{job="dcgm"}) > 85'))
    board = service_dashboard(replace(resolved, alerts=(unread,), slos=()), "specs/web.yaml")
    panel: Panel = board.rows[0].panels[0]
    assert panel.thresholds == ()
    assert panel.title == "GpuHot"
    assert panel.queries[0].expr == 'max by (instance) (x{job="dcgm"}) > 85'


def test_backtest_targets_carry_the_typed_comparison(spec_file: Path) -> None:
    result = build(discover([spec_file.parent]), load_catalog(), jobs=1)
    found = {t.alert: t for t in targets(result)}
    disk = found["DiskAwaitHigh"].comparison
    assert disk is not None
    assert disk.op == ">"
    assert disk.threshold == Threshold(Decimal("0.005"), "duration")
    assert disk.quantity == Recorded("instance_device:node_disk_await_seconds:rate1m", WEB)
    assert found["DiskAwaitHigh"].for_ms == 300_000
    assert found["DiskAwaitHigh"].step_ms == 15_000
    assert found["GpuHot"].comparison is not None
    assert found["NodeDown"].comparison is None
    burns = [t for t in targets(result) if t.alert == "ErrorBudgetBurn"]
    assert len(burns) == 2
    assert all(t.comparison is None for t in burns)  # and/or: no single threshold to move
    assert burns[0].expr.startswith("(\n  slo:sli_error:ratio_rate1h")


class _History(Client):
    """A server that answers every range query with one series (no network)."""

    def __init__(self, values: Sequence[float]) -> None:
        super().__init__("http://history.invalid")
        self.values = values
        self.asked: list[str] = []

    def range_query(
        self,
        expr: str,
        times: Sequence[int],
        progress: Progress | None = None,  # noqa: ARG002
    ) -> Samples:
        self.asked.append(expr)
        return {(("instance", "a"),): dict(zip(times, self.values, strict=False))}

    def has_series(self, selector: str, start_ms: int, end_ms: int) -> bool:  # noqa: ARG002
        return True


SPAN = (0, 150_000)


def test_the_backtest_suggests_from_the_typed_comparison() -> None:
    """The quantity queried and the threshold replayed come from ``Target.comparison``."""
    quantity = Recorded("q:rec", WEB)
    compared = Comparison(quantity, ">", Threshold(Decimal("0.5"), "percent"))
    target = Target("A", "g", 'q:rec{service="web"} > 0.5', 0, 15_000, comparison=compared)
    client = _History([0.1, 0.9, 0.1, 0.9, 0.1, 0.9, 0.1, 0.9, 0.1, 0.9, 0.1, 0.9])
    report = session.backtest(client, target, SPAN, per_week=0)
    assert client.asked == ['q:rec{service="web"} > 0.5', 'q:rec{service="web"}']
    assert report.comparison == compared
    assert report.current_fired == 6  # 0.9 at 0s, 30s, … 150s
    assert report.suggestion is not None
    assert report.suggestion.op == ">"
    assert report.suggestion.fired == 0


def test_the_backtest_never_parses_a_threshold_out_of_text() -> None:
    target = Target("A", "g", 'q:rec{service="web"} > 0.5', 0, 15_000)
    client = _History([0.1, 0.9] * 6)
    report = session.backtest(client, target, SPAN, per_week=0)
    assert report.suggestion is None
    assert report.notes == ["no suggestion: the expression is not `quantity > number`"]
    assert client.asked == ['q:rec{service="web"} > 0.5'] * 2  # the quantity: all of it


# --- one condition, two writers -----------------------------------------------------------


def test_the_slo_alert_condition_is_the_text_its_tests_and_annotations_evaluate(
    resolved: ResolvedSpec,
) -> None:
    """The generated test's check and the description's ``query`` build the tier's PromQL as
    text (they select with Go-template placeholders); it must equal the rule's rendering."""
    (slo,) = resolved.slos
    assert slo.min_traffic is not None
    assert len(slo.tiers) > 1
    for tier in slo.tiers:
        assert condition_promql(tier_alert_condition(slo, tier)) == tier_condition(slo, tier)


def test_the_rule_file_holds_what_the_renderer_writes(spec_file: Path) -> None:
    """The service selector is composed into the catalog alert's comparison (no text
    surgery); custom alerts keep the user's PromQL byte for byte."""
    result = build(discover([spec_file.parent]), load_catalog(), jobs=1)
    (service,) = result.services
    written = rule_file(service.groups)
    exprs = {r["alert"]: r["expr"] for g in written["groups"] for r in g["rules"] if "alert" in r}
    assert exprs == {
        "DiskAwaitHigh": 'instance_device:node_disk_await_seconds:rate1m{service="web"} > 0.005',
        "RequestQueueBacklog": "vllm:num_requests_waiting > 10",
        "GpuHot": 'max by (instance) (DCGM_FI_DEV_GPU_TEMP{job="dcgm"}) > 85',
        "NodeDown": 'up{job="node"} == 0',
    }
