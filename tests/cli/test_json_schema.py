"""The JSON Schema in a generic validator (python-jsonschema, as editors use it): every typical
mistake reported at its own field, and every example the docs build passes it.

Why: editors check specs with the schema, not with rulegen. A schema whose alert kinds are a
``oneOf`` the validator cannot tell apart reports "``alerts`` is not valid under any of the
given schemas" for a typo in one alert, and nothing about the others' mistakes.
"""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from conftest import REPO
from test_docs import BUILT_BLOCKS, _tree

from rulegen.catalog import load_catalog
from rulegen.load import vocabulary
from rulegen.spec.schema import Kind, schema


@cache
def built(kind: Kind) -> dict[str, Any]:
    """The schema ``rulegen schema --kind KIND`` prints, with the repository's signals."""
    catalog = load_catalog([REPO / "signals"])
    return schema(kind, catalog, vocabulary(catalog))


@cache
def validator(kind: Kind) -> jsonschema.Draft202012Validator:
    """A validator of ``built(kind)``, the schema itself checked first."""
    jsonschema.Draft202012Validator.check_schema(built(kind))
    return jsonschema.Draft202012Validator(built(kind))


def problems(kind: Kind, data: Any) -> list[tuple[str, str]]:
    """(JSON path, validator keyword) of each error, sorted."""
    return sorted((e.json_path, str(e.validator)) for e in validator(kind).iter_errors(data))


MISTAKES = """
version: 1
service: web
alerts:
  - signal: disk_await
    threshhold: 5ms            # typo: threshold
    severity: warning
  - signal: tcp_retransmits
    threshold: 1               # the fraction 1: 100%, meant as 1%
    severity: pager            # no such severity declared
  - signal: custom
    name: NodeDown
    expr: up{job="node"} == 0
    fro: 5m                    # typo: for
    severity: critical
  - signal: disk_utilization
    threshold: 95              # a bare number above 1 is no percentage
    severity: warning
  - signal: disk_await
    threshold: 5 ms            # no such duration
    severity: warning
slos:
  - name: api
    objective: 99.9%
    sli: {ratio: {errors: a_total, totl: b_total}}   # typo: total
    alerting: {page: {severity: pagr}}
diagnoses:
  - kind: gpu_health
    severity: nope
"""


def test_each_mistake_is_reported_at_its_own_field() -> None:
    assert problems("spec", yaml.safe_load(MISTAKES)) == [
        ("$.alerts[0]", "additionalProperties"),
        ("$.alerts[0]", "required"),  # threshold, misspelt
        ("$.alerts[1].severity", "enum"),
        ("$.alerts[1].threshold", "exclusiveMaximum"),
        ("$.alerts[2]", "additionalProperties"),
        ("$.alerts[3].threshold", "exclusiveMaximum"),
        ("$.alerts[4].threshold", "pattern"),
        ("$.diagnoses[0].severity", "enum"),
        ("$.slos[0].alerting.page.severity", "enum"),
        ("$.slos[0].sli.ratio", "additionalProperties"),
        ("$.slos[0].sli.ratio", "required"),
    ]


def test_the_messages_name_the_key_and_the_value() -> None:
    messages = [e.message for e in validator("spec").iter_errors(yaml.safe_load(MISTAKES))]
    assert "Additional properties are not allowed ('threshhold' was unexpected)" in messages
    assert "'pager' is not one of ['critical', 'warning', 'info']" in messages
    assert "1 is greater than or equal to the maximum of 1" in messages


@pytest.mark.parametrize(
    "threshold", ["1%", "0.5%", "99.9%", "0.01", 0.01, 0, "0"], ids=lambda t: repr(t)
)
def test_a_percentage_below_100_passes(threshold: object) -> None:
    alert = {"signal": "tcp_retransmits", "threshold": threshold, "severity": "warning"}
    assert problems("spec", {"version": 1, "service": "web", "alerts": [alert]}) == []


@pytest.mark.parametrize("threshold", ["100%", "150%", 1, "1", 1.5, "-1%"], ids=lambda t: repr(t))
def test_a_percentage_of_100_or_more_is_flagged(threshold: object) -> None:
    alert = {"signal": "tcp_retransmits", "threshold": threshold, "severity": "warning"}
    found = problems("spec", {"version": 1, "service": "web", "alerts": [alert]})
    assert [path for path, _ in found] == ["$.alerts[0].threshold"]


def test_declared_severities_or_extends_lift_the_default_names() -> None:
    alert = {"signal": "disk_await", "threshold": "5ms", "severity": "pager"}
    base = {"version": 1, "service": "web", "alerts": [alert]}
    assert problems("spec", base) == [("$.alerts[0].severity", "enum")]
    assert problems("spec", {**base, "severities": ["pager", "ticket"]}) == []
    assert problems("spec", {**base, "extends": "defaults.yaml"}) == []


DOCS = [(b, kind) for b in BUILT_BLOCKS if (kind := b.info[1]) != "signal"]


@pytest.mark.parametrize(("block", "kind"), DOCS, ids=[f"{b.where} passes" for b, _ in DOCS])
def test_every_built_doc_example_passes_the_schema(block: Any, kind: str) -> None:
    """The schema refuses nothing rulegen builds (each example builds: tests/test_docs.py)."""
    files, _ = _tree(block, kind)
    kinds: dict[str, Kind] = {"specs/routing.yaml": "routing", "specs/defaults.yaml": "defaults"}
    for name, text in files.items():
        if name.endswith((".yaml", ".yml")) and name.startswith("specs/") and "/" not in name[6:]:
            assert problems(kinds.get(name, "spec"), yaml.safe_load(text)) == [], name


@pytest.mark.parametrize("path", sorted((REPO / "specs").glob("*.yaml")), ids=lambda p: p.name)
def test_the_example_specs_pass_the_schema(path: Path) -> None:
    kinds: dict[str, Kind] = {"routing.yaml": "routing", "defaults.yaml": "defaults"}
    kind = kinds.get(path.name, "spec")
    assert problems(kind, yaml.safe_load(path.read_text(encoding="utf-8"))) == []


CONDITIONS = ("if", "not")  # predicates choosing a branch, not fields an editor completes


def undescribed(node: Any, defs: dict[str, Any], path: str = "$") -> list[str]:
    """The path of every property, at any depth (definitions and ``then``/``else``/``allOf``
    branches included), with no description of its own nor one on the definition it refers
    to; ``if``/``not`` conditions are left out."""
    if isinstance(node, list):
        return [p for i, item in enumerate(node) for p in undescribed(item, defs, f"{path}[{i}]")]
    if not isinstance(node, dict):
        return []
    found = []
    properties = node.get("properties")
    for key, field in (properties if isinstance(properties, dict) else {}).items():
        ref = field.get("$ref", "").rsplit("/", 1)[-1]
        if not (field.get("description") or defs.get(ref, {}).get("description")):
            found.append(f"{path}.properties.{key}")
    for key, value in node.items():
        if key not in CONDITIONS:
            found += undescribed(value, defs, f"{path}.{key}")
    return found


KINDS: tuple[Kind, ...] = ("spec", "routing", "defaults")


@pytest.mark.parametrize("kind", KINDS)
def test_every_field_has_a_description(kind: Kind) -> None:
    """An editor shows a key's description as its help: none may be missing."""
    found = built(kind)
    assert undescribed(found, found["$defs"]) == []


def test_a_field_without_description_is_found() -> None:
    """The walk finds a removed description inside a definition and inside a branch."""
    found = copy.deepcopy(built("spec"))
    del found["$defs"]["SLOSpec"]["properties"]["window"]["description"]
    branch = found["allOf"][-1]["then"]["properties"]["slos"]
    del branch["description"]
    assert undescribed(found, found["$defs"]) == [
        "$.$defs.SLOSpec.properties.window",
        "$.allOf[1].then.properties.slos",
    ]
