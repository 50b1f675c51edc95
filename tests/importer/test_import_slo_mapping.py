"""The SLO importers (Sloth, OpenSLO, Pyrra) on the tools' own examples and on hostile input:
what maps to what, the exact reasons of every refusal, and that what they write builds.

The anchors are verbatim copies of the tools' examples (``data/anchors``, copied from the
project's ``../shared/anchors``); the promtool comparison of the imported alerts with the
tools' own is ``test_import_slo_promtool.py``.
"""

from __future__ import annotations

import os
import subprocess
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
from rulegen.validate.promtool import find_promtool

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
        # Sloth's own severities, declared after rulegen's (issue 31)
        "severities": ["critical", "warning", "info", "pageteam", "slack"],
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
                    "page": {
                        "severity": "pageteam",
                        "labels": {"routing_key": "myteam"},
                        "annotations": {"source_summary": SLOTH_SUMMARY},
                    },
                    "ticket": {
                        "severity": "slack",
                        "labels": {"slack_channel": "#alerts-myteam"},
                        "annotations": {"source_summary": SLOTH_SUMMARY},
                    },
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
    # Sloth's own example imports with nothing refused (issue 31): its severities declared,
    # its summary kept beside rulegen's
    assert notes(result, "refused") == []
    adapted = notes(result, "adapted")
    assert (
        "sloth/examples/getting-started.yml:22: slos[0].alerting.annotations.summary: rulegen "
        "writes its own summary on the alerts; the source's is kept as source_summary"
    ) in adapted
    assert (
        "sloth/examples/getting-started.yml:25: slos[0].alerting.page_alert.labels.severity: "
        "severity 'pageteam' is not one of rulegen's default severities (critical, warning, "
        "info); the spec declares it in `severities:`, after them (docs/migrating.md#severities)"
    ) in adapted


SLOTH_SUMMARY = "High error rate on 'myservice' requests responses"


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
        "prometheus-blackbox-probe-success": ["prometheus-blackbox-probe-success"],
        "monitoring": [
            "apiserver-read-resource-latency",
            "apiserver-read-response-errors",
            "thanos-query",
        ],
    }
    refused = notes(result, "refused")
    # Pyrra's connect examples group by `service`, a label rulegen's rules set themselves
    assert (
        "pyrra/examples/pyrra-connect-latency.yaml:19: spec.indicator.latencyNative.grouping: "
        "grouped by service: rulegen sets that label on its own rules, so the groups cannot be "
        "kept, and one SLO over all of them would page later than the source"
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
        # a threshold SLI maps (below), but this example's source is "Any", not Prometheus
        "openslo/occurences-slo.yaml:17: spec.indicator.spec.thresholdMetric.metricSource: "
        "metric source 'Any': only Prometheus queries map",
        "openslo/occurences-slo.yaml:25: spec.objectives[0]: SLO search-slo not imported: its "
        "SLI does not map",
        "openslo/ratio-timeslices.yaml:29: spec.budgetingMethod: RatioTimeslices: the SLI is "
        "the mean of the slices' ratios, which no event count gives; SLO not imported",
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
        (
            'sum by ("k8s.pod", svc) (rate({"http.requests", "http.status"="5"}[{{.window}}]))',
            ('{"http.requests", "http.status"="5"}', ("k8s.pod", "svc")),
        ),
    ],
    ids=[
        "a plain sum of rate maps to its selector",
        "sum by keeps the labels",
        "increase and a trailing by clause map too",
        "brackets inside a label value do not confuse the scan",
        "UTF-8 names (Prometheus 3) map: by a quoted label, a quoted metric",
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
        ("sum by (k8s.pod) (rate(a_total[{{.window}}]))", "by (k8s.pod): not label names"),
        ('sum by ("a b") (rate(a_total[{{.window}}]))', 'by ("a b"): not label names'),
    ],
    ids=[
        "a fixed range is refused",
        "a rate without sum is refused",
        "sum without is refused",
        "arithmetic around the sum is refused",
        "an offset is refused",
        "a quantile is refused",
        "a broken selector is refused",
        "a dotted label not quoted is refused (PromQL 3 reads it quoted only)",
        "a quoted label rulegen cannot write in templates is refused",
    ],
)
def test_events_queries_that_are_refused(query: str, reason: str) -> None:
    found = slo_common.events(query)
    assert isinstance(found, str)
    assert reason in found


def _events(query: str) -> slo_common.Events:
    found = slo_common.events(query)
    assert isinstance(found, slo_common.Events), found
    return found


@pytest.mark.parametrize(
    ("good", "total", "expected"),
    [
        # two extra matchers: not one inverted selector, but a good-over-total ratio
        (
            'a{x="1",code!~"5..",y="2"}',
            'a{x="1"}',
            {"good": 'a{x="1",code!~"5..",y="2"}', "total": 'a{x="1"}'},
        ),
        # OpenSLO's latency objective: a bucket over the count, both without WATCH
        (
            'x_bucket{le="0.4",verb!="WATCH"}',
            'x_count{verb!="WATCH"}',
            {"good": 'x_bucket{le="0.4",verb!="WATCH"}', "total": 'x_count{verb!="WATCH"}'},
        ),
        # another family's successes over the requests
        (
            'jobs_succeeded_total{queue="a"}',
            'jobs_started_total{queue="a"}',
            {"good": 'jobs_succeeded_total{queue="a"}', "total": 'jobs_started_total{queue="a"}'},
        ),
    ],
    ids=["two extra matchers", "bucket over count", "two families"],
)
def test_openslo_good_over_total_maps_to_a_good_ratio(
    good: str, total: str, expected: dict[str, str]
) -> None:
    mapped = slo_common.complement_sli(
        _events(f"sum(rate({good}[{{{{.window}}}}]))"),
        _events(f"sum(rate({total}[{{{{.window}}}}]))"),
    )
    assert isinstance(mapped, slo_common.SLIMapping), mapped
    assert mapped.sli == {"ratio": expected}


def test_a_good_selector_wider_than_its_total_is_refused() -> None:
    mapped = slo_common.complement_sli(
        _events('sum(rate(x_bucket{le="0.4"}[{{.window}}]))'),
        _events('sum(rate(x_count{verb!="WATCH"}[{{.window}}]))'),
    )
    assert mapped == (
        'good must select a subset of total\'s events: total matches verb!="WATCH", which '
        "good does not (write the same matcher on both)"
    )


def test_a_pyrra_bucket_narrower_than_its_count_maps_to_a_good_ratio() -> None:
    count = slo_common.plain_selector('x_count{job="api"}')
    bucket = slo_common.plain_selector('x_bucket{job="api",code!~"5..",le="0.5"}')
    assert isinstance(count, slo_common.Events)
    assert isinstance(bucket, slo_common.Events)
    mapped = slo_common.latency_sli(count, bucket)
    assert isinstance(mapped, slo_common.SLIMapping), mapped
    assert mapped.sli == {
        "ratio": {"good": 'x_bucket{job="api",code!~"5..",le="0.5"}', "total": 'x_count{job="api"}'}
    }


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
        # neither a counter pair nor an expression SLI: the query has no window
        ":13: slos[0].sli.events.error_query: has no {{.window}}: the query would not follow "
        "the window",
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


# OpenSLO's own v1 example (pkg/openslo/v1/examples/slos.yaml; data/README): a YAML list of
# objects, as its SDK reads and writes them, with Timeslices budgeting over a calendar week.
OPENSLO_LIST = (ANCHORS.parent / "openslo" / "v1-slos.yaml").read_text("utf-8")


def test_an_openslo_list_of_objects_is_read_and_its_unsupported_fields_named(
    tmp_path: Path,
) -> None:
    result = run(openslo, [write(tmp_path, "web.yaml", OPENSLO_LIST)])
    refused = notes(result, "refused")
    assert not any("not an OpenSLO document" in line for line in refused), refused
    assert any(":32: [0].spec.timeWindow[0]: a calendar window" in line for line in refused)
    assert not any("budgetingMethod" in line for line in refused), refused  # Timeslices map


@pytest.mark.slow  # promtool checks the imported rules
def test_openslo_timeslices_become_an_events_sli_of_slices(tmp_path: Path) -> None:
    rolling = OPENSLO_LIST.replace("isRolling: false", "isRolling: true").replace(
        "duration: 1w", "duration: 7d"
    )
    rolling = "\n".join(
        line for line in rolling.splitlines()
        if not line.strip().startswith(("calendar:", "startTime:", "timeZone:"))
    )  # fmt: skip
    (tmp_path / "src").mkdir()
    result = run(openslo, [write(tmp_path / "src", "web.yaml", rolling + "\n")])
    assert notes(result, "refused") == []  # the ratio's `op: gt` and its labels are noted
    (slo,) = result.services[0].document["slos"]
    bad = (
        '((1 - sum(rate(http_requests{k8s_cluster="prod",component="web",code!~"2xx|4xx"}[1m])) '
        '/ sum(rate(http_requests{k8s_cluster="prod",component="web"}[1m]))) < bool 0.95)'
    )
    assert slo["sli"] == {"events": {
        "errors": f"sum_over_time({bad}[{{{{.window}}}}:1m])",
        "total": f"count_over_time({bad}[{{{{.window}}}}:1m])",
    }}  # fmt: skip
    service = result.services[0]
    (tmp_path / "out").mkdir()
    spec = tmp_path / "out" / "web.yaml"
    spec.write_text(yaml.safe_dump(service.document, sort_keys=False), encoding="utf-8")
    files = build(discover([tmp_path / "out"]), load_catalog([]), jobs=1).files
    rules = tmp_path / "web.rules.yml"
    rules.write_text(files["prometheus/web.slo.web-availability.rules.yml"], encoding="utf-8")
    checked = subprocess.run(
        [find_promtool(), "check", "rules", str(rules)], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


# The two expression SLIs of Sloth's docs (sloth.dev, "SLI types": events counted from a gauge
# through a subquery, a raw error ratio), which no counter pair can express.
SLOTH_EXPRESSIONS = """\
version: "prometheus/v1"
service: "myservice"
slos:
  - name: "gauge-events"
    objective: 99.9
    sli:
      events:
        error_query: sum_over_time((count(some_gauge < 0.75))[{{.window}}:]) OR on() vector(0)
        total_query: sum_over_time((count(some_gauge))[{{.window}}:])
  - name: "raw-ratio"
    objective: 99
    sli:
      raw:
        error_ratio_query: >-
          1 - (sum(sum_over_time(x[{{.window}}])) / sum(count_over_time(x[{{.window}}])))
  - name: "grouped"
    objective: 99
    sli:
      events:
        error_query: sum by (queue) (max_over_time(queue_stuck[{{.window}}]))
        total_query: sum by (queue) (count_over_time(queue_stuck[{{.window}}]))
"""


def test_sloth_expression_slis_are_imported_as_events_and_raw(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    result = run(sloth, [write(tmp_path / "src", "sloth.yml", SLOTH_EXPRESSIONS)])
    assert notes(result, "refused") == []
    adapted = notes(result, "adapted")
    assert any("slos[0].sli.events.error_query: an expression SLI (events)" in n for n in adapted)
    assert any("slos[1].sli.raw.error_ratio_query: an expression SLI (raw)" in n for n in adapted)
    (service,) = result.services
    slos = {slo["name"]: slo for slo in service.document["slos"]}
    assert slos["gauge-events"]["sli"] == {"events": {
        "errors": "sum_over_time((count(some_gauge < 0.75))[{{.window}}:]) OR on() vector(0)",
        "total": "sum_over_time((count(some_gauge))[{{.window}}:])",
    }}  # fmt: skip
    assert slos["raw-ratio"]["sli"] == {"raw": {"error_ratio": (
        "1 - (sum(sum_over_time(x[{{.window}}])) / sum(count_over_time(x[{{.window}}])))"
    )}}  # fmt: skip
    assert slos["grouped"]["group_by"] == ["queue"]
    (tmp_path / "out").mkdir()
    files = builds(result, tmp_path / "out")
    assert "prometheus/myservice.slo.gauge-events.rules.yml" in files


def test_pyrra_bool_gauge_is_an_events_sli_with_its_own_test_series(tmp_path: Path) -> None:
    result = run(pyrra, [PYRRA / "prometheus-probe-success.yaml"])
    (slo,) = result.services[0].document["slos"]
    assert slo["group_by"] == ["target"]
    assert slo["sli"] == {"events": {
        "errors": "sum by (target) (count_over_time(probe_success[{{.window}}])) - "
                  "sum by (target) (sum_over_time(probe_success[{{.window}}]))",
        "total": "sum by (target) (count_over_time(probe_success[{{.window}}]))",
        "test": {"good": {'probe_success{target="rulegen-a"}': 1},
                 "bad": {'probe_success{target="rulegen-a"}': 0}},
    }}  # fmt: skip
    files = builds(result, tmp_path)
    assert any(name.endswith(".test.yml") for name in files)


def test_pyrra_latency_native_is_a_native_latency_sli(tmp_path: Path) -> None:
    source = (PYRRA / "pyrra-connect-latency.yaml").read_text()
    # Pyrra's own example, grouped by method alone (rulegen sets `service` itself)
    source = source.replace("        - service\n", "")
    (tmp_path / "src").mkdir()
    result = run(pyrra, [write(tmp_path / "src", "latency.yaml", source)])
    assert notes(result, "refused") == [] or all("absent" in n for n in notes(result, "refused"))
    (slo,) = result.services[0].document["slos"]
    assert slo["sli"] == {"latency": {
        "metric": "connect_server_requests_duration_seconds", "threshold": "200ms",
        "histogram": "native", "matchers": 'job="pyrra",code="ok"',
    }}  # fmt: skip
    assert slo["group_by"] == ["method"]
    (tmp_path / "out").mkdir()
    assert any(".slo." in name for name in builds(result, tmp_path / "out"))


def test_openslo_threshold_metric_is_an_events_sli_of_samples(tmp_path: Path) -> None:
    source = (OPENSLO / "occurences-slo.yaml").read_text()
    # OpenSLO's own example, with a Prometheus query where it says "Any"
    source = (
        source.replace("type: Any", "type: Prometheus")
        .replace(
            "query: Any",
            "query: histogram_quantile(0.99, sum by (le) (rate(search_seconds_bucket[5m])))",
        )
        .replace("value: 500", "value: 0.5")
    )
    (tmp_path / "src").mkdir()
    result = run(openslo, [write(tmp_path / "src", "search.yaml", source)])
    assert notes(result, "refused") == []
    (slo,) = result.services[0].document["slos"]
    bad = "((histogram_quantile(0.99, sum by (le) (rate(search_seconds_bucket[5m])))) >= bool 0.5)"
    assert slo["sli"] == {"events": {
        "errors": f"sum(sum_over_time({bad}[{{{{.window}}}}:1m]))",
        "total": f"sum(count_over_time({bad}[{{{{.window}}}}:1m]))",
    }}  # fmt: skip
    assert any("a threshold (lt 0.5)" in n for n in notes(result, "adapted"))
    (tmp_path / "out").mkdir()
    assert any(".slo." in name for name in builds(result, tmp_path / "out"))


def test_a_sloth_sli_plugin_is_refused_with_its_id() -> None:
    """Sloth's own plugin example: the plugin's queries are Go code; the refusal names it."""
    path = ANCHORS.parent / "sloth-examples" / "plugin-getting-started.yml"
    result = sloth.import_files([path], ImportOptions())
    refused = [str(n) for n in result.refused]
    assert any(
        "slos[0].sli.plugin: the Sloth SLI plugin 'getting_started_availability' writes its "
        "queries in Go code rulegen cannot read: write its queries as sli.events or sli.raw" in line
        for line in refused
    ), refused
