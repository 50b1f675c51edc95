"""The routing files, checked by amtool: the generated config, then every routing test.

Why here and not in ``rulegen.routing``: routing builds the files as plain data and knows
nothing of external tools; checking a written folder with amtool is validation, like
promtool's checks of the rule files.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from rulegen import diagnostics as codes
from rulegen.errors import Diagnostic, FieldPath, ValidationFailed
from rulegen.routing.output import CONFIG
from rulegen.source.loader import Origin
from rulegen.validate import amtool


def validate_routing(
    folder: Path,
    cases: Sequence[tuple[str, Mapping[str, str], tuple[str, ...]]],
    origins: Mapping[str, Origin] | None = None,
) -> list[str]:
    """amtool check-config, then every routing test; raises ``ValidationFailed`` on a miss (a
    user's test at its spec position, from ``origins`` by case name)."""
    checked = amtool.check_config(CONFIG, folder)
    if not checked.ok:
        raise ValidationFailed(
            [
                Diagnostic(CONFIG, 0, 0, FieldPath(), m, codes.AMTOOL_CHECK)
                for m in checked.messages
            ],
            "amtool check-config failed:",
        )
    failures: list[Diagnostic] = []
    for name, labels, receivers in cases:
        tested = amtool.routes_test(CONFIG, labels, receivers, folder)
        if tested.ok:
            continue
        origin = (origins or {}).get(name)
        for message in tested.messages:
            if origin is not None:
                failures.append(origin.diagnostic(f"routing test: {message}", codes.AMTOOL_ROUTES,
                                                  path=FieldPath()))  # fmt: skip
            else:
                failures.append(
                    Diagnostic("", 0, 0, FieldPath(), f"{name}: {message}", codes.AMTOOL_ROUTES)
                )
    if failures:
        raise ValidationFailed(failures, "amtool routing tests failed:", indent="")
    return [
        "amtool check-config: alertmanager.yml ok",
        f"amtool routing tests: {len(cases)} passed",
    ]
