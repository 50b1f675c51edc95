"""``--test-cache DIR`` cannot go stale or be forged: what a cache holds is checked against
the bytes it was made from before it stands in for a render or a promtool run.

Why: the cache is often a CI cache that pull requests can write. A render entry under the
wrong key, an edited entry or a pass marker written by hand must never reach ``rules/`` or
turn a failing test into a pass; each case here ends with the output a build without any
cache gives, or with the failure promtool reports. Everything runs the real rulegen and the
real promtool.
"""

from __future__ import annotations

import contextlib
import json
import random
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import CliResult, for_stack, snapshot, write_tree

from rulegen.pipeline.promtool_runs import unit_keys
from rulegen.validate import promtool
from rulegen.validate.cache import TestCache

Cli = Callable[..., CliResult]

SPEC = """\
version: 1
service: web
alerts:
  - {{signal: disk_await, threshold: {threshold}, severity: warning}}
"""
V1, V2 = (for_stack(SPEC.format(threshold=t)) for t in ("5ms", "7ms"))
RULES = "prometheus/web.rules.yml"
# A hand-written test that fails: the alert cannot fire without its disk series.
FAILING_TEST = """\
rule_files:
  - ../prometheus/web.rules.yml
evaluation_interval: 30s
tests:
  - interval: 30s
    input_series:
      - series: 'up{job="x"}'
        values: '1x30'
    alert_rule_test:
      - eval_time: 10m
        alertname: DiskAwaitHigh
        exp_alerts:
          - exp_labels: {service: web, severity: warning}
"""
PLANTED_ALERT = """\
  - alert: Planted
    expr: vector(1)
"""


def _render(cli: Cli, out: str, *flags: str) -> CliResult:
    result = cli("build", "--no-validate", "--out", out, *flags)
    assert result.code == 0, result.err
    return result


def _entries(cache: Path) -> list[Path]:
    return sorted((cache / "render").glob("*.json"))


def _warnings(result: CliResult) -> list[str]:
    return [line for line in result.err.splitlines() if line.startswith("rulegen: warning:")]


# --- the key is made of the bytes parsed ---------------------------------------------------


def _rulegen(*argv: str, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "rulegen", *argv],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@contextlib.contextmanager
def _swapping(spec: Path) -> Iterator[list[int]]:
    """``spec`` replaced atomically (``os.replace`` of a whole temporary file) by the other
    version every few milliseconds while the block runs; yields the count of replacements
    and leaves version 2 there."""
    stop, swaps = threading.Event(), [0]

    def swap() -> None:
        chance = random.Random(29)
        while not stop.is_set():
            for index, text in enumerate((V1, V2)):
                temporary = spec.with_name(f".swap-{index}")
                temporary.write_text(text, encoding="utf-8")
                temporary.replace(spec)  # os.replace: atomic
                swaps[0] += 1
                stop.wait(chance.uniform(0.0005, 0.004))

    swapper = threading.Thread(target=swap, daemon=True)
    swapper.start()
    try:
        yield swaps
    finally:
        stop.set()
        swapper.join()
        spec.write_text(V2, encoding="utf-8")


@pytest.mark.slow
def test_a_spec_replaced_during_builds_never_puts_one_version_under_the_others_key(
    cli: Cli, in_tmp: Path
) -> None:
    # Builds of specs/web.yaml into <folder>/rules from a working directory holding specs/
    # share one render key per version: the racing builds' (the spec swapped under them) and
    # those of a directory per version (only-v1/, only-v2/: the spec fixed), the latter built
    # through the raced cache after each wave of racing builds, the swapping going on.
    cache = in_tmp / "cache"
    plain = {}
    for name, text in (("v1", V1), ("v2", V2)):
        write_tree(in_tmp, {f"only-{name}/specs/web.yaml": text})
        with contextlib.chdir(in_tmp / f"only-{name}"):
            _render(cli, "plain/rules")
        plain[name] = snapshot(in_tmp / f"only-{name}" / "plain" / "rules")
    assert plain["v1"][RULES] != plain["v2"][RULES]
    write_tree(in_tmp, {"specs/web.yaml": V1})
    with _swapping(in_tmp / "specs" / "web.yaml") as swaps:
        for wave in range(4):
            racing = [
                _rulegen(
                    "build",
                    "--no-validate",
                    "--test-cache",
                    str(cache),
                    "--out",
                    f"race{wave}-{i}/rules",
                    cwd=in_tmp,
                )  # fmt: skip
                for i in range(6)
            ]
            for build in racing:
                _, err = build.communicate(timeout=120)
                assert build.returncode == 0, err
            for name in plain:  # a later build of one version writes that version's files
                with contextlib.chdir(in_tmp / f"only-{name}"):
                    warm = _render(cli, f"warm{wave}/rules", "--test-cache", str(cache))
                assert not _warnings(warm), warm.err
                assert (
                    snapshot(in_tmp / f"only-{name}" / f"warm{wave}" / "rules") == (plain[name])
                ), f"wave {wave}: the cache gave another version's files for {name}"
            for i in range(6):  # and each racing build wrote one version's files, whole
                written = snapshot(in_tmp / f"race{wave}-{i}" / "rules")
                assert written in plain.values(), f"race{wave}-{i}"
            if wave < 3:  # an entry is written on a miss only: each wave races for new ones
                shutil.rmtree(cache / "render")
    assert swaps[0] > 100  # the spec changed all along
    # rules/ built from version 1 is stale for version 2 (left there), as without the cache
    shutil.copytree(in_tmp / "only-v1" / "plain", in_tmp / "v1")
    stale = cli("build", "--check", "--no-validate", "--test-cache", "cache", "--out", "v1/rules")
    assert stale.code == 1, stale.err
    assert "stale: v1/rules/prometheus/web.rules.yml" in stale.err


# --- a render entry holds a digest of itself -----------------------------------------------


def _plant(entry: Path) -> None:
    """An alert appended to the rule file an entry holds (its digest left as it was)."""
    data = json.loads(entry.read_text())
    data["files"][RULES] += PLANTED_ALERT
    entry.write_text(json.dumps(data))


def test_an_alert_planted_in_a_render_entry_never_reaches_the_output(
    cli: Cli, in_tmp: Path
) -> None:
    write_tree(in_tmp, {"specs/web.yaml": V1})
    _render(cli, "plain/rules")
    _render(cli, "first/rules", "--test-cache", "cache")
    (entry,) = _entries(in_tmp / "cache")
    _plant(entry)
    warm = _render(cli, "warm/rules", "--test-cache", "cache")
    assert _warnings(warm) == [
        f"rulegen: warning: test cache: cache/render/{entry.name}: its content does not match "
        "its digest (corrupt or edited); ignored, rendered again"
    ]
    assert snapshot(in_tmp / "warm") == snapshot(in_tmp / "plain")
    assert "Planted" not in entry.read_text()  # the entry was rendered again and rewritten
    assert not _warnings(_render(cli, "again/rules", "--test-cache", "cache"))
    # rules/ holding the planted alert (what a poisoned cache would have built) is stale
    _plant(entry)
    with (in_tmp / "plain" / "rules" / RULES).open("a") as rules:
        rules.write(PLANTED_ALERT)
    check = cli("build", "--check", "--no-validate", "--test-cache", "cache", "--out",
                "plain/rules")  # fmt: skip
    assert check.code == 1, check.out
    assert "stale: plain/rules/prometheus/web.rules.yml" in check.err
    assert len(_warnings(check)) == 1


def test_an_entry_copied_under_another_key_is_refused(cli: Cli, in_tmp: Path) -> None:
    write_tree(in_tmp, {"specs/web.yaml": V1})
    _render(cli, "first/rules", "--test-cache", "cache")
    (old,) = _entries(in_tmp / "cache")
    write_tree(in_tmp, {"specs/web.yaml": V2})
    _render(cli, "plain/rules")
    _render(cli, "second/rules", "--test-cache", "cache")
    (new,) = set(_entries(in_tmp / "cache")) - {old}
    new.write_bytes(old.read_bytes())  # version 1's entry, digest and all, under 2's key
    warm = _render(cli, "warm/rules", "--test-cache", "cache")
    assert _warnings(warm) == [
        f"rulegen: warning: test cache: cache/render/{new.name}: recorded under another key "
        "(copied from another entry); ignored, rendered again"
    ]
    assert snapshot(in_tmp / "warm") == snapshot(in_tmp / "plain")


def test_with_a_secret_an_unsigned_entry_is_refused_then_signed(
    cli: Cli, in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_tree(in_tmp, {"specs/web.yaml": V1})
    _render(cli, "plain/rules")
    _render(cli, "first/rules", "--test-cache", "cache")  # no secret: an unsigned entry
    (entry,) = _entries(in_tmp / "cache")
    monkeypatch.setenv("RULEGEN_CACHE_SECRET", "the CI's secret")
    signed = _render(cli, "signed/rules", "--test-cache", "cache")
    assert _warnings(signed) == [
        f"rulegen: warning: test cache: cache/render/{entry.name}: not signed with "
        "RULEGEN_CACHE_SECRET; ignored, rendered again"
    ]
    assert snapshot(in_tmp / "signed") == snapshot(in_tmp / "plain")
    assert "hmac" in json.loads(entry.read_text())
    assert not _warnings(_render(cli, "warm/rules", "--test-cache", "cache"))
    monkeypatch.setenv("RULEGEN_CACHE_SECRET", "another secret")
    other = _render(cli, "other/rules", "--test-cache", "cache")
    assert [w.split(": ", 4)[-1] for w in _warnings(other)] == [
        "its signature is not RULEGEN_CACHE_SECRET's (forged, or another secret); "
        "ignored, rendered again"
    ]


# --- a pass marker is bound to the files it passed -----------------------------------------


def _failing_repo(root: Path, cli: Cli) -> TestCache:
    """A spec and a failing test of one's own, rendered into ``rules/`` (the bytes a build
    validates); the cache API an attacker has, with the real promtool's version."""
    write_tree(root, {"specs/web.yaml": V1, "specs/tests/fail.test.yml": FAILING_TEST})
    _render(cli, "rules")
    version = promtool.build_info()
    assert version is not None
    return TestCache(root / "cache", version)


def _forged_key(cache: TestCache, root: Path) -> Path:
    [key] = unit_keys(root / "rules", "tests/fail.test.yml", cache)
    return cache.folder / key.name


def _tests_line(result: CliResult) -> str:
    return next(line for line in result.out.splitlines() if "promtool test rules" in line)


@pytest.mark.parametrize(
    "forgery",
    ["plain content", "copied from a passing file's marker", "the passing marker renamed"],
)
@pytest.mark.slow
def test_a_forged_pass_marker_never_hides_a_failing_test(
    cli: Cli, in_tmp: Path, forgery: str
) -> None:
    cache = _failing_repo(in_tmp, cli)
    failed = cli("build", "--test-cache", "cache")
    assert failed.code == 1, failed.out
    marker = _forged_key(cache, in_tmp)
    assert not marker.exists()  # a failure is never recorded
    if forgery == "plain content":
        marker.write_text(f"tests/fail.test.yml\n{cache.promtool_version}\n")
    else:
        passing = unit_keys(in_tmp / "rules", "tests/web.test.yml", cache, "web")[0]
        source = cache.folder / passing.name
        marker.write_bytes(source.read_bytes())
        if forgery == "the passing marker renamed":
            source.unlink()
    again = cli("build", "--test-cache", "cache")
    assert again.code == 1, again.out
    assert "tests/fail.test.yml" in again.err
    reason = (
        "not JSON, so not written by this rulegen"
        if forgery == "plain content"
        else "not a pass of these files (written by hand, or copied from another)"
    )
    assert _warnings(again) == [
        f"rulegen: warning: test cache: cache/{marker.name}: {reason}; ignored, checked again"
    ]


@pytest.mark.slow
def test_an_edited_marker_of_a_passing_test_is_rerun_and_replaced(cli: Cli, in_tmp: Path) -> None:
    write_tree(in_tmp, {"specs/web.yaml": V1})
    assert cli("build", "--test-cache", "cache").code == 0
    version = promtool.build_info()
    assert version is not None
    cache = TestCache(in_tmp / "cache", version)
    whole = cache.key(in_tmp / "rules", "tests/web.test.yml")
    assert whole is not None
    units = unit_keys(in_tmp / "rules", "tests/web.test.yml", cache, "web")
    # the file's own marker (whole) and its units' markers: edit them all
    markers = [in_tmp / "cache" / key.name for key in (whole, *units)]
    good = {marker: marker.read_bytes() for marker in markers}
    for marker in markers:
        edited = json.loads(good[marker])
        edited["inputs"][-1][1] = "0" * 64  # another input's hash
        marker.write_text(json.dumps(edited))
    rerun = cli("build", "--test-cache", "cache")
    assert rerun.code == 0, rerun.err
    assert _tests_line(rerun).endswith("(0 unchanged since a recorded pass, not rerun)")
    assert _warnings(rerun) == [
        f"rulegen: warning: test cache: cache/{marker.name}: does not match the files it vouches "
        "for (edited); ignored, checked again"
        for marker in markers
    ]
    assert {marker: marker.read_bytes() for marker in markers} == good
    again = cli("build", "--test-cache", "cache")
    assert not _warnings(again), again.err
    assert _tests_line(again).endswith("(1 unchanged since a recorded pass, not rerun)")


@pytest.mark.slow
def test_with_a_secret_a_marker_with_the_right_hashes_but_no_valid_hmac_is_refused(
    cli: Cli, in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = _failing_repo(in_tmp, cli)
    [key] = unit_keys(in_tmp / "rules", "tests/fail.test.yml", cache)
    # The record a pass would leave, recomputed from the files as anyone can: without the
    # secret it is taken for a pass (the limit docs/ci.md states: hashes catch corruption,
    # edits and copies, not a forger who recomputes them) ...
    cache.remember(key)
    assert cli("build", "--test-cache", "cache").code == 0
    # ... with the secret, neither it nor one with a made-up HMAC is.
    monkeypatch.setenv("RULEGEN_CACHE_SECRET", "the CI's secret")
    record = json.loads((cache.folder / key.name).read_text())
    for hmac in (None, "0" * 64):
        for leftover in cache.folder.iterdir():  # only the forged marker in the cache
            if leftover.is_dir():
                shutil.rmtree(leftover)
            elif leftover.name != key.name:
                leftover.unlink()
        forged = record if hmac is None else {**record, "hmac": hmac}
        (cache.folder / key.name).write_text(json.dumps(forged))
        refused = cli("build", "--test-cache", "cache")
        assert refused.code == 1, refused.out
        assert "tests/fail.test.yml" in refused.err
        why = (
            "not signed with RULEGEN_CACHE_SECRET"
            if hmac is None
            else "its signature is not RULEGEN_CACHE_SECRET's (forged, or another secret)"
        )
        assert _warnings(refused) == [
            f"rulegen: warning: test cache: cache/{key.name}: {why}; ignored, checked again"
        ]


# --- --read-only ---------------------------------------------------------------------------


@pytest.mark.slow
def test_read_only_uses_the_cache_and_writes_nothing_into_it(cli: Cli, in_tmp: Path) -> None:
    write_tree(in_tmp, {"specs/web.yaml": V1})
    assert cli("build", "--test-cache", "cache").code == 0
    before = snapshot(in_tmp / "cache")
    for check in ((), ("--check",)):
        used = cli("build", *check, "--test-cache", "cache", "--read-only")
        assert used.code == 0, used.err
        assert _tests_line(used).endswith("(1 unchanged since a recorded pass, not rerun)")
        assert snapshot(in_tmp / "cache") == before
    # a bad entry is refused but not replaced
    (entry,) = _entries(in_tmp / "cache")
    _plant(entry)
    planted = snapshot(in_tmp / "cache")
    refused = cli("build", "--test-cache", "cache", "--read-only")
    assert refused.code == 0, refused.err
    assert len(_warnings(refused)) == 1
    assert snapshot(in_tmp / "cache") == planted
    assert b"Planted" not in (in_tmp / "rules" / RULES).read_bytes()


@pytest.mark.slow
def test_read_only_with_an_empty_cache_creates_nothing_in_it(cli: Cli, in_tmp: Path) -> None:
    write_tree(in_tmp, {"specs/web.yaml": V1})
    (in_tmp / "cache").mkdir()
    built = cli("build", "--test-cache", "cache", "--read-only")
    assert built.code == 0, built.err
    assert _tests_line(built).endswith("(0 unchanged since a recorded pass, not rerun)")
    assert list((in_tmp / "cache").iterdir()) == []
    assert cli("build", "--test-cache", "absent", "--read-only", "--out", "b").code == 0
    assert not (in_tmp / "absent").exists()


def test_read_only_without_a_test_cache_is_a_usage_error(cli: Cli, in_tmp: Path) -> None:
    write_tree(in_tmp, {"specs/web.yaml": V1})
    result = cli("build", "--no-validate", "--read-only")
    assert (result.code, result.out) == (2, "")
    assert result.err.splitlines() == [
        "rulegen: error: --read-only is about the --test-cache DIR: give one, or drop it"
    ]
    assert not (in_tmp / "rules").exists()
