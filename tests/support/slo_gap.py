"""The timeline shared by the real-Prometheus SLO gap tests (coverage and fallbacks in
``test_slo_gaps_prometheus.py``, ``rulegen repair`` in ``test_slo_repair_prometheus.py``).

Why one place: both tests describe the same history (a day of recordings, then an hour-long
hole in the rule evaluations inside an error burst), and a hole moved in one must move in the
other for their figures to stay comparable. Times are Unix seconds.
"""

from __future__ import annotations

STEP = 60
HOUR, DAY = 3600, 86400
T0 = 1_700_000_000 - 1_700_000_000 % DAY  # recordings start here; raw series an hour earlier
GAP = (T0 + DAY + 2 * HOUR, T0 + DAY + 3 * HOUR)  # no rule evaluation in [start, end)
END = T0 + DAY + 4 * HOUR
BURST = (GAP[0] - 10 * 60, GAP[1] + 10 * 60)  # the error burst: from 10 minutes before the hole
PER_MINUTE = 1000  # requests per minute of the SLI's total counter
OWN = 'service="shop", slo="checkout"'  # the SLO's own labels, as its recordings carry them
PAGE_1H = "{long: 1h, short: 5m, budget: 2%, alert: page}"
PAGE_6H = "{long: 6h, short: 30m, budget: 5%, alert: page}"


def checkout_spec(interval: str = "1m", tiers: tuple[str, ...] = (PAGE_1H, PAGE_6H)) -> str:
    """The shop/checkout SLO the repair and gap tests build: 99% over 1 day (its cascade
    5m … 6h, 1d: the rules of a 30-day SLO, one level shorter, so the history stays short),
    evaluated every ``interval``, with ``tiers`` (default: the two page tiers)."""
    lines = "".join(f"          - {tier}\n" for tier in tiers)
    return f"""
    version: 1
    service: shop
    evaluation_interval: {interval}
    slos:
      - name: checkout
        objective: 99%
        window: 1d
        sli:
          ratio:
            errors: 'http_requests_total{{code=~"5.."}}'
            total: 'http_requests_total'
        tiers:
{lines}    """


# The SLO both gap tests build.
SPEC = checkout_spec()
