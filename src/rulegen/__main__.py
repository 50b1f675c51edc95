"""``python -m rulegen``."""

from rulegen.cli import main

main()
