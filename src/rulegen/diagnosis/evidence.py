"""Host-level recordings and the evidence of each diagnosis kind, as PromQL.

Why: every join across exporters goes through one host label (``rulegen.host``): a relabelled
``host_label`` kept through each aggregation, or ``host`` derived from ``instance``.
"""

from __future__ import annotations

from decimal import Decimal

from rulegen import units
from rulegen.core import promql
from rulegen.core.histograms import is_native
from rulegen.diagnosis.model import Evidence, Quantity, Recording
from rulegen.diagnosis.params import ROW_REMAP_SIGNAL, TTFT_METRIC, XID_SIGNAL, Context, Params
from rulegen.host import with_host
from rulegen.templating import quantile_name, render_promql

GENERATION_TOKENS = "vllm:generation_tokens_total"
REQUESTS_WAITING = "vllm:num_requests_waiting"


class EvidenceBuilder:
    """The host-level recordings and the evidence of each kind."""

    def __init__(self, ctx: Context, window: Decimal, params: Params, baseline: Decimal) -> None:
        self.ctx, self.params = ctx, params
        self.window = units.format_duration(window)
        self.baseline = units.format_duration(baseline)

    def evidence(self, kind: str) -> tuple[Evidence, ...] | None:
        p = self.params
        items: list[tuple[Quantity, str, Decimal | None]]
        if kind == "ttft_disk_bound":
            items = [("ttft", ">", p.ttft()), ("disk", ">", p.percent("disk_utilization"))]
        elif kind == "gpu_health":
            items = [("gpu_health", ">", Decimal(0))]
        elif kind == "throughput_network_bound":
            items = [
                ("throughput", "<", p.percent("throughput")),
                ("network", ">", p.percent("network_utilization")),
                ("ttft", "<=", p.ttft()),
            ]
        else:
            items = [
                ("gpu", "<", p.percent("gpu_utilization")),
                ("waiting", ">", p.waiting()),
                ("disk", "<=", p.percent("disk_utilization")),
                ("network", "<=", p.percent("network_utilization")),
            ]
        out = []
        for quantity, op, threshold in items:
            recording = self.recording(quantity)
            if threshold is None or recording is None:
                return None
            about, unit = self.about(quantity)
            out.append(Evidence(quantity, about, op, threshold, unit, recording))  # type: ignore[arg-type]
        return tuple(out)

    def about(self, quantity: Quantity) -> tuple[str, str]:
        quantile = quantile_name(self.params.quantile)
        baseline = self.baseline
        return {
            "ttft": (f"{quantile} time to first token over {self.window}", "duration"),
            "disk": (f"the busiest disk's utilisation (iostat %util, {self.window})", "percent"),
            "network": (f"the busiest NIC's share of its link speed ({self.window})", "percent"),
            "throughput": (
                f"generation throughput (tokens/s over {self.window}) as a share of its mean "
                f"over the {baseline} before",
                "percent",
            ),
            "gpu": ("mean GPU utilisation", "percent"),
            "waiting": ("requests waiting in the scheduler queue", "number"),
            "gpu_health": ("a GPU's new XID (its code) or failed row remapping (1)", "number"),
        }[quantity]

    def recording(self, quantity: Quantity) -> Recording | None:
        host, w = self.ctx.host, self.window
        by = host.label
        sel = self.ctx.sel
        if quantity == "ttft":
            native = is_native(self.ctx.ttft_histogram)
            series = TTFT_METRIC if native else f"{TTFT_METRIC}_bucket"
            rate = with_host(host, f"rate({series}{sel('vllm')}[{w}])")
            q = units.literal(self.params.quantile)
            le = "" if native else "le, "
            expr = f"histogram_quantile({q},\n  sum by ({le}{by}, model_name) ({rate})\n)"
            pname = quantile_name(self.params.quantile)
            name = f"host_model:vllm_time_to_first_token_seconds:{pname}_rate{w}"
            return Recording(quantity, name, expr, True)
        if quantity == "disk":
            devices = self.params.regex("disk_devices")
            if devices is None:
                return None
            selector = sel("node", promql.Matcher("device", "=~", devices))
            rate = with_host(host, f"rate(node_disk_io_time_seconds_total{selector}[{w}])")
            expr = f"max by ({by}) (\n  {rate}\n)"
            return Recording(quantity, f"host:node_disk_io_time_seconds:max_rate{w}", expr, False)
        if quantity == "network":
            return self._network()
        if quantity == "gpu_health":
            return self._gpu_health()
        if quantity == "throughput":
            rate = with_host(host, f"rate({GENERATION_TOKENS}{sel('vllm')}[{w}])")
            expr = f"sum by ({by}, model_name) (\n  {rate}\n)"
            return Recording(quantity, f"host_model:vllm_generation_tokens:rate{w}", expr, True)
        if quantity == "gpu":
            metric = self.params.metric("gpu_metric")
            if metric is None:
                return None
            scale = self.params.gpu_scale
            divided = "" if scale == 1 else f" / {units.literal(scale)}"
            expr = f"avg by ({by}) (\n  {with_host(host, metric + sel('dcgm'))}\n){divided}"
            return Recording(quantity, f"host:{metric}:avg_ratio", expr, False)
        expr = f"sum by ({by}) (\n  {with_host(host, REQUESTS_WAITING + sel('vllm'))}\n)"
        return Recording(quantity, "host:vllm_num_requests_waiting:sum", expr, False)

    def _network(self) -> Recording | None:
        virtual = self.params.regex("virtual_devices")
        if virtual is None:
            return None
        host, w = self.ctx.host, self.window
        nic = self.ctx.sel("node", promql.Matcher("device", "!~", virtual))
        speed = self.params.link_speed
        per_nic = (
            units.literal(speed)
            if speed is not None
            else f"on (instance, device) group_left () (node_network_speed_bytes{nic} > 0)"
        )
        sides = [
            f'label_replace(rate(node_network_{d}_bytes_total{nic}[{w}]) / {per_nic}, "direction", '
            f'"{d}", "", "")'
            for d in ("receive", "transmit")
        ]
        expr = f"max by ({host.label}) (\n  {with_host(host, sides[0] + ' or ' + sides[1])}\n)"
        name = f"host:node_network_utilization:max_ratio_rate{w}"
        return Recording("network", name, expr, False)

    def _gpu_health(self) -> Recording:
        """Per GPU of a host: the code of a new XID (label ``xid``, ``fault="xid"``) or 1 for
        a failed row remapping (``fault="row_remap"``), rendered from the catalog signals'
        own templates so "new" and "failed" mean what their alerts mean."""
        host, p = self.ctx.host, self.params
        dcgm = self.ctx.selectors.get("dcgm", ())

        def sel(*fixed: str) -> str:
            parts = [*fixed, *(m.render() for m in dcgm)]
            return "{" + ", ".join(parts) + "}" if parts else ""

        signals = self.ctx.catalog.signals
        context = {
            "window": self.window, "ignore_xids": p.ignore_xids or "",
            "uncorrectable_rows": p.uncorrectable_rows, "sel": sel, "host_by": "",
        }  # fmt: skip
        xid = render_promql(signals[XID_SIGNAL].expr, context).strip()
        remap = render_promql(signals[ROW_REMAP_SIGNAL].expr, context).strip()
        new_xid = (
            f'label_replace(\n    label_replace(({_indent(xid)}) > 0, "xid", "$1", "err_code", '
            '"(.+)"),\n    "fault", "xid", "", ""\n  )'
        )
        failed = f'label_replace(({_indent(remap)}) > 0, "fault", "row_remap", "", "")'
        expr = (
            f"max by ({host.label}, gpu, xid, fault) (\n  {with_host(host, new_xid)}\n  or\n"
            f"  {with_host(host, failed)}\n)"
        )
        return Recording("gpu_health", "host_gpu:dcgm_gpu_fault:xid_or_row_remap", expr, False)


def _indent(text: str) -> str:
    return text.replace("\n", "\n    ")
