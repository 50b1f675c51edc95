"""The SLO importers (Sloth, OpenSLO, Pyrra) on the tools' own examples and on hostile input:
what maps to what, the exact reasons of every refusal, and that what they write builds.

The anchors are verbatim copies of the tools' examples (``data/anchors``, copied from the
project's ``../shared/anchors``); the promtool comparison of the imported alerts with the
tools' own is ``test_import_slo_promtool.py``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from rulegen.build import build
from rulegen.catalog import load_catalog
from rulegen.errors import SpecError
from rulegen.importer import openslo, pyrra, slo_common, sloth
from rulegen.importer.model import ImportOptions, ImportResult
from rulegen.load import discover

ANCHORS = Path(__file__).resolve().parent / "data" / "anchors"  # copies: data/anchors/README.txt
SLOTH = ANCHORS / "sloth"
PYRRA = ANCHORS / "pyrra" / "examples"
OPENSLO = ANCHORS / "openslo"


def run(module: Any, files: Sequence[Path], service: str | None = None) -> ImportResult:
    """The importer on ``files``, notes named relative to the anchors folder."""
    before = Path.cwd()
    os.chdir(ANCHORS if ANCHORS.is_dir() else files[0].parent)
    try:
        result: ImportResult = module.import_files(list(files), ImportOptions(service=service))
        return result
    finally:
        os.chdir(before)


def notes(result: ImportResult, kind: str) -> list[str]:
    return [str(n) for n in getattr(result, kind)]


def builds(result: ImportResult, tmp_path: Path) -> list[str]:
    """Every imported spec written to ``tmp_path`` and built; the generated file names."""
    for service in result.services:
        text = yaml.safe_dump(service.document, sort_keys=False, allow_unicode=True)
        (tmp_path / f"{service.service}.yaml").write_text(text, encoding="utf-8")
    return sorted(build(discover([tmp_path]), load_catalog([]), jobs=1).files)


def test_sloth_getting_started_maps_its_sli_objective_and_alerting() -> None:
    result = run(sloth, [SLOTH / "examples" / "getting-started.yml"])
    [service] = result.services
    assert service.document == {
        "version": 1,
        "service": "myservice",
        "labels": {"owner": "myteam", "repo": "myorg/myservice", "tier": "2"},
        "slos": [
            {
                "name": "requests-availability",
                "objective": "99.9%",
                "window": "30d",
                "description": "Common SLO based on availability for HTTP request responses.",
                "sli": {
                    "ratio": {
                        "errors": (
                            'http_request_duration_seconds_count{job="myservice",code=~"(5..|429)"}'
                        ),
                        "total": 'http_request_duration_seconds_count{job="myservice"}',
                    }
                },
                "alerting": {
                    "name": "MyServiceHighErrorRate",
                    # a label of one alert alone is that alert's own (issue 31)
                    "page": {"labels": {"routing_key": "myteam"}},
                    "ticket": {"labels": {"slack_channel": "#alerts-myteam"}},
                    "labels": {"category": "availability"},
                },
            }
        ],
    }
    assert service.comments[("slos", 0, "window")] == (
        "Sloth's default period (30d) and windows (google-30d)"
    )
    assert service.comments[("slos", 0, "alerting", "page")] == (
        "Sloth's page alert labels and annotations: the page's own"
    )
    assert result.imported == [
        "myservice/requests-availability (sloth/examples/getting-started.yml:9)"
    ]
    assert notes(result, "refused") == [
        "sloth/examples/getting-started.yml:22: slos[0].alerting.annotations.summary: rulegen "
        "writes its own summary on the alerts; left out",
        "sloth/examples/getting-started.yml:25: slos[0].alerting.page_alert.labels.severity: "
        "severity 'pageteam': rulegen's severities are critical, warning and info; the page "
        "keeps critical",
        "sloth/examples/getting-started.yml:29: slos[0].alerting.ticket_alert.labels.severity: "
        "severity 'slack': rulegen's severities are critical, warning and info; the ticket "
        "keeps warning",
    ]


def test_sloth_apiserver_latency_idiom_becomes_a_latency_sli() -> None:
    result = run(sloth, [SLOTH / "examples" / "kubernetes-apiserver.yml"])
    [service] = result.services
    latency = service.document["slos"][1]
    assert latency["sli"] == {
        "latency": {
            "metric": "apiserver_request_duration_seconds",
            "threshold": "400ms",
            "matchers": 'verb!="WATCH"',
        }
    }
    assert latency["objective"] == "99%"
    assert latency["alerting"] == {
        "name": "K8sApiserverLatencyAlert",
        "labels": {"category": "latency"},
    }
    assert service.document["runbook_url"].endswith("#alert-name-kubeapierrorshigh")
    assert notes(result, "refused") == [
        "sloth/examples/kubernetes-apiserver.yml:67: slos[1].alerting.annotations.runbook: "
        "service k8s-apiserver: runbook_url is already 'https://github.com/kubernetes-monitoring"
        "/kubernetes-mixin/tree/master/runbook.md#alert-name-kubeapierrorshigh' (from "
        "sloth/examples/kubernetes-apiserver.yml:40); one spec has one value",
    ]


def test_sloth_crd_and_file_of_one_service_merge_and_a_taken_slo_name_is_refused() -> None:
    result = run(
        sloth,
        [
            SLOTH / "examples" / "getting-started.yml",
            SLOTH / "examples" / "k8s-getting-started.yml",
        ],
    )
    [service] = result.services
    assert service.sources == [
        "sloth/examples/getting-started.yml",
        "sloth/examples/k8s-getting-started.yml",
    ]
    assert (
        "sloth/examples/k8s-getting-started.yml:18: spec.slos[0]: service myservice already has "
        "an SLO named 'requests-availability'"
    ) in notes(result, "refused")


def test_sloth_no_alerts_disables_page_and_ticket() -> None:
    result = run(sloth, [SLOTH / "examples" / "no-alerts.yml"])
    [service] = result.services
    assert service.document["slos"][0]["alerting"] == {
        "page": {"enabled": False},
        "ticket": {"enabled": False},
    }
    assert notes(result, "refused") == []


@pytest.mark.parametrize(
    ("windows", "window", "tiers"),
    [
        ("google-30d.yaml", "30d", None),
        ("google-28d.yaml", "28d", None),
        (
            "7d.yaml",
            "7d",
            [
                {"long": "1h", "short": "5m", "budget": "8%", "alert": "page"},
                {"long": "6h", "short": "30m", "budget": "12.5%", "alert": "page"},
                {"long": "1d", "short": "2h", "budget": "20%", "alert": "ticket"},
                {"long": "3d", "short": "6h", "budget": "42%", "alert": "ticket"},
            ],
        ),
        (
            "custom-30d.yaml",
            "30d",
            [
                {"long": "30m", "short": "2m", "budget": "1%", "alert": "page"},
                {"long": "3h", "short": "15m", "budget": "2%", "alert": "page"},
                {"long": "12h", "short": "1h", "budget": "5%", "alert": "ticket"},
                {"long": "1d12h", "short": "3h", "budget": "5%", "alert": "ticket"},
            ],
        ),
    ],
    ids=[
        "google-30d windows are rulegen's default tiers",
        "google-28d windows are rulegen's default tiers over 28d",
        "7d windows become explicit tiers",
        "custom 30d windows become explicit tiers",
    ],
)
def test_sloth_alert_windows_set_the_period_and_tiers(
    windows: str, window: str, tiers: list[dict[str, str]] | None
) -> None:
    result = run(sloth, [SLOTH / "examples" / "getting-started.yml", SLOTH / "windows" / windows])
    slo = result.services[0].document["slos"][0]
    assert slo["window"] == window
    assert slo.get("tiers") == tiers


def test_pyrra_examples_map_or_are_refused_with_their_reasons() -> None:
    result = run(pyrra, sorted(PYRRA.glob("*.yaml")))
    imported = {s.service: [slo["name"] for slo in s.document["slos"]] for s in result.services}
    assert imported == {
        "caddy-response-latency": ["caddy-response-latency"],
        "prometheus-api-query": ["prometheus-api-query"],
        "monitoring": [
            "apiserver-read-resource-latency",
            "apiserver-read-response-errors",
            "thanos-query",
        ],
    }
    refused = notes(result, "refused")
    assert (
        "pyrra/examples/prometheus-probe-success.yaml:13: spec.indicator.bool_gauge: a 0/1 "
        "gauge's samples are not events of counters: rulegen's SLIs count events (ratio of two "
        "counters, or a histogram)"
    ) in refused
    assert (
        "pyrra/examples/pyrra-connect-latency.yaml:15: spec.indicator.latencyNative: a native "
        "histogram: rulegen's latency SLI reads a classic histogram's _bucket and _count series"
    ) in refused
    assert (
        "pyrra/examples/pyrra-connect-errors.yaml:20: spec.indicator.ratio.grouping: grouped by "
        "service: rulegen sets that label on its own rules, so the groups cannot be kept, and "
        "one SLO over all of them would page later than the source"
    ) in refused
    # Pyrra's absent alert maps (alerting.absent): no refusal of the examples names it
    assert not [n for n in refused if "absent" in n]
    assert (
        "pyrra/examples/caddy-response-latency.yaml:6: spec.alerting: Pyrra's absent alerts: "
        "one on the total and one on the errors (or success bucket) metric; rulegen's reads "
        "the total only (no error series is zero errors)"
    ) in notes(result, "adapted")


def test_pyrra_windows_become_exact_tiers_rounded_up_never_looser() -> None:
    result = run(pyrra, [PYRRA / "thanos-http.yaml"])
    slo = result.services[0].document["slos"][0]
    assert slo["window"] == "28d"
    assert slo["alerting"] == {
        "for": {"page": "2m", "ticket": "1h"},
        # AbsentDuration(): 14 × (1 − 0.99) × 1h = 504s, + 2m = 624s, to the minute
        "absent": {"name": "SLOMetricAbsent", "for": "10m"},
    }
    assert result.refused == []
    assert slo["tiers"] == [
        {"long": "1h", "short": "5m", "budget": "2.083334%", "alert": "page"},
        {"long": "6h", "short": "30m", "budget": "6.25%", "alert": "page"},
        {"long": "1d", "short": "2h", "budget": "7.142858%", "alert": "ticket"},
        {"long": "4d", "short": "6h", "budget": "14.285715%", "alert": "ticket"},
    ]
    assert result.services[0].document["targets"] == {
        "operator": {
            "namespace": "monitoring",
            "labels": {"prometheus": "k8s", "role": "alert-rules"},
        }
    }


def test_pyrra_window_that_can_never_fire_is_left_out_with_a_note() -> None:
    result = run(pyrra, [PYRRA / "caddy-response-latency.yaml"])
    slo = result.services[0].document["slos"][0]
    assert [t["long"] for t in slo["tiers"]] == ["6h", "1d", "4d"]
    assert (
        "pyrra/examples/caddy-response-latency.yaml:14: spec.target: the page window 1h/5m "
        "(burn 14×) can never fire at 90%: its threshold is at least 100% of events; left out"
    ) in notes(result, "adapted")


def test_openslo_examples_are_refused_with_their_reasons_and_sloths_maps() -> None:
    result = run(
        openslo,
        [*sorted(OPENSLO.glob("*.yaml")), SLOTH / "examples" / "openslo-getting-started.yml"],
    )
    assert notes(result, "refused") == [
        "openslo/occurences-slo.yaml:16: spec.indicator.spec.thresholdMetric: a threshold on "
        "one query's value: rulegen's SLIs count good and bad events (a ratio of counters, or "
        "a histogram's bucket)",
        "openslo/occurences-slo.yaml:25: spec.objectives[0]: SLO search-slo not imported: its "
        "SLI does not map",
        "openslo/ratio-timeslices.yaml:29: spec.budgetingMethod: RatioTimeslices: the budget "
        "counts good time slices, rulegen's SLOs count events (Occurrences); SLO not imported",
        "openslo/ratio-timeslices.yaml:5: metadata.name: SLO main-page not imported: see the "
        "refusals of it",
    ]
    [service] = result.services
    slo = service.document["slos"][0]
    assert (service.service, slo["name"], slo["objective"], slo["window"]) == (
        "my-service",
        "sloth-slo-my-service",
        "99.9%",
        "30d",
    )
    assert slo["sli"]["ratio"]["errors"] == (
        'http_request_duration_seconds_count{job="myservice",code=~"(5..|429)"}'
    )


@pytest.mark.slow  # the build may fan out to worker processes
def test_every_imported_anchor_builds(tmp_path: Path) -> None:
    cases = [
        (sloth, sorted((SLOTH / "examples").glob("*.yml"))),
        (pyrra, sorted(PYRRA.glob("*.yaml"))),
        (openslo, [SLOTH / "examples" / "openslo-getting-started.yml"]),
    ]
    for index, (module, files) in enumerate(cases):
        folder = tmp_path / str(index)
        folder.mkdir()
        assert any(name.startswith("prometheus/") for name in builds(run(module, files), folder))


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ('sum(rate(a_total{x="1"}[{{.window}}]))', ('a_total{x="1"}', ())),
        ("sum by (svc) (rate(a_total[{{ .window }}]))", ("a_total", ("svc",))),
        ("(sum(increase(a_total[{{.window}}])) by (svc, pod))", ("a_total", ("svc", "pod"))),
        ('sum(rate(a_total{x=~"[{]"}[{{.window}}]))', ('a_total{x=~"[{]"}', ())),
    ],
    ids=[
        "a plain sum of rate maps to its selector",
        "sum by keeps the labels",
        "increase and a trailing by clause map too",
        "brackets inside a label value do not confuse the scan",
    ],
)
def test_events_queries_that_map(query: str, expected: tuple[str, tuple[str, ...]]) -> None:
    found = slo_common.events(query)
    assert isinstance(found, slo_common.Events)
    assert (found.selector(), found.by) == expected


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ("sum(rate(a_total[5m]))", "(the range must be [{{.window}}])"),
        ("rate(a_total[{{.window}}])", "is not sum(rate(SELECTOR[{{.window}}]))"),
        ("sum without (pod) (rate(a_total[{{.window}}]))", "sums without (…)"),
        ("sum(rate(a_total[{{.window}}])) * 2", "is not sum(rate(SELECTOR[{{.window}}]))"),
        ("sum(rate(a_total[{{.window}}] offset 1h))", "the range must be"),
        ("histogram_quantile(0.9, sum(rate(a_bucket[{{.window}}])))", "is not sum(rate("),
        ("sum(rate(a_total{x=1}[{{.window}}]))", "is not sum(rate(SELECTOR"),
    ],
    ids=[
        "a fixed range is refused",
        "a rate without sum is refused",
        "sum without is refused",
        "arithmetic around the sum is refused",
        "an offset is refused",
        "a quantile is refused",
        "a broken selector is refused",
    ],
)
def test_events_queries_that_are_refused(query: str, reason: str) -> None:
    found = slo_common.events(query)
    assert isinstance(found, str)
    assert reason in found


def test_openslo_good_with_two_extra_matchers_is_refused() -> None:
    good = slo_common.events('sum(rate(a{x="1",code!~"5..",y="2"}[{{.window}}]))')
    total = slo_common.events('sum(rate(a{x="1"}[{{.window}}]))')
    assert isinstance(good, slo_common.Events)
    assert isinstance(total, slo_common.Events)
    assert slo_common.complement_sli(good, total) == (
        "good is not total with exactly one more matcher: the errors (total minus good) would "
        "not be one selector"
    )


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: [1\n", "invalid YAML"),
        ("a: &x [*x]\n", "nested more than 64 levels deep"),
        ("a: !!python/object x\n", "tag"),
        ("---\na: 1\n" * (slo_common.MAX_DOCUMENTS + 1), "more than 200 YAML documents"),
    ],
    ids=[
        "broken YAML is a spec error",
        "a recursive alias is a spec error",
        "an explicit tag is a spec error",
        "too many documents is a spec error",
    ],
)
def test_unreadable_input_is_a_spec_error(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, "in.yml", text)
    for module in (sloth, openslo, pyrra):
        with pytest.raises(SpecError) as caught:
            module.import_files([path], ImportOptions())
        assert message in str(caught.value)


def test_hostile_sloth_fields_are_refused_with_their_lines(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "hostile.yml",
        "# two documents, the second one hostile\n"
        "---\n"
        "- not a mapping\n"
        "---\n"
        'version: "prometheus/v1"\n'
        'service: "My Service!!"\n'
        "extra: 1\n"
        "slos:\n"
        '  - name: "Bad Name"\n'
        "    objective: 150\n"
        "    sli:\n"
        "      events:\n"
        "        error_query: up\n"
        "        total_query: sum(rate(a_total[{{.window}}]))\n"
        '  - name: "ok"\n'
        "    objective: 99.5\n"
        "    sli:\n"
        "      raw:\n"
        '        error_ratio_query: sum(rate(b_total{code="5"}[{{.window}}]))'
        " / sum(rate(b_total[{{.window}}]))\n"
        "    alerting:\n"
        "      name: 'not valid'\n"
        "      labels: {severity: critical, 'bad-label': x}\n",
    )
    result = sloth.import_files([path], ImportOptions())
    name = str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path)
    assert [str(n).removeprefix(name) for n in result.refused] == [
        ":3: not a mapping: not a Sloth document",
        ":7: extra: not a Sloth field rulegen knows; left out",
        ":10: slos[0].objective: must be between 0 and 100, both exclusive (got 150); SLO not "
        "imported",
        ":13: slos[0].sli.events.error_query: is not sum(rate(SELECTOR[{{.window}}])) (optionally "
        "with by (…)): rulegen's SLI takes a counter selector and adds increase() itself, so any "
        "other expression would count something else",
        ":9: slos[0]: SLO bad-name not imported: its objective or SLI does not map",
        ":21: slos[1].alerting.name: not a Prometheus alert name; rulegen's default used",
        ":22: slos[1].alerting.labels.bad-label: 'bad-label' is not a Prometheus label name",
        ":22: slos[1].alerting.labels.severity: rulegen sets severity per alert (page, ticket)",
    ]
    [service] = result.services
    assert service.service == "my-service"
    assert service.document["slos"] == [
        {
            "name": "ok",
            "objective": "99.5%",
            "window": "30d",
            "sli": {"ratio": {"errors": 'b_total{code="5"}', "total": "b_total"}},
        }
    ]
    assert [str(n).removeprefix(name) for n in result.adapted] == [
        ":6: service: service 'My Service!!' is 'my-service' in rulegen ([a-z0-9][a-z0-9-]*)",
        ":9: slos[0].name: SLO name 'Bad Name' is 'bad-name' in rulegen ([a-z0-9][a-z0-9_-]*)",
        ":19: slos[1].sli.raw.error_ratio_query: the raw error ratio is errors / total of two "
        "counters",
        ":21: slos[1].alerting: no alerting.name: rulegen's default ErrorBudgetBurn",
    ]


def test_service_option_overrides_the_sources_service(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "slo.yaml",
        "apiVersion: pyrra.dev/v1alpha1\n"
        "kind: ServiceLevelObjective\n"
        "metadata: {name: api, labels: {app: shop}}\n"
        "spec:\n"
        "  target: '99.5'\n"
        "  window: 28d\n"
        "  indicator:\n"
        "    ratio:\n"
        "      errors: {metric: 'req_total{code=~\"5..\"}'}\n"
        "      total: {metric: req_total}\n"
        "  alerting: {absent: false, name: ApiBurn}\n",
    )
    assert [s.service for s in pyrra.import_files([path], ImportOptions()).services] == ["shop"]
    result = pyrra.import_files([path], ImportOptions(service="payments"))
    assert [s.service for s in result.services] == ["payments"]
    assert result.refused == []
    assert result.services[0].document["slos"][0]["alerting"]["name"] == "ApiBurn"
