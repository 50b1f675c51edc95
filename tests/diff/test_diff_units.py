"""The diff's pure pieces: values printed in the spec's units, long values cut to what
differs, field order across versions, and the comparison of two versions' facts."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import write_tree

from rulegen.catalog import load_catalog
from rulegen.diff.compare import compare, merged_order
from rulegen.diff.facts import AlertKey
from rulegen.diff.report import excerpt
from rulegen.diff.versions import build_version
from rulegen.load import discover

# (case, alert entry, field, how the diff prints it)
UNITS = [
    ("a latency threshold in ms", "{signal: disk_await, threshold: 0.005s, severity: info}",
     "threshold", "5ms"),
    ("a latency threshold in seconds", "{signal: ttft_latency, threshold: 1500ms, severity: info}",
     "threshold", "1.5s"),
    ("a percentage written as a fraction", "{signal: disk_utilization, threshold: 0.8, "
     "severity: info}", "threshold", "80%"),
    ("a small percentage", "{signal: network_drops, threshold: 0.1%, severity: info}",
     "threshold", "0.1%"),
    ("a plain number", "{signal: requests_waiting, threshold: 20, severity: info}",
     "threshold", "20"),
    ("a link speed in bytes per second", "{signal: network_saturation, threshold: 80%, "
     "link_speed: 3125000000, severity: info}", "link_speed", "25Gbps"),
    ("a quantile", "{signal: e2e_latency, threshold: 30s, quantile: 0.95, severity: info}",
     "quantile", "0.95"),
    ("a default window", "{signal: disk_await, threshold: 5ms, severity: info}", "window", "1m"),
    ("a window in seconds", "{signal: disk_await, threshold: 5ms, window: 120s, severity: info}",
     "window", "2m"),
    ("for in seconds", "{signal: disk_await, threshold: 5ms, for: 90s, severity: info}",
     "for", "1m30s"),
    ("the matchers, the spec's selector first", "{signal: disk_await, threshold: 5ms, "
     "matchers: 'device=~\"nvme.+\"', severity: info}", "matchers",
     'job="node", device=~"nvme.+"'),
    ("a custom alert's threshold", "{signal: custom, name: Hot, expr: 'max(t) > 85.5', "
     "severity: info}", "threshold", "85.5"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("entry", "name", "shown"), [u[1:] for u in UNITS], ids=[u[0] for u in UNITS]
)
def test_values_print_in_the_specs_units(tmp_path: Path, entry: str, name: str, shown: str) -> None:
    spec = f"version: 1\nservice: web\nselectors: {{node: 'job=\"node\"'}}\nalerts:\n  - {entry}\n"
    write_tree(tmp_path, {"web.yaml": spec})
    version = build_version("current", discover([tmp_path / "web.yaml"]), load_catalog())
    (facts,) = version.facts["web"].alerts.values()
    assert facts.fields[name] == shown


TAIL = " summary of a disk that is far too busy for far too long, on every host we have"
EXCERPTS = [
    ("short values are shown whole", "5ms", "10ms", ("5ms", "10ms")),
    ("a missing side stays missing", None, "10ms", (None, "10ms")),
    ("a long value is cut to the words around the change",
     "Disk I/O await above 5ms on {{ $labels.instance }} ({{ $labels.device }}) for a while now",
     "Disk I/O await above 10ms on {{ $labels.instance }} ({{ $labels.device }}) for a while now",
     ("…await above 5ms on {{ $labels.instance…", "…await above 10ms on {{ $labels.instance…")),
    ("a change at the start has no leading ellipsis", "a" * 70 + " end", "b" * 70 + " end",
     None),
    ("a change at the start of a long value", "Old" + TAIL, "New" + TAIL,
     ("Old summary of a…", "New summary of a…")),
    ("changes far apart are only named", "x " * 40 + "y", "z " + "x " * 39 + "w", None),
    ("a long value that appears is only named", None, "word " * 20, None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("old", "new", "shown"), [e[1:] for e in EXCERPTS], ids=[e[0] for e in EXCERPTS]
)
def test_long_values_are_cut_to_what_differs(
    old: str | None, new: str | None, shown: tuple[str | None, str | None] | None
) -> None:
    assert excerpt(old, new) == shown


ORDERS = [
    ("the same fields keep their order", ["a", "b", "c"], ["a", "b", "c"], ["a", "b", "c"]),
    ("a removed field stays after its neighbour", ["threshold", "window", "for"],
     ["threshold", "for"], ["threshold", "window", "for"]),
    ("an added field is where the new version has it", ["threshold", "for"],
     ["threshold", "window", "for"], ["threshold", "window", "for"]),
    ("a removed first field stays first", ["x", "a"], ["a"], ["x", "a"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("old", "new", "merged"), [o[1:] for o in ORDERS], ids=[o[0] for o in ORDERS]
)
def test_fields_of_both_versions_in_one_order(
    old: list[str], new: list[str], merged: list[str]
) -> None:
    assert merged_order(old, new) == merged


def test_a_changed_signal_definition_is_reported_as_expr(tmp_path: Path) -> None:
    """No spec field changed, but the rule did (a team's signal template was edited): the diff
    names the expression, so the change is never silent."""
    signal = """\
signal: queue_depth
alert: QueueDeep
family: vllm
about: Queue depth.
threshold: {unit: number, op: ">"}
defaults: {window: null, for: 1m}
record: null
expr: |
  max by (instance) (queue_depth{{ sel() }})
summary: "[[ value ]] queued"
description: "[[ value ]] queued; the threshold is [[ threshold ]] for [[ for ]]."
test:
  settle: instant
  labels: {instance: "node-{n}"}
  vary: instance
  series:
    - {name: queue_depth, value: "q"}
"""
    spec = "version: 1\nservice: web\nalerts:\n  - {signal: queue_depth, threshold: 5, "
    spec += "severity: info}\n"
    write_tree(tmp_path, {"old/q.yaml": signal, "new/q.yaml": signal.replace("max by", "sum by"),
                          "web.yaml": spec})  # fmt: skip
    versions = [
        build_version(name, discover([tmp_path / "web.yaml"]), load_catalog([tmp_path / name]))
        for name in ("old", "new")
    ]
    diff = compare(versions[0].facts, versions[1].facts, "old")
    (alert,) = diff.services[0].alerts
    assert (alert.key, alert.change) == (AlertKey("QueueDeep"), "changed")
    assert [(c.name, c.old, c.new) for c in alert.fields] == [
        ("expr", "(max by (instance) (queue_depth)) > 5", "(sum by (instance) (queue_depth)) > 5")
    ]
