"""Per-user chronological sequences in CSR form, and fixed-length padded matrices."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from privrec.data.interactions import Interactions
from privrec.data.preprocess import chronological_order
from privrec.errors import ParameterError


@dataclass(frozen=True, eq=False)
class Sequences:
    """Row ``u`` (a user code; row 0 is the padding user and empty) is
    ``items[indptr[u]:indptr[u+1]]`` in chronological order. Items are int32 codes."""

    indptr: np.ndarray
    items: np.ndarray

    @property
    def n_rows(self) -> int:
        return len(self.indptr) - 1

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.indptr)

    def row(self, u: int) -> np.ndarray:
        return self.items[self.indptr[u]:self.indptr[u + 1]]

    def row_ids(self) -> np.ndarray:
        """The row index of every stored item (same length as ``items``)."""
        return np.repeat(np.arange(self.n_rows, dtype=np.int32), self.lengths)

    @classmethod
    def from_rows(cls, rows: list[np.ndarray] | list[list[int]]) -> Sequences:
        lengths = np.array([len(r) for r in rows], dtype=np.int64)
        indptr = np.concatenate([[0], np.cumsum(lengths)])
        items = np.concatenate([np.asarray(r, dtype=np.int32) for r in rows]) if len(rows) else np.zeros(0, np.int32)
        return cls(indptr, items.astype(np.int32))

    def take_slices(self, start: np.ndarray, stop: np.ndarray) -> Sequences:
        """Row ``u`` becomes ``row(u)[start[u]:stop[u]]`` (offsets relative to each row)."""
        start = np.asarray(start, dtype=np.int64)
        stop = np.asarray(stop, dtype=np.int64)
        lengths = np.maximum(stop - start, 0)
        indptr = np.concatenate([[0], np.cumsum(lengths)])
        src = np.repeat(self.indptr[:-1] + start - indptr[:-1], lengths) + np.arange(indptr[-1])
        return Sequences(indptr, self.items[src])

    def take_rows(self, rows: np.ndarray) -> Sequences:
        """A new CSR whose row ``i`` is ``row(rows[i])``."""
        rows = np.asarray(rows, dtype=np.int64)
        lengths = self.lengths[rows]
        indptr = np.concatenate([[0], np.cumsum(lengths)])
        src = np.repeat(self.indptr[rows] - indptr[:-1], lengths) + np.arange(indptr[-1])
        return Sequences(indptr, self.items[src])

    def concat(self, other: Sequences) -> Sequences:
        """Row-wise concatenation ``row(u) + other.row(u)``."""
        if other.n_rows != self.n_rows:
            raise ValueError("row counts differ")
        la, lb = self.lengths, other.lengths
        indptr = np.concatenate([[0], np.cumsum(la + lb)])
        out = np.empty(indptr[-1], dtype=np.int32)
        pos_a = np.repeat(indptr[:-1] - self.indptr[:-1], la) + np.arange(len(self.items))
        pos_b = np.repeat(indptr[:-1] + la - other.indptr[:-1], lb) + np.arange(len(other.items))
        out[pos_a] = self.items
        out[pos_b] = other.items
        return Sequences(indptr, out)

    def to_padded(self, max_len: int, rows: np.ndarray | None = None) -> np.ndarray:
        """Last ``max_len`` items of each (selected) row, front zero-padded: shape (rows, max_len)."""
        return pad_left(self.indptr, self.items, max_len, rows)


def pad_left(indptr: np.ndarray, items: np.ndarray, max_len: int, rows: np.ndarray | None = None) -> np.ndarray:
    """Vectorised truncation to the last ``max_len`` entries and front zero-padding (PriCDSR Def. 1)."""
    if max_len <= 0:
        raise ParameterError(f"max_len must be a positive integer, got {max_len}")
    rows = np.arange(len(indptr) - 1) if rows is None else np.asarray(rows, dtype=np.int64)
    ends = indptr[rows + 1]
    take = np.minimum(ends - indptr[rows], max_len)
    col = np.arange(max_len)
    offset = col[None, :] - (max_len - take)[:, None]           # <0 means padding
    src = ends[:, None] - take[:, None] + offset
    out = np.where(offset >= 0, items[np.clip(src, 0, max(len(items) - 1, 0))] if len(items) else 0, 0)
    return out.astype(np.int32)


def to_sequences(inter: Interactions) -> Sequences:
    """Chronological per-user sequences (ties broken by input order). Row 0 is empty."""
    order = chronological_order(inter)
    counts = np.bincount(inter.user, minlength=len(inter.users.tokens))
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return Sequences(indptr, inter.item[order].astype(np.int32))
