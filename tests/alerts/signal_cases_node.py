"""Hand-written promtool cases of the node family's newer signals (run by
``test_signals_promtool.py``; the series use the labels the exporter really emits)."""

from __future__ import annotations

from support.exporters import Case, node, series


def _pattern(down_of_four: int, samples: int = 65) -> str:
    """``up`` failing ``down_of_four`` scrapes of every four (the failed ones first)."""
    cycle = ["0"] * down_of_four + ["1"] * (4 - down_of_four)
    return " ".join(cycle[i % 4] for i in range(samples))


FS = {"device": "/dev/nvme1n1", "fstype": "ext4", "mountpoint": "/models"}
TERA = 3840000000000  # a 3.84 TB NVMe namespace

NODE_CASES: dict[str, Case] = {
    "io_pressure: 35 % of the time stalled on I/O fires after 10m; 15 % (with 12 % full) and "
    "an idle host stay silent": Case(
        alerts="""
            - signal: io_pressure
              threshold: 20%
              severity: warning
        """,
        input_series=[
            # some task waited on I/O 0.35 s per s
            series("node_pressure_io_waiting_seconds_total", "0+5.25x64", node(1)),
            series("node_pressure_io_stalled_seconds_total", "0+1.5x64", node(1)),
            # 15 % some (its 12 % full is not what the alert reads)
            series("node_pressure_io_waiting_seconds_total", "0+2.25x64", node(2)),
            series("node_pressure_io_stalled_seconds_total", "0+1.8x64", node(2)),
            series("node_pressure_io_waiting_seconds_total", "0+0x64", node(3)),
            series("node_pressure_io_stalled_seconds_total", "0+0x64", node(3)),
        ],
        checks="""
            # rate[5m] of a counter from 0 passes 20 % at 3m (21 %): firing from 13m
            alert_rule_test:
              - {eval_time: 12m30s, alertname: IoPressureHigh, exp_alerts: []}
              - eval_time: 14m
                alertname: IoPressureHigh
                exp_alerts:
                  - exp_labels: {instance: "gpu-node-1:9100", job: node, service: sig,
                                 severity: warning, team: inference}
                    exp_annotations: {summary: 35%, description: IoPressureHigh}
        """,
    ),
    "cpu_pressure: 80 % of the time waiting for a CPU fires after 10m; 45 % and an idle "
    "host stay silent": Case(
        alerts="""
            - signal: cpu_pressure
              threshold: 50%
              severity: warning
        """,
        input_series=[
            series("node_pressure_cpu_waiting_seconds_total", "0+12x64", node(1)),
            series("node_pressure_cpu_waiting_seconds_total", "0+6.75x64", node(2)),
            series("node_pressure_cpu_waiting_seconds_total", "0+0x64", node(3)),
        ],
        checks="""
            # passes 50 % at 3m15s (52 %): firing from 13m15s
            alert_rule_test:
              - {eval_time: 12m45s, alertname: CpuPressureHigh, exp_alerts: []}
              - eval_time: 14m
                alertname: CpuPressureHigh
                exp_alerts:
                  - exp_labels: {instance: "gpu-node-1:9100", job: node, service: sig,
                                 severity: warning, team: inference}
                    exp_annotations: {summary: 80%, description: CpuPressureHigh}
        """,
    ),
    "memory_pressure on the full counter: 6 % of the time with every task stalled fires "
    "after 10m; 30 % some with 1 % full and an idle host stay silent": Case(
        alerts="""
            - signal: memory_pressure
              threshold: 2%
              severity: critical
              metric: node_pressure_memory_stalled_seconds_total
        """,
        input_series=[
            series("node_pressure_memory_waiting_seconds_total", "0+4.5x64", node(1)),
            series("node_pressure_memory_stalled_seconds_total", "0+0.9x64", node(1)),
            # much "some" pressure, little "full": silent, the alert reads full
            series("node_pressure_memory_waiting_seconds_total", "0+4.5x64", node(2)),
            series("node_pressure_memory_stalled_seconds_total", "0+0.15x64", node(2)),
            series("node_pressure_memory_waiting_seconds_total", "0+0x64", node(3)),
            series("node_pressure_memory_stalled_seconds_total", "0+0x64", node(3)),
        ],
        checks="""
            # passes 2 % at 1m45s (2.1 %): firing from 11m45s
            alert_rule_test:
              - {eval_time: 11m15s, alertname: MemoryPressureHigh, exp_alerts: []}
              - eval_time: 13m
                alertname: MemoryPressureHigh
                exp_alerts:
                  - exp_labels: {instance: "gpu-node-1:9100", job: node, service: sig,
                                 severity: critical, team: inference}
                    exp_annotations: {summary: 6%, description: MemoryPressureHigh}
        """,
    ),
    "softnet_drops: backlog drops on two CPUs add up per host and fire after 10m; a host "
    "that only squeezes stays silent; squeezes at 10/s fire their own alert": Case(
        alerts="""
            - signal: softnet_drops
              threshold: 0
              severity: warning
            - signal: softnet_drops
              name: SoftnetBudgetSqueezed
              threshold: 5
              severity: info
              metric: node_softnet_times_squeezed_total
        """,
        input_series=[
            # 0.2 + 0.1 packets/s dropped on CPUs 0 and 2, none on CPU 1
            series("node_softnet_dropped_total", "0+3x64", node(1, cpu="0")),
            series("node_softnet_dropped_total", "0+0x64", node(1, cpu="1")),
            series("node_softnet_dropped_total", "0+1.5x64", node(1, cpu="2")),
            series("node_softnet_times_squeezed_total", "0+15x64", node(1, cpu="0")),
            series("node_softnet_times_squeezed_total", "0+15x64", node(1, cpu="1")),
            # budget exhausted 10 times/s (6 + 4), but no packet dropped
            series("node_softnet_dropped_total", "0+0x64", node(2, cpu="0")),
            series("node_softnet_dropped_total", "0+0x64", node(2, cpu="1")),
            series("node_softnet_times_squeezed_total", "0+90x64", node(2, cpu="0")),
            series("node_softnet_times_squeezed_total", "0+60x64", node(2, cpu="1")),
        ],
        checks="""
            # any drop is above 0 from the second scrape: firing from 10m15s; the squeezes
            # pass 5/s at 2m45s (5.5): firing from 12m45s
            alert_rule_test:
              - {eval_time: 10m, alertname: SoftnetPacketDrops, exp_alerts: []}
              - eval_time: 14m
                alertname: SoftnetPacketDrops
                exp_alerts:
                  - exp_labels: {instance: "gpu-node-1:9100", job: node, service: sig,
                                 severity: warning, team: inference}
                    exp_annotations: {summary: 300m, description: SoftnetPacketDrops}
              - {eval_time: 12m15s, alertname: SoftnetBudgetSqueezed, exp_alerts: []}
              - eval_time: 14m
                alertname: SoftnetBudgetSqueezed
                exp_alerts:
                  - exp_labels: {instance: "gpu-node-2:9100", job: node, service: sig,
                                 severity: info, team: inference}
                    exp_annotations: {summary: "10", description: SoftnetBudgetSqueezed}
        """,
    ),
    "tcp_listen_overflows: ListenDrops (which counts every overflow) is read, not added to "
    "ListenOverflows; a host exporting only ListenOverflows fires on them; idle stays "
    "silent": Case(
        alerts="""
            - signal: tcp_listen_overflows
              threshold: 1
              severity: warning
        """,
        input_series=[
            # 2 overflows/s and 0.5 other listen drops/s: ListenDrops 2.5/s
            series("node_netstat_TcpExt_ListenOverflows", "0+30x64", node(1)),
            series("node_netstat_TcpExt_ListenDrops", "0+37.5x64", node(1)),
            # 0.6/s overflows, all of ListenDrops: 0.6/s, not 1.2/s
            series("node_netstat_TcpExt_ListenOverflows", "0+9x64", node(2)),
            series("node_netstat_TcpExt_ListenDrops", "0+9x64", node(2)),
            # --collector.netstat.fields without ListenDrops: 1.5 overflows/s
            series("node_netstat_TcpExt_ListenOverflows", "0+22.5x64", node(3)),
            series("node_netstat_TcpExt_ListenOverflows", "0+0x64", node(4)),
            series("node_netstat_TcpExt_ListenDrops", "0+0x64", node(4)),
        ],
        checks="""
            # gpu-node-1 passes 1/s at 2m15s (1.125): firing from 7m15s; gpu-node-3 at 3m30s
            # (1.05): firing from 8m30s
            alert_rule_test:
              - {eval_time: 7m, alertname: TcpListenQueueDrops, exp_alerts: []}
              - eval_time: 8m
                alertname: TcpListenQueueDrops
                exp_alerts:
                  - exp_labels: {instance: "gpu-node-1:9100", job: node, service: sig,
                                 severity: warning, team: inference}
                    exp_annotations: {summary: "2.5", description: TcpListenQueueDrops}
              - eval_time: 10m
                alertname: TcpListenQueueDrops
                exp_alerts:
                  - exp_labels: {instance: "gpu-node-1:9100", job: node, service: sig,
                                 severity: warning, team: inference}
                    exp_annotations: {summary: "2.5", description: TcpListenQueueDrops}
                  - exp_labels: {instance: "gpu-node-3:9100", job: node, service: sig,
                                 severity: warning, team: inference}
                    exp_annotations: {summary: "1.5", description: TcpListenQueueDrops}
        """,
    ),
    "filesystem_free: /models at 5 % free fires after 5m; 20 % free, a full root "
    "filesystem, a full read-only /models, size 0 and a device error stay silent": Case(
        alerts="""
            - signal: filesystem_free
              threshold: 10%
              severity: warning
              matchers: 'mountpoint="/models"'
        """,
        input_series=[
            series("node_filesystem_size_bytes", f"{TERA}+0x30", node(1, **FS)),
            series("node_filesystem_avail_bytes", f"{TERA // 20}+0x30", node(1, **FS)),
            series("node_filesystem_readonly", "0+0x30", node(1, **FS)),
            series("node_filesystem_size_bytes", f"{TERA}+0x30", node(2, **FS)),
            series("node_filesystem_avail_bytes", f"{TERA // 5}+0x30", node(2, **FS)),
            series("node_filesystem_readonly", "0+0x30", node(2, **FS)),
            # the root filesystem is 1 % free, but it is not where the weights load from
            series(
                "node_filesystem_size_bytes",
                "100000000000+0x30",
                node(2, device="/dev/sda2", fstype="ext4", mountpoint="/"),
            ),
            series(
                "node_filesystem_avail_bytes",
                "1000000000+0x30",
                node(2, device="/dev/sda2", fstype="ext4", mountpoint="/"),
            ),
            # a read-only NFS share of the weights: full by design
            series(
                "node_filesystem_size_bytes",
                f"{TERA}+0x30",
                node(3, device="nas:/models", fstype="nfs4", mountpoint="/models"),
            ),
            series(
                "node_filesystem_avail_bytes",
                "0+0x30",
                node(3, device="nas:/models", fstype="nfs4", mountpoint="/models"),
            ),
            series(
                "node_filesystem_readonly",
                "1+0x30",
                node(3, device="nas:/models", fstype="nfs4", mountpoint="/models"),
            ),
            # a filesystem reporting size 0
            series("node_filesystem_size_bytes", "0+0x30", node(4, **FS)),
            series("node_filesystem_avail_bytes", "0+0x30", node(4, **FS)),
            series("node_filesystem_readonly", "0+0x30", node(4, **FS)),
            # statfs timed out: node_exporter exports device_error and readonly only
            series(
                "node_filesystem_device_error",
                "1+0x30",
                node(5, **FS, device_error="mountpoint timeout"),
            ),
            series(
                "node_filesystem_readonly",
                "0+0x30",
                node(5, **FS, device_error="mountpoint timeout"),
            ),
        ],
        checks="""
            alert_rule_test:
              - {eval_time: 4m45s, alertname: FilesystemFreeSpaceLow, exp_alerts: []}
              - eval_time: 6m
                alertname: FilesystemFreeSpaceLow
                exp_alerts:
                  - exp_labels: {device: /dev/nvme1n1, fstype: ext4, instance: "gpu-node-1:9100",
                                 job: node, mountpoint: /models, service: sig,
                                 severity: warning, team: inference}
                    exp_annotations: {summary: 5%, description: FilesystemFreeSpaceLow}
        """,
    ),
    "scrape_down: down targets of every job in selectors: fire one alert each after 5m "
    "(vLLM, dcgm-exporter); an up node_exporter and another team's down job stay "
    "silent": Case(
        alerts="""
            - signal: scrape_down
              threshold: 0%
              severity: critical
        """,
        input_series=[
            series("up", "1+0x30", node(1)),
            series("up", "0+0x30", {"instance": "gpu-node-1:8000", "job": "vllm"}),
            series("up", "0+0x30", {"instance": "gpu-node-2:9400", "job": "dcgm"}),
            series("up", "1+0x30", {"instance": "gpu-node-1:9400", "job": "dcgm"}),
            # not a job of this spec's selectors:
            series("up", "0+0x30", {"instance": "billing-1:8080", "job": "billing"}),
        ],
        checks="""
            alert_rule_test:
              - {eval_time: 4m45s, alertname: ScrapeTargetDown, exp_alerts: []}
              - eval_time: 6m
                alertname: ScrapeTargetDown
                exp_alerts:
                  - exp_labels: {instance: "gpu-node-1:8000", job: vllm, service: sig,
                                 severity: critical, team: inference}
                    exp_annotations: {summary: 100%, description: ScrapeTargetDown}
                  - exp_labels: {instance: "gpu-node-2:9400", job: dcgm, service: sig,
                                 severity: critical, team: inference}
                    exp_annotations: {summary: 100%, description: ScrapeTargetDown}
        """,
    ),
    "scrape_down at 50 %: a target failing 3 scrapes in 4 fires after 5m; one failing 1 in "
    "4 stays silent": Case(
        alerts="""
            - signal: scrape_down
              name: ScrapeTargetMostlyDown
              threshold: 50%
              severity: warning
              summary: '{labels.instance} of {labels.job}'
        """,
        input_series=[
            series("up", _pattern(3), node(1)),
            series("up", _pattern(1), node(2)),
            series("up", "1+0x64", node(3)),
        ],
        checks="""
            # the failed share depends on the samples in the window (2.x: 21, 3.x: 20), but
            # stays above 71 % for gpu-node-1 and below 29 % for gpu-node-2
            alert_rule_test:
              - {eval_time: 4m45s, alertname: ScrapeTargetMostlyDown, exp_alerts: []}
              - eval_time: 10m
                alertname: ScrapeTargetMostlyDown
                exp_alerts:
                  - exp_labels: {instance: "gpu-node-1:9100", job: node, service: sig,
                                 severity: warning, team: inference}
                    exp_annotations: {summary: "gpu-node-1:9100 of node",
                                      description: ScrapeTargetMostlyDown}
        """,
    ),
}
