"""Randomised response with semantic alternatives (Mu & Lim, CIKM'25: Alg. 1, Eq. 6, Thm 3.1, RQ2).

Mechanism (Alg. 1 lines 11-18, Eq. 6). Every item v has one fixed alternative a(v) != v
(:mod:`privrec.privacy.alternatives`). A user with n items keeps each item with probability

    k_n = (eps / (1 + eps)) ** (1 / n)          (Alg. 1 line 13; the product over n items is eps/(1+eps))

and otherwise publishes a(v); the draws are independent. Here n is the user's own number
of non-padding items. :func:`perturb` applies it to a front-padded id matrix (0 = padding,
never perturbed) in O(n L), fully vectorised; the published matrix keeps each row's length.

The keep probabilities, including the position-weighted variant of RQ2 (p1 outside, p2 inside
a window of dn items, same product eps/(1+eps)), and the per-item epsilon-LDP they give live in
:mod:`privrec.privacy.rr_keep`, whose public names are importable from here too;
:func:`perturb_positional` applies the RQ2 ones.

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

Per item, an output w discloses that the original was in {w} U a^-1(w); randomised response
between v and a(v) is ln(k/(1-k))-LDP only when a(a(v)) = v (:mod:`privrec.privacy.rr_keep`).
:func:`guarantee` reports that value and its composition over the worst user's history as
related guarantees.
"""

from __future__ import annotations

import math

import numpy as np

from privrec.errors import ParameterError
from privrec.privacy.alternatives import check_alternative_map, is_involution, map_statistics, preimage_counts
from privrec.privacy.guarantee import Claim, Guarantee
from privrec.privacy.rr_keep import (
    MECHANISM,
    Infeasible,
    _abs_logit,
    _check_lengths,
    _check_positional_args,
    _log_target,
    _pair_ldp,
    _positional_matrix,
    _positional_rows,
    keep_probabilities,
    replace_probabilities,
    sequence_lengths,
)
from privrec.privacy.rr_keep import has_window as has_window  # re-export
from privrec.privacy.rr_keep import positional_keep as positional_keep  # re-export
from privrec.privacy.rr_keep import positional_keep_matrix as positional_keep_matrix  # re-export
from privrec.privacy.validate import check_epsilon, check_id_matrix, check_positive_int

DEFINITION = "Bayesian posterior-odds bound (uniform prior)"
CHUNK_ROWS = 65536          # rows per random-draw block (bounds memory; the stream layout is fixed)


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
             "items with (1-p1)^(n-dn) (1-p2)^dn = eps/(1+eps); users with p1 >= 1-(eps/(1+eps))^(1/n) (no p2 > p1) "
             "or whose p2 would exceed 1/2 (RQ2's range) "
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
