"""Literal, dense reference implementations of PriCDR Alg. 1 (tests and benchmarks only).

Everything is formed explicitly: the centred dense R, the lifted R1 (by a dense SVD for the
paper's lift, or as the block matrix [R_c, w I_m] for Blocki et al.'s full lift), the dense
Gaussian M, the dense N x N Hadamard matrix (scipy.linalg.hadamard), the dense diagonal D and
the dense P. Cost O(m n1 min(m, n1)) for the SVD, O(m N^2) for the Hadamard product: never use
these on real data; privrec.privacy.jlt computes the same maps in O(nnz n' + m n') / O(m N log N).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg
import scipy.sparse as sp


def centred(ratings) -> np.ndarray:
    """Alg. 1 line 3 with the right count: subtract each user's mean over all n1 items."""
    dense = ratings.toarray() if sp.issparse(ratings) else np.array(ratings, dtype=np.float64)
    return dense - dense.mean(axis=1, keepdims=True)


def svd_lift(x: np.ndarray, w_abs: float) -> np.ndarray:
    """Alg. 1 lines 5-6: thin SVD x = U S V^T, return U sqrt(S^2 + w^2) V^T (m x n1)."""
    u, s, vt = np.linalg.svd(x, full_matrices=False)
    return u @ np.diag(np.sqrt(s ** 2 + w_abs ** 2)) @ vt


def full_lift(x: np.ndarray, w_abs: float) -> np.ndarray:
    """Blocki et al.'s lift: R1 = [x, w I_m] (m x (n1 + m)), R1 R1^T = x x^T + w^2 I_m."""
    return np.hstack([x, w_abs * np.eye(x.shape[0])])


def literal_jlt(ratings, w_abs: float, m_matrix: np.ndarray, *, lift: str = "full", center: bool = True) -> np.ndarray:
    """R1 M^T / sqrt(n') with a dense Gaussian M: n' x (n1 + m) for the full lift, n' x n1 for the SVD lift."""
    x = centred(ratings) if center else (ratings.toarray() if sp.issparse(ratings) else np.asarray(ratings, float))
    r1 = full_lift(x, w_abs) if lift == "full" else svd_lift(x, w_abs)
    return r1 @ m_matrix.T / math.sqrt(m_matrix.shape[0])


def dense_sjlt_matrix(signs: np.ndarray, p) -> np.ndarray:
    """M = P H D (n' x N) with the dense normalised Hadamard matrix (Def. 3.7)."""
    n_total = signs.shape[0]
    h = scipy.linalg.hadamard(n_total).astype(np.float64) / math.sqrt(n_total)
    p_dense = p.toarray() if sp.issparse(p) else np.asarray(p, dtype=np.float64)
    return p_dense @ h @ np.diag(signs)


def literal_sjlt(ratings, w_abs: float, signs: np.ndarray, p, noise: np.ndarray | None, *,
                 lift: str = "full", center: bool = True) -> np.ndarray:
    """Alg. 1 with M = P H D formed densely, item axis zero-padded to N.

    lift="full": (R_c M^T + w G) / sqrt(n') (the lifted variant); lift="svd": the paper's
    R1 M^T / sqrt(n') with R1 the thin-SVD lift and no Gaussian term."""
    x = centred(ratings) if center else (ratings.toarray() if sp.issparse(ratings) else np.asarray(ratings, float))
    if lift == "svd":
        x = svd_lift(x, w_abs)
    m, n1 = x.shape
    n_total = signs.shape[0]
    xp = np.zeros((m, n_total))
    xp[:, :n1] = x
    mm = dense_sjlt_matrix(signs, p)
    out = xp @ mm.T
    if lift == "full" and noise is not None:
        out = out + w_abs * noise
    return out / math.sqrt(mm.shape[0])
