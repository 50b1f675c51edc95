"""Broken ``ha:`` settings: one exact ``FILE:LINE:COL: path: message`` line per error, exit 2,
nothing written.

Why each is refused: the alerting block rulegen writes drops the replica label from every
alert a replica sends, so a label the generated alerts carry (one rulegen sets, one the series
give them, one of the spec's ``labels``) cannot be it, nor a name the declared Prometheus
refuses as an external label. The lines are literal on purpose: a reviewer can check each
line and column against the YAML right above it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import CliResult, spec_errors, write_tree

Cli = Callable[..., CliResult]

SENTINEL = {"rules/prometheus/x.rules.yml": "# sentinel: must survive a failed build\ngroups: []\n"}
ALERT = "  - {signal: disk_await, threshold: 5ms, severity: warning}\n"
LABEL = "cannot be the replica label"
CARRIED = (
    "the generated alerts carry it, and the replicas drop the replica label from every alert "
    "they send; choose a label only the replicas' external_labels set"
)


def spec(ha: str, *, before: str = "", alerts: str = ALERT) -> str:
    """``specs/web.yaml`` with ``ha`` on line 3 (after ``version`` and ``service``)."""
    return f"version: 1\nservice: web\nha: {ha}\n{before}alerts:\n{alerts}"


@dataclass(frozen=True)
class Case:
    """One broken input: ``files`` by path, the exact stderr."""

    behaviour: str
    files: Mapping[str, str]
    stderr: tuple[str, ...] = field(default_factory=tuple)


CASES = [
    Case(
        "a label starting with __ is Prometheus' own",
        {"specs/web.yaml": spec("{replica_label: __replica__}")},
        spec_errors(
            f"specs/web.yaml:3:21: ha.replica_label: '__replica__' {LABEL}: labels starting "
            "with __ are reserved for Prometheus' internal use"
        ),
    ),
    Case(
        "instance: the series give it to the alerts (group_by, inhibitions use it)",
        {"specs/web.yaml": spec("{replica_label: instance}")},
        spec_errors(f"specs/web.yaml:3:21: ha.replica_label: 'instance' {LABEL}: {CARRIED}"),
    ),
    Case(
        "severity: rulegen sets it on every alert",
        {"specs/web.yaml": spec("{replica_label: severity}")},
        spec_errors(f"specs/web.yaml:3:21: ha.replica_label: 'severity' {LABEL}: {CARRIED}"),
    ),
    Case(
        "service: rulegen sets it on every alert and recording",
        {"specs/web.yaml": spec("{replica_label: service}")},
        spec_errors(f"specs/web.yaml:3:21: ha.replica_label: 'service' {LABEL}: {CARRIED}"),
    ),
    Case(
        "host: the default host label the diagnoses' inhibitions match on",
        {"specs/web.yaml": spec("{replica_label: host}")},
        spec_errors(f"specs/web.yaml:3:21: ha.replica_label: 'host' {LABEL}: {CARRIED}"),
    ),
    Case(
        "the spec's own host_label",
        {"specs/web.yaml": spec("{replica_label: node}", before="host_label: node\n")},
        spec_errors(f"specs/web.yaml:3:21: ha.replica_label: 'node' {LABEL}: {CARRIED}"),
    ),
    Case(
        "slo: every SLO alert carries it",
        {"specs/web.yaml": spec("{replica_label: slo}")},
        spec_errors(f"specs/web.yaml:3:21: ha.replica_label: 'slo' {LABEL}: {CARRIED}"),
    ),
    Case(
        "one of the spec's labels",
        {"specs/web.yaml": spec("{replica_label: team}", before="labels: {team: web}\n")},
        spec_errors(f"specs/web.yaml:3:21: ha.replica_label: 'team' {LABEL}: {CARRIED}"),
    ),
    Case(
        "an alert's own label of that name is refused at the alert",
        {
            "specs/web.yaml": spec(
                "{replica_label: replica}",
                alerts="  - {signal: disk_await, threshold: 5ms, severity: warning,\n"
                "     labels: {replica: x}}\n",
            )
        },
        spec_errors(
            "specs/web.yaml:5:5: alerts[0]: DiskAwaitHigh carries the label 'replica', which "
            "ha.replica_label (specs/web.yaml:3:21) drops from every alert the replicas send: "
            "rename one"
        ),
    ),
    Case(
        "another spec's replica label on an alert of an HA service is refused too",
        {
            "specs/a.yaml": "version: 1\nservice: a\nha: {replica_label: replica}\n"
            f"alerts:\n{ALERT}",
            "specs/web.yaml": spec(
                "{replica_label: prometheus_replica}",
                alerts="  - {signal: disk_await, threshold: 5ms, severity: warning,\n"
                "     labels: {replica: x}}\n",
            ),
        },
        spec_errors(
            "specs/web.yaml:5:5: alerts[0]: DiskAwaitHigh carries the label 'replica', which "
            "ha.replica_label (specs/a.yaml:3:21) drops from every alert the replicas send: "
            "rename one"
        ),
    ),
    Case(
        "a UTF-8 name under Prometheus 2.x",
        {
            "specs/web.yaml": spec(
                "{replica_label: k8s.replica}", before='prometheus: {version: "2.42"}\n'
            )
        },
        spec_errors(
            f"specs/web.yaml:3:21: ha.replica_label: 'k8s.replica' {LABEL}: the UTF-8 name(s) "
            '"k8s.replica" need Prometheus 3.0 or later (prometheus.version is 2.42); rename '
            "them or declare a 3.x version"
        ),
    ),
    Case(
        "a name with a space, even under Prometheus 3",
        {
            "specs/web.yaml": spec(
                "{replica_label: 'my replica'}", before='prometheus: {version: "3.5"}\n'
            )
        },
        spec_errors(
            f"specs/web.yaml:3:21: ha.replica_label: 'my replica' {LABEL}: not a label name "
            "rulegen can write (no space, quote, backslash, brace, % or $)"
        ),
    ),
    Case(
        "an empty name",
        {"specs/web.yaml": spec("{replica_label: ''}")},
        spec_errors("specs/web.yaml:3:21: ha.replica_label: must not be empty"),
    ),
    Case(
        "no replica_label",
        {"specs/web.yaml": spec("{}")},
        spec_errors("specs/web.yaml:3:5: ha: replica_label: required field is missing"),
    ),
    Case(
        "a misspelt key is named with the right one",
        {"specs/web.yaml": spec("{replica_lable: replica}")},
        spec_errors(
            "specs/web.yaml:3:5: ha: replica_label: required field is missing",
            'specs/web.yaml:3:6: ha.replica_lable: unknown key; did you mean "replica_label"?',
        ),
    ),
    Case(
        "ha as a plain value",
        {"specs/web.yaml": spec("replica")},
        spec_errors("specs/web.yaml:3:5: ha: must be a mapping (got 'replica')"),
    ),
    Case(
        "in a defaults file: reported at the defaults file's line, for the spec that extends it",
        {
            "specs/defaults.yaml": "version: 1\ndefaults:\n  ha: {replica_label: instance}\n",
            "specs/web.yaml": f"version: 1\nservice: web\nextends: defaults.yaml\nalerts:\n{ALERT}",
        },
        spec_errors(
            f"specs/defaults.yaml:3:23: ha.replica_label: 'instance' {LABEL}: {CARRIED} "
            "(inherited by specs/web.yaml from defaults.ha.replica_label)"
        ),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case.behaviour for case in CASES])
def test_broken_ha_is_reported_exactly_and_writes_nothing(
    case: Case, in_tmp: Path, cli: Cli
) -> None:
    write_tree(in_tmp, {**SENTINEL, **case.files})
    before = {p: p.read_bytes() for p in (in_tmp / "rules").rglob("*") if p.is_file()}

    result = cli("build", "--no-validate")

    assert result.err.splitlines() == list(case.stderr)
    assert result.code == 2
    assert result.out == ""
    after = {p: p.read_bytes() for p in (in_tmp / "rules").rglob("*") if p.is_file()}
    assert after == before
