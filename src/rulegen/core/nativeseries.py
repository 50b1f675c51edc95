"""Native histogram samples in promtool's series notation (``{{schema:0 count:2 …}}``).

Why here: the SLO and alert test generators both feed native histograms, with custom
buckets (NHCB, schema -53) or exponential ones; the notation and its expanding form
(``{{a}}+{{b}}x10``, as for floats) are written in one place.

The generated tests place every observation on known buckets, so each expected value is
exact: an NHCB bucket is the classic ``le`` bucket of the same bound, and an exponential
bucket of schema ``s`` with index ``i`` holds ``(2**((i-1)/2**s), 2**(i/2**s)]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from rulegen import units
from rulegen.core.histograms import HistogramKind

NHCB_SCHEMA = -53
EXPONENTIAL_SCHEMA = 0


@dataclass(frozen=True)
class Layout:
    """The buckets a generated histogram uses.

    NHCB: ``bounds`` are the custom values (``le`` bounds); a sample has one count per bound
    plus the +Inf bucket. Exponential (schema 0): ``offset`` is the first bucket's index and
    a sample has ``width`` consecutive buckets from it.
    """

    kind: HistogramKind
    bounds: tuple[Decimal, ...] = ()
    offset: int = 0
    width: int = 1
    schema: int = EXPONENTIAL_SCHEMA

    @property
    def size(self) -> int:
        """How many bucket counts one sample has."""
        return len(self.bounds) + 1 if self.kind == "nhcb" else self.width

    def upper(self, index: int) -> Decimal:
        """The upper bound of bucket ``index`` of a sample (the +Inf bucket: twice the last
        bound, a value such a bucket holds, for the sample's sum)."""
        if self.kind == "nhcb":
            return self.bounds[index] if index < len(self.bounds) else self.bounds[-1] * 2
        return exponential_bound(self.offset + index, self.schema)

    def sample(self, counts: Sequence[Decimal]) -> str:
        """One histogram holding ``counts[i]`` observations in bucket ``i``, each at its
        bucket's upper bound (the sum)."""
        if len(counts) != self.size:
            raise ValueError(f"a sample of this layout has {self.size} buckets, not {len(counts)}")
        total = sum(counts, Decimal(0))
        observed = sum((c * self.upper(i) for i, c in enumerate(counts)), Decimal(0))
        buckets = " ".join(units.literal(c) for c in counts)
        head = f"sum:{units.literal(observed)} count:{units.literal(total)}"
        if self.kind == "nhcb":
            values = " ".join(units.literal(b) for b in self.bounds)
            return (
                f"{{{{schema:{NHCB_SCHEMA} {head} custom_values:[{values}] buckets:[{buckets}]}}}}"
            )
        return f"{{{{schema:{self.schema} {head} offset:{self.offset} buckets:[{buckets}]}}}}"


def growing(layout: Layout, index: int, per_step: Decimal, steps: int) -> str:
    """A series of ``steps + 1`` samples from an empty histogram, each ``per_step``
    observations more in bucket ``index``: ``{{empty}}+{{step}}x<steps>``."""
    counts = [Decimal(0)] * layout.size
    counts[index] = per_step
    return f"{layout.sample([Decimal(0)] * layout.size)}+{layout.sample(counts)}x{steps}"


def exponential_bound(index: int, schema: int) -> Decimal:
    """The upper bound of bucket ``index`` at ``schema``: ``2**(index / 2**schema)`` (exact
    at schema 0; otherwise the nearest float, which is what the sum needs)."""
    if schema == 0:
        return Decimal(2) ** index
    return Decimal(repr(2 ** (index / 2**schema))).normalize()


def exponential_index(upper: Decimal) -> int:
    """The schema-0 bucket index whose upper bound is ``upper`` (a power of two)."""
    index, power = 0, Decimal(1)
    while power < upper:
        power *= 2
        index += 1
    while power > upper:
        power /= 2
        index -= 1
    if power != upper:
        raise ValueError(f"{upper} is not a power of two")
    return index


def expanding(layout: Layout, samples: Sequence[tuple[Decimal, ...] | None]) -> str:
    """promtool's series of ``samples`` (bucket counts; None: not scraped, ``_``): runs
    growing by the same counts in every bucket are written ``{{first}}+{{step}}xN``."""
    parts: list[str] = []
    index = 0
    while index < len(samples):
        current = samples[index]
        if current is None:
            end = index
            while end + 1 < len(samples) and samples[end + 1] is None:
                end += 1
            parts.append(f"_x{end - index + 1}")
            index = end + 1
            continue
        end, step = _run(samples, index)
        if end == index or step is None:
            parts.append(layout.sample(current))
        else:
            parts.append(f"{layout.sample(current)}+{layout.sample(step)}x{end - index}")
        index = end + 1
    return " ".join(parts)


def _run(
    samples: Sequence[tuple[Decimal, ...] | None], start: int
) -> tuple[int, tuple[Decimal, ...] | None]:
    """The last index of the run from ``start`` that grows by one non-negative step."""
    first = samples[start]
    following = samples[start + 1] if start + 1 < len(samples) else None
    if first is None or following is None:
        return start, None
    step = tuple(b - a for a, b in zip(first, following, strict=True))
    if any(s < 0 for s in step):
        return start, None  # a reset: the sample stands alone
    end = start + 1
    while end + 1 < len(samples):
        after = samples[end + 1]
        here = samples[end]
        if after is None or here is None:
            break
        if tuple(b - a for a, b in zip(here, after, strict=True)) != step:
            break
        end += 1
    return end, step
