"""rulegen: typed YAML specs of thresholds → Prometheus rules and promtool tests.

The library API mirrors the CLI pipeline: ``discover`` spec files, ``load_specs`` (spec →
resolved alerts), ``build`` (→ files in memory), ``validate`` (promtool on a written folder),
``write`` (the output folder: only rulegen's files replaced, all at once) and
``check_output`` (``--check``). Everything else is internal.
"""

from rulegen.build import BuildResult, build, validate
from rulegen.catalog import Catalog, load_catalog
from rulegen.errors import (
    Diagnostic,
    FieldPath,
    OutputConflict,
    RulegenError,
    SpecError,
    StaleOutput,
    ToolNotFoundError,
    UsageError,
    ValidationFailed,
)
from rulegen.load import SpecInputs, discover, load_specs
from rulegen.outdir import check_output, write

__version__ = "0.1.0"

__all__ = [
    "BuildResult",
    "Catalog",
    "Diagnostic",
    "FieldPath",
    "OutputConflict",
    "RulegenError",
    "SpecError",
    "SpecInputs",
    "StaleOutput",
    "ToolNotFoundError",
    "UsageError",
    "ValidationFailed",
    "__version__",
    "build",
    "check_output",
    "discover",
    "load_catalog",
    "load_specs",
    "validate",
    "write",
]
