"""The keys of one ``diagnoses:`` entry, parsed and checked at their positions.

Why: thresholds, windows, regexes and devices are checked once, with the message of their
unit, before any PromQL or test is built from them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from rulegen import units
from rulegen.catalog import Catalog
from rulegen.core import promql
from rulegen.core.histograms import CLASSIC, HistogramKind
from rulegen.host import Host
from rulegen.source.fields import Collector, duration
from rulegen.source.loader import PathKey

TTFT_METRIC = "vllm:time_to_first_token_seconds"
# The catalog signals whose logic and defaults the gpu_health diagnosis reuses.
XID_SIGNAL = "gpu_xid_errors"
ROW_REMAP_SIGNAL = "gpu_row_remap_failure"
MAX_WINDOW = Decimal(3600)
MAX_BASELINE = Decimal(86400)


class Context:
    def __init__(
        self,
        col: Collector,
        path: PathKey,
        service: str,
        host: Host,
        selectors: Mapping[str, tuple[promql.Matcher, ...]],
        scrape: Decimal,
        catalog: Catalog,
        ttft_histogram: HistogramKind = CLASSIC,
    ) -> None:
        self.col, self.path, self.service, self.host = col, path, service, host
        self.selectors, self.scrape, self.catalog = selectors, scrape, catalog
        # how the TTFT histogram is stored (``histograms:``): its evidence and tests follow
        self.ttft_histogram = ttft_histogram

    def sel(self, family: str, *fixed: promql.Matcher) -> str:
        matchers = (*self.selectors.get(family, ()), *fixed)
        return "{" + ", ".join(m.render() for m in matchers) + "}" if matchers else ""


_DISKS = ("nvme0n1", "sda", "vda", "xvda")
_NICS = ("eth0", "ens1f0", "enp65s0f0", "ib0", "bond0")


def test_devices(ctx: Context, entry: Any) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
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


def window_of(ctx: Context, raw: object) -> Decimal | None:
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


class Params:
    """The kind-specific keys of one entry, parsed once (absent keys keep their default)."""

    def __init__(self, ctx: Context, entry: Any) -> None:
        self.ctx, self.entry = ctx, entry
        self.quantile = self._number("quantile", low=Decimal(0), high=Decimal(1)) or Decimal("0.99")
        self.gpu_scale = self._number("gpu_scale", low=Decimal(0)) or Decimal(100)
        self.link_speed = self._bandwidth("link_speed")
        self.buckets = tuple(ctx.catalog.histogram_buckets(TTFT_METRIC) or ())
        self.ignore_xids: str | None = None
        self.uncorrectable_rows: Decimal | None = None
        if self.has("ignore_xids"):
            self.ignore_xids = self._ignore_xids()
        if self.has("uncorrectable_rows"):
            self.uncorrectable_rows = self._rows()

    def _default(self, signal: str, key: str) -> Any:
        return self.ctx.catalog.signals[signal].params[key].default

    def _ignore_xids(self) -> str | None:
        """The XIDs left out, as the ``gpu_xid_errors`` signal reads them: its default when
        absent, none with ``""``."""
        if self.entry.ignore_xids is None:
            default = self._default(XID_SIGNAL, "ignore_xids")
            return str(default) if default else None
        if self.entry.ignore_xids == "":
            return None
        return self.regex("ignore_xids")

    def _rows(self) -> Decimal | None:
        raw = self.entry.uncorrectable_rows
        if raw is None:
            return Decimal(str(self._default(ROW_REMAP_SIGNAL, "uncorrectable_rows")))
        value = self._checked("uncorrectable_rows", raw, units.parse_number, None, None)
        if value is not None and (value < 1 or value != value.to_integral_value()):
            self.ctx.col.error(
                self.where("uncorrectable_rows"),
                f"must be a whole number of rows, at least 1 (got {raw})",
            )
            return None
        return value

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
            self.ctx.col.error(
                self.where(key), f"must be between 0% and 100%, both excluded (got {raw})"
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
