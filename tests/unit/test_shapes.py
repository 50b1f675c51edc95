"""A unit's shape: its bytes with the service's name renamed, only where promtool cannot tell.

Why: two units of the same shape share one promtool run; a shape given to a unit whose
result depends on how the service is spelled would let one service's pass vouch for another
whose tests fail. Each refusal below is a way promtool can see the spelling.
"""

from __future__ import annotations

import textwrap

import pytest
import yaml

from rulegen.pipeline.shapes import PLACEHOLDER, Identity, shape_of

RULES = """
groups:
  - name: {svc}-alerts
    rules:
      - record: queue:max
        expr: max by (service) (label_replace(queue_len{{job="{svc}"}}, "service", "{svc}", "", ""))
      - alert: QueueLong
        expr: queue:max{{service="{svc}"}} > 10
        labels: {{service: {svc}, severity: warning}}
        annotations:
          summary: '{svc}: queue at {{{{ $value }}}} on {{{{ $labels.service }}}}'
          description: '{{{{ with query `queue:max{{service="{svc}"}}` }}}}x{{{{ end }}}}'
"""
TEST = """
rule_files: [rules-0.yml]
tests:
  - name: the {svc} queue
    input_series:
      - series: 'queue_len{{job="{svc}", instance="a"}}'
        values: '15x10'
    alert_rule_test:
      - eval_time: 5m
        alertname: QueueLong
        exp_alerts:
          - exp_labels: {{service: {svc}, severity: warning}}
            exp_annotations: {{summary: "{svc}: queue at 15 on {svc}", description: x}}
    promql_expr_test:
      - expr: queue:max{{service="{svc}"}}
        eval_time: 5m
        exp_samples: [{{labels: 'queue:max{{service="{svc}"}}', value: 15}}]
"""


def _files(svc: str, rules: str = RULES, test: str = TEST) -> list[tuple[str, bytes]]:
    return [
        ("test.yml", textwrap.dedent(test).format(svc=svc).encode()),
        ("rules-0.yml", textwrap.dedent(rules).format(svc=svc).encode()),
    ]


def test_two_services_built_alike_have_one_shape() -> None:
    web, api = _files("web-1"), _files("api-2")
    assert yaml.safe_load(web[1][1])  # the fixture is valid YAML
    shape = shape_of(web, Identity("web-1"))
    assert shape is not None
    assert shape == shape_of(api, Identity("api-2"))
    assert all(b"web-1" not in data and PLACEHOLDER.encode() in data for _, data in shape)


def test_a_different_threshold_is_a_different_shape() -> None:
    other = _files("api-2", RULES.replace("> 10", "> 12"))
    assert shape_of(_files("web-1"), Identity("web-1")) != shape_of(other, Identity("api-2"))


REFUSALS = [
    # the name in a regular expression
    ('queue_len{{job="{svc}"}}', 'queue_len{{job=~"{svc}|x"}}'),
    # a label carrying the name read by a regular expression
    ("queue:max{{service=", 'queue:max{{service!~"w.*", service='),
    # a label carrying the name read by label_replace
    ('"service", "{svc}", "", ""', '"service", "$1", "job", "(.*)"'),
    # order of label values
    ("max by (service) (", "topk by (service) (1, "),
    # a template action doing more than printing the label
    ("{{{{ $labels.service }}}}", "{{{{ $labels.service | toUpper }}}}"),
    # the name inside a template action
    ("{{{{ $labels.service }}}}", '{{{{ if eq $labels.service "{svc}" }}}}y{{{{ end }}}}'),
]


@pytest.mark.parametrize(
    ("old", "new"),
    REFUSALS,
    ids=[
        "regex",
        "regex-on-carrier",
        "label_replace",
        "topk",
        "template-function",
        "template-literal",
    ],
)
def test_a_unit_that_could_tell_names_apart_has_no_shape(old: str, new: str) -> None:
    assert old in RULES, old
    rules = RULES.replace(old, new)
    assert shape_of(_files("web-1", rules), Identity("web-1")) is None


def test_the_name_in_a_metric_name_has_no_shape() -> None:
    named = [(n, data.replace(b"queue:max", b"queue:max_web1")) for n, data in _files("web1")]
    assert shape_of(_files("web1"), Identity("web1")) is not None
    assert shape_of(named, Identity("web1")) is None


def test_no_shape_when_the_name_is_absent_or_too_short() -> None:
    assert shape_of(_files("web-1"), Identity("db-9")) is None
    assert shape_of(_files("w"), Identity("w")) is None


def test_the_refused_units_are_valid_rules(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The refusals above are refused for what they do, not for a file that does not parse."""
    from rulegen.pipeline import testunits

    for old, new in REFUSALS:
        rules = RULES.replace(old, new)
        folder = tmp_path_factory.mktemp("unit")
        for name, data in _files("web-1", rules):
            (folder / name).write_bytes(data)
        assert testunits.split(folder, "test.yml") is not None, new
