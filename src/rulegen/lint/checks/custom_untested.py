"""``custom/untested``: a custom alert that nothing tests."""

from __future__ import annotations

from rulegen.lint.check import Check, Scope


def run(scope: Scope) -> None:
    """A ``custom`` alert with no ``examples:`` and no promtool test of your own (in
    ``specs/tests/``) whose ``alert_rule_test`` names it: rulegen generates tests only for
    what it knows, so nothing shows when this alert fires, or that it ever can."""
    for alert in scope.spec.alerts:
        if alert.signal is not None or alert.examples or alert.name in scope.tested:
            continue
        scope.report(
            alert.origin.path,
            f"{alert.name}: a custom alert with no examples and no promtool test of your own "
            "naming it: nothing shows when it fires; add examples: (input series, fires_at, "
            "silent_at) or a test in specs/tests/",
        )


CHECK = Check(
    "custom/untested",
    "warning",
    "a custom alert with no `examples:` and no promtool test of your own",
    run,
)
