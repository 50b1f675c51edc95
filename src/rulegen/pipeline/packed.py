"""A build's services, each kept pickled and compressed until something reads it.

Why: a service's rule groups, with their origins and expressions, take about 650 KB as
Python objects and 40 KB packed, and a worker must pickle them to send them anyway. A build
that writes its files without validating them (``--no-validate``) needs only each service's
name and group names (to refuse a group name two specs share); keeping the rest packed
saves the parent process the unpickling (about 5 ms a service, on the core the workers
need) and a thousand services' 650 MB. Validation, routing and Mimir read the services as
before: each is unpacked on first reading and kept. A build that reads nothing of them
(``rulegen build --no-validate`` without routing or Mimir) does not even pack them (pickling
is 3 ms a service of the example spec).
"""

from __future__ import annotations

import pickle
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import overload

from rulegen.core.versions import PrometheusVersion
from rulegen.generated import ReplicaLabel, ServiceOutput
from rulegen.routing.ha import LabelUse, label_uses


@dataclass(frozen=True)
class HaDeclared:
    """What the HA file (``rulegen.routing.ha``) reads of a service that declares ``ha``:
    its replica label, its Prometheus version and the labels its alerts set (for the error
    at an alert that carries a dropped one)."""

    label: ReplicaLabel
    prometheus: PrometheusVersion
    uses: tuple[LabelUse, ...]

    @classmethod
    def of(cls, output: ServiceOutput) -> HaDeclared | None:
        """``output``'s, or None when its spec declares no ``ha``."""
        if output.ha is None:
            return None
        return cls(output.ha, output.prometheus, label_uses(output))


@dataclass(frozen=True)
class PackedOutput:
    """One service's output: its name, rule group names and replica label at hand, the whole
    of it packed."""

    service: str
    group_names: tuple[str, ...]
    blob: bytes
    ha: HaDeclared | None = None

    @classmethod
    def of(cls, output: ServiceOutput, keep: bool = True) -> PackedOutput:
        """``output`` packed (pickled, then compressed at zlib's fastest level); without
        ``keep``, only its name, group names and what the HA file reads (a build that will
        not read the rest)."""
        names = (*(g.name for g in output.groups), *(slo.group.name for slo in output.slos))
        ha = HaDeclared.of(output)
        if not keep:
            return cls(output.service, names, b"", ha)
        data = pickle.dumps(output, protocol=pickle.HIGHEST_PROTOCOL)
        return cls(output.service, names, zlib.compress(data, 1), ha)

    def unpack(self) -> ServiceOutput:
        """The service's output as it was packed."""
        if not self.blob:
            raise RuntimeError(
                f"service {self.service}: its rule groups were not kept (build(services=False))"
            )
        output = pickle.loads(zlib.decompress(self.blob))  # noqa: S301 (packed by this build)
        assert isinstance(output, ServiceOutput)
        return output


class Services(Sequence[ServiceOutput]):
    """Services in build order, packed ones unpacked when first read (then kept)."""

    def __init__(self, items: Iterable[ServiceOutput | PackedOutput] = ()) -> None:
        self._items: list[ServiceOutput | PackedOutput] = list(items)

    def append(self, item: ServiceOutput | PackedOutput) -> None:
        """Add a service (packed or not) at the end."""
        self._items.append(item)

    def extend(self, items: Iterable[ServiceOutput | PackedOutput]) -> None:
        """Add services at the end, in order."""
        self._items.extend(items)

    @overload
    def __getitem__(self, index: int) -> ServiceOutput: ...

    @overload
    def __getitem__(self, index: slice) -> list[ServiceOutput]: ...

    def __getitem__(self, index: int | slice) -> ServiceOutput | list[ServiceOutput]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self._items)))]
        item = self._items[index]
        if isinstance(item, PackedOutput):
            item = self._items[index] = item.unpack()
        return item

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[ServiceOutput]:
        return (self[i] for i in range(len(self._items)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by content

    def __repr__(self) -> str:
        return f"Services({len(self._items)} services)"

    def declaring_ha(self) -> list[HaDeclared]:
        """What the HA file reads of each service whose spec declares ``ha``, without
        unpacking any."""
        found = (i.ha if isinstance(i, PackedOutput) else HaDeclared.of(i) for i in self._items)
        return [ha for ha in found if ha is not None]

    def packed(self) -> int:
        """How many are still packed (tests check that a write never unpacks them)."""
        return sum(isinstance(item, PackedOutput) for item in self._items)
