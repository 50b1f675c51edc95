"""Wrappers of the external validators (promtool)."""
