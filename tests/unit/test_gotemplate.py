"""``rulegen.gotemplate``: predicting what Prometheus prints for an alert's annotations.

Generated promtool tests assert exact annotations, so the predictor must match Prometheus'
Go templates for what rulegen writes and refuse everything else rather than guess.
``tests/unit/test_units.py`` has the first humanize cases; the expected texts below are
Prometheus' own (``template.go``: ``%.4g`` with SI, binary or time prefixes).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

import pytest

from rulegen import gotemplate
from rulegen.gotemplate import UnsupportedTemplate

EXPANSIONS = [
    # (behaviour, text, labels, value, expanded)
    ("text without actions is unchanged", "disk is full", {}, 1.0, "disk is full"),
    ("a label is filled in", "GPU {{ $labels.gpu }}", {"gpu": "0"}, 1.0, "GPU 0"),
    ("a missing label is empty, as in Go", "[{{ $labels.nope }}]", {}, 1.0, "[]"),
    ("spaces inside the action do not matter", "{{$labels.a}}", {"a": "b"}, 1.0, "b"),
    ("an action may span lines", "{{\n$labels.a\n}}", {"a": "b"}, 1.0, "b"),
    ("a string literal prints itself", '{{ "{" }}{ x', {}, 1.0, "{{ x"),
    ("a whole value has no decimal point", "{{ $value }}", {}, 88.0, "88"),
    ("a fractional value is printed plainly", "{{ $value }}", {}, 2.5, "2.5"),
    ("a huge value uses an exponent", "{{ $value }}", {}, 1e21, "1e+21"),
    ("humanize applies SI prefixes", "{{ $value | humanize }}", {}, 1234567.0, "1.235M"),
    ("humanize1024 applies binary prefixes", "{{ $value | humanize1024 }}", {}, 1536.0, "1.5ki"),
    ("humanizeDuration", "{{ $value | humanizeDuration }}", {}, 90.0, "1m 30s"),
    ("humanizePercentage", "{{ $value | humanizePercentage }}", {}, 0.975, "97.5%"),
    ("several actions in one text", "{{ $labels.i }}: {{ $value }}", {"i": "n1"}, 3.0, "n1: 3"),
    # a UTF-8 label name (Prometheus 3) is no Go identifier: ``index`` reads it
    ("index reads a dotted label", 'pod {{ index $labels "k8s.pod" }}', {"k8s.pod": "p-1"},
     1.0, "pod p-1"),
    ("index of a missing label is empty, as in Go", '[{{index $labels "k8s.pod"}}]', {}, 1.0,
     "[]"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "labels", "value", "expanded"),
    [c[1:] for c in EXPANSIONS],
    ids=[c[0] for c in EXPANSIONS],
)
def test_expand_prints_what_prometheus_prints(
    text: str, labels: Mapping[str, str], value: float, expanded: str
) -> None:
    assert gotemplate.expand(text, labels, value) == expanded


REFUSED = [
    # (behaviour, text, message)
    ("a range is refused", "{{ range $labels }}x{{ end }}", "cannot predict template action"),
    ("the dot syntax is refused", "{{ .Labels.x }}", "cannot predict template action"),
    ("a chain of functions is refused", "{{ $value | humanize | humanize }}", "template action"),
    ("printf is refused", '{{ $value | printf "%.2f" }}', "cannot predict template function"),
    ("an unknown function is refused", "{{ $value | title }}", "template function title"),
    ("index of anything but $labels is refused", '{{ index .Labels "a" }}', "template action"),
]


@pytest.mark.parametrize(("text", "message"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_anything_else_is_refused_rather_than_guessed(text: str, message: str) -> None:
    with pytest.raises(UnsupportedTemplate, match=re.escape(message)):
        gotemplate.expand(text, {}, 1.0)


def test_label_ref_keeps_legacy_names_short_and_indexes_utf8_names() -> None:
    # what rulegen writes for an SLO's group_by labels, and what ``expand`` reads back
    assert gotemplate.label_ref("region") == "$labels.region"
    assert gotemplate.label_ref("k8s.pod") == 'index $labels "k8s.pod"'
    assert gotemplate.label_arg("region") == "$labels.region"
    assert gotemplate.label_arg("k8s.pod") == '(index $labels "k8s.pod")'
    labels = {"k8s.pod": "p-1", "region": "eu"}
    text = "".join(f" {n}={{{{ {gotemplate.label_ref(n)} }}}}" for n in ("k8s.pod", "region"))
    assert gotemplate.expand(text, labels, 1.0) == " k8s.pod=p-1 region=eu"


def test_an_unsupported_template_is_a_value_error() -> None:
    assert issubclass(UnsupportedTemplate, ValueError)


Humanizer = Callable[[float], str]
HUMANIZE = [
    # (behaviour, function, value, text)
    ("humanize of zero", gotemplate.humanize, 0.0, "0"),
    ("humanize keeps four significant digits", gotemplate.humanize, 1024.0, "1.024k"),
    ("humanize of a negative value", gotemplate.humanize, -1500.0, "-1.5k"),
    ("humanize of a fraction uses milli", gotemplate.humanize, 0.5, "500m"),
    ("humanize of a tiny value uses pico", gotemplate.humanize, 1e-10, "100p"),
    ("humanize stops at yotta", gotemplate.humanize, 1e27, "1000Y"),
    ("humanize1024 leaves 1 alone", gotemplate.humanize1024, 1.0, "1"),
    ("humanize1024 leaves fractions alone", gotemplate.humanize1024, 0.5, "0.5"),
    ("humanize1024 of a negative value", gotemplate.humanize1024, -1500.0, "-1.465ki"),
    ("humanize1024 of exactly one kibi", gotemplate.humanize1024, 1024.0, "1ki"),
    ("humanizeDuration of zero", gotemplate.humanize_duration, 0.0, "0s"),
    ("humanizeDuration of one second", gotemplate.humanize_duration, 1.0, "1s"),
    (
        "humanizeDuration writes every smaller unit",
        gotemplate.humanize_duration,
        3600.0,
        "1h 0m 0s",
    ),
    ("humanizeDuration of a negative duration", gotemplate.humanize_duration, -90.0, "-1m 30s"),
    ("humanizeDuration below a second", gotemplate.humanize_duration, 0.5, "500ms"),
    ("humanizeDuration far below a second", gotemplate.humanize_duration, 1e-10, "100ps"),
    ("humanizePercentage of one", gotemplate.humanize_percentage, 1.0, "100%"),
    ("humanizePercentage of zero", gotemplate.humanize_percentage, 0.0, "0%"),
    ("humanizePercentage of a large ratio", gotemplate.humanize_percentage, 1024.0, "1.024e+05%"),
]


@pytest.mark.parametrize(
    ("func", "value", "text"), [c[1:] for c in HUMANIZE], ids=[c[0] for c in HUMANIZE]
)
def test_humanize_functions_match_prometheus(func: Humanizer, value: float, text: str) -> None:
    assert func(value) == text
