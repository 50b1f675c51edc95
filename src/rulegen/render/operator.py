"""Model rule groups → a Prometheus Operator ``PrometheusRule`` per service.

Why: on Kubernetes the operator loads rules from ``PrometheusRule`` objects selected by
labels (the Prometheus ``ruleSelector``); the rule bodies are exactly those of the plain rule
files (``render.prometheus.rule_file``), only the envelope differs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rulegen.generated import RuleGroup, ServiceOutput
from rulegen.render.prometheus import rule_file

OPERATOR_API_VERSION = "monitoring.coreos.com/v1"
OPERATOR_KIND = "PrometheusRule"
PARTIAL_RESPONSE_STRATEGIES = ("warn", "abort")


def service_groups(service: ServiceOutput) -> tuple[RuleGroup, ...]:
    """Every rule group of one service: its signal groups, then one group per SLO."""
    return service.groups + tuple(slo.group for slo in service.slos)


# --- Prometheus Operator ----------------------------------------------------------------------


def prometheus_rule(
    service: str,
    groups: Sequence[RuleGroup],
    namespace: str,
    labels: Mapping[str, str],
    *,
    partial_response_strategy: str | None = None,
) -> dict[str, Any]:
    """One ``monitoring.coreos.com/v1`` ``PrometheusRule`` holding every group of a service.

    ``labels`` are what the Prometheus (or ThanosRuler) object's ``ruleSelector`` matches;
    ``partial_response_strategy`` (``warn``/``abort``) is set on every group when given (only
    ThanosRuler reads it). Check the result with ``rulegen.validate.crd``.
    """
    metadata: dict[str, Any] = {"name": service, "namespace": namespace}
    if labels:
        metadata["labels"] = dict(labels)
    spec_groups = with_strategy(rule_file(tuple(groups))["groups"], partial_response_strategy)
    return {
        "apiVersion": OPERATOR_API_VERSION,
        "kind": OPERATOR_KIND,
        "metadata": metadata,
        "spec": {"groups": spec_groups},
    }


def with_strategy(groups: list[dict[str, Any]], strategy: str | None) -> list[dict[str, Any]]:
    """Groups with ``partial_response_strategy`` after ``interval`` (before ``rules``)."""
    if strategy is None:
        return groups
    if strategy not in PARTIAL_RESPONSE_STRATEGIES:
        raise ValueError(f"partial_response_strategy must be warn or abort (got {strategy!r})")
    out = []
    for group in groups:
        entry = {k: v for k, v in group.items() if k != "rules"}
        entry["partial_response_strategy"] = strategy
        entry["rules"] = group["rules"]
        out.append(entry)
    return out
