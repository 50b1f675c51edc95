"""Fleets: ``extends:`` merges shared defaults under a spec, and every error names the line.

Every case runs ``rulegen build --no-validate`` in-process on a small tree: what a spec
inherits (service keys, per-signal alert defaults, SLO defaults), how it overrides (maps
merge, lists replace), chains, and the exact one-line error of each broken chain, positioned
where the bad value was written. Then the build side: a defaults file is not built, the
manifest and ``--check`` see it, the test cache key changes with it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from conftest import CliResult, spec_errors, write_tree

from rulegen.catalog import load_catalog
from rulegen.load import vocabulary
from rulegen.slo.rules import INCOMPLETE
from rulegen.source.extends import PER_ALERT
from rulegen.validate.cache import TestCache

Cli = Callable[..., CliResult]

DEFAULTS = """
    version: 1
    defaults:
      labels: {team: inference, env: prod}
      runbook_url: https://runbooks.example.com/{alert}
      evaluation_interval: 15s
      alerts:
        disk_await:
          threshold: 5ms
          for: 5m
          severity: warning
          labels: {team: storage}
      slos:
        window: 7d
        alerting:
          page: {severity: critical}
          labels: {channel: pager}
        tiers:
          - {long: 1h, short: 5m, budget: 2%, alert: page}
          - {long: 6h, short: 30m, budget: 5%, alert: ticket}
    """

SLO = """
      - name: availability
        objective: 99.9%
        sli:
          ratio: {errors: 'http_requests_total{code=~"5.."}', total: http_requests_total}
    """

SPEC = (
    """
    version: 1
    service: web
    extends: defaults.yaml
    labels: {env: staging}
    alerts:
      - signal: disk_await
        threshold: 10ms
      - signal: disk_await
        name: DiskAwaitPage
        severity: critical
        labels: {pager: "yes"}
    slos:
    """
    + SLO
)


def _rules(root: Path, name: str = "web") -> dict[str, dict[str, object]]:
    """Every rule of ``rules/prometheus/<name>.rules.yml`` by its alert or record name,
    with its group's interval."""
    text = (root / f"rules/prometheus/{name}.rules.yml").read_text(encoding="utf-8")
    out: dict[str, dict[str, object]] = {}
    for group in yaml.safe_load(text)["groups"]:
        for rule in group["rules"]:
            key = rule.get("alert") or rule["record"]
            out.setdefault(key, {**rule, "interval": group.get("interval")})
    return out


def _slo_rules(root: Path) -> list[dict[str, object]]:
    text = (root / "rules/prometheus/web.slo.availability.rules.yml").read_text(encoding="utf-8")
    groups = yaml.safe_load(text)["groups"]
    return [{**r, "interval": g.get("interval")} for g in groups for r in g["rules"]]


@pytest.mark.usefixtures("in_tmp")
def test_a_spec_inherits_service_keys_alert_and_slo_defaults(cli: Cli, in_tmp: Path) -> None:
    write_tree(in_tmp, {"specs/defaults.yaml": DEFAULTS, "specs/web.yaml": SPEC})
    result = cli("build", "--no-validate")
    assert result.code == 0, result.err
    rules = _rules(in_tmp)
    own, named = rules["DiskAwaitHigh"], rules["DiskAwaitPage"]
    # the spec's threshold wins; for, severity and labels come from the signal's defaults;
    # the service labels merge (env from the spec, team from the defaults)
    assert own["expr"] == 'instance_device:node_disk_await_seconds:rate1m{service="web"} > 0.01'
    assert (own["for"], own["interval"]) == ("5m", "15s")
    assert own["labels"] == {"service": "web", "severity": "warning", "team": "storage",
                             "env": "staging"}  # fmt: skip
    assert own["annotations"]["runbook_url"] == "https://runbooks.example.com/DiskAwaitHigh"  # type: ignore[index]  # a YAML mapping
    assert named["expr"] == 'instance_device:node_disk_await_seconds:rate1m{service="web"} > 0.005'
    assert named["labels"] == {"service": "web", "severity": "critical", "team": "storage",
                               "pager": "yes", "env": "staging"}  # fmt: skip
    alerts = [r for r in _slo_rules(in_tmp) if r.get("alert") not in (None, INCOMPLETE)]
    assert [(a["labels"]["severity"], a["labels"]["channel"]) for a in alerts] == [  # type: ignore[index]  # a YAML mapping
        ("critical", "pager"),
        ("warning", "pager"),
    ]
    assert "slo:sli_error:ratio_rate7d" in {r.get("record") for r in _slo_rules(in_tmp)}


OVERRIDES = [
    pytest.param(
        "slos:\n  - name: availability\n    objective: 99.9%\n    sli: {ratio: {errors: e_total, "
        "total: t_total}}\n    tiers: [{long: 2h, short: 10m, budget: 3%, alert: page}]\n",
        1,
        id="a list (tiers) replaces the inherited one",
    ),
    pytest.param(
        "slos:\n  - name: availability\n    objective: 99.9%\n    sli: {ratio: {errors: e_total, "
        "total: t_total}}\n    alerting: {ticket: {enabled: false}}\n",
        1,
        id="a map (alerting) merges key by key: the page stays, the ticket goes",
    ),
]


@pytest.mark.usefixtures("in_tmp")
@pytest.mark.parametrize(("slos", "alerts"), OVERRIDES)
def test_the_spec_overrides_key_by_key(cli: Cli, in_tmp: Path, slos: str, alerts: int) -> None:
    spec = "version: 1\nservice: web\nextends: defaults.yaml\n" + slos
    write_tree(in_tmp, {"specs/defaults.yaml": DEFAULTS, "specs/web.yaml": spec})
    result = cli("build", "--no-validate")
    assert result.code == 0, result.err
    fired = [r for r in _slo_rules(in_tmp) if r.get("alert") not in (None, INCOMPLETE)]
    assert len(fired) == alerts
    assert fired[0]["labels"]["severity"] == "critical"  # type: ignore[index]  # a YAML mapping


@pytest.mark.usefixtures("in_tmp")
def test_a_chain_applies_the_nearest_file_last(cli: Cli, in_tmp: Path) -> None:
    write_tree(
        in_tmp,
        {
            "base/org.yaml": """
                version: 1
                defaults:
                  labels: {org: acme, team: platform}
                  scrape_interval: 30s
                  evaluation_interval: 1m
                """,
            "specs/defaults.yaml": """
                version: 1
                extends: ../base/org.yaml
                defaults:
                  labels: {team: inference}
                  evaluation_interval: 30s
                """,
            "specs/web.yaml": """
                version: 1
                service: web
                extends: defaults.yaml
                alerts:
                  - {signal: custom, name: WebDown, expr: up == 0, severity: warning}
                """,
        },
    )
    result = cli("build", "--no-validate")
    assert result.code == 0, result.err
    down = _rules(in_tmp)["WebDown"]
    assert down["labels"] == {"service": "web", "severity": "warning", "org": "acme",
                              "team": "inference"}  # fmt: skip
    assert down["interval"] == "30s"
    manifest = json.loads((in_tmp / "rules/.rulegen-manifest.json").read_text())
    assert manifest["files"]["prometheus/web.rules.yml"]["sources"] == [
        "specs/web.yaml",
        "specs/defaults.yaml",
        "base/org.yaml",
    ]


GOOD_ALERT = "alerts:\n  - {signal: custom, name: WebDown, expr: up == 0, severity: warning}\n"


def _spec(extends: str = "defaults.yaml", body: str = GOOD_ALERT) -> str:
    return f"version: 1\nservice: web\nextends: {extends}\n{body}"


@dataclass(frozen=True)
class Broken:
    behaviour: str
    files: Mapping[str, str]
    stderr: tuple[str, ...]
    argv: tuple[str, ...] = field(default=())


# What a defaults file may set comes from the spec's models (other keys may join them).
WORDS = vocabulary(load_catalog([]))  # the built-in signals: the trees have no signals/
SERVICE_KEYS = ", ".join(sorted(WORDS.service | {"alerts", "slos"}))
CUSTOM_KEYS = ", ".join(sorted(WORDS.alert["custom"] - PER_ALERT))
SIGNALS = ", ".join(sorted(WORDS.alert))

DISK = "alerts:\n  - {signal: disk_await, severity: warning}\n"
BROKEN = [
    Broken(
        "a wrong threshold type inherited from defaults.yaml points at its line there",
        {
            "specs/defaults.yaml": "version: 1\ndefaults:\n  alerts:\n    disk_await:\n"
            "      for: 5m\n      severity: warning\n      threshold: [5]\n",
            "specs/web.yaml": _spec(body=DISK),
        },
        spec_errors(
            "specs/defaults.yaml:7:18: alerts[0].threshold: expected a duration like 5ms or 2s, "
            "got [5] (inherited by specs/web.yaml from defaults.alerts.disk_await.threshold)"
        ),
    ),
    Broken(
        "an inherited service key of the wrong type points at the defaults file",
        {
            "specs/defaults.yaml": "version: 1\ndefaults:\n  labels: [a, b]\n",
            "specs/web.yaml": _spec(),
        },
        spec_errors(
            "specs/defaults.yaml:3:11: labels: must be a mapping (got a list) "
            "(inherited by specs/web.yaml from defaults.labels)"
        ),
    ),
    Broken(
        "a bad value two files up the chain names that file",
        {
            "specs/base.yaml": "version: 1\ndefaults:\n  evaluation_interval: soon\n",
            "specs/defaults.yaml": "version: 1\nextends: base.yaml\ndefaults: {}\n",
            "specs/web.yaml": _spec(),
        },
        spec_errors(
            "specs/base.yaml:3:24: evaluation_interval: invalid duration 'soon' (expected "
            "Prometheus syntax like 30s, 5m, 1h) (inherited by specs/web.yaml from "
            "defaults.evaluation_interval)"
        ),
    ),
    Broken(
        "a missing extends target is an error at the extends value",
        {"specs/web.yaml": _spec("../shared/defaults.yaml")},
        spec_errors(
            "specs/web.yaml:3:10: extends: cannot read ../shared/defaults.yaml: no such file"
        ),
    ),
    Broken(
        "an absolute extends path is refused",
        {"specs/web.yaml": _spec("/etc/defaults.yaml")},
        spec_errors(
            "specs/web.yaml:3:10: extends: must be a path relative to this file "
            "(got '/etc/defaults.yaml')"
        ),
    ),
    Broken(
        "extends must name a YAML file",
        {"specs/web.yaml": _spec("../README.md")},
        spec_errors(
            "specs/web.yaml:3:10: extends: must name a .yaml or .yml file (got '../README.md')"
        ),
    ),
    Broken(
        "a folder is not a defaults file",
        {"specs/web.yaml": _spec("sub.yaml"), "specs/sub.yaml/x": ""},
        spec_errors("specs/web.yaml:3:10: extends: cannot read sub.yaml: not a regular file"),
    ),
    Broken(
        "a cycle is an error naming the chain",
        {
            "specs/defaults.yaml": "version: 1\nextends: base.yaml\ndefaults: {}\n",
            "specs/base.yaml": "version: 1\nextends: defaults.yaml\ndefaults: {}\n",
            "specs/web.yaml": _spec(),
        },
        spec_errors(
            "specs/base.yaml:2:10: extends: a cycle of defaults files: specs/web.yaml -> "
            "specs/defaults.yaml -> specs/base.yaml -> specs/defaults.yaml"
        ),
    ),
    Broken(
        "extending a service spec is an error",
        {
            "specs/other.yaml": "version: 1\nservice: other\n" + GOOD_ALERT,
            "specs/web.yaml": _spec("other.yaml"),
        },
        spec_errors(
            "specs/web.yaml:3:10: extends: other.yaml is not a defaults file (a mapping with "
            "defaults: and no service:)"
        ),
    ),
    Broken(
        "service cannot have a default, an unknown key is named, and the version is checked",
        {
            "specs/defaults.yaml": "version: 2\ndefaults:\n  service: x\n  colour: red\n"
            "  alerts: {disk_wait: {threshold: 5ms}}\n",
            "specs/web.yaml": _spec(),
        },
        spec_errors(
            "specs/defaults.yaml:1:10: version: must be 1 (got 2)",
            "specs/defaults.yaml:3:3: defaults.service: cannot have a default: each spec names "
            "its own service",
            "specs/defaults.yaml:4:3: defaults.colour: unknown key (a default may be set for: "
            f"{SERVICE_KEYS})",
            "specs/defaults.yaml:5:12: defaults.alerts.disk_wait: unknown signal 'disk_wait' "
            f"(known: {SIGNALS})",
        ),
    ),
    Broken(
        "a per-alert key (name) and an SLO's own key (sli) cannot be defaults",
        {
            "specs/defaults.yaml": "version: 1\ndefaults:\n  alerts: {custom: {name: X}}\n"
            "  slos: {sli: {}}\n",
            "specs/web.yaml": _spec(),
        },
        spec_errors(
            "specs/defaults.yaml:3:21: defaults.alerts.custom.name: unknown key (keys a custom "
            f"alert default may set: {CUSTOM_KEYS})",
            "specs/defaults.yaml:4:10: defaults.slos.sli: unknown key (keys an SLO default may "
            "set: alerting, evaluation_interval, group_by, objective, tiers, window)",
        ),
    ),
    Broken(
        "a broken defaults file shared by two specs is reported once",
        {
            "specs/defaults.yaml": "version: 1\ndefaults: {colour: red}\n",
            "specs/web.yaml": _spec(),
            "specs/api.yaml": _spec().replace("service: web", "service: api"),
        },
        spec_errors(
            "specs/defaults.yaml:2:12: defaults.colour: unknown key (a default may be set for: "
            f"{SERVICE_KEYS})"
        ),
    ),
    Broken(
        "a defaults file named on the command line alone builds nothing",
        {"specs/defaults.yaml": DEFAULTS},
        (
            "rulegen: error: specs/defaults.yaml: a defaults file (defaults: and no service:) "
            "builds nothing by itself; build the specs that extend it",
        ),
        ("specs/defaults.yaml",),
    ),
]


@pytest.mark.usefixtures("in_tmp")
@pytest.mark.parametrize("case", BROKEN, ids=[c.behaviour for c in BROKEN])
def test_a_broken_chain_is_one_exact_line_per_error(cli: Cli, in_tmp: Path, case: Broken) -> None:
    write_tree(in_tmp, case.files)
    result = cli("build", "--no-validate", *case.argv)
    assert (result.code, result.err.splitlines(), result.out) == (2, list(case.stderr), "")
    assert not (in_tmp / "rules").exists()


@pytest.mark.usefixtures("in_tmp")
def test_a_chain_longer_than_sixteen_files_is_refused(cli: Cli, in_tmp: Path) -> None:
    files = {f"specs/d{i}.yaml": f"version: 1\nextends: d{i + 1}.yaml\ndefaults: {{}}\n"
             for i in range(17)}  # fmt: skip
    files["specs/d17.yaml"] = "version: 1\ndefaults: {}\n"
    files["specs/web.yaml"] = _spec("d0.yaml")
    write_tree(in_tmp, files)
    result = cli("build", "--no-validate")
    assert result.code == 2
    chain = " -> ".join(["specs/web.yaml", *(f"specs/d{i}.yaml" for i in range(16))])
    assert result.err.splitlines()[0] == (
        f"specs/d15.yaml:2:10: extends: more than 16 defaults files in one chain ({chain} -> ...)"
    )


@pytest.mark.usefixtures("in_tmp")
def test_a_defaults_file_in_a_spec_folder_is_not_built(cli: Cli, in_tmp: Path) -> None:
    write_tree(in_tmp, {"specs/defaults.yaml": DEFAULTS, "specs/web.yaml": SPEC})
    result = cli("build", "--no-validate")
    assert (result.code, result.err) == (0, "")
    assert sorted(p.name for p in (in_tmp / "rules/prometheus").iterdir()) == [
        "web.rules.yml",
        "web.slo.availability.rules.yml",
    ]
    named = cli("build", "--no-validate", "specs/defaults.yaml", "specs/web.yaml")
    assert named.code == 0
    assert named.err == (
        "rulegen: warning: specs/defaults.yaml: skipped: a defaults file (defaults: and no "
        "service:) builds nothing by itself; build the specs that extend it\n"
    )


@pytest.mark.usefixtures("in_tmp")
def test_the_manifest_and_check_see_an_edit_of_the_defaults_file_alone(
    cli: Cli, in_tmp: Path
) -> None:
    write_tree(in_tmp, {"specs/defaults.yaml": DEFAULTS, "specs/web.yaml": SPEC})
    assert cli("build", "--no-validate").code == 0
    manifest = json.loads((in_tmp / "rules/.rulegen-manifest.json").read_text())
    sources = {name: entry["sources"] for name, entry in manifest["files"].items()}
    assert sources["prometheus/web.rules.yml"] == ["specs/web.yaml", "specs/defaults.yaml"]
    assert sources["tests/web.test.yml"] == ["specs/web.yaml", "specs/defaults.yaml"]
    assert sources["grafana/provisioning.yaml"] == ["specs/web.yaml"]
    assert cli("build", "--check", "--no-validate").code == 0
    edited = DEFAULTS.replace("for: 5m", "for: 10m")
    write_tree(in_tmp, {"specs/defaults.yaml": edited})
    stale = cli("build", "--check", "--no-validate")
    assert stale.code == 1
    assert "rules/prometheus/web.rules.yml" in stale.err
    assert "+    for: 10m" in stale.out


@pytest.mark.usefixtures("in_tmp")
def test_the_test_cache_key_changes_with_the_defaults_file(cli: Cli, in_tmp: Path) -> None:
    """The key hashes the test file and the rule files it loads, which the defaults change."""
    cache = TestCache(in_tmp / "cache", "promtool 2.42")
    keys = []
    for defaults in (DEFAULTS, DEFAULTS.replace("threshold: 5ms", "threshold: 7ms")):
        write_tree(in_tmp, {"specs/defaults.yaml": defaults, "specs/web.yaml": SPEC})
        assert cli("build", "--no-validate").code == 0
        keys.append(cache.key(in_tmp / "rules", "tests/web.test.yml"))
    assert None not in keys
    assert keys[0] != keys[1]
