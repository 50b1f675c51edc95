"""``scrape/interval`` (online): the real scrape interval of the jobs an alert reads."""

from __future__ import annotations

from rulegen import units
from rulegen.lint.check import MIN_SCRAPES_PER_WINDOW, Check, Scope


def run(scope: Scope) -> None:
    """The real scrape interval of the jobs an alert reads (its ``job="…"`` matchers, from
    the server's active targets) leaves the alert's window fewer than 4 scrapes: a warning,
    as for ``rate/window``, but with the interval the server really uses. An info when the
    real interval only differs from the spec's ``scrape_interval``."""
    spec = scope.spec
    intervals = scope.online.scrape_intervals
    for alert in spec.alerts:
        if not alert.window_seconds:
            continue
        jobs = [m.value for m in alert.selector_matchers if m.name == "job" and m.op == "="]
        for job in jobs:
            real = intervals.get(job)
            if real is None:
                continue
            if alert.window_seconds < MIN_SCRAPES_PER_WINDOW * real:
                scope.report(
                    alert.origin.path,
                    f"{alert.name}: job {job} is scraped every {units.format_duration(real)}, "
                    f"so the {alert.window} window holds fewer than {MIN_SCRAPES_PER_WINDOW} "
                    f"scrapes; use at least {units.format_duration(4 * real)}",
                )
            elif real != spec.scrape_interval:
                scope.report(
                    ("scrape_interval",),
                    f"job {job} is scraped every {units.format_duration(real)}, the spec says "
                    f"scrape_interval {units.format_duration(spec.scrape_interval)}",
                    "info",
                )


CHECK = Check(
    "scrape/interval",
    "warning",
    "the real scrape interval of the jobs an alert reads leaves its window fewer than 4 "
    "scrapes (info when it only differs from `scrape_interval`)",
    run,
    online=True,
    prepare=lambda server: server.scrape_intervals,
)
