"""The one summary line of ``make test``: the pytest processes' outcomes added up.

Why: ``make test`` runs several pytest processes side by side (``--shard I/N``), each ending
with its own summary. Each also counts as "deselected" the tests it left to the others (and
those ``-m`` leaves out): next to "skipped" that reads like tests not run, and a reader has to
add the passes up. The Makefile pipes every process's output here once all have finished.

Usage: ``python tests/support/shard_total.py LOG…`` (one pytest output per file).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path

OUTCOMES = ("failed", "passed", "skipped", "xfailed", "xpassed", "error", "errors")
_COUNT = re.compile(r"(\d+) (failed|passed|skipped|deselected|xfailed|xpassed|errors?|warnings?)")
_TIME = re.compile(r" in ([\d.]+)s")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # the first process's colours, on a terminal


def summary_line(text: str) -> str | None:
    """pytest's closing line in one process's output (``2 failed, 9 passed … in 3.1s``)."""
    for line in reversed(_ANSI.sub("", text).splitlines()):
        if _TIME.search(line) and _COUNT.search(line):
            return line.strip(" =")
    return None


def combined(texts: Sequence[str]) -> str:
    """One line for all the processes: each outcome summed, the longest time, and what the
    processes' "deselected" counts are; a process without a summary line is named."""
    totals: dict[str, int] = {}
    longest = 0.0
    missing = []
    for number, text in enumerate(texts, 1):
        line = summary_line(text)
        if line is None:
            missing.append(str(number))
            continue
        for count, outcome in _COUNT.findall(line):
            key = "errors" if outcome.startswith("error") else outcome
            if key in OUTCOMES:
                totals[key] = totals.get(key, 0) + int(count)
        if (found := _TIME.search(line)) is not None:
            longest = max(longest, float(found.group(1)))
    order = ("failed", "errors", "passed", "skipped", "xfailed", "xpassed")
    parts = [f"{totals[k]} {'error(s)' if k == 'errors' else k}" for k in order if totals.get(k)]
    shown = ", ".join(parts) or "no tests"
    out = (
        f"all {len(texts)} processes: {shown} in {longest:.0f}s (the slowest process); each "
        'one\'s "deselected" are the tests the others ran or -m left out, none of them skipped'
    )
    if missing:
        out += f"; process {', '.join(missing)} printed no summary line (see its output)"
    return out


def main(paths: Sequence[str]) -> int:
    texts = [Path(p).read_text(encoding="utf-8", errors="replace") for p in paths]
    sys.stdout.write(combined(texts) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
