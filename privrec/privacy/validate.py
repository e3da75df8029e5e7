"""Parameter validation shared by every mechanism. Messages name the parameter and the fix."""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Callable
from typing import TypeVar

import numpy as np

from privrec.errors import ParameterError

T = TypeVar("T")


def check_positive_number(value, name: str, hint: str | None = None) -> float:
    """A positive finite float, or a ParameterError naming ``name`` (and ``hint``, the fix)."""
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(out) or out <= 0:
        raise ParameterError(f"{name} must be a positive finite number, got {value!r}" + (f"; {hint}" if hint else ""))
    return out


def check_epsilon(epsilon: float, name: str = "epsilon") -> float:
    return check_positive_number(epsilon, name, f"e.g. --{name.replace('_', '-')} 1.0")


def as_int_array(values, name: str, what: str) -> np.ndarray:
    """A 1-D int64 copy of ``values``; integral floats are accepted, anything else is refused."""
    arr = np.asarray(values)
    if not np.issubdtype(arr.dtype, np.integer):
        if np.issubdtype(arr.dtype, np.floating) and np.isfinite(arr).all() and (arr == np.round(arr)).all():
            arr = arr.astype(np.int64)
        else:
            raise ParameterError(f"{name} must hold integer {what}, got dtype {arr.dtype}")
    return np.array(arr, dtype=np.int64, copy=True)


def check_delta(delta: float, name: str = "delta") -> float:
    try:
        value = float(delta)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a number, got {delta!r}") from None
    if not (0.0 < value < 1.0):
        raise ParameterError(f"{name} must lie strictly between 0 and 1, got {delta!r}; "
                             "a common choice is 1/(number of records)")
    return value


def check_positive_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ParameterError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def check_probability(value: float, name: str, *, open_low: bool = False, open_high: bool = False) -> float:
    v = float(value)
    low_ok = v > 0 if open_low else v >= 0
    high_ok = v < 1 if open_high else v <= 1
    if not (math.isfinite(v) and low_ok and high_ok):
        raise ParameterError(f"{name} must be a probability in {'(' if open_low else '['}0, 1{')' if open_high else ']'}, "
                             f"got {value!r}")
    return v


def check_finite_array(x: np.ndarray, name: str) -> np.ndarray:
    arr = np.asarray(x)
    if arr.size == 0:
        raise ParameterError(f"{name} is empty; nothing to perturb")
    if np.issubdtype(arr.dtype, np.floating) and not np.isfinite(arr).all():
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise ParameterError(f"{name} contains NaN or infinity at index {tuple(int(i) for i in bad)}; "
                             "clean or impute the input first")
    return arr


def check_id_matrix(ids: np.ndarray, n_items: int, name: str = "sequences", unique_rows: bool = True) -> np.ndarray:
    """An (n, L) integer matrix of item codes in [0, n_items] (0 = padding), non-zero ids unique per row."""
    arr = np.asarray(ids)
    if arr.ndim != 2:
        raise ParameterError(f"{name} must be a 2-D (users x max_len) id matrix, got shape {arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ParameterError(f"{name} is empty (shape {arr.shape}); nothing to perturb")
    if not np.issubdtype(arr.dtype, np.integer):
        if np.issubdtype(arr.dtype, np.floating) and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
            arr = arr.astype(np.int64)
        else:
            raise ParameterError(f"{name} must hold integer item ids, got dtype {arr.dtype}")
    check_positive_int(n_items, "n_items")
    lo, hi = int(arr.min()), int(arr.max())
    if lo < 0 or hi > n_items:
        bad = lo if lo < 0 else hi
        raise ParameterError(f"{name} holds id {bad} outside [0, {n_items}] (0 is padding, items are 1..{n_items}); "
                             "re-index the items or pass the right n_items")
    if unique_rows:
        s = np.sort(arr, axis=1)
        dup = (s[:, 1:] == s[:, :-1]) & (s[:, 1:] > 0)
        if dup.any():
            row = int(np.flatnonzero(dup.any(axis=1))[0])
            item = int(s[row, 1:][dup[row]][0])
            raise ParameterError(f"{name} row {row} repeats item id {item}; each non-zero id may occur once per row "
                                 "(keep each user's first interaction with an item)")
    return arr


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def numerically_safe(what: str, fn: Callable[[], T]) -> T:
    """Run ``fn`` with floating-point warnings turned into a refusal naming ``what``: NumPy's
    overflow/invalid/divide, Python RuntimeWarnings, and dp-accounting's warnings (logged through
    absl, e.g. "Negative Renyi divergence ... Returning an epsilon of zero")."""
    collect = _Collect()
    absl = logging.getLogger("absl")
    absl.addHandler(collect)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            with np.errstate(over="raise", invalid="raise", divide="raise"):
                out = fn()
    except (FloatingPointError, RuntimeWarning, OverflowError) as exc:
        raise ParameterError(f"{what}: the computation for these settings is numerically unreliable ({exc}); "
                             "choose a less extreme epsilon or delta") from None
    finally:
        absl.removeHandler(collect)
    if collect.messages:
        raise ParameterError(f"{what}: the privacy accounting for these settings is numerically unreliable "
                             f"({collect.messages[0][:160]}); choose a less extreme epsilon or delta")
    return out
