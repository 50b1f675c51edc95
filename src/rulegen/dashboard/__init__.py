"""Grafana dashboards: what an on-call engineer paged by a rulegen alert should see."""
