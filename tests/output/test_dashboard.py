"""The Grafana dashboard of a service (``DIR/grafana/<service>.json``) and its file provider.

An on-call engineer paged by an alert should land on a panel that shows exactly what the alert
compares, in its unit, with its threshold drawn; so every query must be valid PromQL that reads
series the rules produce, and every field must be one Grafana's schema knows (checked by a
lossless round trip through the Grafana Foundation SDK's models, which drop unknown keys).
Most checks read the committed example ``rules/grafana/deepseek-v4.json``, which a build
below must reproduce byte for byte; the rest build small specs.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import promql_parser
import pytest
import yaml
from conftest import REPO, CliResult, copy_specs, example_spec, write_tree
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import prometheus, stat, timeseries
from grafana_foundation_sdk.models.dashboard import Dashboard

Cli = Callable[..., CliResult]
Json = dict[str, Any]

EXAMPLE = REPO / "rules" / "grafana" / "deepseek-v4.json"
EXAMPLE_RULES = REPO / "rules" / "prometheus" / "deepseek-v4.rules.yml"
SIGNAL_DIRS = (REPO / "src" / "rulegen" / "catalog" / "signals", REPO / "signals")
FILTERS = ("instance", "host", "model_name", "device")
# The Grafana unit of each catalog threshold unit.
UNITS = {"duration": "s", "percent": "percentunit", "bandwidth": "Bps", "number": "short"}
VARIABLE = re.compile(r"\$(?:\{([A-Za-z_]\w*)(?:[.:][^}]*)?\}|([A-Za-z_]\w*))")
LABEL_VALUES = re.compile(r"label_values\((.*),\s*([A-Za-z_]\w*)\)")
COMPARISONS = (">", "<", ">=", "<=", "==", "!=")


# --- reading the dashboard and the rules -----------------------------------------------------


@cache
def _example_text() -> str:
    return EXAMPLE.read_text("utf-8")


def example() -> Json:
    """A fresh copy of the example dashboard (tests may mutate it)."""
    board: Json = json.loads(_example_text())
    return board


def panels(board: Json) -> list[Json]:
    """The panels that show data (not the row headers)."""
    return [p for p in board["panels"] if p["type"] != "row"]


def rows(board: Json) -> dict[str, list[Json]]:
    """Row title → the panels under that row header, in order."""
    out: dict[str, list[Json]] = {}
    current: list[Json] = []
    for panel in board["panels"]:
        if panel["type"] == "row":
            current = out.setdefault(panel["title"], [])
        else:
            current.append(panel)
    return out


def panels_of(board: Json, alert: str) -> list[Json]:
    """The panels titled after ``alert`` (``Name (…)`` or ``Name: …``)."""
    return [
        p
        for p in panels(board)
        if p["title"] == alert or p["title"].startswith((f"{alert} ", f"{alert}:"))
    ]


def exprs(panel: Json) -> list[str]:
    return [target["expr"] for target in panel["targets"]]


def red_steps(panel: Json) -> list[float]:
    steps = panel["fieldConfig"]["defaults"]["thresholds"]["steps"]
    return [step["value"] for step in steps if step["color"] == "red"]


def substitute(expr: str, filters: tuple[str, ...] = FILTERS) -> str:
    """The query as Prometheus sees it with every filter set to All (``.*``)."""
    names = "|".join(filters)
    return re.sub(rf"\$(?:\{{({names})\}}|({names})\b)", ".*", expr)


def selectors(expr: str) -> list[tuple[str, frozenset[str]]]:
    """Every vector selector of ``expr``: its metric name and its matchers (as PromQL text)."""
    found: list[tuple[str, frozenset[str]]] = []

    def visit(node: promql_parser.Expr) -> None:
        if isinstance(node, promql_parser.VectorSelector):
            matchers = frozenset(str(m) for m in node.matchers.matchers)
            found.append((node.name or "", matchers))

    promql_parser.walk(promql_parser.parse(substitute(expr)), visit)
    return found


def without_filters(matchers: frozenset[str]) -> frozenset[str]:
    """The matchers of a panel selector minus the dashboard's filters (``label=~".*"``)."""
    return frozenset(m for m in matchers if not m.endswith('=~".*"'))


def thresholds_of(expr: str) -> list[float]:
    """The number an alert expression ends by comparing with (``… > 0.005``); a guard inside
    it (``deriv(…) > 0``, ``readonly == 1``) is not the alert's threshold."""
    node = promql_parser.parse(expr)
    while True:  # through parentheses and the diagnoses' label_replace(…, "host", …)
        if isinstance(node, promql_parser.ParenExpr):
            node = node.expr
        elif isinstance(node, promql_parser.Call) and node.func.name == "label_replace":
            node = node.args[0]
        else:
            break
    if (
        isinstance(node, promql_parser.BinaryExpr)
        and str(node.op) in COMPARISONS
        and isinstance(node.rhs, promql_parser.NumberLiteral)
    ):
        return [node.rhs.val]
    return []


@cache
def _rule_files() -> tuple[tuple[str, tuple[Json, ...]], ...]:
    out = []
    for path in sorted((REPO / "rules" / "prometheus").glob("deepseek-v4*.rules.yml")):
        doc = yaml.safe_load(path.read_text("utf-8"))
        out.append((path.name, tuple(r for g in doc["groups"] for r in g["rules"])))
    return tuple(out)


def rules_of(name: str) -> tuple[Json, ...]:
    return dict(_rule_files())[name]


def alert_rules() -> list[Json]:
    """The alerts of the example's main rule file (SLO alerts are in their own files)."""
    return [rule for rule in rules_of(EXAMPLE_RULES.name) if "alert" in rule]


@cache
def _spec() -> Json:
    spec: Json = example_spec()  # with the keys it inherits from specs/defaults.yaml
    return spec


@cache
def _signals() -> dict[str, Json]:
    """Catalog and template signal definitions by name, read straight from their YAML."""
    found: dict[str, Json] = {}
    for folder in SIGNAL_DIRS:
        for path in sorted(folder.glob("*.yaml")):
            doc = yaml.safe_load(path.read_text("utf-8"))
            found[doc["signal"]] = doc
    return found


def catalog_alerts() -> dict[str, str]:
    """Alert name → its catalog threshold unit, for the example spec's non-custom alerts."""
    out: dict[str, str] = {}
    for entry in _spec()["alerts"]:
        if entry["signal"] == "custom":
            continue
        signal = _signals()[entry["signal"]]
        out[entry.get("name", signal["alert"])] = signal["threshold"]["unit"]
    return out


ALERT_NAMES = [rule["alert"] for rule in alert_rules()]
CATALOG_NAMES = list(catalog_alerts())


# --- 1. every query is PromQL ---------------------------------------------------------------


def queries(board: Json) -> list[tuple[str, str]]:
    """(where, PromQL) of every panel target, filter variable selector and annotation."""
    found = [
        (f"panel {panel['id']} target {target['refId']}", target["expr"])
        for panel in panels(board)
        for target in panel["targets"]
    ]
    for variable in board["templating"]["list"]:
        if variable["type"] == "query":
            match = LABEL_VALUES.fullmatch(variable["query"])
            selector = match.group(1) if match else variable["query"]
            found.append((f"variable {variable['name']}", selector))
    found += [(f"annotation {a['name']}", a["expr"]) for a in board["annotations"]["list"]]
    return found


def promql_problems(board: Json) -> list[str]:
    """Every query that is not valid PromQL once the Grafana variables are substituted."""
    problems = []
    filters = tuple(v["name"] for v in board["templating"]["list"] if v["type"] == "query")
    for where, expr in queries(board):
        text = substitute(expr, filters)
        if VARIABLE.search(text):
            problems.append(f"{where}: a variable is left in {text!r}")
        try:
            promql_parser.parse(text)
        except ValueError as exc:
            problems.append(f"{where}: {exc}: {text!r}")
    for variable in board["templating"]["list"]:
        match = LABEL_VALUES.fullmatch(variable.get("query", ""))
        if variable["type"] == "query" and (match is None or match.group(2) != variable["name"]):
            problems.append(f"variable {variable['name']}: {variable['query']!r}")
    return problems


def test_every_query_of_the_example_parses_as_promql() -> None:
    board = example()

    assert promql_problems(board) == []
    assert len(queries(board)) >= 60  # every panel, variable and the annotation were seen


@dataclass(frozen=True)
class Breakage:
    """One edit of the example that makes a query invalid."""

    behaviour: str
    path: tuple[str | int, ...]
    value: str
    reported: str


BREAKAGES = [
    Breakage(
        "an unclosed parenthesis in a panel query",
        ("panels", 1, "targets", 0, "expr"),
        "sum(rate(node_disk_io_time_seconds_total[5m])",
        "panel 2 target A",
    ),
    Breakage(
        "an undefined variable in a panel query",
        ("panels", 1, "targets", 0, "expr"),
        'up{instance=~"$instanse"}',
        "panel 2 target A: a variable is left",
    ),
    Breakage(
        "a variable selector that is not PromQL",
        ("templating", "list", 1, "query"),
        'label_values({service="deepseek-v4", instance)',
        "variable instance",
    ),
    Breakage(
        "a variable listing another label than its name",
        ("templating", "list", 1, "query"),
        'label_values({service="deepseek-v4"}, device)',
        "variable instance",
    ),
    Breakage(
        "an annotation query that is not PromQL",
        ("annotations", "list", 0, "expr"),
        "ALERTS{alertstate=firing}",
        "annotation Firing alerts",
    ),
]


def _set(data: Any, path: tuple[str | int, ...], value: Any) -> None:
    for key in path[:-1]:
        data = data[key]
    data[path[-1]] = value


@pytest.mark.parametrize("case", BREAKAGES, ids=[case.behaviour for case in BREAKAGES])
def test_the_promql_check_catches_a_broken_query(case: Breakage) -> None:
    board = example()
    _set(board, case.path, case.value)

    problems = promql_problems(board)

    assert len(problems) == 1
    assert problems[0].startswith(case.reported), problems


def test_every_series_a_panel_reads_is_recorded_or_read_by_an_alert() -> None:
    """A misspelt recording name would draw an empty panel, never an error."""
    recorded = {r["record"] for _, rules in _rule_files() for r in rules if "record" in r}
    alerts = [r["expr"] for _, rules in _rule_files() for r in rules if "alert" in r]
    read_by_alerts = {name for expr in alerts for name, _ in selectors(expr)}

    read = {name for _, expr in queries(example()) for name, _ in selectors(expr) if name}

    assert read - recorded - read_by_alerts == {"ALERTS"}  # Prometheus's own, for the annotation
    assert len(read & recorded) >= 30


# --- 2. the Grafana schema, through the SDK's models ---------------------------------------


def encode(model: object) -> Any:
    return json.loads(json.dumps(model, cls=JSONEncoder))


def differences(before: Any, after: Any, path: str) -> list[str]:
    """Where ``after`` (a round trip of ``before``) differs: dropped, added or changed."""
    if isinstance(before, dict) and isinstance(after, dict):
        out = [f"{path}.{k}: dropped" for k in before if k not in after]
        out += [f"{path}.{k}: added" for k in after if k not in before]
        for key in before.keys() & after.keys():
            out += differences(before[key], after[key], f"{path}.{key}")
        return out
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        return [
            problem
            for index, (b, a) in enumerate(zip(before, after, strict=True))
            for problem in differences(b, a, f"{path}[{index}]")
        ]
    return [] if before == after else [f"{path}: {before!r} became {after!r}"]


# The option and field-config models of each panel type (stat has no custom field config).
PANEL_MODELS: dict[str, tuple[Callable[[Json], object], Callable[[Json], object] | None]] = {
    "timeseries": (timeseries.Options.from_json, timeseries.FieldConfig.from_json),
    "stat": (stat.Options.from_json, None),
}


def schema_problems(board: Json) -> list[str]:
    """Every field the SDK's models do not carry through a round trip (an unknown key)."""
    problems = differences(board, encode(Dashboard.from_json(board)), "dashboard")
    for panel in panels(board):
        where = f"panel {panel['id']}"
        if panel["type"] not in PANEL_MODELS:
            problems.append(f"{where}: unknown panel type {panel['type']!r}")
            continue
        options, custom = PANEL_MODELS[panel["type"]]
        problems += differences(panel["options"], encode(options(panel["options"])), where)
        defaults = panel["fieldConfig"]["defaults"]
        if custom is not None:
            problems += differences(defaults["custom"], encode(custom(defaults["custom"])), where)
        elif "custom" in defaults:
            problems.append(f"{where}: a {panel['type']} panel has no custom field config")
        for target in panel["targets"]:
            problems += differences(
                target, encode(prometheus.Dataquery.from_json(target)), f"{where} target"
            )
    return problems


def test_the_example_round_trips_losslessly_through_the_sdk_models() -> None:
    board = example()

    assert schema_problems(board) == []
    assert {p["type"] for p in panels(board)} == {"timeseries", "stat"}


@dataclass(frozen=True)
class Unknown:
    """Where an unknown key is injected into the example."""

    behaviour: str
    path: tuple[str | int, ...]
    key: str = "colour"
    value: Any = "red"


def _first(kind: str) -> int:
    return next(i for i, p in enumerate(example()["panels"]) if p["type"] == kind)


UNKNOWN_KEYS = [
    Unknown("at the top level", ()),
    Unknown("in a time series panel", ("panels", _first("timeseries"))),
    Unknown("in a row", ("panels", 0)),
    Unknown("in time series options", ("panels", _first("timeseries"), "options")),
    Unknown("in the legend", ("panels", _first("timeseries"), "options", "legend")),
    Unknown(
        "in the custom field config",
        ("panels", _first("timeseries"), "fieldConfig", "defaults", "custom"),
    ),
    Unknown("in stat options", ("panels", _first("stat"), "options")),
    Unknown(
        "a custom field config on a stat panel",
        ("panels", _first("stat"), "fieldConfig", "defaults"),
        "custom",
        {"lineWidth": 1},
    ),
    Unknown("in a target", ("panels", _first("timeseries"), "targets", 0)),
    Unknown("in a variable", ("templating", "list", 1)),
    Unknown("in the annotation", ("annotations", "list", 0)),
]


@pytest.mark.parametrize("case", UNKNOWN_KEYS, ids=[case.behaviour for case in UNKNOWN_KEYS])
def test_an_unknown_key_fails_the_schema_check(case: Unknown) -> None:
    board = example()
    _set(board, (*case.path, case.key), case.value)

    problems = schema_problems(board)

    assert len(problems) == 1, problems
    assert case.key in problems[0]


def test_panels_tile_the_grid_without_overlapping() -> None:
    """Grafana's grid is 24 columns; overlapping panels are pushed around unpredictably."""
    taken: dict[tuple[int, int], int] = {}
    clashes = []
    for panel in example()["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] >= 0, panel["id"]
        assert grid["x"] + grid["w"] <= 24, panel["id"]
        for x in range(grid["x"], grid["x"] + grid["w"]):
            for y in range(grid["y"], grid["y"] + grid["h"]):
                if (x, y) in taken:
                    clashes.append((panel["id"], taken[x, y]))
                taken[x, y] = panel["id"]
    assert clashes == []


# --- 3. determinism and identity -------------------------------------------------------------


def _copy_example(dest: Path) -> None:
    copy_specs(REPO / "specs", dest / "specs")
    shutil.copytree(REPO / "signals", dest / "signals")


def _grafana_files(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((out / "grafana").iterdir())}


def test_two_builds_are_byte_identical_and_match_the_committed_example(
    in_tmp: Path, cli: Cli
) -> None:
    _copy_example(in_tmp)

    first, second = (
        cli("build", "--no-validate", "--out", "a"),
        cli("build", "--no-validate", "--out", "b"),
    )

    assert (first.code, second.code) == (0, 0), first.err + second.err
    assert _grafana_files(in_tmp / "a") == _grafana_files(in_tmp / "b")
    assert sorted(_grafana_files(in_tmp / "a")) == ["deepseek-v4.json", "provisioning.yaml"]
    assert (in_tmp / "a/grafana/deepseek-v4.json").read_bytes() == EXAMPLE.read_bytes()


def _unsorted(value: Any, path: str) -> Iterator[str]:
    if isinstance(value, dict):
        if list(value) != sorted(value):
            yield path
        for key, item in value.items():
            yield from _unsorted(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _unsorted(item, f"{path}[{index}]")


def _leaves(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _leaves(item, f"{path}[{index}]")
    else:
        yield path, value


CLOCK_KEYS = {"id", "version", "created", "updated", "iteration", "timestamp"}
ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")


def test_the_example_has_sorted_keys_and_nothing_from_the_clock() -> None:
    """A build must not change the file unless the spec changed (CI diffs it byte for byte)."""
    board = example()

    assert list(_unsorted(board, "dashboard")) == []
    assert _example_text() == json.dumps(board, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert CLOCK_KEYS.isdisjoint(board)  # Grafana assigns id and version on import
    timestamps = [
        (path, value)
        for path, value in _leaves(board, "dashboard")
        if (isinstance(value, str) and ISO_DATE.search(value))
        or (isinstance(value, int | float) and not isinstance(value, bool) and value > 10**9)
    ]
    assert timestamps == []
    assert board["time"] == {"from": "now-6h", "to": "now"}


def test_the_example_names_its_source_and_its_uid_after_the_service() -> None:
    board = example()

    assert board["description"] == (
        "Code generated by rulegen from specs/llm-serving.yaml. DO NOT EDIT."
    )
    assert board["uid"] == "rulegen-deepseek-v4"
    assert board["title"] == "deepseek-v4 (rulegen)"
    assert board["tags"] == ["rulegen", "deepseek-v4"]


def test_the_example_panel_ids_are_unique_including_rows() -> None:
    """Grafana keys panel state and ``viewPanel=ID`` links by id; rows are panels too."""
    ids = [panel["id"] for panel in example()["panels"]]

    assert len(set(ids)) == len(ids) > 50
    assert all(isinstance(i, int) and i > 0 for i in ids)


def _ids(out: Path) -> list[tuple[int, str]]:
    """Panel id → title without the threshold text, in order."""
    board = json.loads((out / "grafana/deepseek-v4.json").read_text("utf-8"))
    return [(p["id"], re.sub(r" \(.*", "", p["title"])) for p in board["panels"]]


def test_panel_ids_are_unique_and_survive_a_threshold_edit(in_tmp: Path, cli: Cli) -> None:
    """Links to a panel (``viewPanel=ID``) keep working when a threshold is tuned."""
    _copy_example(in_tmp)
    assert cli("build", "--no-validate", "--out", "before").code == 0
    spec = in_tmp / "specs" / "llm-serving.yaml"
    spec.write_text(spec.read_text("utf-8").replace("threshold: 5ms", "threshold: 7ms"))
    assert cli("build", "--no-validate", "--out", "after").code == 0

    before, after = _ids(in_tmp / "before"), _ids(in_tmp / "after")

    ids = [panel_id for panel_id, _ in before]
    assert len(set(ids)) == len(ids) == len(example()["panels"])
    assert all(isinstance(i, int) and i > 0 for i in ids)
    assert after == before
    edited = json.loads((in_tmp / "after/grafana/deepseek-v4.json").read_text("utf-8"))
    assert panels_of(edited, "DiskAwaitHigh")[0]["title"].startswith("DiskAwaitHigh (> 7ms")


LONG = "a" * 50 + "-inference"  # 60 characters: the uid would be 68
UID = re.compile(r"^[A-Za-z0-9_-]{1,40}$")  # what Grafana accepts


def _uids(root: Path, out: str) -> dict[str, str]:
    return {
        path.stem: json.loads(path.read_text("utf-8"))["uid"]
        for path in sorted((root / out / "grafana").glob("*.json"))
    }


def test_a_long_service_name_gets_a_short_stable_distinct_uid(in_tmp: Path, cli: Cli) -> None:
    alert = "alerts:\n  - {signal: cpu_iowait, threshold: 20%, severity: warning}\n"
    other = LONG.replace("-inference", "-embedding")
    assert len(LONG) == len(other) == 60
    write_tree(
        in_tmp,
        {
            "specs/a.yaml": f"version: 1\nservice: {LONG}\n{alert}",
            "specs/b.yaml": f"version: 1\nservice: {other}\n{alert}",
            "specs/c.yaml": f"version: 1\nservice: web\n{alert}",
        },
    )

    assert cli("build", "--no-validate", "--out", "one").code == 0
    assert cli("build", "--no-validate", "--out", "two").code == 0
    uids = _uids(in_tmp, "one")

    assert uids == _uids(in_tmp, "two")
    assert all(UID.match(uid) for uid in uids.values()), uids
    assert uids["web"] == "rulegen-web"
    assert uids[LONG] != uids[other]
    assert uids[LONG].startswith("rulegen-aaaa")


# --- 4. one panel per alert ------------------------------------------------------------------


def _rule(name: str) -> Json:
    return next(rule for rule in alert_rules() if rule["alert"] == name)


@pytest.mark.parametrize("name", ALERT_NAMES)
def test_every_alert_has_a_panel_reading_what_it_evaluates(name: str) -> None:
    """Same series, same selectors (plus the dashboard filters) as the alert expression."""
    rule = _rule(name)
    found = panels_of(example(), name)
    assert found, f"no panel for {name}"
    shown = [s for panel in found for expr in exprs(panel) for s in selectors(expr)]
    evaluated = selectors(rule["expr"])

    assert {n for n, _ in shown} == {n for n, _ in evaluated}
    for metric, matchers in evaluated:
        assert (metric, matchers) in {(n, without_filters(m)) for n, m in shown}, metric


@pytest.mark.parametrize("name", CATALOG_NAMES)
def test_a_catalog_alert_panel_has_its_unit_threshold_for_and_runbook(name: str) -> None:
    rule = _rule(name)
    (panel,) = panels_of(example(), name)
    wait = rule.get("for", "0s")
    runbook = _spec()["runbook_url"].replace("{alert}", name)

    assert panel["fieldConfig"]["defaults"]["unit"] == UNITS[catalog_alerts()[name]]
    assert red_steps(panel) == thresholds_of(rule["expr"])
    assert len(red_steps(panel)) == 1
    assert re.search(rf"\bfor {wait}\b", panel["description"]), panel["description"]
    assert rule["annotations"]["runbook_url"] == runbook
    links = [(link["title"], link["url"], link["targetBlank"]) for link in panel["links"]]
    assert links == [("Runbook", runbook, True)]


def test_the_catalog_alerts_cover_every_unit_the_example_uses() -> None:
    """The parametrised test above sees durations, percents and plain numbers."""
    assert set(catalog_alerts().values()) == {"duration", "percent", "number"}
    assert len(CATALOG_NAMES) >= 15


# --- 5. variables ----------------------------------------------------------------------------


def _references(board: Json) -> set[str]:
    """The variables named in the queries and data sources (``$x``, ``${x}``)."""
    texts = [expr for _, expr in queries(board)]
    texts += [t.get("legendFormat", "") for p in panels(board) for t in p["targets"]]
    texts += [json.dumps(p.get("datasource", {})) for p in panels(board)]
    texts += [json.dumps(v.get("datasource", {})) for v in board["templating"]["list"]]
    texts += [json.dumps(a["datasource"]) for a in board["annotations"]["list"]]
    return {a or b for text in texts for a, b in VARIABLE.findall(text)}


def _filters_used(board: Json) -> set[str]:
    """The labels the panel queries filter by a same-named variable (``x=~"$x"``)."""
    return {
        name
        for panel in panels(board)
        for expr in exprs(panel)
        for name in re.findall(r'(\w+)=~"\$\1"', expr)
    }


def variable_problems(board: Json) -> list[str]:
    """Undefined, unused, duplicate or non-Prometheus variables."""
    names = [v["name"] for v in board["templating"]["list"]]
    problems = [f"{n}: defined twice" for n in sorted({n for n in names if names.count(n) > 1})]
    problems += [f"{n}: used, never defined" for n in sorted(_references(board) - set(names))]
    filters = {v["name"] for v in board["templating"]["list"] if v["type"] == "query"}
    problems += [f"{n}: defined, never used" for n in sorted(filters - _filters_used(board))]
    first = board["templating"]["list"][0]
    if (first["name"], first["type"], first["query"]) != ("datasource", "datasource", "prometheus"):
        problems.append(f"first variable is not a Prometheus data source: {first}")
    sources = [p["datasource"] for p in panels(board)] + [
        v["datasource"] for v in board["templating"]["list"][1:]
    ]
    if any(s != {"type": "prometheus", "uid": "${datasource}"} for s in sources):
        problems.append("a panel or variable does not read the chosen data source")
    return problems


def test_the_example_variables_are_defined_used_and_read_the_chosen_data_source() -> None:
    board = example()

    assert variable_problems(board) == []
    assert [v["name"] for v in board["templating"]["list"]] == [
        "datasource",
        "instance",
        "host",
        "model_name",
        "device",
    ]
    assert _references(board) == {"datasource", *FILTERS}


@dataclass(frozen=True)
class Variables:
    """A small spec and the variables its dashboard must define, in order."""

    behaviour: str
    spec: str
    names: tuple[str, ...]


IOWAIT = "alerts:\n  - {signal: cpu_iowait, threshold: 20%, severity: warning}\n"
CONTENTION = "diagnoses:\n  - kind: gpu_kernel_contention\n"
TTFT_SLO = """\
slos:
  - name: ttft
    objective: 99%
    sli:
      latency:
        metric: vllm:time_to_first_token_seconds
        threshold: 1s
    group_by: [model_name]
"""

VARIABLES = [
    Variables("a cpu_iowait alert filters by instance only", IOWAIT, ("datasource", "instance")),
    Variables(
        "a TTFT alert adds the model filter",
        "alerts:\n  - {signal: ttft_latency, threshold: 500ms, severity: warning}\n",
        ("datasource", "instance", "model_name"),
    ),
    Variables(
        "a disk alert adds the device filter",
        "alerts:\n  - {signal: disk_await, threshold: 5ms, severity: warning}\n",
        ("datasource", "instance", "device"),
    ),
    Variables(
        "a gRPC alert (by service and method) needs no filter",
        "alerts:\n  - {signal: grpc_errors, threshold: 1%, severity: warning}\n",
        ("datasource",),
    ),
    Variables(
        "a diagnosis adds the derived host filter",
        IOWAIT + CONTENTION,
        ("datasource", "instance", "host"),
    ),
    Variables(
        "a relabelled host label names the host filter",
        "host_label: node\n" + IOWAIT + CONTENTION,
        ("datasource", "instance", "node"),
    ),
    Variables(
        "filters shared by alerts, a diagnosis and an SLO are defined once, in order",
        "alerts:\n  - {signal: ttft_latency, threshold: 500ms, severity: warning}\n"
        + CONTENTION
        + TTFT_SLO,
        ("datasource", "instance", "host", "model_name"),
    ),
    Variables("an SLO by model has the model filter only", TTFT_SLO, ("datasource", "model_name")),
]


@pytest.mark.parametrize("case", VARIABLES, ids=[case.behaviour for case in VARIABLES])
def test_filter_variables_are_those_the_panels_use(case: Variables, in_tmp: Path, cli: Cli) -> None:
    write_tree(in_tmp, {"specs/web.yaml": f"version: 1\nservice: web\n{case.spec}"})

    result = cli("build", "--no-validate")

    assert result.code == 0, result.err
    board = json.loads((in_tmp / "rules/grafana/web.json").read_text("utf-8"))
    assert tuple(v["name"] for v in board["templating"]["list"]) == case.names
    assert variable_problems(board) == []
    assert promql_problems(board) == []
    assert schema_problems(board) == []


def test_the_variable_check_catches_an_unused_and_an_undefined_variable() -> None:
    board = example()
    device = next(v for v in board["templating"]["list"] if v["name"] == "device")
    board["templating"]["list"].append({**device, "name": "gpu", "query": "label_values(up, gpu)"})
    board["panels"][1]["targets"][0]["expr"] += ' and on () up{job=~"$job"}'

    assert variable_problems(board) == ["job: used, never defined", "gpu: defined, never used"]


# --- 6. SLO rows -----------------------------------------------------------------------------


@dataclass(frozen=True)
class SLOCase:
    """An SLO of the example: its row and the burn-rate factor of each tier (long, short).

    The factors are the SRE Workbook's (2% of the budget in 1h, 5% in 6h, 10% in 1d and 3d),
    scaled to the SLO window: 14.4, 6, 3, 1 over 30 days.
    """

    name: str
    row: str
    window: str
    objective: float
    tiers: tuple[tuple[str, str, float], ...]


SLOS = [
    SLOCase(
        "ttft",
        "SLO ttft (99% over 28d)",
        "28d",
        0.99,
        (("1h", "5m", 13.44), ("6h", "30m", 5.6), ("1d", "2h", 2.8), ("3d", "6h", 14 / 15)),
    ),
    SLOCase(
        "availability",
        "SLO availability (99.9% over 30d)",
        "30d",
        0.999,
        (("1h", "5m", 14.4), ("6h", "30m", 6.0), ("1d", "2h", 3.0), ("3d", "6h", 1.0)),
    ),
]


def _divisor(expr: str) -> float:
    node = promql_parser.parse(substitute(expr))
    assert isinstance(node, promql_parser.BinaryExpr)
    assert str(node.op) == "/"
    assert isinstance(node.rhs, promql_parser.NumberLiteral)
    return node.rhs.val


@pytest.mark.parametrize("slo", SLOS, ids=[slo.name for slo in SLOS])
def test_each_slo_has_a_row_with_its_stats_budget_and_burn_rates(slo: SLOCase) -> None:
    row = rows(example())[slo.row]
    stats = [p["title"] for p in row if p["type"] == "stat"]
    series = [p for p in row if p["type"] == "timeseries"]
    burns = [p for p in series if p["title"].startswith("Burn rate ")]
    budget = next(p for p in series if p["title"] == "Error budget left")
    sli = next(p for p in row if p["type"] == "stat" and p["title"].startswith("SLI"))

    assert stats == [
        "Objective",
        f"SLI over {slo.window}",
        "Error budget left",
        "Time to exhaustion",
        "Window recorded",
    ]
    assert [n for e in exprs(row[0]) for n, _ in selectors(e)] == ["slo:objective:ratio"]
    coverage = next(p for p in row if p["title"] == "Window recorded")
    assert [n for e in exprs(coverage) for n, _ in selectors(e)] == ["slo:sli_coverage:ratio"]
    steps = coverage["fieldConfig"]["defaults"]["thresholds"]["steps"]
    assert [(s["value"], s["color"]) for s in steps] == [(None, "red"), (1, "green")]
    assert [n for n, _ in selectors(exprs(budget)[0])] == ["slo:error_budget_remaining:ratio"]
    assert red_steps(budget) == [0]
    green = [s["value"] for s in sli["fieldConfig"]["defaults"]["thresholds"]["steps"]]
    assert green == [None, pytest.approx(slo.objective)]
    windows = [
        tuple(n.removeprefix("slo:sli_error:ratio_rate") for e in exprs(p) for n, _ in selectors(e))
        for p in burns
    ]
    assert windows == [(long, short) for long, short, _ in slo.tiers]
    assert [red_steps(p) for p in burns] == [[pytest.approx(f)] for _, _, f in slo.tiers]
    divisors = [_divisor(e) for p in burns for e in exprs(p)]
    assert divisors == [pytest.approx(1 - slo.objective)] * 2 * len(slo.tiers)
    every = {m for p in row for e in exprs(p) for _, ms in selectors(e) for m in ms}
    assert 'service="deepseek-v4"' in every
    for panel in row:
        for expr in exprs(panel):
            for _, matchers in selectors(expr):
                assert f'slo="{slo.name}"' in matchers, expr


# --- 7. row order ----------------------------------------------------------------------------


def test_rows_come_in_the_order_an_on_call_reads_them() -> None:
    assert list(rows(example())) == [
        "Targets",
        "Disk",
        "Network",
        "CPU",
        "Memory",
        "Model weights",
        "vLLM",
        "GPU",
        "gRPC",
        "NVMe",
        "Custom",
        "Diagnoses",
        "SLO ttft (99% over 28d)",
        "SLO goodput (99% over 28d)",
        "SLO itl (99% over 28d)",
        "SLO availability (99.9% over 30d)",
    ]


# --- 8. annotation ---------------------------------------------------------------------------


def test_the_annotation_marks_every_firing_alert_of_the_service() -> None:
    """Every generated alert (SLO ones too) carries ``service``, so the annotation sees it."""
    (annotation,) = example()["annotations"]["list"]
    labels = [r["labels"] for _, rules in _rule_files() for r in rules if "alert" in r]

    assert annotation["expr"] == 'ALERTS{alertstate="firing", service="deepseek-v4"}'
    assert annotation["enable"] is True
    assert annotation["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
    assert len(labels) > 25
    assert [each for each in labels if each.get("service") != "deepseek-v4"] == []


# --- 9. provisioning -------------------------------------------------------------------------


def test_provisioning_is_a_grafana_file_provider() -> None:
    text = (REPO / "rules/grafana/provisioning.yaml").read_text("utf-8")
    config = yaml.safe_load(text)

    assert text.startswith("# Code generated by rulegen")
    assert config["apiVersion"] == 1
    (provider,) = config["providers"]
    assert provider["type"] == "file"
    assert provider["name"]
    assert Path(provider["options"]["path"]).is_absolute()
    assert provider["allowUiUpdates"] is False  # edits in the UI would be lost on the next build


UTF8_NAMES = """\
version: 1
service: web
runbook_url: https://runbooks.example.com/{alert}
alerts:
  - signal: custom
    name: DotMetricHigh
    expr: 'sum by ("k8s.pod") (rate({"http.requests", code=~"5.."}[5m])) > 1'
    for: 5m
    severity: warning
    summary: high
"""


def test_utf8_names_in_a_custom_alert_give_queries_that_run(in_tmp: Path, cli: Cli) -> None:
    """Prometheus 3's quoted UTF-8 names: the PromQL parser's printer drops the quotes
    (``by (k8s.pod)``), so the panel must show the alert's own text, not a reprint."""
    write_tree(in_tmp, {"specs/web.yaml": UTF8_NAMES})
    assert cli("build", "--no-validate").code == 0
    board = json.loads((in_tmp / "rules/grafana/web.json").read_text("utf-8"))
    assert promql_problems(board) == []
    exprs = [expr for _, expr in queries(board)]
    assert 'sum by ("k8s.pod") (rate({"http.requests", code=~"5.."}[5m])) > 1' in exprs


@pytest.mark.parametrize("kind", ["nhcb", "native"])
def test_the_example_on_native_histograms_draws_no_bucket_series(
    kind: str, in_tmp: Path, cli: Cli
) -> None:
    """``histograms: {vllm: …}`` switches the dashboards too: every panel query of the
    example reads the native series (no ``_bucket``), and each still parses as PromQL."""
    _copy_example(in_tmp)
    spec = in_tmp / "specs/llm-serving.yaml"
    text = spec.read_text() + f"histograms: {{vllm: {kind}}}\n"
    if kind == "native":  # an exponential TTFT is refused for diagnoses
        data = yaml.safe_load(text)
        data.pop("diagnoses")
        text = yaml.safe_dump(data)
    spec.write_text(text)
    built = cli("build", "--no-validate")
    assert built.code == 0, built.err
    board = json.loads((in_tmp / "rules/grafana/deepseek-v4.json").read_text())
    assert len(queries(board)) >= 40
    assert not [q for _, q in queries(board) if "_bucket" in q]
    assert promql_problems(board) == []
