"""``rulegen diff`` against a folder (``--base-dir``), in-process: each kind of edit in text,
markdown and JSON exactly; ``--exit-code``; spec errors of either version (exit 2, each line
naming its version); usage errors as one line.

The base is ``old/`` and the edit ``specs/``, the same files but for one change each, so every
line of the output is pinned here. The ``--base REV`` path is ``test_diff_git.py``; the
backtest columns are ``test_diff_backtest.py``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import CliResult, write_tree

Cli = Callable[..., CliResult]

WEB = """\
version: 1
service: web
labels: {team: web}
alerts:
  - {signal: disk_await, threshold: 5ms, for: 5m, severity: warning, labels: {team: storage}}
  - {signal: disk_utilization, threshold: 80%, for: 5m, severity: warning}
slos:
  - name: availability
    objective: 99.9%
    sli:
      ratio:
        errors: 'http_requests_total{code=~"5.."}'
        total: http_requests_total
"""
ROUTING = """\
version: 1
routing:
  default_receiver: platform
  receivers:
    - {name: platform, webhook: {url: 'http://sink:9095/platform'}}
    - {name: storage, webhook: {url: 'http://sink:9095/storage'}}
    - {name: oncall, webhook: {url: 'http://sink:9095/oncall'}}
  routes:
    - match: {team: storage}
      receiver: storage
"""
NEW_ALERT = "  - {signal: requests_waiting, threshold: 20, severity: critical}\n"
REMOVED = "  - {signal: disk_utilization, threshold: 80%, for: 5m, severity: warning}\n"

# case → (file, text replaced, replacement)
EDIT_LIST = [
    ("a threshold change", "web.yaml", "threshold: 5ms", "threshold: 10ms"),
    ("a new alert", "web.yaml", "slos:\n", NEW_ALERT + "slos:\n"),
    ("a removed alert", "web.yaml", REMOVED, ""),
    ("an objective change", "web.yaml", "objective: 99.9%", "objective: 99.5%"),
    ("a routing change moves an alert to another receiver", "routing.yaml",
     "receiver: storage", "receiver: oncall"),
]  # fmt: skip
EDITS = {case: edit for case, *edit in EDIT_LIST}
IDS = list(EDITS)
SLO_SUMMARY = "…availability (99.9% over 30d) is… → …availability (99.5% over 30d) is…"

TEXT = {
    "a threshold change": [
        "web: 1 alert changed, 3 unchanged",
        "  changed  DiskAwaitHigh",
        "    threshold: 5ms → 10ms",
        "    annotations.summary: …await above 5ms on {{ $labels.instance… → …await above 10ms "
        "on {{ $labels.instance…",
        "    annotations.description: …threshold is 5ms for 5m. → …threshold is 10ms for 5m.",
        "  dashboard panels: 1 changed (Disk / DiskAwaitHigh)",
        "",
        "1 service changed; 1 alert changed, 3 unchanged (base: old)",
    ],
    "a new alert": [
        "web: 1 alert added, 4 unchanged",
        "  added    RequestQueueBacklog: threshold 20, for 5m, severity critical, receivers "
        "platform",
        "  dashboard panels: 1 added (vLLM / RequestQueueBacklog)",
        "",
        "1 service changed; 1 alert added, 4 unchanged (base: old)",
    ],
    "a removed alert": [
        "web: 1 alert removed, 3 unchanged",
        "  removed  DiskUtilizationHigh: threshold 80%, for 5m, severity warning, receivers "
        "platform",
        "  recording rules: 1 removed (instance_device:node_disk_io_time_seconds:rate1m)",
        "  dashboard panels: 1 removed (Disk / DiskUtilizationHigh)",
        "",
        "1 service changed; 1 alert removed, 3 unchanged (base: old)",
    ],
    "an objective change": [
        "web: 2 alerts changed, 2 unchanged",
        "  changed  ErrorBudgetBurn (slo availability, page)",
        "    objective: 99.9% → 99.5%",
        f"    annotations.summary: {SLO_SUMMARY}",
        "    annotations.description: changed",
        "  changed  ErrorBudgetBurn (slo availability, ticket)",
        "    objective: 99.9% → 99.5%",
        f"    annotations.summary: {SLO_SUMMARY}",
        "    annotations.description: changed",
        "  recording rules: 3 changed (slo:current_burn_rate:ratio{slo=availability}, "
        "slo:error_budget_remaining:ratio{slo=availability}, "
        "slo:objective:ratio{slo=availability})",
        "  dashboard panels: 7 changed (SLO availability / Burn rate 1d/2h, SLO availability / "
        "Burn rate 1h/5m, SLO availability / Burn rate 3d/6h, SLO availability / Burn rate "
        "6h/30m, SLO availability / Error budget left, …)",
        "",
        "1 service changed; 2 alerts changed, 2 unchanged (base: old)",
    ],
    "a routing change moves an alert to another receiver": [
        "web: 1 alert changed, 3 unchanged",
        "  changed  DiskAwaitHigh",
        "    receivers: storage → oncall",
        "",
        "1 service changed; 1 alert changed, 3 unchanged (base: old)",
    ],
}

SLO_ROW = (
    "| `ErrorBudgetBurn (slo availability, {alerting})` | changed | `objective`: `99.9%` → "
    "`99.5%`<br>`annotations.summary`: `…availability (99.9% over 30d) is…` → "
    "`…availability (99.5% over 30d) is…`<br>`annotations.description`: changed |"
)
MARKDOWN_ROWS = {
    "a threshold change": [
        "| `DiskAwaitHigh` | changed | `threshold`: `5ms` → `10ms`<br>`annotations.summary`: "
        "`…await above 5ms on {{ $labels.instance…` → `…await above 10ms on {{ "
        "$labels.instance…`<br>`annotations.description`: `…threshold is 5ms for 5m.` → "
        "`…threshold is 10ms for 5m.` |",
    ],
    "a new alert": [
        "| `RequestQueueBacklog` | added | threshold `20`, for `5m`, severity `critical`, "
        "receivers `platform` |",
    ],
    "a removed alert": [
        "| `DiskUtilizationHigh` | removed | threshold `80%`, for `5m`, severity `warning`, "
        "receivers `platform` |",
    ],
    "an objective change": [SLO_ROW.format(alerting="page"), SLO_ROW.format(alerting="ticket")],
    "a routing change moves an alert to another receiver": [
        "| `DiskAwaitHigh` | changed | `receivers`: `storage` → `oncall` |",
    ],
}
MARKDOWN_NOTES = {
    "a threshold change": "Dashboard panels: 1 changed (`Disk / DiskAwaitHigh`).",
    "a new alert": "Dashboard panels: 1 added (`vLLM / RequestQueueBacklog`).",
    "a removed alert": "Recording rules: 1 removed "
    "(`instance_device:node_disk_io_time_seconds:rate1m`). Dashboard panels: 1 removed "
    "(`Disk / DiskUtilizationHigh`).",
    "an objective change": "Recording rules: 3 changed "
    "(`slo:current_burn_rate:ratio{slo=availability}`, "
    "`slo:error_budget_remaining:ratio{slo=availability}`, "
    "`slo:objective:ratio{slo=availability}`). Dashboard panels: 7 changed "
    "(`SLO availability / Burn rate 1d/2h`, `SLO availability / Burn rate 1h/5m`, "
    "`SLO availability / Burn rate 3d/6h`, `SLO availability / Burn rate 6h/30m`, "
    "`SLO availability / Error budget left`, …).",
    "a routing change moves an alert to another receiver": None,
}
ALL = ("DiskAwaitHigh", "DiskUtilizationHigh", "ErrorBudgetBurn (slo availability, page)",
       "ErrorBudgetBurn (slo availability, ticket)")  # fmt: skip
CHANGED = object()  # a long field: both versions present and different
# What the JSON says of each alert that is not unchanged: its change and its fields (a
# ``None`` side is JSON null); every other alert of ``ALL`` must be "unchanged" with no fields.
JSON_ALERTS: dict[str, dict[str, tuple[str, dict[str, Any]]]] = {
    "a threshold change": {
        "DiskAwaitHigh": ("changed", {
            "threshold": ("5ms", "10ms"), "annotations.summary": CHANGED,
            "annotations.description": CHANGED,
        }),
    },
    "a new alert": {
        "RequestQueueBacklog": ("added", {
            "signal": (None, "requests_waiting"), "threshold": (None, "20"),
            "comparison": (None, ">"), "metric": (None, "vllm:num_requests_waiting"),
            "for": (None, "5m"), "severity": (None, "critical"),
            "evaluation_interval": (None, "30s"), "labels.team": (None, "web"),
            "annotations.summary": CHANGED, "annotations.description": CHANGED,
            "receivers": (None, "platform"),
        }),
    },
    "a removed alert": {
        "DiskUtilizationHigh": ("removed", {
            "signal": ("disk_utilization", None), "threshold": ("80%", None),
            "comparison": (">", None), "window": ("1m", None),
            "metric": ("node_disk_io_time_seconds_total", None), "for": ("5m", None),
            "severity": ("warning", None), "evaluation_interval": ("30s", None),
            "labels.team": ("web", None), "annotations.summary": CHANGED,
            "annotations.description": CHANGED, "receivers": ("platform", None),
        }),
    },
    "an objective change": {
        title: ("changed", {
            "objective": ("99.9%", "99.5%"), "annotations.summary": CHANGED,
            "annotations.description": CHANGED,
        })
        for title in ALL[2:]
    },
    "a routing change moves an alert to another receiver": {
        "DiskAwaitHigh": ("changed", {"receivers": ("storage", "oncall")}),
    },
}  # fmt: skip


def edit(root: Path, case: str) -> None:
    """``old/`` holds the base, ``specs/`` the same files with the case's one edit."""
    name, before, after = EDITS[case]
    write_tree(root, {"old/web.yaml": WEB, "old/routing.yaml": ROUTING,
                      "specs/web.yaml": WEB, "specs/routing.yaml": ROUTING})  # fmt: skip
    path = root / "specs" / name
    text = path.read_text()
    assert before in text
    path.write_text(text.replace(before, after, 1))


def diff(cli: Cli, *argv: str) -> CliResult:
    """``rulegen diff --base-dir old ARGV``, which must succeed (with ``--exit-code``, exit 1
    is success too)."""
    result = cli("diff", "--base-dir", "old", *argv)
    assert result.code in ((0, 1) if "--exit-code" in argv else (0,)), result.err
    assert result.err == "", result.err
    return result


@pytest.mark.parametrize("case", IDS)
def test_text_names_each_changed_field_in_the_specs_units(
    in_tmp: Path, cli: Cli, case: str
) -> None:
    edit(in_tmp, case)
    assert diff(cli).out == "\n".join(TEXT[case]) + "\n"


@pytest.mark.parametrize("case", IDS)
def test_markdown_is_a_table_per_service_with_the_unchanged_folded(
    in_tmp: Path, cli: Cli, case: str
) -> None:
    edit(in_tmp, case)
    out = diff(cli, "--format", "markdown").out
    changed = [t for t in JSON_ALERTS[case] if t in ALL]
    unchanged = [t for t in ALL if t not in changed]
    counts = TEXT[case][0].removeprefix("web: ")
    lines = [
        "### rulegen diff against `old`", "",
        f"1 service changed; {counts} (base: old).", "",
        "#### `web`", "", f"{counts}.", "",
        "| alert | change | what changed |", "| --- | --- | --- |",
        *MARKDOWN_ROWS[case], "",
    ]  # fmt: skip
    note = MARKDOWN_NOTES[case]
    lines += [note, ""] if note else []
    lines += [
        f"<details><summary>{len(unchanged)} unchanged alert{'s' * (len(unchanged) != 1)}"
        "</summary>", "", ", ".join(f"`{t}`" for t in unchanged), "", "</details>", "",
    ]  # fmt: skip
    assert out == "\n".join(lines)


@pytest.mark.parametrize("case", IDS)
def test_json_is_one_object_with_every_alert(in_tmp: Path, cli: Cli, case: str) -> None:
    edit(in_tmp, case)
    document = json.loads(diff(cli, "--format", "json").out)
    assert (document["base"], document["changed"]) == ("old", True)
    assert "backtest" not in document
    (service,) = document["services"]
    assert (service["service"], service["change"]) == ("web", "changed")
    expected = JSON_ALERTS[case]
    seen = {}
    for alert in service["alerts"]:
        title = alert["alert"]
        if alert["kind"] == "slo":
            title += f" (slo {alert['slo']}, {alert['alerting']})"
        assert "backtest" not in alert
        seen[title] = alert
        if title not in expected:
            assert (alert["change"], alert["fields"]) == ("unchanged", {}), title
            continue
        change, fields = expected[title]
        assert alert["change"] == change
        assert list(alert["fields"]) == list(fields)
        for name, value in fields.items():
            old, new = alert["fields"][name]["old"], alert["fields"][name]["new"]
            if value is CHANGED:
                assert old != new
            else:
                assert (old, new) == value, name
    assert set(seen) == {*ALL, *expected}


def test_changed_alerts_come_first_then_added_removed_unchanged(in_tmp: Path, cli: Cli) -> None:
    after = WEB.replace("threshold: 5ms", "threshold: 6ms").replace(REMOVED, NEW_ALERT)
    write_tree(in_tmp, {"old/web.yaml": WEB, "specs/web.yaml": after})
    service = json.loads(diff(cli, "--format", "json").out)["services"][0]
    order = [(a["alert"], a["change"]) for a in service["alerts"]]
    assert order == [
        ("DiskAwaitHigh", "changed"), ("RequestQueueBacklog", "added"),
        ("DiskUtilizationHigh", "removed"), ("ErrorBudgetBurn", "unchanged"),
        ("ErrorBudgetBurn", "unchanged"),
    ]  # fmt: skip


# --- edits of every kind of field ------------------------------------------------------------

FIELD_EDITS = [
    # (case, text replaced, replacement, alert title, {field: (old, new)} of the short fields)
    ("for and severity", "for: 5m, severity: warning, labels",
     "for: 10m, severity: critical, labels", "DiskAwaitHigh",
     {"for": ("5m", "10m"), "severity": ("warning", "critical")}),
    ("window and matchers", "threshold: 5ms, for",
     "threshold: 5ms, window: 5m, matchers: 'device=~\"nvme.+\"', for",
     "DiskAwaitHigh", {"window": ("1m", "5m"), "matchers": (None, 'device=~"nvme.+"')}),
    ("a label", "labels: {team: storage}", "labels: {team: storage, tier: db}",
     "DiskAwaitHigh", {"labels.tier": (None, "db")}),
    ("a percentage written as a fraction is the same threshold", "threshold: 80%",
     "threshold: 0.8", None, {}),
    ("a latency written in seconds is the same threshold", "threshold: 5ms",
     "threshold: 0.005s", None, {}),
    ("min_traffic and the page's for", "objective: 99.9%\n",
     "objective: 99.9%\n    alerting: {min_traffic: 0.5, for: {page: 2m}}\n",
     "ErrorBudgetBurn (slo availability, page)",
     {"min_traffic": (None, "0.5"), "for": ("0s", "2m")}),
    ("a tier's budget and factor; a page tier dropped", "objective: 99.9%\n",
     "objective: 99.9%\n    tiers:\n      - {long: 1h, short: 5m, budget: 5%, alert: page}\n"
     "      - {long: 1d, short: 2h, budget: 10%, alert: ticket}\n"
     "      - {long: 3d, short: 6h, budget: 10%, alert: ticket}\n",
     "ErrorBudgetBurn (slo availability, page)",
     {"tiers[0].budget": ("2%", "5%"), "tiers[0].factor": ("14.4", "36"),
      "tiers[1].long": ("6h", None), "tiers[1].short": ("30m", None),
      "tiers[1].budget": ("5%", None), "tiers[1].factor": ("6", None)}),
    ("the SLI", "errors: 'http_requests_total{code=~\"5..\"}'",
     "errors: 'http_requests_total{code=~\"5..|429\"}'",
     "ErrorBudgetBurn (slo availability, ticket)",
     {"sli.ratio.errors": ('http_requests_total{code=~"5.."}',
                           'http_requests_total{code=~"5..|429"}')}),
]  # fmt: skip


@pytest.mark.parametrize(
    ("before", "after", "title", "fields"),
    [e[1:] for e in FIELD_EDITS],
    ids=[e[0] for e in FIELD_EDITS],
)
def test_each_field_is_named_as_the_spec_names_it(
    in_tmp: Path, cli: Cli, before: str, after: str, title: str | None,
    fields: dict[str, tuple[str | None, str | None]],
) -> None:  # fmt: skip
    assert before in WEB
    write_tree(in_tmp, {"old/web.yaml": WEB, "specs/web.yaml": WEB.replace(before, after, 1)})
    result = diff(cli, "--format", "json", "--exit-code")
    document = json.loads(result.out)
    changed = {
        a["alert"] + (f" (slo {a['slo']}, {a['alerting']})" if a["kind"] == "slo" else ""): a
        for a in document["services"][0]["alerts"]
        if a["change"] != "unchanged"
    }
    if title is None:
        assert (changed, result.code) == ({}, 0)
        return
    assert result.code == 1
    shown = {
        name: (value["old"], value["new"])
        for name, value in changed[title]["fields"].items()
        if not name.startswith("annotations.")
    }
    assert shown == fields


def test_a_custom_alert_shows_its_threshold_and_only_a_real_change_of_its_expr(
    in_tmp: Path, cli: Cli
) -> None:
    custom = "  - {signal: custom, name: Hot, expr: 'max(temp) > 85', severity: info}\n"
    base = WEB.replace("slos:\n", custom + "slos:\n")
    write_tree(in_tmp, {"old/web.yaml": base, "specs/web.yaml": base.replace("> 85", "> 90")})
    assert "    threshold: 85 → 90\n" in diff(cli).out
    assert "expr" not in diff(cli).out
    write_tree(in_tmp, {"specs/web.yaml": base.replace("max(temp) > 85", "min(temp) > 90")})
    assert "    threshold: 85 → 90\n    expr: max(temp) > 85 → min(temp) > 90\n" in diff(cli).out


def test_a_new_service_is_added_with_all_its_alerts(in_tmp: Path, cli: Cli) -> None:
    other = WEB.replace("service: web", "service: api")
    write_tree(in_tmp, {"old/web.yaml": WEB, "specs/web.yaml": WEB, "specs/api.yaml": other})
    document = json.loads(diff(cli, "--format", "json").out)
    api, web = document["services"]
    assert (api["service"], api["change"], web["change"]) == ("api", "added", "unchanged")
    assert {a["change"] for a in api["alerts"]} == {"added"}
    assert diff(cli).out.splitlines()[0] == "api (added): 4 alerts added"


# --- exit codes ------------------------------------------------------------------------------

EXIT_CODES = [
    # (case, edited, --exit-code, exit code)
    ("nothing changed, without --exit-code", False, False, 0),
    ("nothing changed, with --exit-code", False, True, 0),
    ("a change, without --exit-code", True, False, 0),
    ("a change, with --exit-code", True, True, 1),
]


@pytest.mark.parametrize(
    ("edit", "strict", "code"), [c[1:] for c in EXIT_CODES], ids=[c[0] for c in EXIT_CODES]
)
@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_exit_code(in_tmp: Path, cli: Cli, edit: bool, strict: bool, code: int, fmt: str) -> None:
    after = WEB.replace("5ms", "10ms") if edit else WEB
    write_tree(in_tmp, {"old/web.yaml": WEB, "specs/web.yaml": after})
    result = cli("diff", "--base-dir", "old", "--format", fmt, *(["--exit-code"] * strict))
    assert (result.code, result.err) == (code, "")
    if fmt == "json":
        assert json.loads(result.out)["changed"] is edit


def test_nothing_changed_is_one_line(in_tmp: Path, cli: Cli) -> None:
    write_tree(in_tmp, {"old/web.yaml": WEB, "specs/web.yaml": WEB})
    assert diff(cli).out == "no changes against old: 4 alerts unchanged in 1 service\n"
    assert diff(cli, "--format", "markdown").out == (
        "### rulegen diff against `old`\n\nNo changes against old: 4 alerts unchanged in 1 "
        "service.\n"
    )


def test_an_empty_base_folder_makes_every_alert_added(in_tmp: Path, cli: Cli) -> None:
    write_tree(in_tmp, {"specs/web.yaml": WEB})
    (in_tmp / "old").mkdir()
    assert diff(cli).out.splitlines()[0] == "web (added): 4 alerts added"


# --- errors ----------------------------------------------------------------------------------

BROKEN = WEB.replace("threshold: 80%", "threshold: 150%")
BROKEN_LINE = (
    "web.yaml:6:43: alerts[1].threshold: must be below 100% (got 150%); disk_utilization can "
    "never exceed 100%"
)
SPEC_ERRORS = [
    # (case, old/web.yaml, specs/web.yaml, stderr)
    ("in the base", BROKEN, WEB, [f"base (old): old/{BROKEN_LINE}"]),
    ("in the current version", WEB, BROKEN, [f"current: specs/{BROKEN_LINE}"]),
    ("in both, the base's first", BROKEN, BROKEN,
     [f"base (old): old/{BROKEN_LINE}", f"current: specs/{BROKEN_LINE}"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("old", "new", "stderr"), [c[1:] for c in SPEC_ERRORS], ids=[c[0] for c in SPEC_ERRORS]
)
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_spec_error_exits_2_naming_its_version(
    in_tmp: Path, cli: Cli, old: str, new: str, stderr: list[str], fmt: str
) -> None:
    write_tree(in_tmp, {"old/web.yaml": old, "specs/web.yaml": new})
    result = cli("diff", "--base-dir", "old", "--format", fmt)
    assert (result.code, result.out) == (2, "")
    summary = f"rulegen: {len(stderr)} error(s)"  # diff writes nothing: no "nothing written"
    assert result.err.splitlines() == [*stderr, summary]


USAGE = [
    (["--from", "0", "--to", "60"], "rulegen: error: --from needs --prometheus URL (the server "
     "to backtest on)"),
    (["--prometheus", "http://127.0.0.1:1"], "rulegen: error: --prometheus needs --from and "
     "--to (the range to backtest)"),
    (["--prometheus", "http://127.0.0.1:1", "--from", "10", "--to", "5"],
     "rulegen: error: --from 10 must be before --to 5"),
    (["--base", "HEAD"], "rulegen: error: diff: argument --base: not allowed with argument "
     "--base-dir"),
    (["--format", "github"], "rulegen: error: diff: argument --format: invalid choice: "
     "'github' (choose from 'text', 'markdown', 'json')"),
    (["--plot", "pictures"], "rulegen: error: --plot needs --prometheus URL (the pictures are "
     "of the backtest)"),
    (["--plot-format", "svg"], "rulegen: error: --plot-format svg needs --plot DIR"),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "line"), USAGE, ids=[line for _, line in USAGE])
def test_usage_errors_are_one_line(in_tmp: Path, cli: Cli, argv: list[str], line: str) -> None:
    write_tree(in_tmp, {"old/web.yaml": WEB, "specs/web.yaml": WEB})
    result = cli("diff", "--base-dir", "old", *argv)
    assert (result.code, result.out, result.err.splitlines()) == (2, "", [line])


def test_a_missing_base_folder_is_a_usage_error(in_tmp: Path, cli: Cli) -> None:
    write_tree(in_tmp, {"specs/web.yaml": WEB})
    result = cli("diff", "--base-dir", "nope")
    assert (result.code, result.err) == (2, "rulegen: error: --base-dir nope: not a directory\n")


def test_markdown_escapes_what_would_break_the_table(in_tmp: Path, cli: Cli) -> None:
    """A label value with a pipe, backticks and an escape character stays inside its cell."""
    after = WEB.replace("labels: {team: storage}", 'labels: {team: storage, note: "a|b``c\\e"}')
    write_tree(in_tmp, {"old/web.yaml": WEB, "specs/web.yaml": after})
    out = diff(cli, "--format", "markdown").out
    row = next(line for line in out.splitlines() if line.startswith("| `DiskAwaitHigh`"))
    assert row == "| `DiskAwaitHigh` | changed | `labels.note`: (none) → ```a\\|b``c\\x1b``` |"


def test_a_missing_signals_folder_is_a_usage_error(in_tmp: Path, cli: Cli) -> None:
    write_tree(in_tmp, {"old/web.yaml": WEB, "specs/web.yaml": WEB})
    result = cli("diff", "--base-dir", "old", "--signals", "nope")
    assert (result.code, result.out) == (2, "")
    assert result.err == "rulegen: error: nope: signals folder does not exist\n"
