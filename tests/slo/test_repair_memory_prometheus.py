"""``rulegen repair``'s memory does not grow with the span it scans, and a span beyond its
limit is one line: on a real Prometheus, a 10-second SLO group.

Why: the hole scan reads one point per evaluation instant of the span; it used to keep all of
them, so ``--from 1970-01-01T00:00:00Z`` on a one-minute SLO took 2.94 GB (a 10-second group
six times that). The peak resident memory of the rulegen process is read from the kernel
(``getrusage`` of a wrapper's only child), for a span of an hour and for a span of 110 days
(950,400 evaluations, just under the limit), in the same test: the difference is what the span
costs. No timing is asserted.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import write_tree
from support.prometheus import (
    NEEDS_PROMETHEUS,
    STORAGE,
    WRITABLE,
    PrometheusServer,
    create_blocks_from_openmetrics,
    openmetrics,
)
from support.slo_gap import PAGE_1H, checkout_spec

pytestmark = [pytest.mark.slow, NEEDS_PROMETHEUS]

STEP = 10
END = 1_700_000_000 - 1_700_000_000 % 3600
DAY = 86400
SPEC = checkout_spec("10s", (PAGE_1H,))  # one page tier: fewer recordings, fewer steps
# What a span of 950,400 evaluations may add to the peak: the old scan's list of slots took
# about 90 MB there; the scan that streams keeps one range query's answer (10,000 points).
SPAN_COST_MAX_KB = 25_000
WRAPPER = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
print(json.dumps([done.returncode, done.stdout, done.stderr,
                  resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss]))
""".replace("import resource", "import json, resource")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PrometheusServer, Path]]:
    """A Prometheus with a day of raw counters at 10 s and no recording: nothing to repair,
    every slot of the span read."""
    root = tmp_path_factory.mktemp("memory")
    build = write_tree(root / "build", {"specs/shop.yaml": SPEC})
    times = range(END - DAY, END + 1, STEP)
    raw = root / "raw.om"
    raw.write_text(openmetrics([
        ('http_requests_total{code="200"}', [(t, float(t - END + DAY)) for t in times]),
        ('http_requests_total{code="500"}', [(t, float((t - END + DAY) // 1000)) for t in times]),
    ]))  # fmt: skip
    create_blocks_from_openmetrics(raw, root / "data")
    prometheus = PrometheusServer(
        root / "data", root, interval=STEP, flags=WRITABLE, storage=STORAGE
    )
    try:
        prometheus.start()
        yield prometheus, build
    finally:
        prometheus.stop()


def _repair(
    server: PrometheusServer, build: Path, start: int, *extra: str
) -> tuple[int, str, str, int]:
    """``rulegen repair`` from ``start`` to the end: exit code, stdout, stderr, peak RSS (KiB)."""
    argv = [sys.executable, "-m", "rulegen", "repair", "specs", "--prometheus", server.url,
            "--from", str(start), "--to", str(END), *extra]  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c", WRAPPER, *argv], cwd=build, capture_output=True, text=True,
        check=True, timeout=600,
    )  # fmt: skip
    code, out, err, peak = json.loads(done.stdout)
    return code, out, err, peak


@pytest.mark.parametrize("extra", [("--dry-run",), ()], ids=["dry-run", "repair"])
def test_the_scan_of_a_long_span_keeps_memory_flat(
    server: tuple[PrometheusServer, Path], extra: tuple[str, ...]
) -> None:
    prometheus, build = server
    short = _repair(prometheus, build, END - 3600, *extra)
    assert short[:3] == (0, "shop/checkout: no hole from 2023-11-14T21:00:00Z to "
                            "2023-11-14T22:00:00Z\n", ""), short  # fmt: skip
    long = _repair(prometheus, build, END - 110 * DAY, *extra)
    assert long[:3] == (0, "shop/checkout: no hole from 2023-07-27T22:00:00Z to "
                           "2023-11-14T22:00:00Z\n", ""), long  # fmt: skip
    assert long[3] - short[3] < SPAN_COST_MAX_KB, (short[3], long[3])


def test_a_span_beyond_the_limit_is_one_line_and_exit_2(
    server: tuple[PrometheusServer, Path],
) -> None:
    prometheus, build = server
    code, out, err, _ = _repair(prometheus, build, 0, "--dry-run")
    assert (code, out) == (2, "")
    assert err == (
        "rulegen: error: shop/checkout: --from 1970-01-01T00:00:00Z to 2023-11-14T22:00:00Z is "
        "169,999,921 evaluations of its 10s group, more than the 1,000,000 one repair reads "
        "(115d17h46m40s): give a later --from (default: one SLO window before --to)\n"
    )
