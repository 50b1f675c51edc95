"""rulegen: typed YAML specs of thresholds → Prometheus rules and promtool tests."""

__version__ = "0.1.0"
