"""``make test``'s closing line: the pytest processes' outcomes added up, deselected explained."""

from __future__ import annotations

from support.shard_total import combined, summary_line

FIRST = """\
........................................................................ [ 50%]
\x1b[32m1500 passed\x1b[0m, \x1b[33m2 skipped\x1b[0m, 1900 deselected in 512.40s (0:08:32)
"""
SECOND = """\
....F...
FAILED tests/a.py::test_x - AssertionError
1 failed, 1300 passed, 1 xfailed, 2100 deselected, 3 warnings in 540.10s (0:09:00)
"""
THIRD = "2 errors, 27 passed, 3372 deselected in 80.00s\n"


def test_the_outcomes_are_summed_and_deselected_is_not() -> None:
    assert combined([FIRST, SECOND, THIRD]) == (
        "all 3 processes: 1 failed, 2 error(s), 2827 passed, 2 skipped, 1 xfailed in 540s (the "
        'slowest process); each one\'s "deselected" are the tests the others ran or -m left '
        "out, none of them skipped"
    )


def test_a_process_without_its_summary_line_is_named() -> None:
    line = combined([FIRST, "Killed\n"])
    assert line.startswith("all 2 processes: 1500 passed, 2 skipped in 512s")
    assert line.endswith("; process 2 printed no summary line (see its output)")


def test_the_summary_line_is_the_last_one_with_counts_and_a_time() -> None:
    assert summary_line(FIRST) == "1500 passed, 2 skipped, 1900 deselected in 512.40s (0:08:32)"
    assert summary_line("collected 3 items\n") is None
