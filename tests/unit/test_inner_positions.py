"""A position inside a text value (a PromQL parser's ``1:37``) mapped to the spec's line and
column, for each way YAML can write the value, and left alone where it cannot be told.

Why: promtool names the character it stopped at inside the expression; a user's editor
needs it in the file, where quotes, escapes and a block's indentation move it.
"""

from __future__ import annotations

from rulegen.source.loader import load_text

TEXT = """\
plain: abc def
single: 'it''s x'
double: "a\\"b\\x41c"
block: |
  first line
    second
folded: >
  a
  b
multi: 'one
  two'
"""


def _inner(key: str, line: int, col: int) -> tuple[int, int] | None:
    return load_text(TEXT, "t.yaml").positions.inner((key,), line, col)


def test_plain_and_quoted_values_on_one_line() -> None:
    assert _inner("plain", 1, 5) == (1, 12)  # "d"
    assert _inner("plain", 1, 8) == (1, 15)  # right after the value
    assert _inner("single", 1, 4) == (2, 14)  # "s", after a doubled quote
    assert _inner("single", 1, 7) == (2, 17)  # the closing quote: right after the value
    assert _inner("single", 1, 8) is None  # past it
    assert _inner("double", 1, 3) == (3, 13)  # "b", after an escaped quote
    assert _inner("double", 1, 4) == (3, 14)  # "A", written \\x41
    assert _inner("double", 1, 5) == (3, 18)  # "c"


def test_a_literal_block_counts_its_lines_and_indentation() -> None:
    assert _inner("block", 1, 1) == (5, 3)
    assert _inner("block", 2, 3) == (6, 5)
    assert _inner("block", 3, 1) == (6, 11)  # past the last line: right after it


def test_folded_and_multi_line_quoted_values_are_not_guessed() -> None:
    assert _inner("folded", 1, 2) is None
    assert _inner("multi", 1, 2) is None
    assert _inner("absent", 1, 1) is None
