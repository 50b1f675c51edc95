"""Renderers: pure functions from the output model (``rulegen.generated``) and the dashboard
model to YAML- or JSON-ready data, one module per output format or rule target."""
