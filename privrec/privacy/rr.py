"""Randomised response with semantic alternatives (Mu & Lim, CIKM'25: Alg. 1, Eq. 6, Thm 3.1, RQ2).

Mechanism (Alg. 1 lines 11-18, Eq. 6). Every item v has one fixed alternative a(v) != v
(:mod:`privrec.privacy.alternatives`). A user with n items keeps each item with probability

    k_n = (eps / (1 + eps)) ** (1 / n)          (Alg. 1 line 13; the product over n items is eps/(1+eps))

and otherwise publishes a(v); the draws are independent. Here n is the user's own number
of non-padding items. :func:`perturb` applies it to a front-padded id matrix (0 = padding,
never perturbed) in O(n L), fully vectorised; the published matrix keeps each row's length.

Position-weighted variant (RQ2). Replacement probability p1 outside, p2 inside a window of
dn consecutive items, with (1 - p1)^(n - dn) = eps (1 - p2)^(-dn) / (1 + eps), i.e. the
product of the n keep probabilities is again eps/(1+eps); the paper requires
0 < p1 < p2 < 1/2 and runs p1 = 0.1, dn = 0.2 n, the window sliding from the oldest to the
most recent items. Given p1 the equation fixes p2 (:func:`positional_keep`); p2 > p1 holds
exactly when p1 < 1 - (eps/(1+eps))^(1/n), so for long histories (e.g. n = 145, eps = 0.1:
p1 must be < 0.0164) the paper's p1 = 0.1 has no solution. :func:`positional_keep_matrix`
either refuses such users or (``infeasible="uniform"``) gives them the uniform keep.

Guarantee (Thm 3.1, "Bayesian posterior-odds bound (uniform prior)"). Under a uniform prior
on V^n (positions independent, repeats allowed) and a *bijective* a without fixed points, the
released item w at a position with keep probability k came from w with posterior probability
k and from a^-1(w) with probability 1 - k, independently across positions. The best guess of
the whole history therefore has posterior probability M = prod_t max(k_t, 1 - k_t) and the
exact worst-case posterior odds are M / (1 - M). When every k_t >= 1/2 this equals
prod k_t / (1 - prod k_t) = eps: Thm 3.1 holds and is tight. Where it does not:

* k_t < 1/2 (short histories, small eps: n = 10, eps = 1e-4 gives k = 0.398): guessing
  "replaced" wins and the odds are prod max(k, 1-k) / (1 - ...), e.g. n = 1, eps = 0.5 gives
  odds 2 (= 1/eps) instead of 0.5. Refused unless ``allow_invalid=True``; then the true value
  is reported with the paper's claim next to it.
* a not injective (the paper's own nearest-neighbour map): an output w came from w or from
  any of the c(w) = |a^-1(w)| items mapping to it, so P(original = w | w) = k/(k + c(w)(1-k)),
  and items outside a's image (c = 0) are revealed with certainty whenever kept. Without data
  the worst case is unbounded (an output of such items is decoded exactly); with
  ``sequences`` the report gives the exact worst case over the outputs these users can
  produce, prod_t max_{w in {v_t, a(v_t)}} max(k,1-k)/(k + c(w)(1-k)) (1 where c(w) = 0).
  Refused unless ``allow_invalid=True``.
* The bound is about the uniform prior. It is not differential privacy: an attacker with
  any other prior does better. Knowing only that a history has no repeated item (true for
  rating data) already breaks it: with a 2-cycle a(x) = y, a(y) = x, n = 2, eps = 1, the
  output (x, y) leaves only (x, y) and (y, x) as distinct-item histories and the odds of the
  truth are k^2/(1-k)^2 = 5.83 > 1 (checked by enumeration in the tests).

Per item, an output w discloses that the original was in {w} U a^-1(w). Randomised response
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
from privrec.privacy.alternatives import check_alternative_map, is_involution, map_statistics, preimage_counts
from privrec.privacy.guarantee import Claim, Guarantee
from privrec.privacy.validate import as_int_array, check_epsilon, check_id_matrix, check_positive_int, check_probability

MECHANISM = "mu-lim-rr"
DEFINITION = "Bayesian posterior-odds bound (uniform prior)"
CHUNK_ROWS = 65536          # rows per random-draw block (bounds memory; the stream layout is fixed)
Infeasible = Literal["error", "uniform"]


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
    bad = inner & ~(log_k_in < log_k_out)
    if bad.any() and infeasible == "error":
        u = int(np.flatnonzero(bad)[0])
        p_max = float(-np.expm1(lt / nn[bad]).min())
        raise ParameterError(f"p_outside={p1:g} leaves no window probability p2 > p1 for a history of n={int(n[u])} "
                             f"items at eps={eps:g} (RQ2 needs p1 < 1 - (eps/(1+eps))^(1/n)); use p_outside < "
                             f"{p_max:.6g} for these histories, or infeasible='uniform' to give such users the "
                             "uniform keep probability")
    uniform = bad | ~inner
    k_uni = np.exp(lt / nn)
    k_in = np.where(uniform, k_uni, np.exp(np.where(bad, 0.0, log_k_in)))
    k_out = np.where(uniform, k_uni, 1.0 - p1)
    return dn, start, k_out, k_in, uniform


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


# ----------------------------------------------------------------------------- mechanism
def _prepare(sequences, alt_map) -> tuple[np.ndarray, np.ndarray]:
    alt = check_alternative_map(alt_map)
    m = len(alt) - 1
    raw = np.asarray(sequences)
    if raw.ndim == 2 and raw.size and np.issubdtype(raw.dtype, np.number) and np.nanmax(raw) > m:
        raise ParameterError(f"sequences hold item id {np.nanmax(raw):g} but alt_map has length {m + 1} and covers "
                             f"item codes 1..{m} only; build the map over all items (length n_items + 1)")
    seqs = check_id_matrix(sequences, m, unique_rows=False)
    return seqs, alt


def _apply(seqs: np.ndarray, alt: np.ndarray, replace_prob: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Replace cell (u, t) by alt[v] when U(0,1) < replace_prob (row vector or full matrix)."""
    if not isinstance(rng, np.random.Generator):
        raise ParameterError(f"rng must be a numpy.random.Generator (np.random.default_rng(seed)), "
                             f"got {type(rng).__name__}")
    out = np.array(seqs, copy=True)
    n, L = out.shape
    per_row = replace_prob.ndim == 1
    for s in range(0, n, CHUNK_ROWS):
        e = min(n, s + CHUNK_ROWS)
        u = rng.random((e - s, L))
        q = replace_prob[s:e, None] if per_row else replace_prob[s:e]
        block = out[s:e]
        hit = (u < q) & (block != 0)
        block[hit] = alt[block[hit]]
    return out


def perturb(sequences: np.ndarray, alt_map, epsilon: float, rng: np.random.Generator, *,
            allow_invalid: bool = False) -> np.ndarray:
    """Alg. 1 lines 11-18 on an (users, L) id matrix (0 = padding; repeats allowed).

    Each non-padding item of user u is kept with probability (eps/(1+eps))^(1/n_u) and
    replaced by ``alt_map[v]`` otherwise; padding stays. ``alt_map``: length m + 1 array or
    :class:`~privrec.privacy.alternatives.AlternativeMap` (item codes 1..m). Returns a new
    matrix with the input's integer dtype. Raises ParameterError outside Theorem 3.1's
    validity (a keep probability < 1/2, or a non-injective map such as the paper's
    nearest-neighbour map) unless ``allow_invalid=True``; :func:`guarantee` then reports the
    true posterior odds.
    """
    seqs, alt = _prepare(sequences, alt_map)
    eps = check_epsilon(epsilon)
    n = sequence_lengths(seqs)
    _validity_or_raise(alt, keep_probabilities(n[n > 0], eps) if (n > 0).any() else np.ones(1), allow_invalid)
    return _apply(seqs, alt, replace_probabilities(n, eps), rng)


def perturb_positional(sequences: np.ndarray, alt_map, epsilon: float, rng: np.random.Generator, *,
                       p_outside: float = 0.1, window_fraction: float = 0.2, window_position: float = 0.0,
                       infeasible: Infeasible = "error", allow_invalid: bool = False) -> np.ndarray:
    """RQ2's position-weighted randomised response (see :func:`positional_keep_matrix`).

    Same input, output and refusal rules as :func:`perturb`; the product of each user's keep
    probabilities is eps/(1+eps), so Theorem 3.1's bound is the same when all are >= 1/2.
    """
    seqs, alt = _prepare(sequences, alt_map)
    eps = check_epsilon(epsilon)
    p1, f, pos = _check_positional_args(p_outside, window_fraction, window_position, infeasible)
    keep = _positional_matrix(seqs, eps, p1, f, pos, infeasible)
    _validity_or_raise(alt, keep[seqs != 0] if (seqs != 0).any() else np.ones(1), allow_invalid)
    return _apply(seqs, alt, 1.0 - keep, rng)


# ----------------------------------------------------------------------------- guarantee
def _validity(alt: np.ndarray, keeps: np.ndarray) -> list[str]:
    problems = []
    kmin = float(np.min(keeps))
    if kmin < 0.5:
        problems.append(f"a keep probability is {kmin:.4g} < 1/2 (Thm 3.1's proof needs replacement probability "
                        "p < 1/2; guessing 'replaced' then beats the bound)")
    counts = preimage_counts(alt)[1:]
    if not (counts == 1).all():
        problems.append(f"the alternative map is not injective ({int((counts == 0).sum())} of {len(counts)} items "
                        f"are nobody's alternative, up to {int(counts.max())} items share one alternative; "
                        "Thm 3.1 assumes an injective a)")
    return problems


def _validity_or_raise(alt: np.ndarray, keeps: np.ndarray, allow_invalid: bool) -> list[str]:
    problems = _validity(alt, keeps)
    if problems and not allow_invalid:
        raise ParameterError("outside Theorem 3.1's validity: " + "; ".join(problems) +
                             ". Use a larger epsilon, an injective map (alternatives.injective_map / paired_map), "
                             "or pass allow_invalid=True to run it and report the true posterior odds")
    return problems


def _odds(log_m: float) -> float:
    """M / (1 - M) for M = exp(log_m) <= 1, without cancellation."""
    if log_m >= 0.0:
        return math.inf
    return 1.0 / math.expm1(-log_m)


def _cell_log_best(seqs: np.ndarray, keep: np.ndarray, alt: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per cell: log of the largest posterior of the best guess over the two outputs v, a(v)."""
    nz = seqs != 0
    v = seqs
    w = alt[seqs]
    k = keep
    best = np.maximum(k, 1.0 - k)

    def post(o):
        c = counts[o]
        with np.errstate(divide="ignore", invalid="ignore"):
            p = best / (k + c * (1.0 - k))
        return np.where(c > 0, p, 1.0)

    cell = np.maximum(post(v), post(w))
    with np.errstate(divide="ignore"):
        return np.where(nz, np.log(np.minimum(cell, 1.0)), 0.0)


def _uniform_log_best(n: np.ndarray, eps: float) -> np.ndarray:
    """n log max(k_n, 1 - k_n) for the uniform keep (injective map), exactly."""
    lt = _log_target(eps)
    log_k = lt / n
    log_r = np.log(-np.expm1(log_k))
    return n * np.maximum(log_k, log_r)


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


def _scope(sequences, lengths, max_len, min_len, m) -> tuple[str, np.ndarray | None, np.ndarray]:
    given = [x is not None for x in (sequences, lengths, max_len)]
    if sum(given) != 1:
        raise ParameterError("pass exactly one of sequences= (the data), lengths= (items per user) or max_len= "
                             "(worst case over lengths min_len..max_len)")
    if sequences is not None:
        seqs = check_id_matrix(sequences, m, unique_rows=False)
        n = sequence_lengths(seqs)
        if not (n > 0).any():
            raise ParameterError("sequences holds no item (all padding); nothing is released")
        return "data", seqs, n
    if lengths is not None:
        n = _check_lengths(lengths)
        n = np.unique(n[n > 0])
        if n.size == 0:
            raise ParameterError("lengths are all 0; nothing is released")
        return "lengths", None, n
    top = check_positive_int(max_len, "max_len")
    low = check_positive_int(min_len, "min_len")
    if low > top:
        raise ParameterError(f"min_len={low} exceeds max_len={top}")
    return "lengths", None, np.arange(low, top + 1, dtype=np.int64)


def _assemble(*, mechanism: str, eps: float, alt: np.ndarray, scope: str, log_best: np.ndarray,
              n: np.ndarray, keeps: np.ndarray, worst_user_keeps: np.ndarray, allow_invalid: bool,
              extra_params: dict, extra_notes: tuple[str, ...]) -> Guarantee:
    stats = map_statistics(alt)
    problems = _validity_or_raise(alt, keeps, allow_invalid)
    injective = stats["injective"]
    if injective or scope == "data":
        u = int(np.argmax(log_best))
        odds = _odds(float(log_best[u]))
        worst_len = int(n[u])
    else:
        odds, worst_len = math.inf, None
    params = {"epsilon": eps, "n_items": len(alt) - 1, "min_len": int(n[n > 0].min()), "max_len": int(n.max()),
              "scope": "users in the data" if scope == "data" else "history lengths",
              "worst_case_length": worst_len, "min_keep": float(np.min(keeps)), "max_keep": float(np.max(keeps)),
              **{f"map_{k}": v for k, v in stats.items()}, **extra_params}
    notes = [
        "epsilon here bounds the posterior odds P(guess = whole history | output) / P(guess != history | output) "
        "under a uniform prior on V^n; it is not a differential-privacy epsilon and does not compose like one.",
        "Per item, a released item w discloses that the original was in {w} U a^-1(w)"
        + (" (the pair {w, a^-1(w)}; P(original = w | w) = k under the uniform prior)." if injective else
           f"; {stats['outside_image_fraction']:.1%} of items are nobody's alternative and are revealed with "
           "certainty whenever kept; an item with c preimages is the original with probability k/(k + c(1-k))."),
        "The bound holds for the uniform prior only: any other prior does better, e.g. knowing that a history "
        "has no repeated item (rating data) gives odds k^2/(1-k)^2 = 5.83 instead of 1 for n = 2, eps = 1 when "
        "a(x) = y, a(y) = x and the output is (x, y).",
        "History lengths (the number of non-padding items per user) and positions are published unchanged.",
    ]
    if not injective and scope != "data":
        notes.append("Without data the worst case is unbounded: an output made of items outside a's image is "
                     "decoded with certainty; pass sequences= for the worst case over these users' outputs.")
    notes.extend(extra_notes)
    claimed = None
    if problems:
        claimed = Claim(eps, 0.0, "Mu & Lim, Theorem 3.1", "; ".join(problems) + f": the exact worst-case posterior "
                        f"odds are {odds:.4g}")
    involution = is_involution(alt)
    item, user = _pair_ldp(keeps, involution, stats, {"epsilon": eps}, worst_user_keeps)
    return Guarantee(
        mechanism=mechanism, definition=DEFINITION, epsilon=odds, delta=0.0,
        unit="one user's whole history (posterior odds of recovering all n items exactly)",
        parameters=params, valid=not problems, validity="; ".join(problems), claimed=claimed,
        accounting="exact posterior under a uniform prior on V^n: M/(1-M) with M = prod_t max posterior of "
                   "position t (Thm 3.1 for an injective map and keep >= 1/2; verified by exhaustive enumeration)",
        event=None, relation=None, notes=tuple(notes),
    ).with_related(item, user)


def guarantee(epsilon: float, alt_map, *, sequences: np.ndarray | None = None, lengths=None,
              max_len: int | None = None, min_len: int = 1, allow_invalid: bool = False) -> Guarantee:
    """Thm 3.1's posterior-odds bound for :func:`perturb`, the true value, and per-item LDP.

    Worst case over the users in ``sequences`` (the data), over the given ``lengths``, or over
    every length ``min_len..max_len``. ``epsilon`` of the result is the exact worst-case
    posterior odds of the best guess of a whole history under a uniform prior (= eps when
    Theorem 3.1 applies). Raises ParameterError outside the theorem's validity unless
    ``allow_invalid=True`` (then ``valid=False`` and the paper's claim is attached).
    ``related``: per-item epsilon-LDP between v and a(v) (finite only for an involution) and
    its composition over the worst user's history.
    """
    eps = check_epsilon(epsilon)
    alt = check_alternative_map(alt_map)
    scope, seqs, n = _scope(sequences, lengths, max_len, min_len, len(alt) - 1)
    counts = preimage_counts(alt)
    if scope == "data":
        keep_rows = keep_probabilities(n, eps)
        keep = np.where(seqs != 0, keep_rows[:, None], 1.0)
        log_best = _cell_log_best(seqs, keep, alt, counts).sum(axis=1)
        keeps = keep_rows[n > 0]
    else:
        log_best = _uniform_log_best(n, eps)
        keeps = keep_probabilities(n, eps)
    lens = np.unique(n[n > 0])                     # the user-level composition is worst where n |logit k_n| is
    k_lens = keep_probabilities(lens, eps)
    u = int(np.argmax(lens * _abs_logit(k_lens)))
    worst_user_keeps = np.full(int(lens[u]), k_lens[u])
    return _assemble(mechanism=MECHANISM, eps=eps, alt=alt, scope=scope, log_best=log_best, n=n, keeps=keeps,
                     worst_user_keeps=worst_user_keeps, allow_invalid=allow_invalid, extra_params={},
                     extra_notes=())


def positional_guarantee(epsilon: float, alt_map, *, p_outside: float = 0.1, window_fraction: float = 0.2,
                         window_position: float = 0.0, infeasible: Infeasible = "error",
                         sequences: np.ndarray | None = None, lengths=None, max_len: int | None = None,
                         min_len: int = 1, allow_invalid: bool = False) -> Guarantee:
    """The same report for :func:`perturb_positional` (RQ2); arguments as in :func:`guarantee`."""
    eps = check_epsilon(epsilon)
    alt = check_alternative_map(alt_map)
    p1, f, pos = _check_positional_args(p_outside, window_fraction, window_position, infeasible)
    scope, seqs, n = _scope(sequences, lengths, max_len, min_len, len(alt) - 1)
    counts = preimage_counts(alt)
    if scope == "data":
        keep = _positional_matrix(seqs, eps, p1, f, pos, infeasible)
        log_best = _cell_log_best(seqs, keep, alt, counts).sum(axis=1)
        keeps = keep[seqs != 0]
        score = np.where(seqs != 0, _abs_logit(keep), 0.0).sum(axis=1)
        u = int(np.argmax(score))
        worst_user_keeps = keep[u][seqs[u] != 0]
        _, _, _, _, uniform = _positional_rows(n[n > 0], eps, p1, f, pos, infeasible)
    else:
        dn, _, k_out, k_in, uniform = _positional_rows(n, eps, p1, f, pos, infeasible)
        best_in = np.log(np.maximum(k_in, 1 - k_in))
        best_out = np.log(np.maximum(k_out, 1 - k_out))
        log_best = np.where(uniform, _uniform_log_best(n, eps), dn * best_in + (n - dn) * best_out)
        keeps = np.concatenate([k_in, k_out[~uniform]])
        score = np.where(uniform, n * _abs_logit(k_in), dn * _abs_logit(k_in) + (n - dn) * _abs_logit(k_out))
        u = int(np.argmax(score))
        worst_user_keeps = (np.full(int(n[u]), k_in[u]) if uniform[u] else
                            np.concatenate([np.full(int(dn[u]), k_in[u]), np.full(int(n[u] - dn[u]), k_out[u])]))
    extra = {"p_outside": p1, "window_fraction": f, "window_position": pos, "infeasible": infeasible,
             "uniform_fallback_users": int(uniform.sum())}
    notes = ("RQ2 variant: replacement probability p1 outside and p2 inside a window of dn = round(f n) consecutive "
             "items with (1-p1)^(n-dn) (1-p2)^dn = eps/(1+eps); users with p1 >= 1-(eps/(1+eps))^(1/n) "
             + ("were refused" if infeasible == "error" else "got the uniform keep probability") + ".",)
    return _assemble(mechanism=MECHANISM + "-positional", eps=eps, alt=alt, scope=scope, log_best=log_best, n=n,
                     keeps=keeps, worst_user_keeps=worst_user_keeps, allow_invalid=allow_invalid, extra_params=extra,
                     extra_notes=notes)


# ----------------------------------------------------------------------------- empirical audit
def audit_case(epsilon: float = 1.0, n: int = 10) -> dict:
    """Two histories of n items differing in one item, v = 1 vs its partner a(v) = 2.

    Items 1..2n are paired (a = (1 2)(3 4)...), an involution, so randomised response between
    v and a(v) is ln(k/(1-k))-LDP with k = (eps/(1+eps))^(1/n); the key is the released item at
    the differing position (the most distinguishing statistic: the rest of the row has the
    same law under both histories). ``claimed_epsilon`` is the per-item epsilon from
    :func:`guarantee`.
    """
    eps = check_epsilon(epsilon)
    n = check_positive_int(n, "n")
    m = 2 * n
    alt = np.zeros(m + 1, dtype=np.int64)
    alt[1::2] = np.arange(2, m + 1, 2)
    alt[2::2] = np.arange(1, m, 2)
    row_a = np.arange(1, m, 2, dtype=np.int64)
    row_b = row_a.copy()
    row_b[0] = 2
    g = guarantee(eps, alt, lengths=[n])
    claimed = g.related[0].epsilon

    def sampler(row):
        return lambda rng, size: perturb(np.tile(row, (size, 1)), alt, eps, rng)[:, 0].tolist()

    return {"name": f"mu-lim-rr(eps={eps:g}, n={n})", "claimed_epsilon": claimed, "delta": 0.0,
            "sample_a": sampler(row_a), "sample_b": sampler(row_b), "kind": "discrete",
            "key_or_statistic": lambda x: int(x)}
