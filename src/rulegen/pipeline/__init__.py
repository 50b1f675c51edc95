"""The build pipeline: a spec file → its resolved model (``service``) → rules, tests, outputs.

Why a layer: these modules join the features (alerts, slo, diagnosis, routing) and the
renderers; nothing below them imports them.
"""
