"""Every lint check, registered in one explicit list (the order of ``rulegen lint --list``).

Why explicit: a check exists when it is listed here, and a new check is one module under
``checks/`` plus one line below (and its page ``docs/checks/<id>.md``).
"""

from __future__ import annotations

from rulegen.lint.check import Check
from rulegen.lint.checks import (
    annotation_runbook,
    custom_untested,
    for_too_short,
    for_unreachable,
    histogram_threshold,
    label_conflict,
    label_severity,
    promql_version,
    rate_window,
    scrape_interval,
    selector_unscoped,
    series_missing,
    series_speed_missing,
    slo_retention,
    slo_unreachable_tier,
    vllm_version,
)

CHECKS: tuple[Check, ...] = (
    promql_version.CHECK,
    rate_window.CHECK,
    for_too_short.CHECK,
    for_unreachable.CHECK,
    slo_unreachable_tier.CHECK,
    slo_retention.CHECK,
    histogram_threshold.CHECK,
    annotation_runbook.CHECK,
    label_severity.CHECK,
    label_conflict.CHECK,
    custom_untested.CHECK,
    selector_unscoped.CHECK,
    series_missing.CHECK,
    series_speed_missing.CHECK,
    vllm_version.CHECK,
    scrape_interval.CHECK,
)
BY_ID = {check.id: check for check in CHECKS}
assert len(BY_ID) == len(CHECKS), "two lint checks share an id"


def listing() -> str:
    """``rulegen lint --list``: one line per check: its id, default severity, ``offline`` or
    ``online`` (needs ``--prometheus``) and what it finds."""
    width = max(len(c.id) for c in CHECKS)
    return "".join(
        f"{c.id:<{width}}  {c.severity:<7}  {'online ' if c.online else 'offline'}  {c.summary}\n"
        for c in CHECKS
    )
