"""The declared Prometheus version: parsed strictly, followed by the output, enforced on tools.

Why: the generated rules and tests are written for one PromQL semantics (closed ranges before
3.0, left-open from 3.0). A build must give the same bytes for the same declaration whatever
promtool is installed, and refuse, in one line and before any test runs, a promtool whose
semantics differ, instead of failing tests that are right for the declared version.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import (
    ON_PROMETHEUS_2,
    REPO,
    STACK_VERSION,
    CliResult,
    run_rulegen,
    snapshot,
    write_tree,
)
from support.prometheus import PrometheusServer

from rulegen.core.versions import PrometheusVersion, same_semantics, tool_version

Cli = Callable[..., CliResult]
SYSTEM_PROMTOOL = Path("/usr/bin/promtool")
CURRENT_PROMTOOL = REPO / ".tools" / "forky" / "root" / "usr" / "bin" / "promtool"
SPEC = """
    version: 1
    service: web
    prometheus: {{version: "{version}"}}
    slos:
      - name: api
        objective: 99.9%
        evaluation_interval: 1m
        sli:
          ratio: {{errors: 'http_requests_total{{code=~"5.."}}', total: http_requests_total}}
    """


@pytest.mark.parametrize(
    ("text", "expected"),
    [("2.42", (2, 42)), ("3.5", (3, 5)), ("3.10", (3, 10)), ("10.0", (10, 0))],
)
def test_a_version_is_major_and_minor(text: str, expected: tuple[int, int]) -> None:
    version = PrometheusVersion.parse(text)
    assert (version.major, version.minor) == expected
    assert str(version) == text
    assert version.left_open_ranges == (expected[0] >= 3)


@pytest.mark.parametrize("text", ["3", "3.5.1", "v3.5", "03.5", "", "2.41", "1.8"])
def test_anything_else_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match=r"MAJOR.MINOR|2.42 or later"):
        PrometheusVersion.parse(text)


@pytest.mark.parametrize(
    ("output", "found"),
    [
        ("promtool, version 3.5.3+ds1 (branch: debian/sid, revision: 3.5.3+ds1-6)", (3, 5, 3)),
        ("promtool, version 2.42.0+ds (branch: debian/sid)\n  build user: …", (2, 42, 0)),
        ("amtool, version 0.33.1 (branch: debian/sid, revision: 0.33.1-5)", (0, 33, 1)),
        ("", None),
        ("promtool (unknown version)", None),
    ],
)
def test_a_tools_version_is_read_from_its_version_line(
    output: str, found: tuple[int, int, int] | None
) -> None:
    assert tool_version(output) == found


def test_semantics_are_the_same_within_a_major_version() -> None:
    assert same_semantics(PrometheusVersion(3, 5), (3, 0, 0))
    assert same_semantics(PrometheusVersion(2, 42), (2, 55, 1))
    assert not same_semantics(PrometheusVersion(3, 5), (2, 42, 0))
    assert not same_semantics(PrometheusVersion(2, 53), (3, 5, 3))


def _rules(root: Path) -> dict[str, bytes | None]:
    return snapshot(root / "rules")


def test_the_output_follows_the_declaration_not_the_tools(
    in_tmp: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same declaration, same bytes (whatever is on PATH); another declaration, other SLO
    rules and tests."""
    outputs = {}
    path = os.environ.get("PATH", "")
    for version in ("2.42", "3.5"):
        write_tree(in_tmp / version, {"specs/web.yaml": SPEC.format(version=version)})
        monkeypatch.chdir(in_tmp / version)
        monkeypatch.setenv("PATH", path)
        assert cli("build", "--no-validate").code == 0
        outputs[version] = _rules(in_tmp / version)
        monkeypatch.setenv("PATH", "/nonexistent")  # no promtool at all: the same bytes again
        assert cli("build", "--no-validate").code == 0
        assert _rules(in_tmp / version) == outputs[version]
    rules = "prometheus/web.slo.api.rules.yml"
    assert outputs["2.42"][rules] != outputs["3.5"][rules]
    assert b"increase(http_requests_total[5m])" in (outputs["2.42"][rules] or b"")
    assert b"increase(" not in (outputs["3.5"][rules] or b"")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("declared", "promtool", "found", "major"),
    [
        pytest.param("3.5", SYSTEM_PROMTOOL, "2.42.0", "3.x", id="3.5 declared, promtool 2.42"),
        pytest.param("2.42", CURRENT_PROMTOOL, "3.5.3", "2.x", id="2.42 declared, promtool 3.5"),
    ],
)
def test_a_promtool_of_other_semantics_is_one_line_and_exit_2(
    declared: str, promtool: Path, found: str, major: str, in_tmp: Path, cli: Cli,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    if not promtool.is_file():
        pytest.skip(f"needs {promtool} (apt-get install prometheus; make tools)")
    write_tree(in_tmp, {"specs/web.yaml": SPEC.format(version=declared)})
    monkeypatch.setenv("RULEGEN_PROMTOOL", str(promtool))
    semantics = "left-open" if declared.startswith("3") else "closed"
    wanted = found.rsplit(".", 1)[0]
    result = cli("build")
    assert (result.code, result.out) == (2, "")
    assert result.err.splitlines() == [
        f"specs/web.yaml:3:23: prometheus.version: declares Prometheus {declared} ({semantics} "
        f"range selectors) but promtool is {found}, whose generated tests would fail: set "
        f'prometheus.version to "{wanted}", or put a promtool {major} first on PATH (or '
        "RULEGEN_PROMTOOL)",
        "rulegen: 1 error(s); nothing written",
    ]
    assert not (in_tmp / "rules").exists()


# the SLO spec above with an alert too (a backtest needs one)
SERVED = (
    SPEC.rstrip()
    + """
    alerts:
      - signal: custom
        name: ErrorsHigh
        expr: sum(rate(http_requests_total{{code=~"5.."}}[5m])) > 1
        for: 5m
        severity: critical
        summary: errors
    """
)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusServer]:
    """A real, empty Prometheus of the stack under test (admin API on: repair's needs)."""
    folder = tmp_path_factory.mktemp("served")
    server = PrometheusServer(folder / "data", folder, flags=["--web.enable-admin-api"])
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _other_version() -> tuple[str, str, str]:
    """A declaration of the other semantics than the stack's server, its semantics, and
    the major version the message asks for."""
    if ON_PROMETHEUS_2:
        return "3.5", "left-open", "3.x"
    return "2.42", "closed", "2.x"


@pytest.mark.slow
@pytest.mark.parametrize(
    "command",
    [
        pytest.param(["repair", "specs", "--dry-run"], id="repair"),
        pytest.param(["backtest", "specs", "--from", "-1h", "--to", "now"], id="backtest"),
        pytest.param(["lint", "specs"], id="lint"),
        pytest.param(
            ["diff", "specs", "--base-dir", "base", "--from", "-1h", "--to", "now"], id="diff"
        ),
    ],
)
def test_a_server_of_other_semantics_is_one_line_and_exit_2(
    command: list[str], served: PrometheusServer, in_tmp: Path
) -> None:
    declared, semantics, major = _other_version()
    write_tree(in_tmp, {"specs/web.yaml": SERVED.format(version=declared),
                        "base/web.yaml": SERVED.format(version=declared)})  # fmt: skip
    version = served.api("status/buildinfo", {})["version"].split("+")[0]  # 3.5.3+ds1
    wanted = ".".join(version.split(".")[:2])
    result = run_rulegen(*command, "--prometheus", served.url, cwd=in_tmp)
    assert (result.code, result.out) == (2, ""), result.err
    prefix = "current: " if command[0] == "diff" else ""
    assert result.err.splitlines() == [
        f"{prefix}specs/web.yaml:3:23: prometheus.version: declares Prometheus {declared} "
        f"({semantics} range selectors) but the Prometheus at {served.url} is {version}, which "
        f'evaluates the rules otherwise: set prometheus.version to "{wanted}", or point '
        f"--prometheus at a Prometheus {major}",
        # lint and diff write nothing, so their closing line does not say so
        "rulegen: 1 error(s)" + ("" if command[0] in ("lint", "diff") else "; nothing written"),
    ]


@pytest.mark.slow
def test_a_base_of_other_semantics_is_diffed_with_a_warning(
    served: PrometheusServer, in_tmp: Path
) -> None:
    """A diff across a migration: the base declares the other semantics, the current specs
    the server's."""
    declared, _, _ = _other_version()
    own = STACK_VERSION or "3.5"
    write_tree(in_tmp, {"specs/web.yaml": SERVED.format(version=own),
                        "base/web.yaml": SERVED.format(version=declared)})  # fmt: skip
    result = run_rulegen(
        "diff", "specs", "--base-dir", "base", "--prometheus", served.url, "--from", "-1h",
        "--to", "now", cwd=in_tmp,
    )  # fmt: skip
    assert result.code == 0, result.err
    assert f"its rules are for Prometheus {declared}, replayed on the Prometheus at " in result.err
