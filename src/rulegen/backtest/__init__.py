"""Backtest: replay rulegen's alerts over a real Prometheus's history.

Why: a threshold is only as good as the pages it would have sent. ``rulegen backtest`` runs
every alert expression as a range query, applies ``for`` and ``keep_firing_for`` exactly as
Prometheus's rule manager does, and reports how often, how long and how jittery each alert
would have fired (and, on request, a threshold that keeps it under a weekly budget).

Modules: ``replay`` (pure: the alert state machine, episodes, flaps, threshold search),
``query`` (range queries over HTTP, chunked), ``picture`` (what a picture of a replay shows:
units, spans, legend; pure), ``plot`` (a picture drawn as PNG or SVG, optional matplotlib),
``command`` (the ``backtest`` subcommand: arguments, specs → alerts → replay → output).
"""

# The limits of a run, here rather than beside the code that applies them (``query``,
# ``session``) because ``rulegen backtest --help`` prints them without importing that code.

PARALLEL = 2
"""Range-query chunks in flight at once by default (``--parallel``)."""
TIMEOUT = 120.0
"""The default deadline of each request (``--timeout``), in seconds."""
MAX_EVALUATIONS = 10_000_000
"""The most evaluation points one run may ask for, across all chosen alerts, their queries
and the recordings computed from raw series (roughly 1,000 range queries of 11,000 points);
more is refused before any query."""
