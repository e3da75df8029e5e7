"""One item's randomised response in Mu & Lim (CIKM'25: Alg. 1 line 13, Eq. 6, RQ2): the
probability that an item of a history is published unchanged by :mod:`privrec.privacy.rr`
(otherwise it is replaced by its alternative a(v)), and what that costs per item as
epsilon-LDP.

Uniform keep (Alg. 1 line 13). A user with n non-padding items keeps each with probability

    k_n = (eps / (1 + eps)) ** (1 / n)          (the product over the n items is eps/(1+eps))

:func:`keep_probabilities` / :func:`replace_probabilities` give k_n and 1 - k_n per user
(n from :func:`sequence_lengths`; 0 = padding, never perturbed), without cancellation.

Position-weighted variant (RQ2). Replacement probability p1 outside, p2 inside a window of
dn consecutive items, with (1 - p1)^(n - dn) = eps (1 - p2)^(-dn) / (1 + eps), i.e. the
product of the n keep probabilities is again eps/(1+eps); the paper requires
0 < p1 < p2 < 1/2 and runs p1 = 0.1, dn = 0.2 n, the window sliding from the oldest to the
most recent items. Given p1 the equation fixes p2 (:func:`positional_keep`); p2 > p1 holds
exactly when p1 < 1 - (eps/(1+eps))^(1/n), so for long histories (e.g. n = 145, eps = 0.1:
p1 must be < 0.0164) the paper's p1 = 0.1 has no solution; short histories at small eps
need p2 > 1/2 (n = 42, eps = 1e-4: p2 = 0.505), outside RQ2's range and Thm 3.1's validity.
:func:`positional_keep_matrix` either refuses the first kind (the second is then refused by the
validity check, or published with its true guarantee under ``allow_invalid``) or, with
``infeasible="uniform"``, gives both kinds the uniform keep (itself refused where it is < 1/2).

Per item (``_pair_ldp``, the related guarantees of :func:`privrec.privacy.rr.guarantee`), an
output w discloses that the original was in {w} U a^-1(w). Randomised response
between v and a(v) is epsilon-LDP with epsilon = ln(k/(1-k)) (dp-accounting
``RandomizedResponseDpEvent``, two buckets) only when a(a(v)) = v: otherwise the output v is
impossible from input a(v) and the pair is told apart outright (epsilon = inf). Only
:func:`privrec.privacy.alternatives.paired_map` (an involution) gives a finite per-item value,
and it grows with n (n = 200, eps = 1: k = 0.99654, ln(k/(1-k)) = 5.66).
"""

from __future__ import annotations

import math
from typing import Literal

import dp_accounting
import numpy as np

from privrec.errors import ParameterError
from privrec.privacy import accounting
from privrec.privacy.guarantee import Guarantee
from privrec.privacy.validate import as_int_array, check_epsilon, check_positive_int, check_probability

MECHANISM = "mu-lim-rr"
Infeasible = Literal["error", "uniform"]
_LOG_HALF = math.log(0.5)


# ----------------------------------------------------------------------------- keep probabilities
def _log_target(eps: float) -> float:
    """log(eps / (1 + eps)) without cancellation."""
    return -math.log1p(1.0 / eps)


def sequence_lengths(sequences: np.ndarray) -> np.ndarray:
    """n_u: the number of non-padding (non-zero) entries of each row."""
    return (np.asarray(sequences) != 0).sum(axis=1).astype(np.int64)


def _check_lengths(lengths) -> np.ndarray:
    arr = np.asarray(lengths)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1 or arr.size == 0:
        raise ParameterError(f"lengths must be a non-empty 1-D array of item counts, got shape {arr.shape}")
    arr = as_int_array(arr, "lengths", "counts (integers: items per user)")
    if arr.min() < 0:
        raise ParameterError(f"lengths must be >= 0, got {int(arr.min())}")
    return arr.astype(np.int64)


def keep_probabilities(lengths, epsilon: float) -> np.ndarray:
    """Alg. 1 line 13: k_u = (eps/(1+eps))^(1/n_u) per user (float64; 1.0 where n_u = 0)."""
    eps = check_epsilon(epsilon)
    n = _check_lengths(lengths)
    with np.errstate(divide="ignore"):
        out = np.exp(_log_target(eps) / np.where(n > 0, n, 1))
    return np.where(n > 0, out, 1.0)


def replace_probabilities(lengths, epsilon: float) -> np.ndarray:
    """1 - k_u, computed without cancellation (-expm1(log(eps/(1+eps))/n_u)); 0.0 where n_u = 0."""
    eps = check_epsilon(epsilon)
    n = _check_lengths(lengths)
    out = -np.expm1(_log_target(eps) / np.where(n > 0, n, 1))
    return np.where(n > 0, out, 0.0)


def positional_keep(n: int, epsilon: float, window_len: int, p_outside: float) -> tuple[float, float]:
    """RQ2's keep probabilities (k_outside, k_inside) = (1 - p1, 1 - p2) for one history of n items.

    Solves (1 - p1)^(n - dn) = eps (1 - p2)^(-dn) / (1 + eps) for p2 with p1 = ``p_outside``
    and dn = ``window_len``: log(1 - p2) = (log(eps/(1+eps)) - (n - dn) log(1 - p1)) / dn.
    The paper's 0 <= p1 < p2 needs p1 < 1 - (eps/(1+eps))^(1/n); otherwise ParameterError.
    With dn = n the window is the whole history and k_inside is the uniform keep.
    """
    eps = check_epsilon(epsilon)
    n = check_positive_int(n, "n")
    dn = check_positive_int(window_len, "window_len")
    if dn > n:
        raise ParameterError(f"window_len={dn} exceeds the history length n={n}")
    p1 = check_probability(p_outside, "p_outside", open_high=True)
    k_in, k_out, ok = _positional_scalar(n, eps, dn, p1)
    if not ok:
        p_max = -math.expm1(_log_target(eps) / n)
        raise ParameterError(f"p_outside={p1:g} leaves no window probability p2 > p1 for n={n}, eps={eps:g}: "
                             f"p_outside must be < 1 - (eps/(1+eps))^(1/n) = {p_max:.6g} (RQ2 needs p1 < p2)")
    return k_out, k_in


def _positional_scalar(n: int, eps: float, dn: int, p1: float) -> tuple[float, float, bool]:
    """(k_in, k_out, feasible) for one length; dn = n gives the uniform keep."""
    lt = _log_target(eps)
    if dn >= n:
        return math.exp(lt / n), 1.0 - p1, True
    log_k_out = math.log1p(-p1)
    log_k_in = (lt - (n - dn) * log_k_out) / dn
    feasible = log_k_in < log_k_out            # p2 > p1 (this also gives k_in < 1)
    return math.exp(log_k_in), 1.0 - p1, feasible


def _window(n: np.ndarray, window_fraction: float, window_position: float) -> tuple[np.ndarray, np.ndarray]:
    """(dn, start) per user: dn = clip(round(f n), 1, n), start = round(pos (n - dn)) (0 = oldest)."""
    dn = np.clip(np.floor(window_fraction * n + 0.5), 1, np.maximum(n, 1)).astype(np.int64)
    start = np.floor(window_position * (n - dn) + 0.5).astype(np.int64)
    return dn, start


def _positional_rows(n: np.ndarray, eps: float, p1: float, window_fraction: float, window_position: float,
                     infeasible: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-user (dn, start, k_out, k_in, uniform_fallback) for the RQ2 variant (n_u >= 1)."""
    dn, start = _window(n, window_fraction, window_position)
    lt = _log_target(eps)
    log_k_out = math.log1p(-p1) if p1 < 1 else -math.inf
    nn = np.maximum(n, 1)
    inner = dn < nn
    with np.errstate(invalid="ignore", divide="ignore"):
        log_k_in = np.where(inner, (lt - (nn - dn) * log_k_out) / dn, lt / nn)
    bad = inner & ~(log_k_in < log_k_out)                     # p2 <= p1: no stronger window exists
    if bad.any() and infeasible == "error":
        u = int(np.flatnonzero(bad)[0])
        p_max = float(-np.expm1(lt / nn[bad]).min())
        raise ParameterError(f"p_outside={p1:g} leaves no window probability p2 > p1 for a history of n={int(n[u])} "
                             f"items at eps={eps:g} (RQ2 needs p1 < 1 - (eps/(1+eps))^(1/n)); use p_outside < "
                             f"{p_max:.6g} for these histories, or infeasible='uniform' to give such users the "
                             "uniform keep probability")
    if infeasible == "uniform":     # p2 > 1/2 is outside RQ2's 0 < p1 < p2 < 1/2 (and Thm 3.1): uniform keep too;
        bad |= inner & (log_k_in < _LOG_HALF)     # with "error" such rows stay and the validity check refuses them
    uniform = bad | ~inner
    k_uni = np.exp(lt / nn)
    k_in = np.where(uniform, k_uni, np.exp(np.where(bad, 0.0, log_k_in)))
    k_out = np.where(uniform, k_uni, 1.0 - p1)
    return dn, start, k_out, k_in, uniform


def has_window(lengths, epsilon: float, *, p_outside: float = 0.1, window_fraction: float = 0.2) -> np.ndarray:
    """Per history length: does RQ2's variant give this history its strongly obfuscated window
    (p1 < p2 <= 1/2), rather than the uniform keep of ``infeasible="uniform"``? (It does not depend on the
    window's position.) Short histories need a large eps, long ones a small eps: on ML-1M at
    p1 = 0.1 at most a quarter of the users have a window at any eps."""
    n = _check_lengths(lengths)
    eps = check_epsilon(epsilon)
    p1, f, _ = _check_positional_args(p_outside, window_fraction, 0.0, "uniform")
    uniform = _positional_rows(np.maximum(n, 1), eps, p1, f, 0.0, "uniform")[4]
    return (n > 0) & ~uniform


def _check_positional_args(p_outside, window_fraction, window_position, infeasible) -> tuple[float, float, float]:
    p1 = check_probability(p_outside, "p_outside", open_high=True)
    f = check_probability(window_fraction, "window_fraction", open_low=True)
    pos = check_probability(window_position, "window_position")
    if infeasible not in ("error", "uniform"):
        raise ParameterError(f"infeasible must be 'error' or 'uniform', got {infeasible!r}")
    return p1, f, pos


def positional_keep_matrix(sequences: np.ndarray, epsilon: float, *, p_outside: float = 0.1,
                           window_fraction: float = 0.2, window_position: float = 0.0,
                           infeasible: Infeasible = "error") -> np.ndarray:
    """(users, L) keep probabilities of the RQ2 variant (1.0 at padding).

    Each user's window covers dn = round(window_fraction * n) (at least 1) consecutive
    non-padding items starting at item round(window_position * (n - dn)), counted from the
    oldest (window_position = 0: oldest items, 1: most recent). Inside the window keep is
    1 - p2, outside 1 - p1 with p1 = ``p_outside`` (see :func:`positional_keep`). Users for
    whom no p2 > p1 exists raise ParameterError, or get the uniform keep when
    ``infeasible="uniform"``.
    """
    seqs = np.asarray(sequences)
    if seqs.ndim != 2:
        raise ParameterError(f"sequences must be a 2-D (users x max_len) id matrix, got shape {seqs.shape}")
    eps = check_epsilon(epsilon)
    p1, f, pos = _check_positional_args(p_outside, window_fraction, window_position, infeasible)
    return _positional_matrix(seqs, eps, p1, f, pos, infeasible)


def _positional_matrix(seqs: np.ndarray, eps: float, p1: float, f: float, pos: float, infeasible: str) -> np.ndarray:
    nz = seqs != 0
    n = nz.sum(axis=1).astype(np.int64)
    dn, start, k_out, k_in, _ = _positional_rows(n, eps, p1, f, pos, infeasible)
    rank = np.cumsum(nz, axis=1) - 1                        # index of each item among the user's items
    inside = nz & (rank >= start[:, None]) & (rank < (start + dn)[:, None])
    keep = np.where(inside, k_in[:, None], k_out[:, None])
    return np.where(nz, keep, 1.0)


# ----------------------------------------------------------------------------- per-item LDP
def _pair_ldp(keeps: np.ndarray, involution: bool, stats: dict, params: dict,
              worst_user_keeps: np.ndarray) -> tuple[Guarantee, Guarantee]:
    """Per-item epsilon-LDP between v and a(v) (worst over ``keeps``) and its composition over
    the history with keep probabilities ``worst_user_keeps``."""
    q_all = np.minimum(keeps, 1.0 - keeps)
    qmin = float(q_all.min())
    closed = math.inf if qmin <= 0 else math.log((1.0 - qmin) / qmin)
    unit_item = "one item of a history changed to its alternative a(v), where a(a(v)) = v"
    if not involution:
        note = (f"a is not an involution ({stats['two_cycle_fraction']:.1%} of items lie in 2-cycles): for v with "
                f"a(a(v)) != v the output v is impossible from input a(v), so the pair is distinguishable "
                f"outright; for items in 2-cycles the value would be {closed:.4g}")
        item = Guarantee(mechanism=MECHANISM, definition="epsilon-LDP per item (randomised response v vs a(v))",
                         epsilon=math.inf, unit=unit_item, parameters=params, accounting="exact (disjoint supports)",
                         event=dp_accounting.NonPrivateDpEvent(), relation="replace_one", notes=(note,))
        user = Guarantee(mechanism=MECHANISM, definition="epsilon-DP per user (every item changed to its partner)",
                         epsilon=math.inf, unit="one user's history with each item changed to its alternative",
                         parameters=params, accounting="exact (disjoint supports)",
                         event=dp_accounting.NonPrivateDpEvent(), relation="replace_one")
        return item, user
    ev_item = _rr_event(qmin)
    eps_item, how = accounting.epsilon(ev_item, 0.0, "replace_one") if qmin > 0 else (math.inf, "exact")
    item = Guarantee(mechanism=MECHANISM, definition="epsilon-LDP per item (randomised response v vs a(v))",
                     epsilon=eps_item, unit=unit_item, parameters={**params, "closed_form": closed},
                     accounting=f"{how} on two-bucket randomised response (ln(k/(1-k)) = {closed:.6g}; the PLD "
                                f"accountant rounds up)", event=ev_item, relation="replace_one")
    qu = np.minimum(worst_user_keeps, 1.0 - worst_user_keeps)
    vals, cnt = np.unique(qu, return_counts=True)
    parts = [_rr_event(float(q)) if c == 1 else dp_accounting.SelfComposedDpEvent(_rr_event(float(q)), int(c))
             for q, c in zip(vals, cnt)]
    ev_user = parts[0] if len(parts) == 1 else dp_accounting.ComposedDpEvent(parts)
    closed_user = float(np.sum(np.log((1.0 - qu) / qu))) if (qu > 0).all() else math.inf
    eps_user, how_u = (accounting.epsilon(ev_user, 0.0, "replace_one") if (qu > 0).all() else (math.inf, "exact"))
    if not math.isfinite(eps_user) and math.isfinite(closed_user):
        eps_user, how_u = closed_user, "closed form (basic composition; the accountants do not cover this size)"
    user = Guarantee(mechanism=MECHANISM, definition="epsilon-DP per user (every item changed to its partner)",
                     epsilon=eps_user, unit="one user's whole history with every item changed to its partner a(v)",
                     parameters={**params, "n_items_of_worst_user": int(len(qu)), "closed_form": closed_user},
                     accounting=f"{how_u}, composition over the worst user's items", event=ev_user,
                     relation="replace_one")
    return item, user


def _abs_logit(k: np.ndarray) -> np.ndarray:
    """|ln(k/(1-k))| (inf at k = 0 or 1)."""
    k = np.asarray(k, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.abs(np.log(k) - np.log1p(-k))


def _rr_event(q: float) -> dp_accounting.DpEvent:
    """Two-bucket randomised response reporting the truth w.p. 1 - q: noise_parameter = 2q. At
    q = 1/2 (keep = 1/2, e.g. n = 1 and eps = 1) the output does not depend on the input: a no-op."""
    if q >= 0.5:
        return dp_accounting.NoOpDpEvent()
    return dp_accounting.RandomizedResponseDpEvent(noise_parameter=2.0 * q, num_buckets=2)
