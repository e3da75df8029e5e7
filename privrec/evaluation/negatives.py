"""Negative sampling for sampled-ranking evaluation (and for training losses that need it)."""

from __future__ import annotations

import numpy as np

from privrec.data.sequences import Sequences
from privrec.errors import ParameterError

SAMPLERS = ("uniform", "popularity")


def popularity(seqs: Sequences, n_items: int) -> np.ndarray:
    """Interaction counts per item code (index 0, padding, is 0)."""
    counts = np.bincount(seqs.items, minlength=n_items + 1).astype(np.float64)
    counts[0] = 0.0
    return counts


def sample_negatives(
    rng: np.random.Generator,
    users: np.ndarray,
    exclude: Sequences,
    n_items: int,
    n: int,
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """``n`` distinct items per user, none in the user's row of ``exclude``: shape (len(users), n).

    ``weights`` (length ``n_items+1``) makes the draw proportional to them (popularity
    sampling); None is uniform over ``1..n_items``. Vectorised rejection sampling.
    """
    users = np.asarray(users, dtype=np.int64)
    p = np.ones(n_items + 1) if weights is None else np.asarray(weights, dtype=np.float64).copy()
    p[0] = 0.0
    if p.sum() <= 0:
        raise ParameterError("negative-sampling weights are all zero")
    p /= p.sum()
    support = np.count_nonzero(p)
    free = support - exclude.lengths[users]      # upper bound on eligible items (exact if weights > 0)
    if len(users) and free.min() < n:
        u = int(users[np.argmin(free)])
        raise ParameterError(f"user code {u} has only {int(free.min())} items left to sample {n} negatives from; "
                             "lower the number of negatives")
    key_base = np.int64(n_items + 1)
    excl_keys = np.sort(exclude.row_ids().astype(np.int64) * key_base + exclude.items)
    out = np.zeros((len(users), n), dtype=np.int32)
    todo = np.arange(len(users))
    cdf = np.cumsum(p)
    draws = np.zeros((len(users), 0), dtype=np.int64)
    block = 2 * n
    while len(todo):
        # extend each unfinished row's i.i.d. stream (never restart it: restarting would bias the
        # draw towards items found quickly); take its first n distinct eligible items
        new = np.minimum(np.searchsorted(cdf, rng.random((len(todo), block)), side="right"), n_items)
        draws = np.concatenate([draws, new], axis=1)
        keys = users[todo, None] * key_base + draws
        if len(excl_keys):
            pos = np.searchsorted(excl_keys, keys)
            ok = ~((pos < len(excl_keys)) & (excl_keys[np.minimum(pos, len(excl_keys) - 1)] == keys))
        else:
            ok = np.ones(keys.shape, dtype=bool)
        order = np.argsort(draws, axis=1, kind="stable")
        ranked = np.take_along_axis(draws, order, 1)
        repeat = np.zeros_like(ok)
        np.put_along_axis(repeat, order[:, 1:], ranked[:, 1:] == ranked[:, :-1], 1)   # later copies only
        ok &= ~repeat
        done = ok.sum(1) >= n
        take = ok & (np.cumsum(ok, axis=1) <= n) & done[:, None]
        out[todo[done]] = draws[take].reshape(-1, n)
        todo, draws = todo[~done], draws[~done]
        block = draws.shape[1]
    return out
