"""Types shared by every input model: strict immutable models, unit-typed values.

Why: the service spec's alerts, SLOs and diagnoses and the routing file all take durations
and scalars whose unit decides how they parse; the check and its message live in the
resolvers, not in pydantic's unions.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, WithJsonSchema

# Values whose type depends on a unit are checked by the resolvers with the unit's own
# message ("invalid duration 5 (expected … 30s, 5m)"), not by pydantic's union of types.
Duration = Annotated[Any, WithJsonSchema({"type": "string", "pattern": "^[0-9]+[smhdwy]"})]
Scalar = Annotated[Any, WithJsonSchema({"type": ["string", "number"]})]
# A latency may have a fraction (``2.5s``), unlike a Prometheus duration.
Latency = Annotated[
    Any, WithJsonSchema({"type": "string", "pattern": "^[0-9]+(\\.[0-9]+)?(us|µs|ms|s|m|h)$"})
]
# A severity is one of the declared ones (``rulegen.source.severities``): checked, with the
# declared names in the message, by the resolvers; ``severities:`` itself likewise.
SEVERITY_SCHEMA = {
    "type": "string",
    "description": "one of the declared severities (critical, warning or info when no "
    "`severities:` is declared)",
}
Severity = Annotated[Any, WithJsonSchema(SEVERITY_SCHEMA)]
SeverityList = Annotated[
    Any,
    WithJsonSchema({
        "type": "array",
        "minItems": 1,
        "description": "the severities alerts may take, most severe first; the first pages "
        "unless an entry says `pages:`",
        "items": {
            "anyOf": [
                {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9_.-]*$"},
                {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9_.-]*$",
                                 "description": "the severity's name"},
                        "pages": {"type": "boolean",
                                  "description": "whether alerts of this severity page"},
                    },
                    "required": ["name"],
                    "additionalProperties": False,
                },
            ]
        },
    }),
]  # fmt: skip
ALERT_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"
SERVICE_NAME = r"^[a-z0-9][a-z0-9-]*$"
SLO_NAME = r"^[a-z0-9][a-z0-9_-]*$"


class SpecBase(BaseModel):
    """Every spec model rejects unknown keys and is immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
