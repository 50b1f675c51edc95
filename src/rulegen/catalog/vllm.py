"""What vLLM exposes, release by release: the metric names, labels and histogram bucket
bounds each vLLM signal of the catalog reads, and what a spec's ``vllm: {version: …}`` makes
of a signal.

Why: vLLM renames and reshapes its metrics between releases (``gpu_cache_usage_perc`` became
``kv_cache_usage_perc`` in 0.9, ``time_per_output_token_seconds`` became
``inter_token_latency_seconds`` in 0.11, the V0 engine has no ``engine`` label and no
prefix-cache counters, old histograms stop at other bounds). A rule written for one release
matches nothing on another, silently. The table here is the one place that knows the
history (each entry names the vLLM sources it was read in: docs/vllm-versions.md); a signal
definition keeps the current names, and ``adapt`` turns it into the signal of the declared
release, or, with no release declared, into one that reads every name a release in use may
expose (``new or old``), so a fleet in the middle of an upgrade keeps alerting.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rulegen.catalog.definition import SignalDef

__all__ = [
    "ENGINE_LABEL_SINCE", "OLDEST", "Era", "VllmVersion", "adapt", "bucket_checks", "eras_of",
    "has_engine_label", "releases",
]  # fmt: skip

_VERSION = re.compile(r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$")


@dataclass(frozen=True, order=True)
class VllmVersion:
    """A vLLM release line, ``MAJOR.MINOR`` (patch releases do not rename metrics)."""

    major: int
    minor: int

    @classmethod
    def parse(cls, text: str) -> VllmVersion:
        """``"0.11"`` → ``VllmVersion(0, 11)``; ValueError says what is wrong."""
        found = _VERSION.fullmatch(text.strip())
        if not found:
            raise ValueError(f'must be MAJOR.MINOR, such as "0.11" (got {text!r})')
        version = cls(int(found.group(1)), int(found.group(2)))
        if version < OLDEST:
            raise ValueError(f"rulegen knows vLLM's metrics from {OLDEST} on (got {text})")
        return version

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"


# The oldest release whose metrics rulegen knows.
OLDEST = VllmVersion(0, 6)
# The V1 engine, the default from 0.8 (``VLLM_USE_V1``), labels every metric with ``engine``
# (the engine index) from 0.8.3; V0 has ``model_name`` only. Only the generated tests' series
# follow this (the rules never match on ``engine``, texts print it only when it is there).
ENGINE_LABEL_SINCE = VllmVersion(0, 8)


def has_engine_label(version: VllmVersion | None) -> bool:
    """Whether the release's metrics carry ``engine`` (unknown release: the current ones do)."""
    return version is None or version >= ENGINE_LABEL_SINCE


@dataclass(frozen=True)
class Era:
    """What a signal reads in the releases from ``since`` up to the next era's.

    ``params``: the signal's parameter values in these releases (``metric``, ``buckets``);
    ``missing``: why the signal cannot be written for them (no such metric), instead.
    """

    since: VllmVersion
    params: Mapping[str, Any] = field(default_factory=dict)
    missing: str | None = None


def _v(text: str) -> VllmVersion:
    major, minor = text.split(".")
    return VllmVersion(int(major), int(minor))


def _bounds(*values: str) -> tuple[Decimal, ...]:
    return tuple(Decimal(v) for v in values)


# Histogram bucket bounds (``le``) as each release defines them (docs/vllm-versions.md).
TTFT_16 = _bounds(
    "0.001", "0.005", "0.01", "0.02", "0.04", "0.06", "0.08", "0.1", "0.25", "0.5", "0.75",
    "1.0", "2.5", "5.0", "7.5", "10.0",
)  # fmt: skip
TTFT_22 = (*TTFT_16, *_bounds("20.0", "40.0", "80.0", "160.0", "640.0", "2560.0"))
E2E_10 = _bounds("1.0", "2.5", "5.0", "10.0", "15.0", "20.0", "30.0", "40.0", "50.0", "60.0")
LATENCY_15 = _bounds(
    "0.3", "0.5", "0.8", "1.0", "1.5", "2.0", "2.5", "5.0", "10.0", "15.0", "20.0", "30.0",
    "40.0", "50.0", "60.0",
)  # fmt: skip
LATENCY_21 = (*LATENCY_15, *_bounds("120.0", "240.0", "480.0", "960.0", "1920.0", "7680.0"))
TPOT_13 = _bounds(
    "0.01", "0.025", "0.05", "0.075", "0.1", "0.15", "0.2", "0.3", "0.4", "0.5", "0.75",
    "1.0", "2.5",
)  # fmt: skip
TPOT_19 = (*TPOT_13, *_bounds("5.0", "7.5", "10.0", "20.0", "40.0", "80.0"))

# A version is a release line: an era holds what EVERY patch release of its lines exposes
# (0.9.2 added kv_cache_usage_perc beside the old name, so the 0.9 line reads the old one; the
# bounds added in 0.8.4 count from 0.9). Read in each release's sdist: docs/vllm-versions.md.
_KV_OLD = {"metric": "vllm:gpu_cache_usage_perc"}
_KV_NEW = {"metric": "vllm:kv_cache_usage_perc"}
_QUEUE_SINCE_064 = "vllm:request_queue_time_seconds exists from 0.6.4 on (not in 0.6.0-0.6.3)"
_ITL_OLD = "vllm:time_per_output_token_seconds"

# By signal: its eras, oldest first. A vLLM signal not listed reads the same names in every
# release from OLDEST on.
ERAS: Mapping[str, tuple[Era, ...]] = {
    "kv_cache_usage": (Era(OLDEST, _KV_OLD), Era(_v("0.10"), _KV_NEW)),
    "kv_cache_forecast": (Era(OLDEST, _KV_OLD), Era(_v("0.10"), _KV_NEW)),
    "prefix_cache_hit_rate": (
        Era(
            OLDEST,
            missing="the V0 engine, the default before 0.8, exports only a hit-rate "
            "gauge (vllm:gpu_prefix_cache_hit_rate), no hit and query counters",
        ),  # fmt: skip
        Era(_v("0.8"), {"metric": "vllm:gpu_prefix_cache"}),
        Era(_v("0.10"), {"metric": "vllm:prefix_cache"}),
    ),
    "ttft_latency": (Era(OLDEST, {"buckets": TTFT_16}), Era(_v("0.9"), {"buckets": TTFT_22})),
    "e2e_latency": (
        Era(OLDEST, {"buckets": E2E_10}),
        Era(_v("0.7"), {"buckets": LATENCY_15}),
        Era(_v("0.9"), {"buckets": LATENCY_21}),
    ),
    "vllm_queue_time": (
        Era(OLDEST, missing=_QUEUE_SINCE_064),
        Era(_v("0.7"), {"buckets": LATENCY_15}),
        Era(_v("0.9"), {"buckets": LATENCY_21}),
    ),
    "itl_latency": (
        Era(OLDEST, {"metric": _ITL_OLD, "buckets": TPOT_13}),
        Era(_v("0.9"), {"metric": _ITL_OLD, "buckets": TPOT_19}),
        Era(_v("0.11"), {"metric": "vllm:inter_token_latency_seconds", "buckets": TPOT_19}),
    ),
}


def eras_of(signal: str) -> tuple[Era, ...]:
    """The signal's eras (empty: the same in every known release)."""
    return ERAS.get(signal, ())


def _era_at(eras: tuple[Era, ...], version: VllmVersion) -> Era:
    return [era for era in eras if era.since <= version][-1]


def releases(eras: tuple[Era, ...], index: int) -> str:
    """The releases of ``eras[index]``, as a reader wants them: ``0.6-0.7``, ``0.9 on``."""
    first = eras[index].since
    if index + 1 == len(eras):
        return f"{first} on"
    nxt = eras[index + 1].since
    last = VllmVersion(nxt.major, nxt.minor - 1) if nxt.minor else None
    if last is None or last == first:
        return str(first)
    return f"{first}-{last}"


def adapt(signal: SignalDef, version: VllmVersion | None, given: frozenset[str]) -> SignalDef | str:
    """``signal`` as it reads the metrics of vLLM ``version``, or why it cannot.

    With a version: the era's parameter values become the defaults (a value the spec gives,
    ``given``, still wins), and without the ``engine`` label (V0) the test recipe makes
    series without it. Without a version: the newest names are the defaults and the
    expressions read every other name a supported release exposes too (``new or old``); a
    metric the spec names itself is read alone. Buckets are checked by ``bucket_checks``.
    """
    eras = eras_of(signal.signal)
    adapted = signal
    if eras and version is not None:
        era = _era_at(eras, version)
        if era.missing is not None:
            return (
                f"signal {signal.signal} cannot be written for vLLM {version}: {era.missing} "
                f"(it can for vLLM {_having(eras)})"
            )
        adapted = _with_defaults(signal, era.params, given)
    elif eras:
        adapted = _with_defaults(signal, eras[-1].params, given)
        if "metric" not in given:
            adapted = _reading_every_name(adapted, eras)
    if signal.family == "vllm" and not has_engine_label(version):
        adapted = _without_engine(adapted)
    return adapted


def _having(eras: tuple[Era, ...]) -> str:
    """The releases a signal can be written for: ``0.8 on``, or the list of their spans."""
    spans = [releases(eras, i) for i, e in enumerate(eras) if e.missing is None]
    first = next(i for i, e in enumerate(eras) if e.missing is None)
    if all(e.missing is None for e in eras[first:]):
        return f"{eras[first].since} on"
    return ", ".join(spans)


def bucket_checks(
    signal: str, version: VllmVersion | None, given: frozenset[str]
) -> list[tuple[str, tuple[Decimal, ...]]]:
    """The bucket bounds a threshold must be checked against, each with the releases they are
    from (``"vLLM 0.6-0.7"``): the declared release's, or with none declared, those of every
    release that may be scraped. Empty when the spec gives its own ``buckets``."""
    eras = eras_of(signal)
    if "buckets" in given or not any("buckets" in e.params for e in eras):
        return []
    if version is not None:
        era = _era_at(eras, version)
        return (
            [(f"vLLM {version}", tuple(era.params["buckets"]))] if "buckets" in era.params else []
        )
    out: list[tuple[str, tuple[Decimal, ...]]] = []
    for index, era in enumerate(eras):
        if "buckets" in era.params:
            out.append((f"vLLM {releases(eras, index)}", tuple(era.params["buckets"])))
    return out


def _with_defaults(
    signal: SignalDef, values: Mapping[str, Any], given: frozenset[str]
) -> SignalDef:
    params = dict(signal.params)
    for key, value in values.items():
        if key in params and key not in given:
            default = [float(b) for b in value] if isinstance(value, tuple) else value
            params[key] = params[key].model_copy(update={"default": default})
    return signal.model_copy(update={"params": params})


def _reading_every_name(signal: SignalDef, eras: tuple[Era, ...]) -> SignalDef:
    """The signal's expressions as ``newest or older …``: each alternative is the template
    rendered with one release's ``metric`` (Jinja's ``with`` scopes it)."""
    names = [str(e.params["metric"]) for e in reversed(eras) if "metric" in e.params]
    names = list(dict.fromkeys(names))
    if len(names) < 2:
        return signal

    def either(template: str | None) -> str | None:
        if template is None:
            return None
        body = template.strip()
        parts = [body] + [
            f'{{% with metric = "{name}" %}}{body}{{% endwith %}}' for name in names[1:]
        ]
        return "\nor\n".join(parts) + "\n"

    return signal.model_copy(
        update={"expr": either(signal.expr), "native_expr": either(signal.native_expr)}
    )


def _without_engine(signal: SignalDef) -> SignalDef:
    """The test recipe of a V0 release: no ``engine`` label on any series."""
    test = signal.test
    labels = {k: v for k, v in test.labels.items() if k != "engine"}
    update: dict[str, Any] = {
        "labels": labels,
        "vary_alt": [k for k in test.vary_alt if k != "engine"],
    }
    if test.keep is not None:
        update["keep"] = [k for k in test.keep if k != "engine"]
    return signal.model_copy(update={"test": test.model_copy(update=update)})
