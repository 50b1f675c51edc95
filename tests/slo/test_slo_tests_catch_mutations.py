"""Generated SLO tests must be sharp: a wrong factor, window, offset, guard or ``for`` fails them.

Why: a generated test that passes whatever the rules say proves nothing. A small spec with one
ratio SLO (30d) and one latency SLO (28d, ``group_by``) is built once with
``rulegen build --no-validate``; each case edits one thing in the RENDERED rule file of one SLO
(a literal string replacement, counted) and runs ``promtool test rules`` on that SLO's two
generated test files, which must fail. The unmutated files must pass.

promtool runs are the cost (seconds each), so every run of the module is made once, two at a
time, in a module fixture. The unmutated rules run each test file whole. A mutant runs the two
files cut into one file per test case (``support/promtool_cases.py``: same header, the case's
lines verbatim), cheapest case first, and stops at the first that fails: a file fails if and
only if one of its cases does, so exactly the same mutants are caught, most of them by a case
of a few evaluation steps instead of days of history.

The fallbacks of coarse window terms are not edited here: they take over only when an
evaluation was missed, which promtool cannot do (it evaluates every step), so no generated
test can tell them apart. ``test_slo_fallbacks_catch_mutations.py`` edits them, with the terms
they replace renamed away so that they always engage; ``test_slo_gaps_prometheus.py`` checks
them on a real Prometheus.

The factor and min_traffic edits were once missed (tier checks re-rendered the condition instead
of reading the alert rule; no scenario sat near min_traffic); the generated tests now fire each
alert through one tier alone and run outages just below and above min_traffic.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import for_stack, rendered_rules
from support import promtool_cases

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("promtool") is None, reason="needs promtool"),
]

SPEC = """
    version: 1
    service: shop
    evaluation_interval: 1m
    slos:
      - name: checkout
        objective: 99.9%
        window: 30d
        sli:
          ratio:
            errors: 'http_requests_total{handler="/checkout", code=~"5.."}'
            total: 'http_requests_total{handler="/checkout"}'
        alerting:
          for: {ticket: 5m}
      - name: search
        objective: 99%
        window: 28d
        sli:
          latency:
            metric: http_request_duration_seconds
            threshold: 250ms
            buckets: [0.05, 0.1, 0.25, 0.5, 1]
            matchers: 'handler="/search"'
        group_by: [region]
        alerting:
          min_traffic: 0.1
        tiers:
          - {long: 1h, short: 5m, budget: 2%, alert: page}
          - {long: 6h, short: 30m, budget: 5%, alert: page}
          - {long: 1d, short: 2h, budget: 10%, alert: ticket}
    """

CHECKOUT = 'service="shop", slo="checkout"'


@dataclass(frozen=True)
class Mutation:
    """Replace ``old`` by ``new`` exactly ``count`` times in one part of one SLO's rule file.

    ``where`` is the part: ``recordings`` (before the first alert), ``alerts`` (from the first
    alert on), ``page`` (the first alert only) or ``ticket`` (the second alert only). Alert
    annotations repeat each tier's condition on one line, so expression edits are anchored on
    a line end (``\\n``) that only the multi-line ``expr`` has. ``first`` is a piece of the
    title of the test cases to run first (the one that caught the edit when this was written):
    the order only saves CPU, every case runs until one fails, so it never changes whether the
    edit is caught, and a title that no longer matches just costs the cheaper cases first.
    """

    broken: str
    slo: str
    where: str
    old: str
    new: str
    count: int | None = 1  # None: every place, at least one (the 3.x base form reads a
    # counter twice per evaluation step, the 2.x form once: docs/slos.md#prometheus-3)
    regex: bool = False
    first: str = ""

    def apply(self, text: str) -> str:
        """The rule file with this mutation, checking that it changed ``count`` places."""
        first = text.index("  - alert: ")
        second = text.index("  - alert: ", first + 1)
        start, end = {
            "recordings": (0, first),
            "alerts": (first, len(text)),
            "page": (first, second),
            "ticket": (second, len(text)),
        }[self.where]
        target = text[start:end]
        if self.regex:
            changed, found = re.subn(self.old, self.new, target)
        else:
            found = target.count(self.old)
            changed = target.replace(self.old, self.new)
        expected = self.count if self.count is not None else max(found, 1)
        assert found == expected, f"{self.broken}: {self.old!r} found {found} times"
        return text[:start] + changed + text[end:]


PAGE_1H = f"slo:sli_error:ratio_rate5m{{{CHECKOUT}}} / 0.001 > 14.4\n"
TILE_5M = f"slo:sli_errors:increase5m{{{CHECKOUT}}} offset "
TERM_1H = (
    "\n        or\n        label_replace(slo:sli_errors:increase30m"
    f'{{{CHECKOUT}}} offset 30m, "slo_term", "1", "", "")'
)
SEARCH = 'service="shop", slo="search"'
GUARD_5M = f"(slo:sli_total:increase5m{{{CHECKOUT}}} > 0)"
# Pieces of the titles of the generated cases that catch an edit (``Mutation.first``).
ALONE_1H = "fires through tier 1h/5m alone"
ALONE_6H = "fires through tier 6h/30m alone"
ZERO = "zero traffic"
GAP = "scrape gap"
COUNT_5M = f"slo:sli_terms:count5m{{{CHECKOUT}}} offset "
COUNT_1H = (
    "\n        or\n        label_replace(slo:sli_terms:count30m"
    f'{{{CHECKOUT}}} offset 30m, "slo_term", "1", "", "")'
)

# fmt: off
MUTATIONS = [
    # ratio SLO: checkout, 99.9% over 30d, default tiers, ticket for: 5m
    # Caught by the "fires through tier … alone" scenarios: a burn just above one tier's factor
    # and below the next, so the alert's firing time depends on that tier alone.
    Mutation("page factor 14.4 -> 15 (tier 1h/5m)", "checkout", "page", "> 14.4\n", "> 15\n", 2,
             first=ALONE_1H),
    Mutation("page factor 6 -> 6.6 (tier 6h/30m)", "checkout", "page", "> 6\n", "> 6.6\n", 2,
             first=ALONE_6H),
    Mutation("ticket factor 1 -> 1.2 (tier 3d/6h)", "checkout", "ticket", "> 1\n", "> 1.2\n", 2,
             first="slow burn opens a ticket"),
    Mutation("budget 0.001 -> 0.0011 in every alert expression", "checkout", "alerts",
             r"/ 0\.001 > ([0-9.]+)\n", r"/ 0.0011 > \1\n", 8, regex=True, first=ALONE_6H),
    Mutation("30m errors tile: term offset 25m -> 20m", "checkout", "recordings",
             TILE_5M + "25m", TILE_5M + "20m", first=ALONE_1H),
    Mutation("1h errors tile: second 30m term dropped", "checkout", "recordings", TERM_1H, "",
             first=ALONE_6H),
    Mutation("5m ratio: the > 0 guard on total removed", "checkout", "recordings",
             GUARD_5M, GUARD_5M.replace(" > 0)", ")"), first=ZERO),
    Mutation("page tier 1h/5m: short window 5m swapped for the long 1h", "checkout", "page",
             PAGE_1H, PAGE_1H.replace("ratio_rate5m", "ratio_rate1h"), first="total outage"),
    Mutation("page tiers joined by and instead of or", "checkout", "page",
             "      )\n      or\n      (\n", "      )\n      and\n      (\n", first=ALONE_6H),
    Mutation("page alert: for 2m added", "checkout", "page",
             "    labels:\n", "    for: 2m\n    labels:\n", first=ALONE_6H),
    Mutation("ticket alert: for 5m -> 10m", "checkout", "ticket",
             "    for: 5m\n", "    for: 10m\n", first="the ticket fires"),
    # Coverage (a count of present 5m terms summed like the increases): caught by the raw
    # scrape gap, whose exact counts and coverage the generated test predicts.
    Mutation("coverage divides by 8064 instead of 8640 terms", "checkout", "recordings",
             "/ 8640\n", "/ 8064\n", first=GAP),
    Mutation("30m term count: offset 25m -> 20m", "checkout", "recordings",
             COUNT_5M + "25m", COUNT_5M + "20m", first=GAP),
    Mutation("1h term count: second 30m term dropped", "checkout", "recordings", COUNT_1H, "",
             first=GAP),
    # latency SLO: search, 99% over 28d, group_by region, min_traffic 0.1
    # Caught by the outages just below and just above min_traffic.
    Mutation("min_traffic 0.1 -> 1 req/s in every tier", "search", "alerts",
             ">= 0.1\n", ">= 1\n", 3),
    Mutation(
        "SLI bucket le 0.25 -> 0.5", "search", "recordings", 'le="0.25"', 'le="0.5"', None
    ),
    Mutation("budget left divides by 0.02 instead of 0.01", "search", "recordings",
             f"ratio_rate28d{{{SEARCH}}} / 0.01\n", f"ratio_rate28d{{{SEARCH}}} / 0.02\n",
             first=ZERO),
    Mutation("current burn rate divides by 0.02 instead of 0.01", "search", "recordings",
             f"ratio_rate5m{{{SEARCH}}} / 0.01\n", f"ratio_rate5m{{{SEARCH}}} / 0.02\n",
             first=ZERO),
    Mutation("objective recorded as 0.999 instead of 0.99", "search", "recordings",
             "vector(0.99)", "vector(0.999)", first=ZERO),
    Mutation("coverage divides by 8640 instead of 8064 terms", "search", "recordings",
             "/ 8064\n", "/ 8640\n", first=GAP),
]
# fmt: on


SLOS = ("checkout", "search")


@dataclass(frozen=True)
class Run:
    """promtool on one SLO: ``check rules`` on its rule file, then its tests; ``failed`` names
    the file (a whole test file, or one case cut from one) that failed (``""`` when all
    passed)."""

    checked: subprocess.CompletedProcess[str]
    failed: str
    output: str
    # the unit of ``rulegen build`` that failed (the same files cut as the build cuts them)
    unit_failed: str = ""


def _test_files(root: Path, slo: str) -> list[str]:
    names = [f"tests/shop.slo.{slo}.test.yml", f"tests/shop.slo.{slo}.history.test.yml"]
    return [name for name in names if (root / name).is_file()]


def _rules_name(slo: str) -> str:
    return f"prometheus/shop.slo.{slo}.rules.yml"


def _promtool(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["promtool", *args], cwd=root, capture_output=True, text=True, check=False, timeout=300
    )


def build_spec(spec: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``spec`` (for the stack under test) built without validation: its ``rules/``."""
    root = tmp_path_factory.mktemp("spec")
    return rendered_rules(root, {"specs/shop.yaml": for_stack(spec)})


def promtool_runs(
    built: Path,
    slos: tuple[str, ...],
    mutations: list[Mutation],
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, Run]:
    """Every promtool run of a suite, by mutation (``original <slo>`` for the unmutated)."""
    cases = {
        slo: [
            case for name in _test_files(built, slo) for case in promtool_cases.split(built, name)
        ]
        for slo in slos
    }
    # The folders are made before the threads start: tmp_path_factory is not thread-safe.
    originals = {slo: tmp_path_factory.mktemp("original") for slo in cases}
    mutants = {m.broken: tmp_path_factory.mktemp("run") for m in mutations}
    for root in [*originals.values(), *mutants.values()]:
        shutil.copytree(built, root, dirs_exist_ok=True)
    for mutation in mutations:
        rules = mutants[mutation.broken] / _rules_name(mutation.slo)
        rules.write_text(mutation.apply(rules.read_text()))
        promtool_cases.write(mutants[mutation.broken], cases[mutation.slo])

    def check(slo: str, root: Path) -> subprocess.CompletedProcess[str]:
        return _promtool(root, "check", "rules", _rules_name(slo))

    def whole(slo: str, name: str) -> subprocess.CompletedProcess[str]:
        return _promtool(originals[slo], "test", "rules", name)

    def units(slo: str) -> str:
        return promtool_cases.units_until_one_fails(originals[slo], _test_files(built, slo)).failed

    def mutant(mutation: Mutation) -> Run:
        root = mutants[mutation.broken]
        outcome = promtool_cases.run_until_one_fails(root, cases[mutation.slo], mutation.first)
        units = promtool_cases.units_until_one_fails(
            root, _test_files(root, mutation.slo), mutation.first
        )
        return Run(check(mutation.slo, root), outcome.failed, outcome.output, units.failed)

    with ThreadPoolExecutor(max_workers=2) as pool:
        # Each whole file of the unmutated rules, longest first, then the mutants (cheap).
        files = [(slo, name) for slo in originals for name in _test_files(built, slo)]
        files.sort(key=lambda f: -sum(c.steps for c in cases[f[0]] if c.source == f[1]))
        tested = {(slo, name): pool.submit(whole, slo, name) for slo, name in files}
        checked = {slo: pool.submit(check, slo, root) for slo, root in originals.items()}
        cut = {slo: pool.submit(units, slo) for slo in originals}
        found = {m.broken: pool.submit(mutant, m) for m in mutations}
        result = {key: future.result() for key, future in found.items()}
    for slo in originals:
        procs = [(name, tested[slo, name].result()) for name in _test_files(built, slo)]
        failed = next((name for name, proc in procs if proc.returncode != 0), "")
        output = "".join(proc.stdout + proc.stderr for _, proc in procs)
        result[f"original {slo}"] = Run(checked[slo].result(), failed, output, cut[slo].result())
    return result


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The spec built once, without validation: ``rules/`` with two rule and four test files."""
    return build_spec(SPEC, tmp_path_factory)


@pytest.fixture(scope="module")
def runs(built: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    """Every promtool run of the module, by mutation (``original <slo>`` for the unmutated)."""
    return promtool_runs(built, SLOS, MUTATIONS, tmp_path_factory)


def test_each_slo_has_a_test_file_and_a_history_test_file(built: Path) -> None:
    for slo in SLOS:
        assert len(_test_files(built, slo)) == 2, slo


def assert_passes(run: Run) -> None:
    """The unmutated rules: valid, and every generated test passes."""
    assert run.checked.returncode == 0, run.checked.stderr
    assert run.failed == "", run.output
    assert run.unit_failed == "", run.output  # as `rulegen build` cuts the files


def assert_caught(run: Run, slo: str) -> None:
    """A mutant: still a valid rule file (only the unit tests can tell it is wrong), and a
    generated test of its SLO fails."""
    assert run.checked.returncode == 0, run.checked.stderr
    assert run.failed, f"both test files of {slo} pass: the mutation is not caught"
    assert "FAILED" in run.output
    assert run.unit_failed, f"the test units of {slo} (as `rulegen build` cuts them) miss it"


@pytest.mark.parametrize("slo", SLOS)
def test_the_generated_tests_pass_on_the_generated_rules(slo: str, runs: dict[str, Run]) -> None:
    assert_passes(runs[f"original {slo}"])


@pytest.mark.parametrize("mutation", MUTATIONS, ids=[m.broken for m in MUTATIONS])
def test_a_mutated_rule_fails_the_generated_tests(mutation: Mutation, runs: dict[str, Run]) -> None:
    assert_caught(runs[mutation.broken], mutation.slo)
