"""``rulegen repair`` broken at every step on a real Prometheus, then run again: it always
finishes the job, and it never changes a sample it does not own.

Why every step: a repair deletes recordings before it writes them back, so a run killed, or
answered HTTP 500, or cut off between the two could lose them for good (it did: a rerun
found "no hole" where a deleted range had no evaluation after it). Here a proxy
(``support/faultproxy.py``) first counts a clean repair's changing requests, then, for every
one of them from the first delete of a recording to the last write, a new hole is made and
the repair is SIGKILLed right after the server applied that request; for every write, it is
also answered HTTP 500, and its connection dropped after the server took it. After each,
the command the error names (or the same command, after a kill) runs again, and:

- every sample of the SLO's own recordings around the hole equals the one recorded before
  the hole was made (what the rule group recorded), the 1-day SLI at the end equals the exact
  ratio of the raw counts, the coverage is 1;
- not one sample of a bystander changed, compared sample by sample with the start: the same
  recordings with one more label (``cluster="b"``, as a central server receives them by
  remote write), another SLO's and another service's recordings, the raw series;
- the probe series is invisible and the journal is gone.

The history: raw counters (0.1% errors, bursts of 5%) and the SLO's recordings backfilled
over a day and 8 hours, a one-minute group; each scenario deletes two evaluations of the
SLO's recordings five minutes after the last one's, and repairs up to two minutes after them.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import rendered_rules
from support.faultproxy import Fault, FaultProxy
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
from support.slo_gap import PAGE_1H, checkout_spec

pytestmark = [pytest.mark.slow, pytest.mark.faults, NEEDS_PROMETHEUS]

STEP, HOUR, DAY = 60, 3600, 86400
T0 = 1_700_000_000 - 1_700_000_000 % DAY
FIRST_HOLE = T0 + DAY  # the first scenario's hole; each next one 5 minutes later
SLOT = 5 * 60
SCENARIOS_MAX = 98
END = FIRST_HOLE + SCENARIOS_MAX * SLOT + HOUR + 10 * 60  # and the last test's hour
PER_MINUTE = 1000
OWN = 'service="shop", slo="checkout"'
EXACT = 1e-9
SPEC = checkout_spec("1m", (PAGE_1H,))  # one page tier: fewer recordings, fewer steps
BYSTANDERS = (
    '{__name__=~"slo:.+", cluster="b"}',
    '{__name__=~"slo:.+", slo="other"}',
    '{__name__=~"slo:.+", service="web"}',
    "http_requests_total",
)


def _errors(t: int) -> int:
    """Errors in the minute ending at ``t``: 0.1%, 5% in every fourth hour."""
    return PER_MINUTE // 20 if (t // HOUR) % 4 == 3 else PER_MINUTE // 1000


def _cumulative() -> dict[int, tuple[int, int]]:
    out, total, bad = {}, 0, 0
    for t in range(T0 - HOUR, END + 1, STEP):
        total, bad = total + PER_MINUTE, bad + _errors(t)
        out[t] = (total, bad)
    return out


CUMULATIVE = _cumulative()


def _exact(at: int) -> float:
    (total, bad), (total0, bad0) = CUMULATIVE[at], CUMULATIVE[at - DAY]
    return (bad - bad0) / (total - total0)


def _raw() -> list[tuple[str, list[tuple[int, float]]]]:
    ok = [(t, float(total - bad)) for t, (total, bad) in CUMULATIVE.items()]
    failed = [(t, float(bad)) for t, (total, bad) in CUMULATIVE.items()]
    return [('http_requests_total{code="200"}', ok), ('http_requests_total{code="500"}', failed)]


def _bystanders(names: list[str], leaves: list[str]) -> list[tuple[str, list[tuple[int, float]]]]:
    """Series no repair of shop/checkout may touch, in blocks (where a delete reaches)."""
    times = range(T0, END + 1, STEP)
    out = []
    for name in leaves:  # read by no other recording: the SLO's rules never see them
        out.append((f'{name}{{{OWN}, cluster="b"}}', [(t, 0.5 + (t // STEP) % 7) for t in times]))
    for index, name in enumerate(names):
        other = [(t, float(index + (t // STEP) % 3)) for t in times]
        out.append((f'{name}{{service="shop", slo="other"}}', other))
        out.append((f'{name}{{service="web", slo="checkout"}}', other))
    return out


@dataclass
class History:
    server: PrometheusServer
    build: Path
    names: list[str]
    bystanders: dict[str, Any]
    own: dict[tuple[tuple[str, str], ...], dict[int, float]]
    next_hole: int = FIRST_HOLE


def _matrix(server: PrometheusServer, selector: str, start: int, end: int) -> dict[Any, Any]:
    """Every raw sample of ``selector`` in ``(start, end]``, by label set (the range is
    closed on Prometheus 2.x, left-open on 3.x: the sample at ``start`` is dropped)."""
    found = server.query(f"{selector}[{end - start}s]", end)["result"]
    return {
        tuple(sorted(s["metric"].items())): {
            int(float(t)): float(v) for t, v in s["values"] if float(t) > start
        }
        for s in found
    }


def _own(server: PrometheusServer, start: int, end: int) -> dict[Any, dict[int, float]]:
    return _matrix(server, f'{{__name__=~"slo:.+", {OWN}, cluster=""}}', start, end)


def _all_bystanders(server: PrometheusServer) -> dict[str, Any]:
    return {s: _matrix(server, s, T0 - 2 * HOUR, END) for s in BYSTANDERS}


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[History]:
    root = tmp_path_factory.mktemp("faults")
    rules = rendered_rules(root / "build", {"specs/shop.yaml": SPEC})
    levels = recording_levels(sorted((rules / "prometheus").glob("*.slo.*.rules.yml")))
    records = [r for level in levels for r in level]
    names = sorted({str(r["record"]) for r in records})
    read = {n for r in records for n in names if re.search(re.escape(n) + r"(?![\w:])", r["expr"])}
    leaves = [n for n in names if n not in read]
    assert leaves, "the SLO has recordings no other recording reads"
    raw = root / "raw.om"
    raw.write_text(openmetrics([*_raw(), *_bystanders(names, leaves)]))
    data = root / "data"
    create_blocks_from_openmetrics(raw, data)
    server = PrometheusServer(data, root, flags=WRITABLE, storage=STORAGE)
    try:
        server.start()
        work = root / "backfill"
        work.mkdir()
        backfill_recordings(server, levels, (T0, END), STEP, work)
        own = _own(server, T0 - STEP, END)
        assert len(own) == len(names)
        yield History(server, root / "build", names, _all_bystanders(server), own)
    finally:
        server.stop()


def _post(server: PrometheusServer, path: str, params: dict[str, str]) -> None:
    import urllib.parse
    import urllib.request

    query = urllib.parse.urlencode(params)
    request = urllib.request.Request(f"{server.url}/api/v1/{path}?{query}", method="POST")
    with urllib.request.urlopen(request, timeout=120) as response:
        assert response.status == 204


def _make_hole(history: History) -> int:
    """Delete two evaluations of the SLO's own recordings (in blocks); the first one's time."""
    hole = history.next_hole
    history.next_hole += SLOT
    assert hole + SLOT <= END - 5 * 60, "more scenarios than the history holds"
    selector = f'{{__name__=~"slo:.+", {OWN}, cluster=""}}'
    _post(history.server, "admin/tsdb/delete_series",
          {"match[]": selector, "start": str(hole), "end": str(hole + STEP)})  # fmt: skip
    _post(history.server, "admin/tsdb/clean_tombstones", {})
    return hole


def _argv(url: str, hole: int) -> list[str]:
    return ["repair", "specs", "--prometheus", url, "--from", str(hole - 10 * 60),
            "--to", str(hole + 3 * STEP)]  # fmt: skip


def _start(argv: list[str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "rulegen", *argv], cwd=cwd, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip


def _run(argv: list[str], cwd: Path) -> tuple[int, str, str]:
    proc = _start(argv, cwd)
    out, err = proc.communicate(timeout=300)
    return proc.returncode, out, err


def _check(history: History, hole: int, what: str) -> None:
    """Everything the module docstring promises after a scenario."""
    server, to = history.server, hole + 3 * STEP
    before = {k: {t: v for t, v in s.items() if hole - 10 * 60 < t <= to + 10 * 60}
              for k, s in history.own.items()}  # fmt: skip
    after = _own(server, hole - 10 * 60, to + 10 * 60)
    assert after.keys() == before.keys(), what
    for key, samples in before.items():
        got = after[key]
        assert got.keys() == samples.keys(), f"{what}: {dict(key)['__name__']}"
        for t, v in samples.items():
            assert got[t] == pytest.approx(v, rel=EXACT, abs=1e-15), (what, dict(key), t)
    sli = server.query(f'slo:sli_error:ratio_rate1d{{{OWN}, cluster=""}}', to)["result"]
    assert float(sli[0]["value"][1]) == pytest.approx(_exact(to), rel=EXACT), what
    coverage = server.query(f'slo:sli_coverage:ratio{{{OWN}, cluster=""}}', to)["result"]
    assert float(coverage[0]["value"][1]) == 1, what
    assert _all_bystanders(server) == history.bystanders, f"{what}: a bystander changed"
    probe = server.query("count_over_time(rulegen_repair_probe[3650d])", END + DAY)["result"]
    assert probe == [], what
    assert not (history.build / ".rulegen-repair" / "shop.checkout").exists(), what


def _rerun_from_message(err: str) -> list[str]:
    """The command a failure names to finish the repair (``run `…` to finish``)."""
    found = re.search(r"run `(rulegen repair [^`]+)` to finish the repair\n$", err)
    assert found, err
    words = shlex.split(found.group(1))
    return words[1:]


@pytest.fixture(scope="module")
def steps(history: History) -> list[str]:
    """The changing requests of a clean repair of a hole, in order (through the proxy)."""
    hole = _make_hole(history)
    with FaultProxy(history.server.url) as proxy:
        proxy.arm(None)
        code, out, err = _run(_argv(proxy.url, hole), history.build)
        assert (code, err) == (0, ""), out + err
        seen = proxy.seen
    _check(history, hole, "a clean repair")
    return seen


def test_the_repair_changes_data_in_rule_order_after_its_probe(steps: list[str]) -> None:
    probe = ["/api/v1/admin/tsdb/delete_series", "/api/v1/write", "/api/v1/write",
             "/api/v1/admin/tsdb/delete_series", "/api/v1/admin/tsdb/clean_tombstones"]  # fmt: skip
    assert steps[: len(probe)] == probe
    rule = ["/api/v1/admin/tsdb/delete_series", "/api/v1/admin/tsdb/clean_tombstones",
            "/api/v1/write"]  # fmt: skip
    rest = steps[len(probe) :]
    assert len(rest) % 3 == 0
    assert [rest[i : i + 3] for i in range(0, len(rest), 3)] == [rule] * (len(rest) // 3)


def _faults(steps: list[str]) -> list[tuple[str, int]]:
    first = 5  # after the probe: the first delete of a recording
    kills = [("kill", i) for i in range(first, len(steps))]
    writes = [i for i in range(first, len(steps)) if steps[i] == "/api/v1/write"]
    return [*kills, *(("500", i) for i in writes), *(("drop", i) for i in writes)]


def test_every_fault_at_every_step_is_finished_by_a_rerun(
    history: History, steps: list[str]
) -> None:
    faults = _faults(steps)
    assert len(faults) <= SCENARIOS_MAX
    with FaultProxy(history.server.url) as proxy:
        for kind, index in faults:
            what = f"{kind} at step {index} ({steps[index]})"
            hole = _make_hole(history)
            argv = _argv(proxy.url, hole)
            proxy.arm(Fault(kind, index))
            proc = _start(argv, history.build)
            proxy.state.fault.pid = proc.pid  # type: ignore[union-attr]
            out, err = proc.communicate(timeout=300)
            assert proxy.fired, f"{what}: the fault did not happen\n{out}{err}"
            if kind == "kill":
                assert proc.returncode == -9, what
                again = argv
            else:
                assert proc.returncode == 2, f"{what}\n{out}{err}"
                assert err.count("\n") == 1, err
                assert "may be deleted, and the journal" in err, err
                again = _rerun_from_message(err)
            proxy.arm(None)
            code, out, err = _run(again, history.build)
            assert code == 0, f"{what}: the rerun failed\n{out}{err}"
            assert "an earlier run left unfinished" in out, f"{what}\n{out}"
            _check(history, hole, what)


def test_a_rerun_over_another_range_finishes_the_interrupted_repair_first(
    history: History, steps: list[str]
) -> None:
    # killed right after the delete of a recording half-way; the rerun asks for a range that
    # ends an hour later (and starts after the hole): the journal is finished all the same
    middle = 5 + 3 * ((len(steps) - 5) // 6)
    assert steps[middle] == "/api/v1/admin/tsdb/delete_series"
    hole = _make_hole(history)
    with FaultProxy(history.server.url) as proxy:
        proxy.arm(Fault("kill", middle))
        proc = _start(_argv(proxy.url, hole), history.build)
        proxy.state.fault.pid = proc.pid  # type: ignore[union-attr]
        proc.communicate(timeout=300)
        assert (proxy.fired, proc.returncode) == (True, -9)
    later = ["repair", "specs", "--prometheus", history.server.url, "--from",
             str(hole + 5 * STEP), "--to", str(hole + HOUR)]  # fmt: skip
    code, out, err = _run(later, history.build)
    assert code == 0, out + err
    assert "an earlier run left unfinished" in out
    _check(history, hole, "a rerun over a later range")
    history.next_hole = hole + HOUR + SLOT  # the rerun's range is not a new scenario's
