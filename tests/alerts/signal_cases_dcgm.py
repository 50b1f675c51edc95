"""Hand-written promtool cases of the dcgm family's newer signals (run by
``test_signals_promtool.py``; the series use the labels the exporter really emits)."""

from __future__ import annotations

from support.exporters import Case, dcgm, series


def _xid(n: int, gpu: int, code: int, message: str) -> dict[str, str]:
    """dcgm-exporter's XID series: err_code and err_msg labels (since 3.3.6-3.4.2, PR #309)."""
    return {**dcgm(n, gpu), "err_code": str(code), "err_msg": message}


def _labels(n: int, gpu: int, **extra: str) -> str:
    """The YAML flow mapping of an alert's labels: the GPU's series labels and the spec's."""
    labels = {**dcgm(n, gpu), **extra, "service": "sig", "team": "inference"}
    return "{" + ", ".join(f'{k}: "{v}"' for k, v in sorted(labels.items())) + "}"


_XID_79 = _labels(1, 0, err_code="79", err_msg="GPU has fallen off the bus", severity="critical")
_XID_48 = _labels(1, 2, err_code="48", err_msg="Double Bit ECC Error", severity="critical")
_XID_94 = _labels(2, 0, severity="critical")

DCGM_CASES: dict[str, Case] = {
    "gpu_xid_errors: a new XID 79 fires at once and for 1h, then resolves while the exporter "
    "still shows it; an XID older than 1h, an ignored XID 43 and 'No Error' stay silent; an "
    "exporter without err_code fires on a change of value": Case(
        alerts="""
            - signal: gpu_xid_errors
              threshold: 0
              severity: critical
        """,
        interval="1m",
        input_series=[
            # GPU 0: no XID until 5m, then XID 79 (a new err_code series, sticky from then on)
            series("DCGM_FI_DEV_XID_ERRORS", "0x4 stale", _xid(1, 0, 0, "No Error")),
            series(
                "DCGM_FI_DEV_XID_ERRORS",
                "_ _ _ _ _ 79x80",
                _xid(1, 0, 79, "GPU has fallen off the bus"),
            ),
            # GPU 1: an application's XID 43 at 5m, ignored by default
            series("DCGM_FI_DEV_XID_ERRORS", "0x4 stale", _xid(1, 1, 0, "No Error")),
            series(
                "DCGM_FI_DEV_XID_ERRORS",
                "_ _ _ _ _ 43x80",
                _xid(1, 1, 43, "GPU stopped processing"),
            ),
            # GPU 2: XID 48 already there at the first scrape: new for the first hour only
            series("DCGM_FI_DEV_XID_ERRORS", "48x85", _xid(1, 2, 48, "Double Bit ECC Error")),
            # GPU 3: never an XID
            series("DCGM_FI_DEV_XID_ERRORS", "0x85", _xid(1, 3, 0, "No Error")),
            # an exporter older than 3.3.6-3.4.2 (no err_code): the same series changes value
            series("DCGM_FI_DEV_XID_ERRORS", "0x69 94x15", dcgm(2, 0)),
        ],
        checks=f"""
            alert_rule_test:
              - eval_time: 4m
                alertname: GpuXidError
                exp_alerts:
                  - exp_labels: {_XID_48}
                    exp_annotations: {{summary: "48", description: GpuXidError}}
              - eval_time: 5m
                alertname: GpuXidError
                exp_alerts:
                  - exp_labels: {_XID_79}
                    exp_annotations: {{summary: "79", description: GpuXidError}}
                  - exp_labels: {_XID_48}
                    exp_annotations: {{summary: "48", description: GpuXidError}}
              - eval_time: 60m
                alertname: GpuXidError
                exp_alerts:
                  - exp_labels: {_XID_79}
                    exp_annotations: {{summary: "79", description: GpuXidError}}
              - eval_time: 64m45s
                alertname: GpuXidError
                exp_alerts:
                  - exp_labels: {_XID_79}
                    exp_annotations: {{summary: "79", description: GpuXidError}}
              - {{eval_time: 65m, alertname: GpuXidError, exp_alerts: []}}
              - eval_time: 70m
                alertname: GpuXidError
                exp_alerts:
                  - exp_labels: {_XID_94}
                    exp_annotations: {{summary: "94", description: GpuXidError}}
        """,
    ),
    "gpu_row_remap_failure: a failed remap and 600 uncorrectable remapped rows fire at once; "
    "3 and 511 rows without a failure stay silent": Case(
        alerts="""
            - signal: gpu_row_remap_failure
              threshold: 0
              severity: critical
        """,
        interval="1m",
        input_series=[
            series("DCGM_FI_DEV_ROW_REMAP_FAILURE", "1x10", dcgm(1, 0)),
            series("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "2x10", dcgm(1, 0)),
            series("DCGM_FI_DEV_ROW_REMAP_FAILURE", "0x10", dcgm(1, 1)),
            series("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "600x10", dcgm(1, 1)),
            series("DCGM_FI_DEV_ROW_REMAP_FAILURE", "0x10", dcgm(1, 2)),
            series("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "3x10", dcgm(1, 2)),
            series("DCGM_FI_DEV_ROW_REMAP_FAILURE", "0x10", dcgm(1, 3)),
            series("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "511x10", dcgm(1, 3)),
        ],
        checks=f"""
            alert_rule_test:
              - eval_time: 0s
                alertname: GpuRowRemapFailure
                exp_alerts:
                  - exp_labels: {_labels(1, 0, severity="critical")}
                    exp_annotations: {{summary: "1", description: GpuRowRemapFailure}}
                  - exp_labels: {_labels(1, 1, severity="critical")}
                    exp_annotations: {{summary: "1", description: GpuRowRemapFailure}}
              - eval_time: 10m
                alertname: GpuRowRemapFailure
                exp_alerts:
                  - exp_labels: {_labels(1, 0, severity="critical")}
                    exp_annotations: {{summary: "1", description: GpuRowRemapFailure}}
                  - exp_labels: {_labels(1, 1, severity="critical")}
                    exp_annotations: {{summary: "1", description: GpuRowRemapFailure}}
        """,
    ),
    "gpu_power: 392 W of 400 W fires after 15m, 290 W of an enforced 300 W limit fires the "
    "limit_metric alert; 360 W, an idle GPU and a limit of 0 stay silent": Case(
        alerts="""
            - signal: gpu_power
              threshold: 95%
              for: 15m
              severity: warning
            - signal: gpu_power
              name: GpuPowerAtEnforcedLimit
              threshold: 95%
              for: 15m
              severity: warning
              limit_metric: DCGM_FI_DEV_ENFORCED_POWER_LIMIT
        """,
        interval="1m",
        input_series=[
            *(
                series("DCGM_FI_DEV_POWER_USAGE", f"{watts}x20", dcgm(1, gpu))
                for gpu, watts in enumerate((392, 360, 60, 290, 390))
            ),
            *(
                series("DCGM_FI_DEV_ENFORCED_POWER_LIMIT", f"{limit}x20", dcgm(1, gpu))
                for gpu, limit in enumerate((400, 400, 400, 300, 0))
            ),
        ],
        checks=f"""
            alert_rule_test:
              - {{eval_time: 14m45s, alertname: GpuPowerHigh, exp_alerts: []}}
              - {{eval_time: 14m45s, alertname: GpuPowerAtEnforcedLimit, exp_alerts: []}}
              - eval_time: 15m
                alertname: GpuPowerHigh
                exp_alerts:
                  - exp_labels: {_labels(1, 0, severity="warning")}
                    exp_annotations: {{summary: 98%, description: GpuPowerHigh}}
                  - exp_labels: {_labels(1, 4, severity="warning")}
                    exp_annotations: {{summary: 97.5%, description: GpuPowerHigh}}
              - eval_time: 15m
                alertname: GpuPowerAtEnforcedLimit
                exp_alerts:
                  - exp_labels: {_labels(1, 0, severity="warning")}
                    exp_annotations: {{summary: 98%, description: GpuPowerAtEnforcedLimit}}
                  - exp_labels: {_labels(1, 3, severity="warning")}
                    exp_annotations: {{summary: 96.67%, description: GpuPowerAtEnforcedLimit}}
        """,
    ),
    "gpu_memory_used: 98.75 % fires after 15m; a vLLM GPU at 93 %, an idle GPU and one "
    "reporting no memory stay silent": Case(
        alerts="""
            - signal: gpu_memory_used
              threshold: 97%
              for: 15m
              severity: warning
        """,
        interval="1m",
        input_series=[
            series("DCGM_FI_DEV_FB_USED", "79000x20", dcgm(1, 0)),
            series("DCGM_FI_DEV_FB_FREE", "1000x20", dcgm(1, 0)),
            # vLLM's gpu_memory_utilization 0.9 plus its CUDA context
            series("DCGM_FI_DEV_FB_USED", "74400x20", dcgm(1, 1)),
            series("DCGM_FI_DEV_FB_FREE", "5600x20", dcgm(1, 1)),
            series("DCGM_FI_DEV_FB_USED", "4x20", dcgm(1, 2)),
            series("DCGM_FI_DEV_FB_FREE", "79996x20", dcgm(1, 2)),
            series("DCGM_FI_DEV_FB_USED", "0x20", dcgm(1, 3)),
            series("DCGM_FI_DEV_FB_FREE", "0x20", dcgm(1, 3)),
        ],
        checks=f"""
            alert_rule_test:
              - {{eval_time: 14m45s, alertname: GpuMemoryUsageHigh, exp_alerts: []}}
              - eval_time: 15m
                alertname: GpuMemoryUsageHigh
                exp_alerts:
                  - exp_labels: {_labels(1, 0, severity="warning")}
                    exp_annotations: {{summary: 98.75%, description: GpuMemoryUsageHigh}}
        """,
    ),
    "pcie_replays: 1.2 replays/s fires after 10m; 0.2/s, a healthy link and a counter reset by "
    "a driver reload stay silent": Case(
        alerts="""
            - signal: pcie_replays
              threshold: 0.5
              for: 10m
              severity: warning
        """,
        input_series=[
            series("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "0+18x100", dcgm(1, 0)),
            series("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "0+3x100", dcgm(1, 1)),
            series("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "0x100", dcgm(1, 2)),
            series("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "1000x40 0x60", dcgm(1, 3)),
        ],
        checks=f"""
            # rate[5m] of a counter that starts at 0 ramps up: 0.48/s at 2m, 0.72/s at 3m, so the
            # alert is still pending at 12m and firing by 13m
            alert_rule_test:
              - {{eval_time: 12m, alertname: PcieReplaysHigh, exp_alerts: []}}
              - eval_time: 13m
                alertname: PcieReplaysHigh
                exp_alerts:
                  - exp_labels: {_labels(1, 0, severity="warning")}
                    exp_annotations: {{summary: "1.2", description: PcieReplaysHigh}}
              - eval_time: 25m
                alertname: PcieReplaysHigh
                exp_alerts:
                  - exp_labels: {_labels(1, 0, severity="warning")}
                    exp_annotations: {{summary: "1.2", description: PcieReplaysHigh}}
        """,
    ),
}
