"""PrometheusRule objects checked as the Kubernetes API server and the operator would.

Why: a PrometheusRule the API server rejects, or one whose rules the operator's admission
webhook refuses, fails at deploy time, far from the spec; checking it at build time names the
field. The schema is the ``v1`` ``openAPIV3Schema`` of the Prometheus Operator's CRD, vendored
as ``schemas/monitoring.coreos.com_prometheusrules.yaml`` (verbatim copy of
``example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml`` at
prometheus-operator commit 01fad0d64bee2ea20ff20200b86fc0f4ae2744d3, operator 0.82.2,
Apache-2.0), so an installed rulegen needs nothing outside its package.

Checked, each problem as ``JSON path: message``:

- the schema, with the API server's strict field validation (the ``kubectl`` default): an
  unknown field is an error (``additionalProperties: false`` wherever the schema lists
  ``properties``), and ``x-kubernetes-list-type: map`` lists have unique keys (group names);
- what the schema leaves to Kubernetes: ``apiVersion``/``kind``, ``metadata.name`` (DNS
  subdomain), ``metadata.namespace`` (DNS label), label keys and values;
- what the operator's admission webhook checks with Prometheus' ``rulefmt``: exactly one of
  ``record``/``alert``, a non-empty ``expr`` that parses, a valid recording name, no
  ``for``/``keep_firing_for``/``annotations`` on recordings, valid label/annotation names;
- rulegen's own rule: ``spec.groups`` is present and not empty (the schema allows an empty
  object, which evaluates nothing).
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Iterator
from importlib import resources
from typing import TYPE_CHECKING, Any

import yaml

from rulegen.core.promql import LABEL_NAME, METRIC_NAME, syntax_error

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

CRD_FILE = "monitoring.coreos.com_prometheusrules.yaml"
API_VERSION = "monitoring.coreos.com/v1"
KIND = "PrometheusRule"

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LEADING_FLAGS = re.compile(r"^\^\(\?([a-zA-Z]+)\)")


@functools.cache
def crd_schema() -> dict[str, Any]:
    """The ``v1`` ``openAPIV3Schema`` of the vendored PrometheusRule CRD, as written."""
    text = resources.files("rulegen.validate").joinpath("schemas", CRD_FILE).read_text("utf-8")
    crd = yaml.safe_load(text)
    for version in crd["spec"]["versions"]:
        if version["name"] == "v1":
            schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
            return schema
    raise LookupError(f"{CRD_FILE}: no v1 version")


def _strict(node: Any) -> Any:
    """The schema as the API server applies it: unknown fields rejected, and Go's RE2 flag
    groups (``^(?i)...``) moved where Python's ``re`` accepts them."""
    if isinstance(node, list):
        return [_strict(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _strict(value) for key, value in node.items()}
    if isinstance(out.get("pattern"), str):
        out["pattern"] = _LEADING_FLAGS.sub(r"(?\1)^", out["pattern"])
    if (
        "properties" in out
        and "additionalProperties" not in out
        and not out.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    return out


@functools.cache
def _validator() -> Validator:
    from jsonschema import Draft4Validator  # OpenAPI 3.0 schemas are draft-4 style

    schema = _strict(copy.deepcopy(crd_schema()))
    Draft4Validator.check_schema(schema)
    validator: Validator = Draft4Validator(schema)
    return validator


def validate_prometheus_rule(obj: dict[str, Any]) -> list[str]:
    """Every problem of ``obj`` as ``$.json.path: message``; empty when it would be accepted."""
    problems = {(error.json_path, error.message) for error in _validator().iter_errors(obj)}
    problems.update(_object_problems(obj))
    problems.update(_list_map_problems(crd_schema(), obj, "$"))
    return [f"{path}: {message}" for path, message in sorted(problems, key=_order)]


def _order(problem: tuple[str, str]) -> tuple[list[Any], str]:
    """Document order: by path (indexes as numbers, a field before its children)."""
    path, message = problem
    parts = re.split(r"(\d+)", path)
    return [int(p) if p.isdigit() else p for p in parts], message


def _object_problems(obj: Any) -> Iterator[tuple[str, str]]:
    if not isinstance(obj, dict):
        return
    if obj.get("apiVersion") != API_VERSION:
        yield "$.apiVersion", f"must be {API_VERSION} (got {obj.get('apiVersion')!r})"
    if obj.get("kind") != KIND:
        yield "$.kind", f"must be {KIND} (got {obj.get('kind')!r})"
    yield from _metadata_problems(obj.get("metadata"))
    spec = obj.get("spec")
    if isinstance(spec, dict):
        yield from _spec_problems(spec)


def _spec_problems(spec: dict[str, Any]) -> Iterator[tuple[str, str]]:
    groups = spec.get("groups")
    if groups is None or groups == []:
        yield "$.spec.groups", "required: a PrometheusRule without groups evaluates nothing"
    if not isinstance(groups, list):
        return
    for g, group in enumerate(groups):
        rules = group.get("rules") if isinstance(group, dict) else None
        for r, rule in enumerate(rules if isinstance(rules, list) else []):
            if isinstance(rule, dict):
                yield from _rule_problems(rule, f"$.spec.groups[{g}].rules[{r}]")


def _metadata_problems(metadata: Any) -> Iterator[tuple[str, str]]:
    if not isinstance(metadata, dict):
        yield "$.metadata", "required: a name (and usually a namespace)"
        return
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        yield "$.metadata.name", "required"
    elif len(name) > 253 or not _DNS_SUBDOMAIN.match(name):
        yield "$.metadata.name", f"{name!r} is not a DNS subdomain (RFC 1123)"
    namespace = metadata.get("namespace")
    if namespace is not None and (
        not isinstance(namespace, str) or len(namespace) > 63 or not _DNS_LABEL.match(namespace)
    ):
        yield "$.metadata.namespace", f"{namespace!r} is not a DNS label (RFC 1123)"
    for field in ("labels", "annotations"):
        yield from _meta_map_problems(field, metadata.get(field))


def _meta_map_problems(field: str, values: Any) -> Iterator[tuple[str, str]]:
    """``metadata.labels`` / ``metadata.annotations``: qualified keys, string (label) values."""
    if values is None:
        return
    if not isinstance(values, dict):
        yield f"$.metadata.{field}", "must be a mapping of strings"
        return
    for key, value in values.items():
        path = f"$.metadata.{field}[{key!r}]"
        if not isinstance(key, str) or not _qualified(key):
            yield path, f"{key!r} is not a qualified name ([prefix/]name)"
        if not isinstance(value, str):
            yield path, f"{value!r} is not a string"
        elif field == "labels" and value and (len(value) > 63 or not _QUALIFIED_NAME.match(value)):
            yield path, f"{value!r} is not a valid label value"


def _qualified(key: str) -> bool:
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        return False
    return len(name) <= 63 and bool(_QUALIFIED_NAME.match(name))


def _rule_problems(rule: dict[str, Any], path: str) -> Iterator[tuple[str, str]]:
    """What Prometheus' ``rulefmt`` (the operator's admission webhook) refuses in one rule."""
    record, alert = rule.get("record"), rule.get("alert")
    if record and alert:
        yield path, "only one of 'record' and 'alert' may be set"
    elif not record and not alert:
        yield path, "one of 'record' or 'alert' must be set"
    expr = rule.get("expr")
    if expr == "":  # a missing expr is the schema's 'required'
        yield f"{path}.expr", "must be set"
    elif isinstance(expr, str | int) and (problem := syntax_error(str(expr))) is not None:
        yield f"{path}.expr", f"invalid PromQL: {problem}"
    if record and not alert:
        yield from _recording_problems(rule, path)
    for field, what in (("labels", "label"), ("annotations", "annotation")):
        values = rule.get(field)
        for key in values if isinstance(values, dict) else ():
            if not isinstance(key, str) or not LABEL_NAME.match(key) or key == "__name__":
                yield f"{path}.{field}", f"invalid {what} name: {key!r}"


def _recording_problems(rule: dict[str, Any], path: str) -> Iterator[tuple[str, str]]:
    record = rule["record"]
    if isinstance(record, str) and not METRIC_NAME.match(record):
        yield f"{path}.record", f"invalid recording rule name: {record!r}"
    for field in ("for", "keep_firing_for", "annotations"):
        if field in rule:
            yield f"{path}.{field}", f"invalid field '{field}' in recording rule"


def _list_map_problems(schema: Any, value: Any, path: str) -> Iterator[tuple[str, str]]:
    """Duplicate keys in ``x-kubernetes-list-type: map`` lists (the API server refuses them)."""
    if not isinstance(schema, dict):
        return
    if isinstance(value, dict):
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                yield from _list_map_problems(sub, value[key], f"{path}.{key}")
    elif isinstance(value, list):
        keys = schema.get("x-kubernetes-list-map-keys", [])
        seen: dict[tuple[Any, ...], int] = {}
        for index, item in enumerate(value):
            if schema.get("x-kubernetes-list-type") == "map" and isinstance(item, dict):
                identity = tuple(repr(item.get(k)) for k in keys)
                if identity in seen:
                    named = ", ".join(f"{k}={item.get(k)!r}" for k in keys)
                    yield (
                        f"{path}[{index}]",
                        f"duplicate entry ({named}) of {path}[{seen[identity]}]",
                    )
                seen.setdefault(identity, index)
            yield from _list_map_problems(schema.get("items"), item, f"{path}[{index}]")
