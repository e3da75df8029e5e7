"""RecBole atomic files (``.inter``, ``.user``, ``.item``): tab-separated, ``name:type`` header.

Field types (RecBole's): ``token`` (a string id), ``float`` (a number), ``token_seq``
(space-separated tokens), ``float_seq`` (space-separated numbers). Lines may end in CRLF.
Reading keeps tokens as strings (never coerced to numbers), numbers as float64, and
sequences as lists; writing is atomic and round-trips what was read.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from privrec.errors import DataFormatError, EmptyDataError
from privrec.utils.io import atomic_path

FIELD_TYPES = ("token", "float", "token_seq", "float_seq")


def parse_header(line: str, path: str | os.PathLike = "<header>") -> dict[str, str]:
    """Parse ``name:type<TAB>name:type...`` into an ordered {name: type} dict."""
    line = line.rstrip("\r\n")
    if not line.strip():
        raise DataFormatError(f"{path}: the header line is empty; an atomic file starts with 'name:type' fields "
                              "separated by tabs, e.g. 'user_id:token\\titem_id:token\\ttimestamp:float'")
    fields: dict[str, str] = {}
    for i, cell in enumerate(line.split("\t"), start=1):
        name, sep, ftype = cell.strip().rpartition(":")
        if not sep or not name:
            raise DataFormatError(f"{path}: header field {i} ({cell!r}) is not of the form name:type; "
                                  f"write it as e.g. '{cell.strip() or 'field'}:token'")
        if ftype not in FIELD_TYPES:
            raise DataFormatError(f"{path}: header field {name!r} has unknown type {ftype!r}; "
                                  f"use one of {', '.join(FIELD_TYPES)}")
        if name in fields:
            raise DataFormatError(f"{path}: header names field {name!r} twice; rename one of them")
        fields[name] = ftype
    return fields


def read_atomic(
    path: str | os.PathLike,
    type_overrides: Mapping[str, str] | None = None,
    usecols: list[str] | None = None,
) -> tuple[pd.DataFrame, dict[str, str]]:
    """Read an atomic file into a DataFrame with plain column names, plus {name: type}.

    ``type_overrides`` re-types fields whose header is wrong for their content (e.g. ML-1M's
    ``genre:token`` holds space-separated genres, i.e. a ``token_seq``).
    Raises :class:`DataFormatError` naming the file, field and line for malformed content.
    """
    path = Path(path)
    if not path.is_file():
        raise DataFormatError(f"{path}: no such file; check the path or run `privrec datasets fetch`")
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            header = fh.readline()
    except UnicodeDecodeError as exc:
        raise DataFormatError(_not_text(path, exc)) from exc
    if not header:
        raise EmptyDataError(f"{path}: the file is empty; an atomic file needs a 'name:type' header and data rows")
    fields = parse_header(header, path)
    for name, ftype in (type_overrides or {}).items():
        if name in fields:
            if ftype not in FIELD_TYPES:
                raise DataFormatError(f"type override for {name!r} must be one of {FIELD_TYPES}, got {ftype!r}")
            fields[name] = ftype
    names = list(fields)
    if usecols is not None:
        missing = [c for c in usecols if c not in fields]
        if missing:
            raise DataFormatError(f"{path}: required field(s) {missing} not in header {names}; "
                                  "rename the columns in the header or pass the right field names")
    try:
        frame = pd.read_csv(
            path, sep="\t", header=None, skiprows=1, names=names, dtype=str, quoting=csv.QUOTE_NONE,
            keep_default_na=False, na_filter=False, lineterminator="\n", usecols=usecols,
            encoding="utf-8", engine="c",
        )
    except pd.errors.ParserError as exc:
        raise DataFormatError(f"{path}: malformed row ({exc}); every row needs {len(names)} tab-separated "
                              "fields matching the header") from exc
    except UnicodeDecodeError as exc:
        raise DataFormatError(_not_text(path, exc)) from exc
    if len(frame) == 0:
        raise EmptyDataError(f"{path}: header found but no data rows")
    # CRLF files leave '\r' on the last column
    last = frame.columns[-1]
    if frame[last].str.endswith("\r").any():
        frame[last] = frame[last].str.removesuffix("\r")
    types = {c: fields[c] for c in frame.columns}
    for col, ftype in types.items():
        frame[col] = _convert(frame[col], ftype, path, col)
    return frame, types


def _not_text(path: Path, exc: UnicodeDecodeError) -> str:
    return (f"{path}: not UTF-8 text (undecodable byte at offset {exc.start}); an atomic file is tab-separated "
            "UTF-8 text with a 'name:type' header: check the path or re-save the file as UTF-8")


def _convert(col: pd.Series, ftype: str, path: Path, name: str) -> pd.Series:
    if ftype == "token":
        return col
    if ftype == "float":
        try:  # fast path: every cell a number (pyarrow cast)
            return col.astype("float64")
        except (ValueError, TypeError):
            pass
        empty = col.str.strip() == ""
        values = pd.to_numeric(col.where(~empty, None), errors="coerce")
        bad = values.isna() & ~empty
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise DataFormatError(f"{path}: field {name}:float has non-numeric value {col.iloc[row]!r} on line "
                                  f"{row + 2}; fix the value or declare the field as :token")
        return values.astype("float64")
    if ftype == "token_seq":
        return col.map(lambda s: s.split() if s else [])
    # float_seq
    def parse(s: str) -> np.ndarray:
        try:
            return np.array(s.split(), dtype=np.float64)
        except ValueError:
            raise DataFormatError(f"{path}: field {name}:float_seq has a non-numeric entry in {s!r}; "
                                  "fix the value or declare the field as :token_seq") from None
    return col.map(parse)


def write_atomic(frame: pd.DataFrame, path: str | os.PathLike, types: Mapping[str, str] | None = None) -> Path:
    """Write ``frame`` as an atomic file (atomically). Types default from dtypes.

    Numbers become ``float``, lists of numbers ``float_seq``, other lists ``token_seq``,
    everything else ``token``. Tokens containing tabs or newlines are rejected.
    """
    types = dict(types or {})
    out = {}
    for col in frame.columns:
        ftype = types.get(col) or _infer_type(frame[col])
        if ftype not in FIELD_TYPES:
            raise DataFormatError(f"cannot write field {col!r} with unknown type {ftype!r}; use one of {FIELD_TYPES}")
        types[col] = ftype
        out[col] = _render(frame[col], ftype, col)
    header = "\t".join(f"{c}:{types[c]}" for c in frame.columns)
    body = pd.DataFrame(out)
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8", newline="") as fh:
            fh.write(header + "\n")
            body.to_csv(fh, sep="\t", header=False, index=False, quoting=csv.QUOTE_NONE, lineterminator="\n",
                        escapechar=None)
    return Path(path)


def _infer_type(col: pd.Series) -> str:
    if pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col):
        return "float"
    first = next((v for v in col if v is not None), None)
    if isinstance(first, (list, tuple, np.ndarray)):
        if len(first) and all(isinstance(x, (int, float, np.number)) for x in first):
            return "float_seq"
        return "token_seq"
    return "token"


def _render(col: pd.Series, ftype: str, name: str) -> pd.Series:
    if ftype == "float":
        values = pd.to_numeric(col, errors="raise")
        # integers stay integers ("5" not "5.0"): RecBole and humans both read them back
        as_int = values.dropna()
        if len(as_int) and np.all(np.mod(as_int.to_numpy(dtype=np.float64), 1) == 0) and \
                np.abs(as_int.to_numpy(dtype=np.float64)).max() < 2**53:
            return values.map(lambda v: "" if pd.isna(v) else str(int(v)))
        return values.map(lambda v: "" if pd.isna(v) else repr(float(v)))
    if ftype in ("token_seq", "float_seq"):
        rendered = col.map(lambda seq: " ".join(str(x) for x in seq))
    else:
        rendered = col.astype(str)
    bad = rendered.str.contains(r"[\t\r\n]", regex=True)
    if bad.any():
        raise DataFormatError(f"field {name!r} value {rendered[bad].iloc[0]!r} contains a tab or newline, which "
                              "atomic files cannot hold; clean the value before writing")
    if ftype == "token_seq" and col.map(lambda seq: any(" " in str(x) for x in seq)).any():
        raise DataFormatError(f"field {name!r}: a token_seq element contains a space and would not round-trip")
    return rendered
