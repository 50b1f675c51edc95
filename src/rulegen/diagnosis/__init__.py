"""Root-cause diagnoses: the on-call's decision tree as host-level recordings and alerts."""
