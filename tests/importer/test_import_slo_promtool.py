"""The issue's proof: an imported SLO pages at least as early as the tool it came from on a total
outage, and never pages on a burn its source would not page on.

One promtool test file loads BOTH rule sets, the source tool's and rulegen's (built in memory
from the imported spec), on the same series, and checks the ``ALERTS`` series each writes:

- **Sloth**: the tool's own generated rules (``data/anchors/sloth/_gen/``).
- **Pyrra**: its repository holds no generated rule files, so its rules are written here from
  its generator (``slo/rules.go`` at the anchors' commit: a burn-rate recording
  ``sum(rate(errors[w])) / sum(rate(total[w]))`` for each window of ``Windows(28d)``, and one
  alert per window, ``short > factor * (1-target) and long > factor * (1-target)`` with its
  ``for``).

``T_src``, the first evaluation at which the source pages (in its best case: its recording
groups evaluated before its alert groups), is worked out from its rule in each case below and
asserted (the source is silent one evaluation before); rulegen's page must be firing at
``T_src`` (earlier is allowed). A steady burn just below the source's lowest ticket
factor (from the first sample, so every window holds that ratio) must leave both silent at every
evaluation; a burn just above it makes both ticket (so the silence is not a test that cannot
fail).
"""

from __future__ import annotations

import textwrap
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import promtool_test

from rulegen.build import build
from rulegen.catalog import load_catalog
from rulegen.importer import pyrra, sloth
from rulegen.importer.model import ImportOptions, ImportResult
from rulegen.load import discover

ANCHORS = Path(__file__).resolve().parent / "data" / "anchors"  # copies: data/anchors/README.txt
pytestmark = [
    pytest.mark.slow,
]
T0 = 420  # minutes of clean history (longer than the 6h page window) before the outage
# The steady burns start with the first sample, so every window, however long, holds the same
# error ratio from its second sample on (partly filled or full): 7h of it, every 5 minutes,
# shows each tier's verdict on that ratio without replaying days (promtool's cost grows with
# steps × window samples).
BURN_STEPS = 84
BURN_END = "7h"


def rulegen_rules(result: ImportResult, tmp_path: Path, rule_file: str) -> str:
    """The imported specs built in memory; the text of one generated rule file."""
    specs = tmp_path / "specs"
    specs.mkdir()
    for service in result.services:
        text = yaml.safe_dump(service.document, sort_keys=False, allow_unicode=True)
        (specs / f"{service.service}.yaml").write_text(text, encoding="utf-8")
    return build(discover([specs]), load_catalog([]), jobs=1).files[rule_file]


def firing(selector: str, at: str, count: int | None) -> dict[str, Any]:
    """``count`` alerts of ``selector`` firing at ``at`` (``None``: none)."""
    samples = [] if count is None else [{"labels": "{}", "value": count}]
    expr = f'count(ALERTS{{alertstate="firing",{selector}}})'
    return {"expr": expr, "eval_time": at, "exp_samples": samples}


def never_fired(at: str, window: str) -> dict[str, Any]:
    """No alert of either tool fired at any evaluation up to ``at``."""
    expr = f'max_over_time(ALERTS{{alertstate="firing"}}[{window}])'
    return {"expr": expr, "eval_time": at, "exp_samples": []}


def run_promtool(
    tmp_path: Path, rules: dict[str, str], step: str, tests: list[dict[str, Any]]
) -> None:
    """One promtool test file on both rule sets, evaluated every ``step`` (the series'
    interval too: a 5m series read every minute would leave rate()[5m] empty in between)."""
    for name, text in rules.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    test = tmp_path / f"compare-{step}.test.yml"
    for group in tests:
        group["interval"] = step
    document = {
        "rule_files": sorted(rules),
        "evaluation_interval": step,
        "group_eval_order": eval_order(rules),
        "tests": tests,
    }
    test.write_text(yaml.safe_dump(document), "utf-8")
    proc = promtool_test(test)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def eval_order(rules: dict[str, str]) -> list[str]:
    """Every group, the source's recordings before its alerts: promtool otherwise evaluates
    groups in random order, and Sloth's alert group (apart from its recordings) would read the
    previous evaluation's ratios at random, paging one evaluation late. Its best case is the
    one rulegen must match."""
    names = [g["name"] for text in rules.values() for g in yaml.safe_load(text)["groups"]]
    return sorted(names, key=lambda name: "-alerts-" in name)


def outage(good: str, bad: str, minutes: int) -> list[dict[str, str]]:
    """60 events a minute; all of them good for ``T0`` minutes, then all of them bad."""
    return [
        {"series": good, "values": f"0+60x{T0} {60 * T0}x{minutes}"},
        {"series": bad, "values": f"0x{T0} 60+60x{minutes - 1}"},
    ]


def burn(good: str, bad: str, ratio: float, steps: int) -> list[dict[str, str]]:
    """300 events every 5 minutes, ``ratio`` of them bad, for ``steps`` steps."""
    return [
        {"series": good, "values": f"0+{300 * (1 - ratio):.6f}x{steps}"},
        {"series": bad, "values": f"0+{300 * ratio:.6f}x{steps}"},
    ]


def latency_burn(count: str, bucket: str, ratio: float, steps: int) -> list[dict[str, str]]:
    """Histogram count and fast bucket: ``ratio`` of 300 events per 5 minutes are slow."""
    return [
        {"series": count, "values": f"0+300x{steps}"},
        {"series": bucket, "values": f"0+{300 * (1 - ratio):.6f}x{steps}"},
    ]


# --- Sloth -----------------------------------------------------------------------------------

AVAIL_OK = 'apiserver_request_total{code="200"}'
AVAIL_BAD = 'apiserver_request_total{code="500"}'
LAT_COUNT = 'apiserver_request_duration_seconds_count{verb="GET"}'
LAT_FAST = 'apiserver_request_duration_seconds_bucket{verb="GET",le="0.4"}'
SLOTH_PAGE = 'sloth_severity="page",sloth_slo="{slo}"'
SLOTH_TICKET = 'sloth_severity="ticket"'
RULEGEN_PAGE = 'severity="critical",slo="{slo}"'
RULEGEN_TICKET = 'severity="warning",service="k8s-apiserver"'


def test_sloth_apiserver_imported_pages_no_later_and_no_more(tmp_path: Path) -> None:
    """Sloth's kubernetes-apiserver example (99.9% availability, 99% latency; page when the
    1h/5m error ratio exceeds 14.4 × budget, or 6h/30m 6 × budget; no ``for``).

    Total outage from ``T0``, 60 requests a minute, each sample one minute after the last:
    after k bad minutes the 1h ratio is k/60 and the 5m ratio at least 0.2.
    - availability: k/60 > 0.0144 at k = 1, so ``T_src = T0 + 1m``;
    - latency: k/60 > 0.144 first at k = 9 (8/60 = 0.133), and 6h needs k/360 > 0.06
      (k = 22), so ``T_src = T0 + 9m``.
    """
    result = sloth.import_files(
        [ANCHORS / "sloth" / "examples" / "kubernetes-apiserver.yml"], ImportOptions()
    )
    prefix = "prometheus/k8s-apiserver.slo."
    rules = {
        "sloth.yml": (ANCHORS / "sloth" / "_gen" / "kubernetes-apiserver.yml").read_text("utf-8"),
        "availability.yml": rulegen_rules(
            result, tmp_path, f"{prefix}requests-availability.rules.yml"
        ),
    }
    rules["latency.yml"] = build(discover([tmp_path / "specs"]), load_catalog([]), jobs=1).files[
        f"{prefix}requests-latency.rules.yml"
    ]
    avail, lat = "requests-availability", "requests-latency"
    outage_series = [
        *outage(AVAIL_OK, AVAIL_BAD, 30),
        *outage(LAT_FAST, "latency_unused", 30)[:1],
        {"series": LAT_COUNT, "values": f"0+60x{T0 + 30}"},
    ]
    before_avail, at_avail = f"{T0}m", f"{T0 + 1}m"
    before_lat, at_lat = f"{T0 + 8}m", f"{T0 + 9}m"
    checks = [
        firing(SLOTH_PAGE.format(slo=avail), before_avail, None),
        firing(RULEGEN_PAGE.format(slo=avail), before_avail, None),
        firing(SLOTH_PAGE.format(slo=avail), at_avail, 1),
        firing(RULEGEN_PAGE.format(slo=avail), at_avail, 1),
        firing(SLOTH_PAGE.format(slo=lat), before_lat, None),
        firing(SLOTH_PAGE.format(slo=lat), at_lat, 1),
        firing(RULEGEN_PAGE.format(slo=lat), at_lat, 1),
    ]
    steps = BURN_STEPS
    below = [
        *burn(AVAIL_OK, AVAIL_BAD, 0.99 * 0.001, steps),
        *latency_burn(LAT_COUNT, LAT_FAST, 0.99 * 0.01, steps),
    ]
    above = [
        *burn(AVAIL_OK, AVAIL_BAD, 1.01 * 0.001, 80),
        *latency_burn(LAT_COUNT, LAT_FAST, 1.01 * 0.01, 80),
    ]
    run_promtool(
        tmp_path, rules, "1m", [{"input_series": outage_series, "promql_expr_test": checks}]
    )
    run_promtool(
        tmp_path,
        rules,
        "5m",
        [
            {"input_series": below, "promql_expr_test": [never_fired(BURN_END, BURN_END)]},
            {
                "input_series": above,
                "promql_expr_test": [
                    firing(SLOTH_TICKET, "6h", 2),
                    firing(RULEGEN_TICKET, "6h", 2),
                ],
            },
        ],
    )


# --- Pyrra -----------------------------------------------------------------------------------

THANOS_OK = 'http_requests_total{job="thanos-query",handler="query",code="200"}'
THANOS_BAD = 'http_requests_total{job="thanos-query",handler="query",code="500"}'


def thanos_burnrate(window: str) -> str:
    """Pyrra's ratio burn rate of ``examples/thanos-http.yaml`` over ``window``."""
    errors = 'http_requests_total{code=~"5..",handler=~"query|query_range",job="thanos-query"}'
    total = 'http_requests_total{handler=~"query|query_range",job="thanos-query"}'
    return f"sum(rate({errors}[{window}])) / sum(rate({total}[{window}]))"


def pyrra_rules(
    window_days: int = 28, target: str = "0.99", burnrate: Any = thanos_burnrate,
    labels: dict[str, str] | None = None, record: str = "http_requests",
) -> str:  # fmt: skip
    """Pyrra's rules for ``examples/thanos-http.yaml`` (ratio, no grouping) or another SLO's
    ``burnrate(window)``, as its generator writes them (recordings labelled with the SLO and
    the total's equality matchers)."""
    labels = labels or {"job": "thanos-query", "slo": "thanos-query"}
    windows = pyrra.pyrra_windows(Fraction(window_days * 86400))
    spans = sorted({int(w[2]) for w in windows} | {int(w[3]) for w in windows})
    name = {s: f"{s // 86400}d" if s % 86400 == 0 else f"{s // 3600}h" if s % 3600 == 0
            else f"{s // 60}m" for s in spans}  # fmt: skip
    rules: list[dict[str, Any]] = [
        {"record": f"{record}:burnrate{name[s]}", "expr": burnrate(name[s]), "labels": labels}
        for s in spans
    ]
    matchers = "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"

    def threshold(factor: int) -> str:
        return f"({factor} * (1-{target}))"

    for alert, for_, long, short, factor in windows:
        rules.append(
            {
                "alert": "ErrorBudgetBurn",
                "expr": (
                    f"{record}:burnrate{name[int(short)]}{matchers} > {threshold(factor)} "
                    f"and {record}:burnrate{name[int(long)]}{matchers} > {threshold(factor)}"
                ),
                "for": f"{int(for_) // 60}m",
                "labels": {
                    **labels,
                    "long": name[int(long)],
                    "short": name[int(short)],
                    "severity": "critical" if alert == "page" else "warning",
                },
            }
        )
    group = labels["slo"]
    return yaml.safe_dump({"groups": [{"name": group, "interval": "30s", "rules": rules}]})


PYRRA_PAGE = 'severity="critical",long!=""'
PYRRA_TICKET = 'severity="warning",long!=""'
RULEGEN_PYRRA_PAGE = 'severity="critical",service="monitoring"'
RULEGEN_PYRRA_TICKET = 'severity="warning",service="monitoring"'


def test_pyrra_rules_transcribed_here_are_its_windows() -> None:
    """The windows Pyrra's ``Windows(28d)`` gives (its comments: 2m/1h/5m ×14, 15m/6h/30m ×7,
    1h/1d/2h ×2, 3h/4d/6h ×1), so the rules above are Pyrra's."""
    text = textwrap.dedent(pyrra_rules())
    assert "http_requests:burnrate4d" in text
    assert [(a, int(f), int(lo), int(s), x) for a, f, lo, s, x in pyrra.pyrra_windows(
        Fraction(28 * 86400))] == [
        ("page", 120, 3600, 300, 14),
        ("page", 900, 21600, 1800, 7),
        ("ticket", 3600, 86400, 7200, 2),
        ("ticket", 10800, 345600, 21600, 1),
    ]  # fmt: skip


def test_pyrra_thanos_imported_pages_no_later_and_no_more(tmp_path: Path) -> None:
    """Pyrra's thanos-http example (99%, 4w). Its fastest page: 1h/5m above 14 × 0.01 for 2m.

    Total outage from ``T0`` (60 requests a minute): after k bad minutes the 1h ratio is k/60,
    above 0.14 first at k = 9 (8/60 = 0.133); the 6h/30m window needs k/360 > 0.07 (k = 26)
    and waits 15m. So the condition holds from ``T0 + 9m`` and Pyrra fires at
    ``T_src = T0 + 11m``; rulegen's tier (budget 2.083334%, factor 14.00000448, ``for: 2m``,
    the shortest of Pyrra's page windows) fires then too.
    """
    result = pyrra.import_files(
        [ANCHORS / "pyrra" / "examples" / "thanos-http.yaml"], ImportOptions()
    )
    rules = {
        "pyrra.yml": pyrra_rules(),
        "rulegen.yml": rulegen_rules(
            result, tmp_path, "prometheus/monitoring.slo.thanos-query.rules.yml"
        ),
    }
    checks = [
        firing(PYRRA_PAGE, f"{T0 + 10}m", None),
        firing(PYRRA_PAGE, f"{T0 + 11}m", 1),
        firing(RULEGEN_PYRRA_PAGE, f"{T0 + 11}m", 1),
    ]
    steps = BURN_STEPS
    outage_series = outage(THANOS_OK, THANOS_BAD, 30)
    run_promtool(
        tmp_path, rules, "1m", [{"input_series": outage_series, "promql_expr_test": checks}]
    )
    below = burn(THANOS_OK, THANOS_BAD, 0.99 * 0.01, steps)
    above = burn(THANOS_OK, THANOS_BAD, 1.01 * 0.01, 60)
    run_promtool(
        tmp_path,
        rules,
        "5m",
        [
            {"input_series": below, "promql_expr_test": [never_fired(BURN_END, BURN_END)]},
            {
                "input_series": above,
                "promql_expr_test": [
                    firing(PYRRA_TICKET, "4h", 1),
                    firing(RULEGEN_PYRRA_TICKET, "4h", 1),
                ],
            },
        ],
    )


def pyrra_absent_rules() -> str:
    """Pyrra's absent alert for ``examples/thanos-http.yaml`` as its generator writes it
    (``increaseRulesRatio``: errors and total are one metric, so one alert, on the total;
    labelled with the SLO and the total's equality matchers), for ``AbsentDuration()``: 14 ×
    (1 − 0.99) × 1h = 504s, + the 1h window's 2m, to the minute: 10m."""
    rule = {
        "alert": "SLOMetricAbsent",
        "expr": 'absent(http_requests_total{handler=~"query|query_range",job="thanos-query"}) == 1',
        "for": "10m",
        "labels": {"job": "thanos-query", "slo": "thanos-query", "severity": "critical"},
    }
    group = {"name": "thanos-query-increase", "interval": "2m30s", "rules": [rule]}
    return yaml.safe_dump({"groups": [group]})


def test_pyrra_thanos_imported_absent_alert_fires_when_pyrras_does(tmp_path: Path) -> None:
    """The series end (a stale marker at 31m): both absent alerts fire at 41m, not at 40m."""
    result = pyrra.import_files(
        [ANCHORS / "pyrra" / "examples" / "thanos-http.yaml"], ImportOptions()
    )
    rules = {
        "pyrra.yml": pyrra_absent_rules(),
        "rulegen.yml": rulegen_rules(
            result, tmp_path, "prometheus/monitoring.slo.thanos-query.rules.yml"
        ),
    }
    pyrra_absent = 'alertname="SLOMetricAbsent",service=""'
    rulegen_absent = 'alertname="SLOMetricAbsent",service="monitoring"'
    checks = [
        *(firing(who, "40m", None) for who in (pyrra_absent, rulegen_absent)),
        *(firing(who, "41m", 1) for who in (pyrra_absent, rulegen_absent)),
    ]
    series = [{"series": THANOS_OK, "values": "0+60x30 stale"}]
    run_promtool(tmp_path, rules, "1m", [{"input_series": series, "promql_expr_test": checks}])


# --- Sloth's expression SLIs (issue 31) ----------------------------------------------------------

WIFI = "unifipoller_client_satisfaction_ratio"
WIFI_DATA = Path(__file__).resolve().parent / "data"


def wifi_clients(
    values: list[float], minutes: int, bad: list[float] | None = None
) -> list[dict[str, str]]:
    """One series per client: its satisfaction every step, ``values`` for ``T0`` steps, then
    ``bad`` (when given) for ``minutes`` steps; else ``values`` throughout ``minutes``."""
    out = []
    for index, value in enumerate(values):
        if bad is None:
            text = f"{value}+0x{minutes}"
        else:
            text = f"{value}+0x{T0 - 1} {bad[index]}+0x{minutes}"
        out.append({"series": f'{WIFI}{{client="c{index}"}}', "values": text})
    return out


def sloth_wifi(slo: str, alert: str, severity: str) -> tuple[str, str]:
    """The selectors of Sloth's and rulegen's alert ``severity`` (page or ticket) of ``slo``."""
    sloth_sel = f'sloth_severity="{severity}",sloth_slo="{slo}"'
    own = "home" if severity == "page" else "warning"
    return sloth_sel, f'alertname="{alert}",service="home-wifi",severity="{own}",slo="{slo}"'


@pytest.mark.parametrize(
    ("example", "slos"),
    [
        ("home-wifi.yml", [("good-wifi-client-satisfaction", "GoodWifiClientSatisfaction"),
                           ("risk-wifi-client-satisfaction", "RiskWifiClientSatisfaction")]),
        ("raw-home-wifi.yml", [("wifi-client-satisfaction", "WifiClientSatisfaction")]),
    ],
    ids=["events on a gauge", "raw error ratio"],
)  # fmt: skip
def test_sloth_expression_slis_imported_page_no_later_and_no_more(
    example: str, slos: list[tuple[str, str]], tmp_path: Path
) -> None:
    """Sloth's home-wifi examples: events counted from a gauge through a subquery
    (``sum_over_time((count(x < 0.75))[{{.window}}:])``, 95% and 99.9%) and a raw error
    ratio (``1 - avg`` of the satisfaction, 95%), imported as expression SLIs.

    Total outage from ``T0``, two clients, one sample a minute, one subquery point a minute:
    after k bad minutes the 1h window holds k + 1 bad points of 60 (61 on 2.x's closed
    ranges), so the 95% page (1h/5m above 14.4 × 0.05 = 0.72) holds first at k = 43
    (44/60 = 0.733, 44/61 = 0.721; 43/60 = 0.717): ``T_src = T0 + 43m``; the 99.9% page
    (0.0144) at k = 0. Below the ticket (a steady 2.5% bad, 1 × 0.05) neither tool fires;
    at 7.5% both ticket.
    """
    source = WIFI_DATA / "sloth-examples" / example
    result = sloth.import_files([source], ImportOptions())
    assert result.refused == []
    rules = {"sloth.yml": (WIFI_DATA / "sloth" / example).read_text("utf-8")}
    for index, (slo, _) in enumerate(slos):
        (tmp_path / str(index)).mkdir()
        built = rulegen_rules(
            result, tmp_path / str(index), f"prometheus/home-wifi.slo.{slo}.rules.yml"
        )
        rules[f"rulegen-{index}.yml"] = built
    raw = example.startswith("raw")
    good, bad = ([1.0, 1.0], [0.0, 0.0]) if raw else ([0.9, 0.8], [0.4, 0.3])
    checks = []
    for slo, alert in slos:
        at = T0 + (0 if slo.startswith("risk") else 43)
        sloth_page, own_page = sloth_wifi(slo, alert, "page")
        for selector in (sloth_page, own_page):
            checks.append(firing(selector, f"{at - 1}m", None))
            checks.append(firing(selector, f"{at}m", 1))
    outage_series = wifi_clients(good, 60, bad)
    run_promtool(
        tmp_path, rules, "1m", [{"input_series": outage_series, "promql_expr_test": checks}]
    )
    # 40 clients: 1 (then 3) unsatisfied; the raw SLI reads their mean satisfaction
    unsatisfied = 0.0 if raw else 0.6  # below 0.75, not below 0.5: the risk SLO stays silent
    below = wifi_clients([0.9 if not raw else 1.0] * 39 + [unsatisfied], BURN_STEPS)
    above = wifi_clients([0.9 if not raw else 1.0] * 37 + [unsatisfied] * 3, BURN_STEPS)
    slo, alert = slos[0]
    sloth_ticket, own_ticket = sloth_wifi(slo, alert, "ticket")
    run_promtool(
        tmp_path,
        rules,
        "5m",
        [
            {"input_series": below, "promql_expr_test": [never_fired(BURN_END, BURN_END)]},
            {
                "input_series": above,
                "promql_expr_test": [firing(sloth_ticket, "6h", 1), firing(own_ticket, "6h", 1)],
            },
        ],
    )


def probe_burnrate(window: str) -> str:
    """Pyrra's bool_gauge burn rate (``slo/rules.go``, ``case BoolGauge``) of
    ``examples/prometheus-probe-success.yaml`` (grouped by target) over ``window``."""
    count = f"sum by (target) (count_over_time(probe_success[{window}]))"
    ones = f"sum by (target) (sum_over_time(probe_success[{window}]))"
    return f"({count} - {ones}) / {count}"


def probe_series(every: int, samples: int) -> list[dict[str, str]]:
    """One target's probe: a failed probe (0) every ``every`` samples, else 1."""
    parts = []
    while samples > 0:
        run = min(every - 1, samples)
        parts.append(f"1+0x{run - 1}")
        samples -= run
        if samples > 0:
            parts.append("0")
            samples -= 1
    return [{"series": 'probe_success{target="a"}', "values": " ".join(parts)}]


def test_pyrra_bool_gauge_imported_pages_no_later_and_no_more(tmp_path: Path) -> None:
    """Pyrra's prometheus-probe-success example (bool_gauge, 99% over 7d, by target), imported
    as an events SLI. Its fastest page: 15m/1m above 14 × 0.01 with ``for: 1m``.

    Total outage from ``T0`` (a probe a minute): after k failed probes the 15m window holds
    k + 1 zeros of 15 (16 on 2.x), above 0.14 first at k = 2 (3/15, 3/16); the 1m window is
    all zeros. So the condition holds from ``T0 + 2m`` and both fire at ``T_src = T0 + 3m``.
    A failed probe every 200 probes (0.5%, a probe every 30s) leaves both silent; one every 50
    (2%) makes both ticket (1d/90m above 1 × 0.01).
    """
    result = pyrra.import_files(
        [ANCHORS / "pyrra" / "examples" / "prometheus-probe-success.yaml"], ImportOptions()
    )
    service = "prometheus-blackbox-probe-success"
    labels = {"slo": service}
    rules = {
        "pyrra.yml": pyrra_rules(7, "0.99", probe_burnrate, labels, "probe_success"),
        "rulegen.yml": rulegen_rules(
            result, tmp_path, f"prometheus/{service}.slo.{service}.rules.yml"
        ),
    }
    own_page = f'severity="critical",service="{service}"'
    own_ticket = f'severity="warning",service="{service}"'
    checks = [
        firing(PYRRA_PAGE, f"{T0 + 2}m", None),
        firing(own_page, f"{T0 + 2}m", None),
        firing(PYRRA_PAGE, f"{T0 + 3}m", 1),
        firing(own_page, f"{T0 + 3}m", 1),
    ]
    outage_series = [{"series": 'probe_success{target="a"}', "values": f"1+0x{T0 - 1} 0+0x30"}]
    run_promtool(
        tmp_path, rules, "1m", [{"input_series": outage_series, "promql_expr_test": checks}]
    )
    samples = 7 * 120  # 7h of a probe every 30s
    run_promtool(
        tmp_path,
        rules,
        "30s",
        [
            {
                "input_series": probe_series(200, samples),
                "promql_expr_test": [never_fired(BURN_END, BURN_END)],
            },
            {
                "input_series": probe_series(50, samples),
                "promql_expr_test": [firing(PYRRA_TICKET, "6h", 1), firing(own_ticket, "6h", 1)],
            },
        ],
    )


CADDY = "caddy-response-latency"
CADDY_COUNT = 'caddy_http_response_duration_seconds_count{job="caddy",handler="subroute"}'
CADDY_FAST = (
    'caddy_http_response_duration_seconds_bucket{job="caddy",handler="subroute",code!~"5..",'
    'le="0.05"}'
)


def caddy_burnrate(window: str) -> str:
    """Pyrra's latency burn rate (``slo/rules.go``, ``case Latency``) of the caddy example
    below over ``window``: the requests not fast (and successful) over all requests."""
    total = f"sum(rate({CADDY_COUNT}[{window}]))"
    return f"({total} - sum(rate({CADDY_FAST}[{window}]))) / {total}"


def test_pyrra_bucket_narrower_than_count_imported_pages_no_later(tmp_path: Path) -> None:
    """Pyrra's caddy-response-latency example with its total widened to every request (the
    bucket keeps ``code!~"5.."``: fast *and* successful over all requests) and a 99% target:
    a bucket over a count of other series, imported as ``sli.ratio.good``. Its windows are
    thanos-http's (28d): the 1h/5m page above 0.14 holds from k = 9 bad minutes, and with
    ``for: 2m`` both fire at ``T0 + 11m``."""
    source = (ANCHORS / "pyrra" / "examples" / "caddy-response-latency.yaml").read_text()
    wide = CADDY_COUNT.replace("}", ',code!~"5.."}')
    source = source.replace(wide, CADDY_COUNT)
    source = source.replace('target: "90"', 'target: "99"')
    (tmp_path / "in").mkdir()
    path = tmp_path / "in" / "caddy.yaml"
    path.write_text(source, encoding="utf-8")
    result = pyrra.import_files([path], ImportOptions())
    assert result.refused == []
    slo = result.services[0].document["slos"][0]
    assert slo["sli"] == {"ratio": {"good": CADDY_FAST, "total": CADDY_COUNT}}
    labels = {"slo": "caddy-response-latency", "job": "caddy", "handler": "subroute"}
    rules = {
        "pyrra.yml": pyrra_rules(
            28, "0.99", caddy_burnrate, labels, "caddy_http_response_duration_seconds"
        ),
        "rulegen.yml": rulegen_rules(
            result,
            tmp_path,
            "prometheus/caddy-response-latency.slo.caddy-response-latency.rules.yml",
        ),
    }
    own_page = 'severity="critical",service="caddy-response-latency"'
    outage_series = [
        {"series": CADDY_COUNT, "values": f"0+60x{T0 + 30}"},
        {"series": CADDY_FAST.replace('code!~"5..",', 'code="200",'),
         "values": f"0+60x{T0} {60 * T0}x30"},
    ]  # fmt: skip
    checks = [
        firing(PYRRA_PAGE, f"{T0 + 10}m", None),
        firing(own_page, f"{T0 + 10}m", None),
        firing(PYRRA_PAGE, f"{T0 + 11}m", 1),
        firing(own_page, f"{T0 + 11}m", 1),
    ]
    run_promtool(
        tmp_path, rules, "1m", [{"input_series": outage_series, "promql_expr_test": checks}]
    )
