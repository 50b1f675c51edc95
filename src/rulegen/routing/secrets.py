"""Credentials written inline in the Alertmanager inputs: refused at their position, never shown.

Why: the routing file's receivers and the whole base file end up in ``alertmanager.yml``, a
generated file that is committed. Alertmanager reads each credential it knows from a file
(``routing_key_file``, ``basic_auth.password_file`` …), so the committed config only ever holds
paths. Which fields hold a credential is ``rulegen.source.credentials``' tables (Alertmanager's
own list, shared with the loaders' messages, which never quote one); this module applies them.
A webhook ``url`` is not in them: Alertmanager 0.25 (Debian's) has no ``url_file``, so there
the URL is configuration; credentials inside any URL (``https://user:pass@host``, a query
parameter whose name says secret: ``?token=…``) are refused everywhere.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rulegen.errors import Diagnostic
from rulegen.source.credentials import ANYWHERE, BY_OWNER, GLOBAL, has_url_credentials
from rulegen.source.loader import PathKey, Positions

# rulegen's own receiver keys in the routing file → the Alertmanager configs they become.
INTEGRATIONS = {
    "webhook": "webhook_configs",
    "pagerduty": "pagerduty_configs",
    "slack": "slack_configs",
    "email": "email_configs",
}


def file_option(config: str, field: str) -> str | None:
    """The ``*_file`` alternative when ``field`` of an Alertmanager ``config`` (such as
    ``pagerduty_configs``) holds a credential, else ``None``."""
    return BY_OWNER.get(config, {}).get(field) or ANYWHERE.get(field)


def find_secrets(data: Any, positions: Positions) -> list[Diagnostic]:
    """Every inline credential in a routing file or a base Alertmanager file, each at the
    position of its value; the value itself is never part of a message."""
    out: list[Diagnostic] = []
    for path, value in _walk(data, ()):
        if not path or value in (None, "", [], {}):
            continue
        alternative = _alternative(path)
        if alternative is not None:
            out.append(positions.diag(path, _message(path[-1], alternative)))
        elif isinstance(value, str) and has_url_credentials(value):
            out.append(positions.diag(path, _URL_MESSAGE))
        elif isinstance(path[-1], str) and has_url_credentials(path[-1]):
            out.append(positions.diag(path, _URL_MESSAGE, key=True))
    return out


def url_credentials(data: Any, positions: Positions) -> list[Diagnostic]:
    """Credentials in URLs anywhere in ``data`` (a service spec's ``runbook_url``, say)."""
    out: list[Diagnostic] = []
    for path, value in _walk(data, ()):
        if isinstance(value, str) and has_url_credentials(value):
            out.append(positions.diag(path, _URL_MESSAGE))
        elif path and isinstance(path[-1], str) and has_url_credentials(path[-1]):
            out.append(positions.diag(path, _URL_MESSAGE, key=True))
    return out


_URL_MESSAGE = (
    "secrets are read from files only: this URL carries credentials (user:password@, or a "
    "query parameter such as token=); remove them from the URL and keep them out of the "
    "committed files"
)


def _walk(node: Any, path: PathKey) -> Iterator[tuple[PathKey, Any]]:
    yield path, node
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _walk(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _walk(value, (*path, index))


def _owner(path: PathKey) -> str | None:
    """The key of the mapping or list of mappings that holds the last key of ``path``."""
    for part in reversed(path[:-1]):
        if isinstance(part, str):
            return part
    return None


def _alternative(path: PathKey) -> str | None:
    """The file alternative of the credential at ``path``: ``""`` when Alertmanager has none,
    ``None`` when ``path`` holds no credential."""
    key = path[-1]
    if not isinstance(key, str):
        return None
    owner = _owner(path)
    if len(path) == 2 and path[0] == "global" and key in GLOBAL:
        return GLOBAL[key] or ""
    if owner in INTEGRATIONS and path[:2] == ("routing", "receivers") and len(path) == 5:
        owner = INTEGRATIONS[owner]
    if owner is not None and key in BY_OWNER.get(owner, {}):
        return BY_OWNER[owner][key] or ""
    if key in ANYWHERE:
        return ANYWHERE[key] or ""
    if key == "secrets" and len(path) >= 3 and path[-3] == "http_headers":
        return "files"
    return None


def _message(key: str | int, alternative: str) -> str:
    if alternative == "files":
        return "secrets are read from files only: write files: [/path/to/secret]"
    if alternative:
        return f"secrets are read from files only: write {alternative}: /path/to/secret"
    return (
        f"secrets are read from files only, and Alertmanager cannot read {key} from a file: "
        "keep it out of the committed files (add it when deploying)"
    )
