"""Hand-written promtool cases of the vllm family's newer signals (run by
``test_signals_promtool.py``; the series use the labels the exporter really emits)."""

from __future__ import annotations

from support.exporters import E2E_BOUNDS, Case, Series, histogram, series, vllm

# vllm/v1/metrics/loggers.py (0.11.0) and vllm/v1/metrics/buckets.py (0.34.0):
# inter-token latency (and the older time_per_output_token) bucket bounds.
ITL_BOUNDS = (
    "0.01", "0.025", "0.05", "0.075", "0.1", "0.15", "0.2", "0.3", "0.4", "0.5", "0.75",
    "1.0", "2.5", "5.0", "7.5", "10.0", "20.0", "40.0", "80.0",
)  # fmt: skip
# The request-latency bounds (e2e, queue, inference, prefill, decode) are the same list.
QUEUE_BOUNDS = E2E_BOUNDS
# Every finished_reason vLLM pre-creates a series for (0.34.0: stop, length, abort, error,
# repetition), with the number of requests finished that way per scrape.
REASONS = ("stop", "length", "abort", "error", "repetition")


def finished(n: int, steps: int, **per_scrape: int) -> list[Series]:
    """vllm:request_success_total of gpu-node-<n>, one series per finished_reason."""
    return [
        series(
            "vllm:request_success_total",
            f"0+{per_scrape.get(reason, 0)}x{steps}",
            {**vllm(n), "finished_reason": reason},
        )
        for reason in REASONS
    ]


VLLM_CASES: dict[str, Case] = {
    "vllm_preemptions: 0.8/s on each of two engines (1.6/s) fires per instance and model once "
    "rate[5m] passes 1/s plus 5m; 0.6/s and an engine that preempts nothing stay silent": Case(
        alerts="""
            - signal: vllm_preemptions
              threshold: 1
              for: 5m
              severity: warning
        """,
        input_series=[
            series("vllm:num_preemptions_total", "0+12x45", vllm(1, engine="0")),
            series("vllm:num_preemptions_total", "0+12x45", vllm(1, engine="1")),
            series("vllm:num_preemptions_total", "0+9x45", vllm(2)),
            series("vllm:num_preemptions_total", "0+0x45", vllm(3)),
        ],
        checks="""
            # rate[5m] of counters from 0 reads 1.6 * t / 5m: 0.96 at 3m, 1.04 at 3m15s
            alert_rule_test:
              - {eval_time: 8m, alertname: RequestPreemptionsHigh, exp_alerts: []}
              - eval_time: 8m15s
                alertname: RequestPreemptionsHigh
                exp_alerts:
                  - exp_labels: {instance: "gpu-node-1:8000", model_name: deepseek-v4,
                                 service: sig, severity: warning, team: inference}
                    exp_annotations: {summary: "1.6", description: RequestPreemptionsHigh}
              - eval_time: 11m
                alertname: RequestPreemptionsHigh
                exp_alerts:
                  - exp_labels: {instance: "gpu-node-1:8000", model_name: deepseek-v4,
                                 service: sig, severity: warning, team: inference}
                    exp_annotations: {summary: "1.6", description: RequestPreemptionsHigh}
        """,
    ),
    "vllm_queue_time: p99 9 s over both engines fires per instance and model after 5m; "
    "p99 2.5 s and no finished requests stay silent": Case(
        alerts="""
            - signal: vllm_queue_time
              threshold: 5s
              for: 5m
              severity: warning
        """,
        input_series=[
            # per engine and scrape: 100 requests, 95 waited <= 2.5 s, 5 in (5 s, 10 s]:
            # rank 99 sits 4/5 into (5, 10] -> p99 9 s
            *histogram(
                "vllm:request_queue_time_seconds",
                QUEUE_BOUNDS,
                {"0.3": 60, "1.0": 90, "2.5": 95, "5.0": 95, "10.0": 100},
                30,
                vllm(1, engine="0"),
            ),
            *histogram(
                "vllm:request_queue_time_seconds",
                QUEUE_BOUNDS,
                {"0.3": 60, "1.0": 90, "2.5": 95, "5.0": 95, "10.0": 100},
                30,
                vllm(1, engine="1"),
            ),
            # 99 of 100 <= 2.5 s, 90 <= 1 s -> p99 2.5 s
            *histogram(
                "vllm:request_queue_time_seconds",
                QUEUE_BOUNDS,
                {"0.3": 60, "1.0": 90, "2.5": 99, "5.0": 100},
                30,
                vllm(2),
            ),
            # no requests finished: histogram_quantile gives NaN
            *histogram("vllm:request_queue_time_seconds", QUEUE_BOUNDS, {}, 30, vllm(3)),
        ],
        checks="""
            alert_rule_test:
              - {eval_time: 5m, alertname: RequestQueueTimeHigh, exp_alerts: []}
              - eval_time: 5m15s
                alertname: RequestQueueTimeHigh
                exp_alerts:
                  - exp_labels: {instance: "gpu-node-1:8000", model_name: deepseek-v4,
                                 service: sig, severity: warning, team: inference}
                    exp_annotations: {summary: 9s, description: RequestQueueTimeHigh}
        """,
    ),
    "itl_latency: p99 125 ms fires per instance and model after 5m, once though vLLM 0.11 also "
    "exports the deprecated name; p99 72 ms and no decoding stay silent": Case(
        alerts="""
            - signal: itl_latency
              threshold: 100ms
              for: 5m
              severity: warning
        """,
        input_series=[
            # per scrape: 1000 output events, 980 <= 0.1 s, 20 in (0.1, 0.15]: rank 990 half
            # way into (0.1, 0.15] -> p99 125 ms
            *histogram(
                "vllm:inter_token_latency_seconds",
                ITL_BOUNDS,
                {"0.05": 900, "0.1": 980, "0.15": 1000},
                30,
                vllm(1),
            ),
            # vLLM 0.11 observes the same events into the deprecated histogram too
            *histogram(
                "vllm:time_per_output_token_seconds",
                ITL_BOUNDS,
                {"0.05": 900, "0.1": 980, "0.15": 1000},
                30,
                vllm(1),
            ),
            # 995 of 1000 <= 0.075 s, 950 <= 0.05 s -> p99 0.05 + 0.025 * 40/45 = 72 ms
            *histogram(
                "vllm:inter_token_latency_seconds",
                ITL_BOUNDS,
                {"0.025": 500, "0.05": 950, "0.075": 995, "0.1": 1000},
                30,
                vllm(2),
            ),
            # an engine that decodes nothing: NaN
            *histogram("vllm:inter_token_latency_seconds", ITL_BOUNDS, {}, 30, vllm(3)),
        ],
        checks="""
            alert_rule_test:
              - {eval_time: 5m, alertname: InterTokenLatencyHigh, exp_alerts: []}
              - eval_time: 5m15s
                alertname: InterTokenLatencyHigh
                exp_alerts:
                  - exp_labels: {instance: "gpu-node-1:8000", model_name: deepseek-v4,
                                 service: sig, severity: warning, team: inference}
                    exp_annotations: {summary: 125ms, description: InterTokenLatencyHigh}
        """,
    ),
    "vllm_request_errors: 4 % errors + 6 % aborts fires per instance and model after 5m; "
    "2 % errors, requests cut at max_tokens and no traffic stay silent": Case(
        alerts="""
            - signal: vllm_request_errors
              threshold: 5%
              for: 5m
              severity: critical
        """,
        input_series=[
            *finished(1, 30, stop=850, length=50, abort=60, error=40),
            *finished(2, 30, stop=900, length=80, error=20),
            # half the requests hit max_tokens: a finish reason, not a failure
            *finished(3, 30, stop=500, length=450, repetition=50),
            *finished(4, 30),
        ],
        checks="""
            alert_rule_test:
              - {eval_time: 5m, alertname: RequestErrorRatioHigh, exp_alerts: []}
              - eval_time: 5m15s
                alertname: RequestErrorRatioHigh
                exp_alerts:
                  - exp_labels: {instance: "gpu-node-1:8000", model_name: deepseek-v4,
                                 service: sig, severity: critical, team: inference}
                    exp_annotations: {summary: 10%, description: RequestErrorRatioHigh}
        """,
    ),
    "kv_cache_forecast: usage rising 0.2 % a scrape from 70.5 % fires per engine 5m after its "
    "10m forecast passes 98 %; high flat, slowly falling, slowly rising and idle engines "
    "stay silent": Case(
        alerts="""
            - signal: kv_cache_forecast
              threshold: 98%
              for: 5m
              severity: warning
        """,
        input_series=[
            # 0.705 + 0.002 k at scrape k: the forecast 10m (40 scrapes) ahead is
            # 0.785 + 0.002 k, 97.9 % at 24m15s (k = 97), 98.1 % at 24m30s (k = 98)
            series("vllm:kv_cache_usage_perc", "0.705+0.002x125", vllm(1, engine="0")),
            # its sibling engine, high but flat: the forecast (99 %) is not a trend
            series("vllm:kv_cache_usage_perc", "0.99+0x125", vllm(1, engine="1")),
            # draining slowly from full: the forecast stays above 98 % for 40m, but falls
            series("vllm:kv_cache_usage_perc", "1-0.0001x125", vllm(2)),
            # filling slowly, far from full: 46 % in 10m at 29m30s
            series("vllm:kv_cache_usage_perc", "0.3+0.001x125", vllm(3)),
            series("vllm:kv_cache_usage_perc", "0+0x125", vllm(4)),
        ],
        checks="""
            alert_rule_test:
              - {eval_time: 24m15s, alertname: KVCacheFullSoon, exp_alerts: []}
              - {eval_time: 29m15s, alertname: KVCacheFullSoon, exp_alerts: []}
              - eval_time: 29m30s
                alertname: KVCacheFullSoon
                exp_alerts:
                  - exp_labels: {engine: "0", instance: "gpu-node-1:8000", job: vllm,
                                 model_name: deepseek-v4,
                                 service: sig, severity: warning, team: inference}
                    exp_annotations: {summary: 102.1%, description: KVCacheFullSoon}
        """,
    ),
}
