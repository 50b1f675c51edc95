"""The JSON Schema in a generic validator (python-jsonschema, as editors use it): every typical
mistake reported at its own field, and every example the docs build passes it.

Why: editors check specs with the schema, not with rulegen. A schema whose alert kinds are a
``oneOf`` the validator cannot tell apart reports "``alerts`` is not valid under any of the
given schemas" for a typo in one alert, and nothing about the others' mistakes.
"""

from __future__ import annotations

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
def validator(kind: Kind) -> jsonschema.Draft202012Validator:
    """The schema ``rulegen schema --kind KIND`` prints, with the repository's signals."""
    catalog = load_catalog([REPO / "signals"])
    found = schema(kind, catalog, vocabulary(catalog))
    jsonschema.Draft202012Validator.check_schema(found)
    return jsonschema.Draft202012Validator(found)


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
