"""The YAML writer's fast path (``rulegen.blockyaml``) writes libyaml's bytes, or refuses.

Why: every generated file goes through it, and generated files are golden files and
committed output: one byte apart would make every ``rulegen build --check`` fail after an
upgrade. Each test compares ``dump_yaml`` (fast path first) with ``output._libyaml`` (the C
emitter with rulegen's styles, what ``dump_yaml`` wrote before): on every file the example
renders for every target, on drawn documents with odd strings (indicators, quotes, line
breaks, YAML's special words, long lines), and on the shapes the fast path must refuse; and
the shortcuts that skip libyaml for a scalar (plain one-line text, single-quoted one-line
text, a plain literal block) against libyaml itself on drawn strings.
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rulegen import output
from rulegen.blockyaml import (
    Scalars,
    Unsupported,
    Writer,
    _one_line,
    _plain,
    _plain_literal,
    _rendering,
    _single_quoted,
)
from rulegen.build import build
from rulegen.catalog import load_catalog
from rulegen.load import discover
from rulegen.pipeline import victoriametrics as vm_pipeline
from rulegen.pipeline import vmalert_slo

REPO = Path(__file__).resolve().parents[2]
TARGETS = ("prometheus", "victoriametrics", "thanos", "mimir", "operator")

# What a scalar's style turns on: indicators, quotes, YAML's words and numbers, breaks.
PIECES = st.sampled_from(
    [*"ab -?:,[]{}#&*!|>'\"%@`.=~\\\t", ": ", " #", "- ", "\n", "\n\n", " \n", "\u2028", "é",
     "\x00", "true", "No", "null", "~", "0x1f", "1e3", "1_000", ".inf", "2001-12-14", "<<",
     "---", "...", "sum(rate(x[5m]))", 'a{b="c"}']
)  # fmt: skip
STRINGS = st.lists(PIECES, max_size=8).map("".join) | st.text(max_size=20)
SCALARS = (
    STRINGS
    | st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.sampled_from(["x" * 5000, "a b " * 1200, "line\n" * 3 + "y" * 4200])
)
DOCUMENTS = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(STRINGS, inner, max_size=4),
    max_leaves=30,
).filter(lambda d: isinstance(d, dict | list))


def _both(data: Any) -> tuple[str, str]:
    """``dump_yaml``'s text and libyaml's (with the header ``dump_yaml`` adds)."""
    return output.dump_yaml(data, "s.yaml"), output.header("s.yaml") + output._libyaml(data)


def test_every_file_the_example_renders_is_written_by_the_fast_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The data of every YAML file the example renders, for every target: libyaml's
    bytes, and none of it left to libyaml (a file the fast path refused would still be
    right, but slow)."""
    documents: list[Any] = []

    def capture(data: Any, source: str) -> str:
        documents.append(data)
        return output.dump_yaml(data, source)

    # (``rulegen.build`` the module: the package's ``build`` is the function)
    for module in (import_module("rulegen.build"), vm_pipeline, vmalert_slo):
        monkeypatch.setattr(module, "dump_yaml", capture)
    build(discover([REPO / "specs"]), load_catalog([REPO / "signals"]), targets=TARGETS)
    assert len(documents) > 20
    for data in documents:
        assert Writer(output._SCALARS).document(data) == output._libyaml(data)


@settings(max_examples=500, deadline=None)
@given(DOCUMENTS)
def test_every_document_gets_libyamls_bytes(data: Any) -> None:
    fast, reference = _both(data)
    assert fast == reference


@pytest.mark.parametrize(
    "data",
    [{"k": "x " * 2100}, {"k": ["y" * 4100]}, {("a", "b"): 1}, {"k": (1, 2)}, {"": 1},
     {"k" * 200: 1}, {"k": "trailing \nspace"}, {"k": "ends in two breaks\n\n"},
     {"k": " leading space\nline"}],
    ids=lambda d: repr(d)[:40],
)  # fmt: skip
def test_what_the_fast_path_refuses_is_written_by_libyaml(data: Any) -> None:
    """A line past libyaml's width (it folds there), a key that is not simple, a type it
    does not know, a literal block with indicators: the same bytes, through libyaml."""
    fast, reference = _both(data)
    assert fast == reference


def test_a_scalar_document_is_refused() -> None:
    with pytest.raises(Unsupported):
        Writer(Scalars(output._libyaml)).document("text")


@settings(max_examples=2000, deadline=None)
@given(STRINGS)
def test_the_plain_shortcuts_agree_with_libyaml(value: str) -> None:
    """A string the shortcuts write without asking libyaml is written as libyaml would."""
    known = [_plain(value), _plain_literal(value), _single_quoted(value), _one_line(value)]
    for rendering in known:
        if rendering is not None:
            assert rendering == _rendering(output._libyaml({"k0": value}))


def test_new_scalars_of_one_document_are_probed_together() -> None:
    """Unknown scalars are rendered in one libyaml document at the end (each as alone), and
    a batch whose parse fails falls back to each alone: same bytes either way."""
    calls: list[Any] = []

    def render(data: Any) -> str:
        calls.append(data)
        return output._libyaml(data)

    # (text outside printable ASCII: no shortcut knows it, libyaml is asked)
    data = {"a": ["é: y", "'q' ü", "a\tb"], "b": {"c": "- d ü", "e": "null"}, "f": "x\n  y é\n"}
    assert Writer(Scalars(render)).document(data) == output._libyaml(data)
    assert len([c for c in calls if len(c) > 1]) == 1  # one batch for the values
    broken = Scalars(lambda d: "not: a\nbatch\n" if len(d) > 1 else output._libyaml(d))
    assert Writer(broken).document(data) == output._libyaml(data)
