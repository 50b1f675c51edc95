"""One run's replay: each alert's evaluation times, its expression evaluated (from raw
series through ``deployed``, or as deployed on the server with ``--recorded``), the state
machine, and the warnings a result needs (missing series, partial history, a suggestion).

Why apart from ``command``: ``rulegen diff`` replays two builds with the same code, without
the command line, the progress bar or the output.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor

from rulegen import gotemplate
from rulegen.backtest import MAX_EVALUATIONS
from rulegen.backtest.deployed import Deployment, Fetch, coverage, refusal
from rulegen.backtest.query import (
    Client,
    Pending,
    Progress,
    Samples,
    grid,
    grid_size,
    selectors,
)
from rulegen.backtest.replay import (
    Labels,
    fired_with,
    flap_window,
    replay,
    suggest_threshold,
    summarize,
)
from rulegen.backtest.report import rfc3339
from rulegen.backtest.syntax import Unsupported, parse
from rulegen.backtest.targets import Report, Target, deployable, recordings, targets
from rulegen.build import BuildResult
from rulegen.errors import UsageError
from rulegen.promapi.client import QueryRejected


def query_times(target: Target, span: tuple[int, int], step_ms: int | None = None) -> list[int]:
    """The evaluation times: from ``max(for, keep_firing_for)`` plus one step before the span
    (so an alert already pending or firing at ``span[0]`` is in the right state there) to
    its end, on multiples of the step."""
    return grid(*_grid_bounds(target, span, step_ms))


def query_points(target: Target, span: tuple[int, int], step_ms: int | None = None) -> int:
    """``len(query_times(...))``, without building the list."""
    return grid_size(*_grid_bounds(target, span, step_ms))


def _grid_bounds(
    target: Target, span: tuple[int, int], step_ms: int | None
) -> tuple[int, int, int]:
    step = step_ms or target.step_ms
    lead = max(target.for_ms, target.keep_firing_for_ms) + step
    return (span[0] - lead) // step * step, span[1], step


def alert_labels(series: Labels, rule_labels: Iterable[tuple[str, str]], value: float) -> Labels:
    """An alert's label set as Prometheus builds it: the series' labels without
    ``__name__``, then the rule's labels (templates expanded; an empty value removes)."""
    out = {k: v for k, v in series if k != "__name__"}
    data = dict(series)
    for name, text in rule_labels:
        expanded = text
        if "{{" in text:
            try:
                expanded = gotemplate.expand(text, data, value)
            except gotemplate.UnsupportedTemplate:
                expanded = text
        if expanded:
            out[name] = expanded
        else:
            out.pop(name, None)
    return tuple(sorted(out.items()))


def backtest(
    client: Client,
    target: Target,
    span: tuple[int, int],
    *,
    step_ms: int | None = None,
    recorded: frozenset[str] = frozenset(),
    with_quantity: bool = False,
    per_week: float | None = None,
    progress: Progress | None = None,
    deployment: Deployment | None = None,
    pending: Pending | None = None,
) -> Report:
    """Replay one alert over ``span``: query, state machine, per-label-set summaries; with
    ``with_quantity`` or ``per_week`` also the quantity (left of ``X > N``) and a suggestion.

    With a ``deployment`` the recordings are evaluated from raw series (its ``plan`` must
    have seen the target); without one the expression is sent as it is, reading the
    recordings deployed on the server (``recorded``: their names, to warn when missing).
    ``pending``: the alert's query, already sent (``replay_targets``)."""
    step = step_ms or target.step_ms
    times = query_times(target, span, step)
    try:
        return _backtest(client, target, span, step, times, recorded, with_quantity, per_week,
                         progress, deployment, pending)  # fmt: skip
    except QueryRejected as exc:
        raise UsageError(f"{target.alert} ({target.group}): {exc}") from None


def _evaluate(
    client: Client,
    expr: str,
    times: list[int],
    step: int,
    progress: Progress | None,
    deployment: Deployment | None,
    pending: Pending | None = None,
) -> tuple[Samples, list[Fetch]]:
    if pending is not None:  # the whole expression is the server's: sent ahead
        return pending.result(progress), []
    if deployment is None:
        return client.range_query(expr, times, progress), []
    deployment.progress = progress
    return deployment.evaluate(expr, times, step)


def _backtest(
    client: Client,
    target: Target,
    span: tuple[int, int],
    step: int,
    times: list[int],
    recorded: frozenset[str],
    with_quantity: bool,
    per_week: float | None,
    progress: Progress | None,
    deployment: Deployment | None,
    pending: Pending | None,
) -> Report:
    if deployment is not None and deployment.refused.get(target.expr):
        report = Report(target, span, step, times, {}, {})
        report.warning = deployment.refused[target.expr]
        return report
    try:
        raw, fetches = _evaluate(client, target.expr, times, step, progress, deployment,
                                 pending)  # fmt: skip
    except Unsupported as exc:
        report = Report(target, span, step, times, {}, {})
        report.warning = refusal(str(exc))
        return report
    values: Samples = {}
    present: dict[int, set[Labels]] = {}
    for series, samples in raw.items():
        for t, value in samples.items():
            labels = alert_labels(series, target.labels, value)
            values.setdefault(labels, {})[t] = value
            present.setdefault(t, set()).add(labels)
    found = replay(times, [present.get(t, set()) for t in times], target.for_ms,
                   target.keep_firing_for_ms)  # fmt: skip
    flaps = flap_window(target.for_ms, step)
    summaries = {
        labels: summary
        for labels, runs in sorted(found.items())
        if (summary := summarize(runs, span[0], span[1], flaps)).episodes
    }
    report = Report(target, span, step, times, values, summaries)
    if deployment is None:
        report.warning = _missing_recordings(client, target, span, recorded)
    else:
        report.warning = _missing_series(client, deployment, target, times, span)
        _mark_partial(report, deployment, fetches, times)
    report.comparison = target.comparison
    if with_quantity and target.burns:
        report.burns = _burns(client, target, times, step, progress, deployment, report.notes)
    elif with_quantity or per_week is not None:
        expr = target.quantity_expr() or target.expr
        try:
            report.quantity, _ = _evaluate(client, expr, times, step, progress, deployment)
        except Unsupported as exc:
            report.notes.append(f"no quantity: {refusal(str(exc))}")
    if per_week is not None:
        _suggest(report, per_week)
    return report


def _burns(
    client: Client, target: Target, times: list[int], step: int, progress: Progress | None,
    deployment: Deployment | None, notes: list[str],
) -> dict[str, Samples]:  # fmt: skip
    """An SLO alert's burn rate over each window its tiers read (what its picture draws)."""
    out: dict[str, Samples] = {}
    for burn in target.burns:
        try:
            out[burn.window], _ = _evaluate(client, burn.expr, times, step, progress, deployment)
        except Unsupported as exc:
            notes.append(f"no burn rate over {burn.window}: {refusal(str(exc))}")
    return out


def _mark_partial(
    report: Report, deployment: Deployment, fetches: list[Fetch], times: list[int]
) -> None:
    """Say which results read less history than the rules need (``coverage``)."""
    needs = deployment.needs.get(report.target.expr, {})
    found = coverage(fetches, needs, times[0], report.step_ms) if times else None
    if found is None:
        return
    history_from, gap = found
    until = times[0] + gap
    if until > report.span[0]:
        report.history_from, report.partial_until = history_from, until


def _missing_series(
    client: Client, deployment: Deployment, target: Target, times: list[int],
    span: tuple[int, int],
) -> str | None:  # fmt: skip
    """A warning when a raw series the rules read has no samples at all in the range: the
    exporter is not scraped there, so "never fired" would be a lie."""
    start = times[0] if times else span[0]
    missing = [
        text
        for text in deployment.raw_selectors(target.expr)
        if not deployment.has_series(text, start, span[1])
    ]
    if not missing:
        return None
    which = ("series " if len(missing) == 1 else "series ") + ", ".join(missing[:5])
    more = f" (+{len(missing) - 5} more)" if len(missing) > 5 else ""
    return (
        f"{which}{more} {'has' if len(missing) == 1 else 'have'} no samples between "
        f"{rfc3339(start)} and {rfc3339(span[1])} on {client.url}: "
        "this alert cannot fire in this backtest"
    )


def _suggest(report: Report, per_week: float) -> None:
    target = report.target
    report.per_week = per_week
    if report.comparison is None or report.quantity is None:
        report.notes.append("no suggestion: the expression is not `quantity > number`")
        return
    args = (report.times, report.quantity, report.comparison.op)
    threshold = float(report.comparison.threshold.value)
    report.current_fired = fired_with(*args, threshold, target.for_ms,
                                      target.keep_firing_for_ms, report.span)  # fmt: skip
    report.suggestion = suggest_threshold(*args, target.for_ms, target.keep_firing_for_ms,
                                          report.span, per_week)  # fmt: skip
    if report.suggestion is None:
        report.notes.append("no suggestion: the quantity has no value in the range")


def _missing_recordings(
    client: Client, target: Target, span: tuple[int, int], recorded: frozenset[str]
) -> str | None:
    """A warning when a recording the alert reads has no samples in the span on the server:
    the rules are not deployed there (yet), so "never fired" would be a lie."""
    missing = [
        text
        for name, text in selectors(target.expr)
        if name in recorded and not client.has_series(text, span[0], span[1])
    ]
    if not missing:
        return None
    which = ("recording " if len(missing) == 1 else "recordings ") + ", ".join(missing)
    have = "has" if len(missing) == 1 else "have"
    return (
        f"{which} {have} no samples between {rfc3339(span[0])} and "
        f"{rfc3339(span[1])} on {client.url} (--recorded reads the deployed rules): deploy "
        "the rules there first, or leave out --recorded to evaluate them from raw series"
    )


def replay_build(
    client: Client,
    result: BuildResult,
    span: tuple[int, int],
    *,
    alerts: Sequence[str] = (),
    step_ms: int | None = None,
    recorded: bool = False,
    with_quantity: bool = False,
) -> list[Report]:
    """Replay every alert of a build (or those named in ``alerts``) over ``span``: the
    library entry point ``rulegen diff`` uses to backtest two versions of the specs.
    ``recorded`` reads the deployed recordings instead of evaluating them from raw series;
    ``with_quantity`` evaluates what a picture draws too (``Target.plotted``)."""
    chosen = targets(result, alerts)
    points = sum(
        query_points(target, span, step_ms) * (1 + len(target.plotted()) * with_quantity)
        for target in chosen
    )
    deployment = None
    if not recorded:
        deployment = plan_deployment(client, result, chosen, span, step_ms, with_quantity)
        points += deployment.points()
    if points > MAX_EVALUATIONS:
        raise UsageError(
            f"this backtest needs {points:,} evaluation points ({len(chosen)} alert(s) from "
            f"{rfc3339(span[0])} to {rfc3339(span[1])}), more than the {MAX_EVALUATIONS:,} "
            "one run may evaluate: use a shorter range (--from/--to)"
        )
    if deployment is not None:
        deployment.left_open = left_open(client)
    return replay_targets(client, chosen, span, step_ms=step_ms, recorded=recordings(result),
                          with_quantity=with_quantity, deployment=deployment)  # fmt: skip


def replay_targets(
    client: Client,
    chosen: Sequence[Target],
    span: tuple[int, int],
    *,
    step_ms: int | None = None,
    recorded: frozenset[str] = frozenset(),
    with_quantity: bool = False,
    per_week: float | None = None,
    progress: Progress | None = None,
    deployment: Deployment | None = None,
) -> list[Report]:
    """``backtest`` every chosen alert, in order, with every alert the server evaluates
    whole sent ahead: up to ``client.parallel`` of their range queries run while rulegen
    computes the recordings the others need, so neither side waits for the other.

    Why it matters: on a 7-day replay the server's engine (aggregations over every 15 s
    step) is most of the time; sending one alert at a time leaves it idle whenever rulegen
    evaluates an SLO's window cascade."""
    with ThreadPoolExecutor(max_workers=client.parallel) as pool:
        ahead: dict[int, Pending] = {}
        try:
            for index, target in enumerate(chosen):
                text = _whole_on_server(target, step_ms, deployment)
                if text is not None:
                    times = query_times(target, span, step_ms)
                    ahead[index] = client.submit(pool, text, times)
            return [
                backtest(client, target, span, step_ms=step_ms, recorded=recorded,
                         with_quantity=with_quantity, per_week=per_week, progress=progress,
                         deployment=deployment, pending=ahead.get(index))
                for index, target in enumerate(chosen)
            ]  # fmt: skip
        finally:
            for pending in ahead.values():
                pending.cancel()


def _whole_on_server(
    target: Target, step_ms: int | None, deployment: Deployment | None
) -> str | None:
    """The text of an alert the server evaluates in one query (recordings inlined), or
    ``None`` when rulegen computes part of it."""
    if deployment is None:
        return target.expr
    if target.expr in deployment.refused:
        return None
    try:
        return deployment.server_text(parse(target.expr), step_ms or target.step_ms)
    except Unsupported:
        return None


def plan_deployment(
    client: Client,
    result: BuildResult,
    chosen: Sequence[Target],
    span: tuple[int, int],
    step_ms: int | None,
    with_quantity: bool,
) -> Deployment:
    """The build's recordings, planned for every chosen alert (and its quantity)."""
    deployment = Deployment(client, deployable(result), span[1], left_open=False)
    # an alert that cannot be replayed is named by plan_alert below
    with contextlib.suppress(Unsupported):
        deployment.share((t.expr, step_ms or t.step_ms) for t in chosen)
    for target in chosen:
        start, end, step = _grid_bounds(target, span, step_ms)
        if grid_size(start, end, step) == 0:
            continue
        first = -(-start // step) * step  # the grid's first time, without building the grid
        deployment.plan_alert(target.expr, first, step)
        for expr in target.plotted() if with_quantity else ():
            deployment.plan_alert(expr, first, step)
    return deployment


def left_open(client: Client) -> bool:
    """Whether the server's ranges exclude their first instant: Prometheus 3 and later (and
    a server that does not say its version: today's default)."""
    version = client.api.version()
    if version is None:
        return True
    major = version.lstrip("v").split(".", 1)[0]
    return not (major.isdigit() and int(major) < 3)
