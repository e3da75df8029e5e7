"""Literal, slow reference implementations of the papers' algorithms (and of the authors' code), used
by tests to check the fast paths, and by benchmarks as the baseline. Not part of the package."""
