"""``vllm/version`` (online): the vLLM release a server's series are from, per vLLM signal."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal, InvalidOperation

from rulegen.alerts.model import ResolvedAlert
from rulegen.catalog.vllm import Era, VllmVersion, eras_of, releases
from rulegen.core import promql
from rulegen.lint.check import Check, Scope, Server

DAY = "1d"


def run(scope: Scope) -> None:
    """Per alert on a vLLM signal whose metric names or histogram buckets changed between
    vLLM releases (KV-cache usage, prefix cache, TTFT, end-to-end and inter-token latency):
    which of the names it can read have series on the server over the last day, and which
    releases they match. With ``vllm: {version}`` declared and the server's series from
    other releases only, the rules match nothing or judge a threshold on the wrong buckets:
    an error. With no version declared, an info finding names the releases the server runs,
    to declare (the rules then read one name, and the thresholds are checked against that
    release's buckets only)."""
    declared: VllmVersion | None = scope.spec.vllm
    for alert in scope.spec.alerts:
        signal = alert.signal
        eras = eras_of(signal.signal) if signal is not None else ()
        if signal is None or not eras or _own_metric(alert, eras):
            continue
        matching = [i for i, era in enumerate(eras) if _has_series(scope.online, alert, era)]
        if not matching:
            continue  # nothing of any release: series/missing says so
        found = ", ".join(f"vLLM {releases(eras, i)}" for i in matching)
        if declared is None:
            scope.report(
                alert.origin.path,
                f"{alert.name}: the server's series are those of {found}; declare "
                "vllm: {version: …} so that the rules read only its names",
                "info",
            )
            continue
        own = max(i for i, era in enumerate(eras) if era.since <= declared)
        if own not in matching:
            scope.report(
                alert.origin.path,
                f"{alert.name}: vllm.version is {declared}, but the server's series are "
                f"those of {found}: the rules read {_shown(alert, eras[own])}, which it does "
                "not have as that release exposes it",
            )


def _own_metric(alert: ResolvedAlert, eras: tuple[Era, ...]) -> bool:
    """Whether the spec names the metric itself (not one of the releases' names)."""
    metric = alert.params.get("metric")
    names = {e.params.get("metric") for e in eras}
    return metric is not None and "metric" in eras[-1].params and metric not in names


def _selectors(alert: ResolvedAlert, era: Era) -> Iterator[str]:
    """The series selectors the alert reads in ``era``'s release (its names swapped in)."""
    current = str(alert.params.get("metric", ""))
    metric = str(era.params.get("metric", current))
    first = promql.alternatives(alert.quantity)[0]
    for _, text in promql.selectors(first):
        yield metric + text[len(current) :] if current and text.startswith(current) else text


def _shown(alert: ResolvedAlert, era: Era) -> str:
    names = [s.split("{")[0] for s in _selectors(alert, era)]
    if "buckets" in era.params:
        bounds = ", ".join(promql.go_float(float(b)) for b in era.params["buckets"])
        names.append(f"buckets [{bounds}]")
    return ", ".join(dict.fromkeys(names))


def _has_series(server: Server, alert: ResolvedAlert, era: Era) -> bool:
    """Whether every series the alert reads in ``era``'s release is on the server, with the
    release's bucket bounds when they are what tells the releases apart."""
    selectors = list(_selectors(alert, era))
    for selector in selectors:
        key = f"vllm/version\0{selector}"
        if key not in server.seen:
            found = server.api.query(f"count(last_over_time({selector}[{DAY}]))", server.now)
            server.seen[key] = bool(found)
        if not server.seen[key]:
            return False
    if "buckets" not in era.params:
        return True
    buckets = [s for s in selectors if s.split("{")[0].endswith("_bucket")]
    return all(_bounds(server, s) == set(era.params["buckets"]) for s in buckets)


def _bounds(server: Server, selector: str) -> set[Decimal]:
    """The finite ``le`` bounds the histogram's series have had over the last day."""
    found = server.api.query(f"count by (le) (last_over_time({selector}[{DAY}]))", server.now)
    out: set[Decimal] = set()
    for series in found:
        try:
            bound = Decimal(series.metric.get("le", "+Inf"))
        except InvalidOperation:
            continue
        if bound.is_finite():
            out.add(bound)
    return out


CHECK = Check(
    "vllm/version",
    "error",
    "the server's vLLM series are of another release than `vllm.version` (and, with none "
    "declared, which release they are)",
    run,
    online=True,
)
