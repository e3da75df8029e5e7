"""The evaluator's positions and metrics against an independent, obviously-correct implementation on random
score matrices full of ties: each user's items fully sorted (ties: non-targets before targets, targets in
column order: the tie rule of :func:`privrec.evaluation.evaluator._positions`), then RecBole's definitions
of HR, Recall, NDCG and MRR read off the 0/1 relevance list by plain loops."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from privrec.evaluation.evaluator import _positions
from privrec.evaluation.metrics import compute


def _reference(scores: np.ndarray, targets: list[list[int]], ks: tuple[int, ...]) -> dict[str, float]:
    out: dict[str, list[float]] = {}
    for row, tgt in zip(scores, targets):
        order = sorted(range(len(row)), key=lambda i: (-row[i], i in tgt, tgt.index(i) if i in tgt else 0))
        rel = [1 if i in tgt else 0 for i in order]
        for k in ks:
            top = rel[:k]
            idcg = sum(1 / math.log2(r + 2) for r in range(min(len(tgt), k)))
            first = next((r for r, x in enumerate(top) if x), None)
            out.setdefault(f"hr@{k}", []).append(float(any(top)))
            out.setdefault(f"recall@{k}", []).append(sum(top) / len(tgt))
            out.setdefault(f"ndcg@{k}", []).append(sum(x / math.log2(r + 2) for r, x in enumerate(top)) / idcg)
            out.setdefault(f"mrr@{k}", []).append(0.0 if first is None else 1 / (first + 1))
    return {name: float(np.mean(v)) for name, v in out.items()}


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("max_targets", [1, 4, 12])          # 12 > 8 takes the sort path of _positions
def test_metrics_match_an_independent_implementation_under_ties(seed, max_targets):
    rng = np.random.default_rng(seed)
    n_users, n_items, ks = 40, 25, (1, 3, 5, 10)
    scores = rng.integers(0, 4, size=(n_users, n_items)).astype(np.float32)     # four levels: ties everywhere
    targets = [list(rng.choice(n_items, size=int(rng.integers(1, max_targets + 1)), replace=False))
               for _ in range(n_users)]
    width = max(len(t) for t in targets)
    idx = np.zeros((n_users, width), dtype=np.int64)
    valid = np.zeros((n_users, width), dtype=bool)
    for u, t in enumerate(targets):
        idx[u, :len(t)], valid[u, :len(t)] = t, True
    pos = _positions(torch.from_numpy(scores), torch.from_numpy(idx), torch.from_numpy(valid)).numpy()
    ours = compute(pos, np.array([len(t) for t in targets]), ks)
    want = _reference(scores, targets, ks)
    assert ours.keys() == want.keys()
    for name in want:
        assert ours[name] == pytest.approx(want[name], abs=1e-12), name


def test_a_constant_model_gets_no_credit():
    scores = torch.zeros(3, 10)
    pos = _positions(scores, torch.tensor([[2], [5], [9]]), torch.ones(3, 1, dtype=torch.bool)).numpy()
    assert compute(pos, np.ones(3, dtype=int), (1, 5))["hr@5"] == 0.0
