"""Online lint checks against a running Prometheus (``--prometheus URL``, HTTP API).

Why: a selector with a typo, a vLLM metric renamed by an upgrade, a NIC without a speed or a
job scraped slower than the spec assumes all give rules that pass every test and never fire.
Only the live server knows.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from decimal import Decimal

from rulegen import promql, units
from rulegen.lint.checks import MIN_SCRAPES_PER_WINDOW, LintTarget, Reporter, path_key
from rulegen.lint.findings import Finding
from rulegen.promapi import PrometheusAPI
from rulegen.slo.model import LatencySLI

DAY = 86400
TIMEOUT = 30.0
"""The default deadline of each request (``lint --timeout``), in seconds."""
ASK_LESS = "narrower alert selectors"


def lint_online(targets: Sequence[LintTarget], url: str, timeout: float = TIMEOUT) -> list[Finding]:
    """series/missing, series/speed-missing and scrape/interval for every spec; every request
    ends within ``timeout`` seconds (``UsageError`` otherwise, as for any server problem)."""
    api = PrometheusAPI(url, timeout=timeout, ask_less=ASK_LESS)
    now = time.time()
    intervals = _scrape_intervals(api)
    out: list[Finding] = []
    for target in targets:
        report = Reporter(target)
        _missing_series(report, target, api, now)
        _speed_missing(report, target, api, now)
        _scrape_interval(report, target, intervals)
        out.extend(report.findings)
    return out


def selectors_of(expr: str) -> Iterator[str]:
    """The raw series selectors an expression reads (``name{matchers}``)."""
    for _, text in promql.selectors(expr):
        yield text


def _reads(target: LintTarget) -> Iterator[tuple[str, tuple[str | int, ...], str]]:
    """(alert name, spec path, raw selector) for everything the spec's rules read."""
    spec = target.spec
    for alert in spec.alerts:
        for selector in selectors_of(alert.quantity):
            yield alert.name, path_key(alert.origin.path), selector
    for diagnosis in spec.diagnoses:
        for item in diagnosis.evidence:
            for selector in selectors_of(item.recording.expr):
                yield diagnosis.name, path_key(diagnosis.origin.path), selector
    for slo in spec.slos:
        path = (*path_key(slo.origin.path), "sli")
        sli = slo.sli
        if isinstance(sli, LatencySLI):
            matchers = ", ".join(m.render() for m in sli.matchers)
            yield slo.alert_name, path, f"{sli.metric}_bucket{{{matchers}}}".replace("{}", "")
        else:
            for counter in (sli.errors, sli.total):
                yield slo.alert_name, path, counter.render()


def _missing_series(report: Reporter, target: LintTarget, api: PrometheusAPI, now: float) -> None:
    seen: dict[str, bool] = {}
    for name, path, selector in _reads(target):
        if selector not in seen:
            seen[selector] = bool(api.series(selector, str(now - DAY), str(now)))
        if not seen[selector]:
            report.add(
                path,
                "series/missing",
                "error",
                f"{name}: no series matches {selector} in the last day: a typo, a metric "
                "renamed by an exporter upgrade (vLLM renames often), or a target not scraped",
            )


def _speed_missing(report: Reporter, target: LintTarget, api: PrometheusAPI, now: float) -> None:
    for alert in target.spec.alerts:
        signal = alert.signal
        if signal is None or signal.signal != "network_saturation":
            continue
        if alert.params.get("link_speed"):
            continue
        virtual = promql.Matcher("device", "!~", str(alert.params["virtual_devices"]))
        sel = "{" + ", ".join(m.render() for m in (*alert.selector_matchers, virtual)) + "}"
        # NICs seen in the last day that never had a usable speed in it
        expr = (
            f"count by (instance, device) "
            f"(count_over_time(node_network_receive_bytes_total{sel}[1d]))"
            f" unless on (instance, device) (max_over_time(node_network_speed_bytes{sel}[1d]) > 0)"
        )
        nics = api.query(expr, now)
        if nics:
            shown = ", ".join(
                f"{n.metric.get('instance', '?')}/{n.metric.get('device', '?')}" for n in nics[:5]
            )
            more = f" and {len(nics) - 5} more" if len(nics) > 5 else ""
            report.add(
                path_key(alert.origin.path),
                "series/speed-missing",
                "warning",
                f"{alert.name}: {len(nics)} physical NIC(s) have no usable "
                f"node_network_speed_bytes ({shown}{more}) and the alert has no link_speed: "
                "it can never fire for them; set link_speed or exclude them in virtual_devices",
            )


def _scrape_intervals(api: PrometheusAPI) -> dict[str, Decimal]:
    """The longest scrape interval of the active targets, per job (targets whose interval
    the server does not give are left out)."""
    out: dict[str, Decimal] = {}
    for item in api.targets():
        if item.scrape_interval is None:
            continue
        job = item.labels.get("job") or item.scrape_pool
        out[job] = max(out.get(job, Decimal(0)), item.scrape_interval)
    return out


def _scrape_interval(report: Reporter, target: LintTarget, intervals: dict[str, Decimal]) -> None:
    spec = target.spec
    for alert in spec.alerts:
        if not alert.window_seconds:
            continue
        jobs = [m.value for m in alert.selector_matchers if m.name == "job" and m.op == "="]
        for job in jobs:
            real = intervals.get(job)
            if real is None:
                continue
            path = path_key(alert.origin.path)
            if alert.window_seconds < MIN_SCRAPES_PER_WINDOW * real:
                report.add(
                    path,
                    "scrape/interval",
                    "warning",
                    f"{alert.name}: job {job} is scraped every {units.format_duration(real)}, "
                    f"so the {alert.window} window holds fewer than {MIN_SCRAPES_PER_WINDOW} "
                    f"scrapes; use at least {units.format_duration(4 * real)}",
                )
            elif real != spec.scrape_interval:
                report.add(
                    ("scrape_interval",),
                    "scrape/interval",
                    "info",
                    f"job {job} is scraped every {units.format_duration(real)}, the spec says "
                    f"scrape_interval {units.format_duration(spec.scrape_interval)}",
                )
