"""Checks of written output by external tools and schemas: promtool (rules and tests), amtool
(the Alertmanager config and routing tests), the PrometheusRule CRD schema."""
