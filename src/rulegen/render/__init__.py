"""Renderers: pure functions from the output model (``rulegen.generated``) and the dashboard
model to YAML- or JSON-ready data, one module per output format or rule target."""

# Rule targets besides the plain rule files (always written: the tests run on them). Here,
# with no import, because ``rulegen build --target`` lists them without loading a renderer.
TARGETS = ("prometheus", "operator", "thanos", "mimir", "victoriametrics")
