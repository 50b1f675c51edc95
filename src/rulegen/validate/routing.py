"""The routing files, checked by amtool: the generated config, then every routing test.

Why here and not in ``rulegen.routing``: routing builds the files as plain data and knows
nothing of external tools; checking a written folder with amtool is validation, like
promtool's checks of the rule files.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from rulegen.errors import ValidationFailed
from rulegen.routing.output import CONFIG
from rulegen.validate import amtool


def validate_routing(
    folder: Path, cases: Sequence[tuple[str, Mapping[str, str], tuple[str, ...]]]
) -> list[str]:
    """amtool check-config, then every routing test; raises ``ValidationFailed`` on a miss."""
    checked = amtool.check_config(CONFIG, folder)
    if not checked.ok:
        raise ValidationFailed(
            ["amtool check-config failed:", *(f"  {m}" for m in checked.messages)]
        )
    failures: list[str] = []
    for name, labels, receivers in cases:
        tested = amtool.routes_test(CONFIG, labels, receivers, folder)
        if not tested.ok:
            failures.extend(f"{name}: {m}" for m in tested.messages)
    if failures:
        raise ValidationFailed(["amtool routing tests failed:", *failures])
    return [
        "amtool check-config: alertmanager.yml ok",
        f"amtool routing tests: {len(cases)} passed",
    ]
