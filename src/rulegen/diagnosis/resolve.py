"""``diagnoses:`` entries → ``ResolvedDiagnosis``: thresholds exact, host-level PromQL rendered.

Why: a diagnosis joins series of three exporters (node, vLLM, DCGM) that never share an
``instance``; every join goes through one host label, set here once, and every value that
would make the diagnosis unable to fire (or its test unable to tell) is a spec error here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from rulegen import promql, units
from rulegen.catalog import Catalog
from rulegen.diagnosis.model import (
    ALERT_NAMES,
    EXPLAINS,
    Evidence,
    Host,
    Quantity,
    Recording,
    ResolvedDiagnosis,
)
from rulegen.fields import Collector, duration, labels
from rulegen.spec.loader import PathKey
from rulegen.templating import quantile_name

TTFT_METRIC = "vllm:time_to_first_token_seconds"
GENERATION_TOKENS = "vllm:generation_tokens_total"
REQUESTS_WAITING = "vllm:num_requests_waiting"
DEFAULT_SEVERITY = {
    "ttft_disk_bound": "critical",
    "throughput_network_bound": "warning",
    "gpu_kernel_contention": "warning",
}
# A port is stripped from ``instance``: node_exporter (:9100), vLLM (:8000) and dcgm-exporter
# (:9400) on one machine then share ``host``. IPv6 targets keep their brackets.
HOST_FROM_INSTANCE = '"host", "$1", "instance", "(.+?)(?::[0-9]+)?"'
# Labels rulegen sets, or that tell series of one host apart (a host label must not).
RESERVED_HOST_LABELS = frozenset(
    {"service", "severity", "alertname", "alertstate", "le", "model_name", "diagnosis",
     "instance", "job", "device", "direction", "gpu", "UUID", "engine"}
)  # fmt: skip
MAX_WINDOW = Decimal(3600)
MAX_BASELINE = Decimal(86400)


def host_of(label: str | None) -> Host:
    """The spec's ``host_label``, or ``host`` derived from ``instance``."""
    return Host(label, False) if label else Host("host", True)


def with_host(host: Host, expr: str) -> str:
    """``expr`` with the host label on every series (derived from ``instance`` when needed)."""
    return f"label_replace({expr}, {HOST_FROM_INSTANCE})" if host.derived else expr


def resolve_diagnoses(
    col: Collector,
    spec: Any,
    spec_labels: tuple[tuple[str, str], ...],
    alert_signals: Mapping[str, str],
    selectors: Mapping[str, tuple[promql.Matcher, ...]],
    intervals: tuple[Decimal, Decimal],
    catalog: Catalog,
) -> tuple[ResolvedDiagnosis, ...]:
    """Every diagnosis of a spec; ``alert_signals`` maps the spec's alert names to signals."""
    if not spec.diagnoses:
        return ()
    if spec.host_label is not None and spec.host_label in RESERVED_HOST_LABELS:
        col.error(
            ("host_label",),
            f"{spec.host_label!r} cannot be the host label: rulegen sets it or it differs "
            "between the series of one host",
        )
        return ()
    evaluation, scrape = intervals
    if evaluation % scrape:
        col.error(
            ("evaluation_interval",),
            f"diagnoses need evaluation_interval ({units.format_duration(evaluation)}) to be a "
            f"multiple of scrape_interval ({units.format_duration(scrape)})",
        )
        return ()
    host = host_of(spec.host_label)
    out: list[ResolvedDiagnosis] = []
    taken = dict.fromkeys(alert_signals, "alerts")
    for slo in spec.slos or ():
        taken.setdefault(slo.alerting.name, "slos")
    for index, entry in enumerate(spec.diagnoses):
        path: PathKey = ("diagnoses", index)
        name = entry.name or ALERT_NAMES[entry.kind]
        if name in taken:
            col.error(
                (*path, "name") if entry.name else (*path, "kind"),
                f"alert name {name!r} is already used in {taken[name]}; give this diagnosis "
                "a unique name",
            )
            continue
        taken[name] = "diagnoses"
        context = _Context(col, path, spec.service, host, selectors, scrape, catalog)
        resolved = _diagnosis(context, entry, name, spec_labels, alert_signals, spec.runbook_url)
        if resolved is not None:
            out.append(resolved)
    return tuple(out)


class _Context:
    def __init__(
        self,
        col: Collector,
        path: PathKey,
        service: str,
        host: Host,
        selectors: Mapping[str, tuple[promql.Matcher, ...]],
        scrape: Decimal,
        catalog: Catalog,
    ) -> None:
        self.col, self.path, self.service, self.host = col, path, service, host
        self.selectors, self.scrape, self.catalog = selectors, scrape, catalog

    def sel(self, family: str, *fixed: promql.Matcher) -> str:
        matchers = (*self.selectors.get(family, ()), *fixed)
        return "{" + ", ".join(m.render() for m in matchers) + "}" if matchers else ""


def _diagnosis(
    ctx: _Context,
    entry: Any,
    name: str,
    spec_labels: tuple[tuple[str, str], ...],
    alert_signals: Mapping[str, str],
    runbook: str | None,
) -> ResolvedDiagnosis | None:
    col, path = ctx.col, ctx.path
    before = len(col.diagnostics)
    for_seconds = duration(col, (*path, "for"), entry.for_, most=Decimal(86400))
    window = _window(ctx, entry.window)
    extra = labels(col, (*path, "labels"), entry.labels)
    if "diagnosis" in dict(extra):
        col.error((*path, "labels", "diagnosis"), "label 'diagnosis' is set by rulegen")
    params = _Params(ctx, entry)
    if for_seconds is None or window is None or len(col.diagnostics) > before:
        return None
    baseline = params.baseline(window)
    builder = _Builder(ctx, window, params, baseline or Decimal(0))
    evidence = builder.evidence(entry.kind)
    if len(col.diagnostics) > before or evidence is None:
        return None
    severity = entry.severity or DEFAULT_SEVERITY[entry.kind]
    merged = {**dict(spec_labels), **dict(extra)}
    merged.update(severity=severity, service=ctx.service, diagnosis=entry.kind)
    explains = tuple(a for a, s in alert_signals.items() if s in EXPLAINS[entry.kind])
    devices = _test_devices(ctx, entry)
    if devices is None:
        return None
    return ResolvedDiagnosis(
        entry.kind, name, ctx.service, severity, for_seconds, window, baseline or Decimal(0),
        evidence, ctx.host, tuple(sorted(merged.items())), explains, params.buckets,
        params.quantile, params.gpu_scale, params.link_speed,
        getattr(entry, "gpu_metric", "DCGM_FI_DEV_GPU_UTIL"), *devices, ctx.selectors,
        col.origin(path), runbook.replace("{alert}", name) if runbook else None,
    )  # fmt: skip


_DISKS = ("nvme0n1", "sda", "vda", "xvda")
_NICS = ("eth0", "ens1f0", "enp65s0f0", "ib0", "bond0")


def _test_devices(ctx: _Context, entry: Any) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """Disks the diagnosis reads and NICs it does not take for virtual, for its tests: the
    loaded one first, then an idle one when the patterns allow (so ``max`` must pick)."""
    disks: tuple[str, ...] = _DISKS[:2]
    nics: tuple[str, ...] = _NICS[:2]
    if hasattr(entry, "disk_devices"):
        pattern = entry.disk_devices
        disks = tuple(d for d in _DISKS if promql.full_match(pattern, d))[:2]
        if not disks:
            example = promql.regex_example(pattern)
            if not example:
                ctx.col.error((*ctx.path, "disk_devices"), f"no device name matches {pattern!r}")
                return None
            disks = (example,)
    if hasattr(entry, "virtual_devices"):
        pattern = entry.virtual_devices
        nics = tuple(d for d in _NICS if not promql.full_match(pattern, d))[:2]
        if not nics:
            ctx.col.error(
                (*ctx.path, "virtual_devices"), f"{pattern!r} takes every usual NIC for virtual"
            )
            return None
    return disks, nics


def _window(ctx: _Context, raw: object) -> Decimal | None:
    where = (*ctx.path, "window")
    seconds = duration(ctx.col, where, raw, positive=True, most=MAX_WINDOW)
    if seconds is None:
        return None
    if seconds % ctx.scrape or seconds < 2 * ctx.scrape:
        ctx.col.error(
            where,
            f"must be a whole number of scrapes, at least two (scrape_interval "
            f"{units.format_duration(ctx.scrape)}; got {raw})",
        )
        return None
    return seconds


class _Params:
    """The kind-specific keys of one entry, parsed once (absent keys keep their default)."""

    def __init__(self, ctx: _Context, entry: Any) -> None:
        self.ctx, self.entry = ctx, entry
        self.quantile = self._number("quantile", low=Decimal(0), high=Decimal(1)) or Decimal("0.99")
        self.gpu_scale = self._number("gpu_scale", low=Decimal(0)) or Decimal(100)
        self.link_speed = self._bandwidth("link_speed")
        self.buckets = tuple(ctx.catalog.histogram_buckets(TTFT_METRIC) or ())

    def has(self, key: str) -> bool:
        return hasattr(self.entry, key)

    def where(self, key: str) -> PathKey:
        return (*self.ctx.path, key) if key in self.entry.model_fields_set else self.ctx.path

    def _number(
        self, key: str, low: Decimal | None = None, high: Decimal | None = None
    ) -> Decimal | None:
        if not self.has(key):
            return None
        raw = getattr(self.entry, key)
        return self._checked(key, raw, units.parse_number, low, high)

    def percent(self, key: str) -> Decimal | None:
        raw = getattr(self.entry, key)
        try:
            value = units.parse_percent(raw)
        except units.UnitError as exc:
            self.ctx.col.error(self.where(key), str(exc))
            return None
        if not 0 < value < 1:
            number = isinstance(raw, int | float) and not isinstance(raw, bool)
            bare = " (a bare number is a fraction: write 70% or 0.7)" if number else ""
            self.ctx.col.error(
                self.where(key), f"must be between 0% and 100%, both excluded (got {raw}){bare}"
            )
            return None
        return value

    def _checked(
        self,
        key: str,
        raw: object,
        parse: Callable[[object], Decimal],
        low: Decimal | None,
        high: Decimal | None,
    ) -> Decimal | None:
        try:
            value = parse(raw)
        except units.UnitError as exc:
            self.ctx.col.error(self.where(key), str(exc))
            return None
        if (low is not None and value <= low) or (high is not None and value >= high):
            bounds = f"above {units.literal(low)}" if low is not None else ""
            if high is not None:
                bounds += f"{' and ' if bounds else ''}below {units.literal(high)}"
            self.ctx.col.error(self.where(key), f"must be {bounds} (got {raw})")
            return None
        return value

    def _bandwidth(self, key: str) -> Decimal | None:
        if not self.has(key) or getattr(self.entry, key) is None:
            return None
        return self._checked(key, getattr(self.entry, key), units.parse_bandwidth, Decimal(0), None)

    def waiting(self) -> Decimal | None:
        value = self._checked(
            "requests_waiting", self.entry.requests_waiting, units.parse_number, None, None
        )
        if value is not None and (value < 0 or value != value.to_integral_value()):
            self.ctx.col.error(
                self.where("requests_waiting"),
                "must be a whole number of requests, at least 0 "
                f"(got {self.entry.requests_waiting})",
            )
            return None
        return value

    def ttft(self) -> Decimal | None:
        where = self.where("ttft")
        raw = self.entry.ttft
        try:
            value = units.parse_latency(str(raw))
        except units.UnitError as exc:
            self.ctx.col.error(where, str(exc))
            return None
        if self.buckets and not self.buckets[0] <= value < self.buckets[-2]:
            self.ctx.col.error(
                where,
                f"must be from {units.literal(self.buckets[0])}s to below "
                f"{units.literal(self.buckets[-2])}s, vLLM's second-largest TTFT bucket bound: "
                "beyond it the quantile is interpolated in the last finite bucket, where no "
                f"generated test can place a value reliably (got {raw})",
            )
            return None
        return value

    def regex(self, key: str) -> str | None:
        raw = getattr(self.entry, key)
        problem = None
        if not isinstance(raw, str) or not raw:
            problem = f"must be a non-empty regex string (got {raw!r})"
        else:
            problem = promql.re2_problem(raw)
            if problem is None:
                try:
                    re.compile(promql.python_regex(raw))
                except re.error as exc:
                    problem = f"invalid regex {raw!r}: {exc}"
        if problem is not None:
            self.ctx.col.error(self.where(key), problem)
            return None
        return str(raw)

    def metric(self, key: str) -> str | None:
        raw = getattr(self.entry, key)
        if not promql.METRIC_NAME.match(raw):
            self.ctx.col.error(self.where(key), f"invalid metric name {raw!r}")
            return None
        return str(raw)

    def baseline(self, window: Decimal) -> Decimal | None:
        if not self.has("baseline"):
            return None
        where = self.where("baseline")
        seconds = duration(self.ctx.col, where, self.entry.baseline, positive=True)
        if seconds is None:
            return None
        if seconds % self.ctx.scrape or not window <= seconds <= MAX_BASELINE:
            self.ctx.col.error(
                where,
                f"must be a whole number of scrapes from the window "
                f"({units.format_duration(window)}) to 1d (got {self.entry.baseline})",
            )
            return None
        return seconds


class _Builder:
    """The host-level recordings and the evidence of each kind."""

    def __init__(self, ctx: _Context, window: Decimal, params: _Params, baseline: Decimal) -> None:
        self.ctx, self.params = ctx, params
        self.window = units.format_duration(window)
        self.baseline = units.format_duration(baseline)

    def evidence(self, kind: str) -> tuple[Evidence, ...] | None:
        p = self.params
        items: list[tuple[Quantity, str, Decimal | None]]
        if kind == "ttft_disk_bound":
            items = [("ttft", ">", p.ttft()), ("disk", ">", p.percent("disk_utilization"))]
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
        }[quantity]

    def recording(self, quantity: Quantity) -> Recording | None:
        host, w = self.ctx.host, self.window
        by = host.label
        sel = self.ctx.sel
        if quantity == "ttft":
            rate = with_host(host, f"rate({TTFT_METRIC}_bucket{sel('vllm')}[{w}])")
            q = units.literal(self.params.quantile)
            expr = f"histogram_quantile({q},\n  sum by (le, {by}, model_name) ({rate})\n)"
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
