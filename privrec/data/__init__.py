"""Data layer: files -> :class:`Interactions` -> preprocessing -> sequences -> splits.

Its names load on first use (PEP 562), so importing a light module of the layer (``privrec.data.testbed``,
which the CLI reads to build its options) does not import pandas."""

from __future__ import annotations

__all__ = ["IdMap", "Interactions", "Sequences"]


def __getattr__(name: str):
    if name in ("IdMap", "Interactions"):
        from privrec.data import interactions

        return getattr(interactions, name)
    if name == "Sequences":
        from privrec.data.sequences import Sequences

        return Sequences
    raise AttributeError(f"module 'privrec.data' has no attribute {name!r}")
