"""A server with less history than the rules read before ``--from``: partial, not pretended.

An SLO's ticket tier reads 6 hours of its window cascade before each evaluation; a server
that holds 2 hours of the counters can answer the page tier (1 hour) for the last half hour,
but not the ticket tier: the report names the server's first sample and the time until which
results are partial, in text and JSON. Proven on a real ``prometheus`` holding raw series.
"""

from __future__ import annotations

import argparse
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import for_stack
from support.prometheus import (
    NEEDS_PROMETHEUS,
    create_blocks_from_openmetrics,
    openmetrics,
    running,
)

from rulegen.backtest import command
from rulegen.catalog import load_catalog

T0 = 1767225600  # 2026-01-01T00:00:00Z
STEP = 60
HOURS = 2
FROM = T0 + 90 * 60  # the last half hour is replayed

pytestmark = [pytest.mark.slow, NEEDS_PROMETHEUS]

SPEC = """\
version: 1
service: short
evaluation_interval: 1m
slos:
  - name: availability
    objective: 99%
    window: 1d
    sli:
      ratio:
        errors: 'requests_total{code="500"}'
        total: 'requests_total'
    alerting: {name: BudgetBurn}
    tiers:
      - {long: 1h, short: 5m, budget: 2%, alert: page}
      - {long: 6h, short: 30m, budget: 10%, alert: ticket}
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    workdir = tmp_path_factory.mktemp("partial")
    specs = workdir / "specs"
    specs.mkdir()
    (specs / "short.yaml").write_text(for_stack(SPEC))
    times = [T0 + i * STEP for i in range(HOURS * 60 + 1)]
    series = [
        ('requests_total{code="200"}', [(t, float(100 * i)) for i, t in enumerate(times)]),
        ('requests_total{code="500"}', [(t, float(10 * i)) for i, t in enumerate(times)]),
    ]
    source = workdir / "series.om"
    source.write_text(openmetrics(series))
    create_blocks_from_openmetrics(source, workdir / "data")
    with running(workdir / "data", workdir, STEP) as found:
        yield found.url, specs


def backtest(url: str, specs: Path, *argv: str) -> str:
    parser = argparse.ArgumentParser(prog="rulegen")
    command.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["backtest", str(specs), "--prometheus", url, "--from", str(FROM),
                              "--to", str(T0 + HOURS * 3600), *argv])  # fmt: skip
    out = io.StringIO()
    assert command.run(args, load_catalog([]), out) == 0
    return out.getvalue()


def test_results_are_partial_where_the_history_is_short(server: tuple[str, Path]) -> None:
    rows: list[dict[str, Any]] = json.loads(backtest(*server, "--format", "json"))
    by_severity = {r["rule_labels"]["severity"]: r for r in rows}
    page, ticket = by_severity["critical"], by_severity["warning"]
    # the page tier reads 1h (+ its for and a step) before 01:30: the server has it
    assert page["partial_until"] is None
    assert page["history_from"] is None
    # 10 errors in 110 requests burn a 1 % budget 9x, above 2 % x 24h/1h = 0.48x, firing
    # already before --from and all the way through
    assert page["firing_seconds"] == 30 * 60
    # the ticket tier reads 6 hours of its cascade; the server starts at 00:00
    assert ticket["history_from"] is not None
    assert command.parse_time(ticket["history_from"], "t") <= (T0 + 5 * 60) * 1000
    until = command.parse_time(ticket["partial_until"], "t") // 1000
    assert until > T0 + HOURS * 3600  # every replayed result is partial
    text = backtest(*server)
    assert "  partial: the server's history starts at 2026-01-01T00:0" in text
    assert "results before 2026-01-01T02:00:00Z read less history" in text
