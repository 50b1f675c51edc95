"""The fallbacks of coarse SLO window terms, under promtool, with every term they replace missed.

Why: a fallback (``increase1h offset 2h or <the 30m pieces of that hour>``) takes over only when
the coarse recording's evaluation was missed. promtool evaluates every rule at every step, so
in the generated tests the fallback never engages and a wrong piece in it goes unseen
(``test_slo_tests_catch_mutations.py`` says so). Here the rule file is edited so that every
coarse term read at an offset reads a series that does not exist (``increase1h_missed``): the
same as if each of those evaluations had been missed, so every such term of every window comes
from its fallback, at every step. Each window's errors and totals must then still equal the sum
of their 5m base terms (a subquery over the base recording, the tiling the cascade stands for),
on uneven traffic over more than the SLO window; the unedited rules must pass the same check,
and each mutant of a fallback (a piece dropped, a piece shifted, a chunk labelled as another
term, errors summed from totals) must fail it.

A 6-hour SLO at a 5-minute interval keeps each promtool run near a second (84 steps); its
cascade (5m, 30m, 1h, 6h) has fallbacks of both shapes a 30-day SLO has, made by the same code
(``rulegen.slo.windows.fallback``): a window of two terms (1h = 30m + 30m offset 30m) and one of
several (6h = six 1h terms), each term read at an offset split into the finer recordings of its
chunk.

Not checked here: the second alternative of a chunk's newest piece (that piece read one
lookback later, when it is missing too), which is not exact by design (5 minutes later) and
engages only in a real hole; ``test_slo_gaps_prometheus.py`` measures it on a real Prometheus.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from conftest import rendered_rules

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("promtool") is None, reason="needs promtool"),
]

SPEC = """
    version: 1
    service: shop
    evaluation_interval: 5m
    slos:
      - name: checkout
        objective: 99%
        window: 6h
        sli:
          ratio:
            errors: 'http_requests_total{code=~"5.."}'
            total: 'http_requests_total'
        tiers:
          - {long: 1h, short: 5m, budget: 2%, alert: page}
          - {long: 6h, short: 30m, budget: 5%, alert: page}
    """
RULES = "prometheus/shop.slo.checkout.rules.yml"
OWN = '{service="shop", slo="checkout"}'
FALLBACK_WINDOWS = {"1h": "59m59s", "6h": "5h59m59s"}  # window: the subquery's range, one
# second short of it, so the 5m steps it sums are exactly the window's 5m terms
# A term read at an offset that has a fallback: the label_replace of its recording, then `or`
# and the fallback's `sum by`. The rename makes the term a series that never exists.
PRIMARY = re.compile(
    r"label_replace\((slo:sli_\w+:increase\w+)"
    r'(\{[^}]*\} offset \w+, "slo_term", "\d+", "", ""\)\n +or\n +label_replace\(\n +sum by)'
)
PRIMARIES = 12  # 6 terms with a fallback (1h: 1, 6h: 5), for errors and for totals


def _missed(text: str) -> str:
    """The rule file with every coarse term read at an offset missed (its fallback engaged)."""
    changed, found = PRIMARY.subn(r"label_replace(\1_missed\2", text)
    assert found == PRIMARIES, f"{found} terms with a fallback, expected {PRIMARIES}"
    return changed


def _values(increments: list[tuple[int, int]]) -> str:
    """promtool's expanding notation for a counter: (steps, increase per step) pieces."""
    parts, value = ["0"], 0
    for steps, step in increments:
        parts.append(f"{value + step}+{step}x{steps - 1}")
        value += step * steps
    return " ".join(parts)


# Uneven traffic over 7h at 5m steps (84 steps), errors in bursts of different sizes, so that a
# piece dropped or shifted anywhere changes some window's sum; checked while the 6h window
# fills and once it is full.
TOTAL = _values([(12, 40), (30, 300), (20, 120), (22, 500)])
ERRORS = _values([(5, 0), (4, 3), (9, 0), (7, 25), (13, 1), (10, 0), (8, 40), (28, 2)])
CHECKED_AT = ("2h", "4h30m", "6h", "7h")


def _check_file() -> str:
    """The promtool test file: each fallback window equals the sum of its 5m terms."""
    checks = []
    for at in CHECKED_AT:
        for window, span in FALLBACK_WINDOWS.items():
            for kind in ("errors", "total"):
                cascade = f"slo:sli_{kind}:increase{window}{OWN}"
                terms = f"sum_over_time(slo:sli_{kind}:increase5m{OWN}[{span}:5m])"
                expr = f"count(abs({cascade} - {terms}) <= 1e-9 * {terms})"
                checks.append({"expr": expr, "eval_time": at, "exp_samples": [{"value": 1}]})
    case = {
        "name": "every fallback window equals the sum of its 5m terms",
        "interval": "5m",
        "input_series": [
            {"series": 'http_requests_total{code="200"}', "values": TOTAL},
            {"series": 'http_requests_total{code="500"}', "values": ERRORS},
        ],
        "promql_expr_test": checks,
    }
    test = {"rule_files": [RULES], "evaluation_interval": "5m", "tests": [case]}
    return yaml.safe_dump(test, sort_keys=False, width=1000)


@dataclass(frozen=True)
class Mutation:
    """Replace ``old`` by ``new`` exactly once inside the expression of recording ``record``
    of the rule file whose fallbacks are all engaged."""

    broken: str
    record: str
    old: str
    new: str

    def apply(self, text: str) -> str:
        start = text.index(f"  - record: {self.record}\n")
        end = text.find("  - record: ", start + 1)
        section = text[start:end]
        assert section.count(self.old) == 1, f"{self.broken}: {self.old!r} not found once"
        return text[:start] + section.replace(self.old, self.new) + text[end:]


def _piece(kind: str, window: str, offset: str, term: int) -> str:
    return (
        f"            or\n            label_replace(slo:sli_{kind}:increase{window}{OWN}"
        f' offset {offset}, "slo_term", "{term}", "", "")\n'
    )


# fmt: off
MUTATIONS = [
    Mutation("1h errors: a 5m piece of the chunk 30m ago dropped", "slo:sli_errors:increase1h",
             _piece("errors", "5m", "45m", 3), ""),
    Mutation("1h total: a 5m piece shifted by 5 minutes", "slo:sli_total:increase1h",
             "increase5m" + OWN + " offset 50m", "increase5m" + OWN + " offset 45m"),
    Mutation("6h errors: a 30m piece of the chunk 3h ago dropped", "slo:sli_errors:increase6h",
             _piece("errors", "30m", "3h30m", 1), ""),
    Mutation("6h total: a 30m piece of the chunk 5h ago shifted by 30 minutes",
             "slo:sli_total:increase6h",
             "increase30m" + OWN + " offset 5h30m,", "increase30m" + OWN + " offset 5h,"),
    Mutation("6h errors: the chunk 4h ago labelled as the term 3h ago",
             "slo:sli_errors:increase6h",
             '          ),\n          "slo_term", "4", "", ""\n',
             '          ),\n          "slo_term", "3", "", ""\n'),
    Mutation("6h errors: a piece summed from the totals", "slo:sli_errors:increase6h",
             "slo:sli_errors:increase30m" + OWN + " offset 2h30m,",
             "slo:sli_total:increase30m" + OWN + " offset 2h30m,"),
]
# fmt: on


Proc = subprocess.CompletedProcess[str]
Runs = dict[str, tuple[Proc, Proc]]  # by rule text: (check rules, test rules)


def _promtool(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["promtool", *args], cwd=root, capture_output=True, text=True, check=False, timeout=120
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 6-hour SLO built once, with the check file beside its rules."""
    rules = rendered_rules(tmp_path_factory.mktemp("spec"), {"specs/shop.yaml": SPEC})
    (rules / "fallbacks.test.yml").write_text(_check_file())
    return rules


@pytest.fixture(scope="module")
def runs(built: Path, tmp_path_factory: pytest.TempPathFactory) -> Runs:
    """``promtool check rules`` and ``test rules`` for the rules as built, with every
    fallback engaged, and for each mutant of the latter; two at a time."""
    missed = _missed((built / RULES).read_text())
    texts: dict[str, str | None] = {"as built": None, "missed": missed}
    texts |= {m.broken: m.apply(missed) for m in MUTATIONS}
    roots = {name: tmp_path_factory.mktemp("run") for name in texts}
    for name, text in texts.items():
        shutil.copytree(built, roots[name], dirs_exist_ok=True)
        if text is not None:
            (roots[name] / RULES).write_text(text)

    def run(name: str) -> tuple[Proc, Proc]:
        checked = _promtool(roots[name], "check", "rules", RULES)
        return checked, _promtool(roots[name], "test", "rules", "fallbacks.test.yml")

    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {name: pool.submit(run, name) for name in texts}
        return {name: future.result() for name, future in futures.items()}


@pytest.mark.parametrize("name", ["as built", "missed"])
def test_every_window_equals_the_sum_of_its_base_terms(name: str, runs: Runs) -> None:
    checked, tested = runs[name]
    assert checked.returncode == 0, checked.stderr
    assert tested.returncode == 0, tested.stdout + tested.stderr


@pytest.mark.parametrize("mutation", MUTATIONS, ids=[m.broken for m in MUTATIONS])
def test_a_mutated_fallback_fails_the_check(mutation: Mutation, runs: Runs) -> None:
    checked, tested = runs[mutation.broken]
    assert checked.returncode == 0, checked.stderr  # still valid rules: only the values differ
    assert tested.returncode != 0, f"{mutation.broken}: not caught"
    assert "FAILED" in tested.stdout + tested.stderr
