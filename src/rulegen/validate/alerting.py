"""The HA pair's ``alerting:`` block, checked by promtool as part of a ``prometheus.yml``.

Why a whole config: the block is not a file Prometheus loads on its own but a part a team
merges into its ``prometheus.yml``; ``promtool check config`` on a config made of it, the
replica label's external label and an Alertmanager target checks it as a replica loads it
(the relabel action and regex, the label name under the declared Prometheus version).
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from rulegen.core import diagnostics as codes
from rulegen.errors import Diagnostic, FieldPath, ValidationFailed
from rulegen.routing.ha import FILE
from rulegen.validate import promtool
from rulegen.validate.cache import TestCache

CONFIG = "prometheus.yml"
# where the merged config sends its alerts: any address does, promtool connects to none
PEERS = ("127.0.0.1:9093", "127.0.0.1:9094", "127.0.0.1:9095")


def replica_config(block: dict[str, Any], labels: Sequence[str], replica: str) -> dict[str, Any]:
    """A replica's ``prometheus.yml``: its external labels (each replica label set to
    ``replica``), the generated block merged into ``alerting:``, every peer listed."""
    alerting = dict(block.get("alerting") or {})
    alerting["alertmanagers"] = [{"static_configs": [{"targets": list(PEERS)}]}]
    return {
        "global": {"external_labels": dict.fromkeys(sorted(labels), replica)},
        "alerting": alerting,
    }


def validate_alerting(folder: Path, labels: Sequence[str], cache: TestCache | None) -> str:
    """``promtool check config`` on a replica's config made of the written block; the
    summary line, or ``ValidationFailed`` with promtool's messages."""
    data = (folder / FILE).read_bytes()
    key = cache.key_of(cache.promtool_version, "check config", [(FILE, data)]) if cache else None
    if cache is not None and cache.passed(key):
        return f"promtool check config: {FILE} ok (unchanged since a recorded pass)"
    config = replica_config(yaml.safe_load(data) or {}, labels, "a")
    with tempfile.TemporaryDirectory(prefix="rulegen-alerting-") as scratch:
        (Path(scratch) / CONFIG).write_text(yaml.safe_dump(config, sort_keys=True), "utf-8")
        checked = promtool.check_config(CONFIG, Path(scratch))
    if not checked.ok:
        raise ValidationFailed(
            [Diagnostic(FILE, 0, 0, FieldPath(), m, codes.PROMTOOL_CHECK) for m in checked.messages]
            or [Diagnostic(FILE, 0, 0, FieldPath(), "rejected", codes.PROMTOOL_CHECK)],
            "promtool check config failed (the alerting block merged into a prometheus.yml):",
        )
    if cache is not None:
        cache.remember(key)
    return f"promtool check config: {FILE} ok (merged into a replica's prometheus.yml)"
