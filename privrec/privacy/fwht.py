"""Fast Walsh-Hadamard transform (FWHT) along the last axis, with zero padding to a power of two.

The normalised Hadamard matrix of PriCDR Def. 3.7 / Alg. 1 line 11 is

    H_ij = N^(-1/2) (-1)^<i, j>,   <i, j> = popcount(i AND j) mod 2   (0-based indices),

i.e. Sylvester's ordering, the same matrix as ``scipy.linalg.hadamard(N) / sqrt(N)``. H is
symmetric and orthogonal (H H = I). ``fwht`` computes X @ H (equivalently (H X^T)^T) for
every row of a 2-D array in O(rows * N log N) with an in-place butterfly compiled by
numba, never forming H (a dense H costs O(N^2) memory and O(rows * N^2) time).

The item axis of a rating matrix rarely has a power-of-two length: ``pad_to_pow2`` appends
zero columns up to N = next_pow2(n). Padding with zeros is exactly what multiplying by the
first n rows of the N x N matrix means, so X_pad @ H = X @ H[:n, :].
"""

from __future__ import annotations

import math

import numba
import numpy as np

from privrec.errors import ParameterError


def next_pow2(n: int) -> int:
    """Smallest power of two >= n (n >= 1)."""
    if n < 1:
        raise ParameterError(f"length must be >= 1 for a Hadamard transform, got {n}")
    return 1 << (int(n) - 1).bit_length()


@numba.njit(cache=True, nogil=True)
def _fwht_rows(x: np.ndarray) -> None:
    """Unnormalised in-place butterfly on each row of a C-contiguous (rows, N) array."""
    rows, n = x.shape
    for r in range(rows):
        row = x[r]
        h = 1
        while h < n:
            for start in range(0, n, 2 * h):
                for j in range(start, start + h):
                    a = row[j]
                    b = row[j + h]
                    row[j] = a + b
                    row[j + h] = a - b
            h *= 2


def fwht(x: np.ndarray, *, normalize: bool = True, inplace: bool = False) -> np.ndarray:
    """Walsh-Hadamard transform of every row: returns ``x @ H`` (H normalised when ``normalize``).

    ``x``: 1-D or 2-D float array whose last axis has power-of-two length N (pad first with
    :func:`pad_to_pow2`). float32 and float64 are kept; other dtypes become float64. With
    ``inplace=True`` and a C-contiguous float array the input buffer is overwritten and returned.
    Cost O(rows * N log N), memory O(1) beyond the output.
    """
    arr = np.asarray(x)
    if arr.ndim not in (1, 2):
        raise ParameterError(f"fwht expects a 1-D or 2-D array, got shape {arr.shape}")
    n = arr.shape[-1]
    if n < 1 or n & (n - 1):
        raise ParameterError(f"fwht needs a power-of-two last axis, got length {n}; pad with pad_to_pow2 first")
    if arr.dtype not in (np.float32, np.float64):
        arr = arr.astype(np.float64)
        inplace = True                         # already a private copy
    if not inplace or not arr.flags.c_contiguous or not arr.flags.writeable:
        arr = np.array(arr, order="C", copy=True)
    view = arr.reshape(1, n) if arr.ndim == 1 else arr
    _fwht_rows(view)
    if normalize:
        view *= arr.dtype.type(1.0 / math.sqrt(n))
    return arr


def pad_to_pow2(x: np.ndarray, n_total: int | None = None, dtype=np.float64) -> np.ndarray:
    """Copy of 2-D ``x`` (dense or scipy.sparse) with zero columns appended up to ``n_total``
    (default: the next power of two of its column count), as a C-contiguous dense array."""
    rows, cols = x.shape
    total = next_pow2(cols) if n_total is None else int(n_total)
    if total < cols:
        raise ParameterError(f"cannot pad {cols} columns down to {total}")
    out = np.zeros((rows, total), dtype=dtype)
    if hasattr(x, "toarray"):                  # scipy.sparse: scatter the non-zeros
        coo = x.tocoo()
        coo.sum_duplicates()
        out[coo.row, coo.col] = coo.data
    else:
        out[:, :cols] = x
    return out
