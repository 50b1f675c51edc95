"""``dump_json`` writes exactly the bytes of ``json.dumps(indent=2, sort_keys=True,
ensure_ascii=False)`` plus a line break, for every value.

Why: it replaces that call on the hot path of a fleet's dashboards (the standard library
has no C encoder with ``indent``), and the dashboards are golden files and committed
output: a single byte apart would make every ``rulegen build --check`` fail after an
upgrade. Hypothesis draws JSON documents with odd strings (escapes, line separators,
non-ASCII, control characters), extreme numbers and nesting; values only ``json.dumps``
handles (a tuple, a non-string key, NaN) must give its bytes too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rulegen.output import dump_json

REPO = Path(__file__).resolve().parents[2]

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
    | st.sampled_from(["", '"', "\\", "\n", "\u2028", "\x00", "\x7f", "é", "🔥", "</script>"])
)
DOCUMENTS = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=40,
)


def _reference(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


@settings(max_examples=400, deadline=None)
@given(DOCUMENTS)
def test_every_json_document_gets_the_bytes_of_json_dumps(value: Any) -> None:
    assert dump_json(value) == _reference(value)


@pytest.mark.parametrize(
    "value",
    [(1, 2), {"a": (1, {"b": 2})}, {1: "a"}, {"a": {None: 1}}, float("nan"), [float("inf")],
     {"a": -float("inf")}, {"a": {"b": [1, "x", (2,)]}}],
    ids=repr,
)  # fmt: skip
def test_values_only_json_dumps_handles_get_its_bytes(value: Any) -> None:
    assert dump_json(value) == _reference(value)


def test_the_committed_dashboards_are_what_dump_json_writes() -> None:
    dashboards = sorted(REPO.glob("rules/grafana/*.json"))
    dashboards += sorted(REPO.glob("tests/golden/*/expected/grafana/*.json"))
    assert dashboards
    for path in dashboards:
        text = path.read_text("utf-8")
        assert dump_json(json.loads(text)) == text, path
