"""``for/unreachable``: a window that adds more delay than the ``for`` itself."""

from __future__ import annotations

from rulegen import units
from rulegen.lint.check import Check, Scope, fmt


def run(scope: Scope) -> None:
    """An alert on a window signal with a physical maximum (a share of time, %util) whose
    window adds more delay than its ``for``: a burst at the maximum makes the windowed rate
    cross the threshold only after that share of the window, so bursts somewhat longer than
    the ``for`` never fire."""
    for alert in scope.spec.alerts:
        signal = alert.signal
        if signal is None or signal.test.settle != "window" or signal.threshold.op != ">":
            continue
        top = signal.threshold.max
        if top is None or not alert.for_seconds or not alert.window_seconds:
            continue
        # A burst at the signal's maximum makes rate() cross the threshold share of the window
        # in, and stay above it until that share of the window after the burst ends.
        delay = (2 * alert.threshold / top - 1) * alert.window_seconds
        if delay > alert.for_seconds:
            shortest = alert.for_seconds + delay
            full = units.format_human(top, signal.threshold.unit)
            scope.report(
                scope.field(alert.origin.path, "for"),
                f"{alert.name}: a burst at {full} must last {fmt(shortest)} before it fires "
                f"(the {alert.window} window adds {fmt(delay)} to for "
                f"{fmt(alert.for_seconds)}); bursts of {fmt(alert.for_seconds)} to "
                f"{fmt(shortest)} never fire: shorten the window or lower the threshold",
            )


CHECK = Check(
    "for/unreachable",
    "warning",
    "a window signal with a physical maximum whose window adds more delay than the `for`",
    run,
)
