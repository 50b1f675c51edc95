"""JSON Schemas for editors, one per kind of input file: a service spec, a routing file and a
defaults file.

Why one per kind: each file kind has its own top-level keys, and a language server picks the
schema from a comment on the file's first line (``# yaml-language-server: $schema=...``), so
a routing file or a defaults file gets completion and errors as a spec does. The defaults
schema is derived from the spec's, with what a defaults file may set (``Vocabulary``).
"""

from __future__ import annotations

import copy
from typing import Any, Literal

from rulegen.catalog import Catalog
from rulegen.catalog.definition import ParamDef
from rulegen.source.extends import PER_ALERT, Vocabulary
from rulegen.source.severities import DEFAULT as DEFAULT_SEVERITIES
from rulegen.spec.models import spec_model
from rulegen.spec.precise import precise, threshold_schema, without_defaults
from rulegen.spec.routing import RoutingFile

Kind = Literal["spec", "routing", "defaults"]
KINDS: tuple[Kind, ...] = ("spec", "routing", "defaults")
DRAFT = "https://json-schema.org/draft/2020-12/schema"
EXTENDS_DEFAULTS = "another defaults file (relative path) this one inherits and overrides"
TITLES = {
    "spec": "rulegen spec (version 1)",
    "routing": "rulegen routing file (version 1)",
    "defaults": "rulegen defaults file (version 1)",
}


def schema(kind: Kind, catalog: Catalog, vocabulary: Vocabulary) -> dict[str, Any]:
    """The JSON Schema of one kind of input file."""
    if kind == "routing":
        out = precise(RoutingFile.model_json_schema(by_alias=True))
    elif kind == "defaults":
        out = _defaults(_spec(catalog), vocabulary)
    else:
        out = _spec(catalog)
        without_defaults(out, DEFAULT_SEVERITIES.names, _fillable(catalog, vocabulary))
    out["$schema"] = DRAFT
    out["title"] = TITLES[kind]
    return out


def _spec(catalog: Catalog) -> dict[str, Any]:
    """The spec's schema, precise for generic validators (``rulegen.spec.precise``), each
    catalog alert's ``threshold`` in its signal's unit and range."""
    out = precise(spec_model(catalog).model_json_schema(by_alias=True))
    for name, signal in catalog.signals.items():
        fields = out["$defs"].get(f"Alert_{name}", {}).get("properties", {})
        if "threshold" in fields:
            fields["threshold"] = {"title": "Threshold", **threshold_schema(signal.threshold)}
        for key, param in signal.params.items():
            if key in fields:
                fields[key] = {**fields[key], "description": param.about or _about(key, param)}
    return out


def _about(key: str, param: ParamDef) -> str:
    """A signal parameter's help when its definition has no ``about``: what it is (the
    metric read, the quantile) and its default."""
    if param.type == "metric":
        what = "the metric the signal reads"
    else:
        what = "the quantile read" if key == "quantile" else f"the signal's {key} ({param.type})"
    return what if param.default is None else f"{what}; default: {param.default}"


def _fillable(catalog: Catalog, vocabulary: Vocabulary) -> dict[str, set[str]]:
    """Definition name → the keys of it a defaults file may set (``Vocabulary``)."""
    out = {
        f"Alert_{name}": set(vocabulary.alert.get(name, ())) - PER_ALERT for name in catalog.signals
    }
    out["CustomAlert"] = set(vocabulary.alert.get("custom", ())) - PER_ALERT
    out["SLOSpec"] = set(vocabulary.slo)
    return out


def _defaults(spec: dict[str, Any], vocabulary: Vocabulary) -> dict[str, Any]:
    """A defaults file: ``version``, ``extends`` and ``defaults``, whose keys are the spec's
    service keys, ``alerts`` by signal and ``slos``, none of them required."""
    defs: dict[str, Any] = copy.deepcopy(spec.get("$defs", {}))
    props = spec["properties"]
    alerts: dict[str, Any] = {}
    for signal, keys in sorted(vocabulary.alert.items()):
        found = _variant(defs, signal)
        allowed = sorted(keys - PER_ALERT)
        fields = found.get("properties", {}) if found else {}
        alerts[signal] = {
            **_open_object({k: fields.get(k, {}) for k in allowed}),
            "description": f"the keys every {signal} alert takes by default",
        }
    slo_fields = defs.get("SLOSpec", {}).get("properties", {})
    defaults = {k: props[k] for k in sorted(vocabulary.service) if k in props}
    defaults["alerts"] = {
        **_open_object(alerts),
        "description": "signal (or custom) → the keys every alert on it takes by default",
    }
    defaults["slos"] = {
        **_open_object({k: slo_fields.get(k, {}) for k in sorted(vocabulary.slo)}),
        "description": "the keys every SLO takes by default",
    }
    return {
        "type": "object",
        "properties": {
            "version": props["version"],
            "extends": {"type": "string", "description": EXTENDS_DEFAULTS},
            "defaults": {
                **_open_object(defaults),
                "description": "the keys every spec that extends this file takes unless it "
                "sets them: service keys, alerts by signal, slos",
            },
        },
        "required": ["version", "defaults"],
        "additionalProperties": False,
        "$defs": defs,
    }


def _variant(defs: dict[str, Any], signal: str) -> dict[str, Any] | None:
    """The definition of the alert on ``signal`` (tagged by its ``signal`` constant)."""
    for definition in defs.values():
        tag = definition.get("properties", {}).get("signal", {})
        if tag.get("const") == signal or tag.get("enum") == [signal]:
            return dict(definition)
    return None


def _open_object(properties: dict[str, Any]) -> dict[str, Any]:
    """An object of these keys, each optional (a default may set any of them)."""
    return {"type": "object", "properties": properties, "additionalProperties": False}
