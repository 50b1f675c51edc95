"""Backtest: replay rulegen's alerts over a real Prometheus's history.

Why: a threshold is only as good as the pages it would have sent. ``rulegen backtest`` runs
every alert expression as a range query, applies ``for`` and ``keep_firing_for`` exactly as
Prometheus's rule manager does, and reports how often, how long and how jittery each alert
would have fired (and, on request, a threshold that keeps it under a weekly budget).

Modules: ``replay`` (pure: the alert state machine, episodes, flaps, threshold search),
``query`` (range queries over HTTP, chunked), ``plot`` (PNG per alert, optional matplotlib),
``command`` (the ``backtest`` subcommand: arguments, specs → alerts → replay → output).
"""
