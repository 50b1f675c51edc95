"""``rulegen explain`` prints the effective spec with each value's origin; lint and errors on an
inherited value name the defaults file's line.

In-process: the exact output of ``explain`` on a two-file chain, its errors, and a lint
finding on a value a spec inherits.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult, write_tree

Cli = Callable[..., CliResult]

FILES = {
    "base.yaml": """
        version: 1
        defaults:
          scrape_interval: 30s
          labels: {org: acme}
        """,
    "specs/defaults.yaml": """
        version: 1
        extends: ../base.yaml
        defaults:
          labels: {team: inference}
          alerts:
            disk_await: {threshold: 5ms, for: 5m, severity: warning}
          slos:
            tiers:
              - {long: 1h, short: 5m, budget: 2%, alert: page}
        """,
    "specs/web.yaml": """
        version: 1
        extends: defaults.yaml
        service: web
        labels: {team: web, "odd key": "a #b"}
        alerts:
          - signal: disk_await
            threshold: 10ms
        slos:
          - name: availability
            objective: 99.9%
            sli: {ratio: {errors: e_total, total: t_total}}
        """,
}

EXPLAINED = """\
# rulegen explain specs/web.yaml: the effective spec; it extends specs/defaults.yaml, base.yaml
# each value: the file and line it was written on (from: inherited)
version: 1  # specs/web.yaml:1
service: web  # specs/web.yaml:3
labels:  # specs/web.yaml:4
  team: web  # specs/web.yaml:4
  odd key: "a #b"  # specs/web.yaml:4
  org: acme  # from base.yaml:4
scrape_interval: 30s  # from base.yaml:3
alerts:  # specs/web.yaml:5
  - signal: disk_await  # specs/web.yaml:6
    threshold: 10ms  # specs/web.yaml:7
    for: 5m  # from specs/defaults.yaml:6
    severity: warning  # from specs/defaults.yaml:6
slos:  # specs/web.yaml:8
  - name: availability  # specs/web.yaml:9
    objective: 99.9%  # specs/web.yaml:10
    sli:  # specs/web.yaml:11
      ratio:  # specs/web.yaml:11
        errors: e_total  # specs/web.yaml:11
        total: t_total  # specs/web.yaml:11
    tiers:  # from specs/defaults.yaml:8
      - long: 1h  # from specs/defaults.yaml:9
        short: 5m  # from specs/defaults.yaml:9
        budget: 2%  # from specs/defaults.yaml:9
        alert: page  # from specs/defaults.yaml:9
"""


@pytest.mark.usefixtures("in_tmp")
def test_explain_prints_the_effective_spec_with_every_values_origin(cli: Cli, in_tmp: Path) -> None:
    write_tree(in_tmp, FILES)
    result = cli("explain", "specs/web.yaml")
    assert (result.code, result.err) == (0, "")
    assert result.out == EXPLAINED
    assert cli("explain", "specs/web.yaml").out == result.out


EXPLAIN_ERRORS = [
    pytest.param(
        "specs/defaults.yaml",
        "specs/defaults.yaml:1:1: a defaults file: explain shows a service spec (one with "
        "service:)\n",
        id="a defaults file is not explained",
    ),
    pytest.param(
        "specs/none.yaml",
        "rulegen: error: specs/none.yaml: no such file\n",
        id="a missing spec is a usage error",
    ),
]


@pytest.mark.usefixtures("in_tmp")
@pytest.mark.parametrize(("spec", "stderr"), EXPLAIN_ERRORS)
def test_explain_refuses_what_is_not_a_service_spec(
    cli: Cli, in_tmp: Path, spec: str, stderr: str
) -> None:
    write_tree(in_tmp, FILES)
    result = cli("explain", spec)
    assert result.code == 2
    assert result.err.startswith(stderr)


def test_explain_of_a_broken_spec_ends_without_nothing_written(cli: Cli, in_tmp: Path) -> None:
    """explain never writes: its error report closes with the count alone."""
    write_tree(in_tmp, {**FILES, "specs/bad.yaml": "version: 1\nservice: bad\nextends: no.yaml\n"})
    result = cli("explain", "specs/bad.yaml")
    assert result.code == 2
    assert result.err.splitlines() == [
        "specs/bad.yaml:3:10: extends: cannot read no.yaml: no such file",
        "rulegen: 1 error(s)",
    ]


LINT_DEFAULTS = """
    version: 1
    defaults:
      retention: 3d
      runbook_url: https://runbooks.example.com/{alert}
      slos:
        window: 7d
    """
LINT_SPEC = """
    version: 1
    service: web
    extends: defaults.yaml
    slos:
      - name: availability{comment}
        objective: 99.9%
        sli: {{ratio: {{errors: 'e_total{{job="web"}}', total: 't_total{{job="web"}}'}}}}
    """
FINDING = (
    "specs/defaults.yaml:6:13: [slo/retention] error: SLO availability: reads 7d of history "
    "but Prometheus keeps 3d (retention): the SLI and budget silently cover less than the "
    "window (inherited by specs/web.yaml from defaults.slos.window)\n"
)


@pytest.mark.usefixtures("in_tmp")
@pytest.mark.parametrize(
    ("comment", "out"),
    [
        pytest.param("", FINDING, id="a finding on an inherited value names the defaults line"),
        pytest.param(
            "  # rulegen: disable=slo/retention",
            "lint: 1 file(s), no findings\n",
            id="a disable comment on the spec's entry silences it",
        ),
    ],
)
def test_lint_on_an_inherited_value(cli: Cli, in_tmp: Path, comment: str, out: str) -> None:
    spec = LINT_SPEC.format(comment=comment)
    write_tree(in_tmp, {"specs/defaults.yaml": LINT_DEFAULTS, "specs/web.yaml": spec})
    result = cli("lint")
    assert (result.code, result.err, result.out) == (0 if "no findings" in out else 1, "", out)
