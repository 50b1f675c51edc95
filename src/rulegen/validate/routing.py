"""The routing files, checked by amtool: the generated config, then every routing test.

Why here and not in ``rulegen.routing``: routing builds the files as plain data and knows
nothing of external tools; checking a written folder with amtool is validation, like
promtool's checks of the rule files.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rulegen.core import diagnostics as codes
from rulegen.errors import Diagnostic, FieldPath, ValidationFailed
from rulegen.fanout import usable_cpus
from rulegen.routing.output import CONFIG
from rulegen.source.loader import Origin
from rulegen.validate import amtool
from rulegen.validate.cache import Key, TestCache


def validate_routing(
    folder: Path,
    cases: Sequence[tuple[str, Mapping[str, str], tuple[str, ...]]],
    origins: Mapping[str, Origin] | None = None,
    cache: TestCache | None = None,
) -> list[str]:
    """amtool check-config, then every routing test (side by side); raises
    ``ValidationFailed`` on a miss (a user's test at its spec position, from ``origins`` by
    case name). With ``cache``, a folder whose config, tests and amtool release passed
    before is not checked again."""
    key = _cache_key(cache, folder, cases)
    if cache is not None and cache.passed(key):
        return [
            "amtool check-config: alertmanager.yml ok (unchanged since a recorded pass)",
            f"amtool routing tests: {len(cases)} passed (unchanged since a recorded pass)",
        ]
    checked = amtool.check_config(CONFIG, folder)
    if not checked.ok:
        raise ValidationFailed(
            [
                Diagnostic(CONFIG, 0, 0, FieldPath(), m, codes.AMTOOL_CHECK)
                for m in checked.messages
            ],
            "amtool check-config failed:",
        )
    loaded, warnings = _other_modes(folder)
    failures = _route_failures(folder, cases, origins or {})
    if failures:
        raise ValidationFailed(failures, "amtool routing tests failed:", indent="")
    if cache is not None and not warnings:
        cache.remember(key)
    also = f" (and with {' and '.join(loaded)})" if loaded else ""
    return [
        f"amtool check-config: alertmanager.yml ok{also}",
        f"amtool routing tests: {len(cases)} passed",
        *warnings,
    ]


def _other_modes(folder: Path) -> tuple[list[str], list[str]]:
    """The opt-in matcher modes (``--enable-feature``) the config loads in, and a warning per
    mode it does not: what rulegen writes loads in all of them, a base file's own matchers
    may not, and a team running the default mode need not care (so not an error)."""
    loaded, warnings = [], []
    for mode in amtool.matcher_modes(amtool.build_info()):
        checked = amtool.check_config(CONFIG, folder, mode)
        if checked.ok:
            loaded.append(mode)
        else:
            reason = "; ".join(checked.messages) or "amtool gave no reason"
            warnings.append(
                f"warning: {CONFIG} does not load in Alertmanager's {mode} "
                f"(--enable-feature={mode}): {reason}"
            )
    return loaded, warnings


def _route_failures(
    folder: Path,
    cases: Sequence[tuple[str, Mapping[str, str], tuple[str, ...]]],
    origins: Mapping[str, Origin],
) -> list[Diagnostic]:
    """Every routing test, a few amtool processes at once (each takes milliseconds, and a
    fleet has hundreds); the failures in the order of ``cases``."""

    def run(case: tuple[str, Mapping[str, str], tuple[str, ...]]) -> amtool.ToolResult:
        return amtool.routes_test(CONFIG, case[1], case[2], folder)

    with ThreadPoolExecutor(max(1, min(len(cases), 2 * usable_cpus()))) as pool:
        results = list(pool.map(run, cases))
    failures: list[Diagnostic] = []
    for (name, _, _), tested in zip(cases, results, strict=True):
        origin = origins.get(name)
        for message in tested.messages:
            if origin is not None:
                failures.append(origin.diagnostic(f"routing test: {message}", codes.AMTOOL_ROUTES,
                                                  path=FieldPath()))  # fmt: skip
            else:
                failures.append(
                    Diagnostic("", 0, 0, FieldPath(), f"{name}: {message}", codes.AMTOOL_ROUTES)
                )
    return failures


def _cache_key(
    cache: TestCache | None,
    folder: Path,
    cases: Sequence[tuple[str, Mapping[str, str], tuple[str, ...]]],
) -> Key | None:
    """What the routing checks depend on: amtool's release, the config's bytes and every
    test case; ``None`` (always run) without a cache, a version, or a readable config."""
    if cache is None:
        return None
    identity = amtool.build_info()
    try:
        config = (folder / CONFIG).read_bytes()
    except OSError:
        return None
    if identity is None:
        return None
    tests = json.dumps([[n, sorted(labels.items()), list(r)] for n, labels, r in cases])
    return cache.key_of(identity, "amtool routing", [(CONFIG, config), ("cases", tests.encode())])
