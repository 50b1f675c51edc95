"""Model rule groups → vmalert rule files for VictoriaMetrics, adapted to how vmalert evaluates.

Why: vmalert loads Prometheus rule groups, but evaluates them differently in ways that
change rulegen's SLO results (docs/victoriametrics.md):

- a rule does not see the results of the rules before it in the same evaluation: vmalert
  writes them to VictoriaMetrics asynchronously (remote write), so a recording read without
  an offset returns the previous evaluation's sample. Every level of the SLO window cascade
  (``1h`` reads ``30m`` reads ``5m``) would lag one more evaluation, and the page would fire
  evaluations late. Here a recording of the same group read without an offset is replaced by
  its own expression (``label_set`` restores its static labels), recursively, so every rule
  reads only raw series and recordings written at least one base window ago;
- VictoriaMetrics refuses a query longer than its ``-search.maxQueryLen`` (16384 bytes by
  default) at evaluation time, and full inlining makes an SLO cascade's 30-day rules about
  20 KB. A rule whose full inlining is longer than ``max_query_len`` inlines fewer levels
  (the deepest that fits, fewest evaluations late first): each read left stored costs one
  evaluation of lag, and a comment on the rule says how many reads and how late. Exact
  timing needs both limits raised together;
- VictoriaMetrics evaluates a query near "now" ``-search.latencyOffset`` (30s) earlier unless
  the request says ``nocache=1``; the raw base window and the recordings read at offsets would
  then not meet. Every group asks for ``nocache=1`` (vmalert's group ``params``).

MetricsQL's ``increase()`` does not extrapolate and starts from the last sample before the
window, so consecutive base windows tile time exactly: the cascade's sums are exact counts.
The rules that read raw counters say so in a comment.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rulegen.core.promql import parse_matchers, quote
from rulegen.generated import RuleGroup, ServiceOutput
from rulegen.render.prometheus import rule_file

NOCACHE_PARAMS = {"nocache": ["1"]}
# VictoriaMetrics refuses longer queries (HTTP 422) unless started with a larger
# ``-search.maxQueryLen``; ``vmalert -dryRun`` does not know the server's limit.
DEFAULT_MAX_QUERY_LEN = 16384
INCREASE_NOTE = (
    "# MetricsQL: rate() and increase() do not extrapolate and count from the last sample "
    "before the window: consecutive windows tile exactly"
)
INLINE_NOTE = (
    "# vmalert: recordings of this group read without offset are inlined (vmalert does not "
    "see this evaluation's earlier results)"
)
REDUCED_NOTE = (
    "# vmalert: {reads} left as stored series to stay within max_query_len={limit}: "
    "reads {late} late"
)  # (late_rules finds these rules by the words of LATE_MARK)

# A string literal (kept as is), or a selector: a metric name and optional matchers.
_STRING = r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`'
_TOKEN = re.compile(
    rf"(?P<string>{_STRING})"
    r"|(?P<name>(?<![A-Za-z0-9_:])[a-zA-Z_:][a-zA-Z0-9_:]*)"
    rf"(?P<matchers>\{{(?:[^}}\"'`]|{_STRING})*\}})?"
)
# What may follow a selector that is read at the evaluation time (no range, offset or @).
_SHIFTED = re.compile(r"\s*(\[|offset\b|@)", re.IGNORECASE)
_RAW_COUNTER = re.compile(r"\b(increase|rate)\s*\(")


def vmalert_groups(service: ServiceOutput) -> tuple[RuleGroup, ...]:
    """The service's rule groups for vmalert: each SLO's with ``increase()`` base windows
    (exact in MetricsQL, whatever Prometheus version the spec declares)."""
    return service.groups + tuple(s.increase_group or s.group for s in service.slos)


def vmalert_rule_file(
    groups: Sequence[RuleGroup],
    concurrency: int | None = None,
    labels: Mapping[str, str] | None = None,
    max_query_len: int = DEFAULT_MAX_QUERY_LEN,
) -> dict[str, Any]:
    """One vmalert rule file: every group with ``concurrency`` and ``labels`` when given,
    ``params: {nocache: ["1"]}``, and its same-evaluation recording reads inlined as far as
    ``max_query_len`` allows."""
    data = rule_file(tuple(groups))
    out = []
    for group in data["groups"]:
        entry: dict[str, Any] = {"name": group["name"], "interval": group["interval"]}
        if "query_offset" in group:  # vmalert's name for Prometheus' query_offset
            entry["eval_delay"] = group["query_offset"]
        if concurrency is not None:
            entry["concurrency"] = concurrency
        entry["params"] = {k: list(v) for k, v in NOCACHE_PARAMS.items()}
        if labels:
            entry["labels"] = dict(sorted(labels.items()))
        rules = _with_group_labels(group["rules"], group.get("labels") or {})
        entry["rules"] = inline_group(rules, max_query_len, labels or {})
        out.append(entry)
    return {"groups": out}


LATE_MARK = "left as stored series to stay within max_query_len"


def late_rules(data: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(group, rule) of every rule of a vmalert file that reads a recording of its group
    stored, so evaluations late (``max_query_len`` cut its inlining: the note on the rule)."""
    return [
        (str(group["name"]), rule)
        for group in data["groups"]
        for rule in group["rules"]
        if LATE_MARK in str(rule["expr"])
    ]


def _with_group_labels(
    rules: Sequence[Mapping[str, Any]], group_labels: Mapping[str, str]
) -> list[Mapping[str, Any]]:
    """A named group's Prometheus 3 ``labels`` written into each rule (the rule's own win, as
    in Prometheus): vmalert's group ``labels`` would overwrite the rules' own instead."""
    if not group_labels:
        return list(rules)
    return [dict(rule, labels={**group_labels, **(rule.get("labels") or {})}) for rule in rules]


def long_queries(
    data: Mapping[str, Any], limit: int = DEFAULT_MAX_QUERY_LEN
) -> list[tuple[str, str, int]]:
    """(group, rule, bytes) of every expression of a vmalert file longer than ``limit``."""
    out = []
    for group in data["groups"]:
        for rule in group["rules"]:
            size = len(str(rule["expr"]).encode())
            if size > limit:
                out.append((group["name"], rule.get("record") or rule["alert"], size))
    return out


def inline_group(
    rules: Sequence[Mapping[str, Any]],
    max_query_len: int = DEFAULT_MAX_QUERY_LEN,
    group_labels: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """The rules of one group, each recording of the group read without an offset replaced
    by its expression (as deep as ``max_query_len`` allows), and a comment on the rules that
    read raw counters or were left reading stored recordings.

    An inlined recording gets the labels its stored series has: its own and the group
    ``labels`` vmalert adds to every result (they win), so that an inlined read and a stored
    one of the same recording (``x / avg_over_time(x[1h] offset 5m)``) still match."""
    recordings = [r for r in rules if "record" in r]
    chooser = _Chooser(_Inliner(recordings, group_labels or {}), max_query_len)
    return [dict(rule, expr=chooser.choose(rule).text) for rule in rules]


@dataclass(frozen=True)
class _Expansion:
    """An expression with reads inlined down to some depth, and the recordings whose reads
    it left stored only because of that depth (one entry per read in the text)."""

    text: str
    cut: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True)
class _Rendered:
    """A rule's written expression (comments included) and how many evaluations late it
    reads (0: it sees only raw series and recordings written at least an interval ago)."""

    text: str
    late: int


class _Chooser:
    """Picks each rule's rendering: the full inlining when it fits ``limit``; otherwise, of the
    depth limits that fit, the one fewest evaluations late, then the deepest; when none fits
    (the rule's own expression is too long), the full inlining (the build warns about it).

    A read left stored returns the previous evaluation's sample of a recording that is itself
    ``late`` evaluations late: it costs ``late + 1``. The choice is deterministic: it depends
    only on the group's rules and the limit.
    """

    def __init__(self, inliner: _Inliner, limit: int) -> None:
        self.inliner = inliner
        self.limit = limit
        self.chosen: dict[int, _Rendered] = {}
        self.busy: set[int] = set()

    def choose(self, rule: Mapping[str, Any]) -> _Rendered:
        key = id(rule)
        if key not in self.chosen:
            self.busy.add(key)
            self.chosen[key] = self._render(rule)
            self.busy.discard(key)
        return self.chosen[key]

    def _late(self, target: Mapping[str, Any]) -> int:
        # a recording that (through a cycle) reads itself stored: count its own read only
        return 1 if id(target) in self.busy else self.choose(target).late + 1

    def _render(self, rule: Mapping[str, Any]) -> _Rendered:
        expr = str(rule["expr"])
        full = _Rendered(self._text(expr, self.inliner.expand(expr), 0), 0)
        if _size(full.text) <= self.limit:
            return full
        candidates: list[tuple[int, int, _Rendered]] = []
        for depth in itertools.count():
            expansion = self.inliner.expand(expr, depth)
            if not expansion.cut:  # as deep as the full inlining, which is too long
                break
            late = max(self._late(target) for target in expansion.cut)
            text = self._text(expr, expansion, late)
            if _size(text) <= self.limit:
                candidates.append((late, -depth, _Rendered(text, late)))
        return min(candidates, key=lambda c: c[:2])[2] if candidates else full

    def _text(self, expr: str, expansion: _Expansion, late: int) -> str:
        notes = []
        if expansion.text != expr:
            notes.append(INLINE_NOTE)
        if expansion.cut:
            count = len(expansion.cut)
            reads = f"{count} recording read{'s' if count > 1 else ''}"
            when = "one evaluation" if late == 1 else f"{late} evaluations"
            notes.append(REDUCED_NOTE.format(reads=reads, limit=self.limit, late=when))
        if _RAW_COUNTER.search(_outside_strings(expansion.text)):
            notes.append(INCREASE_NOTE)
        return "\n".join([*notes, expansion.text])


class _Inliner:
    """Replaces reads of a group's own recordings (no offset, no range) by their expressions.

    A selector is inlined when exactly one recording of the group has its name, and its
    matchers are exactly one equality per static label of that recording, agreeing with it
    (so the stored read selects that rule's output and nothing another service writes under
    the same name). Anything else (a regex, a label the expression sets, a static label left
    open, a comment in the recording) is left as a read of the stored series.
    """

    def __init__(
        self, recordings: Sequence[Mapping[str, Any]], group_labels: Mapping[str, str]
    ) -> None:
        self.group_labels = dict(group_labels)
        self.by_name: dict[str, list[Mapping[str, Any]]] = {}
        for rule in recordings:
            self.by_name.setdefault(str(rule["record"]), []).append(rule)
        self.done: dict[tuple[int, int | None], _Expansion] = {}

    def expand(
        self, expr: str, depth: int | None = None, stack: tuple[int, ...] = ()
    ) -> _Expansion:
        """``expr`` with every inlinable read replaced, recursively down to ``depth`` levels
        (None: all; cycles left alone); the reads left stored at that depth."""
        out: list[str] = []
        cut: list[Mapping[str, Any]] = []
        position = 0
        for match in _TOKEN.finditer(expr):
            if match.group("string") is not None:
                continue
            rule = self._target(expr, match)
            if rule is None or id(rule) in stack:
                continue
            if depth == 0:
                cut.append(rule)
                continue
            inner = self._inline(rule, None if depth is None else depth - 1, (*stack, id(rule)))
            out.append(expr[position : match.start()])
            out.append(inner.text)
            cut.extend(inner.cut)
            position = match.end()
        out.append(expr[position:])
        return _Expansion("".join(out), tuple(cut))

    def _target(self, expr: str, match: re.Match[str]) -> Mapping[str, Any] | None:
        candidates = self.by_name.get(match.group("name"), [])
        if not candidates or _SHIFTED.match(expr, match.end()):
            return None
        try:
            matchers = parse_matchers((match.group("matchers") or "{}")[1:-1])
        except ValueError:
            return None
        pinned = {m.name: m.value for m in matchers if m.op == "="}
        chosen = []
        for rule in candidates:
            labels = {str(k): str(v) for k, v in (rule.get("labels") or {}).items()}
            if len(pinned) == len(matchers) and pinned == labels:
                chosen.append(rule)
        if len(chosen) != 1 or "#" in _outside_strings(str(chosen[0]["expr"])):
            return None
        return chosen[0]

    def _inline(
        self, rule: Mapping[str, Any], depth: int | None, stack: tuple[int, ...]
    ) -> _Expansion:
        key = (id(rule), depth)
        if key not in self.done:
            inner = self.expand(str(rule["expr"]), depth, stack)
            body = _one_line(inner.text)
            own = {str(k): str(v) for k, v in (rule.get("labels") or {}).items()}
            labels = sorted({**own, **self.group_labels}.items())
            if labels:
                pairs = ", ".join(f"{quote(k)}, {quote(v)}" for k, v in labels)
                self.done[key] = _Expansion(f"label_set({body}, {pairs})", inner.cut)
            else:
                self.done[key] = _Expansion(f"({body})", inner.cut)
        return self.done[key]


def _size(expr: str) -> int:
    """The bytes VictoriaMetrics counts against ``-search.maxQueryLen`` (comments included)."""
    return len(expr.encode())


def _one_line(expr: str) -> str:
    """``expr`` on one line: every run of whitespace outside string literals is one space."""
    parts = re.split(f"({_STRING})", expr)
    return "".join(
        part if index % 2 else re.sub(r"\s+", " ", part) for index, part in enumerate(parts)
    ).strip()


def _outside_strings(expr: str) -> str:
    """``expr`` with its string literals emptied (a ``#`` or ``rate(`` in one is not code)."""
    return re.sub(_STRING, '""', expr)
