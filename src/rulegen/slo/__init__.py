"""Service level objectives: resolution, window plan, rules and generated tests.

Why a package: an SLO is one spec entry that becomes a whole rule group (recordings for every
window, budget, burn-rate alerts) and its own test scenarios; each of those is a module here
(``resolve`` → ``model``, ``windows``, ``rules``, ``testgen`` with ``simulate``, ``series`` and
``isolation``), the same shape as ``rulegen.alerts`` and ``rulegen.diagnosis``.
"""
