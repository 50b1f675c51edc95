"""Which parameters of a URL's query string hold a secret, for every place that shows or
copies a URL.

Why in the foundation: the Prometheus client redacts them in every message it prints
(``rulegen.promapi``), and the loaders refuse them in the files whose URLs end up in the
committed output (``rulegen.source.credentials``); both must agree on one list.
"""

from __future__ import annotations

from urllib.parse import unquote_plus

SECRET_PARAMETERS = ("token", "access_token", "api_key", "apikey", "password", "passwd", "pwd")
"""Query parameters that hold a credential; so does any whose name has a ``SECRET_WORDS``."""
SECRET_WORDS = ("secret", "token", "key", "pass", "auth", "credential", "signature")


def secret_parameter(name: str) -> bool:
    """Whether a URL query parameter's name (percent-decoded, any case) says it holds a
    secret: ``token``, ``api_key``, ``client_secret``, ``X-Auth``…"""
    plain = unquote_plus(name).lower()
    return plain in SECRET_PARAMETERS or any(word in plain for word in SECRET_WORDS)
