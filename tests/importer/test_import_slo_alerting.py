"""The SLO importers' alerting settings per alert (issue 31): Sloth's labels and annotations of
the page or the ticket alone become ``alerting.page``/``ticket``'s own, and Pyrra's absent
alert becomes ``alerting.absent`` with Pyrra's name, severity and ``for``
(``AbsentDuration()``). What cannot be carried (a label rulegen sets, a Go template, an
annotation rulegen writes) is refused at its line; what is imported builds.

The promtool proof that the imported absent alert fires when Pyrra's does is
``test_import_slo_promtool.py``.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest
import yaml
from conftest import CliResult, write_tree

from rulegen.build import build
from rulegen.catalog import load_catalog
from rulegen.importer import pyrra, sloth
from rulegen.importer.model import ImportOptions, ImportResult
from rulegen.load import discover

ANCHORS = Path(__file__).resolve().parent / "data" / "anchors"


def _import(module: object, tmp_path: Path, name: str, text: str) -> tuple[ImportResult, str]:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    result: ImportResult = module.import_files([path], ImportOptions())  # type: ignore[attr-defined]
    return result, str(path)


def _notes(result: ImportResult, kind: str, prefix: str) -> list[str]:
    return [str(n).removeprefix(prefix) for n in getattr(result, kind)]


def _builds(result: ImportResult, tmp_path: Path) -> list[str]:
    """Every imported spec built (render only): the files it writes."""
    out = tmp_path / "built"
    out.mkdir()
    for service in result.services:
        text = yaml.safe_dump(service.document, sort_keys=False, allow_unicode=True)
        (out / f"{service.service}.yaml").write_text(text, encoding="utf-8")
    return sorted(build(discover([out]), load_catalog([]), jobs=1).files)


SLOTH = """\
version: "prometheus/v1"
service: shop
slos:
  - name: checkout
    objective: 99.9
    sli:
      events:
        error_query: sum(rate(http_requests_total{code=~"5.."}[{{.window}}])) by (region)
        total_query: sum(rate(http_requests_total[{{.window}}])) by (region)
    alerting:
      name: CheckoutBurn
      labels: {team: shop}
      annotations:
        dashboard: https://grafana.example.com/d/checkout
        summary: mine
      page_alert:
        labels: {severity: critical, pager: oncall, slo: x, region: eu, empty: ''}
        annotations:
          dashboard: https://grafana.example.com/d/checkout-page
          hint: '{{ $labels.region }} is down'
          description: mine
          count: 3
      ticket_alert:
        labels: {queue: shop}
        annotations: {playbook: open a ticket}
  - name: search
    objective: 99
    sli:
      events:
        error_query: sum(rate(search_total{code=~"5.."}[{{.window}}]))
        total_query: sum(rate(search_total[{{.window}}]))
    alerting:
      name: SearchBurn
      ticket_alert: {disable: true, labels: {queue: search}}
"""


def test_sloth_labels_and_annotations_of_one_alert_are_that_alerts_own(tmp_path: Path) -> None:
    result, name = _import(sloth, tmp_path, "slos.yml", SLOTH)
    [service] = result.services
    checkout, search = service.document["slos"]
    assert checkout["alerting"] == {
        "name": "CheckoutBurn",
        "page": {
            "labels": {"pager": "oncall"},
            # the page's own annotation over the one of both alerts; the source's summary and
            # description kept beside rulegen's
            "annotations": {
                "dashboard": "https://grafana.example.com/d/checkout-page",
                "source_description": "mine",
                "source_summary": "mine",
            },
        },
        "ticket": {
            "labels": {"queue": "shop"},
            "annotations": {
                "dashboard": "https://grafana.example.com/d/checkout",
                "playbook": "open a ticket",
                "source_summary": "mine",
            },
        },
        "labels": {"team": "shop"},
    }
    # a disabled ticket carries nothing of its own
    assert search["alerting"] == {"name": "SearchBurn", "ticket": {"enabled": False}}
    assert service.comments[("slos", 0, "alerting", "ticket")] == (
        "Sloth's ticket alert labels and annotations: the ticket's own"
    )
    assert _notes(result, "refused", name) == [
        ":17: slos[0].alerting.page_alert.labels.slo: rulegen sets slo on the page itself; "
        "left out",
        ":17: slos[0].alerting.page_alert.labels.region: rulegen sets region on the page "
        "itself; left out",
        ":17: slos[0].alerting.page_alert.labels.empty: an empty label value (Prometheus "
        "drops the label); left out",
        ":20: slos[0].alerting.page_alert.annotations.hint: a Go template: rulegen writes an "
        "alert's own annotations as literal text; left out",
        ":22: slos[0].alerting.page_alert.annotations.count: an annotation is a string (got "
        "3); left out",
    ]
    assert (
        ":14: slos[0].alerting.annotations.dashboard: an annotation of both alerts: on the page "
        "and on the ticket (alerting.page.annotations, alerting.ticket.annotations)"
    ) in _notes(result, "adapted", name)
    assert "prometheus/shop.slo.checkout.rules.yml" in _builds(result, tmp_path)


def _pyrra(alerting: str, target: str = "99", window: str = "28d") -> str:
    return f"""\
apiVersion: pyrra.dev/v1alpha1
kind: ServiceLevelObjective
metadata: {{name: api, labels: {{app: shop}}}}
spec:
  target: '{target}'
  window: {window}
  indicator:
    ratio:
      errors: {{metric: 'req_total{{code=~"5.."}}'}}
      total: {{metric: 'req_total'}}
  alerting: {alerting}
"""


@pytest.mark.parametrize(
    ("alerting", "absent"),
    [
        ("{}", {"name": "SLOMetricAbsent", "for": "10m"}),
        ("{absent: false}", None),
        # Pyrra writes its absent alert with the recordings, whatever burnrates says
        ("{burnrates: false}", {"name": "SLOMetricAbsent", "for": "10m"}),
        ("{absentName: ApiNoData, severities: {absent: warning}}",
         {"name": "ApiNoData", "for": "10m", "severity": "warning"}),
        # the page's severity is the absent alert's default: written only when they differ
        ("{severities: {fastBurn: warning, mediumBurn: warning, absent: warning}}",
         {"name": "SLOMetricAbsent", "for": "10m"}),
    ],
    ids=["default", "off", "burnrates-off", "named-warning", "page-severity"],
)  # fmt: skip
def test_pyrras_absent_alert_is_alerting_absent(
    alerting: str, absent: dict[str, str] | None, tmp_path: Path
) -> None:
    result, _ = _import(pyrra, tmp_path, "slo.yaml", _pyrra(alerting))
    assert result.refused == []
    found = result.services[0].document["slos"][0].get("alerting", {}).get("absent")
    assert found == absent
    _builds(result, tmp_path)


@pytest.mark.parametrize(
    ("window", "target", "expected"),
    [
        # 28d: long 1h, for 2m; 14 × 0.01 × 3600 = 504s (+120s = 624s) → 10m
        ("28d", "99", "10m"),
        # 30d: long 64m (3857s rounded), for 2m (129s); 14 × 0.001 × 3840 = 53.76 → 53s
        # (+120s = 173s) → 3m
        ("30d", "99.9", "3m"),
        # 7d: long 15m, for 30s rounded half away from zero to 1m; 14 × 0.005 × 900 = 63s
        # (+60s = 123s) → 2m
        ("7d", "99.5", "2m"),
        # 90%: 14 × 0.1 × 3600 = 5040s (+120s) → 1h26m
        ("4w", "90", "1h26m"),
    ],
)
def test_the_absent_for_is_pyrras_absent_duration(
    window: str, target: str, expected: str, tmp_path: Path
) -> None:
    result, _ = _import(pyrra, tmp_path, "slo.yaml", _pyrra("{}", target, window))
    slo = result.services[0].document["slos"][0]
    assert slo["alerting"]["absent"]["for"] == expected
    seconds = {"28d": 28, "30d": 30, "7d": 7, "4w": 28}[window] * 86400
    assert pyrra.pyrra_absent_for(Fraction(seconds), float(target) / 100) == _seconds(expected)


def _seconds(text: str) -> int:
    hours, _, minutes = text.rpartition("h")
    return int(hours or 0) * 3600 + int(minutes.rstrip("m") or 0) * 60


def test_an_invalid_absent_name_or_severity_is_refused_at_its_line(tmp_path: Path) -> None:
    result, name = _import(
        pyrra, tmp_path, "slo.yaml",
        _pyrra("{absentName: 'no good', severities: {absent: 'no good'}}"),
    )  # fmt: skip
    assert _notes(result, "refused", name) == [
        ":11: spec.alerting.absentName: not a Prometheus alert name; SLOMetricAbsent used",
        ":11: spec.alerting.severities.absent: severity 'no good' is not a name rulegen can "
        "declare ([A-Za-z0-9][A-Za-z0-9_.-]*); rulegen's default is kept",
    ]
    absent = result.services[0].document["slos"][0]["alerting"]["absent"]
    assert absent == {"name": "SLOMetricAbsent", "for": "10m"}


def test_a_pyrra_severity_of_its_own_is_declared(tmp_path: Path) -> None:
    result, name = _import(pyrra, tmp_path, "slo.yaml", _pyrra("{severities: {absent: page}}"))
    assert _notes(result, "refused", name) == []
    document = result.services[0].document
    assert document["severities"] == ["critical", "warning", "info", "page"]
    assert document["slos"][0]["alerting"]["absent"]["severity"] == "page"


def test_import_pyrra_exits_0_where_the_absent_alert_was_its_only_refusal(
    in_tmp: Path, cli: object
) -> None:
    """``rulegen import pyrra`` on Pyrra's thanos example: every field maps (it refused the
    absent alert, exit 1, before ``alerting.absent``), and what it writes builds."""
    source = (ANCHORS / "pyrra" / "examples" / "thanos-http.yaml").read_text()
    write_tree(in_tmp, {"in/thanos-http.yaml": source})
    run: CliResult = cli("import", "pyrra", "in/thanos-http.yaml", "--out", "specs")  # type: ignore[operator]
    assert run.code == 0, run.err
    assert "refused 0" in run.out + run.err
    written = (in_tmp / "specs" / "monitoring.yaml").read_text()
    assert "      absent:\n        name: SLOMetricAbsent\n        for: 10m\n" in written
    built: CliResult = cli("build", "--no-validate")  # type: ignore[operator]
    assert built.code == 0, built.err
