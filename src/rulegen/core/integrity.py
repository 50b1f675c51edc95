"""Cache files that carry proof of what they hold: a record in canonical JSON, checked
against content hashes on every read, and signed with an HMAC when a secret is set.

Why: ``--test-cache DIR`` is often a CI cache, and a CI cache can be written by every job
that restores it, a pull request's included. Hashes recomputed on use catch an entry that is
corrupt, edited by hand or copied under another key; but whoever may write the cache may also
recompute a hash, so only an HMAC-SHA256 with a secret the writer does not hold
(``RULEGEN_CACHE_SECRET``) makes a forged entry detectable. Without the secret a cache is as
trustworthy as whoever may write it (docs/ci.md#the-test-cache).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

SECRET_ENV = "RULEGEN_CACHE_SECRET"
SIGNATURE = "hmac"  # the field of a signed file that holds its HMAC
# The largest cache file read back (a fleet's ``check rules`` marker lists every rule file).
MAX_ENTRY_BYTES = 64 * 2**20


class BadEntry(Exception):
    """A cache file that is there but cannot be used; ``reason`` says why, in a few words."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def cache_secret() -> bytes | None:
    """``RULEGEN_CACHE_SECRET``'s bytes, or ``None`` when it is unset or empty (an empty
    key would sign nothing anyone could not sign too)."""
    value = os.environ.get(SECRET_ENV, "")
    return value.encode("utf-8", "surrogateescape") if value else None


def canonical(record: object) -> bytes:
    """One byte string per JSON value (sorted keys, no spaces, ASCII): what is hashed and
    signed, so that a record parsed back hashes as it did when written."""
    return json.dumps(record, sort_keys=True, ensure_ascii=True, separators=(",", ":")).encode()


def sha256(data: bytes) -> str:
    """The hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def _signature(record: Mapping[str, object], secret: bytes) -> str:
    return hmac.new(secret, canonical(record), hashlib.sha256).hexdigest()


def sealed(record: Mapping[str, object], secret: bytes | None) -> bytes:
    """The bytes of a cache file holding ``record``, with its HMAC when there is a secret."""
    content = dict(record)
    if secret is not None:
        content[SIGNATURE] = _signature(record, secret)
    return canonical(content) + b"\n"


def read_sealed(path: Path, secret: bytes | None) -> dict[str, object] | None:
    """The record of the cache file at ``path``; ``None`` when there is none (a plain miss).

    Raises ``BadEntry`` for a file that is there but is not a record, or, with a secret,
    whose HMAC is missing or wrong. Only a regular file is opened (a FIFO planted in the
    cache would block the build), and at most ``MAX_ENTRY_BYTES`` of it are read.
    """
    if not path.exists() and not path.is_symlink():
        return None
    if not path.is_file():
        raise BadEntry("not a regular file")
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_ENTRY_BYTES + 1)
    except OSError as exc:
        raise BadEntry(f"cannot be read ({exc.strerror or exc})") from None
    if len(raw) > MAX_ENTRY_BYTES:
        raise BadEntry("larger than any entry rulegen writes")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise BadEntry("not JSON, so not written by this rulegen") from None
    if not isinstance(data, dict):
        raise BadEntry("not a JSON object, so not written by this rulegen")
    return _unsealed(data, secret)


def _unsealed(data: dict[str, object], secret: bytes | None) -> dict[str, object]:
    """``data`` without its HMAC, which must be there and right when there is a secret."""
    record = {name: value for name, value in data.items() if name != SIGNATURE}
    if secret is None:
        return record
    found = data.get(SIGNATURE)
    if not isinstance(found, str):
        raise BadEntry(f"not signed with {SECRET_ENV}")
    if not hmac.compare_digest(found, _signature(record, secret)):
        raise BadEntry(f"its signature is not {SECRET_ENV}'s (forged, or another secret)")
    return record


def write_atomically(folder: Path, name: str, data: bytes) -> None:
    """``folder/name`` = ``data``, whole or not at all (a temporary file renamed into place:
    a build reading the same cache sees the old file or the new one). Raises ``OSError``."""
    folder.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=".tmp-")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        Path(temporary).replace(folder / name)
    except OSError:
        Path(temporary).unlink(missing_ok=True)
        raise
