"""Helpers of ``scripts/benchmark.py`` (the dynamical-core benchmark); see that script."""
