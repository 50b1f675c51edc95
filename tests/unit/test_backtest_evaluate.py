"""The backtest's own PromQL evaluator on hand-made vectors (no server, no process).

``rulegen.backtest.evaluate`` evaluates the operators above recordings that are computed on
rulegen's side (an SLO's window cascade, a throughput against its own past); where it is
wrong, a replay is wrong without any server to notice. Each answer below is Prometheus's:
every operator case and every refusal was checked against a Prometheus 2.42 server at each
of the three times, the vectors written as ``label_replace(vector(…))`` stand-ins; the
windows and offsets follow the engine's rules (a range closed on 2.x, left-open on 3.x).

Two layers: the operators through a reader that serves the vectors as they are
(``Vectors``), and the computed recordings themselves (offsets, windows closed or left-open,
missing samples, inlining) through the real ``Deployment`` over a client that serves one raw
series.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from rulegen.backtest.deployed import EMPTY, Deployment
from rulegen.backtest.evaluate import Evaluator, Vector, Window
from rulegen.backtest.query import Client, Progress, Samples
from rulegen.backtest.replay import Labels
from rulegen.backtest.syntax import Node, Unsupported, matchers_of, parse

MIN = 60_000
TIMES = [0, MIN, 2 * MIN]


def labels(**pairs: str) -> Labels:
    """A label set; ``name`` stands for ``__name__``."""
    return tuple(sorted(("__name__" if k == "name" else k, v) for k, v in pairs.items()))


def at(value: float, times: Sequence[int] = TIMES) -> dict[int, float]:
    return dict.fromkeys(times, value)


INPUT: Vector = {
    labels(name="a", host="h1", x="1"): at(10),
    labels(name="a", host="h2", x="1"): at(20, TIMES[:2]),  # gone at the last step
    labels(name="b", host="h1", y="2"): at(2),
    labels(name="b", host="h3"): at(5),
    labels(name="b", host="h2", y="2"): at(4, TIMES[2:]),  # only at the last step
    labels(name="c", x="1"): at(15),
    labels(name="d", i="1"): at(math.inf),
    labels(name="d", i="2"): at(1),
}


@dataclass
class Vectors:
    """A ``Reader`` for which every selector is a precomputed recording: nothing is asked of
    a server, so every operator is evaluated by ``Evaluator``."""

    series: Vector
    left_open: bool = False

    def server_text(self, node: Node) -> str | None:
        del node
        return None

    def fetch(self, text: str, times: Sequence[int]) -> Vector:
        raise AssertionError(f"asked the server for {text} at {times}")

    def recording(self, node: Node, times: Sequence[int]) -> Vector:
        wanted = [(n, v) for n, op, v in matchers_of(node) if op == "="]
        return {
            k: {t: v for t, v in samples.items() if t in times}
            for k, samples in self.series.items()
            if dict(k)["__name__"] == node.name and all(dict(k).get(n) == v for n, v in wanted)
        }

    def window(self, node: Node, range_ms: int, times: Sequence[int]) -> dict[Labels, Window]:
        del node, range_ms, times
        raise AssertionError("no range in these cases")


def evaluate(expr: str) -> Vector:
    return Evaluator(Vectors(INPUT), TIMES).vector(parse(expr))


CASES: list[tuple[str, Vector]] = [
    # one-to-one matching: `on` keeps only the matched labels (the name too goes, even for a
    # filter), `ignoring` matches on the rest; a filter keeps the left value
    ("a > on (host) b", {labels(host="h1"): at(10)}),
    ("a / on (host) b", {labels(host="h1"): at(5)}),
    ("a > bool on (host) b", {labels(host="h1"): at(1)}),
    ("a > ignoring (x) b", {}),  # b's y is not ignored: nothing matches
    # both of a's series match c on x, but the filter drops h1's pair: one match, no refusal
    ("a > on (x) c", {labels(x="1"): at(20, TIMES[:2])}),
    # b's three series share the signature {} on x, but nothing on the left: no refusal
    ("a{host='h3'} * on (x) b", {}),
    ("a - ignoring (x, y) b", {labels(host="h1"): at(8)}),
    # group_left: the many side's labels, plus the listed ones from the one side
    ("a * on (host) group_left (y) b", {labels(host="h1", x="1", y="2"): at(20)}),
    # group_right: the right side is the many side; a label the one side lacks is removed;
    # a filter keeps the left (the one side's) value and the many side's name
    ("b < on (host) group_right (x) a", {labels(name="a", host="h1"): at(2)}),
    # set operators, step by step: b's h2 exists only at the last step, a's h2 only before
    ("a and on (host) b", {labels(name="a", host="h1", x="1"): at(10)}),
    ("a unless on (host) b", {labels(name="a", host="h2", x="1"): at(20, TIMES[:2])}),
    ("a or on (host) b", {
        labels(name="a", host="h1", x="1"): at(10),
        labels(name="a", host="h2", x="1"): at(20, TIMES[:2]),
        labels(name="b", host="h3"): at(5),
        labels(name="b", host="h2", y="2"): at(4, TIMES[2:]),
    }),
    ("a or b", {  # no modifier: every label but the name counts, so all of b is added
        labels(name="a", host="h1", x="1"): at(10),
        labels(name="a", host="h2", x="1"): at(20, TIMES[:2]),
        labels(name="b", host="h1", y="2"): at(2),
        labels(name="b", host="h3"): at(5),
        labels(name="b", host="h2", y="2"): at(4, TIMES[2:]),
    }),
    # aggregations: `by` keeps the listed labels, `without` drops them and the name
    ("sum by (x) (a)", {labels(x="1"): {0: 30, MIN: 30, 2 * MIN: 10}}),
    ("sum without (x) (a)", {labels(host="h1"): at(10), labels(host="h2"): at(20, TIMES[:2])}),
    ("sum(b)", {(): {0: 7, MIN: 7, 2 * MIN: 11}}),
    ("count by (y) (b)", {labels(y="2"): {0: 1, MIN: 1, 2 * MIN: 2}, (): at(1)}),
    ("max(a)", {(): {0: 20, MIN: 20, 2 * MIN: 10}}),
    ("avg(a)", {(): {0: 15, MIN: 15, 2 * MIN: 10}}),
    ("avg(d)", {(): at(math.inf)}),  # an infinite mean stays infinite (Prometheus 2.x)
    # label_replace: Go's expansion on a full match; no match leaves the series alone; the
    # name stays
    ('label_replace(a, "node", "$1", "host", "h(.*)")', {
        labels(name="a", host="h1", x="1", node="1"): at(10),
        labels(name="a", host="h2", x="1", node="2"): at(20, TIMES[:2]),
    }),
    ('label_replace(a, "node", "$1", "host", "1")', {  # "1" does not match "h1" whole
        labels(name="a", host="h1", x="1"): at(10),
        labels(name="a", host="h2", x="1"): at(20, TIMES[:2]),
    }),
    ('label_replace(a{host="h1"}, "z", "${2}-$1x-$$-${}-$01", "host", "(h)([0-9])")',
     {labels(name="a", host="h1", x="1", z="1--$-${}-"): at(10)}),
    ('label_replace(a{host="h1"}, "x", "", "host", ".*")',  # an empty result removes
     {labels(name="a", host="h1"): at(10)}),
    # arithmetic and functions drop the name; a filter keeps it
    ("-a{host='h1'}", {labels(host="h1", x="1"): at(-10)}),
    ("clamp_max(a, 15)",
     {labels(host="h1", x="1"): at(10), labels(host="h2", x="1"): at(15, TIMES[:2])}),
    ("a > 15", {labels(name="a", host="h2", x="1"): at(20, TIMES[:2])}),
    ("30 - a > bool 15",
     {labels(host="h1", x="1"): at(1), labels(host="h2", x="1"): at(0, TIMES[:2])}),
]  # fmt: skip


@pytest.mark.parametrize(("expr", "expected"), CASES, ids=[c[0] for c in CASES])
def test_operators(expr: str, expected: Vector) -> None:
    assert evaluate(expr) == expected


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        # both of a's series lose `host`: two series with one label set
        ('label_replace(a, "host", "", "x", ".*")', "label_replace made two series"),
        # both of a's series match c on x and both pairs are kept
        ("a * on (x) c", r"two series matching \{'x': '1'\} at one time"),
        ("a > bool on (x) c", r"two series matching \{'x': '1'\} at one time"),
        # b's series without x share the signature {} on the one side
        ("a * on (x) b", r"two series matching \{\} on the one side"),
        ("b / on (x) group_left a", r"two series matching \{'x': '1'\} on the one side"),
    ],
)
def test_what_the_server_refuses_is_refused(expr: str, message: str) -> None:
    """Each refused by Prometheus too ("vector cannot contain metrics with the same
    labelset", "multiple matches for labels", "found duplicate series for the match
    group")."""
    with pytest.raises(Unsupported, match=message):
        evaluate(expr)


# --- computed recordings ----------------------------------------------------------------------


class OneSeries(Client):
    """A server that holds ``raw{i="1"}`` with the value ``t / 1m`` at every minute but
    ``missing``, and answers the texts in ``answers``; ``asked``: every text it was sent."""

    def __init__(self, missing: frozenset[int] = frozenset(),
                 answers: dict[str, Samples] | None = None) -> None:  # fmt: skip
        super().__init__("http://127.0.0.1:9")
        self.missing = missing
        self.answers = answers or {}
        self.asked: list[str] = []

    def range_query(
        self, expr: str, times: Sequence[int], progress: Progress | None = None
    ) -> Samples:
        del progress
        self.asked.append(expr)
        if expr in self.answers:
            return self.answers[expr]
        assert expr == "raw{}", expr
        series = {t: t / MIN for t in times if t // MIN not in self.missing}
        return {labels(name="raw", i="1"): series}


RECORDINGS = [
    ("rec", "raw", (("service", "s"),), MIN),  # every minute: rec = t / 1m
    ("rec2", "sum(rec offset 5m)", (("service", "s"),), MIN),
]


def replay(expr: str, times: Sequence[int], step: int, *, left_open: bool = False,
           missing: frozenset[int] = frozenset(), answers: dict[str, Samples] | None = None,
           ) -> tuple[Vector, OneSeries, Deployment]:  # fmt: skip
    client = OneSeries(missing, answers)
    deployment = Deployment(client, RECORDINGS, 20 * MIN, left_open=left_open)
    deployment.plan(expr, times[0], step)
    found, _fetches = deployment.evaluate(expr, times, step)
    return found, client, deployment


REC = labels(name="rec", i="1", service="s")
QUARTER = 15_000


def test_an_offset_reads_the_recordings_last_evaluation_before_it() -> None:
    """A 1m recording read ``offset 2m`` by an expression evaluated every 15s: the sample
    of its evaluation at or before ``t - 2m`` (Prometheus's lookback over a grid)."""
    times = [10 * MIN, 10 * MIN + QUARTER, 11 * MIN - QUARTER, 11 * MIN]
    found, _client, deployment = replay("rec offset 2m", times, QUARTER)
    assert found == {REC: {times[0]: 8, times[1]: 8, times[2]: 8, times[3]: 9}}
    (rec,) = deployment.rules["rec"]
    assert deployment.need == {rec.index: 8 * MIN}  # the first time read, on its grid


def test_a_missing_evaluation_is_a_missing_value() -> None:
    """The raw series has no sample at minute 7: the recording has none (its rule wrote a
    staleness marker), so the offset read has nothing there instead of the minute before."""
    times = [8 * MIN, 9 * MIN]
    found, _client, _deployment = replay("rec offset 1m", times, MIN, missing=frozenset({7}))
    assert found == {REC: {9 * MIN: 8}}


@pytest.mark.parametrize(
    ("expr", "left_open", "missing", "expected"),
    [
        ('avg_over_time(rec{i="1"}[5m])', False, (), 7.5),  # [5m, 10m]: minutes 5..10 (2.x)
        ('avg_over_time(rec{i="1"}[5m])', True, (), 8),  # (5m, 10m]: minutes 6..10 (3.x)
        ('avg_over_time(rec{i="1"}[5m] offset 1m)', False, (), 6.5),  # [4m, 9m]
        ('avg_over_time(rec{i="1"}[5m] offset 1m)', True, (), 7),  # (4m, 9m]
        ('avg_over_time(rec{i="1"}[5m])', False, (7,), 7.6),  # a missing evaluation is skipped
        ('count_over_time(rec{i="1"}[5m])', False, (7,), 5),
        ('max_over_time(rec{i="1"}[5m] offset 3m)', True, (), 7),
        ('sum_over_time(rec{i="1"}[2m])', True, (), 19),
    ],
)
def test_windows_over_a_computed_recording(
    expr: str, left_open: bool, missing: tuple[int, ...], expected: float
) -> None:
    """(``i`` is a label the recording's expression makes, not one its rule sets, so the
    recording is computed here rather than sent to the server as a subquery.)"""
    found, _client, _deployment = replay(expr, [10 * MIN], MIN, left_open=left_open,
                                         missing=frozenset(missing))  # fmt: skip
    assert found == {labels(i="1", service="s"): {10 * MIN: expected}}


def test_a_range_over_an_inlinable_recording_is_a_subquery_at_its_interval() -> None:
    """Matched on the rule's own labels, the recording is the server's work: a subquery
    whose steps are its group's evaluations, the offset kept outside."""
    answer = {labels(i="1", service="s"): {10 * MIN: 7.5}}
    sent = (
        'avg_over_time(((label_replace(label_replace(raw{}, "service", "s", "", ""), '
        '"__name__", "rec", "", "")))[300s:60s] offset 60s)'
    )
    found, client, deployment = replay('avg_over_time(rec{service="s"}[5m] offset 1m)',
                                       [10 * MIN], MIN, answers={sent: answer})  # fmt: skip
    assert client.asked == [sent]
    assert found == answer
    assert deployment.need == {}


def test_offsets_add_up_through_a_cascade() -> None:
    """``rec2`` reads ``rec`` 5m back and is read 10m back itself: ``rec`` is computed from
    15m before the first evaluation, and each offset is applied on its own grid."""
    found, _client, deployment = replay("rec2 offset 10m", [20 * MIN], MIN)
    assert found == {labels(name="rec2", service="s"): {20 * MIN: 5}}
    need = {rule.record: deployment.need[rule.index]
            for rules in deployment.rules.values() for rule in rules}  # fmt: skip
    assert need == {"rec2": 10 * MIN, "rec": 5 * MIN}


INLINED = 'label_replace(label_replace(raw{}, "service", "s", "", ""), "__name__", "rec", "", "")'


def test_an_instant_read_without_offset_is_inlined() -> None:
    """``rec`` read as it is: its expression, with the rule's labels and name, replaces it in
    the text sent to the server (one range query, nothing computed here)."""
    text = f"({INLINED}) > (3.0)"
    answer = {REC: {5 * MIN: 5.0}}
    found, client, deployment = replay('rec{service="s"} > 3', [4 * MIN, 5 * MIN], MIN,
                                       answers={text: answer})  # fmt: skip
    assert (found, client.asked, deployment.need) == (answer, [text], {})


def test_a_selector_the_rules_labels_refuse_reads_nothing() -> None:
    found, client, _deployment = replay('rec{service="other"}', [4 * MIN], MIN,
                                        answers={EMPTY: {}})  # fmt: skip
    assert (found, client.asked) == ({}, [EMPTY])
    # computed (an offset) and refused: nothing computed, nothing asked; the other side of
    # the `or` is inlined
    answer = {REC: {4 * MIN: 4.0}}
    found, client, deployment = replay('rec{service="other"} offset 1m or rec', [4 * MIN], MIN,
                                       answers={INLINED: answer})  # fmt: skip
    assert (found, client.asked, deployment.need) == (answer, [INLINED], {})


def test_a_recording_two_alerts_read_is_computed_once() -> None:
    """Inlined, each alert would have the server evaluate the recording again; shared, it is
    read once (its raw expression) and both comparisons are evaluated here."""
    client = OneSeries()
    deployment = Deployment(client, RECORDINGS, 20 * MIN, left_open=False)
    above, below = 'rec{service="s"} > 12', 'rec{service="s"} < 3'
    deployment.share([(above, MIN), (below, MIN), ("rec2", MIN)])
    (rec,) = deployment.rules["rec"]
    assert deployment.shared == {rec.index}
    times = [2 * MIN, 15 * MIN]
    for expr in (above, below):
        deployment.plan(expr, times[0], MIN)
    assert deployment.evaluate(above, times, MIN)[0] == {REC: {15 * MIN: 15}}
    assert deployment.evaluate(below, times, MIN)[0] == {REC: {2 * MIN: 2}}
    assert client.asked == ["raw{}"]


def test_a_recording_one_alert_reads_stays_inlined() -> None:
    deployment = Deployment(OneSeries(), RECORDINGS, 20 * MIN, left_open=False)
    deployment.share([('rec{service="s"} > 12', MIN), ('rec{service="t"} > 1', MIN)])
    assert deployment.shared == frozenset()
