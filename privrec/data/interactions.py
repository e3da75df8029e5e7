"""The in-memory interaction table shared by every system in privrec.

Ids are contiguous int32 codes ``1..n`` with ``0`` reserved for padding; :class:`IdMap`
holds the raw tokens to map back. Columns are NumPy arrays (memory ~ 16-24 bytes per
interaction), features are small per-user / per-item DataFrames indexed by code.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from privrec.errors import DataFormatError, EmptyDataError, UnknownIdError

PAD = 0
PAD_TOKEN = "[PAD]"


@dataclass(frozen=True, eq=False)
class IdMap:
    """Raw id tokens; ``tokens[c]`` is the raw id of code ``c`` (``tokens[0]`` is padding)."""

    tokens: np.ndarray
    kind: str = "id"

    @classmethod
    def factorize(cls, raw: Sequence | np.ndarray | pd.Series, kind: str = "id") -> tuple[IdMap, np.ndarray]:
        """Codes for ``raw`` values (sorted order of the distinct tokens, starting at 1)."""
        codes, uniques = pd.factorize(pd.Series(raw, dtype=str), sort=True)
        tokens = np.concatenate([np.array([PAD_TOKEN], dtype=object), np.asarray(uniques, dtype=object)])
        return cls(tokens, kind), (codes + 1).astype(np.int32)

    def __len__(self) -> int:
        """Number of real ids (padding excluded)."""
        return len(self.tokens) - 1

    @functools.cached_property
    def _index(self) -> pd.Index:
        return pd.Index(self.tokens[1:].astype(str))

    def encode(self, raw: Iterable, *, strict: bool = True) -> np.ndarray:
        """Codes of raw ids; unknown ids raise :class:`UnknownIdError` (or give 0 if not strict)."""
        values = pd.Series(list(raw) if not isinstance(raw, (np.ndarray, pd.Series)) else raw, dtype=str)
        pos = self._index.get_indexer(values)
        if strict and (pos < 0).any():
            unknown = values[pos < 0].unique()[:5].tolist()
            raise UnknownIdError(f"unknown {self.kind} id(s) {unknown}; valid {self.kind} ids look like "
                                 f"{self.tokens[1:4].tolist()} (see `privrec datasets info`)")
        return (pos + 1).astype(np.int32)

    def decode(self, codes: np.ndarray | Sequence[int]) -> np.ndarray:
        return self.tokens[np.asarray(codes, dtype=np.int64)]

    def subset(self, keep_codes: np.ndarray) -> tuple[IdMap, np.ndarray]:
        """A map for the (sorted) ``keep_codes`` and the old->new code table (0 for dropped)."""
        keep = np.unique(np.asarray(keep_codes, dtype=np.int64))
        keep = keep[keep > 0]
        table = np.zeros(len(self.tokens), dtype=np.int32)
        table[keep] = np.arange(1, len(keep) + 1, dtype=np.int32)
        return IdMap(np.concatenate([self.tokens[:1], self.tokens[keep]]), self.kind), table


class UserItemCounts:
    """``n_users`` / ``n_items`` of anything holding ``users`` and ``items`` :class:`IdMap` s
    (one dataset, one platform of several)."""

    @property
    def n_users(self) -> int:
        return len(self.users)

    @property
    def n_items(self) -> int:
        return len(self.items)


@dataclass(frozen=True, eq=False)
class Interactions(UserItemCounts):
    """User-item interactions as parallel columns, with id maps and optional features.

    ``user``/``item``: int32 codes. ``timestamp``: float64 (seconds or any monotone clock).
    ``rating``: float32 or None for implicit feedback. Row order is the input order, which
    breaks timestamp ties stably everywhere downstream.
    """

    user: np.ndarray
    item: np.ndarray
    timestamp: np.ndarray | None
    rating: np.ndarray | None
    users: IdMap
    items: IdMap
    user_features: pd.DataFrame | None = None
    item_features: pd.DataFrame | None = None
    name: str = "interactions"
    extra: dict = field(default_factory=dict)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_frame(
        cls,
        frame: pd.DataFrame,
        *,
        user_col: str = "user_id",
        item_col: str = "item_id",
        rating_col: str | None = "rating",
        time_col: str | None = "timestamp",
        user_features: pd.DataFrame | None = None,
        item_features: pd.DataFrame | None = None,
        name: str = "interactions",
        source: str = "<table>",
    ) -> Interactions:
        """Build from a raw table. Features are indexed by raw id (their first column if not)."""
        if len(frame) == 0:
            raise EmptyDataError(f"{source}: no interactions (0 rows)")
        for col, role in ((user_col, "user"), (item_col, "item")):
            if col not in frame.columns:
                raise DataFormatError(f"{source}: required {role} column {col!r} is missing (columns: "
                                      f"{list(frame.columns)}); rename the column holding the {role} ids to {col!r} "
                                      f"(a .inter file: '{col}:token')")
        rating_col = rating_col if rating_col in frame.columns else None
        time_col = time_col if time_col in frame.columns else None
        rating = _numeric(frame, rating_col, source, np.float32) if rating_col else None
        timestamp = _numeric(frame, time_col, source, np.float64) if time_col else None
        for col in (user_col, item_col):
            blank = frame[col].isna() | (frame[col].astype(str).str.strip() == "")
            if blank.any():
                row = int(np.flatnonzero(blank.to_numpy())[0])
                raise DataFormatError(f"{source}: empty {col} at data row {row + 1}; drop or fill that row")
        users, ucodes = IdMap.factorize(frame[user_col], "user")
        items, icodes = IdMap.factorize(frame[item_col], "item")
        return cls(
            user=ucodes, item=icodes, timestamp=timestamp, rating=rating, users=users, items=items,
            user_features=_align_features(user_features, users), item_features=_align_features(item_features, items),
            name=name,
        )

    # ------------------------------------------------------------------ basic facts
    def __len__(self) -> int:
        return int(self.user.shape[0])

    def summary(self) -> dict:
        out = {"name": self.name, "users": self.n_users, "items": self.n_items, "interactions": len(self)}
        out["density"] = len(self) / max(1, self.n_users * self.n_items)
        if self.timestamp is not None and len(self):
            out["time_min"] = float(self.timestamp.min())
            out["time_max"] = float(self.timestamp.max())
        out["user_fields"] = [] if self.user_features is None else list(self.user_features.columns)
        out["item_fields"] = [] if self.item_features is None else list(self.item_features.columns)
        return out

    def to_frame(self, raw_ids: bool = True) -> pd.DataFrame:
        data = {
            "user_id": self.users.decode(self.user) if raw_ids else self.user,
            "item_id": self.items.decode(self.item) if raw_ids else self.item,
        }
        if self.rating is not None:
            data["rating"] = self.rating
        if self.timestamp is not None:
            data["timestamp"] = self.timestamp
        return pd.DataFrame(data)

    # ------------------------------------------------------------------ row selection
    def take(self, rows: np.ndarray) -> Interactions:
        """Rows by boolean mask or index array (id maps unchanged; call :meth:`compact` after)."""
        return replace(
            self,
            user=self.user[rows], item=self.item[rows],
            timestamp=None if self.timestamp is None else self.timestamp[rows],
            rating=None if self.rating is None else self.rating[rows],
        )

    def compact(self) -> Interactions:
        """Re-code users and items to ``1..n`` over the ids that still occur (features follow)."""
        if len(self) == 0:
            raise EmptyDataError(f"{self.name}: no interactions left to re-index")
        users, utable = self.users.subset(self.user)
        items, itable = self.items.subset(self.item)
        return replace(
            self, user=utable[self.user], item=itable[self.item], users=users, items=items,
            user_features=_subset_features(self.user_features, utable),
            item_features=_subset_features(self.item_features, itable),
        )


def _numeric(frame: pd.DataFrame, col: str, source: str, dtype) -> np.ndarray:
    values = pd.to_numeric(frame[col], errors="coerce")
    bad = values.isna().to_numpy()
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise DataFormatError(f"{source}: {col} is missing or non-numeric ({frame[col].iloc[row]!r}) at data row "
                              f"{row + 1}; fix or drop such rows before loading")
    arr = values.to_numpy(dtype=np.float64)
    if not np.isfinite(arr).all():
        row = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise DataFormatError(f"{source}: {col} is infinite at data row {row + 1}; fix or drop such rows")
    return arr.astype(dtype)


def _align_features(features: pd.DataFrame | None, ids: IdMap) -> pd.DataFrame | None:
    """Index features by code ``1..n`` (rows for ids absent from the features are NaN)."""
    if features is None:
        return None
    feats = features
    if feats.index.name is None or isinstance(feats.index, pd.RangeIndex):
        feats = feats.set_index(feats.columns[0])
    feats = feats[~feats.index.astype(str).duplicated(keep="first")]
    feats.index = feats.index.astype(str)
    aligned = feats.reindex(pd.Index(ids.tokens[1:].astype(str)))
    aligned.index = pd.RangeIndex(1, len(ids) + 1, name="code")
    return aligned


def _subset_features(features: pd.DataFrame | None, table: np.ndarray) -> pd.DataFrame | None:
    if features is None:
        return None
    old = np.flatnonzero(table)
    sub = features.loc[old].copy()
    sub.index = pd.RangeIndex(1, len(old) + 1, name="code")
    return sub
