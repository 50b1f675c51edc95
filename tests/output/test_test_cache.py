"""``rulegen build --test-cache DIR``: unchanged test files are not rerun, and a recorded pass
never hides a failure.

Why: a pass is reused only under the hash of the test file, every rule file it loads and the
promtool release; these tests change each of those in turn with the real promtool.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult, write_tree

from rulegen.validate.cache import TestCache

Cli = Callable[..., CliResult]

SPEC = """\
version: 1
service: {name}
alerts:
  - signal: custom
    name: {alert}
    expr: 'max by (instance) (queue_length) > {limit}'
    severity: warning
    summary: 'queue at {{value}}'
    description: long queue
  - {{signal: disk_await, threshold: 20ms, severity: warning}}
"""

# A user's test of the web service's alert: the queue at 15 must fire it.
USER_TEST = """\
rule_files:
  - ../prometheus/web.rules.yml
evaluation_interval: 15s
tests:
  - interval: 15s
    input_series:
      - series: 'queue_length{instance="a:1"}'
        values: '15x10'
    alert_rule_test:
      - eval_time: 1m
        alertname: QueueLong
        exp_alerts:
          - exp_labels: {instance: "a:1", service: web, severity: warning}
            exp_annotations: {summary: queue at 15, description: long queue}
"""


def _repo(root: Path, web_limit: int = 10) -> None:
    write_tree(
        root,
        {
            "specs/web.yaml": SPEC.format(name="web", alert="QueueLong", limit=web_limit),
            "specs/api.yaml": SPEC.format(name="api", alert="ApiQueueLong", limit=10),
            "specs/tests/queue.test.yml": USER_TEST,
        },
    )


def _tests_line(result: CliResult) -> str:
    return next(line for line in result.out.splitlines() if "promtool test rules" in line)


@pytest.mark.slow
def test_a_second_build_reruns_only_the_changed_service(in_tmp: Path, cli: Cli) -> None:
    _repo(in_tmp)
    first = cli("build", "--test-cache", "cache")
    assert first.code == 0, first.err
    assert _tests_line(first) == (
        "promtool test rules: 3 file(s) passed (0 unchanged since a recorded pass, not rerun)"
    )
    # one marker per distinct test unit (web's and api's disk tests are the same after renaming
    # the service: one unit; the user's test another), one per test file whole (3), one per
    # rule file for `promtool check rules` (2), beside the render cache's folder
    markers = [p for p in (in_tmp / "cache").iterdir() if p.name != "render"]
    assert len(markers) == 7
    again = cli("build", "--test-cache", "cache")
    assert _tests_line(again).endswith("(3 unchanged since a recorded pass, not rerun)")
    _repo(in_tmp, web_limit=12)
    changed = cli("build", "--test-cache", "cache")
    assert changed.code == 0, changed.err
    # the user's test (it checks web's QueueLong) runs again; web's generated test does not:
    # none of its units loads the changed alert (they test the disk alert); api's neither
    assert _tests_line(changed).endswith("(2 unchanged since a recorded pass, not rerun)")


ROUTING = """\
version: 1
routing:
  default_receiver: platform
  receivers:
    - {name: platform, webhook: {url: 'http://sink:9095/platform'}}
    - {name: storage, webhook: {url: 'http://sink:9095/storage'}}
  routes:
    - match: {severity: critical}
      receiver: storage
"""


def _lines(result: CliResult, *starts: str) -> list[str]:
    return [line for line in result.out.splitlines() if line.startswith(starts)]


@pytest.mark.slow
def test_the_rule_check_and_amtool_checks_are_recorded_and_rerun_on_a_change(
    in_tmp: Path, cli: Cli
) -> None:
    _repo(in_tmp)
    write_tree(in_tmp, {"specs/routing.yaml": ROUTING})
    checks = ("promtool check rules", "amtool")
    first = cli("build", "--test-cache", "cache")
    assert first.code == 0, first.err
    assert not any("recorded" in line for line in _lines(first, *checks)), first.out
    again = cli("build", "--test-cache", "cache")
    assert [line.split(": ", 1)[0] for line in _lines(again, *checks)] == [
        "promtool check rules", "amtool check-config", "amtool routing tests",
    ]  # fmt: skip
    assert all(line.endswith("(unchanged since a recorded pass)")
               for line in _lines(again, *checks)), again.out  # fmt: skip
    write_tree(in_tmp, {"specs/routing.yaml": ROUTING.replace("critical", "warning")})
    rerouted = cli("build", "--test-cache", "cache")
    assert rerouted.code == 0, rerouted.err
    checked, routed = _lines(rerouted, "amtool")
    # (amtool 0.27 on checks the matcher modes too: "… ok (and with utf8-strict-mode …)")
    assert checked.startswith("amtool check-config: alertmanager.yml ok")
    assert routed == f"amtool routing tests: {_lines(again, 'amtool routing')[0].split()[3]} passed"
    assert _lines(rerouted, "promtool check")[0].endswith("(unchanged since a recorded pass)")
    _repo(in_tmp, web_limit=12)
    changed = cli("build", "--test-cache", "cache")
    # each rule file is checked on its own: only the changed one is checked again
    assert _lines(changed, "promtool check") == [
        "promtool check rules: 2 file(s) ok (1 of them unchanged since a recorded pass)"
    ]


@pytest.mark.slow
def test_a_recorded_pass_never_hides_a_failure_from_a_changed_rule_file(
    in_tmp: Path, cli: Cli
) -> None:
    _repo(in_tmp)
    assert cli("build", "--test-cache", "cache").code == 0
    before = sorted(p.name for p in (in_tmp / "rules").rglob("*"))
    _repo(in_tmp, web_limit=20)  # the user's test file is unchanged; its rule file is not
    failed = cli("build", "--test-cache", "cache")
    assert failed.code == 1
    assert "tests/queue.test.yml" in failed.err
    assert "QueueLong" in failed.err
    assert sorted(p.name for p in (in_tmp / "rules").rglob("*")) == before


def _promtool_printing(folder: Path, version: str) -> Path:
    """The real promtool behind a script that answers ``--version`` with ``version``."""
    promtool = shutil.which("promtool")
    assert promtool is not None
    wrapper = folder / "promtool"
    wrapper.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = "--version" ]; then printf "{version}"; exit 0; fi\n'
        f'exec {promtool} "$@"\n'
    )
    wrapper.chmod(0o755)
    return wrapper


@pytest.mark.parametrize(
    "version",
    [
        "promtool, version 9.9.9 (branch: x, revision: 1)\\n",
        # the same release, another build: the cache keys the whole --version text
        "promtool, version {release} (branch: debian/sid, revision: {release}-another)\\n",
    ],
    ids=["release", "revision"],
)
@pytest.mark.slow
def test_another_promtool_build_reruns_everything(
    version: str, in_tmp: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    _repo(in_tmp)
    assert cli("build", "--test-cache", "cache").code == 0
    real = subprocess.run(
        [str(shutil.which("promtool")), "--version"], capture_output=True, text=True, check=True
    )
    release = real.stdout.split()[2]  # promtool, version 3.5.3+ds1 (…)
    version = version.replace("{release}", release)
    monkeypatch.setenv("RULEGEN_PROMTOOL", str(_promtool_printing(in_tmp, version)))
    rerun = cli("build", "--test-cache", "cache")
    assert rerun.code == 0, rerun.err
    assert _tests_line(rerun).endswith("(0 unchanged since a recorded pass, not rerun)")
    again = cli("build", "--test-cache", "cache")
    assert _tests_line(again).endswith("(3 unchanged since a recorded pass, not rerun)")


@pytest.mark.slow
def test_a_promtool_without_a_version_is_never_cached(
    in_tmp: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    _repo(in_tmp)
    monkeypatch.setenv("RULEGEN_PROMTOOL", str(_promtool_printing(in_tmp, "")))
    for _ in range(2):
        result = cli("build", "--test-cache", "cache")
        assert result.code == 0, result.err
        assert _tests_line(result) == "promtool test rules: 3 file(s) passed"
        assert "warning: promtool prints no version; test results not cached" in result.out
    # only the render cache (which promtool's release does not affect) is kept
    assert [p.name for p in (in_tmp / "cache").iterdir()] == ["render"]


@pytest.mark.slow
def test_a_cache_that_cannot_be_written_never_fails_the_build(in_tmp: Path, cli: Cli) -> None:
    _repo(in_tmp)
    (in_tmp / "cache").write_text("a file, not a folder\n")
    result = cli("build", "--test-cache", "cache")
    assert result.code == 0, result.err
    assert "warning: test cache not updated: cache: File exists" in result.out.splitlines()
    assert (in_tmp / "rules" / "prometheus" / "web.rules.yml").is_file()


@pytest.mark.parametrize(
    ("test_file", "files"),
    [
        ("rule_files: ['../prometheus/*.yml']\ntests: []\n", {}),
        ("rule_files: ['../prometheus/missing.yml']\ntests: []\n", {}),
        ("rule_files: [1]\n", {}),
        ("tests: [\n", {}),
        ("- a list\n", {}),
    ],
    ids=["glob", "missing-rule-file", "not-a-path", "not-yaml", "not-a-mapping"],
)
def test_what_cannot_be_hashed_with_certainty_is_always_run(
    tmp_path: Path, test_file: str, files: dict[str, str]
) -> None:
    write_tree(tmp_path, {"tests/t.yml": test_file, **files})
    assert (
        TestCache(tmp_path / "cache", "promtool, version 2.42.0").key(tmp_path, "tests/t.yml")
        is None
    )


def test_the_key_covers_the_test_its_rule_files_and_the_release(tmp_path: Path) -> None:
    write_tree(tmp_path, {"tests/t.yml": "rule_files: ['../prometheus/r.yml']\n"})
    rules = tmp_path / "prometheus" / "r.yml"
    rules.parent.mkdir()
    rules.write_text("groups: []\n")
    cache = TestCache(tmp_path / "cache", "promtool, version 2.42.0")
    key = cache.key(tmp_path, "tests/t.yml")
    assert key is not None
    assert not cache.passed(key)
    cache.remember(key)
    assert cache.passed(key)
    # what a build that wrote the file passes instead of reading it back: the same key
    assert cache.key(tmp_path, "tests/t.yml", ["../prometheus/r.yml"]) == key
    # the marker records the key, the release and the SHA-256 of the test and its rule file
    marker = json.loads((tmp_path / "cache" / key.name).read_text())
    assert marker == {
        "format": "2",
        "key": key.name,
        "tool": "promtool, version 2.42.0",
        "check": "test rules tests/t.yml",
        "inputs": [
            ["tests/t.yml", hashlib.sha256(b"rule_files: ['../prometheus/r.yml']\n").hexdigest()],
            ["../prometheus/r.yml", hashlib.sha256(b"groups: []\n").hexdigest()],
        ],
    }
    newer = TestCache(tmp_path / "cache", "promtool, version 3.0.0")
    assert newer.key(tmp_path, "tests/t.yml") != key
    rules.write_text("groups: [] \n")
    assert cache.key(tmp_path, "tests/t.yml") != key
    rules.write_text("groups: []\n")
    assert cache.key(tmp_path, "tests/t.yml") == key
    rules.unlink()
    assert cache.key(tmp_path, "tests/t.yml") is None
