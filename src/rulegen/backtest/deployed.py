"""A build's recording rules, evaluated from raw series as if they had been deployed.

Why: the question before a merge is what a *changed* rule would have done, and a changed
rule is not deployed, so its recordings have no samples on the server. Each recording an
alert reads is therefore computed from its own expression:

- **inlined** where that is exact: read without offset or range, matched on the labels the
  rule sets (``{service="x"}``), and evaluated at times the recording's group also
  evaluates; the recording's expression (with its labels added) replaces the name, and the
  server evaluates the whole alert in one range query, as it would the deployed rule;
- **computed here** otherwise (an SLO's window cascade reads recordings at offsets, a
  throughput is compared with its own mean over an hour): the recording is evaluated at its
  group's interval over the history its readers need (``need``: an SLO's longest tier
  window before ``--from``), its series kept, and the operators above it evaluated by
  ``evaluate``. A missing sample is a missing value, as the rule manager's staleness
  markers make it.

Names that are not rulegen's recordings are raw series: the server reads them. A series the
server does have under a recording's name (the rules as deployed today) is never read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import promql_parser

from rulegen.backtest.evaluate import NAME, Evaluator, Vector, Window
from rulegen.backtest.query import Client, Progress, grid
from rulegen.backtest.replay import Labels
from rulegen.backtest.syntax import (
    Node,
    Unsupported,
    children,
    duration_ms,
    duration_text,
    matchers_of,
    offset_text,
    parse,
    selector_text,
    to_text,
)
from rulegen.core.promql import full_match, quote

EMPTY = "absent(vector(1))"
"""An instant vector that is always empty: a recording no rule of the build produces."""
LONG_LEAD_MS = 3_600_000
"""History reads longer than this (an SLO window, a baseline) are checked for coverage."""


@dataclass(frozen=True)
class Recording:
    """One recording rule as the rule manager runs it (times in ms)."""

    index: int
    record: str
    expr: Node
    labels: tuple[tuple[str, str], ...]
    step_ms: int


@dataclass(frozen=True)
class Fetch:
    """One raw-series range query: the recording it computes (``None``: the alert's own), from
    when it asked, and the first sample it got."""

    source: int | None
    start: int
    first: int | None


@dataclass
class _Computed:
    series: Vector
    step_ms: int
    fetches: list[Fetch] = field(default_factory=list)


def _static_verdict(recording: Recording, matchers: Iterable[tuple[str, str, str]]) -> bool | None:
    """Whether a selector's matchers accept a rule's series by the labels the rule sets:
    ``True``/``False``, or ``None`` when a matcher is on a label the expression makes."""
    own = dict(recording.labels)
    verdict = True
    for name, op, value in matchers:
        if name not in own:
            return None
        verdict = verdict and _accepts(op, value, own[name])
    return verdict


def _accepts(op: str, value: str, actual: str) -> bool:
    if op == "=":
        return actual == value
    if op == "!=":
        return actual != value
    matched = full_match(value, actual)
    return matched if op == "=~" else not matched


class Deployment:
    """The recordings of a build, inlined or computed, for every alert replayed in one run.

    ``plan`` must see every expression first (a recording two alerts read is computed once,
    over the longer history either needs); ``evaluate`` then answers each.
    """

    def __init__(
        self,
        client: Client,
        recordings: Sequence[tuple[str, str, tuple[tuple[str, str], ...], int]],
        end_ms: int,
        *,
        left_open: bool,
    ) -> None:
        self.client = client
        self.end_ms = end_ms
        self.left_open = left_open
        self.rules: dict[str, list[Recording]] = {}
        for index, (record, expr, labels, step_ms) in enumerate(recordings):
            rule = Recording(index, record, parse(expr), labels, step_ms)
            self.rules.setdefault(record, []).append(rule)
        self.need: dict[int, int] = {}
        self.refused: dict[str, str] = {}
        self.shared: frozenset[int] = frozenset()
        """Recordings several alerts read, computed here once (``share``)."""
        """Expressions that cannot be replayed from raw series, and why (``plan_alert``)."""
        self._series: dict[tuple[str, int, int], bool] = {}
        self._computed: dict[int, _Computed] = {}
        self.progress: Progress | None = None
        """Called once per range-query chunk (the progress bar)."""
        self._log: list[Fetch] = []
        self._source: int | None = None
        self.needs: dict[str, dict[int, int]] = {}
        """Per planned expression: from when it needs each computed recording."""

    # --- planning --------------------------------------------------------------------------

    def share(self, exprs: Iterable[tuple[str, int]]) -> None:
        """Compute here, once, every recording that several of ``exprs`` (alert expressions
        and their steps) would each have the server evaluate inlined.

        Why: inlined, a recording costs the server its whole evaluation once per alert that
        reads it (the diagnoses share a host's TTFT p99, disk and network evidence); computed
        here it costs that once, plus reading its series. Call before ``plan``."""
        readers: dict[int, int] = {}
        for expr, step_ms in exprs:
            found: set[int] = set()
            stack = [parse(expr)]
            while stack:
                node = stack.pop()
                if (isinstance(node, promql_parser.VectorSelector) and node.name in self.rules
                        and self._inlined(node, step_ms) is not None):  # fmt: skip
                    found.update(rule.index for rule in self._candidates(node))
                stack.extend(children(node))
            for index in found:
                readers[index] = readers.get(index, 0) + 1
        self.shared = frozenset(index for index, count in readers.items() if count > 1)

    def plan_alert(self, expr: str, first_ms: int, step_ms: int) -> None:
        """``plan``, noting in ``refused`` an expression that cannot be replayed."""
        try:
            self.plan(expr, first_ms, step_ms)
        except Unsupported as exc:
            self.refused[expr] = refusal(str(exc))

    def points(self) -> int:
        """Evaluation points of every recording computed here (for the run's budget)."""
        total = 0
        for rules in self.rules.values():
            for rule in rules:
                if rule.index in self.need:
                    start = self.need[rule.index]
                    total += max(0, (self.end_ms - start) // rule.step_ms + 1)
        return total

    def has_series(self, selector: str, start_ms: int, end_ms: int) -> bool:
        """Whether the server has samples of ``selector`` in the range (asked once)."""
        key = (selector, start_ms, end_ms)
        if key not in self._series:
            self._series[key] = self.client.has_series(selector, start_ms, end_ms)
        return self._series[key]

    def plan(self, expr: str, first_ms: int, step_ms: int) -> None:
        """Note the history the recordings ``expr`` reads need, evaluated from ``first_ms``
        every ``step_ms``; ``Unsupported`` when it cannot be replayed."""
        needs: dict[int, int] = {}
        self._walk(parse(expr), first_ms, step_ms, 0, needs)
        mine = self.needs.setdefault(expr, {})
        for index, start in needs.items():
            mine[index] = min(mine.get(index, start), start)
            self.need[index] = min(self.need.get(index, start), start)

    def _walk(
        self, node: Node, first_ms: int, step_ms: int, range_ms: int, needs: dict[int, int]
    ) -> None:
        """Note in ``needs`` from when each computed recording under ``node`` is read."""
        if isinstance(node, promql_parser.MatrixSelector):
            if node.vector_selector.name in self.rules and self._inlined_range(node) is not None:
                return  # a subquery the server evaluates
            self._walk(node.vector_selector, first_ms, step_ms, duration_ms(node.range), needs)
            return
        if isinstance(node, promql_parser.VectorSelector) and node.name in self.rules:
            if range_ms == 0 and self._inlined(node, step_ms) is not None:
                return  # evaluated by the server at the reader's own times
            start = first_ms - duration_ms(node.offset) - range_ms
            for rule in self._candidates(node):
                if start < needs.get(rule.index, start + 1):
                    needs[rule.index] = start
                    first = -(-start // rule.step_ms) * rule.step_ms
                    self._walk(rule.expr, first, rule.step_ms, 0, needs)
            return
        if isinstance(node, promql_parser.SubqueryExpr) and self._reads_recordings(node):
            raise Unsupported("a subquery over a recording")
        for child in children(node):
            self._walk(child, first_ms, step_ms, 0, needs)

    def _reads_recordings(self, node: Node) -> bool:
        stack = [node]
        while stack:
            current = stack.pop()
            if isinstance(current, promql_parser.VectorSelector) and current.name in self.rules:
                return True
            stack.extend(children(current))
        return False

    def _candidates(self, node: Node) -> list[Recording]:
        """The rules of that name whose own labels do not contradict the selector."""
        matchers = matchers_of(node)
        return [r for r in self.rules[node.name] if _static_verdict(r, matchers) is not False]

    def raw_selectors(self, expr: str) -> list[str]:
        """The raw-series selectors ``expr`` reads through every recording, in order."""
        found: dict[str, None] = {}
        stack = [parse(expr)]
        seen: set[int] = set()
        while stack:
            node = stack.pop()
            if isinstance(node, promql_parser.VectorSelector) and node.name in self.rules:
                for rule in self._candidates(node):
                    if rule.index not in seen:
                        seen.add(rule.index)
                        stack.append(rule.expr)
                continue
            if isinstance(node, promql_parser.VectorSelector):
                found[selector_text(node, with_offset=False)] = None
            stack.extend(reversed(children(node)))
        return list(found)

    # --- inlining --------------------------------------------------------------------------

    def _inlined(self, node: Node, step_ms: int) -> str | None:
        """The text that replaces an instant selector of a recording, or ``None`` when the
        recording must be computed here: read at no offset, at times its group evaluates."""
        if node.at is not None or duration_ms(node.offset) != 0:
            return None
        found = self._expressions(
            node, lambda rule: step_ms % rule.step_ms == 0 and rule.index not in self.shared
        )
        if found is None:
            return None
        parts, _steps = found
        if not parts:
            return EMPTY
        return parts[0] if len(parts) == 1 else " or ".join(f"({p})" for p in parts)

    def _inlined_range(self, node: Node) -> str | None:
        """The text that replaces a range over a recording (``avg_over_time(rec[1h] offset
        5m)``): a subquery at the recording's own interval, whose evaluations fall on the
        times its group evaluates, so the server reads exactly the samples the rule would
        have written (none where it wrote none). ``None`` when it must be computed here."""
        selector = node.vector_selector
        if selector.at is not None:
            return None
        found = self._expressions(selector, lambda _rule: True)
        if found is None:
            return None
        parts, steps = found
        if len(steps) > 1:
            return None  # one subquery has one step
        inner = EMPTY if not parts else " or ".join(f"({p})" for p in parts)
        rng = duration_text(duration_ms(node.range))
        step = duration_text(steps.pop()) if steps else rng
        return f"({inner})[{rng}:{step}]{offset_text(selector.offset)}"

    def _expressions(
        self, node: Node, step_fits: Callable[[Recording], bool]
    ) -> tuple[list[str], set[int]] | None:
        """The labelled server text of every rule a selector reads and their intervals, or
        ``None`` when one of them must be computed here."""
        matchers = matchers_of(node)
        parts, steps = [], set()
        for rule in self.rules[node.name]:
            verdict = _static_verdict(rule, matchers)
            if verdict is None or (verdict and not step_fits(rule)):
                return None
            if not verdict:
                continue
            inner = self.server_text(rule.expr, rule.step_ms)
            if inner is None:
                return None
            parts.append(_labelled(inner, rule))
            steps.add(rule.step_ms)
        return parts, steps

    def server_text(self, node: Node, step_ms: int) -> str | None:
        """``node`` as text the server can evaluate (recordings inlined), or ``None``."""

        def replace(current: Node) -> str | None:
            if isinstance(current, promql_parser.VectorSelector) and current.name in self.rules:
                text = self._inlined(current, step_ms)
                if text is None:
                    raise _NotOnServer
                return text
            if (isinstance(current, promql_parser.MatrixSelector)
                    and current.vector_selector.name in self.rules):  # fmt: skip
                text = self._inlined_range(current)
                if text is None:
                    raise _NotOnServer
                return text
            return None

        try:
            return to_text(node, replace)
        except _NotOnServer:
            return None

    # --- evaluation ------------------------------------------------------------------------

    def evaluate(self, expr: str, times: Sequence[int], step_ms: int) -> tuple[Vector, list[Fetch]]:
        """``expr`` at every time of ``times`` as the deployed rules would make it, and the
        raw-series queries it took (cached ones included)."""
        self._log, self._source = [], None
        found = Evaluator(_Context(self, step_ms), times).vector(parse(expr))
        return found, self._log

    def fetch(self, text: str, times: Sequence[int]) -> Vector:
        """A raw-series range query, noted for the coverage report."""
        found = self.client.range_query(text, times, self.progress)
        first = min((min(s) for s in found.values() if s), default=None)
        self._log.append(Fetch(self._source, times[0] if times else 0, first))
        return found

    def computed(self, rule: Recording) -> _Computed:
        """A recording's series over the history it needs, at its group's interval."""
        done = self._computed.get(rule.index)
        if done is None:
            outer_log, outer_source = self._log, self._source
            start = self.need.get(rule.index, self.end_ms)
            times = grid(start, self.end_ms, rule.step_ms)
            self._log, self._source = [], rule.index
            raw = Evaluator(_Context(self, rule.step_ms), times).vector(rule.expr)
            done = _Computed(_with_labels(raw, rule), rule.step_ms, self._log)
            self._computed[rule.index] = done
            self._log, self._source = outer_log, outer_source
        self._log.extend(done.fetches)
        return done


def refusal(construct: str) -> str:
    """The warning of an alert that cannot be replayed from raw series."""
    return (
        f"cannot evaluate this alert from raw series: it reads {construct}; "
        "--recorded reads the recordings deployed on the server instead"
    )


class _NotOnServer(Exception):
    """A subtree reads a recording that is computed here."""


def _labelled(text: str, rule: Recording) -> str:
    """A recording's expression with the labels the rule sets, and its name."""
    for name, value in (*rule.labels, (NAME, rule.record)):
        text = f'label_replace({text}, {quote(name)}, {quote(value)}, "", "")'
    return text


def _with_labels(series: Vector, rule: Recording) -> Vector:
    """A computed recording's series as the rule stores them: the rule's labels set (an
    empty value removes one), the name replaced."""
    out: Vector = {}
    for labels, samples in series.items():
        current = dict(labels)
        for name, value in (*rule.labels, (NAME, rule.record)):
            if value:
                current[name] = value
            else:
                current.pop(name, None)
        out.setdefault(tuple(sorted(current.items())), {}).update(samples)
    return out


def _matches(labels: Labels, matchers: Sequence[tuple[str, str, str]]) -> bool:
    own = dict(labels)
    return all(_accepts(op, value, own.get(name, "")) for name, op, value in matchers)


@dataclass
class _Context:
    """The ``Reader`` for expressions evaluated every ``step_ms``."""

    deployment: Deployment
    step_ms: int

    @property
    def left_open(self) -> bool:
        return self.deployment.left_open

    def server_text(self, node: Node) -> str | None:
        return self.deployment.server_text(node, self.step_ms)

    def fetch(self, text: str, times: Sequence[int]) -> Vector:
        return self.deployment.fetch(text, times)

    def _selected(self, node: Node) -> list[tuple[Vector, int]]:
        matchers = matchers_of(node)
        found = []
        for rule in self.deployment._candidates(node):
            computed = self.deployment.computed(rule)
            chosen = {k: v for k, v in computed.series.items() if _matches(k, matchers)}
            found.append((chosen, computed.step_ms))
        return found

    def recording(self, node: Node, times: Sequence[int]) -> Vector:
        offset = duration_ms(node.offset)
        out: Vector = {}
        for series, step in self._selected(node):
            for labels, samples in series.items():
                picked = {}
                for t in times:
                    value = samples.get((t - offset) // step * step)
                    if value is not None:
                        picked[t] = value
                if picked:
                    out.setdefault(labels, {}).update(picked)
        return out

    def window(self, node: Node, range_ms: int, times: Sequence[int]) -> dict[Labels, Window]:
        del range_ms, times  # the evaluator slices the whole series
        out: dict[Labels, Window] = {}
        for series, _step in self._selected(node):
            for labels, samples in series.items():
                ordered = sorted(samples.items())
                out[labels] = Window([t for t, _ in ordered], [v for _, v in ordered])
        return out


def coverage(
    fetches: Iterable[Fetch], needs: dict[int, int], first_ms: int, step_ms: int
) -> tuple[int, int] | None:
    """``(history_from, gap)`` when a recording an alert reads far back (an SLO window, a
    baseline: ``needs``, from when) got its first raw sample later than the alert needs it:
    the alert's evaluations before ``first_ms + gap`` read less history than deployed rules
    would have. ``None`` when the history covers it.

    Why only long reads: a short one (a ``rate[5m]``) may start late because the series
    itself is intermittent, which is data, not a gap in the server's history."""
    worst: tuple[int, int] | None = None
    for fetch in fetches:
        if fetch.source is None or fetch.first is None or fetch.source not in needs:
            continue
        need = needs[fetch.source]
        if first_ms - need <= LONG_LEAD_MS:
            continue
        gap = fetch.first - need
        if gap <= max(5 * 60_000, 2 * step_ms):
            continue
        if worst is None or gap > worst[1]:
            worst = (fetch.first, gap)
    return worst
