"""``rulegen backtest`` on the command line: usage errors are one line and exit 2, a missing
matplotlib exits 3; and the small helpers the command is made of.

The process tests run the installed ``rulegen`` (``cli.py`` wires ``backtest`` in); the
replay itself is proven against promtool in ``test_backtest_promtool``.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from conftest import CliResult, run_rulegen, write_tree
from support.prometheus import free_port

from rulegen.backtest import plot
from rulegen.backtest.command import ProgressBar, parse_time
from rulegen.backtest.query import chunks, grid, selectors
from rulegen.backtest.report import rfc3339, write_plots
from rulegen.backtest.session import alert_labels, query_times
from rulegen.backtest.targets import Report, Target
from rulegen.errors import ToolNotFoundError, UsageError

SPEC = """\
version: 1
service: cli
alerts:
  - signal: requests_waiting
    threshold: 10
    severity: warning
"""


@pytest.fixture
def specs(tmp_path: Path) -> Path:
    return write_tree(tmp_path, {"specs/cli.yaml": SPEC}) / "specs"


def backtest(specs: Path, *argv: str, env: dict[str, str] | None = None) -> CliResult:
    return run_rulegen("backtest", str(specs), *argv, cwd=specs.parent, env=env)


def dead_url() -> str:
    return f"http://127.0.0.1:{free_port()}"


def one_line_error(result: CliResult, code: int = 2) -> str:
    """The single stderr line of a failed run (no traceback, nothing on stdout)."""
    assert result.code == code, result.err
    assert result.out == ""
    lines = result.err.splitlines()
    assert len(lines) == 1, result.err
    assert lines[0].startswith("rulegen: error: ")
    return lines[0]


BAD_ARGS = [
    # (case, arguments, the error line)
    ("bad --from", ["--from", "last week", "--to", "1767225600"],
     "rulegen: error: --from 'last week': not a time; use RFC3339 "
     "(2026-01-01T00:00:00Z), Unix seconds, or relative: now, -7d (or now-7d), today, "
     "yesterday (00:00 UTC)"),
    ("no zone", ["--from", "2026-01-01T00:00:00", "--to", "1767225600"],
     "rulegen: error: --from '2026-01-01T00:00:00': not a time; use RFC3339 "
     "(2026-01-01T00:00:00Z), Unix seconds, or relative: now, -7d (or now-7d), today, "
     "yesterday (00:00 UTC)"),
    ("from after to", ["--from", "2026-01-02T00:00:00Z", "--to", "2026-01-01T00:00:00Z"],
     "rulegen: error: --from 2026-01-02T00:00:00Z must be before --to 2026-01-01T00:00:00Z"),
    ("bad --step", ["--from", "0", "--to", "60", "--step", "fast"],
     "rulegen: error: --step: invalid duration 'fast' (expected Prometheus syntax like 30s, "
     "5m, 1h)"),
    ("bad --suggest", ["--from", "0", "--to", "60", "--suggest", "-1"],
     "rulegen: error: --suggest '-1': expected a number of firings >= 0"),
    ("--parallel 0", ["--from", "0", "--to", "60", "--parallel", "0"],
     "rulegen: error: backtest: argument --parallel: expected a number of queries from 1 to "
     "16, got '0'"),
    ("--parallel many", ["--from", "0", "--to", "60", "--parallel", "many"],
     "rulegen: error: backtest: argument --parallel: expected a number of queries from 1 to "
     "16, got 'many'"),
    ("unknown --alert", ["--from", "0", "--to", "60", "--alert", "Nope"],
     "rulegen: error: --alert Nope: no such alert in the specs (alerts: RequestQueueBacklog)"),
    ("--plot-format alone", ["--from", "0", "--to", "60", "--plot-format", "svg"],
     "rulegen: error: --plot-format svg needs --plot DIR"),
    ("--plot-format pdf", ["--from", "0", "--to", "60", "--plot", "p", "--plot-format", "pdf"],
     "rulegen: error: backtest: argument --plot-format: invalid choice: 'pdf' (choose from "
     "'png', 'svg')"),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "line"), [c[1:] for c in BAD_ARGS], ids=[c[0] for c in BAD_ARGS])
@pytest.mark.slow
def test_usage_errors_are_one_line(specs: Path, argv: list[str], line: str) -> None:
    assert one_line_error(backtest(specs, "--prometheus", dead_url(), *argv)) == line


@pytest.mark.slow
def test_unreachable_prometheus_is_one_line(specs: Path) -> None:
    url = dead_url()
    result = backtest(specs, "--prometheus", url, "--from", "0", "--to", "3600")
    line = one_line_error(result)
    assert line == f"rulegen: error: cannot reach Prometheus at {url}: Connection refused"


@pytest.mark.slow
def test_not_a_url(specs: Path) -> None:
    result = backtest(specs, "--prometheus", "localhost:9090", "--from", "0", "--to", "60")
    line = one_line_error(result)
    assert (
        line == "rulegen: error: --prometheus localhost:9090: not a URL (expected http://host:9090)"
    )


@pytest.mark.slow
def test_missing_required_flag(specs: Path) -> None:
    line = one_line_error(backtest(specs, "--from", "0", "--to", "60"))
    assert "--prometheus" in line


@pytest.mark.slow
def test_missing_matplotlib_exits_3(specs: Path, tmp_path: Path) -> None:
    """``--plot`` without matplotlib: exit 3 with the install line, before any query."""
    shim = write_tree(tmp_path / "shim", {"matplotlib/__init__.py": "raise ImportError('no')\n"})
    path = os.pathsep.join(p for p in (str(shim), os.environ.get("PYTHONPATH", "")) if p)
    result = backtest(
        specs, "--prometheus", dead_url(), "--from", "0", "--to", "60",
        "--plot", str(tmp_path / "png"), env={"PYTHONPATH": path},
    )  # fmt: skip
    line = one_line_error(result, code=3)
    assert line == (
        "rulegen: error: --plot needs matplotlib: pip install 'rulegen[plot]' "
        "(or pip install matplotlib)"
    )
    assert not (tmp_path / "png").exists()


def test_require_matplotlib_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(__import__("sys").modules, "matplotlib", None)
    with pytest.raises(ToolNotFoundError, match="pip install 'rulegen\\[plot\\]'"):
        plot.require_matplotlib()


# --- helpers ---------------------------------------------------------------------------------


TIMES = [
    ("1767225600", 1767225600000),
    ("1767225600.5", 1767225600500),
    ("2026-01-01T00:00:00Z", 1767225600000),
    ("2026-01-01T01:00:00+01:00", 1767225600000),
    ("2026-01-01T00:00:00.250Z", 1767225600250),
]


@pytest.mark.parametrize(("text", "ms"), TIMES)
def test_parse_time(text: str, ms: int) -> None:
    assert parse_time(text, "--from") == ms


# 2026-01-08T12:30:00Z, the present the relative times below are read against
NOW = 1767875400.0
RELATIVE = [
    ("now", 1767875400000),
    ("-7d", 1767875400000 - 7 * 86_400_000),
    ("now-7d", 1767875400000 - 7 * 86_400_000),
    ("-1h30m", 1767875400000 - 5_400_000),
    ("today", 1767830400000),  # 2026-01-08T00:00:00Z
    ("yesterday", 1767744000000),  # 2026-01-07T00:00:00Z
]


@pytest.mark.parametrize(("text", "ms"), RELATIVE, ids=[t for t, _ in RELATIVE])
def test_parse_time_reads_relative_times_against_one_present(text: str, ms: int) -> None:
    assert parse_time(text, "--from", NOW) == ms


@pytest.mark.parametrize(
    "text", ["", "now-", "-7x", "-5", "2026-01-01", "nan", "2026-13-01T00:00:00Z", "tomorrow"]
)
def test_parse_time_refuses(text: str) -> None:
    with pytest.raises(UsageError, match="not a time"):
        parse_time(text, "--from")


def test_rfc3339() -> None:
    assert rfc3339(1767225600000) == "2026-01-01T00:00:00Z"
    assert rfc3339(1767225600250) == "2026-01-01T00:00:00.250Z"


def test_grid_and_lead_in() -> None:
    """Evaluations on multiples of the step; the lead-in is max(for, keep_firing_for) + a step."""
    assert grid(1001, 61_000, 15_000) == [15_000, 30_000, 45_000, 60_000]
    target = Target("A", "g", "x > 1", for_ms=60_000, step_ms=15_000, keep_firing_for_ms=90_000)
    times = query_times(target, (1_000_000, 1_200_000))
    assert times[0] == 885_000  # 1_000_000 - 105_000, down to a multiple of the step
    assert times[-1] == 1_200_000 - 1_200_000 % 15_000
    assert query_times(target, (1_000_000, 1_200_000), 60_000)[0] == 840_000
    assert query_times(target, (900_000, 1_200_000))[0] == 795_000


def test_chunks() -> None:
    times = list(range(25))
    assert chunks(times, 10) == [(0, 9), (10, 19), (20, 24)]
    assert chunks(list(range(11_000))) == [(0, 10_999)]
    assert chunks(list(range(11_001))) == [(0, 10_999), (11_000, 11_000)]


def test_selectors_name_what_an_expression_reads() -> None:
    expr = 'max by (i) (rate(a{x="1"}[5m] offset 1h)) / on (i) b > 0.9 and c:rec{service="s"}'
    assert selectors(expr) == [("a", 'a{x="1"}'), ("b", "b{}"), ("c:rec", 'c:rec{service="s"}')]


def test_alert_labels() -> None:
    """Prometheus's order: series labels without __name__, then the rule's (templates
    expanded, an empty value removes the label)."""
    series = (("__name__", "m"), ("instance", "a"), ("severity", "low"), ("team", "x"))
    rule = (("severity", "critical"), ("team", ""), ("where", '{{ "{{" }} {{ $labels.instance }}'))
    assert alert_labels(series, rule, 1.0) == (
        ("instance", "a"), ("severity", "critical"), ("where", "{{ a"),
    )  # fmt: skip


def test_progress_bar() -> None:
    stream = io.StringIO()
    bar = ProgressBar(4, stream, width=8)
    bar.advance()
    bar.advance()
    bar.finish()
    assert stream.getvalue() == (
        "\rbacktest [##......] 1/4 queries\rbacktest [####....] 2/4 queries\n"
    )


def test_plot_names_are_unique(tmp_path: Path) -> None:
    """Two rules of one name in one group (an SLO's tiers) get numbered files."""
    reports = [
        Report(Target(name, group, "x > 1", 0, 15_000, labels), (0, 60_000), 15_000,
               [0, 15_000, 30_000, 45_000, 60_000], {}, {})
        for name, group, labels in [
            ("Burn", "slo", (("severity", "critical"),)),
            ("Burn", "slo", (("severity", "warning"),)),
            ("Disk", "a", ()), ("Disk", "b", ()), ("Only", "a", ()),
        ]
    ]  # fmt: skip
    written = write_plots(reports, tmp_path)
    assert [p.name for p in written] == [
        "slo.Burn.1.png", "slo.Burn.2.png", "a.Disk.png", "b.Disk.png", "Only.png",
    ]  # fmt: skip
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in written)


def test_plots_replace_only_plots_rulegen_wrote(tmp_path: Path) -> None:
    """A second run replaces its own PNGs; a file of the user's of the same name is refused
    before any plot is written."""
    report = Report(
        Target("Disk", "a", "x > 1", 0, 15_000, ()), (0, 60_000), 15_000,
        [0, 15_000, 30_000, 45_000, 60_000], {}, {},
    )  # fmt: skip
    first = write_plots([report], tmp_path)
    assert plot.written_by_rulegen(first[0])
    assert write_plots([report], tmp_path) == first
    (tmp_path / "Disk.png").write_bytes(b"\x89PNG\r\n\x1a\nmine")
    with pytest.raises(UsageError, match="Disk.png was not written by rulegen; refusing"):
        write_plots([report], tmp_path)
    assert (tmp_path / "Disk.png").read_bytes() == b"\x89PNG\r\n\x1a\nmine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Disk.png"]
