"""``rulegen build --test-cache DIR`` keeps each service's rendered files in ``DIR/render``:
an unchanged service is not rendered again, a changed input always is, and a damaged entry
is never trusted.

Why: the entries stand in for a render, so the only acceptable outcome is the output a render
gives, byte for byte. Each input a service's files come from (its spec, the defaults file it
extends, a signal definition, the targets asked for) is changed in turn; each entry a hostile
or broken cache may hold is tried; every build is compared with a build without any cache.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult, snapshot, write_tree

from rulegen.pipeline import rendercache

Cli = Callable[..., CliResult]

SPEC = """\
version: 1
service: {name}
extends: defaults.yaml
alerts:
  - signal: disk_await
    threshold: {threshold}
  - {{signal: nvlink_utilization, threshold: 80%, severity: warning}}
"""
DEFAULTS = """\
version: 1
defaults:
  labels: {team: inference}
  alerts:
    disk_await: {for: 5m, severity: warning}
"""


@pytest.fixture
def repo(in_tmp: Path) -> Path:
    """Two services extending one defaults file, and the example's team signal."""
    write_tree(
        in_tmp,
        {
            "specs/web.yaml": SPEC.format(name="web", threshold="20ms"),
            "specs/api.yaml": SPEC.format(name="api", threshold="30ms"),
            "specs/defaults.yaml": DEFAULTS,
        },
    )
    (in_tmp / "signals").mkdir()
    shutil.copy(Path(__file__).parents[2] / "signals" / "nvlink_utilization.yaml", "signals")
    return in_tmp


def _build(cli: Cli, out: str, *extra: str, cache: bool = True) -> dict[str, bytes | None]:
    flags = ["--test-cache", "cache"] if cache else []
    result = cli("build", "--no-validate", "--signals", "signals", "--out", out, *flags, *extra)
    assert result.code == 0, result.err
    return snapshot(Path(out))


def _entries(root: Path) -> list[Path]:
    return sorted((root / "cache" / "render").glob("*.json"))


def _entry_of(root: Path, service: str) -> Path:
    """The cache entry holding ``service``'s rule file."""
    rule_file = f"prometheus/{service}.rules.yml"
    found = [p for p in _entries(root) if rule_file in json.loads(p.read_text())["files"]]
    assert len(found) == 1, found
    return found[0]


def test_a_warm_build_writes_what_a_build_without_cache_writes(cli: Cli, repo: Path) -> None:
    first = _build(cli, "first")
    assert len(_entries(repo)) == 2  # one per service
    stamps = [p.stat().st_mtime_ns for p in _entries(repo)]
    warm = _build(cli, "warm")
    assert warm == first == _build(cli, "plain", cache=False)
    assert [p.stat().st_mtime_ns for p in _entries(repo)] == stamps  # read, not rewritten


def test_an_edited_entry_is_refused_with_a_warning_and_rewritten(cli: Cli, repo: Path) -> None:
    # An entry is checked against the digest of its own content: an edit of a stored file
    # is a miss with one warning line naming the entry, never what is written.
    first = _build(cli, "first")
    entry = _entry_of(repo, "web")
    data = json.loads(entry.read_text())
    data["files"]["grafana/web.json"] += " "
    entry.write_text(json.dumps(data))
    result = cli("build", "--no-validate", "--signals", "signals", "--out", "warm",
                 "--test-cache", "cache")  # fmt: skip
    assert result.code == 0, result.err
    assert result.err.splitlines() == [
        f"rulegen: warning: test cache: cache/render/{entry.name}: its content does not match "
        "its digest (corrupt or edited); ignored, rendered again"
    ]
    assert snapshot(repo / "warm") == first
    assert json.loads(entry.read_text())["files"]["grafana/web.json"].endswith("}\n")


@pytest.mark.parametrize(
    "change",
    ["the spec", "the defaults file it extends", "a signal definition", "the targets"],
)
def test_a_changed_input_renders_the_service_again(cli: Cli, repo: Path, change: str) -> None:
    _build(cli, "first")
    extra: tuple[str, ...] = ()
    if change == "the spec":
        write_tree(repo, {"specs/web.yaml": SPEC.format(name="web", threshold="25ms")})
    elif change == "the defaults file it extends":
        write_tree(repo, {"specs/defaults.yaml": DEFAULTS.replace("for: 5m", "for: 7m")})
    elif change == "a signal definition":
        signal = repo / "signals" / "nvlink_utilization.yaml"
        signal.write_text(signal.read_text().replace("for: 10m", "for: 12m"))
    else:
        extra = ("--target", "prometheus", "--target", "thanos")
    warm = _build(cli, "warm", *extra)
    plain = _build(cli, "plain", *extra, cache=False)
    assert warm == plain
    assert warm != snapshot(repo / "first")


HOSTILE = {
    "not JSON": "{",
    "a list": "[]",
    "another format": '{"format": 2, "files": {}, "costs": {}, "loads": {}, "reports": []}',
    "a file outside the output folder": "../../escaped.txt",
    "an absolute file name": "/tmp/escaped.txt",
    "a file named like the manifest": ".rulegen-manifest.json",
    "a cost that is not a number": "cost",
    "reports that are not a list": "reports",
}


@pytest.mark.parametrize("damage", list(HOSTILE))
def test_a_damaged_entry_is_rendered_again_and_rewritten(cli: Cli, repo: Path, damage: str) -> None:
    first = _build(cli, "first")
    entry = _entry_of(repo, "web")
    data = json.loads(entry.read_text())
    text = HOSTILE[damage]
    if damage.startswith(("a file", "an absolute")):  # a name the output may not have
        data["files"][text] = "planted"
    elif damage == "a cost that is not a number":
        data["costs"] = {name: "1" for name in data["costs"]}
    elif damage == "reports that are not a list":
        data["reports"] = "planted"
    entry.write_text(json.dumps(data) if damage not in ("not JSON", "a list", "another format")
                     else text)  # fmt: skip
    warm = _build(cli, "warm")
    assert warm == first
    assert not (repo / "escaped.txt").exists()
    assert not Path("/tmp/escaped.txt").exists()
    assert "planted" not in entry.read_text()  # the render wrote the entry again


def test_a_cache_that_cannot_be_written_never_fails_the_build(cli: Cli, repo: Path) -> None:
    (repo / "cache").write_text("a file where the cache folder would be\n")
    assert _build(cli, "out") == _build(cli, "plain", cache=False)


def test_another_rulegen_renders_every_service_again(
    cli: Cli, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _build(cli, "first")
    entry = _entry_of(repo, "web")
    data = json.loads(entry.read_text())
    data["files"]["grafana/web.json"] += " "
    entry.write_text(json.dumps(data))
    monkeypatch.setattr(rendercache, "code_fingerprint", lambda: "another rulegen")
    assert _build(cli, "warm") == first
    assert len(_entries(repo)) == 4  # the other rulegen's entries beside the first's


def test_the_code_fingerprint_follows_every_file_but_bytecode(tmp_path: Path) -> None:
    write_tree(tmp_path, {"a.py": "x = 1\n", "catalog/signals/s.yaml": "signal: s\n"})
    before = rendercache.tree_fingerprint(tmp_path)
    write_tree(tmp_path, {"__pycache__/a.cpython-311.pyc": "bytecode"})
    assert rendercache.tree_fingerprint(tmp_path) == before
    write_tree(tmp_path, {"catalog/signals/s.yaml": "signal: t\n"})
    assert rendercache.tree_fingerprint(tmp_path) != before
    assert len(rendercache.code_fingerprint()) == 64
