"""The user-facing models (pydantic): the service spec, its diagnoses, the routing file.

Why apart from ``rulegen.source``: the service spec's alert union is built from the signal
catalog, so this package sits above ``rulegen.catalog``; reading YAML and locating errors
does not need either.
"""
