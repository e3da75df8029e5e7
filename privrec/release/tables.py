"""Published data <-> files: sequence rows, rating-matrix projections and user features as tables.

One function per direction and kind, used by ``privrec publish`` and every ``reproduce``:

* sequences: a front-padded (users, L) id matrix <-> a table ``user_id, item_id, timestamp``
  where timestamp is the position 1..L in the published row (so order survives any reader),
  plus a ``.user`` table listing every published user (a row the mechanism emptied is still a
  published user); as RecBole atomic files ``NAME.inter`` + ``NAME.user`` a release folder is a
  RecBole dataset;
* matrices and features: ``user_id`` + one float column per output dimension.

Reading back always checks ids against the consumer's: unknown users or items, and missing
users, are refused with the reason (the consumer cannot use rows of users it does not know).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from privrec.data.interactions import IdMap
from privrec.errors import DataFormatError, ParameterError

FORMATS = ("inter", "csv", "parquet")
ROW_TYPES = {"user_id": "token", "item_id": "token", "timestamp": "float"}


def write_table(frame: pd.DataFrame, path: Path, types: dict | None = None) -> Path:
    """``frame`` in the format its suffix names (.inter: RecBole atomic, .csv, .parquet)."""
    from privrec.data.atomic import write_atomic

    suffix = path.suffix.lower()
    if suffix in (".inter", ".user", ".item"):
        return write_atomic(frame, path, types)
    if suffix == ".csv":
        frame.to_csv(path, index=False)
    elif suffix == ".parquet":
        frame.to_parquet(path, index=False)
    else:
        raise ParameterError(f"unsupported table format {suffix!r}; use one of {FORMATS}")
    return path


def read_table(path: Path) -> pd.DataFrame:
    from privrec.data.atomic import read_atomic

    suffix = path.suffix.lower()
    if suffix in (".inter", ".user", ".item"):
        return read_atomic(path)[0]
    if suffix == ".csv":
        # ids are strings as written: "NA", "null" or "nan" are ids, not missing values
        return pd.read_csv(path, dtype={"user_id": str, "item_id": str}, keep_default_na=False, na_values=[""])
    if suffix == ".parquet":
        return pd.read_parquet(path)
    raise DataFormatError(f"{path}: unsupported table format {suffix!r}")


# ---------------------------------------------------------------------------------- sequences
def rows_table(rows: np.ndarray, users: np.ndarray, items: np.ndarray) -> pd.DataFrame:
    """Long table of a padded id matrix: one line per non-padding cell. ``users[r]`` is row r's
    raw user id, ``items[c]`` the raw id of item code c (index 0 = padding)."""
    r, c = np.nonzero(rows)
    return pd.DataFrame({"user_id": np.asarray(users, dtype=object)[r],
                         "item_id": np.asarray(items, dtype=object)[rows[r, c]],
                         "timestamp": (c + 1).astype(np.float64)})


def write_sequences(folder: Path, name: str, rows: np.ndarray, users: np.ndarray, items: np.ndarray,
                    fmt: str = "inter") -> dict:
    """``NAME.<fmt>`` (the rows) and ``NAME.user`` (every published user) into ``folder``."""
    if fmt not in FORMATS:
        raise ParameterError(f"--format must be one of {FORMATS}, got {fmt!r}")
    table = rows_table(rows, users, items)
    write_table(table, folder / f"{name}.{fmt}", ROW_TYPES)
    write_table(pd.DataFrame({"user_id": np.asarray(users, dtype=object)}), folder / f"{name}.user",
                {"user_id": "token"})
    return {"rows": int(len(rows)), "max_len": int(rows.shape[1]), "interactions": int(len(table)),
            "format": "user_id, item_id, timestamp = position 1..L in the published row"}


def read_sequences(path: Path, users: IdMap, items: IdMap, max_len: int, require_all: bool = True) -> np.ndarray:
    """Published rows aligned to the consumer's user codes: shape (len(users) + 1, max_len).

    Every published user must be one of ``users`` and (``require_all``) every one of ``users`` must
    be published (the sibling ``NAME.user`` lists users whose row is empty; without
    ``require_all`` an unpublished user's row is all padding); items must be ``items``."""
    frame = read_table(path)
    missing = {"user_id", "item_id", "timestamp"} - set(frame.columns)
    if missing:
        raise DataFormatError(f"{path}: missing fields {sorted(missing)}; published rows need user_id, item_id and "
                              "timestamp (the position in the published row)")
    codes = items.encode(frame["item_id"].astype(str).to_numpy(), strict=False)
    if (codes == 0).any():
        bad = frame["item_id"][codes == 0].astype(str).unique()[:5].tolist()
        raise DataFormatError(f"{path}: items {bad} are not items of the consuming domain")
    stamps = frame["timestamp"].to_numpy(dtype=np.float64)
    if not np.isfinite(stamps).all() or (stamps % 1 != 0).any():
        raise DataFormatError(f"{path}: timestamps must be whole positions 1..{max_len} in the published row")
    pos = stamps.astype(np.int64) - 1
    if (pos < 0).any() or (pos >= max_len).any():
        raise DataFormatError(f"{path}: timestamps must be positions 1..{max_len}")
    row_users = frame["user_id"].astype(str).to_numpy()
    listed = path.with_suffix(".user")
    published = np.unique(row_users)
    if listed.is_file():
        published = np.union1d(published, read_table(listed)["user_id"].astype(str).to_numpy())
    ucodes = users.encode(published, strict=False)
    if (ucodes == 0).any():
        bad = published[ucodes == 0][:5].tolist()
        raise DataFormatError(f"{path}: users {bad} are unknown to the consumer; publish the rows of the same users")
    absent = np.setdiff1d(np.arange(1, len(users) + 1), ucodes)
    if len(absent) and require_all:
        raise DataFormatError(f"{path}: {len(absent)} of the consumer's users are not published (e.g. "
                              f"{users.decode(absent[:3]).tolist()}); publish the rows of every shared user")
    row_codes = users.encode(row_users)
    if len(np.unique(row_codes.astype(np.int64) * max_len + pos)) < len(pos):
        raise DataFormatError(f"{path}: a user has two items at the same position (timestamp); each position of a "
                              "published row holds one item")
    out = np.zeros((len(users) + 1, max_len), dtype=np.int64)
    out[row_codes, pos] = codes
    return out


# ---------------------------------------------------------------------------- matrices / features
def write_matrix(folder: Path, name: str, values: np.ndarray, users: np.ndarray, prefix: str, fmt: str = "parquet"
                 ) -> dict:
    """``NAME.<fmt>``: ``user_id`` then one float column per dimension (``p0, p1, ...``)."""
    if fmt not in ("csv", "parquet"):
        raise ParameterError(f"--format for a matrix must be csv or parquet, got {fmt!r}")
    frame = pd.DataFrame(np.asarray(values), columns=[f"{prefix}{k}" for k in range(values.shape[1])])
    frame.insert(0, "user_id", np.asarray(users, dtype=object))
    write_table(frame, folder / f"{name}.{fmt}")
    return {"rows": int(values.shape[0]), "columns": int(values.shape[1]), "dtype": str(values.dtype)}


def read_matrix(path: Path, users: IdMap, prefix: str) -> np.ndarray:
    """A published matrix aligned to the consumer's users: row c = user code c (row 0 zeros)."""
    frame = read_table(path)
    if "user_id" not in frame.columns:
        raise DataFormatError(f"{path}: no user_id column")
    cols = [c for c in frame.columns if c != "user_id"]
    if not cols or any(not c.startswith(prefix) for c in cols):
        raise DataFormatError(f"{path}: expected columns user_id, {prefix}0, {prefix}1, ...")
    ids = frame["user_id"].astype(str).to_numpy()
    codes = users.encode(ids, strict=False)
    if (codes == 0).any():
        raise DataFormatError(f"{path}: users {ids[codes == 0][:5].tolist()} are unknown to the consumer; publish "
                              "the matrix of the same users")
    if len(np.unique(codes)) != len(codes):
        raise DataFormatError(f"{path}: a user appears twice")
    absent = np.setdiff1d(np.arange(1, len(users) + 1), codes)
    if len(absent):
        raise DataFormatError(f"{path}: {len(absent)} of the consumer's users are not published (e.g. "
                              f"{users.decode(absent[:3]).tolist()})")
    values = frame[cols].to_numpy(dtype=np.float64)
    if not np.isfinite(values).all():
        raise DataFormatError(f"{path}: the matrix holds NaN or infinity")
    out = np.zeros((len(users) + 1, len(cols)), dtype=values.dtype)
    out[codes] = values
    return out
