"""Splice's version, in one place: the package root re-exports it, and the graph cache keys on it."""

__version__ = "0.1.0"
