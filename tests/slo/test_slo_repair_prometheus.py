"""``rulegen repair`` on a real Prometheus: a 1-hour hole during an error burst (in the rule
evaluations, or in the raw scrapes too: Prometheus down), found, deleted and re-recorded
from the raw series.

Why a real Prometheus: the repair deletes through the admin API and writes through the
remote-write receiver with an out-of-order window, and only the real server says whether a
rewritten sample is read (tombstones, out-of-order head). The history is built as in
``test_slo_gaps_prometheus.py``: raw counters backfilled, the SLO's recordings backfilled
level by level before and after the hole, so no evaluation happens in it. The SLO's window
is 1 day to keep the history short; the rules are those of 30 days, one level shorter.
"""

from __future__ import annotations

import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ON_PROMETHEUS_2, rendered_rules, run_rulegen, write_tree
from support.prometheus import (
    NEEDS_PROMETHEUS,
    STORAGE,
    WRITABLE,
    PrometheusServer,
    backfill_recordings,
    create_blocks_from_openmetrics,
    openmetrics,
    recording_levels,
)
from support.slo_gap import BURST, DAY, END, GAP, HOUR, OWN, PER_MINUTE, SPEC, STEP, T0

pytestmark = [pytest.mark.slow, NEEDS_PROMETHEUS]

# The timeline and the SLO (support/slo_gap.py); this test's burst has 20% errors. The server takes
# writes (support.prometheus WRITABLE, STORAGE: the history is from 2023, the out-of-order
# window reaches back to it from today).

EXACT = 1e-9  # a repaired SLI is the exact count's ratio, to float rounding (on 2.42 and 3.5)


def _counters(
    scraped: bool = True,
) -> tuple[list[tuple[str, list[tuple[int, float]]]], dict[int, tuple[int, int]]]:
    """The raw counters (not scraped in the hole unless ``scraped``: Prometheus down, the
    counters counting on), and (total, errors) counted up to every minute."""
    ok: list[tuple[int, float]] = []
    failed: list[tuple[int, float]] = []
    good = bad = 0
    cumulative = {}
    for t in range(T0 - HOUR, END + 1, STEP):
        errors = PER_MINUTE // 5 if BURST[0] < t <= BURST[1] else PER_MINUTE // 1000
        good, bad = good + PER_MINUTE - errors, bad + errors
        cumulative[t] = (good + bad, bad)
        if scraped or not GAP[0] <= t < GAP[1]:
            ok.append((t, float(good)))
            failed.append((t, float(bad)))
    series = [('http_requests_total{code="200"}', ok), ('http_requests_total{code="500"}', failed)]
    return series, cumulative


def _exact(at: int) -> float:
    cumulative = _counters()[1]
    total = cumulative[at][0] - cumulative[at - DAY][0]
    return (cumulative[at][1] - cumulative[at - DAY][1]) / total


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PrometheusServer, Path]]:
    """A Prometheus (admin API, remote-write receiver, out-of-order window) with the raw
    counters and the SLO's recordings, none in the hole; the folder of the spec."""
    yield from _history(tmp_path_factory.mktemp("repair"), scraped=True)


@pytest.fixture(scope="module")
def down(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PrometheusServer, Path]]:
    """The same with Prometheus down in the hole: no raw sample there either."""
    yield from _history(tmp_path_factory.mktemp("down"), scraped=False)


def _history(root: Path, scraped: bool) -> Iterator[tuple[PrometheusServer, Path]]:
    rules = rendered_rules(root / "build", {"specs/shop.yaml": SPEC})
    raw = root / "raw.om"
    raw.write_text(openmetrics(_counters(scraped)[0]))
    data = root / "data"
    create_blocks_from_openmetrics(raw, data)
    levels = recording_levels(sorted((rules / "prometheus").glob("*.slo.*.rules.yml")))
    server = PrometheusServer(data, root, flags=WRITABLE, storage=STORAGE)
    try:
        server.start()
        for index, span in enumerate(((T0, GAP[0] - STEP), (GAP[1], END))):
            work = root / f"span{index}"
            work.mkdir()
            backfill_recordings(server, levels, span, STEP, work)
        yield server, root / "build"
    finally:
        server.stop()


def _value(server: PrometheusServer, expr: str, at: int) -> float | None:
    result = server.query(expr, at)["result"]
    assert len(result) <= 1, result
    return float(result[0]["value"][1]) if result else None


def _range(server: PrometheusServer, expr: str) -> dict[int, float]:
    """``expr`` at every minute from the hole's start to the end (all of them present)."""
    params = {"query": expr, "start": str(GAP[0]), "end": str(END), "step": str(STEP)}
    result = server.api("query_range", params)["result"]
    assert len(result) == 1, result
    values = {int(t): float(v) for t, v in result[0]["values"]}
    assert len(values) == (END - GAP[0]) // STEP + 1
    return values


def _repair(server: PrometheusServer, build: Path, *extra: str) -> tuple[int, str, str]:
    found = run_rulegen(
        "repair", "specs", "--prometheus", server.url, "--from", str(T0), "--to", str(END),
        *extra, cwd=build,
    )  # fmt: skip
    return found.code, found.out, found.err


def _state(server: PrometheusServer) -> tuple[float | None, float | None, int]:
    """The 1d SLI and coverage at the end, and how many base samples the hole holds."""
    sli = _value(server, f"slo:sli_error:ratio_rate1d{{{OWN}}}", END)
    coverage = _value(server, f"slo:sli_coverage:ratio{{{OWN}}}", END)
    held = _value(server, f"count_over_time(slo:sli_total:increase5m{{{OWN}}}[1h])", GAP[1] - 1)
    return sli, coverage, int(held or 0)


def test_dry_run_prints_the_hole_and_writes_nothing(
    history: tuple[PrometheusServer, Path],
) -> None:
    server, build = history
    before = _state(server)
    code, out, err = _repair(server, build, "--dry-run")
    assert (code, err) == (0, "")
    assert "shop/checkout: hole from 2023-11-15T02:00:00Z to 2023-11-15T02:59:00Z (60 " in out
    assert "would rewrite" in out
    assert _state(server) == before
    assert before[2] == 0


@pytest.mark.parametrize(
    ("flags", "storage", "needed"),
    [
        ((), STORAGE, "--web.enable-admin-api"),
        (WRITABLE[:1], STORAGE, "--web.enable-remote-write-receiver"),
        (WRITABLE, None, "out_of_order_time_window"),
    ],
    ids=["no-admin-api", "no-receiver", "no-out-of-order-window"],
)
def test_a_server_that_cannot_take_the_repair_is_one_line_and_exit_2(
    history: tuple[PrometheusServer, Path],
    flags: tuple[str, ...],
    storage: dict[str, object] | None,
    needed: str,
) -> None:
    server, build = history
    before = _state(server)
    config = server.config.read_text()
    server.stop()
    server.flags = flags
    if storage is None:
        server.config.write_text(config.split("storage:")[0])
    try:
        server.start()
        code, _, err = _repair(server, build)
        assert _state(server) == before
        assert _value(server, "count(rulegen_repair_probe)", END) is None  # probe deleted
    finally:
        server.stop()
        server.flags = WRITABLE
        server.config.write_text(config)
        server.start()
    assert code == 2
    assert err.count("\n") == 1, err
    assert needed in err
    assert err.startswith("rulegen: error: ")
    assert err.rstrip().endswith("nothing written")


def test_a_bad_url_is_one_line_and_exit_2(history: tuple[PrometheusServer, Path]) -> None:
    _, build = history
    found = run_rulegen("repair", "specs", "--prometheus", "localhost:9090", cwd=build)
    assert found.code == 2
    assert found.err == (
        "rulegen: error: --prometheus localhost:9090: not a URL (expected http://host:9090)\n"
    )


def test_repair_restores_the_sli_and_the_coverage(history: tuple[PrometheusServer, Path]) -> None:
    server, build = history
    exact = _exact(END)
    sli, coverage, _ = _state(server)
    assert sli is not None
    assert coverage is not None
    assert sli / exact - 1 < -0.2  # the burst's errors in the hole are missing
    assert coverage < 1
    code, out, err = _repair(server, build)
    assert (code, err) == (0, ""), out + err
    sli, coverage, held = _state(server)
    assert sli is not None
    assert abs(sli / exact - 1) <= EXACT, f"{sli} vs exact {exact}"
    assert coverage == 1
    assert held == 60
    assert "wrote 2,904 samples" in out  # 24 recordings x 121 evaluations
    # every minute from the hole on: the SLI exact, the window whole
    sli_range = _range(server, f"slo:sli_error:ratio_rate1d{{{OWN}}}")
    assert all(abs(v / _exact(t) - 1) <= EXACT for t, v in sli_range.items())
    assert set(_range(server, f"slo:sli_coverage:ratio{{{OWN}}}").values()) == {1.0}
    # nothing left to repair
    code, out, err = _repair(server, build)
    assert (code, err) == (0, "")
    assert "shop/checkout: no hole" in out


def test_repair_bridges_a_raw_scrape_gap(down: tuple[PrometheusServer, Path]) -> None:
    server, build = down
    exact = _exact(END)
    sli, coverage, _ = _state(server)
    assert sli is not None
    assert coverage is not None
    assert sli / exact - 1 < -0.2
    assert coverage < 1
    code, out, err = _repair(server, build)
    assert (code, err) == (0, ""), out + err
    assert (
        "shop/checkout: no raw sample from 2023-11-15T01:59:00Z to 2023-11-15T03:00:00Z "
        "(Prometheus down): counters bridged across it\n"
    ) in out
    sli, coverage, held = _state(server)
    assert sli is not None
    assert abs(sli / exact - 1) <= EXACT, f"{sli} vs exact {exact}"
    assert coverage == 1
    assert held == 60
    sli_range = _range(server, f"slo:sli_error:ratio_rate1d{{{OWN}}}")
    worst = max((abs(v / _exact(t) - 1) for t, v in sli_range.items()))
    assert worst <= EXACT, worst


def test_a_repair_cut_short_is_found_again(down: tuple[PrometheusServer, Path]) -> None:
    # a repair that stopped after the base level leaves the group's last recording missing
    server, build = down
    hole = (T0 + 6 * HOUR, T0 + 6 * HOUR + 10 * 60 - STEP)  # in blocks, not the head
    _delete(server, f"slo:objective:ratio{{{OWN}}}", *hole)
    # the hole, both ends: 10 evaluations in ``[9m59s]`` (closed on 2.x, left-open on 3.x)
    objective = f"count_over_time(slo:objective:ratio{{{OWN}}}[9m59s])"
    assert _value(server, objective, hole[1]) is None
    found = run_rulegen(
        "repair", "specs", "--prometheus", server.url, "--to", str(T0 + DAY + HOUR), cwd=build
    )  # before the range the repair above wrote
    assert (found.code, found.err) == (0, ""), found.out + found.err
    assert "shop/checkout: hole from 2023-11-14T06:00:00Z to 2023-11-14T06:09:00Z (10 " in found.out
    assert _value(server, objective, hole[1]) == 10
    # another hole, earlier: its range reaches the samples the repairs above wrote out of
    # order, which Prometheus 2.42 does not delete; they keep their (repaired) values
    earlier = (hole[0] - 4 * HOUR, hole[1] - 4 * HOUR)
    _delete(server, f"slo:objective:ratio{{{OWN}}}", *earlier)
    code, out, err = _repair(server, build)
    assert code == 0, out + err
    assert "shop/checkout: hole from 2023-11-14T02:00:00Z to 2023-11-14T02:09:00Z (10 " in out
    assert err.startswith("rulegen: warning: shop/checkout: ")
    assert "samples of the range could not be deleted" in err
    assert _value(server, objective, earlier[1]) == 10
    assert _value(server, f"slo:sli_coverage:ratio{{{OWN}}}", END) == 1
    assert _value(server, f"slo:sli_error:ratio_rate1d{{{OWN}}}", END) == pytest.approx(_exact(END))


def _delete(
    server: PrometheusServer, selector: str, start: int, end: int, *, clean: bool = True
) -> None:
    """Delete samples as an operator would, tombstones cleaned after (``clean``): Prometheus
    3.5 panics reading a block whose tombstones were not (docs/compatibility.md)."""
    query = urllib.parse.urlencode({"match[]": selector, "start": start, "end": end})
    _post(server, f"admin/tsdb/delete_series?{query}")
    if clean:
        _post(server, "admin/tsdb/clean_tombstones")


def _post(server: PrometheusServer, path: str) -> None:
    request = urllib.request.Request(f"{server.url}/api/v1/{path}", method="POST")
    with urllib.request.urlopen(request, timeout=120) as response:
        assert response.status == 204


def test_missing_evaluations_up_to_the_end_are_a_hole_where_raw_data_is(
    history: tuple[PrometheusServer, Path],
) -> None:
    # what a repair killed after its deletes leaves without its journal: the recordings gone
    # from a point up to --to, no evaluation after it in the range asked for
    server, build = history
    start, to = T0 + 16 * HOUR, T0 + 16 * HOUR + 20 * 60
    _delete(server, f'{{__name__=~"slo:.*", {OWN}}}', start, to)
    # the evaluations in (start, to]: 20 in ``[19m59s]`` (closed on 2.x, left-open on 3.x)
    objective = f"count_over_time(slo:objective:ratio{{{OWN}}}[19m59s])"
    assert _value(server, objective, to) is None
    found = run_rulegen(
        "repair", "specs", "--prometheus", server.url, "--from", str(start - HOUR),
        "--to", str(to), cwd=build,
    )  # fmt: skip
    assert (found.code, found.err) == (0, ""), found.out + found.err
    assert "shop/checkout: hole from 2023-11-14T16:00:00Z to 2023-11-14T16:20:00Z (21 " in found.out
    assert _value(server, objective, to) == 20
    assert not (build / ".rulegen-repair" / "shop.checkout").exists()  # the journal is gone


def test_a_hole_without_raw_data_is_one_line_and_exit_2(
    history: tuple[PrometheusServer, Path],
) -> None:
    # last of the tests on ``history``: a new hole, 10 evaluations, where the raw series were
    # lost too (deleted here through the admin API; Prometheus 2.42 does not delete samples
    # of its out-of-order head, so the hole is before the range the repair above wrote)
    server, build = history
    hole = (T0 + 12 * HOUR, T0 + 12 * HOUR + 10 * 60 - STEP)  # in blocks, not the head
    _delete(server, f'{{__name__=~"slo:.*", {OWN}}}', *hole, clean=False)
    _delete(server, "http_requests_total", hole[0] - 10 * 60, hole[1] + 10 * 60, clean=False)
    if not ON_PROMETHEUS_2:  # 3.5 crashes reading the blocks until their tombstones go
        code, out, err = _repair(server, build)
        assert code == 2
        assert err.startswith(f"rulegen: error: Prometheus at {server.url} rejected the query")
        assert "runtime error: index out of range" in err
        assert err.endswith("until POST /api/v1/admin/tsdb/clean_tombstones)\n")
        _post(server, "admin/tsdb/clean_tombstones")
    before = _state(server)
    code, out, err = _repair(server, build)
    assert code == 2
    assert "shop/checkout: hole from 2023-11-14T12:00:00Z to 2023-11-14T12:09:00Z (10 " in out
    assert err == (
        "rulegen: error: shop/checkout: no raw data for the hole from 2023-11-14T12:00:00Z to "
        "2023-11-14T12:09:00Z (slo:sli_total:increase5m reads nothing there: Prometheus did "
        "not scrape the raw series either); nothing written\n"
    )
    assert _state(server) == before


def test_a_second_repair_on_the_same_journal_folder_is_refused(tmp_path: Path) -> None:
    # a running repair holds an flock on the journal folder (released by the kernel however
    # it ends): another is one line, exit 2, before it reads a spec or the server
    import fcntl
    import os

    root = write_tree(tmp_path, {"specs/shop.yaml": SPEC})
    (root / ".rulegen-repair").mkdir()
    fd = os.open(root / ".rulegen-repair", os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        found = run_rulegen("repair", "--prometheus", "http://127.0.0.1:1", cwd=root)
        assert (found.code, found.out) == (2, "")
        assert found.err == (
            "rulegen: error: .rulegen-repair: another rulegen repair is running with this "
            "journal folder; run this one when it has ended; nothing written\n"
        )
        dry = run_rulegen("repair", "--prometheus", "http://127.0.0.1:1", "--dry-run", cwd=root)
        assert "cannot reach Prometheus at http://127.0.0.1:1" in dry.err  # not locked out
    finally:
        os.close(fd)
    after = run_rulegen("repair", "--prometheus", "http://127.0.0.1:1", cwd=root)
    assert "cannot reach Prometheus at http://127.0.0.1:1" in after.err  # the lock went with it
