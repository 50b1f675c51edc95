"""Where a team's own signal definitions are: ``--signals DIR``, or ``signals/`` by default.

Why: the folder used to be ``templates/`` and the flag ``--templates``, but the files are
signal definitions, and "template" already means the Jinja2 and Go templates inside them. The
old names keep working: ``--templates`` is an alias of ``--signals``, and ``templates/`` is
still the default where ``signals/`` does not exist. When both exist only ``signals/`` is
loaded, never both, and the caller is told (``cli`` prints the warning).
"""

from __future__ import annotations

import argparse
from pathlib import Path

DEFAULT = Path("signals")
OLD_DEFAULT = Path("templates")
"""The default folder before ``signals/``: used when ``signals/`` does not exist."""

IGNORED = (
    f"{OLD_DEFAULT}/ is ignored: {DEFAULT}/ exists and is the default signals folder "
    f"(move {OLD_DEFAULT}/'s files into {DEFAULT}/, or name both with --signals)"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--signals DIR`` (repeatable) and its older name ``--templates DIR``, both into
    ``args.signals`` (``None`` when neither is given: see ``default_folders``)."""
    parser.add_argument("--signals", type=Path, action="append", default=None, metavar="DIR",
                        help=f"a folder of your own signal definitions (repeatable; default: "
                        f"{DEFAULT}/, else {OLD_DEFAULT}/)")  # fmt: skip
    parser.add_argument("--templates", dest="signals", type=Path, action="append",
                        default=None, metavar="DIR",
                        help="the older name of --signals (still accepted)")  # fmt: skip


def default_folders() -> tuple[list[Path], str | None]:
    """The signal folders to load when no ``--signals`` is given, and a warning to print
    (when ``templates/`` exists next to ``signals/`` and is ignored), relative to the
    working directory."""
    if DEFAULT.is_dir():
        return [DEFAULT], IGNORED if OLD_DEFAULT.is_dir() else None
    if OLD_DEFAULT.is_dir():
        return [OLD_DEFAULT], None
    return [], None
