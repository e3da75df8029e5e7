"""Top-K ranking metrics as pure, typed functions of target positions.

Input convention (shared by every metric): ``positions`` is an integer array of shape
(users, targets) holding the 0-based rank of each relevant item in the user's ranked list,
with ``-1`` for padding (users with fewer targets). ``n_relevant`` (users,) counts the real
targets. Each function returns one value per user; average them yourself or use
:func:`compute`. Definitions follow RecBole:

* HR@K     = 1 if any target is in the top K.
* Recall@K = (#targets in top K) / n_relevant.
* NDCG@K   = sum_{targets in top K} 1/log2(pos+2)  /  sum_{r < min(n_relevant, K)} 1/log2(r+2).
* MRR@K    = 1/(pos+1) of the best-ranked target if it is in the top K, else 0.
"""

from __future__ import annotations

import numpy as np

METRICS = ("hr", "recall", "ndcg", "mrr")


def _in_top(positions: np.ndarray, k: int) -> np.ndarray:
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}")
    return (positions >= 0) & (positions < k)


def hit_rate(positions: np.ndarray, k: int) -> np.ndarray:
    return _in_top(positions, k).any(axis=1).astype(np.float64)


def recall(positions: np.ndarray, n_relevant: np.ndarray, k: int) -> np.ndarray:
    hits = _in_top(positions, k).sum(axis=1)
    return hits / np.maximum(n_relevant, 1)


def ndcg(positions: np.ndarray, n_relevant: np.ndarray, k: int) -> np.ndarray:
    top = _in_top(positions, k)
    gains = np.where(top, 1.0 / np.log2(np.where(top, positions, 0) + 2.0), 0.0).sum(axis=1)
    discounts = np.concatenate([[0.0], np.cumsum(1.0 / np.log2(np.arange(k) + 2.0))])
    ideal = discounts[np.minimum(n_relevant, k)]
    return np.divide(gains, ideal, out=np.zeros_like(gains), where=ideal > 0)


def mrr(positions: np.ndarray, k: int) -> np.ndarray:
    top = _in_top(positions, k)
    best = np.where(top, positions, np.iinfo(np.int64).max).min(axis=1)
    return np.where(best < k, 1.0 / (best + 1.0), 0.0)


def per_user(positions: np.ndarray, n_relevant: np.ndarray, ks: tuple[int, ...] = (5, 10, 20),
             metrics: tuple[str, ...] = METRICS) -> dict[str, np.ndarray]:
    """All requested metrics, per user: {"ndcg@10": array, ...}."""
    positions = np.asarray(positions, dtype=np.int64)
    if positions.ndim == 1:
        positions = positions[:, None]
    n_relevant = np.asarray(n_relevant, dtype=np.int64)
    out: dict[str, np.ndarray] = {}
    for k in ks:
        for m in metrics:
            if m == "hr":
                out[f"hr@{k}"] = hit_rate(positions, k)
            elif m == "recall":
                out[f"recall@{k}"] = recall(positions, n_relevant, k)
            elif m == "ndcg":
                out[f"ndcg@{k}"] = ndcg(positions, n_relevant, k)
            elif m == "mrr":
                out[f"mrr@{k}"] = mrr(positions, k)
            else:
                raise ValueError(f"unknown metric {m!r}; use one of {METRICS}")
    return out


def compute(positions: np.ndarray, n_relevant: np.ndarray, ks: tuple[int, ...] = (5, 10, 20),
            metrics: tuple[str, ...] = METRICS) -> dict[str, float]:
    """Means over users of :func:`per_user`."""
    return {name: float(v.mean()) if len(v) else float("nan")
            for name, v in per_user(positions, n_relevant, ks, metrics).items()}
