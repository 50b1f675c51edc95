"""The format of a signal definition: what a catalog YAML file may contain.

Why: built-in and user signals (``signals/``) are validated by the same models, so a team's
own signal gets the same checks, error positions and generated tests as a built-in one.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Unit = Literal["duration", "percent", "number", "bandwidth"]
ParamType = Literal["metric", "regex", "number", "percent", "duration", "bandwidth", "buckets"]
Settle = Literal["instant", "ratio", "window", "ramp"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ThresholdDef(_Strict):
    """The threshold's unit, the comparison and the range a spec value must fall in."""

    unit: Unit
    op: Literal[">", "<"]
    min: Decimal | None = None
    max: Decimal | None = None


class Defaults(_Strict):
    """Values an alert of this signal gets when the spec leaves them out."""

    window: str | None
    for_: str = Field(alias="for")


class ParamDef(_Strict):
    """A signal-specific spec key (``metric:``, ``quantile:``, ``link_speed:``)."""

    type: ParamType
    default: Any = None
    min: Decimal | None = None
    max: Decimal | None = None
    about: str = ""


class SeriesDef(_Strict):
    """One synthetic input series; exactly one of rate (per second), inc (per sample), value."""

    name: str
    labels: dict[str, str] = {}
    rate: str | None = None
    inc: str | None = None
    value: str | None = None
    when: str | None = None

    @model_validator(mode="after")
    def _one_shape(self) -> SeriesDef:
        if sum(x is not None for x in (self.rate, self.inc, self.value)) != 1:
            raise ValueError("a series needs exactly one of rate, inc or value")
        return self


class HistogramDef(_Strict):
    """A synthetic histogram: observations per sample, placed by the test generator."""

    metric: str
    per_step: str


class ScenarioDef(_Strict):
    """A neutral case: series that must never make the alert fire."""

    name: str
    labels: dict[str, str] = {}
    series: list[SeriesDef] = []
    histogram: HistogramDef | None = None
    when: str | None = None


class TestDef(_Strict):
    """How to make synthetic series that give the signal a chosen value ``q``.

    Why: tests derived from this knowledge, not from the rule's own expression, catch a
    wrong expression instead of restating it.
    """

    settle: Settle
    labels: dict[str, str]
    vary: str
    vary_alt: list[str] = []
    keep: list[str] | None = None
    drop: list[str] = []
    add: dict[str, str] = {}
    max: Decimal | None = None
    integer: bool = False
    series: list[SeriesDef] = []
    histogram: HistogramDef | None = None
    neutral: list[ScenarioDef] = []
    # settle "ramp" (a forecast): how many seconds ahead the quantity looks (an expression
    # over the params, e.g. ``horizon``); ``q`` is then the quantity's growth per second, and
    # on the recipe's series it reads q * (t + lead) at time t.
    lead: str | None = None

    @model_validator(mode="after")
    def _recipe(self) -> TestDef:
        if bool(self.series) == (self.histogram is not None):
            raise ValueError("a test needs either series or histogram, not both")
        if (self.settle == "ramp") != (self.lead is not None):
            raise ValueError("settle: ramp needs a lead, and only it has one")
        if self.settle == "ramp" and self.histogram is not None:
            raise ValueError("settle: ramp reads series, not a histogram")
        if self.vary not in self.labels or "{n}" not in self.labels[self.vary]:
            raise ValueError("labels[vary] must exist and contain {n}")
        return self


class SignalDef(_Strict):
    """One catalog signal: metadata, a PromQL template, annotations and a test recipe."""

    signal: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    alert: str = Field(pattern=r"^[A-Z][A-Za-z0-9]*$")
    family: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    # The dashboard row of the signal's panels; default: the family's row.
    row: str | None = None
    about: str
    threshold: ThresholdDef
    defaults: Defaults
    params: dict[str, ParamDef] = {}
    record: str | None
    expr: str
    # The same quantity read from one native histogram series (NHCB or exponential), for a
    # signal whose ``expr`` reads ``_bucket`` series: what ``histograms:`` switches to.
    native_expr: str | None = None
    summary: str
    description: str
    test: TestDef
    source: str = ""

    def series_labels(self) -> tuple[str, ...]:
        """The labels of the signal's quantity, from its test recipe (what the alert keeps)."""
        test = self.test
        if test.keep is not None:
            names = list(test.keep)
        else:
            names = [*test.labels, *(k for s in test.series for k in s.labels)]
        names += list(test.add)
        return tuple(n for n in dict.fromkeys(names) if n not in test.drop and n != "le")

    @model_validator(mode="after")
    def _consistent(self) -> SignalDef:
        if self.test.settle in ("window", "ramp") and self.threshold.op == "<":
            raise ValueError(
                f"a {self.test.settle}-settling signal cannot use '<' (its ramp-up would fire)"
            )
        if self.test.histogram is not None and "buckets" not in self.params:
            raise ValueError("a histogram test needs a 'buckets' param")
        if self.test.histogram is not None and "quantile" not in self.params:
            raise ValueError("a histogram test needs a 'quantile' param")
        if self.native_expr is not None and self.test.histogram is None:
            raise ValueError("native_expr is for a signal that reads a histogram (test.histogram)")
        return self
