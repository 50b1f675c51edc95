"""The Prometheus HTTP API: the client (``rulegen.promapi.client``) and, here, the limits the
command line states in its options.

Why apart: every command's parser names ``--timeout`` and the answer cap, and the parser runs
for every command, ``rulegen --version`` and a build included; the client brings
``http.client``, ``ssl`` and ``email`` (about 20 ms), which only ``lint --prometheus``,
``backtest`` and ``repair`` use.
"""

from __future__ import annotations

import argparse
import math

MAX_BYTES = 64 * 1024 * 1024
"""The largest answer read from the server, per request."""
MAX_TIMEOUT = 86_400.0
"""The longest ``--timeout`` accepted (a day)."""


def timeout_arg(text: str) -> float:
    """An argparse ``type``: ``--timeout SECONDS``, a number above 0 and at most a day."""
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not (0 < seconds <= MAX_TIMEOUT):
        raise argparse.ArgumentTypeError(
            f"expected a number of seconds above 0 and at most {MAX_TIMEOUT:g}, not {text!r}"
        )
    return seconds
