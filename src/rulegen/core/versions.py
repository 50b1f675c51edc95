"""Which Prometheus a spec's rules are written for, and what follows from its version.

Why one place: the declared version (``prometheus: {version: "3.5"}``) decides the PromQL
semantics the generated tests assume (range selectors are closed ``[t - r, t]`` before 3.0
and left-open ``(t - r, t]`` from 3.0) and the shape of the SLO base recordings. Output
depends on the declaration only, never on the promtool that happens to be installed; a tool
whose semantics differ from the declaration is refused with one line
(``rulegen.build.refuse_other_semantics``, with ``same_semantics`` here).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

# The current long-term-support release: the version a spec gets when it declares none.
DEFAULT_VERSION = "3.5"
# The oldest release rulegen writes for: Debian bookworm's (keep_firing_for is 2.42's).
OLDEST = (2, 42)

_VERSION = re.compile(r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$")
_TOOL_VERSION = re.compile(r"\bversion (\d+)\.(\d+)\.(\d+)")


@dataclass(frozen=True, order=True)
class PrometheusVersion:
    """A Prometheus release line, ``MAJOR.MINOR``."""

    major: int
    minor: int

    @classmethod
    def parse(cls, text: str) -> PrometheusVersion:
        """``"3.5"`` → ``PrometheusVersion(3, 5)``; ValueError names what is wrong."""
        found = _VERSION.fullmatch(text.strip())
        if not found:
            raise ValueError(f'must be MAJOR.MINOR, such as "3.5" (got {text!r})')
        version = cls(int(found.group(1)), int(found.group(2)))
        if (version.major, version.minor) < OLDEST:
            raise ValueError(
                f"rulegen writes rules for Prometheus {OLDEST[0]}.{OLDEST[1]} or later (got {text})"
            )
        return version

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"

    @property
    def left_open_ranges(self) -> bool:
        """Range selectors select ``(t - r, t]`` (3.0 on) instead of ``[t - r, t]``."""
        return self.major >= 3

    @property
    def semantics(self) -> Semantics:
        """The PromQL semantics that change what rulegen's rules and tests compute."""
        return "left-open" if self.left_open_ranges else "closed"

    def at_least(self, major: int, minor: int) -> bool:
        return (self.major, self.minor) >= (major, minor)


Semantics = Literal["closed", "left-open"]

DEFAULT = PrometheusVersion.parse(DEFAULT_VERSION)

# promtool test rules --junit: the first release that writes it
JUNIT = (2, 55)


def tool_version(output: str) -> tuple[int, int, int] | None:
    """``promtool, version 3.5.3+ds1 (branch: …)`` → ``(3, 5, 3)``; None when unreadable."""
    found = _TOOL_VERSION.search(output)
    if not found:
        return None
    return int(found.group(1)), int(found.group(2)), int(found.group(3))


def same_semantics(declared: PrometheusVersion, tool: tuple[int, int, int]) -> bool:
    """Whether a tool of version ``tool`` evaluates as the declared Prometheus does."""
    return PrometheusVersion(tool[0], tool[1]).left_open_ranges == declared.left_open_ranges
