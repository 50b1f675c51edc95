"""The Prometheus remote-write request, encoded by hand: protobuf ``WriteRequest`` framed
as a snappy block.

Why by hand: the message is three nested types (series, label, sample) and snappy's block
format accepts literal-only blocks, so a few lines replace two binary dependencies.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping, Sequence

STALE_NAN = struct.unpack("<d", struct.pack("<Q", 0x7FF0000000000002))[0]
"""The value the rule manager writes when a series stops (Prometheus' staleness marker)."""
HEADERS = {
    "Content-Encoding": "snappy",
    "Content-Type": "application/x-protobuf",
    "X-Prometheus-Remote-Write-Version": "0.1.0",
}
_LITERAL_MAX = 65536  # snappy literal runs of at most 64 KiB (two length bytes)


def _varint(number: int) -> bytes:
    out = bytearray()
    number &= (1 << 64) - 1  # int64 as protobuf writes it: two's complement
    while True:
        low = number & 0x7F
        number >>= 7
        if number:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _bytes(field: int, data: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(data)) + data


def _sample(ms: int, value: float) -> bytes:
    # Sample: 1 value (double, wire type 1), 2 timestamp (int64 ms, varint)
    return _bytes(2, _varint(1 << 3 | 1) + struct.pack("<d", value) + _varint(2 << 3) + _varint(ms))


def _series(labels: Mapping[str, str], samples: Sequence[tuple[int, float]]) -> bytes:
    # TimeSeries: 1 labels (sorted by name, as Prometheus expects), 2 samples (in time order)
    body = b"".join(
        _bytes(1, _bytes(1, k.encode()) + _bytes(2, v.encode())) for k, v in sorted(labels.items())
    )
    body += b"".join(_sample(ms, value) for ms, value in sorted(samples))
    return _bytes(1, body)


def snappy_block(data: bytes) -> bytes:
    """``data`` as a valid snappy block made of literals only (no compression)."""
    out = bytearray(_varint(len(data)))
    for start in range(0, len(data), _LITERAL_MAX):
        chunk = data[start : start + _LITERAL_MAX]
        size = len(chunk) - 1
        if size < 60:
            out.append(size << 2)
        elif size < 256:
            out += bytes((60 << 2, size))
        else:
            out += bytes((61 << 2,)) + struct.pack("<H", size)
        out += chunk
    return bytes(out)


def write_request(
    series: Iterable[tuple[Mapping[str, str], Sequence[tuple[int, float]]]],
) -> bytes:
    """The body of a remote-write POST carrying ``series`` (labels, samples in Unix ms)."""
    return snappy_block(b"".join(_series(labels, samples) for labels, samples in series))
