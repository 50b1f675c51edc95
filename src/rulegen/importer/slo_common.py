"""What the SLO importers (Sloth, OpenSLO, Pyrra) share: reading hostile input with positions,
positioned notes, names, objectives, SLI queries, tiers, and one spec per service.

Why one module: the three tools describe the same thing (an objective over a window, errors
over total, burn-rate windows) in their own words; the check that decides whether a query *is*
a counter selector rulegen can wrap in ``increase()``, and the exact arithmetic that turns a
tool's burn windows into rulegen tiers, must give the same answer for all three.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, Decimal, InvalidOperation
from fractions import Fraction
from pathlib import Path
from typing import Any

import promql_parser

from rulegen import units
from rulegen.core import diagnostics as codes
from rulegen.core import promql
from rulegen.errors import Diagnostic, SpecError
from rulegen.errors import FieldPath as TypedPath
from rulegen.importer.model import FieldPath, ImportedService, ImportOptions, ImportResult, Note
from rulegen.slo.expression import PLACEHOLDER
from rulegen.slo.model import Selector
from rulegen.slo.resolve import DEFAULT_TIERS, RESERVED_GROUP_BY, subset_problem
from rulegen.source.base import ALERT_NAME
from rulegen.source.loader import LoadedDocument, LoadError, display, load_text, read_source
from rulegen.source.severities import NAME as SEVERITY_NAME
from rulegen.source.severities import NAME_TEXT as SEVERITY_TEXT

MAX_DOCUMENTS = 200
"""Documents (``---``) read from one file; a file of thousands of tiny documents is refused."""
SEVERITIES = ("critical", "warning", "info")
_DOC_MARKER = re.compile(r"^(---|\.\.\.)(?=[ \t]|$)")
_COMMENT_OR_BLANK = re.compile(r"^\s*(#.*)?$")


# --- reading ---------------------------------------------------------------------------------


def read_documents(path: Path) -> tuple[str, list[LoadedDocument]]:
    """Every YAML document of ``path`` through the guarded loader, with the file's own line
    numbers (each document is parsed on its own, padded with the lines before it).

    Raises ``SpecError`` when the file cannot be read at all (size, encoding, syntax, tags,
    aliases, depth: the loader's guards) or holds more than ``MAX_DOCUMENTS`` documents.
    """
    name = display(path)
    try:
        text = read_source(path, name)
        return name, [load_text(part, name) for part in _parts(text, name)]
    except LoadError as exc:
        raise SpecError([exc.diagnostic]) from None


def _parts(text: str, name: str) -> Iterator[str]:
    lines = text.splitlines(keepends=True)
    starts = [0]
    blanked = list(lines)
    for index, line in enumerate(lines):
        marker = _DOC_MARKER.match(line)
        if marker:
            # the marker becomes spaces: what follows it keeps its column
            blanked[index] = " " * len(marker.group(1)) + line[len(marker.group(1)) :]
            if line.startswith("---") and index:
                starts.append(index)
            elif line.startswith("..."):
                blanked[index] = "\n"
    starts.append(len(lines))
    found = 0
    for begin, end in zip(starts, starts[1:], strict=False):
        body = blanked[begin:end]
        if all(_COMMENT_OR_BLANK.match(line) for line in body):
            continue
        found += 1
        if found > MAX_DOCUMENTS:
            raise LoadError(_whole(name, f"more than {MAX_DOCUMENTS} YAML documents in one file"))
        yield "\n" * begin + "".join(body)


def _whole(name: str, message: str) -> Diagnostic:
    return Diagnostic(name, 1, 1, TypedPath(), message, codes.SPEC_YAML)


def field_name(path: FieldPath) -> str:
    """``slos[0].sli.events`` for a source path (keys that are not plain names quoted)."""
    return str(TypedPath.of(path))


@dataclass
class Source:
    """One document of an input file: where its values sit, and the notes made about it."""

    file: str
    doc: LoadedDocument
    result: ImportResult
    # where the object sits in the document: ``()``, or ``(i,)`` for the i-th object of a
    # YAML list of objects (the form OpenSLO's SDK reads and writes)
    prefix: FieldPath = ()

    def line(self, path: FieldPath) -> int:
        """The line of the value at ``path`` (or of its nearest ancestor in the file)."""
        return self.doc.positions.at((*self.prefix, *path))[0]

    def refuse(self, path: FieldPath, text: str) -> None:
        """``path`` cannot be carried over: say so, with its line, never drop it silently."""
        name = field_name((*self.prefix, *path))
        self.result.refused.append(Note(self.file, self.line(path), name, text))

    def adapt(self, path: FieldPath, text: str) -> None:
        """A choice made while mapping ``path``."""
        name = field_name((*self.prefix, *path))
        self.result.adapted.append(Note(self.file, self.line(path), name, text))

    def where(self, path: FieldPath) -> str:
        """``file:line`` of ``path``, for the ``imported`` lines."""
        return f"{self.file}:{self.line(path)}"

    def known(
        self, data: Mapping[str, Any], path: FieldPath, keys: Collection[str], tool: str
    ) -> None:
        """Refuse every key of ``data`` the mapping does not read."""
        for key in data:
            if key not in keys:
                self.refuse((*path, key), f"not a {tool} field rulegen knows; left out")

    def mapping(self, data: Mapping[str, Any], path: FieldPath, key: str) -> dict[str, Any] | None:
        """``data[key]`` when it is a mapping, ``{}`` when absent; ``None`` (refused) else."""
        value = data.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.refuse((*path, key), f"must be a mapping (got {type(value).__name__})")
            return None
        return value

    def text(self, data: Mapping[str, Any], path: FieldPath, key: str) -> str | None:
        """``data[key]`` when it is a non-empty string; ``None`` when absent (or refused)."""
        value = data.get(key)
        if value is None:
            return None
        if not isinstance(value, str) or not value.strip():
            self.refuse((*path, key), f"must be a non-empty string (got {value!r:.60})")
            return None
        return value

    def flag(self, data: Mapping[str, Any], path: FieldPath, key: str) -> bool | None:
        """``data[key]`` when it is a boolean; ``None`` when absent (or refused)."""
        value = data.get(key)
        if value is None:
            return None
        if not isinstance(value, bool):
            self.refuse((*path, key), f"must be true or false (got {value!r:.60})")
            return None
        return value

    def labels(self, data: Mapping[str, Any], path: FieldPath, key: str) -> dict[str, str]:
        """``data[key]`` as label names → values; each bad entry refused on its own."""
        raw = self.mapping(data, path, key) or {}
        out: dict[str, str] = {}
        for name, value in raw.items():
            where = (*path, key, name)
            if not promql.LABEL_NAME.match(name) or name.startswith("__"):
                self.refuse(where, f"{name!r} is not a Prometheus label name")
            elif not isinstance(value, str | int | float) or isinstance(value, bool):
                self.refuse(where, f"a label value must be a string (got {value!r:.60})")
            else:
                out[name] = str(value)
        return out


# --- names, numbers, windows -----------------------------------------------------------------


def service_name(raw: str) -> str | None:
    """``raw`` made a rulegen service name (``[a-z0-9][a-z0-9-]*``, at most 63 characters)."""
    text = re.sub(r"[^a-z0-9-]+", "-", raw.strip().lower())
    text = re.sub(r"^[^a-z0-9]+", "", text)[:63].rstrip("-")
    return text or None


def slo_name(raw: str) -> str | None:
    """``raw`` made a rulegen SLO name (``[a-z0-9][a-z0-9_-]*``, at most 63 characters)."""
    text = re.sub(r"[^a-z0-9_-]+", "-", raw.strip().lower())
    text = re.sub(r"^[^a-z0-9]+", "", text)[:63].rstrip("-_")
    return text or None


def decimal_of(raw: object) -> Decimal | None:
    """A finite number from YAML (an int, a float written as such, or a numeric string)."""
    if isinstance(raw, bool) or not isinstance(raw, int | float | str):
        return None
    try:
        value = Decimal(raw.strip() if isinstance(raw, str) else repr(raw))
    except InvalidOperation:
        return None
    return value if value.is_finite() else None


def percent_text(ratio: Decimal) -> str:
    """``0.999`` → ``99.9%`` (exact, no float noise)."""
    return f"{format((ratio * 100).normalize(), 'f')}%"


def objective(raw: object, *, percent: bool) -> tuple[str | None, str]:
    """A tool's objective (a percentage like Sloth's ``99.9``, or a ratio like OpenSLO's
    ``0.999``) as rulegen's ``99.9%``; else ``None`` and the reason."""
    value = decimal_of(raw)
    if value is None:
        return None, f"must be a number (got {raw!r:.60})"
    ratio = value / 100 if percent else value
    if not 0 < ratio < 1:
        scale = "between 0 and 100" if percent else "between 0 and 1"
        return None, f"must be {scale}, both exclusive (got {raw!r:.60})"
    return percent_text(ratio), ""


def window_seconds(raw: object) -> Decimal | None:
    """A Prometheus-style duration (``30d``, ``2w``, ``4w``) in whole seconds, else ``None``."""
    if not isinstance(raw, str):
        return None
    try:
        seconds = units.parse_duration(raw.strip())
    except units.UnitError:
        return None
    if seconds <= 0 or seconds != seconds.to_integral_value() or seconds > 365 * 86400:
        return None
    return seconds


def duration_text(seconds: Decimal | Fraction | int) -> str:
    """Seconds as rulegen writes a window: ``30d``, ``6h``, ``2m30s``."""
    return units.format_duration(Decimal(int(seconds)))


# --- SLI queries -----------------------------------------------------------------------------

_WINDOW_RANGE = re.compile(r"^(?P<sel>.*?)\[\s*\{\{\s*\.window\s*\}\}\s*\]\s*$", re.DOTALL)
_OPEN = {"(": ")", "[": "]", "{": "}"}


@dataclass(frozen=True)
class Events:
    """``sum [by (…)] (rate(SELECTOR[window]))``: the selector and the ``by`` labels."""

    metric: str
    matchers: tuple[promql.Matcher, ...]
    by: tuple[str, ...]

    def selector(self) -> str:
        """The counter selector rulegen's ``sli.ratio`` takes."""
        return selector_text(self.metric, self.matchers)


def selector_text(metric: str, matchers: tuple[promql.Matcher, ...]) -> str:
    """``name{a="b",c=~"d"}`` (or the bare name); a UTF-8 name (Prometheus 3) quoted inside
    the braces as ``promql.selector_text`` writes it: ``{"http.requests", a="b"}``."""
    if not promql.METRIC_NAME.match(metric):
        return promql.selector_text(metric, matchers)
    inner = ",".join(m.render() for m in matchers)
    return f"{metric}{{{inner}}}" if matchers else metric


def _scan(text: str) -> Iterator[tuple[int, str, int]]:
    """``(index, character, depth)`` of every character outside string literals."""
    depth = 0
    quote = ""
    escaped = False
    for index, char in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif char == "\\" and quote != "`":
                escaped = True
            elif char == quote:
                quote = ""
            continue
        if char in "\"'`":
            quote = char
            continue
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        yield index, char, depth


def _closing(text: str, start: int) -> int:
    """Index of the bracket closing the one at ``start``, or -1."""
    target = text[start]
    for index, _char, depth in _scan(text[start:]):
        if depth == 0 and index > 0:
            return start + index if text[start + index] == _OPEN[target] else -1
    return -1


def strip_parens(text: str) -> str:
    """``((x))`` → ``x``: outer parentheses that enclose the whole expression."""
    text = text.strip()
    while text.startswith("(") and _closing(text, 0) == len(text) - 1:
        text = text[1:-1].strip()
    return text


def split_top(text: str, operator: str) -> tuple[str, str] | None:
    """``a OP b`` split at its one top-level ``OP`` (``-`` or ``/``); ``None`` otherwise."""
    text = strip_parens(text)
    hits = [i for i, char, depth in _scan(text) if depth == 0 and char == operator and i > 0]
    if len(hits) != 1:
        return None
    return text[: hits[0]], text[hits[0] + 1 :]


_WHY = (
    "is not sum(rate(SELECTOR[{{.window}}])) (optionally with by (…)): rulegen's SLI "
    "takes a counter selector and adds increase() itself, so any other expression "
    "would count something else"
)
_WITHOUT = "sums without (…): rulegen's group_by keeps named labels; use by (…)"
_CLAUSE = r"(by|without)\s*\(([^()]*)\)"


def events(query: str) -> Events | str:
    """A Sloth/OpenSLO events query as a counter selector, or why it is not one.

    Only ``sum(rate(SELECTOR[{{.window}}]))`` (``increase`` too, the same ratio), optionally
    ``sum by (…)`` or ``sum(…) by (…)``, maps: anything else computes something rulegen's
    ``increase(selector)`` would not."""
    summed = _sum(strip_parens(query))
    if isinstance(summed, str):
        return summed
    inner, by = summed
    call = re.match(r"(rate|increase)\s*\(", inner)
    if call is None or _closing(inner, call.end() - 1) != len(inner) - 1:
        return _WHY
    ranged = _WINDOW_RANGE.match(inner[call.end() : -1])
    if ranged is None:
        return f"{_WHY} (the range must be [{{{{.window}}}}])"
    names = [_by_label(label) for label in by]
    bad = [label for label, name in zip(by, names, strict=True) if name is None]
    if bad:
        return f"by ({', '.join(bad)}): not label names"
    try:
        metric, matchers = promql.parse_selector(ranged.group("sel"))
    except ValueError as exc:
        return f"{_WHY}: {exc}"
    return Events(metric, matchers, tuple(n for n in names if n is not None))


def _by_label(text: str) -> str | None:
    """One label of a ``by (…)`` list: a bare name, or a quoted UTF-8 one (Prometheus 3:
    ``"k8s.pod"``, which rulegen's ``group_by`` takes under a 3.x declaration); ``None``
    for anything else."""
    if promql.LABEL_NAME.match(text):
        return text
    quoted = re.fullmatch(r'"([^"\\]*)"', text)
    if quoted is not None and promql.writable_label(quoted.group(1)):
        return quoted.group(1)
    return None


def _sum(text: str) -> tuple[str, tuple[str, ...]] | str:
    """``sum [by (…)] (INNER) [by (…)]`` → INNER and the by labels, or why not."""
    match = re.match(r"sum\s*", text)
    if match is None:
        return _WHY
    rest = text[match.end() :]
    clauses: list[re.Match[str]] = []
    clause = re.match(_CLAUSE + r"\s*", rest)
    if clause:
        clauses.append(clause)
        rest = rest[clause.end() :]
    close = _closing(rest, 0) if rest.startswith("(") else -1
    if close < 0:
        return _WHY
    inner, tail = rest[1:close].strip(), rest[close + 1 :].strip()
    if tail:
        after = re.fullmatch(_CLAUSE, tail)
        if after is None:
            return _WHY
        clauses.append(after)
    if len(clauses) > 1:
        return _WHY
    if clauses and clauses[0].group(1) == "without":
        return _WITHOUT
    by = [p.strip() for p in clauses[0].group(2).split(",") if p.strip()] if clauses else []
    return inner, tuple(by)


def plain_selector(text: str) -> Events | str:
    """A Pyrra ``metric:`` (a selector with no function around it), or why it is not one."""
    try:
        metric, matchers = promql.parse_selector(text)
    except ValueError as exc:
        return str(exc)
    return Events(metric, matchers, ())


def counter_query(text: str) -> Events | str:
    """An OpenSLO ``counter: true`` query: a counter selector, or ``sum [by (…)] (SELECTOR)``
    of one (OpenSLO's own v1 example), whose events are the selector's."""
    plain = plain_selector(text)
    if isinstance(plain, Events):
        return plain
    summed = _sum(strip_parens(text))
    if isinstance(summed, str):
        return plain
    inner, by = summed
    selector = plain_selector(inner)
    if isinstance(selector, str):
        return plain
    return Events(selector.metric, selector.matchers, by)


def group_by_problem(by: tuple[str, ...]) -> str | None:
    """Why rulegen cannot keep these grouping labels, or ``None``."""
    taken = [label for label in by if label in RESERVED_GROUP_BY]
    if not taken:
        return None
    return (
        f"grouped by {', '.join(taken)}: rulegen sets that label on its own rules, so the "
        "groups cannot be kept, and one SLO over all of them would page later than the source"
    )


@dataclass(frozen=True)
class SLIMapping:
    """An SLI in rulegen's words: ``sli`` (the spec's ``sli`` mapping) and ``group_by``."""

    sli: dict[str, Any]
    group_by: tuple[str, ...]
    note: str


def ratio_sli(errors: Events, total: Events) -> SLIMapping | str:
    """``errors``/``total`` counters as rulegen's ratio SLI, or why they do not map."""
    if sorted(errors.by) != sorted(total.by):
        return (
            f"errors are summed by ({', '.join(errors.by)}) and total by "
            f"({', '.join(total.by)}): the ratio of two differently grouped sums has no "
            "group_by in rulegen"
        )
    sli = {"ratio": {"errors": errors.selector(), "total": total.selector()}}
    return SLIMapping(sli, total.by, "")


def latency_sli(count: Events, bucket: Events) -> SLIMapping | str:
    """``count − bucket{le=…}`` over ``count``: rulegen's latency SLI, or why not."""
    if not count.metric.endswith("_count") or not bucket.metric.endswith("_bucket"):
        return "the slow requests are not X_count minus X_bucket{le=…} of one histogram"
    base = count.metric[: -len("_count")]
    if bucket.metric[: -len("_bucket")] != base:
        return f"{count.metric} and {bucket.metric} are not series of one histogram"
    les = [m for m in bucket.matchers if m.name == "le"]
    if len(les) != 1 or les[0].op != "=":
        return f'{bucket.metric} needs exactly one le="…" matcher (the threshold)'
    if sorted(count.by) != sorted(bucket.by):
        return "the bucket and the count are summed by different labels"
    rest = {m.render() for m in bucket.matchers if m.name != "le"}
    if rest != {m.render() for m in count.matchers}:
        # a bucket narrower than its count (fast *and* successful): good over total
        return good_ratio_sli(bucket, count)
    bound = decimal_of(les[0].value)
    if bound is None or bound <= 0:
        return f"le={les[0].value!r} is not a positive finite bucket bound"
    threshold = units.format_latency(bound)
    if units.LATENCY.match(threshold) is None:  # pragma: no cover - format_latency's contract
        return f"le={les[0].value!r} cannot be written as a rulegen latency threshold"
    latency: dict[str, Any] = {"metric": base, "threshold": threshold}
    if count.matchers:
        latency["matchers"] = ",".join(m.render() for m in count.matchers)
    note = f'slow requests are {base}_count minus {base}_bucket{{le="{les[0].value}"}}'
    return SLIMapping({"latency": latency}, count.by, note)


def difference_sli(errors_query: str, total_query: str) -> SLIMapping | str:
    """``(sum(rate(X_count…)) − sum(rate(X_bucket{le}…)))`` over ``sum(rate(X_count…))``
    (Sloth's latency SLI) as rulegen's latency SLI, or why not."""
    parts = split_top(errors_query, "-")
    if parts is None:
        return "not a difference of two event queries"
    left, right, total = events(parts[0]), events(parts[1]), events(total_query)
    for item in (left, right, total):
        if isinstance(item, str):
            return item
    assert isinstance(left, Events)
    assert isinstance(right, Events)
    assert isinstance(total, Events)
    if left != total:
        return "the errors do not subtract from the same count the total reads"
    return latency_sli(left, right)


def events_sli(errors_query: str, total_query: str) -> SLIMapping | str:
    """An errors query and a total query as rulegen's ratio or latency SLI, or the reason."""
    errors, total = events(errors_query), events(total_query)
    if isinstance(total, str):
        return f"total: {total}"
    if isinstance(errors, Events):
        return ratio_sli(errors, total)
    latency = difference_sli(errors_query, total_query)
    return latency if isinstance(latency, SLIMapping) else f"errors: {errors}"


def expression_sli(kind: str, queries: dict[str, str]) -> SLIMapping | str:
    """Queries that are no counter pair as rulegen's expression SLI (``events`` or ``raw``,
    docs/slos.md#expression-slis), rendered per window as the source renders them; grouped
    by the ``by`` labels of the queries' outermost aggregation (the same on every query, or
    why not). The imported SLI has no ``test:`` series: rulegen cannot know what the raw
    series look like, so the note says to add them for a generated test."""
    groups: set[tuple[str, ...]] = set()
    for query in queries.values():
        if not PLACEHOLDER.search(query):
            return "has no {{.window}}: the query would not follow the window"
        sample = PLACEHOLDER.sub("5m", query)
        problem = promql.syntax_error(sample)
        if problem is not None:
            return f"is not PromQL: {problem}"
        groups.add(_outer_by(sample))
    if len(groups) != 1:
        return "its queries are grouped by different labels: the ratio of them has no group_by"
    by = groups.pop()
    note = (
        f"an expression SLI ({kind}), rendered per window: no generated test until "
        f"sli.{kind}.test says what good and bad series look like"
    )
    return SLIMapping({kind: dict(queries)}, by, note)


def timeslice_sli(mapped: SLIMapping, target: Decimal, timeslice: str) -> SLIMapping | str:
    """A counter SLI's time slices as events (OpenSLO ``Timeslices``): a slice of length
    ``timeslice`` is bad when its share of good events is below ``target``; a slice without
    requests (a 0/0 ratio, NaN, not below) counts as good, a slice without series as none.
    The errors are the bad slices, the total the slices, counted by subqueries stepping one
    slice (aligned to the epoch, as disjoint slices are)."""
    ratio = mapped.sli.get("ratio")
    if not isinstance(ratio, dict):
        return "Timeslices over a latency SLI: only a ratio of counters maps"
    by = ", ".join(mapped.group_by)
    summed = f"sum by ({by}) " if by else "sum"
    total = f"{summed}(rate({ratio['total']}[{timeslice}]))"
    if "good" in ratio:
        good = f"{summed}(rate({ratio['good']}[{timeslice}])) / {total}"
    else:
        good = f"1 - {summed}(rate({ratio['errors']}[{timeslice}])) / {total}"
    bad = f"({good}) < bool {target.normalize()}"
    window = "{{.window}}"
    sli = {"events": {"errors": f"sum_over_time(({bad})[{window}:{timeslice}])",
                      "total": f"count_over_time(({bad})[{window}:{timeslice}])"}}  # fmt: skip
    note = (
        f"Timeslices: the events are {timeslice} slices, a slice bad when under "
        f"{target.normalize()} of its events are good (an events SLI, no generated test "
        "until sli.events.test is given)"
    )
    return SLIMapping(sli, mapped.group_by, note)


THRESHOLD_OPS = {"lt": ">=", "lte": ">", "gt": "<=", "gte": "<"}
"""OpenSLO's threshold operators, each with the comparison that makes a value bad."""


def threshold_sli(query: str, op: str, value: Decimal, step: str) -> SLIMapping | str:
    """A threshold on one query's value (OpenSLO ``thresholdMetric``) as events: the query
    sampled every ``step`` by subqueries, each series' sample an event, bad when it fails
    ``op value`` (a sample without a value, a NaN, is good: no comparison holds for it)."""
    if PLACEHOLDER.search(query):
        return "a threshold query has no window of its own to take {{.window}}"
    problem = promql.syntax_error(query)
    if problem is not None:
        return f"is not PromQL: {problem}"
    if promql.result_type(query) != "vector":
        return "a threshold query must return an instant vector"
    bad = f"({query}) {THRESHOLD_OPS[op]} bool {value.normalize()}"
    window = "{{.window}}"
    sli = {"events": {"errors": f"sum(sum_over_time(({bad})[{window}:{step}]))",
                      "total": f"sum(count_over_time(({bad})[{window}:{step}]))"}}  # fmt: skip
    note = (
        f"a threshold ({op} {value.normalize()}): each series' value every {step} is an event, "
        "bad when it fails the threshold (an events SLI, no generated test until "
        "sli.events.test is given)"
    )
    return SLIMapping(sli, (), note)


def _outer_by(query: str) -> tuple[str, ...]:
    """The ``by`` labels of the outermost aggregation (through ``or``, ``+``… on its left)."""
    node = promql_parser.parse(query)
    while True:
        if isinstance(node, promql_parser.ParenExpr):
            node = node.expr
        elif isinstance(node, promql_parser.BinaryExpr):
            node = node.lhs
        elif isinstance(node, promql_parser.AggregateExpr):
            modifier = node.modifier
            if modifier is not None and "By" in str(modifier.type):
                return tuple(modifier.labels)
            return ()
        else:
            return ()


_INVERSE = {"=": "!=", "!=": "=", "=~": "!~", "!~": "=~"}


def good_ratio_sli(good: Events, total: Events) -> SLIMapping | str:
    """``good`` over ``total`` as rulegen's ``sli.ratio.good``, or why not: the good events
    must be a subset of the total's (``rulegen.slo.resolve.subset_problem``)."""
    if sorted(good.by) != sorted(total.by):
        return "good and total are summed by different labels"
    problem = subset_problem(
        Selector(good.metric, good.matchers), Selector(total.metric, total.matchers), "good"
    )
    if problem is not None:
        return f"good {problem}"
    sli = {"ratio": {"good": good.selector(), "total": total.selector()}}
    return SLIMapping(sli, total.by, f"good events over total: {good.selector()}")


def complement_sli(good: Events, total: Events) -> SLIMapping | str:
    """Errors = total − good, where good is total with exactly one more matcher: the errors
    are total with that matcher inverted (every series matches one of the two, exactly).
    Any other good selector (another metric, a bucket over a count, more matchers) is taken
    as it is: ``sli.ratio.good``."""
    if sorted(good.by) != sorted(total.by):
        return "good and total are summed by different labels"
    have = {m.render() for m in total.matchers}
    extra = [m for m in good.matchers if m.render() not in have]
    if (
        good.metric != total.metric
        or not have <= {m.render() for m in good.matchers}
        or len(extra) != 1
    ):
        return good_ratio_sli(good, total)
    inverse = promql.Matcher(extra[0].name, _INVERSE[extra[0].op], extra[0].value)
    errors = Events(total.metric, (*total.matchers, inverse), total.by)
    note = f"errors are total minus good: {good.selector()} → {inverse.render()}"
    return SLIMapping(
        {"ratio": {"errors": errors.selector(), "total": total.selector()}}, total.by, note
    )


# --- tiers -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Burn:
    """One burn-rate window of a tool: alert when ``factor`` × budget is exceeded over both."""

    alert: str  # page | ticket
    long: Fraction
    short: Fraction
    share: Fraction  # of the error budget, burnt in ``long`` at ``factor``
    for_: Fraction = Fraction(0)


def default_burns() -> list[Burn]:
    """rulegen's default tiers (the Workbook's)."""
    return [
        Burn(alert, Fraction(units.parse_duration(long)), Fraction(units.parse_duration(short)),
             Fraction(units.parse_percent(budget)))
        for long, short, budget, alert in DEFAULT_TIERS
    ]  # fmt: skip


def share_text(share: Fraction) -> tuple[str, bool]:
    """The share as rulegen's ``budget`` (``2%``, ``6.25%``) and whether it was rounded up
    (a share like 1/48 has no exact decimal: rounded up at the 6th decimal of the percentage,
    so the factor can only grow, and the alert can only be stricter than the source's)."""
    percent = share * 100
    exact = Decimal(percent.numerator) / Decimal(percent.denominator)
    if Fraction(exact) == percent:
        return f"{format(exact.normalize(), 'f')}%", False
    rounded = exact.quantize(Decimal("0.000001"), rounding=ROUND_CEILING)
    return f"{format(rounded.normalize(), 'f')}%", True


@dataclass(frozen=True)
class Tiers:
    """``tiers:`` for a tool's burns (``None``: rulegen's defaults), whether a share was
    rounded up, and the burns left out because they can never fire."""

    tiers: list[dict[str, str]] | None
    rounded: bool
    never: list[Burn]


def tiers(burns: list[Burn] | None, period: Fraction, objective: str) -> Tiers:
    """The tiers for ``burns`` (``None``: rulegen's defaults) at ``objective`` (``99.9%``).

    A burn whose error-ratio threshold (factor × budget) is 100% or more can never fire, in
    the source either: it is left out (rulegen refuses such a tier)."""
    budget_ratio = Fraction(Decimal(objective[:-1]) / 100)
    budget_ratio = 1 - budget_ratio
    chosen = default_burns() if burns is None else burns
    never: list[Burn] = []
    kept: list[Burn] = []
    for burn in chosen:
        factor = Fraction(Decimal(share_text(burn.share)[0][:-1]) / 100) * period / burn.long
        (never if factor * budget_ratio >= 1 else kept).append(burn)
    key = sorted((b.alert, b.long, b.short, b.share) for b in kept)
    if key == sorted((b.alert, b.long, b.short, b.share) for b in default_burns()):
        return Tiers(None, False, never)
    out: list[dict[str, str]] = []
    rounded = False
    for burn in kept:
        budget, was = share_text(burn.share)
        rounded = rounded or was
        out.append(
            {"long": duration_text(burn.long), "short": duration_text(burn.short),
             "budget": budget, "alert": burn.alert}
        )  # fmt: skip
    return Tiers(out, rounded, never)


def never_text(burn: Burn, period: Fraction, objective: str) -> str:
    """Why a burn window is left out."""
    factor = burn.share * period / burn.long
    return (
        f"the {burn.alert} window {duration_text(burn.long)}/{duration_text(burn.short)} "
        f"(burn {format_fraction(factor)}×) can never fire at {objective}: its threshold is "
        "at least 100% of events; left out"
    )


def format_fraction(value: Fraction) -> str:
    """A factor for a message: ``14``, ``14.4``, ``0.933…``."""
    exact = Decimal(value.numerator) / Decimal(value.denominator)
    return format(exact.normalize(), "f") if Fraction(exact) == value else f"{float(value):.4g}"


# --- services --------------------------------------------------------------------------------


@dataclass
class _Service:
    name: str
    top: dict[str, Any] = field(default_factory=dict)
    top_from: dict[str, str] = field(default_factory=dict)
    slos: list[dict[str, Any]] = field(default_factory=list)
    comments: dict[FieldPath, str] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)
    # severities outside rulegen's default ones, in the order met, with where each was met
    severities: dict[str, str] = field(default_factory=dict)


class Services:
    """The specs an import writes: one per service, its SLOs merged in input order."""

    def __init__(self, result: ImportResult, options: ImportOptions) -> None:
        self.result = result
        self.options = options
        self._services: dict[str, _Service] = {}

    def name(self, src: Source, raw: object, path: FieldPath, what: str) -> str | None:
        """The service: ``--service``, else the source's ``raw`` sanitised (the change
        noted); ``None`` (refused) when there is none."""
        if self.options.service is not None:
            return self.options.service
        if not isinstance(raw, str) or service_name(raw) is None:
            src.refuse(path, f"no service name ({what}); give one with --service")
            return None
        name = service_name(raw)
        assert name is not None
        if name != raw:
            src.adapt(path, f"service {raw!r} is {name!r} in rulegen ([a-z0-9][a-z0-9-]*)")
        return name

    def _get(self, name: str, src: Source) -> _Service:
        service = self._services.setdefault(name, _Service(name))
        if src.file not in service.sources:
            service.sources.append(src.file)
        return service

    def set_top(
        self, service: str, src: Source, key: tuple[str, ...], value: Any, path: FieldPath
    ) -> bool:
        """A service-level value (``labels.owner``, ``runbook_url``); a different value from
        another SLO of the same service is refused."""
        spec = self._get(service, src)
        node = spec.top
        for part in key[:-1]:
            node = node.setdefault(part, {})
        shown = ".".join(key)
        if key[-1] in node and node[key[-1]] != value:
            src.refuse(
                path,
                f"service {service}: {shown} is already {node[key[-1]]!r} (from "
                f"{spec.top_from[shown]}); one spec has one value",
            )
            return False
        node[key[-1]] = value
        spec.top_from.setdefault(shown, src.where(path))
        return True

    def comment(self, service: str, src: Source, key: FieldPath, text: str) -> None:
        """A comment above a service-level key."""
        self._get(service, src).comments.setdefault(key, text)

    def add_slo(
        self, service: str, src: Source, slo: dict[str, Any], comments: dict[FieldPath, str],
        path: FieldPath,
    ) -> None:  # fmt: skip
        """One SLO (its comments keyed by paths inside it); a name taken is refused."""
        spec = self._get(service, src)
        if any(other["name"] == slo["name"] for other in spec.slos):
            src.refuse(path, f"service {service} already has an SLO named {slo['name']!r}")
            return
        index = len(spec.slos)
        spec.slos.append(slo)
        for key, text in comments.items():
            spec.comments[("slos", index, *key)] = text
        self.result.imported.append(f"{service}/{slo['name']} ({src.where(path)})")

    def severity(self, service: str, src: Source, value: str, path: FieldPath) -> str | None:
        """A severity of the source: one of rulegen's default ones, or another name, which
        the spec then declares in ``severities:`` after them (noted, as ``import prometheus``
        does); ``None`` (refused) for one that is no name a declaration takes."""
        if value in SEVERITIES:
            return value
        if not SEVERITY_NAME.match(value):
            src.refuse(path, f"severity {value!r} is not a name rulegen can declare "
                       f"({SEVERITY_TEXT}); rulegen's default is kept")  # fmt: skip
            return None
        spec = self._get(service, src)
        if value not in spec.severities:
            spec.severities[value] = src.where(path)
            src.adapt(path, f"severity {value!r} is not one of rulegen's default severities "
                      f"({', '.join(SEVERITIES)}); the spec declares it in `severities:`, after "
                      "them (docs/migrating.md#severities)")  # fmt: skip
        return value

    def finish(self) -> None:
        """Append one ``ImportedService`` per service that has an SLO."""
        for service in self._services.values():
            if not service.slos:
                continue
            document: dict[str, Any] = {"version": 1, "service": service.name}
            for key in ("labels", "runbook_url", "targets"):
                if key in service.top:
                    document[key] = service.top[key]
            if service.severities:
                document["severities"] = [*SEVERITIES, *service.severities]
                first = ", ".join(f"{name} ({at})" for name, at in service.severities.items())
                service.comments[("severities",)] = (
                    f"severities: rulegen's default ones, then the source's: {first}.\n"
                    "Most severe first; the first pages ({name: X, pages: true} for another). "
                    "Move the list\ninto the defaults file your specs extend to share it "
                    "(docs/migrating.md#severities)"
                )
            document["slos"] = service.slos
            self.result.services.append(
                ImportedService(service.name, document, service.comments, service.sources)
            )


def slo_name_of(src: Source, raw: object, path: FieldPath) -> str | None:
    """The SLO's name sanitised to rulegen's pattern (the change noted), else refused."""
    if not isinstance(raw, str) or slo_name(raw) is None:
        src.refuse(path, f"no usable SLO name (got {raw!r:.60})")
        return None
    name = slo_name(raw)
    assert name is not None
    if name != raw:
        src.adapt(path, f"SLO name {raw!r} is {name!r} in rulegen ([a-z0-9][a-z0-9_-]*)")
    return name


def is_alert_name(name: str) -> bool:
    """Whether ``name`` is a Prometheus alert name (rulegen's ``alerting.name`` pattern)."""
    return re.match(ALERT_NAME, name) is not None


def alerting_block(
    name: str | None, page: dict[str, Any], ticket: dict[str, Any], labels: dict[str, str],
    fors: dict[str, str] | None = None, absent: dict[str, Any] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """The SLO's ``alerting`` mapping with only the keys that differ from rulegen's defaults
    (a switch's own ``labels`` and ``annotations`` kept as given)."""
    out: dict[str, Any] = {}
    if name and name != "ErrorBudgetBurn":
        out["name"] = name
    for key, switch in (("page", page), ("ticket", ticket)):
        entry = _switch_entry(key, switch)
        if entry:
            out[key] = entry
    if fors:
        out["for"] = fors
    if labels:
        out["labels"] = dict(sorted(labels.items()))
    if absent is not None:
        out["absent"] = absent
    return out


def _switch_entry(key: str, switch: dict[str, Any]) -> dict[str, Any]:
    """``alerting.page`` (or ``ticket``): what differs from rulegen's default."""
    default = "critical" if key == "page" else "warning"
    entry: dict[str, Any] = {}
    if switch.get("severity", default) != default:
        entry["severity"] = switch["severity"]
    if switch.get("enabled", True) is False:
        entry["enabled"] = False
    for own in ("labels", "annotations"):
        if switch.get(own):
            entry[own] = dict(sorted(switch[own].items()))
    return entry


# Labels rulegen sets on an SLO's alerts, and annotations it writes: a tool's own cannot be
# carried over under these names (rulegen.slo.resolve refuses them).
OWN_LABELS = frozenset({"service", "slo", "severity", "alertname", "alertstate"})
OWN_ANNOTATIONS = frozenset({"summary", "description", "runbook_url", "slo_description"})


def own_labels(
    src: Source, labels: dict[str, str], where: FieldPath, group_by: tuple[str, ...], whose: str
) -> dict[str, str]:
    """A tool's labels of one alert (``whose``: the page, the ticket) that rulegen can carry:
    each one rulegen sets, a ``group_by`` label or an empty value is refused at its line."""
    out: dict[str, str] = {}
    for name, value in labels.items():
        here = (*where, name)
        if name in OWN_LABELS or name in group_by:
            src.refuse(here, f"rulegen sets {name} on the {whose} itself; left out")
        elif value == "":
            src.refuse(here, "an empty label value (Prometheus drops the label); left out")
        else:
            out[name] = value
    return out


def own_annotations(
    src: Source, annotations: dict[str, Any], where: FieldPath, whose: str
) -> dict[str, str]:
    """A tool's annotations of one alert (``whose``) that rulegen can carry as annotations of
    its own (written literally): rulegen's own names, invalid names, non-strings and Go
    templates (rulegen would print them as text) are refused at their lines."""
    out: dict[str, str] = {}
    for name, value in annotations.items():
        here = (*where, name)
        if name in OWN_ANNOTATIONS and isinstance(value, str) and "{{" not in value:
            out[f"source_{name}"] = value
            src.adapt(here, f"rulegen writes its own {name} on the {whose}; the source's is "
                      f"kept as source_{name}")  # fmt: skip
        elif name in OWN_ANNOTATIONS:
            src.refuse(here, f"rulegen writes its own {name} on the {whose}; left out")
        elif not isinstance(name, str) or not promql.LABEL_NAME.match(name):
            src.refuse(here, f"{name!r} is not an annotation name Prometheus takes; left out")
        elif not isinstance(value, str):
            src.refuse(here, f"an annotation is a string (got {value!r:.60}); left out")
        elif "{{" in value:
            src.refuse(here, "a Go template: rulegen writes an alert's own annotations as "
                       "literal text; left out")  # fmt: skip
        else:
            out[name] = value
    return out
