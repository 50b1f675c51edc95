"""``python -m rulegen.catalog [DIR…]``: print the signal catalog as a markdown table.

With folders of signal files (like ``--signals DIR``), their signals are listed too.
"""

from __future__ import annotations

import sys
from pathlib import Path

from rulegen.catalog import load_catalog
from rulegen.catalog.table import render_table


def main(argv: list[str]) -> None:
    """Write the table of the built-in catalog (plus ``argv``'s folders) to stdout."""
    sys.stdout.write(render_table(load_catalog([Path(a) for a in argv])))


if __name__ == "__main__":
    main(sys.argv[1:])
