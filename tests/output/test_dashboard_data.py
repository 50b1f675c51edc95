"""Every panel of the example dashboard returns data from a real Prometheus.

The synthetic series of the committed generated tests (``rules/tests``) are backfilled into a
TSDB with ``promtool tsdb create-blocks-from openmetrics``; every recording rule of
``rules/prometheus`` is backfilled over them with ``create-blocks-from rules``, level by level;
then a real ``prometheus`` on 127.0.0.1 answers each panel query over that range through the
HTTP API. A panel that can never show data (a misspelt recording, a label filter on a label
the quantity does not have) fails the test. ``test_cli`` proves the committed ``rules/`` is
what ``rulegen build`` writes, so this is the dashboard users get.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml
from conftest import REPO
from support.prometheus import (
    NEEDS_PROMETHEUS,
    backfill_recordings,
    create_blocks_from_openmetrics,
    expand_values,
    openmetrics,
    recording_levels,
    running,
)

from rulegen.units import parse_duration

RULES = REPO / "rules"
DASHBOARD = RULES / "grafana" / "deepseek-v4.json"
T0 = 1767225600  # 2026-01-01T00:00:00Z: where the first test case's series start
GAP = 3600  # between two test cases: more than any lookback or panel window reads
STEP = 60  # rule backfill and query step, seconds
VARIABLES = re.compile(r"\$\{?([a-zA-Z_]+)\}?")

pytestmark = [pytest.mark.slow, NEEDS_PROMETHEUS]


def case_series(
    test_file: Path, start: int
) -> tuple[list[tuple[str, list[tuple[int, float]]]], int]:
    """Each test case's input series, one case after the other from ``start`` (cases reuse
    label sets with other values, and joins such as ``on (instance, device)`` need one
    series per label set at a time); returns the series and where the next case may start."""
    data = yaml.safe_load(test_file.read_text())
    out = []
    for case in data["tests"]:
        interval = int(parse_duration(case.get("interval", data["evaluation_interval"])))
        longest = 0
        for item in case["input_series"]:
            values = expand_values(item["values"])
            longest = max(longest, len(values))
            samples = [(start + i * interval, v) for i, v in enumerate(values) if v is not None]
            out.append((item["series"], samples))
        start += longest * interval + GAP
    return out, start


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    """A Prometheus holding the tests' series and every recording; yields (url, end)."""
    workdir = tmp_path_factory.mktemp("history")
    files = sorted(p for p in (RULES / "tests").glob("*.yml") if ".history." not in p.name)
    series: list[tuple[str, list[tuple[int, float]]]] = []
    start = T0
    for test_file in files:
        found, start = case_series(test_file, start)
        series.extend(found)
    end = start
    source = workdir / "series.om"
    source.write_text(openmetrics(series))
    data = workdir / "data"
    create_blocks_from_openmetrics(source, data)
    levels = recording_levels(sorted((RULES / "prometheus").glob("*.rules.yml")))
    with running(data, workdir, STEP) as server:
        backfill_recordings(server, levels, (T0, end), STEP, workdir)
        yield server.url, end


def panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in dashboard["panels"] if p["type"] != "row"]


def substituted(expr: str) -> str:
    """A panel query as Grafana sends it with every filter on "All" (``.*``)."""
    return VARIABLES.sub(".*", expr)


def test_every_panel_query_returns_data(history: tuple[str, int]) -> None:
    url, end = history
    dashboard = json.loads(DASHBOARD.read_text())
    empty = []
    checked = 0
    for panel in panels(dashboard):
        for target in panel["targets"]:
            response = requests.get(
                f"{url}/api/v1/query_range",
                params={
                    "query": substituted(target["expr"]),
                    "start": str(T0),
                    "end": str(end),
                    "step": str(STEP),
                },
                timeout=60,
            )
            assert response.status_code == 200, (panel["title"], response.text)
            checked += 1
            if not response.json()["data"]["result"]:
                empty.append(f"{panel['title']}: {target['expr']}")
    assert checked >= 50  # every panel target of the example (rows excluded)
    assert empty == [], "panels with no data:\n" + "\n".join(empty)


def test_every_filter_variable_lists_values(history: tuple[str, int]) -> None:
    """The ``label_values({service=…}, label)`` of each filter finds values."""
    url, end = history
    dashboard = json.loads(DASHBOARD.read_text())
    queries = [v for v in dashboard["templating"]["list"] if v["type"] == "query"]
    assert {v["name"] for v in queries} >= {"instance", "model_name", "device", "host"}
    for variable in queries:
        match = re.fullmatch(r"label_values\((.+), ([a-zA-Z_]+)\)", variable["query"])
        assert match, variable["query"]
        response = requests.get(
            f"{url}/api/v1/label/{match.group(2)}/values",
            params={"match[]": match.group(1), "start": str(T0), "end": str(end)},
            timeout=60,
        )
        assert response.status_code == 200, response.text
        assert response.json()["data"], f"variable {variable['name']} lists no values"


def test_a_panel_reading_a_missing_recording_is_caught(history: tuple[str, int]) -> None:
    """The check can fail: a misspelt recording returns nothing."""
    url, end = history
    response = requests.get(
        f"{url}/api/v1/query_range",
        params={
            "query": 'instance_device:node_disk_io_time_seconds:rate5m{service="deepseek-v4"}',
            "start": str(T0),
            "end": str(end),
            "step": str(STEP),
        },
        timeout=60,
    )
    assert response.json()["data"]["result"] == []
