"""Data layer: files -> :class:`Interactions` -> preprocessing -> sequences -> splits."""

from privrec.data.interactions import IdMap, Interactions
from privrec.data.sequences import Sequences

__all__ = ["IdMap", "Interactions", "Sequences"]
