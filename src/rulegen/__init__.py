"""rulegen: typed YAML specs of thresholds → Prometheus rules and promtool tests.

The library API mirrors the CLI pipeline: ``discover`` spec files, ``load_specs`` (spec →
resolved alerts), ``build`` (→ files in memory), ``validate`` (promtool on a written folder),
``write`` (the output folder: only rulegen's files replaced, all at once) and
``check_output`` (``--check``). Everything else is internal.

Why the names are imported on first use: the command line imports this package before
anything else, and the pipeline behind these names (pydantic, Jinja2, the PromQL parser, every
feature) takes most of a second to import; ``rulegen --version`` needs none of it.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

# Each name of the API, by the module that defines it.
_EXPORTS = {
    **dict.fromkeys(("BuildResult", "build", "validate"), "rulegen.build"),
    **dict.fromkeys(("Catalog", "load_catalog"), "rulegen.catalog"),
    **dict.fromkeys(
        (
            "Diagnostic",
            "FieldPath",
            "OutputConflict",
            "RulegenError",
            "SpecError",
            "StaleOutput",
            "ToolNotFoundError",
            "UsageError",
            "ValidationFailed",
        ),
        "rulegen.errors",
    ),  # fmt: skip
    **dict.fromkeys(("SpecInputs", "discover", "load_specs"), "rulegen.load"),
    **dict.fromkeys(("check_output", "write"), "rulegen.outdir"),
}


def __getattr__(name: str) -> Any:
    """A name of the API, imported from its module the first time it is asked for."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


class _Package(types.ModuleType):
    """The package module, which keeps ``rulegen.build`` and ``rulegen.validate`` the
    functions: importing the submodules of the same names would otherwise make them the
    package attributes (the import system binds a submodule on its parent once loaded)."""

    def __setattr__(self, name: str, value: object) -> None:
        if name in _EXPORTS and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

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
