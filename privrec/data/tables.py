"""Load interactions from a dataset name or a file (atomic, CSV, Parquet); write them back.

Formats are chosen by extension: ``.inter``/``.user``/``.item`` (RecBole atomic; sibling
``.user``/``.item`` files are picked up as features), ``.csv``, ``.parquet``.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pandas as pd

from privrec.data.atomic import read_atomic, write_atomic
from privrec.data.fetch import fetch, is_fetched, verify
from privrec.data.interactions import Interactions
from privrec.data.registry import DATASETS, get_spec
from privrec.errors import DataFormatError, DatasetError
from privrec.utils.io import atomic_path

ATOMIC_SUFFIXES = (".inter", ".user", ".item")
# accepted spellings of the four roles in CSV/Parquet headers (case-insensitive; the first present wins), MovieLens'
# and Amazon's included: 2014-18 reviews (reviewerID, asin, overall, unixReviewTime) and 2023's (user_id,
# parent_asin — the product whose variants share reviews, the item id McAuley et al. recommend — rating, timestamp)
ALIASES = {
    "user_id": ("user_id", "userid", "user", "uid", "userId", "reviewerID"),
    "item_id": ("item_id", "itemid", "item", "iid", "movieId", "movie_id", "itemId", "parent_asin", "asin"),
    "rating": ("rating", "ratings", "score", "overall"),
    "timestamp": ("timestamp", "time", "ts", "datetime", "date", "unixReviewTime", "unix_review_time"),
}


def read_table(path: str | os.PathLike) -> pd.DataFrame:
    """Any supported file as a DataFrame with its own column names (atomic types stripped)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if not path.is_file():
        raise DataFormatError(f"{path}: no such file")
    if suffix in ATOMIC_SUFFIXES:
        return read_atomic(path)[0]
    if path.stat().st_size == 0:
        raise DataFormatError(f"{path}: the file is empty")
    if suffix == ".csv":
        try:
            frame = pd.read_csv(path, dtype=str, keep_default_na=False)
            with open(path, encoding="utf-8", newline="") as fh:
                header = next(csv.reader(fh), [])
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
            raise DataFormatError(f"{path}: not a readable CSV file ({exc})") from exc
        twice = sorted({c for c in header if header.count(c) > 1})
        if twice:                                   # pandas would read the first and rename the rest silently
            raise DataFormatError(f"{path}: the header names {', '.join(map(repr, twice))} more than once; which "
                                  "column is meant is ambiguous: rename or drop the extra column(s)")
    elif suffix == ".parquet":
        try:
            frame = pd.read_parquet(path)
        except Exception as exc:  # pyarrow raises several unrelated types
            raise DataFormatError(f"{path}: not a readable Parquet file ({exc})") from exc
    else:
        raise DataFormatError(f"{path}: unsupported extension {suffix!r}; use .inter (RecBole atomic), .csv or .parquet")
    if len(frame) == 0:
        raise DataFormatError(f"{path}: no data rows")
    return frame


ROLES = {"user": "user_id", "item": "item_id", "rating": "rating", "time": "timestamp"}   # --ROLE-field


def canonical_columns(frame: pd.DataFrame, fields: dict[str, str] | None = None) -> pd.DataFrame:
    """Rename common spellings (userId, movieId, time, ...) to user_id/item_id/rating/timestamp; ``fields``
    (role -> column: ``{"user": "customer"}``, the CLI's ``--user-field`` etc.) names columns explicitly first."""
    if fields:
        unknown = [r for r in fields if r not in ROLES]
        if unknown:
            raise DataFormatError(f"unknown field role(s) {unknown}; use {', '.join(ROLES)}")
        missing = [c for c in fields.values() if c not in frame.columns]
        if missing:
            raise DataFormatError(f"no column {', '.join(map(repr, missing))} in the file; its columns are "
                                  f"{', '.join(map(str, frame.columns))}")
        taken = {ROLES[r] for r in fields} - set(fields.values())
        frame = frame.drop(columns=[c for c in taken if c in frame.columns])   # e.g. an unrelated 'timestamp'
        frame = frame.rename(columns={col: ROLES[r] for r, col in fields.items()})
    rename = {}
    lower = {c.lower(): c for c in frame.columns}
    for canon, names in ALIASES.items():
        if canon in frame.columns:
            continue
        for alias in names:
            if alias.lower() in lower:
                rename[lower[alias.lower()]] = canon
                break
    return frame.rename(columns=rename)


def load_file(path: str | os.PathLike, name: str | None = None, fields: dict[str, str] | None = None,
              **kwargs) -> Interactions:
    """Interactions from one file (``fields``: see :func:`canonical_columns`); for an ``.inter`` file, sibling
    ``.user``/``.item`` are features."""
    path = Path(path)
    frame = canonical_columns(read_table(path), fields)
    user_feats = item_feats = None
    if path.suffix.lower() == ".inter":
        stem = path.with_suffix("")
        if stem.with_suffix(".user").is_file():
            user_feats = read_atomic(stem.with_suffix(".user"))[0]
        if stem.with_suffix(".item").is_file():
            item_feats = read_atomic(stem.with_suffix(".item"))[0]
    return Interactions.from_frame(frame, user_features=user_feats, item_features=item_feats,
                                   name=name or path.stem, source=str(path), **kwargs)


def load_dataset(name: str, *, auto_fetch: bool = True) -> Interactions:
    """A registered dataset (fetched on first use) with its user and item features."""
    spec = get_spec(name)
    if not is_fetched(name):
        if not auto_fetch:
            raise DatasetError(f"{name} is not in the cache; run `privrec datasets fetch {name}`")
        fetch(name)
    folder = verify(name)       # on every use (ML-1M: ~0.1 s): an altered cache is refused, never read
    if spec.fmt != "atomic":    # S3Rec / SASRec text: the file's order is the time order
        from privrec.data.sequence_files import read_sequence_file

        frame = read_sequence_file(folder / spec.file("inter").filename, spec.fmt)
        items = None
        if any(f.role == "attributes" for f in spec.files):      # S3Rec's item attribute ids, as item features
            from privrec.data.sequence_files import read_item_attributes

            items = read_item_attributes(folder / spec.file("attributes").filename)
        return Interactions.from_frame(frame, item_features=items, name=name, source=str(folder))
    frames = {}
    for f in spec.files:
        frames[f.role] = read_atomic(folder / f.filename, type_overrides=spec.type_overrides.get(f.role))[0]
    inter = Interactions.from_frame(frames["inter"], user_features=frames.get("user"),
                                    item_features=frames.get("item"), name=name, source=str(folder))
    if "item" in frames:
        inter.extra["catalogue_items"] = int(frames["item"].iloc[:, 0].nunique())
    return inter


def load(source: str | os.PathLike, fields: dict[str, str] | None = None, **kwargs) -> Interactions:
    """A dataset name (``ml-1m``) or a path to a file (its columns named by ``fields`` where given)."""
    if isinstance(source, str) and source in DATASETS:
        if fields:
            raise DataFormatError(f"--user-field/--item-field/--rating-field/--time-field name the columns of your own "
                                  f"file; {source} is a registered dataset whose columns privrec knows")
        return load_dataset(source)
    path = Path(source)
    if not path.exists():
        raise DatasetError(f"{source!r} is neither a known dataset ({', '.join(DATASETS)}) nor an existing file")
    return load_file(path, fields=fields, **kwargs)


def write_interactions(inter_frame: pd.DataFrame, path: str | os.PathLike, types: dict | None = None) -> Path:
    """Write a table atomically in the format its extension names (.inter/.csv/.parquet)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in ATOMIC_SUFFIXES:
        return write_atomic(inter_frame, path, types)
    if suffix == ".csv":
        with atomic_path(path) as tmp:
            inter_frame.to_csv(tmp, index=False)
        return path
    if suffix == ".parquet":
        with atomic_path(path) as tmp:
            inter_frame.to_parquet(tmp, index=False)
        return path
    raise DataFormatError(f"{path}: unsupported output extension {suffix!r}; use .inter, .csv or .parquet")
