"""The VictoriaMetrics target: vmalert rule files (group settings, ``nocache``, same-evaluation
recordings inlined, MetricsQL notes), ``vmalert -dryRun`` on them, and its errors."""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import REPO, CliResult, assert_rejected, copy_specs, spec_errors, write_tree

from rulegen.build import build
from rulegen.catalog import load_catalog
from rulegen.generated import RuleGroup
from rulegen.load import discover
from rulegen.render.prometheus import rule_file
from rulegen.render.victoriametrics import (
    DEFAULT_MAX_QUERY_LEN,
    INCREASE_NOTE,
    INLINE_NOTE,
    inline_group,
    long_queries,
    vmalert_groups,
    vmalert_rule_file,
)
from rulegen.validate import vmalert

Cli = Callable[..., CliResult]
GOLDEN = REPO / "tests" / "golden" / "example-targets" / "expected" / "victoriametrics"
SPEC = """
    version: 1
    service: web
    evaluation_interval: 1m
    slos:
      - name: availability
        objective: 99.9%
        sli:
          ratio: {errors: 'http_requests_total{code=~"5.."}', total: http_requests_total}
    """


def _rec(record: str, expr: str, **labels: str) -> dict[str, Any]:
    return {"record": record, "expr": expr, "labels": labels} if labels else {
        "record": record, "expr": expr
    }  # fmt: skip


BASE = _rec("a:inc5m", "sum(increase(c[5m]))", slo="x")


@pytest.mark.parametrize(
    ("reader", "expected"),
    [
        ('a:inc5m{slo="x"} * 2', 'label_set(sum(increase(c[5m])), "slo", "x") * 2'),
        ("a:inc5m * 2", "a:inc5m * 2"),
        ('a:inc5m{slo="x"} offset 5m', 'a:inc5m{slo="x"} offset 5m'),
        ('sum_over_time(a:inc5m{slo="x"}[10m])', 'sum_over_time(a:inc5m{slo="x"}[10m])'),
        ('a:inc5m{slo=~"x"}', 'a:inc5m{slo=~"x"}'),
        ('a:inc5m{slo="y"}', 'a:inc5m{slo="y"}'),
        ('a:inc5m{other="x"}', 'a:inc5m{other="x"}'),
        ('label_replace(b, "a:inc5m", "1", "", "")', 'label_replace(b, "a:inc5m", "1", "", "")'),
    ],
    ids=[
        "a read at the evaluation time is replaced by the expression with its labels",
        "a read leaving a static label open may read other services' series: left alone",
        "a read at an offset stays a read of the stored series",
        "a range read stays a read of the stored series",
        "a regex matcher is not decided statically: left alone",
        "a matcher the recording's labels contradict selects another rule: left alone",
        "a matcher on a label the expression sets is not decided statically: left alone",
        "a name inside a string literal is not a selector",
    ],
)
def test_same_group_recordings_are_inlined(reader: str, expected: str) -> None:
    rules = inline_group([BASE, _rec("b:read", reader)])
    assert rules[1]["expr"].splitlines()[-1] == expected


def test_inlining_is_recursive_and_marks_the_rules() -> None:
    level1 = _rec("a:inc10m", 'a:inc5m{slo="x"} + a:inc5m{slo="x"} offset 5m', slo="x")
    alert = {"alert": "Burn", "expr": 'a:inc10m{slo="x"} > 3', "labels": {}, "annotations": {}}
    rules = inline_group([BASE, level1, alert])
    assert rules[0]["expr"] == f"{INCREASE_NOTE}\nsum(increase(c[5m]))"
    assert rules[2]["expr"] == "\n".join(
        [
            INLINE_NOTE,
            INCREASE_NOTE,
            'label_set(label_set(sum(increase(c[5m])), "slo", "x") + a:inc5m{slo="x"} offset 5m,'
            ' "slo", "x") > 3',
        ]
    )
    # the stored rule itself is unchanged but for its notes
    assert rules[2]["labels"] == {}
    assert rules[2]["alert"] == "Burn"


def test_two_recordings_of_one_name_are_not_guessed_between() -> None:
    twin = _rec("a:inc5m", "sum(increase(d[5m]))", slo="x")
    rules = inline_group([BASE, twin, _rec("b:read", 'a:inc5m{slo="x"}')])
    assert rules[2]["expr"] == 'a:inc5m{slo="x"}'


@pytest.fixture(scope="module")
def example() -> tuple[RuleGroup, ...]:
    """The example service's rule groups, built once for the tests that read them."""
    result = build(discover([REPO / "specs"]), load_catalog([REPO / "signals"]))
    return vmalert_groups(result.services[0])


def test_group_settings_order_and_params(example: tuple[RuleGroup, ...]) -> None:
    groups = example
    data = vmalert_rule_file(groups, 2, {"ruler": "vmalert"}, max_query_len=1 << 20)
    plain = rule_file(groups)
    assert [g["name"] for g in data["groups"]] == [g["name"] for g in plain["groups"]]
    for group, source in zip(data["groups"], plain["groups"], strict=True):
        assert list(group) == ["name", "interval", "concurrency", "params", "labels", "rules"]
        assert group["params"] == {"nocache": ["1"]}
        assert group["labels"] == {"ruler": "vmalert"}
        assert [r.get("record") or r.get("alert") for r in group["rules"]] == [
            r.get("record") or r.get("alert") for r in source["rules"]
        ]
    bare = vmalert_rule_file(groups)
    assert list(bare["groups"][0]) == ["name", "interval", "params", "rules"]
    # every SLO alert reads only raw series and recordings written a base window ago
    for group in data["groups"]:
        for rule in group["rules"]:
            if "alert" in rule and "slo:" in rule["expr"]:
                lines = rule["expr"].splitlines()
                assert lines[0] == INLINE_NOTE
                body = "\n".join(lines[2:])
                assert "slo:sli_error:ratio_rate" not in body


# --- max_query_len: fewer levels inlined where the full inlining is too long ----------------

PAD = "x" * 600
LONG_BASE = _rec("a:inc5m", f'sum(increase(c{{pad="{PAD}"}}[5m]))', slo="x")
LEVEL = _rec("b:inc10m", 'a:inc5m{slo="x"} + a:inc5m{slo="x"} offset 5m', slo="x")
BURN = {
    "alert": "Burn",
    "expr": 'b:inc10m{slo="x"} > 3 and a:inc5m{slo="x"} > 1',
    "labels": {},
    "annotations": {},
}


def _reduced(limit: int, reads: str, late: str) -> str:
    return (
        f"# vmalert: {reads} left as stored series to stay within max_query_len={limit}: "
        f"reads {late} late"
    )


@pytest.mark.parametrize(
    ("limit", "expected"),
    [
        (
            1 << 20,
            [[INCREASE_NOTE], [INLINE_NOTE, INCREASE_NOTE], [INLINE_NOTE, INCREASE_NOTE]],
        ),
        (
            1200,
            [
                [INCREASE_NOTE],
                [INLINE_NOTE, INCREASE_NOTE],
                [INLINE_NOTE, _reduced(1200, "1 recording read", "one evaluation"), INCREASE_NOTE],
            ],
        ),
        (
            900,
            [
                [INCREASE_NOTE],
                [_reduced(900, "1 recording read", "one evaluation")],
                [_reduced(900, "2 recording reads", "2 evaluations")],
            ],
        ),
    ],
    ids=[
        "everything fits: every read inlined, no rule late",
        "the alert inlines one level less: the read left stored is one evaluation late",
        "a read of a recording that is itself late adds its lateness",
    ],
)
def test_rules_inline_as_deep_as_max_query_len_allows(
    limit: int, expected: list[list[str]]
) -> None:
    rules = inline_group([LONG_BASE, LEVEL, BURN], limit)
    notes = [[line for line in r["expr"].splitlines() if line.startswith("#")] for r in rules]
    assert notes == expected
    assert all(len(r["expr"].encode()) <= limit for r in rules)
    assert inline_group([LONG_BASE, LEVEL, BURN], limit) == rules  # deterministic


def test_a_rule_too_long_even_uninlined_stays_fully_inlined_and_is_reported() -> None:
    rules = inline_group([LONG_BASE, LEVEL, BURN], 700)
    assert rules[0]["expr"] == f"{INCREASE_NOTE}\n{LONG_BASE['expr']}"
    assert rules[1]["expr"].splitlines()[-1] == LEVEL["expr"]
    data = {"groups": [{"name": "g", "rules": rules}]}
    assert long_queries(data, 700) == [("g", "a:inc5m", len(rules[0]["expr"].encode()))]


def test_the_example_fits_the_default_max_query_len(example: tuple[RuleGroup, ...]) -> None:
    """Twelve rules of the example's 28/30-day SLOs (their window's ratio, the budget left, the
    ticket alert) are 20-23 KB fully inlined; with the default limit they inline fewer levels,
    each one evaluation late, and say so; every other rule is as fully inlined as before."""
    default = vmalert_rule_file(example)
    full = vmalert_rule_file(example, max_query_len=1 << 20)
    assert not long_queries(default)
    assert max(len(r["expr"].encode()) for g in default["groups"] for r in g["rules"]) <= (
        DEFAULT_MAX_QUERY_LEN
    )
    reduced: dict[str, int] = {}
    for group, whole in zip(default["groups"], full["groups"], strict=True):
        for rule, exact in zip(group["rules"], whole["rules"], strict=True):
            name = f"{group['name']}/{rule.get('record') or rule['alert']}"
            notes = [n for n in rule["expr"].splitlines() if "left as stored series" in n]
            if notes:
                reduced[name] = int(notes[0].split()[2])
                assert notes[0].endswith(
                    "to stay within max_query_len=16384: reads one evaluation late"
                )
                assert len(exact["expr"].encode()) > DEFAULT_MAX_QUERY_LEN
            else:
                assert rule == exact
    assert reduced == {
        "deepseek-v4-slo-ttft/slo:sli_error:ratio_rate28d": 2,
        "deepseek-v4-slo-ttft/slo:error_budget_remaining:ratio": 2,
        "deepseek-v4-slo-ttft/TTFTBudgetBurn": 9,
        "deepseek-v4-slo-goodput/slo:sli_error:ratio_rate28d": 2,
        "deepseek-v4-slo-goodput/slo:error_budget_remaining:ratio": 2,
        "deepseek-v4-slo-goodput/GoodputBudgetBurn": 9,
        "deepseek-v4-slo-itl/slo:sli_error:ratio_rate28d": 2,
        "deepseek-v4-slo-itl/slo:error_budget_remaining:ratio": 2,
        "deepseek-v4-slo-itl/ITLBudgetBurn": 9,
        "deepseek-v4-slo-availability/slo:sli_error:ratio_rate30d": 2,
        "deepseek-v4-slo-availability/slo:error_budget_remaining:ratio": 2,
        "deepseek-v4-slo-availability/AvailabilityBudgetBurn": 7,
    }
    assert [rule for _, rule, _ in long_queries(full)] == [n.split("/")[1] for n in reduced]
    # the committed golden file, as written by `rulegen build` with the example's settings
    golden = yaml.safe_load((GOLDEN / "deepseek-v4.rules.yml").read_text())
    assert not long_queries(golden)
    rules = [r for g in golden["groups"] for r in g["rules"]]
    assert sum("left as stored series" in r["expr"] for r in rules) == 12


def test_a_raised_max_query_len_keeps_the_full_inlining(in_tmp: Path, cli: Cli) -> None:
    copy_specs(REPO / "specs", in_tmp / "specs")
    shutil.copytree(REPO / "signals", in_tmp / "signals")
    example = in_tmp / "specs/llm-serving.yaml"
    spec = example.read_text()
    assert spec.count("max_query_len: 16384") == 1
    example.write_text(spec.replace("max_query_len: 16384", "max_query_len: 65536"))
    result = cli("build", "--no-validate", "--target", "victoriametrics", "--signals", "signals")
    assert result.code == 0, result.err
    data = yaml.safe_load((in_tmp / "rules/victoriametrics/deepseek-v4.rules.yml").read_text())
    exprs = [str(r["expr"]) for g in data["groups"] for r in g["rules"]]
    assert not [e for e in exprs if "left as stored series" in e]
    assert max(len(e.encode()) for e in exprs) > DEFAULT_MAX_QUERY_LEN
    assert not long_queries(data, 65536)


def test_the_build_warns_about_an_expression_too_long_even_uninlined(in_tmp: Path) -> None:
    """The warning ``rulegen build`` prints after validating (validation needs vmalert)."""
    long_expr = 'up{job="' + "j" * 1100 + '"} == 0'
    spec = f"""\
version: 1
service: web
targets:
  victoriametrics: {{max_query_len: 1024}}
alerts:
  - {{signal: custom, name: Down, expr: '{long_expr}', severity: warning}}
"""
    write_tree(in_tmp, {"specs/web.yaml": spec})
    result = build(discover([in_tmp / "specs"]), load_catalog(), targets=("victoriametrics",))
    size = len(long_expr)
    assert result.reports == [
        f"victoriametrics: web-custom/Down: the expression is {size} bytes, above "
        "max_query_len=1024 even with no recording inlined: start victoria-metrics (vmselect) "
        f"with -search.maxQueryLen={size} or more and set targets.victoriametrics.max_query_len "
        "to match"
    ]


def test_the_target_is_written_where_the_docs_say(in_tmp: Path, cli: Cli) -> None:
    write_tree(in_tmp, {"specs/web.yaml": textwrap.dedent(SPEC)})
    result = cli("build", "--no-validate", "--target", "victoriametrics")
    assert result.code == 0, result.err
    data = yaml.safe_load((in_tmp / "rules/victoriametrics/web.rules.yml").read_text())
    assert [g["name"] for g in data["groups"]] == ["web-slo-availability"]


def test_missing_vmalert_exits_3_with_an_install_hint_and_writes_nothing(
    in_tmp: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_tree(in_tmp, {"specs/web.yaml": textwrap.dedent(SPEC)})
    monkeypatch.setenv("PATH", str(in_tmp / "no-tools"))
    result = cli("build", "--target", "victoriametrics")
    assert (result.code, result.err.splitlines(), result.out) == (
        3,
        [
            "rulegen: error: vmalert not found; install it with: apt-get install "
            "victoria-metrics (Debian/Ubuntu), or set RULEGEN_VMALERT"
        ],
        "",
    )
    assert not (in_tmp / "rules").exists()


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            "{labels: {slo: x}}",
            "specs/web.yaml:4:35: targets.victoriametrics.labels.slo: label 'slo' is set by "
            "rulegen and cannot be overridden",
        ),
        (
            "{labels: {severity: x}}",
            "specs/web.yaml:4:40: targets.victoriametrics.labels.severity: label 'severity' is "
            "set by rulegen and cannot be overridden",
        ),
        (
            "{concurrency: 0}",
            "specs/web.yaml:4:34: targets.victoriametrics.concurrency: must be at least 1 (got 0)",
        ),
        (
            "{max_query_len: 100}",
            "specs/web.yaml:4:36: targets.victoriametrics.max_query_len: must be at least 1024 "
            "(got 100)",
        ),
        (
            "{max_query_len: 16k}",
            "specs/web.yaml:4:36: targets.victoriametrics.max_query_len: must be an integer "
            "(got '16k')",
        ),
    ],
    ids=[
        "a group label slo would overwrite the SLO rules' own",
        "a group label severity would overwrite the alerts' own",
        "a concurrency below 1 is rejected",
        "a max_query_len below 1024 bytes is rejected",
        "a max_query_len is a number of bytes, not a size with a unit",
    ],
)
def test_spec_errors(in_tmp: Path, cli: Cli, settings: str, message: str) -> None:
    spec = f"""\
version: 1
service: web
targets:
  victoriametrics: {settings}
alerts:
  - {{signal: disk_await, threshold: 5ms, severity: warning}}
"""
    assert_rejected(in_tmp, cli, spec, spec_errors(message))


# --- vmalert -dryRun ---------------------------------------------------------------------------

NEEDS_VMALERT = pytest.mark.skipif(
    not any((Path(p) / "vmalert").is_file() for p in ("/usr/bin", "/usr/local/bin")),
    reason="needs vmalert (Debian package victoria-metrics)",
)


@pytest.mark.slow
@NEEDS_VMALERT
def test_vmalert_accepts_the_golden_file() -> None:
    names = sorted(p.name for p in GOLDEN.glob("*.rules.yml"))
    assert names == ["deepseek-v4.rules.yml"]
    checked = vmalert.dry_run(names, GOLDEN)
    assert checked.ok, checked.messages


@pytest.mark.slow
@NEEDS_VMALERT
def test_vmalert_rejections_are_one_message_per_problem(tmp_path: Path) -> None:
    (tmp_path / "a.rules.yml").write_text(
        "groups:\n- name: g\n  unknown: 1\n  rules:\n  - record: x\n    expr: up\n"
    )
    (tmp_path / "b.rules.yml").write_text(
        "groups:\n- name: h\n  rules:\n  - record: y\n    expr: sum(rate(x[5m])\n"
    )
    checked = vmalert.dry_run(["a.rules.yml", "b.rules.yml"], tmp_path)
    assert not checked.ok
    # vmalert 1.145 reads the files side by side: its problems come in either order
    first, second = sorted(checked.messages)
    assert first == 'invalid group "g" in file "a.rules.yml": unknown fields in group "g": unknown'
    # 1.79: `rule "h"."y": bad prometheus expr: …`; 1.145: `rule "y": bad MetricsQL expr: …`
    assert second.startswith(
        'invalid group "h" in file "b.rules.yml": invalid expression for rule '
    )
    assert ' expr: "sum(rate(x[5m])"' in second
    assert len(checked.messages) == 2


@pytest.mark.slow
@NEEDS_VMALERT
def test_a_build_reports_a_vmalert_rejection(in_tmp: Path, cli: Cli) -> None:
    """What promtool accepts and vmalert 1.79 refuses fails the build with vmalert's message:
    ``keep_firing_for`` (vmalert knows it from v1.90)."""
    spec = """\
version: 1
service: web
alerts:
  - signal: custom
    name: Down
    expr: up == 0
    severity: warning
    keep_firing_for: 5m
"""
    write_tree(in_tmp, {"specs/web.yaml": spec})
    probe = in_tmp / "probe.rules.yml"
    probe.write_text(
        "groups:\n- name: p\n  rules:\n  - alert: A\n    expr: up\n    keep_firing_for: 5m\n"
    )
    if vmalert.dry_run([probe.name], in_tmp).ok:
        pytest.skip("this vmalert (1.90 or later) accepts keep_firing_for")
    probe.unlink()
    result = cli("build", "--target", "victoriametrics")
    assert result.code == 1, result.err
    assert "vmalert -dryRun failed on a victoriametrics file:" in result.err
    assert "keep_firing_for" in result.err
    assert not (in_tmp / "rules").exists()


def test_native_histograms_are_refused_for_victoriametrics(in_tmp: Path, cli: Cli) -> None:
    """MetricsQL has no native histograms: each rule that reads one is named, nothing is
    written; the Prometheus files alone build."""
    spec = """\
version: 1
service: web
histograms: {vllm: nhcb}
alerts:
  - {signal: ttft_latency, threshold: 500ms, severity: critical}
slos:
  - name: ttft
    objective: 99%
    sli:
      latency: {metric: "vllm:time_to_first_token_seconds", threshold: 500ms}
"""
    write_tree(in_tmp, {"specs/web.yaml": spec})
    why = (
        "reads a native histogram (nhcb), which --target victoriametrics cannot: VictoriaMetrics "
        "stores histograms as _bucket series (set histograms: classic for it)"
    )
    refused = cli("build", "--no-validate", "--target", "victoriametrics")
    assert refused.code == 2
    assert refused.err.splitlines() == list(
        spec_errors(f"specs/web.yaml:5:5: alerts[0]: {why}", f"specs/web.yaml:7:5: slos[0]: {why}")
    )
    assert not (in_tmp / "rules").exists()
    assert cli("build", "--no-validate").code == 0
