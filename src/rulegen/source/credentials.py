"""Which keys and values of an input hold a credential, so that no message ever quotes one.

Why here, below every feature: the spec and routing loaders' messages quote the bad input
(``must be a string (got …)``), and a credential must never be printed, whichever file it is
in. The tables follow Alertmanager's configuration (0.25 and newer): every field it marks as a
secret, named by the mapping that holds it, with its ``*_file`` alternative where one exists.
``rulegen.routing.secrets`` uses the same tables to refuse inline credentials.
"""

from __future__ import annotations

import re

from rulegen.core.urls import secret_parameter

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
# Every key that may hold a credential somewhere: messages never quote the value of one.
SECRET_FIELDS = frozenset(
    [*GLOBAL, *ANYWHERE, "secrets", *(f for table in BY_OWNER.values() for f in table)]
)
_URL_CREDENTIALS = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s/?#@\[\]]+@")
# a URL's query or fragment parameter: its name (up to ``=``) after ``?``, ``&`` or ``#``
_URL_PARAMETER = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s?#]*[?#]([^\s#]*)")


def has_url_credentials(text: str) -> bool:
    """Whether ``text`` holds a URL with a user name or password before the host, or a
    query (or fragment) parameter whose name says it holds a secret (``?token=…``)."""
    if "://" not in text:
        return False
    if _URL_CREDENTIALS.search(text) is not None:
        return True
    for found in _URL_PARAMETER.finditer(text):
        for pair in re.split(r"[&#]", found.group(1)):
            name, equals, _ = pair.partition("=")
            if equals and secret_parameter(name):
                return True
    return False
