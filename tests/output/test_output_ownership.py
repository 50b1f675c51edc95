"""rulegen replaces or deletes only files it wrote: the manifest, partial builds, --check.

The output folder is shared with the user (a README, hand-written promtool tests, other
tools' files). These tests run the real CLI on real folders and compare every byte.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult, snapshot, write_tree

from rulegen.outdir.manifest import MANIFEST

Cli = Callable[..., CliResult]

SPEC_A = """
    version: 1
    service: alpha
    alerts:
      - {signal: disk_await, threshold: 5ms, severity: warning}
"""
SPEC_B = """
    version: 1
    service: beta
    alerts:
      - {signal: tcp_retransmits, threshold: 2%, severity: warning}
"""
ROUTING = """
    version: 1
    routing:
      default_receiver: hook
      receivers:
        - name: hook
          webhook: {url: "http://127.0.0.1:9/x"}
"""
FLEET = {"specs/a.yaml": SPEC_A, "specs/b.yaml": SPEC_B, "specs/routing.yaml": ROUTING}
NO_VALIDATE = ("build", "--no-validate")


def _built(root: Path, cli: Cli, files: dict[str, str] | None = None) -> dict[str, bytes | None]:
    write_tree(root, files or FLEET)
    result = cli(*NO_VALIDATE)
    assert result.code == 0, result.err
    return snapshot(root / "rules")


def _manifest(root: Path) -> dict[str, dict[str, object]]:
    data = json.loads((root / "rules" / MANIFEST).read_text())
    files: dict[str, dict[str, object]] = data["files"]
    return files


def test_the_manifest_lists_every_generated_file_with_its_hash_and_spec(
    in_tmp: Path, cli: Cli
) -> None:
    _built(in_tmp, cli)
    files = _manifest(in_tmp)
    on_disk = sorted(
        p.relative_to(in_tmp / "rules").as_posix()
        for p in (in_tmp / "rules").rglob("*")
        if p.is_file() and p.name != MANIFEST
    )
    assert sorted(files) == on_disk
    assert files["prometheus/alpha.rules.yml"]["sources"] == ["specs/a.yaml"]
    assert files["alertmanager/alertmanager.yml"]["sources"] == ["specs/routing.yaml"]
    assert files["grafana/provisioning.yaml"]["sources"] == ["specs/a.yaml", "specs/b.yaml"]


@pytest.mark.parametrize(
    "user_file",
    ["README.md", "tests/smoke.yml", "prometheus/hand-written.rules.yml", "notes/x.txt"],
    ids=[
        "a file at the top of the output folder survives builds",
        "a hand-written test beside the generated ones survives builds",
        "a hand-written rule file beside the generated ones survives builds",
        "a folder of the user's survives builds",
    ],
)
def test_files_rulegen_did_not_write_are_never_touched(
    in_tmp: Path, cli: Cli, user_file: str
) -> None:
    _built(in_tmp, cli)
    write_tree(in_tmp, {f"rules/{user_file}": "mine\n"})
    (in_tmp / "specs" / "b.yaml").unlink()  # a build that also removes files
    result = cli(*NO_VALIDATE)
    assert result.code == 0, result.err
    assert (in_tmp / "rules" / user_file).read_text() == "mine\n"
    assert user_file not in _manifest(in_tmp)
    check = cli("build", "--check", "--no-validate")
    assert check.code == 0, check.out + check.err


def test_a_new_output_over_a_users_file_is_refused_and_nothing_changes(
    in_tmp: Path, cli: Cli
) -> None:
    _built(in_tmp, cli)
    write_tree(in_tmp, {"rules/tests/gamma.test.yml": "mine\n"})
    before = snapshot(in_tmp / "rules")
    write_tree(in_tmp, {"specs/c.yaml": SPEC_B.replace("beta", "gamma")})
    result = cli(*NO_VALIDATE)
    assert (result.code, result.out) == (2, "")
    assert result.err.splitlines() == [
        "rulegen: --out rules: tests/gamma.test.yml was not written by rulegen; "
        "refusing to overwrite (move it or choose another --out)"
    ]
    assert snapshot(in_tmp / "rules") == before
    assert [p.name for p in in_tmp.iterdir() if "rulegen" in p.name] == []


def test_a_copied_user_test_changed_in_the_output_is_not_overwritten(
    in_tmp: Path, cli: Cli
) -> None:
    _built(in_tmp, cli, {**FLEET, "specs/tests/smoke.yml": "tests: []\n"})
    (in_tmp / "rules" / "tests" / "smoke.yml").write_text("tests: [] # edited here\n")
    result = cli(*NO_VALIDATE)
    assert result.code == 2
    assert result.err == (
        "rulegen: --out rules: tests/smoke.yml was changed since rulegen wrote it (and has no "
        "generated-file header); refusing to overwrite (move it or choose another --out)\n"
    )


def test_a_generated_file_edited_despite_its_header_is_replaced(in_tmp: Path, cli: Cli) -> None:
    built = _built(in_tmp, cli)
    rules = in_tmp / "rules" / "prometheus" / "alpha.rules.yml"
    rules.write_text(rules.read_text() + "# a local edit\n")
    assert cli(*NO_VALIDATE).code == 0
    assert snapshot(in_tmp / "rules") == built


def test_a_partial_build_replaces_only_the_outputs_of_its_specs(in_tmp: Path, cli: Cli) -> None:
    built = _built(in_tmp, cli)
    write_tree(
        in_tmp,
        {
            "specs/a.yaml": SPEC_A.replace("5ms", "7ms"),
            "specs/b.yaml": SPEC_B.replace("2%", "3%"),
            "specs/routing.yaml": ROUTING.replace("9/x", "9/y"),
        },
    )
    result = cli("build", "--no-validate", "specs/a.yaml")
    assert result.code == 0, result.err
    after = snapshot(in_tmp / "rules")
    changed = sorted(k for k in after if after[k] != built.get(k))
    assert changed == [
        MANIFEST, "grafana/alpha.json", "prometheus/alpha.rules.yml", "tests/alpha.test.yml"
    ]  # fmt: skip
    assert result.out.splitlines() == [
        "note: kept grafana/provisioning.yaml as it was: it also comes from specs/b.yaml, "
        "not in this build",
        "wrote 3 files to rules/",
    ]
    # the routing output is replaced when the routing file is an input
    assert cli("build", "--no-validate", "specs/routing.yaml", "specs/a.yaml").code == 0
    assert b"9/y" in (in_tmp / "rules" / "alertmanager" / "alertmanager.yml").read_bytes()
    assert (
        snapshot(in_tmp / "rules")["prometheus/beta.rules.yml"]
        == built["prometheus/beta.rules.yml"]
    )


def test_the_summary_counts_what_changed_and_a_warm_build_says_it_is_up_to_date(
    in_tmp: Path, cli: Cli
) -> None:
    _built(in_tmp, cli)
    assert cli(*NO_VALIDATE).out.splitlines()[-1] == "rules/ is up to date: 9 files unchanged"
    write_tree(in_tmp, {"specs/a.yaml": SPEC_A.replace("5ms", "6ms")})
    changed = cli(*NO_VALIDATE).out.splitlines()[-1]
    assert changed == "wrote 3 files to rules/, 6 unchanged"  # alpha's rules, test, dashboard
    edited = in_tmp / "rules/prometheus/beta.rules.yml"  # its header kept: still rulegen's
    edited.write_text(edited.read_text() + "# edited\n")  # the manifest's digest is stale
    assert cli(*NO_VALIDATE).out.splitlines()[-1] == "wrote 1 files to rules/, 8 unchanged"


def test_outputs_of_a_deleted_spec_are_removed_and_the_summary_names_them(
    in_tmp: Path, cli: Cli
) -> None:
    _built(in_tmp, cli)
    (in_tmp / "specs" / "b.yaml").unlink()
    result = cli(*NO_VALIDATE)
    assert result.code == 0, result.err
    assert result.out.splitlines()[-1] == (
        "wrote 2 files to rules/, 4 unchanged (removed 3: grafana/beta.json, "
        "prometheus/beta.rules.yml, tests/beta.test.yml)"
    )
    assert not (in_tmp / "rules" / "prometheus" / "beta.rules.yml").exists()
    assert sorted(_manifest(in_tmp)) == [
        "alertmanager/alertmanager.yml", "alertmanager/routing-tests.yml", "grafana/alpha.json",
        "grafana/provisioning.yaml", "prometheus/alpha.rules.yml", "tests/alpha.test.yml",
    ]  # fmt: skip


def test_a_partial_build_removes_outputs_whose_spec_is_gone(in_tmp: Path, cli: Cli) -> None:
    _built(in_tmp, cli)
    (in_tmp / "specs" / "b.yaml").unlink()
    result = cli("build", "--no-validate", "specs/a.yaml")
    assert result.code == 0, result.err
    assert "removed 3: grafana/beta.json" in result.out
    assert not (in_tmp / "rules" / "grafana" / "beta.json").exists()
    assert (in_tmp / "rules" / "alertmanager" / "alertmanager.yml").exists()


def test_a_service_moved_to_a_spec_outside_the_build_is_refused(in_tmp: Path, cli: Cli) -> None:
    _built(in_tmp, cli)
    write_tree(in_tmp, {"specs/c.yaml": SPEC_B})
    result = cli("build", "--no-validate", "specs/c.yaml")
    assert result.code == 2
    assert result.err.splitlines()[0] == (
        "rulegen: --out rules: prometheus/beta.rules.yml is generated from specs/b.yaml, "
        "which this build did not read, and now from specs/c.yaml; build both together (do "
        "two specs define the same service?)"
    )


def test_a_folder_written_before_the_manifest_is_taken_over_by_its_headers(
    in_tmp: Path, cli: Cli
) -> None:
    built = _built(in_tmp, cli, {**FLEET, "specs/tests/smoke.yml": "tests: []\n"})
    (in_tmp / "rules" / MANIFEST).unlink()
    write_tree(in_tmp, {"rules/tests/mine.yml": "tests: []\n"})
    (in_tmp / "specs" / "b.yaml").unlink()
    result = cli(*NO_VALIDATE)
    assert result.code == 0, result.err
    after = snapshot(in_tmp / "rules")
    assert "prometheus/beta.rules.yml" not in after  # it said "generated from specs/b.yaml"
    assert after["tests/mine.yml"] == b"tests: []\n"  # no header: the user's
    assert after["tests/smoke.yml"] == built["tests/smoke.yml"]  # the copy, unchanged
    assert MANIFEST in after


@pytest.mark.parametrize(
    ("out", "message"),
    [
        ("specs/rules", "--out specs/rules: lies inside the input folder specs; "
                        "choose another --out"),
        ("specs", "--out specs: is an input of the build; choose another --out"),
        (".", "--out .: holds the input specs; choose another --out"),
        ("specs/tests", "--out specs/tests: lies inside the input folder specs; "
                        "choose another --out"),
    ],
    ids=[
        "an output folder inside the spec folder is refused",
        "the spec folder as output is refused",
        "an output folder holding the specs is refused",
        "the user tests' folder as output is refused",
    ],
)  # fmt: skip
def test_an_output_folder_among_the_inputs_is_refused_before_anything_is_written(
    in_tmp: Path, cli: Cli, out: str, message: str
) -> None:
    write_tree(in_tmp, {**FLEET, "specs/tests/smoke.yml": "tests: []\n"})
    before = snapshot(in_tmp)
    result = cli("build", "--no-validate", "--out", out)
    assert (result.code, result.err) == (2, f"rulegen: error: {message}\n")
    assert snapshot(in_tmp) == before


def test_check_names_stale_missing_and_extra_files(in_tmp: Path, cli: Cli) -> None:
    _built(in_tmp, cli)
    write_tree(in_tmp, {"specs/a.yaml": SPEC_A.replace("5ms", "7ms"), "rules/README.md": "x\n"})
    (in_tmp / "rules" / "tests" / "alpha.test.yml").unlink()
    (in_tmp / "specs" / "b.yaml").unlink()
    before = snapshot(in_tmp / "rules")
    result = cli("build", "--check", "--no-validate")
    assert result.code == 1
    assert result.err.splitlines() == [
        "stale: rules/alertmanager/routing-tests.yml",
        "stale: rules/grafana/alpha.json",
        "stale: rules/grafana/provisioning.yaml",
        "stale: rules/prometheus/alpha.rules.yml",
        f"stale: rules/{MANIFEST}",
        "missing: rules/tests/alpha.test.yml",
        "extra: rules/grafana/beta.json",
        "extra: rules/prometheus/beta.rules.yml",
        "extra: rules/tests/beta.test.yml",
        "rulegen: output is stale; run `rulegen build` and commit the result",
    ]
    assert "+++ /dev/null" in result.out
    assert "README" not in result.out
    assert snapshot(in_tmp / "rules") == before


@pytest.mark.slow
def test_check_runs_the_validation_a_build_runs(in_tmp: Path, cli: Cli) -> None:
    failing = """
        rule_files: [../prometheus/alpha.rules.yml]
        evaluation_interval: 1m
        tests:
          - interval: 1m
            input_series: []
            alert_rule_test:
              - {eval_time: 1m, alertname: DiskAwaitHigh, exp_alerts: [{exp_labels: {a: b}}]}
    """
    _built(in_tmp, cli, {**FLEET, "specs/tests/wrong.yml": failing})
    assert cli("build", "--check", "--no-validate").code == 0
    result = cli("build", "--check")
    assert result.code == 1
    assert result.err.rstrip().endswith("rulegen: validation failed; nothing written")
    assert "alertname: DiskAwaitHigh" in result.err


def test_a_manifest_that_is_not_rulegens_is_ignored_and_nothing_outside_is_deleted(
    in_tmp: Path, cli: Cli
) -> None:
    _built(in_tmp, cli)
    victim = in_tmp / "victim.txt"
    victim.write_text("keep me\n")
    hostile = {
        "generator": "rulegen",
        "version": 1,
        "files": {"../victim.txt": {"sha256": "0" * 64, "sources": ["specs/gone.yaml"]}},
    }
    (in_tmp / "rules" / MANIFEST).write_text(json.dumps(hostile))
    result = cli(*NO_VALIDATE)
    assert result.code == 0, result.err
    assert victim.read_text() == "keep me\n"
    assert "note: ignored rules/.rulegen-manifest.json: unsafe path '../victim.txt'" in result.out


def test_an_output_subfolder_that_is_a_symlink_is_not_written_through(
    in_tmp: Path, cli: Cli
) -> None:
    elsewhere = in_tmp / "elsewhere"
    elsewhere.mkdir()
    write_tree(in_tmp, FLEET)
    (in_tmp / "rules").mkdir()
    (in_tmp / "rules" / "tests").symlink_to(elsewhere)
    result = cli(*NO_VALIDATE)
    assert result.code == 2
    assert result.err.splitlines()[0] == (
        "rulegen: --out rules: tests is a symbolic link rulegen did not make; refusing to "
        "write tests/alpha.test.yml (move it or choose another --out)"
    )
    assert list(elsewhere.iterdir()) == []


def test_an_output_folder_that_is_a_symlink_stays_one(in_tmp: Path, cli: Cli) -> None:
    real = in_tmp / "real-rules"
    real.mkdir()
    (in_tmp / "rules").symlink_to(real)
    _built(in_tmp, cli)
    assert (in_tmp / "rules").is_symlink()
    assert (real / "prometheus" / "alpha.rules.yml").is_file()
    assert cli(*NO_VALIDATE).code == 0
    assert (in_tmp / "rules").is_symlink()


def test_a_second_build_of_the_same_folder_waits_its_turn(in_tmp: Path, cli: Cli) -> None:
    write_tree(in_tmp, FLEET)
    fd = os.open(in_tmp, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        result = cli(*NO_VALIDATE)
    finally:
        os.close(fd)
    assert (result.code, result.err) == (
        2,
        "rulegen: error: --out rules: another rulegen build is writing it; try again when it "
        "is done\n",
    )
    assert not (in_tmp / "rules").exists()
