"""How much sequence signal the order of equal-time items carries on ML-1M (recbole protocol, unmasked).

A bigram model (count of train transitions last item -> next, ties broken by popularity) ranks each
user's held-out item after the last history item, under exact times and under RecBole's float32 order.
Needs no RecBole: ``.venv/bin/python benchmarks/recbole/order_signal.py``."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from privrec.experiments.sequential import PROTOCOLS, prepare


def bigram_ndcg(precision: str, k: int = 10) -> tuple[float, float]:
    """Test HR@k and NDCG@k of the bigram model under ``precision``."""
    p = PROTOCOLS["recbole"]
    inter, split = prepare("ml-1m", p["preprocessing"], p["split"], precision)
    n = inter.n_items + 1
    tr = split.train
    nxt = np.ones(len(tr.items), dtype=bool)
    nxt[tr.indptr[1:][tr.lengths > 0] - 1] = False              # a row's last item has no successor
    src = np.flatnonzero(nxt)
    counts = sp.csr_matrix((np.ones(len(src)), (tr.items[src], tr.items[src + 1])), shape=(n, n))
    pop = np.bincount(tr.items, minlength=n) * 1e-6               # tie-break: popularity
    hist, tgt = split.history("test"), split.targets("test")
    users = split.eval_users("test")
    last = hist.items[hist.indptr[users + 1] - 1]
    target = tgt.items[tgt.indptr[users]]
    scores = counts[last].toarray() + pop[None]
    scores[:, 0] = -np.inf
    rank = (scores > scores[np.arange(len(users)), target][:, None]).sum(1)
    hit = rank < k
    return float(hit.mean()), float(np.where(hit, 1 / np.log2(rank + 2), 0).mean())


if __name__ == "__main__":
    for precision in ("exact", "float32"):
        hr, ndcg = bigram_ndcg(precision)
        print(f"{precision:7s} order: bigram test HR@10 {hr:.4f}  NDCG@10 {ndcg:.4f}")
