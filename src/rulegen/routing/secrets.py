"""Credentials written inline in the Alertmanager inputs: refused at their position, never shown.

Why: the routing file's receivers and the whole base file end up in ``alertmanager.yml``, a
generated file that is committed. Alertmanager reads each credential it knows from a file
(``routing_key_file``, ``basic_auth.password_file`` …), so the committed config only ever holds
paths. The tables follow Alertmanager's configuration (0.25 and newer): every field it marks as
a secret, named by the mapping that holds it, with its ``*_file`` alternative where one exists.
A webhook ``url`` is not in them: Alertmanager 0.25 (Debian's) has no ``url_file``, so there
the URL is configuration; credentials inside any URL (``https://user:pass@host``) are refused
everywhere.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from rulegen.errors import Diagnostic
from rulegen.spec.loader import PathKey, Positions

# Keys of ``global`` that hold a credential → Alertmanager's file alternative.
GLOBAL: dict[str, str | None] = {
    name: f"{name}_file"
    for name in (
        "smtp_auth_password", "smtp_auth_secret", "slack_api_url", "slack_app_token",
        "opsgenie_api_key", "victorops_api_key", "wechat_api_secret", "telegram_bot_token",
        "rocketchat_token", "rocketchat_token_id", "mattermost_webhook_url",
    )
}  # fmt: skip

# Credential fields by the key of the mapping (or list of mappings) that holds them.
BY_OWNER: dict[str, dict[str, str | None]] = {
    "pagerduty_configs": {"routing_key": "routing_key_file", "service_key": "service_key_file"},
    "slack_configs": {"api_url": "api_url_file", "app_token": "app_token_file"},
    "opsgenie_configs": {"api_key": "api_key_file"},
    "victorops_configs": {"api_key": "api_key_file"},  # its routing_key is not a secret
    "wechat_configs": {"api_secret": "api_secret_file"},
    "email_configs": {"auth_password": "auth_password_file", "auth_secret": "auth_secret_file"},
    "pushover_configs": {"user_key": "user_key_file", "token": "token_file"},
    "telegram_configs": {"bot_token": "bot_token_file"},
    "discord_configs": {"webhook_url": "webhook_url_file"},
    "msteams_configs": {"webhook_url": "webhook_url_file"},
    "msteamsv2_configs": {"webhook_url": "webhook_url_file"},
    "mattermost_configs": {"webhook_url": "webhook_url_file"},
    "rocketchat_configs": {"token": "token_file", "token_id": "token_id_file"},
    "incidentio_configs": {"alert_source_token": "alert_source_token_file"},
    # prometheus/common's HTTP client (any ``http_config``, ``oauth2``, ``tls_config``)
    "basic_auth": {"password": "password_file"},
    "authorization": {"credentials": "credentials_file"},
    "oauth2": {"client_secret": "client_secret_file"},
    "tls_config": {"key": "key_file"},
    "smtp_tls_config": {"key": "key_file"},
    "sigv4": {"secret_key": None},
}
# Credential fields whatever holds them.
ANYWHERE: dict[str, str | None] = {
    "bearer_token": "bearer_token_file",
    "proxy_connect_header": None,
}
# rulegen's own receiver keys in the routing file → the Alertmanager configs they become.
INTEGRATIONS = {
    "webhook": "webhook_configs",
    "pagerduty": "pagerduty_configs",
    "slack": "slack_configs",
    "email": "email_configs",
}
# Every key that may hold a credential somewhere: messages never quote the value of one.
SECRET_FIELDS = frozenset(
    [*GLOBAL, *ANYWHERE, "secrets", *(f for table in BY_OWNER.values() for f in table)]
)
_URL_CREDENTIALS = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s/?#@\[\]]+@")


def has_url_credentials(text: str) -> bool:
    """Whether ``text`` holds a URL with a user name or password before the host."""
    return "://" in text and _URL_CREDENTIALS.search(text) is not None


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
    "secrets are read from files only: this URL carries credentials (user:password@); "
    "remove them from the URL and keep them out of the committed files"
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
