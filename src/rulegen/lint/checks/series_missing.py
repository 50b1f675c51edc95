"""``series/missing`` (online): a selector that matches no series."""

from __future__ import annotations

from collections.abc import Iterator

from rulegen.core import promql
from rulegen.errors import FieldPath
from rulegen.lint.check import Check, Scope
from rulegen.pipeline.service import ResolvedSpec
from rulegen.slo.model import LatencySLI

DAY = 86400


def selectors_of(expr: str) -> Iterator[str]:
    """The raw series selectors an expression reads (``name{matchers}``)."""
    for _, text in promql.selectors(expr):
        yield text


def reads(spec: ResolvedSpec) -> Iterator[tuple[str, FieldPath, str]]:
    """(alert name, spec path, raw selector) for everything the spec's rules read."""
    for alert in spec.alerts:
        for selector in selectors_of(alert.quantity):
            yield alert.name, alert.origin.path, selector
    for diagnosis in spec.diagnoses:
        for item in diagnosis.evidence:
            for selector in selectors_of(item.recording.expr):
                yield diagnosis.name, diagnosis.origin.path, selector
    for slo in spec.slos:
        path = slo.origin.path.child("sli")
        sli = slo.sli
        if isinstance(sli, LatencySLI):
            matchers = ", ".join(m.render() for m in sli.matchers)
            series = sli.metric if sli.native else f"{sli.metric}_bucket"
            yield slo.alert_name, path, f"{series}{{{matchers}}}".replace("{}", "")
        else:
            for counter in (sli.errors, sli.total):
                yield slo.alert_name, path, counter.render()


def run(scope: Scope) -> None:
    """A series selector the rules read (an alert's metric, a diagnosis' evidence, an SLO's
    counters or histogram) that matches no series on the server over the last day: a typo,
    a metric renamed by an exporter upgrade, or a target that is not scraped. The rule is
    valid PromQL and passes its tests, and never fires."""
    server = scope.online
    now = server.now
    for name, path, selector in reads(scope.spec):
        if selector not in server.seen:
            found = server.api.series(selector, str(now - DAY), str(now))
            server.seen[selector] = bool(found)
        if not server.seen[selector]:
            scope.report(
                path,
                f"{name}: no series matches {selector} in the last day: a typo, a metric "
                "renamed by an exporter upgrade (vLLM renames often), or a target not scraped",
            )


CHECK = Check(
    "series/missing",
    "error",
    "a selector the rules read matches no series over the last day",
    run,
    online=True,
)
