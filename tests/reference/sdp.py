"""Literal, slow reference implementations. Tests compare the fast paths against these;
benchmarks time them. Never used on real data paths."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np


# ---------------------------------------------------------------- PriCDSR mechanism M
def sdp_step_probs(row: tuple[int, ...], prefix: tuple[int, ...], m: int, eps: float) -> dict[int, float]:
    """Eq. 1: distribution of the candidate at position len(prefix), given the output prefix."""
    l = len(prefix)
    cur = row[l]
    banned = {p for p in prefix if p != 0}
    z = math.exp(eps) + m - len(banned)
    return {i: (math.exp(eps) if i == cur else 1.0) / z for i in range(m + 1) if i not in banned}


def sdp_apply(row: list[int], l: int, i: int) -> None:
    """Fig. 2 lines 4-8 at position l with candidate i (in place)."""
    cur = row[l]
    if i == cur:
        return
    if i != 0 and i in row[l + 1:]:
        j = row.index(i, l + 1)
        row[j] = cur
    row[l] = i


def sdp_exact_distribution(row: tuple[int, ...], m: int, eps: float) -> dict[tuple[int, ...], float]:
    """Every output row of M with its exact probability (enumerates all draw paths)."""
    out: dict[tuple[int, ...], float] = defaultdict(float)

    def rec(work: list[int], l: int, prob: float) -> None:
        if l == len(work):
            out[tuple(work)] += prob
            return
        for i, p in sdp_step_probs(tuple(work), tuple(work[:l]), m, eps).items():
            nxt = list(work)
            sdp_apply(nxt, l, i)
            rec(nxt, l + 1, prob * p)

    rec(list(row), 0, 1.0)
    return dict(out)


def sdp_authors_style(seqs: np.ndarray, m: int, eps: float, rng: np.random.Generator) -> np.ndarray:
    """What the authors' code does: per position, ``choice`` over all m+1 weights (O(n L m))."""
    out = np.array(seqs, dtype=np.int64, copy=True)
    ids = np.arange(m + 1)
    for r in range(out.shape[0]):
        row = out[r].tolist()
        for l in range(len(row)):
            w = np.ones(m + 1)
            for p in row[:l]:
                if p != 0:
                    w[p] = 0.0
            w[row[l]] = math.exp(eps)
            i = int(rng.choice(ids, p=w / w.sum()))
            sdp_apply(row, l, i)
        out[r] = row
    return out
