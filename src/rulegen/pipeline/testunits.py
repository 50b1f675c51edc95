"""A promtool test file cut into units: each test case with only the rules it can observe.

Why: promtool evaluates every rule of the loaded files at every evaluation step of every test
case, while a case checks a few series. An SLO's page test reads the 1h/5m and 6h/30m burn
rates, yet pays at every step for the 3-day and 30-day sums of the ticket, the term counts
and the coverage: half or more of the SLO tests' promtool time.

What makes a unit prove what its case proved in the whole file: promtool runs each case from
its own empty storage, evaluating the rule groups in order at every step, so a checked
series' values depend only on the input series and on the rules the checks read, through any
chain of recordings (a recording is read by its name; an alert through ``ALERTS`` and
``ALERTS_FOR_STATE``, and through the ``query`` calls of its label and annotation
templates). That set, the *dependency closure*, is kept in each group in its place, so every
rule in it sees at every step exactly the series it saw in the whole file; the rules left out
write series no check and no kept rule can select. Two refinements, both exact: a selector of
``ALERTS{severity="critical"}`` cannot see an alert whose static label says ``warning``, and
an ``alert_rule_test`` (which compares every firing alert of its name, with annotations)
keeps every rule of that name.

Anything the closure cannot be computed for with certainty (a glob in ``rule_files``, an
expression that does not parse, a template whose ``query`` text is built at run time from
more than numbers) reads "everything": the unit loads the whole files, as before.

Cases whose closures are the same share a unit (one promtool run). Each unit is a folder of
its own: ``test.yml`` (the file's header, its cases, ``rule_files`` naming the cut files)
and ``rules-N.yml``, one per original rule file, every group kept (its name, interval,
offsets, labels) with only its closure's rules, each rule's data as parsed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rulegen.core import promql
from rulegen.output import dump_yaml
from rulegen.source.loader import LoadError, decode_source, load_text

TEST_NAME = "test.yml"
_FAST: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_GLOB = ("*", "?", "[")
_CHECKS = ("alert_rule_test", "promql_expr_test")
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}
_DURATION = re.compile(r"(\d+)(ms|[smhdwy])")
_DURATIONS = re.compile(r"(?:\d+(?:ms|[smhdwy]))+")
# What starting one more promtool run costs, in the units of a unit's weight (evaluation
# steps × bytes of rules evaluated): about 0.1 s of promtool 3.5 on the 2-core machine, which
# evaluates about 1.2 million of them a second (docs/dev/performance.md).
RUN_OVERHEAD = 120_000


@dataclass(frozen=True)
class Unit:
    """Some cases of one test file, run against the rules they can observe.

    ``source``: the test file they come from (as the build names it); ``titles``: the
    cases' names; ``files``: the unit's folder, ``test.yml`` first, as (name, bytes);
    ``weight``: the estimated promtool cost (evaluation steps × bytes of rules evaluated);
    ``whole``: the unit loads every rule (nothing could be cut).
    """

    source: str
    titles: tuple[str, ...]
    files: tuple[tuple[str, bytes], ...]
    weight: float
    whole: bool
    # the files' data, as dumped (what ``rulegen.pipeline.shapes`` reads instead of parsing)
    data: tuple[Any, ...] = field(default=(), compare=False)


@dataclass(frozen=True)
class _Rule:
    group: int
    data: dict[str, Any]
    name: str  # the recorded metric, or the alert's name
    alert: bool
    reads: tuple[_Read, ...]  # its expression and label templates: what its series depend on
    shown: tuple[_Read, ...]  # its annotations' queries: what an alert_rule_test also compares
    size: int


@dataclass(frozen=True)
class _Read:
    """A selector's metric (``*``: any) with its equality matchers, as a closure step."""

    metric: str
    matchers: tuple[tuple[str, str], ...] = ()


def split(
    folder: Path, test_file: str, *, trusted: bool = False, memo: dict[Any, Any] | None = None
) -> list[Unit] | None:
    """The units of ``folder/test_file``, in the order of their first case; ``None`` when
    the file cannot be read as a promtool test file of known rule files (then it runs whole,
    as promtool would run it).

    ``trusted``: the files are rulegen's own output, just written (read with libyaml's plain
    loader; a user's test file goes through the spec loader's guards); ``memo``: rule files
    already read by this build, by path (a rule file is loaded by several test files).
    """
    loaded = _load(folder / test_file, trusted)
    if not isinstance(loaded, dict) or not isinstance(loaded.get("tests"), list):
        return None
    names = loaded.get("rule_files")
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        return None
    if any(char in name for name in names for char in _GLOB):
        return None
    memo = {} if memo is None else memo
    paths = [(folder / test_file).parent / name for name in names]
    for path in paths:
        if path not in memo:
            memo[path] = _load(path, trusted)
    rule_files = [memo[path] for path in paths]
    if not all(isinstance(f, dict) and isinstance(f.get("groups"), list) for f in rule_files):
        return None
    try:
        rules = [_memo_rules(memo, path) for path in paths]
        interval = seconds(str(loaded.get("evaluation_interval", "1m")))
        by_closure: dict[_Kept, list[dict[str, Any]]] = {}
        for case in loaded["tests"]:
            for kept, part in _parts(case, rules, interval):
                by_closure.setdefault(kept, []).append(part)
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    return [
        _unit(test_file, loaded, names, rule_files, rules, kept, cases, interval)
        for kept, cases in by_closure.items()
    ]


def seconds(duration: str) -> float:
    """A Prometheus duration (``4d1h45m``, ``90s``) in seconds; ``ValueError`` otherwise."""
    if not _DURATIONS.fullmatch(duration):
        raise ValueError(f"not a duration: {duration!r}")
    return sum(int(n) * _UNIT_SECONDS[unit] for n, unit in _DURATION.findall(duration))


def _load(path: Path, trusted: bool) -> Any:
    try:
        raw = path.read_bytes()
        if trusted:
            return yaml.load(raw, Loader=_FAST)  # noqa: S506 (a safe loader, C or Python)
        return load_text(decode_source(raw, path.name), path.name).data
    except (OSError, LoadError, yaml.YAMLError, UnicodeDecodeError):
        return None


def _memo_rules(memo: dict[Any, Any], path: Path) -> list[_Rule]:
    key = ("rules", path)
    if key not in memo:
        memo[key] = _rules_of(memo[path])
    found: list[_Rule] = memo[key]
    return found


def _rules_of(rule_file: dict[str, Any]) -> list[_Rule]:
    out = []
    for index, group in enumerate(rule_file["groups"]):
        for rule in group.get("rules") or []:
            alert = "alert" in rule
            name = str(rule["alert"] if alert else rule["record"])
            if not alert and name in ("ALERTS", "ALERTS_FOR_STATE"):
                raise ValueError("a recording of the alerts' own series")  # runs whole
            reads = _expr_reads(str(rule["expr"]))
            shown: tuple[_Read, ...] = ()
            if alert:
                reads += _template_reads(rule, "labels")
                shown = _template_reads(rule, "annotations")
            out.append(_Rule(index, rule, name, alert, reads, shown, len(repr(rule))))
    return out


def _expr_reads(expr: str) -> tuple[_Read, ...]:
    """What an expression selects: plain metrics by name, alert series with their matchers."""
    metrics = promql.metrics_read(expr)
    plain = tuple(_Read(m) for m in sorted(metrics) if not m.startswith("ALERTS"))
    alerts = tuple(_Read("ALERTS", pairs) for pairs in promql.alert_series_read(expr))
    return plain + alerts


_QUERY = re.compile(r"\bquery\b")
_STRING = r"`[^`]*`|" + r'"(?:[^"\\]|\\.)*"'
_QUERY_CALL = re.compile(
    rf"\bquery\s+(?:(?P<literal>{_STRING})|\(\s*printf\s+(?P<format>{_STRING})(?P<args>[^()]*)\))"
)
_ARG = re.compile(r"\$[\w.]*|" + _STRING + r"|[^\s]+")
_VERB = re.compile(r"%(?:\[(?P<index>\d+)\])?[-+# 0]*\d*(?:\.\d+)?(?P<kind>[a-zA-Z%])")
_MATCHER_OP = re.compile(r"(?:=|=~|!=|!~)\s*$")
_NAME_CHAR = re.compile(r"[A-Za-z0-9_:{}\"'`=~]")


def _template_reads(rule: dict[str, Any], key: str) -> tuple[_Read, ...]:
    """What the ``query`` calls of an alert's label (or annotation) templates select; a
    query whose PromQL is not known (``template_queries``) may select anything."""
    reads: list[_Read] = []
    for value in (rule.get(key) or {}).values():
        queries = template_queries(str(value))
        if queries is None:
            return (_Read(promql.ANY_SERIES),)
        for expr in queries:
            reads.extend(_expr_reads(expr))
    return tuple(reads)


def template_queries(text: str, whole: str | None = None) -> list[str] | None:
    """The PromQL of every ``query`` call of a Go template, or ``None`` when one is not known.

    Known: literal text, or a ``printf`` of literal text whose ``%q`` verbs fill matcher
    values (a quoted string there selects nothing new) and whose other verbs take ``$value``
    or a number (``$x := . | first | value``) between operators; ``%q`` verbs become ``"x"``
    and number verbs ``0``. ``whole``: the template ``text`` is part of, where the
    variables are bound (default ``text``)."""
    calls = list(_QUERY_CALL.finditer(text))
    if len(calls) != len(_QUERY.findall(text)):
        return None
    out = []
    for call in calls:
        expr = _query_text(call, _numbers(text if whole is None else whole))
        if expr is None:
            return None
        out.append(expr)
    return out


def _numbers(text: str) -> set[str]:
    """Template variables bound to a query result's value (a number)."""
    return {"$value", *re.findall(r"(\$\w+)\s*:=\s*\.\s*\|\s*first\s*\|\s*value\b", text)}


def _unquote(literal: str) -> str | None:
    if literal.startswith("`"):
        return literal[1:-1]
    body = literal[1:-1]
    if re.search(r'\\[^"\\]', body):
        return None
    return re.sub(r'\\(["\\])', r"\1", body)


def _query_text(call: re.Match[str], numbers: set[str]) -> str | None:
    if call["literal"] is not None:
        return _unquote(call["literal"])
    fmt = _unquote(call["format"])
    if fmt is None:
        return None
    args = _ARG.findall(call["args"])
    out: list[str] = []
    position, next_arg = 0, 0
    for verb in _VERB.finditer(fmt):
        out.append(fmt[position : verb.start()])
        position = verb.end()
        if verb["kind"] == "%":
            out.append("%")
            continue
        arg = int(verb["index"]) - 1 if verb["index"] else next_arg
        next_arg = arg + 1
        before, after = "".join(out), fmt[verb.end() : verb.end() + 1]
        if verb["kind"] == "q" and _MATCHER_OP.search(before):
            out.append('"x"')
        elif (
            arg < len(args)
            and args[arg] in numbers
            and not _NAME_CHAR.match(before[-1:] or " ")
            and not _NAME_CHAR.match(after or " ")
        ):
            out.append("0")
        else:
            return None
    out.append(fmt[position:])
    return "".join(out)


_Kept = frozenset[tuple[int, int]]  # (rule file, rule) indexes


@dataclass
class _Part:
    kept: _Kept
    checks: list[tuple[str, int]]  # (kind, index in the case's list of that kind)
    last: float  # the latest eval_time, seconds


def _parts(
    case: dict[str, Any], files: Sequence[Sequence[_Rule]], interval: float
) -> list[tuple[_Kept, dict[str, Any]]]:
    """The case cut into cases of the same input, each with the checks of one closure, when
    that costs promtool less (steps × bytes of rules evaluated) than the whole case: a check
    at ``eval_time`` T sees exactly what it saw in the case, whose evaluation up to T is the
    same whatever comes after."""
    parts: dict[_Kept, _Part] = {}
    for kind in _CHECKS:
        for index, check in enumerate(case.get(kind) or []):
            kept = _closure(kind, check, files)
            part = parts.setdefault(kept, _Part(kept, [], 0.0))
            part.checks.append((kind, index))
            part.last = max(part.last, seconds(str(check["eval_time"])))
    merged = _merge(list(parts.values()), files, interval)
    if not merged:
        return [(frozenset(), case)]
    return [(part.kept, _case_part(case, part)) for part in merged]


def _merge(parts: list[_Part], files: Sequence[Sequence[_Rule]], interval: float) -> list[_Part]:
    """Join parts while joining two of them saves cost (the best pair first)."""

    def cost(part: _Part) -> float:
        size = sum(files[f][i].size for f, i in part.kept)
        return (part.last // interval + 1) * max(size, 1) + RUN_OVERHEAD

    while len(parts) > 1:
        best: tuple[float, int, int] | None = None
        for a in range(len(parts)):
            for b in range(a + 1, len(parts)):
                joined = _Part(parts[a].kept | parts[b].kept, [], max(parts[a].last, parts[b].last))
                saving = cost(parts[a]) + cost(parts[b]) - cost(joined)
                if saving >= 0 and (best is None or saving > best[0]):
                    best = (saving, a, b)
        if best is None:
            break
        _, a, b = best
        first, second = parts[a], parts[b]
        parts[a] = _Part(first.kept | second.kept, first.checks + second.checks,
                         max(first.last, second.last))  # fmt: skip
        del parts[b]
    return parts


def _case_part(case: dict[str, Any], part: _Part) -> dict[str, Any]:
    """The case with only the part's checks (in their order), every other key kept."""
    chosen = set(part.checks)
    out = dict(case)
    for kind in _CHECKS:
        if kind in case:
            out[kind] = [c for n, c in enumerate(case.get(kind) or []) if (kind, n) in chosen]
    return out


def _closure(kind: str, check: dict[str, Any], files: Sequence[Sequence[_Rule]]) -> _Kept:
    """The rules a check can observe: what its expression selects (an ``alert_rule_test``:
    every rule of its alert, annotations included), and all they read, transitively."""
    rules = [(f, i, rule) for f, found in enumerate(files) for i, rule in enumerate(found)]
    kept: set[tuple[int, int]] = set()
    todo: list[_Read] = []
    if kind == "promql_expr_test":
        todo.extend(_expr_reads(str(check["expr"])))
    else:
        for f, i, rule in rules:
            if rule.alert and rule.name == str(check["alertname"]):
                kept.add((f, i))
                todo.extend(rule.reads + rule.shown)
    seen: set[_Read] = set()
    while todo:
        read = todo.pop()
        if read in seen:
            continue
        seen.add(read)
        for f, i, rule in rules:
            if (f, i) not in kept and _selects(read, rule):
                kept.add((f, i))
                todo.extend(rule.reads)
    return frozenset(kept)


def _selects(read: _Read, rule: _Rule) -> bool:
    """Whether a selector can see a series the rule writes."""
    if read.metric == promql.ANY_SERIES:
        return True
    if read.metric != "ALERTS":
        return not rule.alert and read.metric == rule.name
    if not rule.alert:
        return False
    labels = rule.data.get("labels") or {}
    for label, value in read.matchers:
        if label == "alertname":
            if value != rule.name:
                return False
        elif label in labels and "{{" not in str(labels[label]) and str(labels[label]) != value:
            return False
    return True


def _unit(
    source: str,
    loaded: dict[str, Any],
    names: Sequence[str],
    rule_files: Sequence[dict[str, Any]],
    rules: Sequence[Sequence[_Rule]],
    kept: _Kept,
    cases: list[dict[str, Any]],
    interval: float,
) -> Unit:
    cut_names = [f"rules-{n}.yml" for n in range(len(names))]
    header = {k: v for k, v in loaded.items() if k not in ("rule_files", "tests")}
    test = {"rule_files": cut_names, **header, "tests": cases}
    files = [(TEST_NAME, _dump(test))]
    data: list[Any] = [test]
    size = 0
    for f, (name, original, found) in enumerate(zip(cut_names, rule_files, rules, strict=True)):
        chosen = [rule for i, rule in enumerate(found) if (f, i) in kept]
        cut = _cut(original, chosen)
        files.append((name, _dump(cut)))
        data.append(cut)
        size += sum(rule.size for rule in chosen)
    whole = len(kept) == sum(len(found) for found in rules)
    titles = tuple(str(case.get("name", "")) for case in cases)
    weight = _steps(cases, interval) * max(size, 1)
    return Unit(source, titles, tuple(files), weight, whole, tuple(data))


def _cut(rule_file: dict[str, Any], kept: Iterable[_Rule]) -> dict[str, Any]:
    by_group: dict[int, list[dict[str, Any]]] = {}
    for rule in kept:
        by_group.setdefault(rule.group, []).append(rule.data)
    groups = [
        {**group, "rules": by_group.get(index, [])}
        for index, group in enumerate(rule_file["groups"])
    ]
    return {**rule_file, "groups": groups}


def _steps(cases: Sequence[dict[str, Any]], interval: float) -> int:
    """Evaluation steps promtool makes for these cases (each from 0 to its last check)."""
    total = 0
    for case in cases:
        times = [
            seconds(str(check["eval_time"])) for key in _CHECKS for check in case.get(key) or []
        ]
        total += int(max(times, default=0) // interval) + 1
    return total


def _dump(data: dict[str, Any]) -> bytes:
    return dump_yaml(data, "").encode("utf-8")
