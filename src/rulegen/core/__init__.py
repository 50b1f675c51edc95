"""The foundation's newer helpers: what every layer may use (errors, units, versions …)."""
