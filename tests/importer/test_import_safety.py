"""``rulegen import`` never writes what the build would reject, nor outside ``-o OUT_DIR``:
each annotation or label template promtool rejects refuses its alert at the template's line
and field (exit 1, nothing of that alert written); a symbolic link in ``OUT_DIR`` that leads
out of it refuses the import (exit 2, nothing written anywhere); a link that stays inside is
followed. (The files' modes: ``tests/cli/test_output_confinement.py``.)"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult, write_tree

from rulegen.importer.model import ImportOptions
from rulegen.importer.prometheus import import_files

Cli = Callable[..., CliResult]


def _alert(annotation: str = "ok", label: str = "ok", group_label: str = "ok") -> str:
    """One rule file of one alert: the annotation at line 12, the label at line 9, the
    group's label at line 4."""
    return f"""
        groups:
        - name: g
          labels:
            owner: '{group_label}'
          rules:
          - alert: Up
            expr: up == 0
            labels:
              team: '{label}'
              severity: warning
            annotations:
              summary: '{annotation}'
    """


REASON = "promtool check rules rejects its Go template (template: __alert_Up:1: "
TEMPLATES = [
    ("an action closed before it opens", _alert(annotation="x }}{{"),
     "rules.yml:12: groups[0].rules[0].annotations.summary: alert Up: annotation summary: "
     f"{REASON}unclosed action)"),
    ("a function Prometheus does not have", _alert(annotation="{{ $labels.x | nosuchfunc }}"),
     "rules.yml:12: groups[0].rules[0].annotations.summary: alert Up: annotation summary: "
     f'{REASON}function "nosuchfunc" not defined)'),
    ("an end without a block", _alert(annotation="{{ end }}"),
     "rules.yml:12: groups[0].rules[0].annotations.summary: alert Up: annotation summary: "
     f"{REASON}unexpected {{{{end}}}})"),
    ("an undefined variable", _alert(annotation="{{ $nope }}"),
     "rules.yml:12: groups[0].rules[0].annotations.summary: alert Up: annotation summary: "
     f'{REASON}undefined variable "$nope")'),
    ("a label value of the alert's own", _alert(label="{{ $labels.x | nosuchfunc }}"),
     "rules.yml:9: groups[0].rules[0].labels.team: alert Up: label team: "
     f'{REASON}function "nosuchfunc" not defined)'),
    ("a label of the group, at the group", _alert(group_label="{{ if }}"),
     "rules.yml:4: groups[0].labels.owner: alert Up: label owner: "
     f"{REASON}missing value for if)"),
]  # fmt: skip


@pytest.mark.slow  # promtool checks the templates
@pytest.mark.parametrize(
    ("text", "line"), [c[1:] for c in TEMPLATES], ids=[c[0] for c in TEMPLATES]
)
def test_a_template_promtool_rejects_refuses_its_alert_at_its_line_and_nothing_is_written(
    in_tmp: Path, cli: Cli, text: str, line: str
) -> None:
    write_tree(in_tmp, {"rules.yml": text})
    got = cli("import", "prometheus", "rules.yml", "-o", "specs")
    assert (got.code, got.out) == (1, "")
    assert got.err.splitlines() == [
        "rulegen import prometheus: imported 0, adapted 0, refused 1",
        f"  refused: {line}",
        "rulegen: nothing imported",
    ]
    assert not Path("specs").exists()


@pytest.mark.slow  # promtool checks the templates
def test_a_bad_template_refuses_only_its_alert_the_others_are_written(
    in_tmp: Path, cli: Cli
) -> None:
    write_tree(in_tmp, {"rules.yml": """
        apiVersion: monitoring.coreos.com/v1
        kind: PrometheusRule
        metadata: {name: web}
        spec:
          groups:
          - name: g
            rules:
            - alert: Down
              expr: up == 0
              labels: {severity: critical}
              annotations: {summary: '{{ $labels.instance }} is down'}
            - alert: Broken
              expr: up == 0
              labels: {severity: warning}
              annotations: {summary: '{{ $labels.instance }'}
    """})  # fmt: skip
    got = cli("import", "prometheus", "rules.yml", "-o", "specs")
    assert got.code == 1
    assert "  refused: rules.yml:15: spec.groups[0].rules[1].annotations.summary: alert Broken: " \
        "annotation summary: promtool check rules rejects its Go template (template: " \
        '__alert_Broken:1: unexpected "}" in operand)' in got.err.splitlines()  # fmt: skip
    spec = Path("specs/rules.yaml").read_text(encoding="utf-8")
    assert "Down" in spec
    assert "Broken" not in spec


def test_without_promtool_the_templates_are_imported_unchecked_and_the_summary_says_so(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RULEGEN_PROMTOOL", str(in_tmp / "no-promtool"))
    write_tree(in_tmp, {"rules.yml": _alert(annotation="x }}{{")})
    result = import_files([Path("rules.yml")], ImportOptions())
    assert (result.refused, len(result.imported)) == ([], 1)
    assert result.warnings == [
        "the Go templates of the alerts' annotations and labels were not checked: "
        f"RULEGEN_PROMTOOL={in_tmp / 'no-promtool'} does not exist; install it with: apt-get "
        "install prometheus (Debian/Ubuntu), or set RULEGEN_PROMTOOL (rulegen build checks them)"
    ]


def test_text_without_an_action_needs_no_promtool(in_tmp: Path) -> None:
    write_tree(in_tmp, {"rules.yml": _alert(annotation="x }} y", label="a { b")})
    result = import_files([Path("rules.yml")], ImportOptions())  # started no process
    assert (result.refused, result.warnings, len(result.imported)) == ([], [], 1)


# ---- symbolic links in -o OUT_DIR ----------------------------------------------------------

RULES = """
    groups:
    - name: g
      rules:
      - alert: Up
        expr: up == 0
        labels: {severity: warning}
"""
TEST = """
    rule_files: [../rules.yml]
    tests:
    - interval: 1m
      input_series: [{series: 'up{job="a"}', values: '0x5'}]
      alert_rule_test: [{eval_time: 5m, alertname: Up, exp_alerts: []}]
"""
LINKS = [("the tests folder", "tests"), ("the spec file", "rules.yaml"),
         ("a moved test file", "tests/up.yml")]  # fmt: skip


def _inputs(root: Path) -> Path:
    """The rule file and its test in ``root/in``, an empty ``root/elsewhere``; the latter."""
    write_tree(root, {"in/rules.yml": RULES, "in/tests/up.yml": TEST})
    (root / "elsewhere").mkdir()
    return root / "elsewhere"


def _import(cli: Cli) -> CliResult:
    return cli("import", "prometheus", "in/rules.yml", "in/tests/up.yml", "-o", "out")


@pytest.mark.parametrize("link", [c[1] for c in LINKS], ids=[c[0] for c in LINKS])
def test_a_link_out_of_the_output_folder_refuses_the_import_and_nothing_is_written(
    in_tmp: Path, cli: Cli, link: str
) -> None:
    elsewhere = _inputs(in_tmp)
    (in_tmp / "out/tests").mkdir(parents=True)
    if link == "tests":
        (in_tmp / "out/tests").rmdir()
    # the folder links to the empty folder elsewhere, a file to a file there that is not yet
    target = elsewhere if link == "tests" else elsewhere / Path(link).name
    (in_tmp / "out" / link).symlink_to(target)
    got = _import(cli)
    assert (got.code, got.out) == (2, "")
    assert got.err == (
        f"rulegen: out/{link} is a symbolic link to {os.path.realpath(target)}, outside out: "
        "nothing written\n"
    )
    assert list(elsewhere.iterdir()) == []
    found = sorted(p.relative_to(in_tmp / "out").as_posix() for p in (in_tmp / "out").rglob("*"))
    assert found == sorted({"tests", link})


def test_a_link_that_stays_in_the_output_folder_is_followed(in_tmp: Path, cli: Cli) -> None:
    _inputs(in_tmp)
    (in_tmp / "out/moved").mkdir(parents=True)
    (in_tmp / "out/tests").symlink_to("moved")
    got = _import(cli)
    assert got.code == 0, got.err
    assert (in_tmp / "out/moved/up.yml").read_text(encoding="utf-8").startswith("# Imported by")
    assert (in_tmp / "out/rules.yaml").is_file()


def test_an_output_folder_that_is_itself_a_link_is_where_the_files_go(
    in_tmp: Path, cli: Cli
) -> None:
    elsewhere = _inputs(in_tmp)
    (in_tmp / "out").symlink_to(elsewhere)
    assert _import(cli).code == 0
    assert sorted(p.name for p in elsewhere.rglob("*")) == ["rules.yaml", "tests", "up.yml"]
