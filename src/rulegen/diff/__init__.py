"""``rulegen diff``: what an edit of the specs changes, alert by alert, in the spec's own units.

Why: a pull request that moves a threshold from 5ms to 10ms shows up in ``rules/`` as a
changed PromQL literal (``> 0.005`` → ``> 0.01``), a rewritten test file and a dashboard JSON
diff; a reviewer wants "DiskAwaitHigh: threshold 5ms → 10ms, and it now pages storage
instead of oncall". This package builds both versions of the specs in memory and compares
them semantically.

Modules: ``facts`` (one version → every alert's fields as text, in the spec's units),
``compare`` (two versions → ``model.Diff``, pure), ``checkout`` (the specs at a git revision,
read from git's objects into a temporary folder), ``versions`` (build a version, name its
errors), ``history`` (both versions backtested over a Prometheus's history), ``report``
(text, markdown, JSON), ``command`` (the subcommand).
"""
