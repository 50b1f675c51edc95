"""A trial render of a team's signal definition, to find templates that never finish.

Why: a template or recipe that loops or allocates without bound (``range(10**8)``,
``'x' * 10**9``) is a fault of the signal file, not of the spec that uses it, so it is
reported at its own line of the signal file when the catalog loads, before any spec is
rendered. The trial context is the signal's defaults and placeholder values; an error that
depends on a spec's values (a missing parameter, say) is left to the render of that spec.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

from rulegen.catalog.definition import SeriesDef, SignalDef
from rulegen.errors import Diagnostic
from rulegen.source.loader import PathKey, Positions
from rulegen.templating import TemplateFailure, TemplateLimit, evaluate, render_promql, render_text


def trial(signal: SignalDef, positions: Positions) -> list[Diagnostic]:
    """One diagnostic per template of ``signal`` that goes past the sandbox's limits."""
    out: list[Diagnostic] = []
    for path, render in _renders(signal):
        try:
            render()
        except TemplateLimit as exc:
            out.append(positions.diag(path, str(exc)))
        except TemplateFailure:
            continue  # depends on the spec's values: reported when a spec uses the signal
    return out


def _renders(signal: SignalDef) -> Iterator[tuple[PathKey, Callable[[], object]]]:
    params: dict[str, Any] = {name: p.default for name, p in signal.params.items()}
    fixed = {"window": signal.defaults.window or "5m", **params}
    promql = {**fixed, "sel": lambda *_: "{}", "sel_each": lambda *_: ["{}"], "host_by": ""}
    text = {
        **fixed, "value": "{{ $value }}", "threshold": "1", "for": signal.defaults.for_,
        "quantile_name": "p99",
    }  # fmt: skip
    recipe = {**params, "threshold": Decimal(1), "above": Decimal(1), "q": Decimal(1)}
    yield ("expr",), _bind(render_promql, signal.expr, promql)
    if signal.native_expr is not None:
        yield ("native_expr",), _bind(render_promql, signal.native_expr, promql)
    if signal.record is not None:
        yield ("record",), _bind(render_promql, signal.record, fixed)
    yield ("summary",), _bind(render_text, signal.summary, text)
    yield ("description",), _bind(render_text, signal.description, text)
    test = signal.test
    yield from _series(("test",), test.series, recipe)
    if test.histogram is not None:
        histogram = ("test", "histogram")
        yield (*histogram, "metric"), _bind(render_promql, test.histogram.metric, recipe)
        yield (*histogram, "per_step"), _bind(evaluate, test.histogram.per_step, recipe)
    for index, scenario in enumerate(test.neutral):
        where: PathKey = ("test", "neutral", index)
        if scenario.when is not None:
            yield (*where, "when"), _bind(evaluate, scenario.when, recipe)
        yield from _series(where, scenario.series, recipe)


def _series(
    where: PathKey, series: list[SeriesDef], recipe: dict[str, Any]
) -> Iterator[tuple[PathKey, Callable[[], object]]]:
    for index, definition in enumerate(series):
        path: PathKey = (*where, "series", index)
        yield (*path, "name"), _bind(render_promql, definition.name, recipe)
        for key, value in definition.labels.items():
            yield (*path, "labels", key), _bind(render_promql, value, recipe)
        for field in ("rate", "inc", "value", "when"):
            expression = getattr(definition, field)
            if expression is not None:
                yield (*path, field), _bind(evaluate, expression, recipe)


def _bind(
    function: Callable[[str, dict[str, Any]], object], source: str, context: dict[str, Any]
) -> Callable[[], object]:
    return lambda: function(source, context)
