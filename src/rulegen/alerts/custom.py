"""What a user writes beside rulegen's own rules: a custom alert's verbatim annotations and
examples, recording rules, and named rule groups, each checked at its position.

Why its own module: these keys carry the user's PromQL and Go templates as written (what a
Prometheus rule file holds, and what ``rulegen import`` produces), so they are checked for
what rulegen can know (syntax, names, duplicates, that an example's expected text can be
predicted) and otherwise passed through untouched; the catalog path in ``resolve`` never
sees them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from rulegen import gotemplate, units
from rulegen.alerts.model import NamedGroup, ResolvedExample, ResolvedRecording
from rulegen.core import promql
from rulegen.core.versions import DEFAULT, PrometheusVersion
from rulegen.source.fields import Collector, duration
from rulegen.source.loader import PathKey

# Prometheus accepts any group name; these keep it one printable line of a sane length.
MAX_GROUP_NAME = 255
MAX_INTERVAL = Decimal(3600)
# A generated test evaluates every rule at each evaluation up to its last check.
MAX_EVALUATIONS = 20_000
MAX_SERIES_SAMPLES = 100_000
# promtool's expanding notation: ``1 2 3``, ``_``, ``stale``, ``5x10``, ``0+10x100``, ``_x3``.
_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:Inf|inf|NaN|nan)"
_VALUE_TOKEN = re.compile(rf"^(?:_|stale|_x\d+|(?:{_NUMBER})(?:[-+](?:{_NUMBER}))?(?:x\d+)?)$")
_PRINTS_VALUE = re.compile(r"\{\{[^}]*\$value")
_WHOLE_LABELS = re.compile(r"\{\{-?\s*\$labels\s*-?\}\}")
_LABEL_NAME = "invalid label name (expected [a-zA-Z_][a-zA-Z0-9_]*, no __ prefix)"
_EMPTY_VALUE = "label value must not be empty (Prometheus drops empty labels)"
_OWN_TEST = "test the alert in a promtool test of your own (specs/tests/) instead of examples"


def group_name(col: Collector, path: PathKey, name: str | None) -> str | None:
    """A rule group's name as ``group:`` gives it: any text Prometheus accepts that is one
    printable line (not blank, no control characters, at most 255 characters)."""
    if name is None:
        return None
    if not name.strip():
        col.error(path, "a rule group name must not be empty")
        return None
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        col.error(path, "a rule group name must not hold control characters")
        return None
    if len(name) > MAX_GROUP_NAME:
        col.error(path, f"a rule group name must be at most {MAX_GROUP_NAME} characters")
        return None
    return name


def verbatim_annotations(col: Collector, path: PathKey, alert: Any) -> tuple[tuple[str, str], ...]:
    """A custom alert's ``annotations:``, exactly as written (Go templates for Prometheus,
    which promtool checks at build); ``summary`` or ``description`` beside it is an error."""
    for key in ("summary", "description"):
        if getattr(alert, key) is not None:
            col.error(
                (*path, key),
                f"{key} and annotations cannot both be given: annotations sets every annotation "
                f"as written (Go templates); write the {key} there as annotations.{key}",
            )
    for key in alert.annotations:
        if not promql.LABEL_NAME.match(key):
            col.error(
                (*path, "annotations", key),
                "invalid annotation name (expected [a-zA-Z_][a-zA-Z0-9_]*)",
            )
    return tuple(alert.annotations.items())


# --- examples -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExampleContext:
    """What every example of one custom alert is checked against."""

    col: Collector
    path: PathKey  # the alert's
    alert: Any
    expr: str
    for_seconds: Decimal
    annotations: tuple[tuple[str, str], ...]
    evaluation: Decimal
    scrape: Decimal
    labels: tuple[tuple[str, str], ...] = ()  # the rule's labels, as Go templates


def examples(ctx: ExampleContext) -> tuple[ResolvedExample, ...] | None:
    """A custom alert's ``examples:``, each checked at its position; ``None`` on an error."""
    before = len(ctx.col.diagnostics)
    out = [_example(ctx, index, item) for index, item in enumerate(ctx.alert.examples or ())]
    if len(ctx.col.diagnostics) > before:
        return None
    return tuple(e for e in out if e is not None)


def _example(ctx: ExampleContext, index: int, example: Any) -> ResolvedExample | None:
    col = ctx.col
    path: PathKey = (*ctx.path, "examples", index)
    series = tuple(_series(col, (*path, "series"), example.series))
    interval = ctx.scrape
    if example.interval is not None:
        found = duration(
            col, (*path, "interval"), example.interval, positive=True, most=MAX_INTERVAL
        )
        interval = found or interval
    fires = _times(ctx, (*path, "fires_at"), example.fires_at)
    silent = _times(ctx, (*path, "silent_at"), example.silent_at)
    if not example.fires_at and not example.silent_at:
        col.error(path, "an example needs fires_at or silent_at (when it must fire, or not)")
    for at in sorted(set(fires) & set(silent)):
        shown = units.format_duration(at)
        col.error((*path, "silent_at"), f"{shown} is in both fires_at and silent_at")
    for offset, at in enumerate(fires):
        if at < ctx.for_seconds:
            col.error(
                (*path, "fires_at", offset),
                f"{units.format_duration(at)} is before for "
                f"({units.format_duration(ctx.for_seconds)}) has elapsed: the alert cannot "
                "fire yet",
            )
    own = _labels(col, (*path, "labels"), example.labels)
    value = None
    if example.value is not None:
        try:
            value = units.parse_number(example.value)
        except units.UnitError as exc:
            col.error((*path, "value"), str(exc))
    elif fires and (printing := _prints_value(ctx)):
        col.error(
            path,
            f"the alert's {printing} print $value: give value: (what the expression returns "
            f"at fires_at), or {_OWN_TEST}",
        )
    if fires:
        _predictable(ctx, own)
    return ResolvedExample(series, interval, fires, silent, own, value, col.origin(path))


def _prints_value(ctx: ExampleContext) -> str | None:
    """``annotations`` or ``labels`` when their text prints ``$value`` (else ``None``)."""
    if any(_PRINTS_VALUE.search(text) for _, text in ctx.annotations):
        return "annotations"
    if any(_PRINTS_VALUE.search(text) for _, text in ctx.labels):
        return "labels"
    return None


def _series(col: Collector, path: PathKey, items: Any) -> list[tuple[str, str]]:
    out = []
    for index, item in enumerate(items):
        where: PathKey = (*path, index)
        try:
            _, matchers = promql.parse_selector(item.series)
            exact = all(m.op == "=" for m in matchers)
        except ValueError:
            exact = False
        if not exact:
            col.error(
                (*where, "series"),
                f'must be one series like name{{label="value"}} (got {item.series!r})',
            )
            continue
        tokens = item.values.split()
        bad = next((t for t in tokens if not _VALUE_TOKEN.match(t)), None)
        if not tokens or bad is not None:
            shown = f"{bad!r} in " if bad is not None else ""
            col.error(
                (*where, "values"),
                f"{shown}{item.values!r} is not promtool's expanding notation "
                "(e.g. '1 2 3', '0+10x100', '5x10', '_x3', 'stale')",
            )
            continue
        if sum(_samples(t) for t in tokens) > MAX_SERIES_SAMPLES:
            col.error((*where, "values"), f"holds more than {MAX_SERIES_SAMPLES} samples")
            continue
        out.append((item.series, item.values))
    return out


def _samples(token: str) -> int:
    """How many samples one token of the expanding notation stands for."""
    if "x" not in token:
        return 1
    count = int(token.rsplit("x", 1)[1])
    return count if token.startswith("_x") else count + 1


def _times(ctx: ExampleContext, path: PathKey, items: list[Any]) -> tuple[Decimal, ...]:
    out = []
    for index, item in enumerate(items):
        seconds = duration(ctx.col, (*path, index), item)
        if seconds is None:
            continue
        if seconds / ctx.evaluation > MAX_EVALUATIONS:
            ctx.col.error(
                (*path, index),
                f"more than {MAX_EVALUATIONS} evaluations at evaluation_interval "
                f"{units.format_duration(ctx.evaluation)}: the test would not finish",
            )
            continue
        out.append(seconds)
    return tuple(out)


def _labels(col: Collector, path: PathKey, given: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    for key, value in given.items():
        if not promql.LABEL_NAME.match(key) or key.startswith("__"):
            col.error((*path, key), _LABEL_NAME)
        elif value == "":
            col.error((*path, key), _EMPTY_VALUE)
    return tuple(sorted(given.items()))


def template_labels(expr: str, own: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """``$labels`` of an example's alert: its result labels, with ``__name__`` when the
    expression keeps it (``up == 0``); unknown names are left out (``_predictable`` refuses
    a template that would print them)."""
    try:
        name = promql.kept_name(expr)
    except promql.UnknownName:
        name = None
    return dict(own) | ({"__name__": name} if name else {})


def _predictable(ctx: ExampleContext, own: tuple[tuple[str, str], ...]) -> None:
    """Every annotation must be predictable (``gotemplate``): the examples' tests expect its
    exact text. A problem is reported at the annotation that holds it."""
    try:
        promql.kept_name(ctx.expr)
        name_known = True
    except promql.UnknownName:
        name_known = False
    labels = template_labels(ctx.expr, own)
    alert = ctx.alert
    texts = [(key, text, "annotations") for key, text in ctx.annotations]
    texts += [(key, text, "labels") for key, text in ctx.labels if key in (alert.labels or {})]
    for key, text, field in texts:
        where: PathKey = ctx.path
        if field == "labels" or alert.annotations is not None:
            where = (*ctx.path, field, key)
        elif getattr(alert, key, None) is not None:
            where = (*ctx.path, key)
        if not name_known and _WHOLE_LABELS.search(text):
            ctx.col.error(
                where,
                "cannot predict {{ $labels }} for the examples (whether the expression keeps "
                f"__name__ cannot be told from its text); {_OWN_TEST}",
            )
            continue
        try:
            gotemplate.expand(text, labels, 0.0)
        except gotemplate.UnsupportedTemplate as exc:
            ctx.col.error(where, f"{exc}: the examples' tests need its exact text; {_OWN_TEST}")


# --- recordings and rule groups ---------------------------------------------------------------


def resolve_recordings(col: Collector, spec: Any) -> list[ResolvedRecording]:
    """The spec's ``recordings:``, each checked at its position: a metric name, PromQL that
    returns a vector or a scalar, labels (``service`` is rulegen's), no two alike."""
    out: list[ResolvedRecording] = []
    seen: dict[tuple[str, tuple[tuple[str, str], ...]], int] = {}
    for index, item in enumerate(spec.recordings or ()):
        path: PathKey = ("recordings", index)
        before = len(col.diagnostics)
        if not promql.METRIC_NAME.match(item.record):
            col.error(
                (*path, "record"),
                f"invalid metric name {item.record!r} (expected [a-zA-Z_:][a-zA-Z0-9_:]*)",
            )
        error = promql.syntax_error(item.expr)
        if error is not None:
            col.promql_error((*path, "expr"), error)
        elif (kind := promql.result_type(item.expr)) not in ("vector", "scalar"):
            col.error((*path, "expr"), f"must return an instant vector or a scalar, not a {kind}")
        _recording_labels(col, (*path, "labels"), item.labels)
        group = group_name(col, (*path, "group"), item.group)
        if len(col.diagnostics) > before:
            continue
        labels = tuple(sorted({**item.labels, "service": spec.service}.items()))
        key = (item.record, labels)
        if key in seen:
            col.error(
                (*path, "record"),
                f"duplicate recording {item.record!r} with the same labels (also "
                f"recordings[{seen[key]}]): Prometheus would write one series twice",
            )
            continue
        seen[key] = index
        where = col.origin((*path, "group")) if group is not None else None
        out.append(
            ResolvedRecording(item.record, item.expr, labels, group, col.origin(path), where)
        )
    return out


def _recording_labels(col: Collector, path: PathKey, given: Mapping[str, str]) -> None:
    for key, value in given.items():
        if not promql.LABEL_NAME.match(key) or key.startswith("__"):
            col.error((*path, key), _LABEL_NAME)
        elif key == "service":
            col.error((*path, key), "label 'service' is set by rulegen and cannot be overridden")
        elif value == "":
            col.error((*path, key), _EMPTY_VALUE)


# What a named group's fields need of the declared Prometheus (``query_offset`` 2.53,
# group ``labels`` 3.0); older versions refuse the file.
GROUP_FIELDS_SINCE = {"query_offset": (2, 53), "labels": (3, 0)}


def resolve_groups(
    col: Collector, spec: Any, evaluation: Decimal, version: PrometheusVersion = DEFAULT
) -> tuple[NamedGroup, ...]:
    """The spec's ``groups:``, each with its interval (default ``evaluation_interval``),
    ``query_offset`` and ``labels``; a group that no custom alert or recording names is an
    error (a typo would leave its rules in another group), and so is a field the declared
    Prometheus version does not know."""
    used = {a.group for a in spec.alerts or () if a.signal == "custom" and a.group is not None}
    used |= {r.group for r in spec.recordings or () if r.group is not None}
    out = []
    for name, group in spec.groups.items():
        path: PathKey = ("groups", name)
        if group_name(col, path, name) is None:
            continue
        if name not in used:
            col.error(path, f"no custom alert or recording names this group (group: {name!r})")
            continue
        interval = evaluation
        if group.interval is not None:
            found = duration(
                col, (*path, "interval"), group.interval, positive=True, most=MAX_INTERVAL
            )
            interval = found if found is not None else interval
        for field, since in GROUP_FIELDS_SINCE.items():
            if getattr(group, field) and not version.at_least(*since):
                col.error(
                    (*path, field),
                    f"needs Prometheus {since[0]}.{since[1]} or later (prometheus.version is "
                    f"{version})",
                )
        offset = Decimal(0)
        if group.query_offset is not None:
            found = duration(col, (*path, "query_offset"), group.query_offset, most=MAX_INTERVAL)
            offset = found if found is not None else offset
        _recording_labels(col, (*path, "labels"), group.labels)
        labels = tuple(sorted(group.labels.items()))
        out.append(NamedGroup(name, interval, offset, labels))
    return tuple(out)
