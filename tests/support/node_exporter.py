"""A real node_exporter on 127.0.0.1, found and started the same way by every test that
needs this host's own metrics (the disk alerts under fio, the catalog's node signals).

Why not a fixture text: node_exporter's metrics are this machine's devices, and what a node
signal reads must exist on a real exporter of the release the stack ships (1.11 from Debian
testing, fetched with the 3.5 LTS tools; bookworm's 1.5 when the package is installed).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from support.prometheus import HOST, free_port

REPO = Path(__file__).resolve().parents[2]


def find_node_exporter() -> str | None:
    """``$RULEGEN_NODE_EXPORTER`` (what .ci/fetch-stack's env file sets), node_exporter on
    PATH (Debian's ``prometheus-node-exporter``: bookworm's 1.5 when installed), else the one
    ``make tools`` fetched with the 3.5 LTS stack (1.11; off PATH on the bookworm run)."""
    configured = os.environ.get("RULEGEN_NODE_EXPORTER")
    if configured:
        return configured  # a wrong path fails loudly when it is started
    found = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
    if found:
        return found
    fetched = sorted(REPO.glob(".tools/*/root/usr/bin/prometheus-node-exporter"))
    return str(fetched[0]) if fetched else None


NODE_EXPORTER = find_node_exporter()
NEEDS_NODE_EXPORTER = pytest.mark.skipif(
    NODE_EXPORTER is None,
    reason="needs node_exporter: `make tools` (fetched with the 3.5 LTS stack), "
    "RULEGEN_NODE_EXPORTER, or the Debian package prometheus-node-exporter",
)


@contextmanager
def node_exporter(workdir: Path, collectors: Sequence[str] | None = None) -> Iterator[str]:
    """A real node_exporter on a free 127.0.0.1 port (only ``collectors`` when given, else
    its defaults); yields its ``host:port``, stops it on exit."""
    assert NODE_EXPORTER is not None
    address = f"{HOST}:{free_port()}"
    flags = [f"--web.listen-address={address}"]
    if collectors is not None:
        flags += ["--collector.disable-defaults", *(f"--collector.{c}" for c in collectors)]
    log = workdir / "node_exporter.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([NODE_EXPORTER, *flags], stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                pytest.fail(f"node_exporter exited with {proc.returncode}:\n{log.read_text()}")
            try:
                with urllib.request.urlopen(f"http://{address}/metrics", timeout=2):
                    break
            except (urllib.error.URLError, OSError):
                assert time.monotonic() < deadline, "node_exporter not ready within 30s"
                time.sleep(0.1)
        yield address
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
