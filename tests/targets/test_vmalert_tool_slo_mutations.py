"""The SLOs' vmalert-tool tests are sharp: the SLO mutations that fail the promtool tests (a
tier's factor, a ``for``, the objective, ``min_traffic``, the latency bucket) and the
VictoriaMetrics target's own ones (a fallback's sum losing the group label, a tile's offset,
the coverage's divisor) fail the generated ``victoriametrics/tests/*.slo.*`` files.

Why a suite of its own: those files are predicted for the group vmalert runs (``increase()``
base windows, MetricsQL's coverage, values as VictoriaMetrics stores them), so they are other
tests than promtool's, and only their own mutants show that they check anything.

How: a spec with a ratio SLO and a latency SLO (``group_by``, ``min_traffic``), both with a
group label (``targets.victoriametrics.labels``), is built once. A spec mutant is built too
and its vmalert rule file put in place of the original's; a text mutant edits the original's.
Then the SLO's test files, cut into one file per case (``support/promtool_cases.py``), run
in vmalert-tool cheapest case first until one fails. Each case loads only its SLO's group
(the same text, cut out of the rule file): vmalert-tool evaluates every group it loads at
every step, and the other SLO's group would double the cost without touching this SLO's
series. The unmutated files run whole, against their SLO's group too (``rulegen build``
runs them against the whole file: ``test_vmalert_slo_tests.py`` and the docs' figures).

Not mutated: the budget-left and SLO-window ratio recordings, which ``max_query_len`` (16384)
makes read their window sums stored, one evaluation late; the generated files leave their
checks out (docs/victoriametrics.md#slo-tests), and the build says so. vmalert-tool ships from
VictoriaMetrics 1.95 (the forky stack); on bookworm's 1.79 this suite is skipped.
"""

from __future__ import annotations

import copy
import shutil
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import REPO, for_stack
from support import promtool_cases
from support.vmtool import NEEDS_VMALERT_TOOL, VMALERT_TOOL, run_unittest

from rulegen.build import build
from rulegen.catalog import load_catalog
from rulegen.load import SpecInputs

pytestmark = [
    pytest.mark.slow,
    pytest.mark.long,  # `make test-long` (CI), not `make test`: minutes of vmalert-tool CPU
    NEEDS_VMALERT_TOOL,
]

SPEC = """
    version: 1
    service: shop
    evaluation_interval: 1m
    targets:
      victoriametrics: {labels: {ruler: vm-a}}
    slos:
      - name: checkout
        objective: 99.9%
        window: 7d
        sli:
          ratio:
            errors: 'http_requests_total{handler="/checkout", code=~"5.."}'
            total: 'http_requests_total{handler="/checkout"}'
        alerting:
          for: {ticket: 5m}
        tiers:
          - {long: 1h, short: 5m, budget: 2%, alert: page}
          - {long: 6h, short: 30m, budget: 5%, alert: page}
          - {long: 1d, short: 2h, budget: 10%, alert: ticket}
      - name: search
        objective: 99%
        window: 7d
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

RULES = "victoriametrics/shop.rules.yml"
SLOS = ("checkout", "search")
CHECKOUT = 'service="shop", slo="checkout"'


Edit = Callable[[dict[str, Any]], None]


def _slo(spec: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in spec["slos"] if s["name"] == name)


@dataclass(frozen=True)
class Mutation:
    """One mutant of one SLO's vmalert rules: ``spec`` edits the spec (the mutant's whole rule
    file is used), or ``old`` → ``new`` is replaced ``count`` times in the SLO's group of the
    original rule file. ``first``: a piece of the title of the case to run first (it saves
    CPU, never changes whether the mutant is caught)."""

    broken: str
    slo: str
    spec: Edit | None = None
    old: str = ""
    new: str = ""
    count: int | None = 1  # None: every place, at least one
    first: str = ""

    def rules(self, original: str, build_spec: Callable[[Edit], str]) -> str:
        """The mutated rule file."""
        if self.spec is not None:
            mutated = build_spec(self.spec)
            assert mutated != original, f"{self.broken}: the spec edit changed nothing"
            return mutated
        start = original.index(f"- name: shop-slo-{self.slo}\n")
        end = original.find("\n- name: ", start + 1)
        end = len(original) if end < 0 else end
        part = original[start:end]
        found = part.count(self.old)
        assert found == (self.count if self.count is not None else max(found, 1)), (
            f"{self.broken}: {self.old!r} found {found} times"
        )
        return original[:start] + part.replace(self.old, self.new) + original[end:]


def _tier(slo: str, index: int, budget: str) -> Edit:
    def change(spec: dict[str, Any]) -> None:
        _slo(spec, slo)["tiers"][index]["budget"] = budget

    return change


def _set(slo: str, *path: str, value: Any) -> Edit:
    def change(spec: dict[str, Any]) -> None:
        target = _slo(spec, slo)
        for key in path[:-1]:
            target = target.setdefault(key, {})
        target[path[-1]] = value

    return change


TILE_5M = f"slo:sli_errors:increase5m{{{CHECKOUT}}} offset "
ALONE_1H = "fires through tier 1h/5m alone"
ALONE_6H = "fires through tier 6h/30m alone"
SLOW = "slow burn opens a ticket"
GAP = "scrape gap"

MUTATIONS = [
    # the alerts: a tier's factor, a for, the objective
    Mutation(
        "page tier 1h/5m budget 2% -> 2.2% (factor 3.36 -> 3.696)",
        "checkout",
        spec=_tier("checkout", 0, "2.2%"),
        first=ALONE_1H,
    ),
    Mutation(
        "page tier 6h/30m budget 5% -> 5.5%",
        "checkout",
        spec=_tier("checkout", 1, "5.5%"),
        first=ALONE_6H,
    ),
    Mutation(
        "ticket tier 1d/2h budget 10% -> 12%",
        "checkout",
        spec=_tier("checkout", 2, "12%"),
        first=SLOW,
    ),
    Mutation(
        "ticket for 5m -> 10m",
        "checkout",
        spec=_set("checkout", "alerting", "for", value={"ticket": "10m"}),
        first=SLOW,
    ),
    Mutation(
        "page for 0s -> 2m",
        "checkout",
        spec=_set("checkout", "alerting", "for", value={"page": "2m", "ticket": "5m"}),
        first="total outage",
    ),
    Mutation(
        "objective 99.9% -> 99.89%",
        "checkout",
        spec=_set("checkout", "objective", value="99.89%"),
        first=ALONE_1H,
    ),
    Mutation(
        "min_traffic 0.1 -> 1 req/s",
        "search",
        spec=_set("search", "alerting", "min_traffic", value=1),
        first="min_traffic",
    ),
    Mutation(
        "latency threshold 250ms -> 500ms (bucket le)",
        "search",
        spec=_set("search", "sli", "latency", "threshold", value="500ms"),
    ),
    # the VictoriaMetrics target's own: the group label on the fallbacks' sums (without it,
    # `or` keeps both the stored 1d term and its fallback: a day counted twice), a tile's
    # offset, the coverage's divisor
    Mutation(
        "fallback sums drop the group label",
        "checkout",
        old="sum by (service, slo, ruler) (",
        new="sum by (service, slo) (",
        count=None,
        first=SLOW,
    ),
    Mutation(
        "30m errors tile: term offset 25m -> 20m",
        "checkout",
        old=TILE_5M + "25m,",
        new=TILE_5M + "20m,",
        count=None,
        first=ALONE_1H,
    ),
    Mutation(
        "coverage divides by 2000 instead of 2016 terms",
        "checkout",
        old="/ 2016\n",
        new="/ 2000\n",
        first=GAP,
    ),
]


def _build(spec: dict[str, Any], folder: Path) -> Mapping[str, str]:
    (folder / "specs").mkdir(parents=True, exist_ok=True)
    path = folder / "specs/shop.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    catalog = load_catalog([REPO / "signals"])
    return build(SpecInputs((path,), ()), catalog, targets=("victoriametrics",)).files


def _own_group_only(root: Path, slo: str) -> str:
    """The SLO's group cut out of the (mutated) rule file into the file its tests load
    (``victoriametrics/tests/shop.slo.<slo>.rules.yml``, as ``rulegen build`` cuts it); its
    name."""
    data = yaml.safe_load((root / RULES).read_text())
    groups = [g for g in data["groups"] if g["name"] == f"shop-slo-{slo}"]
    name = f"victoriametrics/tests/shop.slo.{slo}.rules.yml"
    (root / name).write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))
    return name


def _cases(root: Path, slo: str) -> list[promtool_cases.Case]:
    """The SLO's test cases (each loads only its SLO's group, as written)."""
    names = [
        f"victoriametrics/tests/shop.slo.{slo}.test.yml",
        f"victoriametrics/tests/shop.slo.{slo}.history.test.yml",
    ]
    cases = [case for name in names for case in promtool_cases.split(root, name)]
    assert all(f"- shop.slo.{slo}.rules.yml\n" in c.text for c in cases)
    return cases


@dataclass(frozen=True)
class Run:
    failed: str
    output: str


@pytest.fixture(scope="module")
def spec() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(for_stack(SPEC))
    return data


@pytest.fixture(scope="module")
def built(spec: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("vmslo")
    for name, text in _build(spec, root / "build").items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@pytest.fixture(scope="module")
def runs(
    built: Path, spec: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Run]:
    """Every vmalert-tool run of the module: ``original <file>`` for each unmutated file
    run whole, the mutation's name for each mutant."""
    original = (built / RULES).read_text()
    roots = {m.broken: tmp_path_factory.mktemp("mutant") for m in MUTATIONS}
    scratch = tmp_path_factory.mktemp("mutant-spec")
    for index, mutation in enumerate(MUTATIONS):
        root = roots[mutation.broken]
        shutil.copytree(built, root, dirs_exist_ok=True)

        def build_spec(change: Edit, folder: Path = scratch / str(index)) -> str:
            mutated = copy.deepcopy(spec)
            change(mutated)
            return _build(mutated, folder)[RULES]

        (root / RULES).write_text(mutation.rules(original, build_spec))
        _own_group_only(root, mutation.slo)
        promtool_cases.write(root, _cases(root, mutation.slo))

    def mutant(mutation: Mutation) -> Run:
        root = roots[mutation.broken]
        command = (VMALERT_TOOL or "vmalert-tool", "unittest", "--files")
        cases = _cases(root, mutation.slo)
        outcome = promtool_cases.run_until_one_fails(root, cases, mutation.first, command)
        return Run(outcome.failed, outcome.output)

    def whole(name: str) -> Run:
        proc = run_unittest(built, name)
        text = proc.stdout + proc.stderr
        failed = proc.returncode != 0 or "FAILED" in text.split()
        return Run(name if failed else "", text)

    tests = (built / "victoriametrics/tests").glob("*.test.yml")
    files = sorted(str(p.relative_to(built)) for p in tests)
    with ThreadPoolExecutor(max_workers=2) as pool:
        whole_runs = {f"original {name}": pool.submit(whole, name) for name in files}
        mutant_runs = {m.broken: pool.submit(mutant, m) for m in MUTATIONS}
        return {k: f.result() for k, f in {**whole_runs, **mutant_runs}.items()}


def test_each_slo_has_its_two_vmalert_tool_files(built: Path) -> None:
    names = sorted(p.name for p in (built / "victoriametrics/tests").glob("*"))
    assert names == [
        f"shop.slo.{slo}.{kind}yml" for slo in SLOS for kind in ("history.test.", "rules.", "test.")
    ]


def test_the_unmutated_files_pass(runs: dict[str, Run]) -> None:
    originals = {k: v for k, v in runs.items() if k.startswith("original ")}
    assert len(originals) == 4
    for name, run in originals.items():
        assert run.failed == "", f"{name}:\n{run.output[-3000:]}"


@pytest.mark.parametrize("mutation", MUTATIONS, ids=lambda m: m.broken)
def test_the_mutant_fails_a_generated_test(mutation: Mutation, runs: dict[str, Run]) -> None:
    run = runs[mutation.broken]
    assert run.failed, f"{mutation.broken}: no generated vmalert-tool test failed"
    for refusal in ("failed to parse", "failed to exec group"):
        assert refusal not in run.output, run.output[-2000:]
