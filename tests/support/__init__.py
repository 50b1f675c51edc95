"""Helpers the tests (and the benchmarks) share that are not fixtures: real-server harnesses."""
