"""Hand-written promtool cases of the vllm family's newer signals (run by
``test_signals_promtool.py``; the series use the labels the exporter really emits)."""

from __future__ import annotations

from support.exporters import Case

VLLM_CASES: dict[str, Case] = {}
