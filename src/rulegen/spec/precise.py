"""The JSON Schema made precise for generic validators: each mistake reported at its own field.

Why: pydantic writes an optional list as ``anyOf: [array, null]`` and the alert kinds as a
``oneOf`` with an OpenAPI ``discriminator``. python-jsonschema (and editors built on the same
rules) ignore the discriminator and report a typo inside one alert as "``alerts`` is not valid
under any of the given schemas", the whole list, naming nothing. Here the nullable values
become ``type: [X, "null"]`` (or ``if null / else $ref``), the kinds an ``if``/``then`` per
``signal`` (or ``kind``) value, so an error in an alert is reported inside that alert; the
catalog's threshold units become types, patterns and bounds (``threshold: 1`` on a percentage
is flagged: the fraction 1 is 100%); and a spec that declares no ``severities:`` (and extends
no defaults file, which may declare them) has its severities checked against the defaults.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from rulegen.catalog.definition import ThresholdDef
from rulegen.source.base import SEVERITY_SCHEMA

Schema = dict[str, Any]


def precise(schema: Schema) -> Schema:
    """A copy of ``schema`` with nullable unions and discriminated unions rewritten."""
    out: Schema = _rewrite(copy.deepcopy(schema))
    return out


def _rewrite(node: Any) -> Any:
    if isinstance(node, list):
        return [_rewrite(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _rewrite(value) for key, value in node.items()}
    if "discriminator" in node and "oneOf" in node:
        return _by_tag(node)
    return _nullable(node) or node


def _nullable(node: Schema) -> Schema | None:
    """``anyOf: [X, null]`` as ``X`` allowing null, or ``None`` when it is no such union."""
    options = node.get("anyOf")
    if not isinstance(options, list) or len(options) != 2 or {"type": "null"} not in options:
        return None
    other = next(o for o in options if o != {"type": "null"})
    rest = {k: v for k, v in node.items() if k != "anyOf"}
    if set(other) == {"$ref"}:
        return {**rest, "if": {"type": "null"}, "else": other}
    kind = other.get("type")
    if not isinstance(kind, str) or "const" in other or "enum" in other:
        return None  # left as it is: an error in it is still reported at its own field
    return {**other, **rest, "type": [kind, "null"]}


def _by_tag(node: Schema) -> Schema:
    """A ``oneOf`` with a discriminator as one ``if``/``then`` per tag value: the entry is
    checked against its own kind's schema only, each error at its place."""
    tag = node["discriminator"]["propertyName"]
    mapping: dict[str, str] = node["discriminator"]["mapping"]
    rest = {k: v for k, v in node.items() if k not in ("discriminator", "oneOf")}
    kinds = sorted(mapping)
    return {
        **rest,
        "type": "object",
        "required": [tag],
        "properties": {tag: {"enum": kinds, "description": f"the kind of entry: one of {kinds}"}},
        "allOf": [
            {"if": {"properties": {tag: {"const": value}}, "required": [tag]},
             "then": {"$ref": mapping[value]}}
            for value in kinds
        ],
    }  # fmt: skip


# --- what a defaults file may give: severities, required keys ----------------------------

NO_SEVERITIES = {"not": {"anyOf": [{"required": ["severities"]}, {"required": ["extends"]}]}}
NO_EXTENDS = {"not": {"required": ["extends"]}}


def without_defaults(schema: Schema, names: Iterable[str], fillable: dict[str, set[str]]) -> None:
    """What a spec must hold itself unless it ``extends:`` a defaults file, which may give it:

    - its severities: every ``severity`` is one of ``names`` (the defaults) when the spec
      declares no ``severities:`` and extends no file (a schema cannot read the declared
      names, they are data);
    - the keys a defaults file may set per entry (``fillable``: definition name → keys, an
      alert's ``threshold`` and ``severity``, an SLO's ``objective``): taken out of the
      definition's ``required`` and required again when the spec extends nothing.

    Both are top-level ``if``/``then``s whose ``then`` mirrors the spec's structure down to
    the fields concerned, so each error is still reported at its own place."""
    defs = schema["$defs"]
    extra: dict[str, Schema] = {}
    for name, keys in fillable.items():
        required = defs.get(name, {}).get("required", [])
        moved = [key for key in required if key in keys]
        if moved:
            defs[name]["required"] = [key for key in required if key not in keys]
            extra[name] = {"required": moved}
    checks = []
    severities = _Mirror(defs, {"enum": list(names)}, {}).of(schema)
    if severities is not None:
        checks.append({"if": NO_SEVERITIES, "then": severities})
    required = _Mirror(defs, None, extra).of(schema)
    if required is not None:
        checks.append({"if": NO_EXTENDS, "then": required})
    if checks:
        schema["allOf"] = [*schema.get("allOf", ()), *checks]


class _Mirror:
    """The part of a schema that leads to its ``severity`` fields (``leaf`` there) or to the
    definitions of ``extra`` (its schema added there); definitions are inlined, each small
    once cut down to what leads there."""

    def __init__(self, defs: Schema, leaf: Schema | None, extra: dict[str, Schema]) -> None:
        self.defs, self.leaf, self.extra = defs, leaf, extra
        self.inside: set[str] = set()  # the definitions being mirrored (no recursion)

    def of(self, node: Any) -> Schema | None:
        if not isinstance(node, dict):
            return None
        if "$ref" in node:
            return self._ref(node["$ref"])
        out: Schema = {}
        props = {}
        for key, value in node.get("properties", {}).items():
            found = self.leaf if self.leaf and _is_severity(value) else self.of(value)
            if found is not None:
                props[key] = self._described(found, value)
        if props:
            out["properties"] = props
        for key in ("items", "then", "else"):
            found = self.of(node.get(key))
            if found is not None:
                out[key] = found
        if "then" in out or "else" in out:
            out["if"] = node["if"]
        out.update(self._all_of(node.get("allOf", ())))
        return out or None

    def _described(self, found: Schema, field: Any) -> Schema:
        """``found`` with the description of the field it mirrors (its own or its
        definition's): an editor shows the help of every schema that applies."""
        about = field.get("description") if isinstance(field, dict) else None
        if not about and isinstance(field, dict) and "$ref" in field:
            about = self.defs.get(field["$ref"].rsplit("/", 1)[-1], {}).get("description")
        return {**found, "description": about} if about else found

    def _all_of(self, parts: list[Any]) -> Schema:
        """The mirrored ``allOf``; when every part mirrors to the same ``then`` (the alert
        kinds: each has its ``severity`` at the same place), that one schema."""
        mirrored = [self.of(part) for part in parts]
        if all(m is None for m in mirrored):
            return {}
        thens = [m.get("then") if m else None for m in mirrored]
        if all(t is not None and t == thens[0] for t in thens):
            return dict(thens[0] or {})
        return {"allOf": [m or {} for m in mirrored]}

    def _ref(self, ref: str) -> Schema | None:
        name = ref.rsplit("/", 1)[-1]
        if name in self.inside:
            return None
        self.inside.add(name)
        try:
            found = {**(self.of(self.defs.get(name)) or {}), **self.extra.get(name, {})}
        finally:
            self.inside.discard(name)
        return found or None


def _is_severity(node: Any) -> bool:
    """A ``severity`` field (``rulegen.source.base.Severity``; pydantic adds a title)."""
    return isinstance(node, dict) and node.get("description") == SEVERITY_SCHEMA["description"]


# --- thresholds --------------------------------------------------------------------------------

_FRACTION = r"0(\.\d+)?|\.\d+"
_PERCENT = r"\d+(\.\d+)?|\.\d+"
_BELOW_100 = r"\d{1,2}(\.\d+)?|\.\d+"
_NUMERIC = r"^\s*[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*$"
_DURATION = r"^(\d+(\.\d+)?(us|µs|ms|s|m|h)|(\d+y)?(\d+w)?(\d+d)?(\d+h)?(\d+m)?(\d+s)?(\d+ms)?)$"


def threshold_schema(bounds: ThresholdDef) -> Schema:
    """The ``threshold`` of a signal's alerts: its unit as a type and pattern, its range as
    bounds on a bare number (for a percentage, the number is a fraction: ``1`` is 100%)."""
    if bounds.unit == "duration":
        return {"type": "string", "minLength": 1, "pattern": _DURATION,
                "description": "a duration: 500ms, 2.5s, 1m"}  # fmt: skip
    numbers = _number_bounds(bounds)
    if bounds.unit == "percent":
        below = bounds.max == 1 and bounds.op == ">"
        percent = _BELOW_100 if below else _PERCENT
        fraction = _FRACTION if below else rf"{_FRACTION}|1(\.0+)?"
        text = f"^\\s*(({percent})\\s*%|{fraction})\\s*$"
        numbers["maximum"] = min(numbers.get("maximum", 1), 1)
        if "exclusiveMaximum" in numbers:
            del numbers["maximum"]
        about = "a percentage (80%) or a fraction (0.8); a bare 1 is 100%: one percent is 1%"
        if below:
            about += ", and it must be below 100%"
    else:
        text = _NUMERIC
        about = "a number"
    return {
        "type": ["number", "string"],
        "description": about,
        "if": {"type": "number"},
        "then": numbers,
        "else": {"pattern": text},
    }


def _number_bounds(bounds: ThresholdDef) -> Schema:
    out: Schema = {}
    if bounds.min is not None:
        out["minimum"] = _plain(bounds.min)
    if bounds.op == "<" and (bounds.min is None or bounds.min <= 0):
        out = {"exclusiveMinimum": 0}  # a '<' alert at 0 can never fire
    if bounds.max is not None:
        out["exclusiveMaximum" if bounds.op == ">" else "maximum"] = _plain(bounds.max)
    return out


def _plain(value: Decimal) -> int | float:
    return int(value) if value == value.to_integral_value() else float(value)
