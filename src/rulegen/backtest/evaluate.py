"""PromQL evaluated on this side, over a grid of evaluation times (pure: no I/O).

Why: a rule that is not deployed has no recorded series on the server, so an alert reading
``slo:sli_error:ratio_rate1h`` cannot be sent as it is. Most recordings can be inlined (their
expression replaces the name, and the server does the work), but a recording read at an
``offset`` or over a range (an SLO's window cascade, a throughput against its own past) must
be computed at *its* evaluation times, as the rule manager would have, and the operators
above it evaluated here. This module is that part of the PromQL engine: selectors on
precomputed recordings, ``or``/``and``/``unless``, arithmetic and comparisons with vector
matching, ``sum``/``avg``/``min``/``max``/``count``, ``label_replace``, ``*_over_time``.
Everything else is asked of the server through the ``Reader``.

Semantics follow Prometheus 2.x's engine step for step (which labels survive an operator,
``on``/``ignoring``, filter comparisons keeping the left value, the incremental mean of
``avg``), so on integer-valued data the result is bit for bit the server's; other sums may
differ in the last bit when the server adds in another order.
"""

from __future__ import annotations

import math
import re
import warnings
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import promql_parser

from rulegen.backtest.replay import Labels
from rulegen.backtest.syntax import Node, Unsupported, duration_ms, is_scalar
from rulegen.core.promql import python_regex

Vector = dict[Labels, dict[int, float]]
"""Series over the evaluation times: label set (``__name__`` included) → time (ms) → value."""

NAME = "__name__"


@dataclass(frozen=True)
class Scalar:
    """A scalar at every evaluation time: a constant, or one value per time."""

    constant: float | None = None
    values: dict[int, float] | None = None

    def at(self, t: int) -> float | None:
        """The value at ``t`` (``None`` where a per-time scalar has none)."""
        if self.constant is not None:
            return self.constant
        return (self.values or {}).get(t)


Value = Vector | Scalar


@dataclass(frozen=True)
class Window:
    """A recording's samples, in time order, for range functions to slice."""

    times: list[int]
    values: list[float]


class Reader(Protocol):
    """Where the values come from: the server for what it can compute, precomputed
    recordings for the rest."""

    @property
    def left_open(self) -> bool:
        """Whether a range ``[5m]`` excludes its first instant (Prometheus 3) or not (2.x)."""

    def server_text(self, node: Node) -> str | None:
        """The text the server can evaluate for ``node``, or ``None`` when it reads a
        recording that must be computed here."""

    def fetch(self, text: str, times: Sequence[int]) -> Vector:
        """``text`` evaluated by the server at every time of ``times``."""

    def recording(self, node: Node, times: Sequence[int]) -> Vector:
        """A recording's instant selector (matchers and offset applied) at ``times``."""

    def window(self, node: Node, range_ms: int, times: Sequence[int]) -> dict[Labels, Window]:
        """A recording's samples that ranges ending at ``times`` read (matchers applied)."""


class Evaluator:
    """Evaluate a tree at a list of evaluation times."""

    def __init__(self, reader: Reader, times: Sequence[int]) -> None:
        self.reader = reader
        self.times = list(times)

    def vector(self, node: Node) -> Vector:
        """A tree that yields an instant vector."""
        value = self.value(node)
        if isinstance(value, Scalar):
            raise Unsupported("a scalar where a vector is expected")
        return value

    def value(self, node: Node) -> Value:
        """A tree's value: asked of the server when it can compute it, else evaluated here."""
        if isinstance(node, promql_parser.NumberLiteral):
            return Scalar(constant=float(node.val))
        if isinstance(node, promql_parser.ParenExpr):
            return self.value(node.expr)
        text = self.reader.server_text(node)
        if text is not None:
            return self._fetched(node, text)
        if isinstance(node, promql_parser.VectorSelector):
            return self.reader.recording(node, self.times)
        if isinstance(node, promql_parser.UnaryExpr):
            return _map(self.value(node.expr), lambda v: -v)
        if isinstance(node, promql_parser.BinaryExpr):
            return self._binary(node)
        if isinstance(node, promql_parser.AggregateExpr):
            return _aggregate(node, self.vector(node.expr))
        if isinstance(node, promql_parser.Call):
            return self._call(node)
        raise Unsupported(f"a {type(node).__name__} over a recording")

    def _fetched(self, node: Node, text: str) -> Value:
        found = self.reader.fetch(text, self.times)
        if not is_scalar(node):
            return found
        values: dict[int, float] = {}
        for samples in found.values():
            values.update(samples)
        return Scalar(values=values)

    # --- operators ------------------------------------------------------------------------

    def _binary(self, node: Node) -> Value:
        op = str(node.op)
        modifier = node.modifier
        lhs, rhs = self.value(node.lhs), self.value(node.rhs)
        if op in SET_OPS:
            if isinstance(lhs, Scalar) or isinstance(rhs, Scalar):
                raise Unsupported(f"`{op}` with a scalar")
            return _set_op(op, lhs, rhs, _signature(modifier))
        returns_bool = bool(modifier is not None and modifier.return_bool)
        if isinstance(lhs, Scalar) and isinstance(rhs, Scalar):
            return _scalar_op(op, lhs, rhs, self.times)
        if isinstance(rhs, Scalar):
            return _vector_scalar(op, lhs, rhs, returns_bool, swapped=False)  # type: ignore[arg-type]
        if isinstance(lhs, Scalar):
            return _vector_scalar(op, rhs, lhs, returns_bool, swapped=True)
        return _vector_vector(op, lhs, rhs, modifier, returns_bool)

    def _call(self, node: Node) -> Value:
        name = node.func.name
        args = list(node.args)
        if name == "label_replace":
            strings = [str(a.val) for a in args[1:]]
            return _label_replace(self.vector(args[0]), *strings)
        if name in OVER_TIME:
            return self._over_time(name, args[0])
        if name in MATH:
            return _map(self.vector(args[0]), MATH[name])
        if name in ("clamp_min", "clamp_max"):
            bound = self.value(args[1])
            if not isinstance(bound, Scalar):
                raise Unsupported(f"{name} with a vector bound")
            return _clamp(name, self.vector(args[0]), bound)
        if name == "vector":
            scalar = self.value(args[0])
            if not isinstance(scalar, Scalar):
                raise Unsupported("vector() of a vector")
            return {(): {t: v for t in self.times if (v := scalar.at(t)) is not None}}
        raise Unsupported(f"{name}() over a recording")

    def _over_time(self, name: str, arg: Node) -> Vector:
        if not isinstance(arg, promql_parser.MatrixSelector):
            raise Unsupported(f"{name}() of a subquery over a recording")
        range_ms = duration_ms(arg.range)
        offset = duration_ms(arg.vector_selector.offset)
        found = self.reader.window(arg.vector_selector, range_ms, self.times)
        function = OVER_TIME[name]
        left_open = self.reader.left_open
        out: Vector = {}
        for labels, window in found.items():
            series: dict[int, float] = {}
            for t in self.times:
                end = t - offset
                first = (bisect_right if left_open else bisect_left)(window.times, end - range_ms)
                last = bisect_right(window.times, end)
                if first < last:
                    series[t] = function(window.values[first:last])
            if series:
                out[labels if name == "last_over_time" else _drop_name(labels)] = series
        return out


# --- pure helpers -------------------------------------------------------------------------

SET_OPS = ("and", "or", "unless")
COMPARISON_OPS = ("==", "!=", ">", "<", ">=", "<=")


def _drop_name(labels: Labels) -> Labels:
    return tuple(item for item in labels if item[0] != NAME)


def _map(value: Value, function: Callable[[float], float]) -> Value:
    """Apply ``function`` to every sample; a vector loses its metric name (as in PromQL)."""
    if isinstance(value, Scalar):
        if value.constant is not None:
            return Scalar(constant=function(value.constant))
        return Scalar(values={t: function(v) for t, v in (value.values or {}).items()})
    out: Vector = {}
    for labels, samples in value.items():
        out.setdefault(_drop_name(labels), {}).update({t: function(v) for t, v in samples.items()})
    return out


def _arith(op: str, a: float, b: float) -> float:
    """Prometheus's float arithmetic (Go semantics: x/0 is ±Inf or NaN, no exception)."""
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        if b == 0:
            return math.nan if a == 0 or math.isnan(a) else math.copysign(math.inf, a) * (
                math.copysign(1.0, b))  # fmt: skip
        return a / b
    if op == "%":
        return math.fmod(a, b) if b != 0 else math.nan
    if op == "^":
        try:
            return float(a**b)
        except (OverflowError, ZeroDivisionError):
            return math.inf
    if op == "atan2":
        return math.atan2(a, b)
    raise Unsupported(f"the operator {op}")


def _compare(op: str, a: float, b: float) -> bool:
    if op == "==":
        return a == b
    if op == "!=":
        return a != b
    if op == ">":
        return a > b
    if op == "<":
        return a < b
    if op == ">=":
        return a >= b
    return a <= b


def _scalar_op(op: str, lhs: Scalar, rhs: Scalar, times: Sequence[int]) -> Scalar:
    def one(a: float, b: float) -> float:
        if op in COMPARISON_OPS:
            return 1.0 if _compare(op, a, b) else 0.0
        return _arith(op, a, b)

    if lhs.constant is not None and rhs.constant is not None:
        return Scalar(constant=one(lhs.constant, rhs.constant))
    values = {}
    for t in times:
        a, b = lhs.at(t), rhs.at(t)
        if a is not None and b is not None:
            values[t] = one(a, b)
    return Scalar(values=values)


def _vector_scalar(op: str, vector: Vector, scalar: Scalar, returns_bool: bool,
                   *, swapped: bool) -> Vector:  # fmt: skip
    """``v op s`` (or ``s op v`` when ``swapped``): a filter comparison keeps the vector's
    value and name; arithmetic and ``bool`` drop the name."""
    out: Vector = {}
    comparison = op in COMPARISON_OPS
    for labels, samples in vector.items():
        keep_name = comparison and not returns_bool
        key = labels if keep_name else _drop_name(labels)
        series = out.setdefault(key, {})
        for t, v in samples.items():
            s = scalar.at(t)
            if s is None:
                continue
            a, b = (s, v) if swapped else (v, s)
            if comparison:
                passed = _compare(op, a, b)
                if returns_bool:
                    series[t] = 1.0 if passed else 0.0
                elif passed:
                    series[t] = v
            else:
                series[t] = _arith(op, a, b)
    return {k: v for k, v in out.items() if v}


Signature = Callable[[Labels], Labels]


def _signature(modifier: Node) -> Signature:
    """The labels two series are matched on: ``on (…)`` those, ``ignoring (…)`` all but
    those, neither all; the metric name never counts."""
    matching = modifier.matching if modifier is not None else None
    if matching is None:
        return _drop_name
    names = frozenset(matching.labels)
    if str(matching.type).endswith("Include"):
        return lambda labels: tuple(item for item in labels if item[0] in names)
    return lambda labels: tuple(item for item in labels if item[0] not in names and
                                item[0] != NAME)  # fmt: skip


def _set_op(op: str, lhs: Vector, rhs: Vector, signature: Signature) -> Vector:
    """``and``/``or``/``unless``, step by step: which right-side signatures exist at ``t``."""
    right_at: dict[int, set[Labels]] = {}
    for labels, samples in rhs.items():
        sig = signature(labels)
        for t in samples:
            right_at.setdefault(t, set()).add(sig)
    out: Vector = {}
    if op == "or":
        left_at: dict[int, set[Labels]] = {}
        for labels, samples in lhs.items():
            out[labels] = dict(samples)
            sig = signature(labels)
            for t in samples:
                left_at.setdefault(t, set()).add(sig)
        for labels, samples in rhs.items():
            sig = signature(labels)
            extra = {t: v for t, v in samples.items() if sig not in left_at.get(t, ())}
            if extra:
                out.setdefault(labels, {}).update(extra)
        return out
    wanted = op == "and"
    for labels, samples in lhs.items():
        sig = signature(labels)
        kept = {t: v for t, v in samples.items() if (sig in right_at.get(t, ())) == wanted}
        if kept:
            out[labels] = kept
    return out


@dataclass(frozen=True)
class _Matching:
    """How a vector-vector operation pairs series and labels its results."""

    signature: Signature
    one_to_one: bool
    on: bool
    names: frozenset[str]
    group_labels: tuple[str, ...]
    flip: bool  # group_right: the right side is the "many" side

    @classmethod
    def of(cls, modifier: Node) -> _Matching:
        card = str(modifier.card) if modifier is not None else "OneToOne"
        matching = modifier.matching if modifier is not None else None
        return cls(
            signature=_signature(modifier),
            one_to_one=card.endswith("OneToOne"),
            on=matching is not None and str(matching.type).endswith("Include"),
            names=frozenset(matching.labels) if matching is not None else frozenset(),
            group_labels=tuple(modifier.group_labels or []) if modifier is not None else (),
            flip=card.endswith("OneToMany"),
        )


def _vector_vector(op: str, lhs: Vector, rhs: Vector, modifier: Node,
                   returns_bool: bool) -> Vector:  # fmt: skip
    """Arithmetic or a comparison between two vectors, one-to-one or ``group_left/right``.

    ``Unsupported`` where the server refuses the match at some time: two series of the "one"
    side with one signature; two pairs kept (a filter's dropped pairs do not count) of a
    one-to-one match on one signature, or of ``group_left/right`` with one label set."""
    matching = _Matching.of(modifier)
    many, one = (rhs, lhs) if matching.flip else (lhs, rhs)
    one_by_sig: dict[Labels, list[Labels]] = {}
    for labels in one:
        one_by_sig.setdefault(matching.signature(labels), []).append(labels)
    _unique_one_side(one, one_by_sig, many)
    out: Vector = {}
    matched: dict[tuple[tuple[Labels, ...], int], Labels] = {}
    for labels in sorted(many):
        sig = matching.signature(labels)
        for partner in one_by_sig.get(sig, []):
            result = _result_labels(labels, partner, op, matching, returns_bool)
            key = (sig,) if matching.one_to_one else (sig, result)
            target = out.setdefault(result, {})
            right = one[partner]
            for t, v in many[labels].items():
                w = right.get(t)
                if w is None:
                    continue
                a, b = (w, v) if matching.flip else (v, w)
                value = _element(op, a, b, returns_bool)
                if value is None:
                    continue
                if matched.setdefault((key, t), labels) != labels:
                    raise Unsupported(f"two series matching {dict(sig)} at one time (the "
                                      "server would refuse this match)")  # fmt: skip
                target[t] = value
    return {k: v for k, v in out.items() if v}


def _unique_one_side(one: Vector, by_signature: dict[Labels, list[Labels]],
                     other: Vector) -> None:  # fmt: skip
    """``Unsupported`` when two series of the "one" side share a signature at a time the
    other side has samples (the server's many-to-many refusal)."""
    other_times: set[int] | None = None
    for sig, series in by_signature.items():
        if len(series) < 2:
            continue
        if other_times is None:
            other_times = {t for samples in other.values() for t in samples}
        seen: set[int] = set()
        for labels in series:
            if seen & one[labels].keys() & other_times:
                raise Unsupported(f"two series matching {dict(sig)} on the one side at "
                                  "one time (the server refuses many-to-many)")  # fmt: skip
            seen |= one[labels].keys()


def _element(op: str, a: float, b: float, returns_bool: bool) -> float | None:
    """One pair's result: arithmetic, ``bool`` 0/1, or a filter keeping the left value
    (``None``: filtered out)."""
    if op not in COMPARISON_OPS:
        return _arith(op, a, b)
    passed = _compare(op, a, b)
    if returns_bool:
        return 1.0 if passed else 0.0
    return a if passed else None


def _result_labels(
    many: Labels, one: Labels, op: str, matching: _Matching, returns_bool: bool
) -> Labels:
    """Prometheus's ``resultMetric``: the "many" side's labels, the name dropped for
    arithmetic and ``bool``, reduced to ``on`` labels (or without ``ignoring`` ones) for
    one-to-one matching, plus the ``group_left/right`` labels from the "one" side."""
    labels = dict(many)
    if op not in COMPARISON_OPS or returns_bool:
        labels.pop(NAME, None)
    if matching.one_to_one:
        keep = matching.on
        labels = {k: v for k, v in labels.items() if (k in matching.names) == keep}
    other = dict(one)
    for name in matching.group_labels:
        if name in other:
            labels[name] = other[name]
        else:
            labels.pop(name, None)
    return tuple(sorted(labels.items()))


def _aggregate(node: Node, vector: Vector) -> Vector:
    """``sum``/``avg``/``min``/``max``/``count``/``group`` by or without labels, with 2.x's
    arithmetic (``avg`` as an incremental mean)."""
    op = str(node.op)
    if op not in AGGREGATIONS or node.param is not None:
        raise Unsupported(f"the aggregation {op} over a recording")
    modifier = node.modifier
    if modifier is None:
        key: Callable[[Labels], Labels] = lambda _labels: ()  # noqa: E731
    else:
        names = frozenset(modifier.labels)
        if str(modifier.type).endswith("By"):
            key = lambda labels: tuple(i for i in labels if i[0] in names)  # noqa: E731
        else:
            key = lambda labels: tuple(i for i in labels if i[0] not in names and  # noqa: E731
                                       i[0] != NAME)  # fmt: skip
    groups: dict[Labels, dict[int, list[float]]] = {}
    for labels in sorted(vector):
        group = groups.setdefault(key(labels), {})
        for t, v in vector[labels].items():
            group.setdefault(t, []).append(v)
    reduce = AGGREGATIONS[op]
    return {labels: {t: reduce(values) for t, values in sorted(by_time.items())}
            for labels, by_time in groups.items()}  # fmt: skip


def _sum(values: list[float]) -> float:
    total = 0.0
    for v in values:
        total += v
    return total


def _mean(values: list[float]) -> float:
    """Prometheus 2.x ``avg``: ``mean += v/n - mean/n``; an infinite mean stays as it is
    unless a NaN or an infinity of the other sign comes (``avg(+Inf, 1)`` is ``+Inf``)."""
    mean = values[0]
    count = 1.0
    for v in values[1:]:
        count += 1
        if math.isinf(mean) and (
            (math.isinf(v) and (mean > 0) == (v > 0)) or not (math.isinf(v) or math.isnan(v))
        ):
            continue
        mean += v / count - mean / count
    return mean


def _max(values: list[float]) -> float:
    best = values[0]
    for v in values[1:]:
        if best < v or math.isnan(best):
            best = v
    return best


def _min(values: list[float]) -> float:
    best = values[0]
    for v in values[1:]:
        if best > v or math.isnan(best):
            best = v
    return best


AGGREGATIONS: dict[str, Callable[[list[float]], float]] = {
    "sum": _sum, "avg": _mean, "max": _max, "min": _min,
    "count": lambda values: float(len(values)), "group": lambda _values: 1.0,
}  # fmt: skip


def _kahan_mean(values: list[float]) -> float:
    """``avg_over_time``: an incremental mean with compensation (Prometheus's
    ``kahanSumInc``)."""
    mean = compensation = 0.0
    count = 0.0
    for v in values:
        count += 1
        if math.isinf(mean):
            if math.isinf(v) and (mean > 0) == (v > 0):
                continue
            if not math.isinf(v) and not math.isnan(v):
                continue
        mean, compensation = _kahan_inc(v / count - mean / count, mean, compensation)
    return mean if math.isinf(mean) else mean + compensation


def _kahan_sum(values: list[float]) -> float:
    total = compensation = 0.0
    for v in values:
        total, compensation = _kahan_inc(v, total, compensation)
    return total if math.isinf(total) else total + compensation


def _kahan_inc(inc: float, total: float, compensation: float) -> tuple[float, float]:
    new = total + inc
    if math.isinf(new):
        return new, 0.0
    if abs(total) >= abs(inc):
        compensation += (total - new) + inc
    else:
        compensation += (inc - new) + total
    return new, compensation


OVER_TIME: dict[str, Callable[[list[float]], float]] = {
    "avg_over_time": _kahan_mean, "sum_over_time": _kahan_sum, "max_over_time": _max,
    "min_over_time": _min, "count_over_time": lambda values: float(len(values)),
    "last_over_time": lambda values: values[-1],
}  # fmt: skip
MATH: dict[str, Callable[[float], float]] = {
    "abs": abs, "ceil": lambda v: float(math.ceil(v)) if math.isfinite(v) else v,
    "floor": lambda v: float(math.floor(v)) if math.isfinite(v) else v,
    "sqrt": lambda v: math.sqrt(v) if v >= 0 else math.nan,
}  # fmt: skip


def _clamp(name: str, vector: Vector, bound: Scalar) -> Vector:
    pick = max if name == "clamp_min" else min
    out: Vector = {}
    for labels, samples in vector.items():
        series = {}
        for t, v in samples.items():
            b = bound.at(t)
            if b is not None:
                series[t] = math.nan if math.isnan(v) or math.isnan(b) else float(pick(v, b))
        if series:
            out.setdefault(_drop_name(labels), {}).update(series)
    return out


_GO_GROUP = re.compile(r"\$(?:\{([A-Za-z0-9_]+)\}|([A-Za-z0-9_]+)|(\$))")


def _label_replace(vector: Vector, destination: str, replacement: str, source: str,
                   regex: str) -> Vector:  # fmt: skip
    """``label_replace``: where ``regex`` matches the whole ``source`` value, set
    ``destination`` to ``replacement`` with ``$1``/``${name}`` expanded (Go's rules; an
    empty result removes the label)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pattern = re.compile(f"^(?s:{python_regex(regex)})$")
    out: Vector = {}
    for labels, samples in vector.items():
        current = dict(labels)
        match = pattern.match(current.get(source, ""))
        if match is not None:
            value = _expand(replacement, match)
            if value:
                current[destination] = value
            else:
                current.pop(destination, None)
        key = tuple(sorted(current.items()))
        if key in out and set(out[key]) & set(samples):
            raise Unsupported("label_replace made two series with the same labels")
        out.setdefault(key, {}).update(samples)
    return out


def _expand(template: str, match: re.Match[str]) -> str:
    """Go's ``Regexp.Expand``: ``$1``, ``${1}``, ``$name``, ``${name}``, ``$$``; an unknown
    group is empty (``$1x`` names the group ``1x``, ``$01`` the group ``01``: a number has no
    leading zero); a ``$`` without a name (``${}``, ``$-``) stays as it is."""

    def group(found: re.Match[str]) -> str:
        if found.group(3):
            return "$"
        name = found.group(1) if found.group(1) is not None else found.group(2)
        if name.isdigit() and (name == "0" or not name.startswith("0")):
            index = int(name)
            return (match.group(index) or "") if index <= (match.re.groups or 0) else ""
        return match.groupdict().get(name) or ""

    return _GO_GROUP.sub(group, template)
