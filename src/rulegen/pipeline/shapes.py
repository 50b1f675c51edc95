"""The shape of a test unit: its bytes with the service's name renamed, when that is exact.

Why: a fleet is many services built from the same spec under other names, and every one of
their promtool tests is the same proof written with another name. A unit's result depends
on its bytes; if two units' bytes are the same once each one's service name is replaced by
one placeholder, and promtool cannot tell names apart but by equality, one run proves both.

When promtool cannot tell: the second unit is the first with every occurrence of one name
replaced by another (the placeholder is in neither). promtool compares label values,
alert names and group names for equality only, sorts what it compares on both sides the same
way, and copies free text (annotations, test names) through; all of that is unchanged by an
injective renaming. What could see a name's spelling is refused, so such a unit has no shape
(it is keyed by its own bytes, as before):

- the name inside anything but a label value of an equality matcher (``=``, ``!=``), a
  series' label, a rule's or check's labels, an alert or group name, a test's name, or the
  literal text of a template (outside ``{{ }}``): a regular expression, a metric or label
  name, a string argument, a template action;
- a label whose values carry the name read by a regular-expression matcher, by
  ``label_replace``/``label_join``, or by a template action other than printing it or
  quoting it into a ``query``;
- functions whose result depends on the order of label values: ``topk``, ``bottomk``,
  ``limitk``, ``limit_ratio``, ``sort_by_label``, ``sort_by_label_desc``, ``info``.

Each of these is checked on the unit's parsed files, by counting: every occurrence of the
name in every string of the files must be one of the allowed ones.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import promql_parser

from rulegen.core import promql
from rulegen.pipeline.testunits import template_queries
from rulegen.source.loader import LoadError, decode_source, load_text

PLACEHOLDER = "\x00rulegen-service\x00"
_PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]*")
_ORDERED = frozenset(
    {"topk", "bottomk", "limitk", "limit_ratio", "sort_by_label", "sort_by_label_desc", "info"}
)
_SERIES_DESCRIPTOR = ("series", "labels")
_ACTION_LABEL = re.compile(r"""\$labels\.(\w+)|index\s+\$labels\s+"([^"]+)\"""")
_PLAIN_OUTPUT = re.compile(r"""-?\s*(?:\$labels\.\w+|index\s+\$labels\s+"[^"]+")\s*-?""")


@dataclass(frozen=True)
class Identity:
    """What names a service in its generated files (its name), for its units' shapes."""

    service: str


class _NoShape(Exception):
    """The unit's result could depend on how the name is spelled."""


@dataclass
class _Census:
    """Occurrences of the name: in every string, and in the places a renaming cannot be seen."""

    name: str
    everywhere: int = 0
    allowed: int = 0
    carriers: set[str] = field(default_factory=set)  # labels whose values carry the name
    observed: list[tuple[str, str]] = field(default_factory=list)  # (how, label) seen
    ordered: bool = False

    def allow(self, text: str) -> None:
        self.allowed += text.count(self.name)

    def value(self, label: str, value: str) -> None:
        if self.name in value:
            self.carriers.add(label)
            self.allowed += value.count(self.name)


def shape_of(
    files: Sequence[tuple[str, bytes]], identity: Identity, parsed: Sequence[Any] = ()
) -> list[tuple[str, bytes]] | None:
    """The unit's files with the service name renamed, or ``None`` when the renaming might
    change promtool's result (or the name does not occur: nothing to share). ``parsed``:
    the files' data, when the caller has it (else each file is parsed)."""
    name = identity.service
    if not _PLAIN_NAME.fullmatch(name) or len(name) < 2:
        return None
    if not any(name.encode() in data for _, data in files):
        return None
    census = _Census(name)
    try:
        for index, (file_name, data) in enumerate(files):
            loaded = (
                parsed[index]
                if len(parsed) == len(files)
                else load_text(decode_source(data, file_name), file_name).data
            )
            census.everywhere += sum(s.count(name) for s in _strings(loaded))
            if file_name.startswith("rules-"):
                _rule_file(loaded, census)
            else:
                _test_file(loaded, census)
    except (_NoShape, LoadError, ValueError, TypeError, KeyError, AttributeError):
        return None
    if census.everywhere != census.allowed or census.ordered:
        return None
    if any(label in census.carriers for _, label in census.observed):
        return None
    return [(n, data.replace(name.encode(), PLACEHOLDER.encode())) for n, data in files]


def _strings(data: Any) -> Iterator[str]:
    if isinstance(data, str):
        yield data
    elif isinstance(data, dict):
        for key, value in data.items():
            yield from _strings(key)
            yield from _strings(value)
    elif isinstance(data, list):
        for item in data:
            yield from _strings(item)


def _rule_file(data: dict[str, Any], census: _Census) -> None:
    for group in data["groups"]:
        census.allow(str(group["name"]))
        for rule in group.get("rules") or []:
            _promql(str(rule["expr"]), census)
            for label, value in (rule.get("labels") or {}).items():
                _template(str(value), census)
                census.value(str(label), _literal_text(str(value)))
            for value in (rule.get("annotations") or {}).values():
                _template(str(value), census)
                census.allow(_literal_text(str(value)))
            if "alert" in rule:
                census.value("alertname", str(rule["alert"]))


def _test_file(data: dict[str, Any], census: _Census) -> None:
    for label, value in (data.get("external_labels") or {}).items():
        census.value(str(label), str(value))
    for case in data.get("tests") or []:
        census.allow(str(case.get("name", "")))
        for label, value in (case.get("external_labels") or {}).items():
            census.value(str(label), str(value))
        for series in case.get("input_series") or []:
            _descriptor(str(series["series"]), census)
        for check in case.get("promql_expr_test") or []:
            _promql(str(check["expr"]), census)
            for sample in check.get("exp_samples") or []:
                _descriptor(str(sample["labels"]), census)
        for check in case.get("alert_rule_test") or []:
            _alert_check(check, census)


def _alert_check(check: dict[str, Any], census: _Census) -> None:
    census.value("alertname", str(check["alertname"]))
    for alert in check.get("exp_alerts") or []:
        for label, value in (alert.get("exp_labels") or {}).items():
            census.value(str(label), str(value))
        for value in (alert.get("exp_annotations") or {}).values():
            census.allow(str(value))


def _descriptor(text: str, census: _Census) -> None:
    """A series as a test writes it (``name{a="b"}``): its label values carry names."""
    if text.strip() == "{}":
        return
    parsed = promql_parser.parse(text)
    if not isinstance(parsed, promql_parser.VectorSelector):
        raise _NoShape
    for matcher in parsed.matchers.matchers:
        if matcher.name != "__name__":
            census.value(str(matcher.name), str(matcher.value))


def _promql(expr: str, census: _Census) -> None:
    stack: list[Any] = [promql_parser.parse(expr)]
    while stack:
        node = stack.pop()
        if isinstance(node, promql_parser.VectorSelector):
            _selector(node, census)
        elif isinstance(node, promql_parser.Call):
            _call(node, census)
        elif isinstance(node, promql_parser.AggregateExpr) and str(node.op) in _ORDERED:
            census.ordered = True
        stack.extend(promql._children(node))


def _selector(node: Any, census: _Census) -> None:
    if node.matchers.or_matchers:
        raise _NoShape
    for matcher in node.matchers.matchers:
        op, label, value = promql._OPS[str(matcher.op)], str(matcher.name), str(matcher.value)
        if label == "__name__":
            continue
        if op in ("=", "!="):
            census.value(label, value)
        else:
            census.observed.append(("regex", label))


def _call(node: Any, census: _Census) -> None:
    name = str(node.func.name)
    if name in _ORDERED:
        census.ordered = True
    strings = [str(a.val) for a in node.args if isinstance(a, promql_parser.StringLiteral)]
    if name == "label_replace" and len(strings) == 4:
        destination, replacement, source, _regex = strings
        if "$" not in replacement:
            census.value(destination, replacement)
        if source:
            census.observed.append(("label_replace", source))
    elif name == "label_join" and strings:
        census.observed.extend(("label_join", source) for source in strings[2:])


def _template(text: str, census: _Census) -> None:
    """A label or annotation template: its literal text may carry the name (counted by the
    caller); each action may only print a label, or quote labels into a ``query`` whose
    PromQL is known, and carries the name only in such a query's matcher values."""
    for action in _actions(text):
        body = action.strip()
        if _PLAIN_OUTPUT.fullmatch(body):
            continue
        queries = template_queries("{{" + body + "}}", text)
        if queries is None or census.name in _STRING_LITERAL.sub("", body):
            raise _NoShape
        for expr in queries:
            _promql(expr, census)
        for match in _ACTION_LABEL.finditer(_STRING_LITERAL.sub("", body)):
            if not _quoted_into_query(body, match.group(0)):
                census.observed.append(("template", match.group(1) or match.group(2)))


_STRING_LITERAL = re.compile(r"`[^`]*`|" + r'"(?:[^"\\]|\\.)*"')


def _quoted_into_query(body: str, reference: str) -> bool:
    """Whether ``reference`` is an argument of a ``printf`` whose verbs are all ``%q``."""
    for match in re.finditer(r"""printf\s+(`[^`]*`|"(?:[^"\\]|\\.)*")([^()]*)""", body):
        if reference in match.group(2):
            verbs = re.findall(r"%(?:\[\d+\])?[-+# 0]*\d*(?:\.\d+)?([a-zA-Z%])", match.group(1))
            return all(verb == "q" for verb in verbs)
    return False


def _literal_text(text: str) -> str:
    """A template's text outside its actions."""
    out, position = [], 0
    for start, end in _action_spans(text):
        out.append(text[position:start])
        position = end
    out.append(text[position:])
    return "".join(out)


def _actions(text: str) -> list[str]:
    return [text[start + 2 : end - 2] for start, end in _action_spans(text)]


def _action_spans(text: str) -> list[tuple[int, int]]:
    """Where each ``{{ … }}`` is, skipping quoted and backquoted strings inside it."""
    spans = []
    position = 0
    while (start := text.find("{{", position)) >= 0:
        index = start + 2
        while index < len(text) and not text.startswith("}}", index):
            char = text[index]
            if char in '`"':
                closing = text.find(char, index + 1)
                while char == '"' and closing > 0 and text[closing - 1] == "\\":
                    closing = text.find(char, closing + 1)
                if closing < 0:
                    raise _NoShape
                index = closing
            index += 1
        if index >= len(text):
            raise _NoShape
        spans.append((start, index + 2))
        position = index + 2
    return spans
