"""The one ``Diagnostic`` record: its field path, its JSON and GitHub forms, the diagnostics of
every error class, and promtool's test report split into failed assertions."""

from __future__ import annotations

import json
import pickle

import pytest

from rulegen.core.diagnostics import ROOT, Diagnostic, FieldPath, as_json, github
from rulegen.errors import (
    OutputConflict,
    StaleOutput,
    ToolNotFoundError,
    UsageError,
    ValidationFailed,
)
from rulegen.source.loader import Origin
from rulegen.validate.promtool import failed_assertions


@pytest.mark.parametrize(
    ("path", "shown"),
    [
        (FieldPath(), ""),
        (FieldPath(("alerts", 2, "threshold")), "alerts[2].threshold"),
        (FieldPath(("labels", "team-a")), "labels.team-a"),
        (FieldPath(("labels", "a.b c")), 'labels["a.b c"]'),
        (FieldPath(("x", "line\nbreak")), 'x["line\\nbreak"]'),
        (FieldPath((0, "a")), "[0].a"),
        (FieldPath(("routing", "routes", 0, "routes"), more=True), "routing.routes[0].routes..."),
    ],
    ids=[
        "the whole document is the empty path",
        "keys and indexes",
        "a plain key may hold a dash",
        "a key with a dot or a blank is quoted",
        "a key with a line break is quoted and escaped",
        "a path may start with an index",
        "a path cut short ends in ...",
    ],
)
def test_field_path_is_shown_and_parsed_back(path: FieldPath, shown: str) -> None:
    assert str(path) == shown
    assert FieldPath.parse(shown) == path


def test_field_path_parts_and_entries() -> None:
    path = FieldPath(("slos", 1, "alerting", "tiers", 0, "long"))
    assert tuple(path) == ("slos", 1, "alerting", "tiers", 0, "long")
    assert path.child("x", 3) == FieldPath((*path, "x", 3))
    assert [str(p) for p in path.entries()] == ["slos[1].alerting.tiers[0]", "slos[1]"]
    assert not ROOT
    assert not list(ROOT.entries())


def test_origin_gives_a_diagnostic_at_its_position() -> None:
    origin = Origin("specs/a.yaml", 3, 5, FieldPath(("alerts", 0)))
    found = origin.diagnostic("too high", "spec/value")
    assert found.render() == "specs/a.yaml:3:5: alerts[0]: too high"
    below = origin.diagnostic("bad", path=origin.path.child("threshold"))
    assert below.render() == "specs/a.yaml:3:5: alerts[0].threshold: bad"


def test_json_form_has_every_field_and_null_for_no_position() -> None:
    placed = Diagnostic("specs/a.yaml", 3, 5, FieldPath(("alerts", 0)), "bad", "spec/value")
    unplaced = Diagnostic("", 0, 0, ROOT, "promtool not found", "tool/missing", hint="install")
    assert json.loads(as_json([placed, unplaced])) == [
        {
            "file": "specs/a.yaml", "line": 3, "column": 5, "code": "spec/value",
            "severity": "error", "path": "alerts[0]", "message": "bad", "hint": "",
        },
        {
            "file": None, "line": None, "column": None, "code": "tool/missing",
            "severity": "error", "path": "", "message": "promtool not found", "hint": "install",
        },
    ]  # fmt: skip
    assert as_json([]) == "[]\n"


@pytest.mark.parametrize(
    ("diagnostic", "line"),
    [
        (
            Diagnostic("specs/a.yaml", 3, 5, FieldPath(("alerts", 0)), "50%, bad", "spec/value"),
            "::error file=specs/a.yaml,line=3,col=5,title=rulegen spec/value::"
            "alerts[0]: 50%25, bad",
        ),
        (
            Diagnostic("rules/x.yml", 0, 0, ROOT, "stale: differs", "output/stale"),
            "::error file=rules/x.yml,title=rulegen output/stale::stale: differs",
        ),
        (
            Diagnostic("", 0, 0, ROOT, "bad argument\nsecond", "usage"),
            "::error title=rulegen usage::bad argument%0Asecond",
        ),
        (
            Diagnostic("s.yaml", 1, 1, ROOT, "no runbook", "annotation/runbook", "info"),
            "::notice file=s.yaml,line=1,col=1,title=rulegen annotation/runbook::no runbook",
        ),
    ],
    ids=[
        "a spec error names its field path before the message",
        "a file without a line has no line property",
        "a problem with no file has only a title; line breaks stay in one command",
        "an info is a notice",
    ],
)
def test_github_annotation(diagnostic: Diagnostic, line: str) -> None:
    assert github([diagnostic]) == line + "\n"


def test_every_error_class_has_diagnostics_with_its_code() -> None:
    assert [d.code for d in UsageError("a\nb").as_diagnostics()] == ["usage", "usage"]
    assert ToolNotFoundError("promtool not found").as_diagnostics()[0].code == "tool/missing"
    conflict = OutputConflict(["--out rules: x.yml was not written by rulegen"])
    assert [(d.code, d.message) for d in conflict.as_diagnostics()] == [
        ("output/conflict", "--out rules: x.yml was not written by rulegen")
    ]
    stale = StaleOutput("diff", [("stale:", "rules/a.yml"), ("extra:", "rules/b.yml")])
    assert stale.files == ["stale: rules/a.yml", "extra: rules/b.yml"]
    assert [(d.file, d.code, d.message) for d in stale.as_diagnostics()] == [
        ("rules/a.yml", "output/stale", "stale: differs from what the specs generate"),
        ("rules/b.yml", "output/stale", "extra: a build would remove it"),
    ]


def test_validation_failed_text_keeps_todays_layout() -> None:
    mapped = Diagnostic("specs/a.yaml", 5, 5, FieldPath(("alerts", 1)), "promtool: bad expr")
    raw = Diagnostic("", 0, 0, ROOT, "prometheus/x.rules.yml: yaml: line 3: bad")
    failed = ValidationFailed([mapped, raw], "promtool check rules failed:")
    assert failed.lines() == [
        "promtool check rules failed:",
        "specs/a.yaml:5:5: alerts[1]: promtool: bad expr",
        "  prometheus/x.rules.yml: yaml: line 3: bad",
    ]
    routing = Diagnostic("specs/routing.yaml", 18, 7, ROOT, "routing test: expected a")
    assert ValidationFailed([routing], "amtool routing tests failed:", indent="").lines() == [
        "amtool routing tests failed:",
        "specs/routing.yaml:18:7: routing test: expected a",
    ]
    alone = ValidationFailed([Diagnostic("", 0, 0, ROOT, "promtool did not finish in 600s")])
    assert alone.lines() == ["promtool did not finish in 600s"]
    copy = pickle.loads(pickle.dumps(failed))
    assert (copy.lines(), copy.diagnostics) == (failed.lines(), failed.diagnostics)


# promtool 2.42's report of a failing file: the "Unit Testing:" lines and blank lines come on
# stdout, the FAILED block on stderr with no blank line between the assertions.
REPORT = """\
Unit Testing:  tests/web.test.yml


  FAILED:
    name: fires after 5m,
    alertname: DiskFull, time: 5m,
        exp:[
            0:
              Labels:{alertname="DiskFull"}
            ],
        got:[]
    alertname: DiskFull, time: 10m,
        exp:[],
        got:[]
    expr: "up", time: 1m,
        exp: {__name__="up"} 1E+00
        got: nothing
"""


def test_promtool_test_report_splits_into_failed_assertions() -> None:
    found = failed_assertions(REPORT)
    assert [(f.file, f.alertname, len(f.lines)) for f in found] == [
        ("tests/web.test.yml", "DiskFull", 7),
        ("tests/web.test.yml", "DiskFull", 3),
        ("tests/web.test.yml", None, 3),
    ]
    assert found[0].lines[:2] == ("    name: fires after 5m,", "    alertname: DiskFull, time: 5m,")
