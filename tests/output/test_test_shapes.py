"""A fleet's test units share one promtool run only when they are the same after renaming the
service, and a mutant of one service's rules is still caught.

Why: two services built from one spec prove the same thing under two names, so ``rulegen
build`` runs each shape once (``rulegen.pipeline.shapes``). A shape reused for a unit that
differs in anything but the name (a window, a tier, the interval, the objective) would let one
service's pass vouch for another's tests; so would a shape that hides an edit of the rules.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult, for_stack, write_tree

from rulegen.pipeline.promtool_runs import RunReport, run_test_files, unit_keys
from rulegen.pipeline.shapes import Identity
from rulegen.progress import Silent
from rulegen.validate.cache import TestCache

SPEC = """
    version: 1
    service: {name}
    evaluation_interval: {interval}
    alerts:
      - {{signal: disk_await, threshold: 20ms, severity: warning}}
    slos:
      - name: checkout
        objective: {objective}
        window: {window}
        sli:
          ratio:
            errors: 'http_requests_total{{handler="/checkout", code=~"5.."}}'
            total: 'http_requests_total{{handler="/checkout"}}'
        tiers:
          - {{long: {page}, short: 5m, budget: 2%, alert: page}}
          - {{long: 6h, short: 30m, budget: 5%, alert: page}}
          - {{long: 1d, short: 2h, budget: 10%, alert: ticket}}
          - {{long: 3d, short: 6h, budget: 10%, alert: ticket}}
    """
BASE = {"interval": "1m", "objective": "99.9%", "window": "30d", "page": "1h"}
FILES = ("{}.test.yml", "{}.slo.checkout.test.yml", "{}.slo.checkout.history.test.yml")
Cli = Callable[..., CliResult]


def _fleet(root: Path, cli: Cli, **second: str) -> Path:
    """Services ``web`` (``BASE``) and ``api`` (``BASE`` with ``second``) built unvalidated
    (in ``root``, the working directory)."""
    specs = {
        "specs/web.yaml": for_stack(SPEC.format(name="web", **BASE)),
        "specs/api.yaml": for_stack(SPEC.format(name="api", **{**BASE, **second})),
    }
    write_tree(root, specs)
    built = cli("build", "--no-validate")
    assert built.code == 0, built.err
    return root / "rules"


def _keys(rules: Path, service: str, pattern: str) -> list[str]:
    cache = TestCache(rules.parent / "cache", "promtool, version 0 (no run)")
    return [k.name for k in unit_keys(rules, "tests/" + pattern.format(service), cache, service)]


def test_two_services_alike_share_every_unit(in_tmp: Path, cli: Cli) -> None:
    rules = _fleet(in_tmp, cli)
    for pattern in FILES:
        assert _keys(rules, "web", pattern) == _keys(rules, "api", pattern), pattern


@pytest.mark.parametrize(
    "changed",
    [{"window": "28d"}, {"page": "2h"}, {"interval": "30s"}, {"objective": "99.5%"}],
    ids=["window", "tier", "interval", "objective"],
)
def test_a_changed_window_tier_interval_or_objective_reruns_the_history(
    in_tmp: Path, cli: Cli, changed: dict[str, str]
) -> None:
    rules = _fleet(in_tmp, cli, **changed)
    history = FILES[2]
    assert not set(_keys(rules, "web", history)) & set(_keys(rules, "api", history))
    # the disk alert's test is no part of the SLO: still one shape for both (the interval
    # aside: it is the group's, and the test's)
    if "interval" not in changed:
        assert _keys(rules, "web", FILES[0]) == _keys(rules, "api", FILES[0])


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("promtool") is None, reason="needs promtool")
def test_a_shape_runs_once_and_a_mutant_of_one_service_is_caught(in_tmp: Path, cli: Cli) -> None:
    rules = _fleet(in_tmp, cli)
    tests = sorted(f"tests/{p.name}" for p in (rules / "tests").iterdir())
    identities = {name: Identity(name.split("/")[1].split(".")[0]) for name in tests}

    def run() -> RunReport:
        return run_test_files(
            rules, tests, None, identities, lambda _: 1.0, 2, Silent(), "promtool test files"
        )

    clean = run()
    assert clean.ok, clean.failures
    units = len(set(_keys(rules, "web", FILES[0]) + _keys(rules, "web", FILES[1])
                    + _keys(rules, "web", FILES[2])))  # fmt: skip
    assert (clean.units, clean.shared) == (2 * units, units)
    page = rules / "prometheus" / "api.slo.checkout.rules.yml"
    text = page.read_text()
    assert text.count("> 14.4\n") == 2
    page.write_text(text.replace("> 14.4\n", "> 15\n"))
    mutated = run()
    assert not mutated.ok
    failed = {f.file for f in mutated.failures}
    assert failed
    assert all(name.startswith("tests/api.slo.checkout") for name in failed), failed
