"""``rulegen.source.locate``: a pydantic error → one diagnostic at the YAML place of the input.

A small model of the spec's shapes (strict base, a union tagged by ``signal``, one tagged by
``kind``, a validator, constrained fields) is validated against YAML loaded with positions;
each case names the exact ``line:col``, field path and message the user sees.
"""

from __future__ import annotations

import textwrap
from typing import Annotated, Literal

import pytest
from pydantic import Field, ValidationError, field_validator

from rulegen.source.base import SpecBase
from rulegen.source.loader import load_text
from rulegen.source.locate import pydantic_diagnostics


class Cpu(SpecBase):
    signal: Literal["cpu"]
    threshold: int = 1


class Disk(SpecBase):
    signal: Literal["disk"]
    device: str = "sda"


class DiskBound(SpecBase):
    kind: Literal["disk_bound"]


class Owner(SpecBase):
    team: str
    channel: str = "#ops"


class Spec(SpecBase):
    service: str = Field(pattern=r"^[a-z]+$")
    owner: Owner
    enabled: bool = True
    alerts: list[Annotated[Cpu | Disk, Field(discriminator="signal")]] = []
    diagnoses: list[Annotated[DiskBound, Field(discriminator="kind")]] = []
    labels: dict[str, str] = {}
    tiers: list[Literal["page", "ticket"]] = []
    password: str = ""
    name: str = Field(default="x", max_length=5)
    count: int = Field(default=1, ge=1)
    hosts: list[str] = Field(default=["a"], min_length=1)
    checks: (
        Annotated[list[Annotated[Cpu | Disk, Field(discriminator="signal")]], Field(min_length=1)]
        | None
    ) = None

    @field_validator("service")
    @classmethod
    def _not_reserved(cls, value: str) -> str:
        if value == "all":
            raise ValueError("service 'all' is reserved")
        return value


def diagnose(yaml_text: str) -> list[tuple[int, int, str, str]]:
    """``(line, col, path, message)`` of every diagnostic for ``yaml_text`` (dedented)."""
    doc = load_text(textwrap.dedent(yaml_text).lstrip("\n"), "specs/web.yaml")
    with pytest.raises(ValidationError) as caught:
        Spec.model_validate(doc.data)
    found = pydantic_diagnostics(caught.value, doc.positions, doc.data)
    assert {d.file for d in found} == {"specs/web.yaml"}
    return [(d.line, d.col, str(d.path), d.message) for d in found]


OK = "service: web\nowner: {team: infra}\n"

CASES = [
    # (behaviour, yaml, diagnostics)
    (
        "an unknown key points at the key itself",
        OK + "colour: blue\n",
        [(3, 1, "colour", "unknown key")],
    ),
    (
        "an unknown key inside a tagged union points at that key",
        OK + "alerts:\n  - signal: disk\n    bogus: 1\n",
        [(5, 5, "alerts[0].bogus", "unknown key")],
    ),
    (
        "a missing field points at the mapping that lacks it",
        "service: web\nowner:\n  channel: '#x'\n",
        [(3, 3, "owner", "team: required field is missing")],
    ),
    (
        "a missing top-level field points at the start of the file",
        "service: web\n",
        [(1, 1, "", "owner: required field is missing")],
    ),
    (
        "an unknown signal points at its tag with the known ones",
        OK + "alerts:\n  - signal: nope\n",
        [(4, 13, "alerts[0].signal", "unknown signal 'nope' (known: 'cpu', 'disk')")],
    ),
    (
        "an unknown diagnosis kind says kind",
        OK + "diagnoses:\n  - kind: what\n",
        [(4, 11, "diagnoses[0].kind", "unknown diagnosis kind 'what' (known: 'disk_bound')")],
    ),
    (
        "a missing signal points at the entry",
        OK + "alerts:\n  - threshold: 3\n",
        [(4, 5, "alerts[0]", "required field 'signal' is missing")],
    ),
    (
        "a field of a union member has no tag in its path",
        OK + "alerts:\n  - signal: cpu\n    threshold: x\n",
        [(5, 16, "alerts[0].threshold", "must be an integer (got 'x')")],
    ),
    (
        "an optional list of tagged entries has neither in its path",
        OK + "checks:\n  - signal: disk\n    device: [sda]\n",
        [(5, 13, "checks[0].device", "must be a string (got a list)")],
    ),
    (
        "an optional list that needs an entry",
        OK + "checks: []\n",
        [(3, 9, "checks", "must not be empty")],
    ),
    (
        "a validator's message loses pydantic's prefix",
        "service: all\nowner: {team: infra}\n",
        [(1, 10, "service", "service 'all' is reserved")],
    ),
    (
        "a pattern mismatch shows the pattern and the input",
        "service: Web\nowner: {team: infra}\n",
        [(1, 10, "service", "must match ^[a-z]+$ (got 'Web')")],
    ),
    (
        "a boolean that is not one",
        OK + "enabled: maybe\n",
        [(3, 10, "enabled", "must be true or false (got 'maybe')")],
    ),
    (
        "a list where a string belongs is called a list",
        "service: [1]\nowner: {team: infra}\n",
        [(1, 10, "service", "must be a string (got a list)")],
    ),
    (
        "a mapping where a string belongs is called a mapping",
        "service: web\nowner: {team: {a: 1}}\n",
        [(2, 15, "owner.team", "must be a string (got a mapping)")],
    ),
    (
        "a number where a mapping belongs",
        OK + "labels: 3\n",
        [(3, 9, "labels", "must be a mapping (got 3)")],
    ),
    (
        "a scalar where a list belongs",
        OK + "alerts: 5\n",
        [(3, 9, "alerts", "must be a list (got 5)")],
    ),
    (
        "a value outside a literal lists the choices",
        OK + "tiers: [page, never]\n",
        [(3, 15, "tiers[1]", "must be 'page' or 'ticket' (got 'never')")],
    ),
    (
        "a too long string names the limit",
        OK + "name: toolongname\n",
        [(3, 7, "name", "must be at most 5 characters")],
    ),
    (
        "a number below its minimum names it",
        OK + "count: 0\n",
        [(3, 8, "count", "must be at least 1 (got 0)")],
    ),
    (
        "an empty list that needs an entry",
        OK + "hosts: []\n",
        [(3, 8, "hosts", "must not be empty")],
    ),
    (
        "a credential field's value is never quoted",
        OK + "password: 12345\n",
        [(3, 11, "password", "must be a string (got a hidden value)")],
    ),
    (
        "a URL with credentials is never quoted",
        OK + "labels: 'https://user:pw@example.com/'\n",
        [(3, 9, "labels", "must be a mapping (got a hidden value)")],
    ),
    (
        "a long input is cut to 60 characters",
        OK + "enabled: " + "y" * 100 + "\n",
        [(3, 10, "enabled", "must be true or false (got '" + "y" * 56 + "...)")],
    ),
    (
        "every error is reported, in file order",
        "service: Web\nowner: {}\nenabled: maybe\n",
        [
            (1, 10, "service", "must match ^[a-z]+$ (got 'Web')"),
            (2, 8, "owner", "team: required field is missing"),
            (3, 10, "enabled", "must be true or false (got 'maybe')"),
        ],
    ),
]


@pytest.mark.parametrize(
    ("yaml_text", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_pydantic_errors_become_positioned_diagnostics(
    yaml_text: str, expected: list[tuple[int, int, str, str]]
) -> None:
    assert diagnose(yaml_text) == expected
