"""Structure of the SLO rules: exact factors, exact tiling, cheap long windows, stable labels."""

from __future__ import annotations

import re
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest
import yaml

from rulegen.build import build
from rulegen.catalog import load_catalog
from rulegen.core import promql
from rulegen.load import discover
from rulegen.slo.resolve import base_window, format_fraction
from rulegen.slo.windows import MAX_TERMS, plan_windows

DAY = Decimal(86400)


def _spec(window: str = "30d", labels: str = "{team: a}", extra: str = "") -> str:
    return f"""
version: 1
service: web
labels: {labels}
slos:
  - name: availability
    objective: 99.9%
    window: {window}
    sli:
      ratio:
        errors: 'http_requests_total{{code=~"5.."}}'
        total: 'http_requests_total'
{extra}"""


def _rules(tmp_path: Path, text: str) -> list[dict[str, object]]:
    (tmp_path / "specs").mkdir(exist_ok=True)
    (tmp_path / "specs" / "web.yaml").write_text(text)
    files = build(discover([tmp_path / "specs"]), load_catalog(), root=tmp_path).files
    data = yaml.safe_load(files["prometheus/web.slo.availability.rules.yml"])
    rules: list[dict[str, object]] = data["groups"][0]["rules"]
    return rules


def _alert_exprs(rules: list[dict[str, object]]) -> str:
    return "\n".join(str(r["expr"]) for r in rules if "alert" in r)


@pytest.mark.parametrize(
    ("window", "factors"),
    [
        ("30d", ["> 14.4", "> 6", "> 3", "> 1\n"]),
        ("28d", ["> 13.44", "> 5.6", "> 2.8", "> (14 / 15)"]),
        ("7d", ["> 3.36", "> 1.4", "> 0.7"]),
    ],
)
def test_burn_factors_are_printed_as_short_exact_literals(
    tmp_path: Path, window: str, factors: list[str]
) -> None:
    text = _alert_exprs(_rules(tmp_path, _spec(window)))
    for factor in factors:
        assert factor in text + "\n"
    assert "/ 0.001 >" in text
    assert not re.search(r"\d\.\d{6,}", text), "float noise in a threshold"


def test_a_7d_window_keeps_the_ticket_tiers_whose_long_window_fits() -> None:
    assert format_fraction(Fraction(7, 30)) == "(7 / 30)"
    assert format_fraction(Fraction(144, 10)) == "14.4"


@pytest.mark.parametrize(
    "needed",
    [
        (300, 1800, 3600, 7200, 21600, 86400, 259200, 2592000),
        (300, 1800, 3600, 7200, 21600, 86400, 259200, 2419200),
        (300, 3600, 2592000),
        (600, 5400, 86400 * 90),
        (120, 86400 * 365),
    ],
)
def test_every_window_is_an_exact_tiling_of_shorter_recordings(needed: tuple[int, ...]) -> None:
    windows = tuple(Decimal(w) for w in needed)
    plan = plan_windows(windows, base_window(windows))
    assert set(windows) <= set(plan)
    for window, terms in plan.items():
        if not terms:
            assert window == base_window(windows)
            continue
        assert len(terms) <= MAX_TERMS + 1
        cursor = Decimal(0)
        for term in terms:
            assert term.offset == cursor, "terms must be contiguous, newest first"
            assert term.window in plan
            assert term.window < window
            cursor += term.window
        assert cursor == window


def test_only_the_base_window_reads_raw_series(tmp_path: Path) -> None:
    for rule in _rules(tmp_path, _spec()):
        expr = str(rule["expr"])
        raw = "http_requests_total" in expr
        assert raw == (
            rule.get("record") in ("slo:sli_total:increase5m", "slo:sli_errors:increase5m")
        )
        if rule.get("record") == "slo:sli_errors:increase5m":
            total = re.findall(r"http_requests_total(?!\{code)", expr)
            assert not total, "the total must not be scanned twice"


@pytest.mark.parametrize(
    ("version", "base"),
    [
        pytest.param('"2.42"', 'sum(increase(http_requests_total[5m]))', id="2.x: increase()"),
        pytest.param(
            '"3.5"',
            "sum(\n"
            + "\n  or\n".join(
                f"  label_replace(http_requests_total{now} - http_requests_total offset "
                f"{i + 1}m >= 0 or http_requests_total{now} < http_requests_total offset "
                f'{i + 1}m, "slo_step", "{i}", "", "")'
                for i, now in enumerate(["", " offset 1m", " offset 2m", " offset 3m",
                                         " offset 4m"])
            )
            + "\n)",
            id="3.x: the evaluation steps, no range",
        ),
    ],
)  # fmt: skip
def test_the_base_window_follows_the_declared_version(
    tmp_path: Path, version: str, base: str
) -> None:
    extra = f"    evaluation_interval: 1m\nprometheus: {{version: {version}}}\n"
    rules = {str(r.get("record")): str(r["expr"]) for r in _rules(tmp_path, _spec(extra=extra))}
    assert rules["slo:sli_total:increase5m"] == base


def test_a_base_window_longer_than_the_lookback_is_one_step(tmp_path: Path) -> None:
    extra = (
        "    evaluation_interval: 1m\n    tiers:\n"
        "      - {long: 6h, short: 30m, budget: 5%, alert: page}\n"
    )
    rules = {str(r.get("record")): str(r["expr"]) for r in _rules(tmp_path, _spec(extra=extra))}
    assert rules["slo:sli_total:increase30m"] == (
        "sum(\n  http_requests_total - http_requests_total offset 30m >= 0\n  or\n"
        "  http_requests_total < http_requests_total offset 30m\n)"
    )


def _terms(expr: str) -> str:
    """The window's own terms (the top-level lines), without their fallbacks."""
    return "\n".join(line for line in expr.splitlines() if line.startswith("  label_replace(slo"))


def test_long_windows_read_one_sample_per_term(tmp_path: Path) -> None:
    rules = {str(r.get("record")): str(r["expr"]) for r in _rules(tmp_path, _spec())}
    thirty = rules["slo:sli_total:increase30d"]
    assert _terms(thirty).count("slo:sli_total:increase3d{") == 10
    assert "[" not in thirty, "no range selector: each term is one sample"
    offsets = re.findall(r"offset (\w+)", _terms(thirty))
    assert offsets == [f"{3 * i}d" for i in range(1, 10)]


@pytest.mark.parametrize(
    ("declared", "shift"),
    [("2.42", "23h55m"), ("3.5", "23h54m30s")],  # 3.x: one lookback and one evaluation (30s)
)
def test_a_coarse_term_falls_back_to_the_finer_recordings_of_its_chunk(
    declared: str, shift: str, tmp_path: Path
) -> None:
    spec = _spec(extra=f'prometheus: {{version: "{declared}"}}\n')
    rules = {str(r.get("record")): str(r["expr"]) for r in _rules(tmp_path, spec)}
    own = 'service="web", slo="availability"'
    thirty = rules["slo:sli_errors:increase30d"]
    one_day = f"slo:sli_errors:increase1d{{{own}}}"
    for k in range(1, 10):
        start = 3 * k
        assert (
            f"{one_day} offset {start}d\n        or\n"
            f"        ({one_day} offset {start - 1}d{shift} and on () "
            f"slo:sli_total:increase5m{{{own}}} offset {start + 1}d)"
        ) in thirty
        for later in (1, 2):
            assert f'{one_day} offset {start + later}d, "slo_term", "{later}"' in thirty
    # 3d falls back to 6h pieces; 1d's 6h chunks are under 1% of 30 days and do not
    assert "slo:sli_errors:increase6h" in rules["slo:sli_errors:increase3d"]
    assert "slo:sli_errors:increase2h" not in rules["slo:sli_errors:increase1d"]


def test_every_rule_reads_only_recordings_made_before_it_in_the_group(tmp_path: Path) -> None:
    seen: set[str] = set()
    for rule in _rules(tmp_path, _spec()):
        expr = str(rule["expr"])
        for name in set(re.findall(r"(slo:[a-z_]+:[a-z_0-9]+)", expr)):
            assert name in seen, f"{rule.get('record') or rule.get('alert')} reads {name} first"
        if "record" in rule:
            seen.add(str(rule["record"]))


def test_spec_labels_never_reach_the_recordings(tmp_path: Path) -> None:
    """A spec label edit must not split the window recordings' series (Sloth's
    "vector contains metrics with the same labelset" after a label change)."""
    before = [r for r in _rules(tmp_path, _spec(labels="{team: a}")) if "record" in r]
    after = [r for r in _rules(tmp_path, _spec(labels="{team: b, tier: '1'}")) if "record" in r]
    assert before == after
    for rule in before:
        assert rule["labels"] == {"service": "web", "slo": "availability"}
    alerts = [r for r in _rules(tmp_path, _spec(labels="{team: b}")) if "alert" in r]
    assert all(r["labels"]["team"] == "b" for r in alerts)  # type: ignore[index]


def test_no_ratio_divides_by_zero_traffic(tmp_path: Path) -> None:
    for rule in _rules(tmp_path, _spec()):
        if str(rule.get("record", "")).startswith("slo:sli_error:ratio_rate"):
            assert re.search(r"/\n\(slo:sli_total:increase\w+\{[^}]*\} > 0\)$", str(rule["expr"]))


@pytest.mark.parametrize(
    ("threshold", "le", "spellings"),
    [
        ("500ms", 'le="0.5"', ["0.5"]),
        ("1s", 'le=~"1|1\\\\.0"', ["1", "1.0"]),
        ("10s", 'le=~"10|10\\\\.0"', ["10", "10.0"]),
    ],
)
def test_a_latency_threshold_matches_both_le_spellings(
    tmp_path: Path, threshold: str, le: str, spellings: list[str]
) -> None:
    """Go clients (Prometheus 2) write le="1"; Prometheus 3 normalises it to le="1.0"."""
    spec = f"""
version: 1
service: web
slos:
  - name: availability
    objective: 99%
    sli:
      latency: {{metric: vllm:time_to_first_token_seconds, threshold: {threshold}}}
"""
    text = "\n".join(str(r["expr"]) for r in _rules(tmp_path, spec))
    assert le in text
    pattern = le.split('"')[1].replace("\\\\", "\\")
    for spelling in spellings:
        assert pattern == spelling or promql.full_match(pattern, spelling)
    assert not promql.full_match(pattern, spellings[0] + "0")


def test_min_traffic_guards_every_tier_in_requests_per_second(tmp_path: Path) -> None:
    spec = _spec(extra="    alerting: {min_traffic: 0.5}\n")
    text = _alert_exprs(_rules(tmp_path, spec))
    own = '{service="web", slo="availability"}'
    for window, seconds in (("5m", 300), ("30m", 1800), ("2h", 7200), ("6h", 21600)):
        assert f"slo:sli_total:increase{window}{own} / {seconds} >= 0.5" in text


def test_a_disabled_severity_has_no_alert_and_no_unused_windows(tmp_path: Path) -> None:
    spec = _spec(extra="    alerting: {ticket: {enabled: false}}\n")
    rules = _rules(tmp_path, spec)
    burns = [r for r in rules if "alert" in r and r["alert"] != "SLORecordingsIncomplete"]
    assert [r["labels"]["severity"] for r in burns] == ["critical"]  # type: ignore[index]
    records = {str(r.get("record")) for r in rules}
    assert "slo:sli_error:ratio_rate3d" not in records
    assert "slo:sli_error:ratio_rate2h" not in records


OWN = '{service="web", slo="availability"}'


@pytest.mark.parametrize(
    ("window", "extra", "chain", "terms"),
    [
        ("30d", "", ["5m", "30m", "1h", "2h", "6h", "1d", "3d", "30d"], "8640"),
        ("7d", "", ["5m", "30m", "1h", "2h", "6h", "1d", "3d", "7d"], "2016"),
        ("1h", "    tiers: [{long: 1h, short: 5m, budget: 50%, alert: page}]\n",
         ["5m", "1h"], "12"),
    ],
    ids=["30d window", "7d window (2 x 3d + 1d)", "1h window, one tier"],
)  # fmt: skip
def test_coverage_counts_base_terms_along_the_slo_window_cascade(
    tmp_path: Path, window: str, extra: str, chain: list[str], terms: str
) -> None:
    rules = _rules(tmp_path, _spec(window=window, extra=extra))
    by_name = {str(r.get("record")): str(r["expr"]) for r in rules if "record" in r}
    counts = [n.removeprefix("slo:sli_terms:count") for n in by_name if "sli_terms" in n]
    assert counts == chain
    assert by_name["slo:sli_terms:count5m"] == (
        f"clamp_max(count(slo:sli_total:increase5m{OWN}), 1)"
    )
    for longer in chain[1:]:
        # the same terms as the window's increases, summed per SLO only
        mine = by_name[f"slo:sli_terms:count{longer}"]
        theirs = _terms(by_name[f"slo:sli_total:increase{longer}"])
        assert _terms(mine) == theirs.replace("slo:sli_total:increase", "slo:sli_terms:count")
        assert mine.count("label_replace(") == theirs.count("label_replace(")  # no fallback
    assert by_name["slo:sli_coverage:ratio"].endswith(f"/ {terms}")
    assert f"slo:sli_terms:count{window}{OWN}" in by_name["slo:sli_coverage:ratio"]


def test_the_incomplete_alert_waits_for_a_full_window_and_a_few_evaluations(
    tmp_path: Path,
) -> None:
    rules = _rules(tmp_path, _spec(extra="    evaluation_interval: 30s\n"))
    alert = next(r for r in rules if r.get("alert") == "SLORecordingsIncomplete")
    assert alert["expr"] == (
        f"slo:sli_coverage:ratio{OWN} < 1\nand\n(slo:objective:ratio{OWN} offset 30d) > 0"
    )
    assert alert["for"] == "1m30s"
    assert alert["labels"] == {
        "service": "web", "severity": "warning", "slo": "availability", "team": "a"
    }  # fmt: skip
    description = alert["annotations"]["description"]  # type: ignore[index]
    assert "with rulegen repair (rulegen docs: slos.md, Repair)" in description
