"""``series/missing`` (online): a selector that matches no series."""

from __future__ import annotations

from collections.abc import Iterator

from rulegen.core import promql
from rulegen.errors import FieldPath
from rulegen.lint.check import Check, Scope, Server
from rulegen.pipeline.service import ResolvedSpec
from rulegen.slo.expression import SAMPLE_WINDOW
from rulegen.slo.model import (
    EventsSLI,
    GoodputSLI,
    GoodRatioSLI,
    LatencySLI,
    RawSLI,
    ResolvedSLO,
)

DAY = 86400


def selectors_of(expr: str) -> Iterator[str]:
    """The raw series selectors an expression reads (``name{matchers}``)."""
    for _, text in promql.selectors(expr):
        yield text


Read = tuple[str, FieldPath, tuple[tuple[str, ...], ...]]
"""(alert name, spec path, the selectors of each alternative the rule reads): a rule reads
its metrics under one name, or under each name of a renamed one (``new or old``)."""


def reads(spec: ResolvedSpec) -> Iterator[Read]:
    """What every alert, diagnosis and SLO of the spec reads."""
    for alert in spec.alerts:
        operands = promql.alternatives(alert.quantity)
        operands = operands if len(operands) > 1 else [alert.quantity]
        yield alert.name, alert.origin.path, tuple(tuple(selectors_of(o)) for o in operands)
    for diagnosis in spec.diagnoses:
        for item in diagnosis.evidence:
            for selector in selectors_of(item.recording.expr):
                yield diagnosis.name, diagnosis.origin.path, ((selector,),)
    for slo in spec.slos:
        yield from _slo_reads(slo)


def _slo_reads(slo: ResolvedSLO) -> Iterator[Read]:
    """What an SLO's SLI reads: its histograms, its counters, its queries' selectors."""
    path = slo.origin.path.child("sli")
    sli = slo.sli
    if isinstance(sli, LatencySLI):
        yield slo.alert_name, path, ((_histogram_selector(sli),),)
    elif isinstance(sli, GoodputSLI):
        for index, one in enumerate(sli.latencies):
            where = path.child("goodput", "latencies", index)
            yield slo.alert_name, where, ((_histogram_selector(one),),)
    elif isinstance(sli, EventsSLI | RawSLI):
        queries = (sli.error_ratio,) if isinstance(sli, RawSLI) else (sli.part, sli.total)
        for query in queries:
            for selector in selectors_of(query.at(SAMPLE_WINDOW)):
                yield slo.alert_name, path, ((selector,),)
    else:
        part = sli.good if isinstance(sli, GoodRatioSLI) else sli.errors
        for counter in (part, sli.total):
            yield slo.alert_name, path, ((counter.render(),),)


def _histogram_selector(sli: LatencySLI) -> str:
    """The series of a histogram read: its ``_bucket`` series (classic) or its one series."""
    matchers = ", ".join(m.render() for m in sli.matchers)
    series = sli.metric if sli.native else f"{sli.metric}_bucket"
    return f"{series}{{{matchers}}}".replace("{}", "")


def _missing(server: Server, selectors: tuple[str, ...]) -> list[str]:
    now = server.now
    for selector in selectors:
        if selector not in server.seen:
            found = server.api.series(selector, str(now - DAY), str(now))
            server.seen[selector] = bool(found)
    return [s for s in selectors if not server.seen[s]]


def run(scope: Scope) -> None:
    """A series selector the rules read (an alert's metric, a diagnosis' evidence, an SLO's
    counters or histogram) that matches no series on the server over the last day: a typo,
    a metric renamed by an exporter upgrade, or a target that is not scraped. The rule is
    valid PromQL and passes its tests, and never fires. A rule that reads a renamed metric
    under each of its names (``new or old``: a vLLM signal with no ``vllm: {version}``) is
    reported only when no name has all its series."""
    for name, path, operands in reads(scope.spec):
        missing = [_missing(scope.online, selectors) for selectors in operands]
        if all(missing):  # the newest name's missing series (older names are no hint)
            for selector in missing[0]:
                scope.report(
                    path,
                    f"{name}: no series matches {selector} in the last day: a typo, a metric "
                    "renamed by an exporter upgrade (vLLM renames often), or a target not "
                    "scraped",
                )


CHECK = Check(
    "series/missing",
    "error",
    "a selector the rules read matches no series over the last day",
    run,
    online=True,
)
