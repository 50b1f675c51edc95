"""Renderers: pure functions from the model to YAML-ready Python data, one module per output."""
