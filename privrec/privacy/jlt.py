"""PriCDR's differentially private rating publishing with JLT / SJLT (Chen et al., WWW'22, Alg. 1).

Reading of the dimensions (Alg. 1, Sec. 4.3-4.4, App. B)
--------------------------------------------------------
Alg. 1 does not type-check as printed: R is m x n1 (users x items), M is n' x n1, and line 15
"R~ <- M R / sqrt(n')" needs M to have m columns; App. B analyses R^T Y, which compresses the
*user* axis. HeteroCDR (Sec. 4.4, Eq. 5) needs one published row per user, m x n'. The consistent
reading used here compresses the item axis:

    R~ = R1 M^T / sqrt(n')                         (m x n'),                        (*)

with R1 the centred, singular-value-lifted rating matrix. Each output column is
R1 m_k ~ N(0, R1 R1^T): a Gaussian over users with the m x m covariance R1 R1^T. This is
Blocki, Blum, Datta, Sheffet (FOCS 2012, arXiv 1204.2136, "The JL transform itself preserves
differential privacy") applied to A = R^T (rows = items); the lift must make the *users x users*
matrix R1 R1^T full rank.

Lift. Alg. 1 line 6 lifts the thin SVD, R1 = U sqrt(Sigma^2 + w^2 I) V^T. When users > items
(ML-1M: 6,040 > 3,706) only n1 < m singular values exist, R1 R1^T = R R^T + w^2 U U^T has rank
n1 < m, every output column lies in the column space of R, and a neighbouring matrix changes
that space: the literal algorithm then has **no finite epsilon** (``lift="svd"``; tested).
The fix is Blocki et al.'s full lift R1 = [R, w I_m], R1 R1^T = R R^T + w^2 I_m, for which

    R1 M^T  has exactly the law of  R M_a^T + w G        (M_a: n' x n1, G: m x n' standard Gaussian),

an O(nnz(R) n' + m n') fast path with no SVD (``lift="full"``, default). With the same random
numbers ([M_a, G^T] = the full M) the fast path and the literal dense product agree to rounding.
When users <= items the thin-SVD lift already gives R R^T + w^2 I, so both lifts publish the same
distribution.

Centring (line 3) subtracts each user's mean over all n1 items (the paper divides by m, the wrong
count). A neighbouring change then becomes Delta * e_u c^T with c = e_j - 1/n1: still rank 1, of
norm |Delta| sqrt(1 - 1/n1) < |Delta|.

Unit of privacy (Def. 3.2): one rating r_ij changed by less than 1. Ratings on another scale
(e.g. 1-5 stars, or adding/removing a rating) are handled by ``max_change`` = the largest change
the unit covers; the lift is scaled to w * max_change, so the guarantee is per rating changed by
at most ``max_change``.

Privacy (exact profile, calibrations of w, SJLT RDP, the Guarantee) is computed in
privrec.privacy.jlt_accounting; its names are re-exported here.

SJLT (Def. 3.7, lines 10-13): M = P H D, D random signs, H the normalised Hadamard matrix on
the item axis padded to N = next power of two, P n' x N with entries 0 w.p. 1-q and N(0, 1/q)
w.p. q. R_c D H is computed by a fast Walsh-Hadamard transform (privrec.privacy.fwht, numba,
O(m N log N)); the product with P^T is sparse or dense by density. App. B says SJLT's privacy
"follows the same procedure as JLT"; it does not: conditioned on the support S_k of row k of P,
column k is N(0, (1/q) B_k B_k^T) with B_k = (R1 D H)_{:, S_k} of rank <= |S_k| ~ qN (< m for
q = O(1/m) as in Alg. 1), a degenerate Gaussian whose support depends on the data: the paper's
SJLT (``lift="svd"``) has **no finite epsilon** (except q = 1 with users <= items, where P H D
is Gaussian and it is the JLT). The honest variant (``lift="full"``) adds the lift term w s G to
R_c D H P^T; its privacy needs the coherence zeta of the change direction after H D
(:func:`sjlt_coherence`).

The literal reference algorithms (dense SVD, dense M, dense H) live in
tests/reference/jlt.py for tests and benchmarks only.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from privrec.errors import ParameterError
from privrec.privacy.fwht import fwht, next_pow2
from privrec.privacy.guarantee import Guarantee
from privrec.privacy.jlt_accounting import (  # noqa: F401  (most re-exported: callers use privrec.privacy.jlt.NAME)
    CALIBRATIONS,
    LIFTS,
    RDP_ORDERS,
    Calibration,
    Lift,
    Method,
    advanced_composition,
    blocki_epsilon_for_w,
    blocki_w,
    calibrate_w,
    gaussian_delta,
    guarantee,
    jlt_delta,
    jlt_delta_quad,
    jlt_epsilon,
    jlt_epsilon_rdp,
    jlt_rdp,
    paper_epsilon_for_w,
    paper_w,
    per_column_budget,
    sjlt_epsilon,
    sjlt_rdp,
)
from privrec.privacy.validate import check_delta, check_epsilon, check_positive_int, check_probability

DENSE_MATMUL_DENSITY = 0.02   # above this nnz fraction, R @ M^T goes through BLAS on a dense copy


# --------------------------------------------------------------------------------------------
# parameters and input handling (n': the JL output width, Alg. 1 line 4)
# --------------------------------------------------------------------------------------------

def n_prime_from(mu: float, eta: float) -> int:
    """Alg. 1 line 4: n' = ceil(8 ln(2/mu) / eta^2) (mu, eta: the JL utility parameters)."""
    mu = check_probability(mu, "mu", open_low=True, open_high=True)
    eta = check_epsilon(eta, "eta")
    return int(math.ceil(8.0 * math.log(2.0 / mu) / eta ** 2))


def resolve_n_prime(n_prime: int | None = None, mu: float | None = None, eta: float | None = None) -> int:
    """n' given directly, or from (mu, eta); exactly one of the two ways."""
    if n_prime is not None:
        if mu is not None or eta is not None:
            raise ParameterError("give either n_prime or (mu, eta), not both")
        return check_positive_int(n_prime, "n_prime")
    if mu is None or eta is None:
        raise ParameterError("give the output width n_prime (e.g. 500), or both mu and eta "
                             "(n' = ceil(8 ln(2/mu)/eta^2), PriCDR Alg. 1 line 4)")
    return n_prime_from(mu, eta)


def _as_ratings(ratings) -> sp.csr_matrix:
    """users x items float64 CSR; rejects empty, non-2-D, NaN/inf input."""
    if sp.issparse(ratings):
        mat = sp.csr_matrix(ratings, dtype=np.float64)
        if mat.ndim != 2:
            raise ParameterError(f"ratings must be a 2-D users x items matrix, got shape {mat.shape}")
        if mat.shape[0] == 0 or mat.shape[1] == 0:
            raise ParameterError(f"ratings is empty (shape {mat.shape}); nothing to publish")
        mat.sum_duplicates()
        if not np.isfinite(mat.data).all():
            raise ParameterError("ratings contains NaN or infinity; clean or impute the input first")
        return mat
    arr = np.asarray(ratings)
    if arr.ndim != 2:
        raise ParameterError(f"ratings must be a 2-D users x items matrix, got shape {arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ParameterError(f"ratings is empty (shape {arr.shape}); nothing to publish")
    if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise ParameterError(f"ratings must be numeric, got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    if not np.isfinite(arr).all():
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(arr))[0])
        raise ParameterError(f"ratings contains NaN or infinity at index {bad}; clean or impute the input first")
    return sp.csr_matrix(arr)


def _common(ratings, epsilon, rng, delta, n_prime, mu, eta, calibration, lift, max_change):
    mat = _as_ratings(ratings)
    eps = check_epsilon(epsilon)
    if not isinstance(rng, np.random.Generator):
        raise ParameterError("rng must be a numpy.random.Generator, e.g. numpy.random.default_rng(seed)")
    m, n1 = mat.shape
    if delta is None:
        if m < 2:
            raise ParameterError("the default delta = 1/#users needs at least 2 users; pass delta explicitly")
        delta = 1.0 / m
    dlt = check_delta(delta)
    k = resolve_n_prime(n_prime, mu, eta)
    if calibration not in CALIBRATIONS:
        raise ParameterError(f"calibration must be one of {CALIBRATIONS}, got {calibration!r}")
    if lift not in LIFTS:
        raise ParameterError(f"lift must be one of {LIFTS} ('full': Blocki et al.'s lift, finite epsilon; "
                             f"'svd': Alg. 1 line 6 literally), got {lift!r}")
    s = check_epsilon(max_change, "max_change")
    return mat, eps, dlt, k, s


def _user_means(mat: sp.csr_matrix) -> np.ndarray:
    """Each user's mean over all items (zeros included): Alg. 1 line 3 with the right count."""
    return np.asarray(mat.sum(axis=1)).ravel() / mat.shape[1]


def _svd_lift(mat: sp.csr_matrix, center: bool, w_abs: float) -> np.ndarray:
    """Alg. 1 lines 3, 5, 6 literally: centre, thin SVD, sigma -> sqrt(sigma^2 + w^2). Dense, O(m n1 min(m, n1))."""
    dense = mat.toarray()
    if center:
        dense -= _user_means(mat)[:, None]
    u, sig, vt = np.linalg.svd(dense, full_matrices=False)
    return (u * np.sqrt(sig ** 2 + w_abs ** 2)) @ vt


def _refuse(g: Guarantee, allow_invalid: bool) -> None:
    if not g.is_private and not allow_invalid:
        raise ParameterError(f"{g.mechanism} with these settings publishes a non-private matrix "
                             f"({g.validity}); use lift='full', or pass allow_invalid=True to reproduce the paper")


# --------------------------------------------------------------------------------------------
# JLT
# --------------------------------------------------------------------------------------------

def _times_mt(mat: sp.csr_matrix, m_t: np.ndarray) -> np.ndarray:
    """R @ M^T for CSR R and a dense (n1 x n') M^T, through BLAS when R is not very sparse."""
    m, n1 = mat.shape
    if mat.nnz > DENSE_MATMUL_DENSITY * m * n1:
        return mat.toarray() @ m_t
    return np.asarray(mat @ m_t)


def jlt_project(mat: sp.csr_matrix, m_full: np.ndarray, w_abs: float, center: bool) -> np.ndarray:
    """(R_c M_a^T + w_abs G) / sqrt(n') with [M_a, G^T] = m_full (n' x (n1 + m)): Alg. 1 with the
    full lift R1 = [R_c, w_abs I_m], computed in O(nnz n' + m n') without forming R1 or R_c."""
    m, n1 = mat.shape
    k = m_full.shape[0]
    m_a = m_full[:, :n1]
    out = _times_mt(mat, np.ascontiguousarray(m_a.T))
    if center:
        out -= np.outer(_user_means(mat), m_a.sum(axis=1))
    out += w_abs * m_full[:, n1:].T
    out *= 1.0 / math.sqrt(k)
    return out


def publish_jlt(ratings, epsilon: float, rng: np.random.Generator, *, delta: float | None = None,
                n_prime: int | None = None, mu: float | None = None, eta: float | None = None,
                calibration: Calibration = "paper", lift: Lift = "full", center: bool = True,
                max_change: float = 1.0, allow_invalid: bool = False) -> tuple[np.ndarray, Guarantee]:
    """PriCDR Alg. 1 with the JLT (Gaussian M): returns the users x n' float32 matrix and its Guarantee.

    ``ratings``: users x items (scipy.sparse or dense, float). ``delta`` defaults to 1/#users.
    Give ``n_prime`` or (``mu``, ``eta``). ``calibration`` picks w (paper / blocki / tight); the
    reported epsilon is always the exact one for the w used. ``lift="full"`` (default) is
    the fast O(nnz n' + m n') path; ``lift="svd"`` runs Alg. 1 line 6 literally (dense SVD) and is
    refused when users > items (epsilon = inf) unless ``allow_invalid=True``.
    """
    mat, eps, dlt, k, s = _common(ratings, epsilon, rng, delta, n_prime, mu, eta, calibration, lift, max_change)
    m, n1 = mat.shape
    w = calibrate_w(eps, dlt, k, calibration, method="jlt", n_items=n1, center=center)
    g = guarantee(method="jlt", w=w, delta=dlt, n_prime=k, n_users=m, n_items=n1, epsilon=eps,
                  calibration=calibration, lift=lift, center=center, max_change=s)
    _refuse(g, allow_invalid)
    if lift == "full":
        m_full = rng.standard_normal((k, n1 + m))
        out = jlt_project(mat, m_full, w * s, center)
    else:
        r1 = _svd_lift(mat, center, w * s)
        out = r1 @ rng.standard_normal((k, n1)).T / math.sqrt(k)
    return out.astype(np.float32), g


# --------------------------------------------------------------------------------------------
# SJLT
# --------------------------------------------------------------------------------------------

def draw_sjlt(rng: np.random.Generator, n_total: int, n_prime: int, q: float) -> tuple[np.ndarray, sp.csr_matrix]:
    """D's signs (length N) and P (n' x N CSR, entries N(0, 1/q) w.p. q), Def. 3.7 Eqs. (3)-(4)."""
    signs = rng.integers(0, 2, size=n_total).astype(np.float64) * 2.0 - 1.0
    rows, cols = np.nonzero(rng.random((n_prime, n_total)) < q)
    vals = rng.standard_normal(rows.shape[0]) / math.sqrt(q)
    p = sp.csr_matrix((vals, (rows, cols)), shape=(n_prime, n_total))
    return signs, p


def sjlt_transform(x: np.ndarray, signs: np.ndarray, p: sp.csr_matrix) -> np.ndarray:
    """x @ (P H D)^T = ((x D) H) P^T for a dense x padded to N columns (N a power of two).
    x is overwritten. O(m N log N) for the FWHT plus O(m nnz(P)) or a dense GEMM for P^T."""
    x *= signs[None, :]
    fwht(x, inplace=True)
    n_prime, n_total = p.shape
    if p.nnz > 0.1 * n_prime * n_total:
        return x @ p.toarray().T
    return np.asarray((p @ x.T).T)


def sjlt_project(mat: sp.csr_matrix, signs: np.ndarray, p: sp.csr_matrix, g: np.ndarray | None,
                 w_abs: float, center: bool) -> np.ndarray:
    """(R_c (P H D)^T + w_abs G) / sqrt(n'), R_c centred over the n1 real items, padded to N."""
    m, n1 = mat.shape
    n_prime, n_total = p.shape
    x = np.zeros((m, n_total))
    coo = mat.tocoo()
    x[coo.row, coo.col] = coo.data
    out = sjlt_transform(x, signs, p)
    if center:
        ones = np.zeros((1, n_total))
        ones[0, :n1] = 1.0
        out -= np.outer(_user_means(mat), sjlt_transform(ones, signs, p)[0])
    if g is not None:
        out += w_abs * g
    out *= 1.0 / math.sqrt(n_prime)
    return out


def sjlt_coherence(signs: np.ndarray, n_items: int, center: bool) -> float:
    """zeta = N max_{i,j} (H D c_j)_i^2 over the unit's change directions c_j (item j).

    c_j = e_j gives exactly 1; centred, c_j = e_j - 1/n1 on the first n1 coordinates, and
    sqrt(N)|u_i| <= 1 + sqrt(N) |(H D 1_{n1})_i| / n1 (one FWHT of a vector)."""
    if not center:
        return 1.0
    n_total = signs.shape[0]
    v = np.zeros(n_total)
    v[:n_items] = signs[:n_items]
    hd1 = fwht(v)                                  # H D 1_{n1} (normalised H)
    gamma = math.sqrt(n_total) * float(np.max(np.abs(hd1))) / n_items
    return (1.0 + gamma) ** 2


def publish_sjlt(ratings, epsilon: float, rng: np.random.Generator, *, q: float, delta: float | None = None,
                 n_prime: int | None = None, mu: float | None = None, eta: float | None = None,
                 calibration: Calibration = "paper", lift: Lift = "full", center: bool = True,
                 max_change: float = 1.0, allow_invalid: bool = False) -> tuple[np.ndarray, Guarantee]:
    """PriCDR Alg. 1 with the SJLT M = P H D (sparsity ``q``): users x n' float32 matrix + Guarantee.

    ``lift="full"`` (default): the honest variant (R_c D H P^T + w s G)/sqrt(n'), finite epsilon by RDP.
    ``lift="svd"``: the paper's SJLT literally (thin-SVD lift, no Gaussian term); epsilon = inf
    (degenerate output law), refused unless ``allow_invalid=True``.
    """
    mat, eps, dlt, k, s = _common(ratings, epsilon, rng, delta, n_prime, mu, eta, calibration, lift, max_change)
    qq = check_probability(q, "q", open_low=True)
    m, n1 = mat.shape
    n_total = next_pow2(n1)
    signs, p = draw_sjlt(rng, n_total, k, qq)
    zeta = sjlt_coherence(signs, n1, center) if lift == "full" else 1.0
    w = calibrate_w(eps, dlt, k, calibration, method="sjlt", n_items=n1, center=center, q=qq,
                    n_total=n_total, coherence=zeta)
    gr = guarantee(method="sjlt", w=w, delta=dlt, n_prime=k, n_users=m, n_items=n1, epsilon=eps,
                   calibration=calibration, lift=lift, center=center, max_change=s, q=qq, coherence=zeta)
    _refuse(gr, allow_invalid)
    if lift == "full":
        noise = rng.standard_normal((m, k))
        out = sjlt_project(mat, signs, p, noise, w * s, center)
    else:
        r1 = _svd_lift(mat, center, w * s)
        x = np.zeros((m, n_total))
        x[:, :n1] = r1
        out = sjlt_transform(x, signs, p) / math.sqrt(k)
    return out.astype(np.float32), gr


# --------------------------------------------------------------------------------------------
# audit
# --------------------------------------------------------------------------------------------

def audit_case(mech: str = "jlt", epsilon: float = 1.0, delta: float = 1e-5, n_prime: int = 8,
               q: float = 0.5, signal: float = 1e4) -> dict:
    """Two neighbouring 2 x 2 rating matrices chosen to be as distinguishing as possible.

    R = [[A, 0], [0, 0]], R' = [[A, 0], [1, 0]] (user 1's rating of item 0 goes 0 -> 1), A = signal * w,
    no centring, ``calibration="tight"`` for (epsilon, delta). Column k of the output holds
    (A h_k + noise, w g_k) vs (A h_k + noise, h_k + w g_k): the first row reveals h_k, so the
    statistic sum_k y0k y1k / A approaches the optimal test, the case that makes the exact profile
    tight. ``mech``: "jlt", "sjlt" (lifted), or "jlt-svd" (Alg. 1's thin-SVD lift with 2 users and
    1 item: user 1's output row is exactly 0 under R and not under R'; epsilon = inf, discrete).
    Samplers reproduce jlt_project / sjlt_project batched over many runs.
    """
    r_a = np.array([[1.0, 0.0], [0.0, 0.0]])
    r_b = np.array([[1.0, 0.0], [1.0, 0.0]])
    if mech == "jlt-svd":
        w = calibrate_w(epsilon, delta, n_prime, "paper")
        ga = guarantee(method="jlt", w=w, delta=delta, n_prime=n_prime, n_users=2, n_items=1, epsilon=epsilon,
                       calibration="paper", lift="svd", center=False)
        lifted_a = _svd_lift(sp.csr_matrix([[signal * w], [0.0]]), False, w)
        lifted_b = _svd_lift(sp.csr_matrix([[signal * w], [1.0]]), False, w)

        def make(lifted):
            def sample(rng, n):
                h = rng.standard_normal((n, 1, n_prime))
                return np.einsum("ij,njk->nik", lifted, h) / math.sqrt(n_prime)
            return sample
        return {"name": "pricdr-jlt (lift=svd, users > items)", "claimed_epsilon": ga.claimed.epsilon,
                "true_epsilon": ga.epsilon, "delta": delta, "sample_a": make(lifted_a), "sample_b": make(lifted_b),
                "kind": "discrete",
                "key_or_statistic": lambda y: bool(np.all(np.abs(y[1]) <= 1e-12 * (1.0 + np.abs(y[0]))))}
    if mech == "jlt":
        w = calibrate_w(epsilon, delta, n_prime, "tight", method="jlt", n_items=2, center=False)
        g = guarantee(method="jlt", w=w, delta=delta, n_prime=n_prime, n_users=2, n_items=2, epsilon=epsilon,
                      calibration="tight", center=False)
        amp = signal * w

        def make(r):
            def sample(rng, n):
                m_full = rng.standard_normal((n, n_prime, 4))          # [M_a | G^T] per run
                proj = np.einsum("ij,nkj->nik", r * [[amp, 1.0], [1.0, 1.0]], m_full[:, :, :2])
                return (proj + w * np.transpose(m_full[:, :, 2:], (0, 2, 1))) / math.sqrt(n_prime)
            return sample
    elif mech == "sjlt":
        zeta = 1.0
        w = calibrate_w(epsilon, delta, n_prime, "tight", method="sjlt", n_items=2, center=False, q=q,
                        n_total=2, coherence=zeta)
        g = guarantee(method="sjlt", w=w, delta=delta, n_prime=n_prime, n_users=2, n_items=2, epsilon=epsilon,
                      calibration="tight", center=False, q=q, coherence=zeta)
        amp = signal * w
        h2 = np.array([[1.0, 1.0], [1.0, -1.0]]) / math.sqrt(2.0)

        def make(r):
            def sample(rng, n):
                signs = rng.integers(0, 2, size=(n, 2)) * 2.0 - 1.0
                p = (rng.random((n, n_prime, 2)) < q) * rng.standard_normal((n, n_prime, 2)) / math.sqrt(q)
                rd = (r * [[amp, 1.0], [1.0, 1.0]])[None] * signs[:, None, :]     # R D
                proj = np.einsum("nij,jl,nkl->nik", rd, h2, p)                    # R D H P^T
                return (proj + w * rng.standard_normal((n, 2, n_prime))) / math.sqrt(n_prime)
            return sample
    else:
        raise ParameterError(f"audit mech must be 'jlt', 'sjlt' or 'jlt-svd', got {mech!r}")

    def statistic(y):
        y = np.asarray(y)
        return np.sum(y[:, 0, :] * y[:, 1, :], axis=1) * n_prime / amp

    return {"name": f"pricdr-{mech} (lift=full, tight calibration)", "claimed_epsilon": g.epsilon,
            "true_epsilon": g.epsilon, "delta": delta, "sample_a": make(r_a), "sample_b": make(r_b),
            "kind": "threshold", "key_or_statistic": statistic}
