"""``rate/window``: a rate or quantile window that one failed scrape can empty."""

from __future__ import annotations

from rulegen.alerts.model import ResolvedAlert
from rulegen.diagnosis.model import ResolvedDiagnosis
from rulegen.lint.check import MIN_SCRAPES_PER_WINDOW, Check, Scope, fmt


def run(scope: Scope) -> None:
    """A rate or quantile window (of an alert or a diagnosis) shorter than 4×
    ``scrape_interval``: ``rate()`` needs two samples in its window, so one failed scrape or
    an ingestion race leaves it empty, the alert resolves and fires again (gaps, then false
    alarms). Four scrapes per window survive a missed scrape."""
    spec = scope.spec
    least = MIN_SCRAPES_PER_WINDOW * spec.scrape_interval
    entries: list[ResolvedAlert | ResolvedDiagnosis] = [*spec.alerts, *spec.diagnoses]
    for entry in entries:
        window = entry.window_seconds
        if window and window < least:
            scope.report(
                scope.field(entry.origin.path, "window"),
                f"{entry.name}: window {fmt(window)} holds fewer than {MIN_SCRAPES_PER_WINDOW} "
                f"scrapes at scrape_interval {fmt(spec.scrape_interval)}: one failed scrape "
                f"leaves rate() too few samples (gaps, then false alarms); use at least "
                f"{fmt(least)}",
            )


CHECK = Check(
    "rate/window",
    "warning",
    "a rate or quantile window (alert or diagnosis) shorter than 4× scrape_interval",
    run,
)
