"""Readers for the two plain-text formats the sequential-recommendation literature ships its data in.

* **S3Rec** (RUCAIBox/CIKM2020-S3Rec ``data/*.txt``): one line per user, ``user item item ...``, items
  oldest first. Used for Amazon Beauty, Sports and Outdoors, Toys and Games, and Yelp.
* **SASRec** (kang205/SASRec ``data/*.txt``): one line per interaction, ``user item``, in time order
  within each user. Used for Amazon Video Games (and Steam, ML-1M in that repository).

Neither has timestamps, ratings or titles: the order in the file *is* the time order, so each
interaction gets ``timestamp`` = its position in its user's sequence (0, 1, 2, ...), which every
split and window in privrec orders by. Ids are kept as the file's tokens.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from privrec.errors import DataFormatError

FORMATS = ("s3rec", "sasrec")


def read_sequence_file(path: str | Path, fmt: str) -> pd.DataFrame:
    """``user_id``, ``item_id`` (strings) and ``timestamp`` (the position within the user, float)."""
    path = Path(path)
    if fmt not in FORMATS:
        raise DataFormatError(f"unknown sequence-file format {fmt!r}; use one of {FORMATS}")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DataFormatError(f"{path}: not a text file ({exc})") from None
    users: list[str] = []
    items: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        tokens = line.split()
        if not tokens:
            continue
        if fmt == "s3rec":
            if len(tokens) < 2:
                raise DataFormatError(f"{path}:{number}: a user with no items ({line!r}); S3Rec lines are "
                                      "'user item item ...'")
            users.extend([tokens[0]] * (len(tokens) - 1))
            items.extend(tokens[1:])
        else:
            if len(tokens) != 2:
                raise DataFormatError(f"{path}:{number}: expected 'user item', got {line!r}")
            users.append(tokens[0])
            items.append(tokens[1])
    if not users:
        raise DataFormatError(f"{path}: no interactions")
    frame = pd.DataFrame({"user_id": np.asarray(users, dtype=object), "item_id": np.asarray(items, dtype=object)})
    frame["timestamp"] = frame.groupby("user_id", sort=False).cumcount().astype(np.float64)
    return frame


def read_item_attributes(path: str | Path) -> pd.DataFrame:
    """S3Rec's ``*_item2attributes.json`` (``{"item": [attribute ids]}``) as item features: ``item_id`` and
    ``attributes`` (the ids space-separated, RecBole's ``token_seq`` convention)."""
    import json

    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataFormatError(f"{path}: not an item-to-attributes JSON file ({exc})") from None
    if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
        raise DataFormatError(f"{path}: expected {{\"item\": [attribute ids]}}")
    return pd.DataFrame({"item_id": [str(k) for k in data],
                         "attributes": [" ".join(str(a) for a in v) for v in data.values()]})
