"""Generated promtool tests for diagnoses: one cause case that fires, neighbours that do not.

Why: a diagnosis is only worth a page if it fires when, and only when, the cause and the
symptom are on the same host. Each test puts several hosts side by side, each behind three
exporters with different ``instance`` ports: the cause case, the symptom without the cause,
the cause on another host, and the kind's own near misses. When the alert fires, and with
which values in its description, comes from an exact model of the series (rates of
piecewise-linear counters, histogram interpolation, ``avg_over_time`` of a recording, the
``for`` state), never from the rules themselves.

With ``metricsql`` (the tests ``vmalert-tool unittest`` runs on the VictoriaMetrics target) the
model is MetricsQL's: ``rate(x[w])`` at ``t`` is the change from the last sample at or before
``t - w`` (else the first sample) to the last one, over the time between them, with no
extrapolation; windows are left-open as on Prometheus 3.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from decimal import Decimal
from fractions import Fraction

from rulegen import gotemplate, units
from rulegen.core import promql
from rulegen.core.diagnostics import SPEC_TEST
from rulegen.core.nativeseries import Layout, growing
from rulegen.core.synthetic import SynthError, histogram_plan
from rulegen.diagnosis.evidence import GENERATION_TOKENS, REQUESTS_WAITING
from rulegen.diagnosis.model import Evidence, Quantity, ResolvedDiagnosis
from rulegen.diagnosis.params import TTFT_METRIC
from rulegen.diagnosis.rules import predict_description, summary
from rulegen.errors import FieldPath, SpecError
from rulegen.generated import AlertCheck, ExpectedAlert, ExprCheck, InputSeries, TestCase
from rulegen.source.loader import Origin

MODEL = "deepseek-v4"
PER_STEP = 200  # TTFT observations per scrape
TOKENS = Fraction(1000)  # generation tokens/s before a drop
LINK = Fraction(12_500_000_000)  # node_network_speed_bytes of a 100 Gb/s NIC
# How far past its threshold a quantity goes (x1.1 …): close, so a threshold moved by 10-20%
# fails the test; alternatives when a value would meet a threshold exactly.
_FACTORS = tuple(Fraction(f) for f in ("1.1", "1.2", "1.05", "1.3", "1.15"))


@dataclass(frozen=True)
class _Host:
    """One host of a test and, per quantity, whether its evidence holds ("fire"), fails
    ("quiet"), or the quantity reads 0 ("idle")."""

    name: str
    plan: Mapping[Quantity, str]


# Per kind: the firing host first, then the neighbours that must stay silent.
_HOSTS: dict[str, tuple[_Host, ...]] = {
    "ttft_disk_bound": (
        _Host("slow TTFT and busy disk on the same host", {"ttft": "fire", "disk": "fire"}),
        _Host("slow TTFT, disk below the threshold", {"ttft": "fire", "disk": "quiet"}),
        _Host("slow TTFT, idle disk", {"ttft": "fire", "disk": "idle"}),
        _Host("busy disk on another host, fast TTFT", {"ttft": "quiet", "disk": "fire"}),
    ),
    "throughput_network_bound": (
        _Host(
            "throughput drop and saturated NIC on the same host, TTFT fine",
            {"throughput": "fire", "network": "fire", "ttft": "fire"},
        ),
        _Host(
            "throughput drop, NIC below the threshold",
            {"throughput": "fire", "network": "quiet", "ttft": "fire"},
        ),
        _Host(
            "throughput drop and saturated NIC, but TTFT slow",
            {"throughput": "fire", "network": "fire", "ttft": "quiet"},
        ),
        _Host(
            "saturated NIC on another host, throughput steady",
            {"throughput": "quiet", "network": "fire", "ttft": "fire"},
        ),
        _Host(
            "throughput drop, idle NIC",
            {"throughput": "fire", "network": "idle", "ttft": "fire"},
        ),
    ),
    "gpu_kernel_contention": (
        _Host(
            "idle GPUs with requests waiting, disk and network fine",
            {"gpu": "fire", "waiting": "fire", "disk": "fire", "network": "fire"},
        ),
        _Host(
            "idle GPUs, no request waiting",
            {"gpu": "fire", "waiting": "quiet", "disk": "fire", "network": "fire"},
        ),
        _Host(
            "idle GPUs with requests waiting, busy disk",
            {"gpu": "fire", "waiting": "fire", "disk": "quiet", "network": "fire"},
        ),
        _Host(
            "idle GPUs with requests waiting, saturated NIC",
            {"gpu": "fire", "waiting": "fire", "disk": "fire", "network": "quiet"},
        ),
        _Host(
            "busy GPUs with requests waiting",
            {"gpu": "quiet", "waiting": "fire", "disk": "fire", "network": "fire"},
        ),
    ),
}


def diagnosis_tests(
    diagnoses: tuple[ResolvedDiagnosis, ...],
    evaluation: Decimal,
    scrape: Decimal,
    metricsql: bool = False,
) -> tuple[TestCase, ...]:
    """One test case per diagnosis (for vmalert's MetricsQL with ``metricsql``); errors name
    the diagnosis."""
    cases = []
    failures = []
    for diagnosis in diagnoses:
        if metricsql:
            diagnosis = replace(diagnosis, metricsql=True)
        try:
            cases.append(diagnosis_test(diagnosis, evaluation, scrape))
        except SynthError as exc:
            message = f"cannot generate a test for {diagnosis.name}: {exc}"
            failures.append(diagnosis.origin.diagnostic(message, SPEC_TEST))
    if failures:
        raise SpecError(failures)
    return tuple(cases)


def diagnosis_test(diagnosis: ResolvedDiagnosis, evaluation: Decimal, scrape: Decimal) -> TestCase:
    """The test case: the first host fires after ``for``, with exact labels and text."""
    if diagnosis.kind == "gpu_health":
        return _GpuHealthTest(diagnosis, Fraction(evaluation), Fraction(scrape)).test_case()
    problem = "the test values meet a threshold exactly"
    for factor in _FACTORS:
        model = _Model(diagnosis, Fraction(evaluation), Fraction(scrape), factor)
        try:
            return model.test_case()
        except _Retry as exc:
            problem = str(exc)
    raise SynthError(f"{problem}; move the thresholds slightly")


_COMPARE: dict[str, Callable[[Fraction, Fraction], bool]] = {
    ">": operator.gt, "<": operator.lt, "<=": operator.le,
}  # fmt: skip


class _Retry(Exception):
    """These test values cannot give an exact expectation; try the next factor."""


# Simulated timelines by ``_Model.timing_key``: (fires at, pending since, hosts pending then),
# or why these values cannot be used.
_TIMELINES: dict[tuple[object, ...], tuple[Fraction, Fraction, list[int]] | _Retry] = {}
# By the same key: each quantity's exact reading on the firing host when it fires.
_READINGS: dict[tuple[object, ...], dict[Quantity, Fraction]] = {}
# Every host's input series (``_Model._all_series``), and the origin of the model they
# are made by (a diagnosis without a place in any spec).
_SERIES: dict[tuple[object, ...], tuple[InputSeries, ...]] = {}
_NOWHERE = Origin("", 0, 0, FieldPath())


class _Model:
    """Series and an exact model of the diagnosis over time for one choice of test values."""

    def __init__(
        self, diagnosis: ResolvedDiagnosis, evaluation: Fraction, scrape: Fraction, f: Fraction
    ) -> None:
        self.d, self.eval, self.scrape, self.factor = diagnosis, evaluation, scrape, f
        self.window = Fraction(diagnosis.window_seconds)
        self.hosts = _HOSTS[diagnosis.kind]
        self.evidence = {e.quantity: e for e in diagnosis.evidence}
        # A drop in throughput starts once the baseline holds only settled samples.
        self.baseline = Fraction(diagnosis.baseline_seconds)
        self.drop = (
            _ceil(self.baseline + self.window, scrape) if "throughput" in self.evidence else 0
        )
        self.ttft = self._ttft_values()
        # GPUs stay busy until every rate window is full: before that a busy disk or NIC
        # still reads low and would look "fine".
        self.gpu_on = _ceil(self.window, scrape)
        self._prefix: dict[str, list[tuple[Fraction, int]]] = {}
        # (keyed by the exact time's numerator and denominator: hashing a Fraction costs more)
        self._rates: dict[tuple[str, int, int], Fraction | None] = {}
        self._targets: dict[tuple[Quantity, str], Fraction] = {}
        # exact thresholds, converted once: the timeline compares against them every step
        self._threshold = {e.quantity: Fraction(e.threshold) for e in diagnosis.evidence}

    # --- values ------------------------------------------------------------------------

    def _ttft_values(self) -> dict[str, Fraction]:
        item = self.evidence.get("ttft")
        if item is None:
            return {}
        plan = histogram_plan(self.d.ttft_buckets, item.threshold, self.d.quantile)
        assert plan.fire_bucket is not None
        assert plan.quiet_bucket is not None
        return {
            "fire": Fraction(plan.fire),
            "quiet": Fraction(plan.quiet),
            "fire_bucket": Fraction(plan.fire_bucket),
            "quiet_bucket": Fraction(plan.quiet_bucket),
        }

    def target(self, item: Evidence, state: str) -> Fraction:
        """The settled value of a quantity in a host's state (remembered: the timeline asks
        for it at every evaluation of every host)."""
        key = (item.quantity, state)
        if key not in self._targets:
            self._targets[key] = self._target(item, state)
        return self._targets[key]

    def _target(self, item: Evidence, state: str) -> Fraction:
        threshold = self._threshold[item.quantity]
        if state == "idle":
            return Fraction(0)
        if item.quantity == "ttft":
            return self.ttft["fire" if (state == "fire") == (item.op == ">") else "quiet"]
        satisfied = state == "fire"
        if item.quantity == "waiting":
            return threshold + 5 if satisfied == (item.op == ">") else threshold
        beyond, within = self._beyond(threshold), threshold * (2 - self.factor)
        if item.op == ">":
            return beyond if satisfied else within
        return within if satisfied else beyond  # "<" and "<=" hold below the threshold

    def _beyond(self, threshold: Fraction) -> Fraction:
        """Just above the threshold, and below 100% (every ratio here is at most 1)."""
        value = threshold * self.factor
        if value < 1:
            return value
        return min(threshold + (1 - threshold) * (self.factor - 1) * 5, (threshold + 1) / 2)

    def value(self, quantity: Quantity, host: _Host, t: Fraction) -> Fraction | None:
        """What the recording (or, for throughput, the ratio) reads at evaluation ``t``."""
        item = self.evidence[quantity]
        state = host.plan[quantity]
        if quantity == "gpu" and t < self.gpu_on:
            return self.target(item, "quiet")
        if quantity in ("gpu", "waiting"):
            return self.target(item, state)
        if t < self.scrape:
            return None  # one sample: no rate yet
        if quantity == "ttft":
            return self.target(item, state)
        if quantity == "throughput":
            return self._throughput_ratio(host, t)
        level = self.target(item, state)
        if self.d.metricsql:
            return level  # a constant slope, read exactly from the second sample
        return level * min(t, self.window) / self.window

    def tokens_rate(self, host: _Host, t: Fraction) -> Fraction | None:
        """The recorded generation rate at ``t`` (remembered: the baseline's mean and the
        current reading ask for the same evaluations again and again)."""
        key = (host.name, t.numerator, t.denominator)
        if key not in self._rates:
            self._rates[key] = self._tokens_rate(host, t)
        return self._rates[key]

    def _tokens_rate(self, host: _Host, t: Fraction) -> Fraction | None:
        """``rate(tokens[window])`` at ``t`` as Prometheus extrapolates it from the samples
        one scrape apart in ``[t - window, t]`` (2.x) or ``(t - window, t]`` (3.x)."""
        if t < self.scrape:
            return None
        if self.d.metricsql:
            return self._metricsql_rate(host, t)
        start = t - self.window
        if self.d.left_open:
            first = (start // self.scrape + 1) * self.scrape
        else:
            first = -(-start // self.scrape) * self.scrape
        first = max(first, Fraction(0))
        last = t // self.scrape * self.scrape
        if last <= first:
            return None
        delta = self._tokens(host, last) - self._tokens(host, first)
        sampled = last - first
        to_start, to_end = first - start, t - last
        if to_start >= sampled / ((last - first) / self.scrape) * Fraction(11, 10):
            to_start = self.scrape / 2
        if delta > 0:
            to_zero = sampled * self._tokens(host, first) / delta
            to_start = min(to_start, to_zero)
        return delta * (sampled + to_start + to_end) / sampled / self.window

    def _metricsql_rate(self, host: _Host, t: Fraction) -> Fraction | None:
        """``rate(tokens[window])`` at ``t`` in MetricsQL (``rollupDerivFast``): from the last
        sample at or before ``t - window`` (none before 0: the first sample) to the last
        sample, divided by the time between them."""
        last = t // self.scrape * self.scrape
        start = max(Fraction(0), (t - self.window) // self.scrape * self.scrape)
        if last <= start:
            return None
        return (self._tokens(host, last) - self._tokens(host, start)) / (last - start)

    def _tokens_after(self, host: _Host) -> Fraction:
        item = self.evidence["throughput"]
        return TOKENS * self.target(item, host.plan["throughput"]) if self._drops(host) else TOKENS

    def _drops(self, host: _Host) -> bool:
        return host.plan["throughput"] == "fire"

    def _tokens(self, host: _Host, t: Fraction) -> Fraction:
        if t <= self.drop:
            return TOKENS * t
        return TOKENS * self.drop + self._tokens_after(host) * (t - self.drop)

    def _throughput_ratio(self, host: _Host, t: Fraction) -> Fraction | None:
        """The recording now over its mean in [t - window - baseline, t - window], as
        ``avg_over_time`` reads the recorded samples (a closed range on Prometheus 2.x; from
        3.0 the sample at the far end is left out)."""
        current = self.tokens_rate(host, t)
        start, end = t - self.window - self.baseline, t - self.window
        if current is None or end < 0:
            return None
        if self.d.left_open or self.d.metricsql:
            first = max(0, int(start // self.eval) + 1)
        else:
            first = max(0, int(-(-start // self.eval)))
        last = int(end // self.eval)
        total, count = self._recorded(host, last)
        if first:
            before, before_count = self._recorded(host, first - 1)
            total, count = total - before, count - before_count
        if not count or total <= 0:
            return None
        return current / (total / count)

    def _recorded(self, host: _Host, index: int) -> tuple[Fraction, int]:
        """Sum and number of the recorded rates at evaluations 0..index (prefix sums, so a
        day-long baseline stays linear)."""
        sums = self._prefix.setdefault(host.name, [])
        while len(sums) <= index:
            rate = self.tokens_rate(host, self.eval * len(sums))
            total, count = sums[-1] if sums else (Fraction(0), 0)
            sums.append((total + rate, count + 1) if rate is not None else (total, count))
        return sums[index]

    # --- the alert over time ---------------------------------------------------------

    def holds(self, host: _Host, t: Fraction) -> bool:
        for item in self.d.evidence:
            v = self.value(item.quantity, host, t)
            if v is None:
                return False
            threshold = self._threshold[item.quantity]
            exact = item.quantity == "waiting"  # a count: no float noise to fear
            if not exact and abs(v - threshold) * 10**9 <= abs(threshold):
                raise _Retry(f"{item.quantity} meets its threshold exactly at {float(t)}s")
            if not _COMPARE[item.op](v, threshold):
                return False
        return True

    def timing_key(self) -> tuple[object, ...]:
        """Everything the simulated timeline depends on (not the service, labels or names):
        services of a fleet that share their numbers share one simulation."""
        d = self.d
        evidence = tuple((e.quantity, e.op, e.threshold) for e in d.evidence)
        return (
            d.kind, evidence, d.window_seconds, d.baseline_seconds, d.for_seconds,
            self.eval, self.scrape, self.factor, d.ttft_buckets, d.quantile, d.left_open,
            d.metricsql,
        )  # fmt: skip

    def test_case(self) -> TestCase:
        key = self.timing_key()
        if key not in _TIMELINES:
            try:
                _TIMELINES[key] = self._run()
            except _Retry as exc:
                _TIMELINES[key] = exc
        timeline = _TIMELINES[key]
        if isinstance(timeline, _Retry):
            raise timeline
        fire_at, active_at, pending = timeline
        steps = int(fire_at / self.scrape) + 2
        series = self._all_series(steps)
        expected = self._expected(self._values_at(key, fire_at))
        checks = []
        exprs = []
        name = self.d.name
        if fire_at > 0:
            checks.append(
                AlertCheck(
                    _t(fire_at - self.eval), name, (), "no host fires one evaluation earlier"
                )
            )
        checks.append(
            AlertCheck(
                _t(fire_at), name, (expected,),
                "fires for the first host only, with the evidence in its description",
            )
        )  # fmt: skip
        if self.d.for_seconds > 0:
            samples = tuple(
                (_selector("ALERTS", {**self._labels(n), "alertname": name,
                                      "alertstate": "pending"}), "1")
                for n in pending
            )  # fmt: skip
            exprs.append(
                ExprCheck(
                    _t(active_at),
                    f'ALERTS{{alertname="{name}", alertstate="pending"}}',
                    tuple(sorted(samples)),
                    "pending from the first evaluation that sees all the evidence",
                )
            )
        quiet = "; ".join(h.name for h in self.hosts[1:])
        title = f"{name}: fires for {self.hosts[0].name}; silent for: {quiet}"
        evaluations = int(fire_at / self.eval) + 1
        return TestCase(
            title, Decimal(self.scrape.numerator) / self.scrape.denominator, series,
            tuple(checks), tuple(exprs), evaluations,
        )  # fmt: skip

    def _run(self) -> tuple[Fraction, Fraction, list[int]]:
        """Simulate every host's alert state; returns when the first host fires, when it
        became pending, and which hosts are pending then."""
        for_seconds = Fraction(self.d.for_seconds)
        active: dict[int, Fraction] = {}
        history: dict[Fraction, list[int]] = {}
        t = Fraction(0)
        limit = self.drop + 4 * self.window + for_seconds + 100 * self.eval
        while t <= limit:
            for n, host in enumerate(self.hosts, 1):
                if self.holds(host, t):
                    active.setdefault(n, t)
                else:
                    active.pop(n, None)
            history[t] = sorted(active)
            firing = [n for n, since in active.items() if t - since >= for_seconds]
            if firing:
                if firing != [1]:
                    names = ", ".join(self.hosts[n - 1].name for n in firing if n != 1)
                    raise SynthError(f"the test's neighbour hosts would fire too ({names})")
                started = active[1]
                return t, started, history[started]
            t += self.eval
        raise SynthError("the synthetic series never make the diagnosis fire")

    # --- series and expectations ---------------------------------------------------------

    def _host_value(self, n: int) -> str:
        return f"gpu-node-{n}"

    def _base(self, n: int, port: int, family: str) -> dict[str, str]:
        labels = {"instance": f"{self._host_value(n)}:{port}"}
        if not self.d.host.derived:
            labels[self.d.host.label] = self._host_value(n)
        matchers = self.d.selectors.get(family, ())
        try:
            return promql.satisfy(matchers, labels)
        except ValueError as exc:
            raise SynthError(f"selectors.{family}: {exc}") from None

    def _series(self, n: int, host: _Host, steps: int) -> list[InputSeries]:
        out: list[InputSeries] = []
        for quantity, state in host.plan.items():
            out.extend(self._quantity_series(n, quantity, state, host, steps))
        return out

    def _quantity_series(
        self, n: int, quantity: Quantity, state: str, host: _Host, steps: int
    ) -> list[InputSeries]:
        item = self.evidence[quantity]
        s = self.scrape
        if quantity == "ttft":
            labels = {**self._base(n, 8000, "vllm"), "model_name": MODEL}
            return self._histogram(labels, item, state, steps)
        if quantity == "throughput":
            labels = {**self._base(n, 8000, "vllm"), "model_name": MODEL}
            k = int(self.drop / s)
            first = f"0+{_num(TOKENS * s)}x{k}"
            after = self._tokens_after(host) * s
            rest = f"{_num(TOKENS * s * k + after)}+{_num(after)}x{max(steps - k - 1, 0)}"
            return [InputSeries(_selector(GENERATION_TOKENS, labels), f"{first} {rest}")]
        level = self.target(item, state)
        if quantity == "waiting":
            labels = {**self._base(n, 8000, "vllm"), "model_name": MODEL}
            return [InputSeries(_selector(REQUESTS_WAITING, labels), f"{_num(level)}+0x{steps}")]
        if quantity == "gpu":
            scale = Fraction(self.d.gpu_scale)
            busy = self.target(item, "quiet") * scale
            k = int(self.gpu_on / s)
            values = f"{_num(busy)}+0x{k - 1} {_num(level * scale)}+0x{max(steps - k, 0)}"
            return [
                InputSeries(
                    _selector(self.d.gpu_metric,
                              {**self._base(n, 9400, "dcgm"), "gpu": str(g), "UUID": f"GPU-{g}"}),
                    values,
                )
                for g in (0, 1)
            ]  # fmt: skip
        node = self._base(n, 9100, "node")
        levels = [level, Fraction(0)]  # the loaded device, then an idle one
        if quantity == "disk":
            return [
                InputSeries(
                    _selector("node_disk_io_time_seconds_total", {**node, "device": device}),
                    f"0+{_num(busy * s)}x{steps}",
                )
                for device, busy in zip(self.d.disk_devices, levels, strict=False)
            ]
        speed = Fraction(self.d.link_speed) if self.d.link_speed is not None else LINK
        out = []
        for device, busy in zip(self.d.nic_devices, levels, strict=False):
            labels = {**node, "device": device}
            out.append(
                InputSeries(
                    _selector("node_network_receive_bytes_total", labels),
                    f"0+{_num(busy * speed * s)}x{steps}",
                )
            )
            out.append(
                InputSeries(_selector("node_network_transmit_bytes_total", labels), f"0+0x{steps}")
            )
            if self.d.link_speed is None:
                out.append(
                    InputSeries(
                        _selector("node_network_speed_bytes", labels), f"{_num(LINK)}+0x{steps}"
                    )
                )
        return out

    def _histogram(
        self, labels: dict[str, str], item: Evidence, state: str, steps: int
    ) -> list[InputSeries]:
        value = self.target(item, state)
        bucket = (
            self.ttft["fire_bucket"] if value == self.ttft["fire"] else self.ttft["quiet_bucket"]
        )
        if self.d.ttft_histogram == "nhcb":
            return [self._nhcb(labels, bucket, steps)]
        out = []
        for bound in self.d.ttft_buckets:
            count = PER_STEP if Fraction(bound) >= bucket else 0
            out.append(
                InputSeries(
                    _selector(f"{TTFT_METRIC}_bucket", {**labels, "le": repr(float(bound))}),
                    f"0+{count}x{steps}",
                )
            )
        inf = {**labels, "le": "+Inf"}
        out.append(InputSeries(_selector(f"{TTFT_METRIC}_bucket", inf), f"0+{PER_STEP}x{steps}"))
        return out

    def _nhcb(self, labels: dict[str, str], bucket: Fraction, steps: int) -> InputSeries:
        """The TTFT histogram as one NHCB series: ``PER_STEP`` observations a sample in the
        bucket whose upper bound is ``bucket`` (the +Inf one past the last bound)."""
        bounds = self.d.ttft_buckets
        layout = Layout("nhcb", bounds)
        index = next((i for i, b in enumerate(bounds) if Fraction(b) >= bucket), len(bounds))
        values = growing(layout, index, Decimal(PER_STEP), steps)
        return InputSeries(_selector(TTFT_METRIC, labels), values)

    def _labels(self, n: int) -> dict[str, str]:
        labels = dict(self.d.labels)
        labels[self.d.host.label] = self._host_value(n)
        if self.d.by_model:
            labels["model_name"] = MODEL
        return labels

    def _all_series(self, steps: int) -> tuple[InputSeries, ...]:
        """Every host's input series over ``steps`` samples. Shared by a fleet's diagnoses
        that differ only in what names them: made by a model of the diagnosis without its
        name, service, severity, labels, explanations, runbook and origin, which therefore
        cannot read them, and remembered by everything else the diagnosis holds."""
        anonymous = replace(
            self.d, name="", service="", severity="", labels=(), explains=(), runbook_url=None,
            origin=_NOWHERE,
        )  # fmt: skip
        key = (repr(anonymous), self.eval, self.scrape, self.factor, steps)
        found = _SERIES.get(key)
        if found is None:
            model = _Model(anonymous, self.eval, self.scrape, self.factor)
            found = tuple(
                s for n, host in enumerate(model.hosts, 1) for s in model._series(n, host, steps)
            )
            if len(_SERIES) >= 256:
                _SERIES.clear()
            _SERIES[key] = found
        return found

    def _values_at(self, key: tuple[object, ...], at: Fraction) -> dict[Quantity, Fraction]:
        """What each quantity reads on the firing host at ``at`` (shared like the timeline:
        a throughput ratio replays the whole baseline)."""
        found = _READINGS.get(key)
        if found is None:
            found = {}
            for item in self.d.evidence:
                exact = self.value(item.quantity, self.hosts[0], at)
                assert exact is not None
                found[item.quantity] = exact
            _READINGS[key] = found
        return found

    def _expected(self, exact: Mapping[Quantity, Fraction]) -> ExpectedAlert:
        labels = self._labels(1)
        values: dict[Quantity, float] = {}
        for item in self.d.evidence:
            values[item.quantity] = _stable(exact[item.quantity], item.unit)
        first = values[self.d.evidence[0].quantity]
        texts = {
            "summary": gotemplate.expand(summary(self.d), labels, first),
            "description": predict_description(self.d, labels, values),
        }
        if self.d.runbook_url:
            texts["runbook_url"] = self.d.runbook_url
        annotations = tuple(sorted(texts.items()))
        return ExpectedAlert(tuple(sorted(labels.items())), annotations)


_FORMATS: dict[str, Callable[[float], str]] = {
    "duration": gotemplate.humanize_duration,
    "percent": gotemplate.humanize_percentage,
    "number": gotemplate.humanize,
}


def _stable(value: Fraction, unit: str) -> float:
    """The value as a float, if Prometheus prints it the same whatever its last bits."""
    fmt = _FORMATS[unit]
    number = float(value)
    if fmt(number * (1 + 1e-12)) != fmt(number * (1 - 1e-12)):
        raise _Retry(f"the test value {number} sits on a rounding tie of Prometheus' formatting")
    return number


def _ceil(value: Fraction, step: Fraction) -> Fraction:
    return -(-value // step) * step


def _num(value: Fraction) -> str:
    decimal = Decimal(value.numerator) / Decimal(value.denominator)
    if Fraction(decimal) != value:
        raise _Retry(f"the test value {float(value)} is not a terminating decimal")
    return units.literal(decimal)


def _t(seconds: Fraction) -> str:
    return units.format_duration(Decimal(seconds.numerator) / Decimal(seconds.denominator))


def _selector(name: str, labels: Mapping[str, str]) -> str:
    return promql.series_text(name, labels)


# --- gpu_health: per-GPU faults, sticky gauges --------------------------------------------

# XIDs the gpu_health test raises: one that counts (not an application XID) and one the
# default ``ignore_xids`` leaves out; the first candidate the spec's pattern allows.
_HARDWARE_XIDS = ("79", "48", "63", "64", "74", "92", "94", "95", "119", "120")
_APPLICATION_XIDS = ("43", "13", "31", "45", "68", "109")
DCGM_XID = "DCGM_FI_DEV_XID_ERRORS"
DCGM_REMAP_FAILURE = "DCGM_FI_DEV_ROW_REMAP_FAILURE"
DCGM_REMAPPED_ROWS = "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"


class _GpuHealthTest:
    """Six hosts, two GPUs each, behind dcgm-exporter (``:9400``). Every fault starts at
    ``start`` (after one whole window, so an XID present from the first sample is old by
    then): a new XID on GPU 0 of the first host, a failed row remapping on GPU 1 of the second,
    exactly ``uncorrectable_rows`` remapped rows on GPU 0 of the third; silent: an XID present
    since the first sample (older than the window), an ignored XID, one row too few.

    The XID alert fires at the first evaluation after ``start`` + ``for`` and stays firing for
    the evaluations whose ``offset window`` still reads before ``start``; at ``start`` +
    ``window`` the exporter shows the same XID one window ago: it resolves, the row-remap
    alerts (sticky) go on."""

    def __init__(self, diagnosis: ResolvedDiagnosis, evaluation: Fraction, scrape: Fraction):
        self.d, self.eval, self.scrape = diagnosis, evaluation, scrape
        self.window = Fraction(diagnosis.window_seconds)
        self.start = _ceil(self.window + 2 * evaluation, evaluation)
        self.fire_at = self.start + _ceil(Fraction(diagnosis.for_seconds), evaluation)
        self.resolve_at = _ceil(self.start + self.window, evaluation)
        self.steps = int((self.resolve_at + evaluation) / scrape) + 1
        self.k = int(self.start / scrape)  # the first sample with the fault
        ignore = diagnosis.ignore_xids
        counted = [x for x in _HARDWARE_XIDS if ignore is None or not promql.full_match(ignore, x)]
        if not counted:
            raise SynthError(f"ignore_xids {ignore!r} leaves out every XID the test can raise")
        self.xid = counted[0]
        self.ignored: str | None = None
        if ignore is not None:
            known = [x for x in _APPLICATION_XIDS if promql.full_match(ignore, x)]
            self.ignored = known[0] if known else promql.regex_example(ignore)
        self.rows = Fraction(diagnosis.uncorrectable_rows)

    def _host(self, n: int) -> str:
        return f"gpu-node-{n}"

    def _base(self, n: int, gpu: int) -> dict[str, str]:
        labels = {"instance": f"{self._host(n)}:9400", "gpu": str(gpu), "UUID": f"GPU-{n}-{gpu}"}
        if not self.d.host.derived:
            labels[self.d.host.label] = self._host(n)
        try:
            return promql.satisfy(self.d.selectors.get("dcgm", ()), labels)
        except ValueError as exc:
            raise SynthError(f"selectors.dcgm: {exc}") from None

    def _quiet(self) -> str:
        return f"0x{self.steps - 1}"

    def _from_start(self, value: Fraction | str) -> str:
        """0 until ``start``, then ``value``."""
        v = value if isinstance(value, str) else _num(value)
        return f"0x{self.k - 1} {v}x{self.steps - self.k - 1}"

    def _gpu(self, n: int, gpu: int, xid: str, remap: str, rows: str) -> list[InputSeries]:
        """One GPU: its XID series (``new`` XID from ``start``, ``old`` from the first sample,
        else none since the exporter started), its row-remap flag and remapped rows."""
        base = self._base(n, gpu)
        out = []
        if xid.startswith("new "):
            code = xid.removeprefix("new ")
            # err_code="0" (no XID yet) until the XID replaces it: a new series, none before
            out.append(
                InputSeries(_selector(DCGM_XID, {**base, "err_code": "0"}), f"0x{self.k - 1}")
            )
            out.append(
                InputSeries(
                    _selector(DCGM_XID, {**base, "err_code": code}),
                    f"_x{self.k} {code}x{self.steps - self.k - 1}",
                )
            )
        elif xid.startswith("old "):
            code = xid.removeprefix("old ")
            out.append(
                InputSeries(
                    _selector(DCGM_XID, {**base, "err_code": code}), f"{code}x{self.steps - 1}"
                )
            )
        else:
            out.append(InputSeries(_selector(DCGM_XID, {**base, "err_code": "0"}), self._quiet()))
        out.append(InputSeries(_selector(DCGM_REMAP_FAILURE, base), remap))
        out.append(InputSeries(_selector(DCGM_REMAPPED_ROWS, base), rows))
        return out  # fmt: skip

    def _hosts(self) -> list[tuple[str, list[tuple[str, str, str]]]]:
        """Per host: its name in the test title and, per GPU, (xid, remap, rows)."""
        q = self._quiet()
        fine = ("", q, q)
        out = [
            (f"a new XID {self.xid} on GPU 0", [(f"new {self.xid}", q, q), fine]),
            ("a failed row remapping on GPU 1", [fine, ("", self._from_start("1"), q)]),
            (f"{units.literal(Decimal(self.d.uncorrectable_rows))} rows remapped for "
             "uncorrectable errors on GPU 0", [("", q, self._from_start(self.rows)), fine]),
            (f"XID {self.xid} on GPU 0 since before the window", [(f"old {self.xid}", q, q), fine]),
        ]  # fmt: skip
        if self.ignored is not None:
            out.append((f"an ignored XID {self.ignored} on GPU 0",
                        [(f"new {self.ignored}", q, q), fine]))  # fmt: skip
        out.append((
            f"{units.literal(Decimal(self.d.uncorrectable_rows) - 1)} rows remapped on GPU 0, "
            "no failure", [("", q, self._from_start(self.rows - 1)), fine],
        ))  # fmt: skip
        return out

    def _expected(self, n: int, gpu: int, xid: str | None) -> ExpectedAlert:
        labels = dict(self.d.labels)
        labels.update({self.d.host.label: self._host(n), "gpu": str(gpu)})
        labels["fault"] = "xid" if xid is not None else "row_remap"
        if xid is not None:
            labels["xid"] = xid
        value = float(xid) if xid is not None else 1.0
        texts = {
            "summary": gotemplate.expand(summary(self.d), labels, value),
            "description": predict_description(self.d, labels, {"gpu_health": value}),
        }
        if self.d.runbook_url:
            texts["runbook_url"] = self.d.runbook_url
        return ExpectedAlert(tuple(sorted(labels.items())), tuple(sorted(texts.items())))

    def test_case(self) -> TestCase:
        hosts = self._hosts()
        series = tuple(
            s
            for n, (_, gpus) in enumerate(hosts, 1)
            for g, (xid, remap, rows) in enumerate(gpus)
            for s in self._gpu(n, g, xid, remap, rows)
        )
        name = self.d.name
        xid_alert = self._expected(1, 0, self.xid)
        remaps = (self._expected(2, 1, None), self._expected(3, 0, None))
        firing = tuple(sorted((xid_alert, *remaps), key=lambda a: a.labels))
        checks = [
            AlertCheck(_t(self.fire_at - self.eval), name, (),
                       "no host fires one evaluation earlier (the old XID is past its window)"),
            AlertCheck(_t(self.fire_at), name, firing,
                       "fires for the new XID and the two row-remap failures, each on its GPU"),
        ]  # fmt: skip
        last = self.resolve_at - self.eval
        if last > self.fire_at:
            still = "the XID is still new one evaluation before a window has passed"
            checks.append(AlertCheck(_t(last), name, firing, still))
        only = "the XID is one window old: only the row-remap failures fire"
        remapped = tuple(sorted(remaps, key=lambda a: a.labels))
        checks.append(AlertCheck(_t(self.resolve_at), name, remapped, only))
        quiet = "; ".join(title for title, _ in hosts[3:])
        loud = "; ".join(title for title, _ in hosts[:3])
        title = f"{name}: fires for {loud}; silent for: {quiet}"
        evaluations = int(self.resolve_at / self.eval) + 1
        return TestCase(
            title, Decimal(self.scrape.numerator) / self.scrape.denominator, series,
            tuple(checks), (), evaluations,
        )  # fmt: skip
