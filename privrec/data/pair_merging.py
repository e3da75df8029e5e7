"""Frequency-based item-pair merging (Mu & Lim, CIKM'25, §3.2, Eq. 8), byte-pair-encoding style.

Starting from the item vocabulary V = {1..n_items}, repeatedly take the most frequent adjacent
pair of tokens (x, y) in the training sequences, add the composite token xy to the vocabulary
(V' <- V U {xy}, Eq. 8) and replace every occurrence of x y (left to right, non-overlapping) by
it, until the vocabulary reaches ``vocab_size`` or no pair occurs ``min_count`` times. Pairs never
span two users. Ties between equally frequent pairs go to the smaller (x, y) in (x, y) order, so
learning is deterministic.

Cost: one pass to count the pairs, then each merge touches only the occurrences of its pair and
their neighbours (a linked list over positions, a per-pair occurrence list and a lazy max-heap,
compiled with numba): O(N log N + total occurrences merged), N = number of positions. On ML-1M
(~1M positions) 10,000 merges take about a second (``benchmarks/bench_pair_merging.py``).

Token ids: 0 = padding, 1..n_items = items, n_items + 1 + r = the r-th merge. A token expands
to the items it covers (:meth:`PairMerges.expand`); :meth:`PairMerges.encode` segments new
sequences by applying the learned merges in the order they were learned (lowest rank first),
which reproduces the segmentation of the training sequences exactly.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from functools import cached_property

import numba
import numpy as np
from numba import types
from numba.typed import Dict, List

from privrec.data.sequences import Sequences
from privrec.errors import ParameterError

_INT_LIST = types.ListType(types.int64)


@numba.njit(cache=True)
def _learn(tok, seq_end, n_items, n_merges, min_count):                # pragma: no cover - compiled
    n = tok.shape[0]
    vmax = np.int64(n_items + 1 + n_merges)
    nxt = np.empty(n, np.int64)
    prv = np.empty(n, np.int64)
    for i in range(n):
        nxt[i] = -1 if seq_end[i] else i + 1
        prv[i] = -1 if (i == 0 or seq_end[i - 1]) else i - 1
    alive = np.ones(n, np.bool_)
    counts = Dict.empty(key_type=types.int64, value_type=types.int64)
    where = Dict.empty(key_type=types.int64, value_type=_INT_LIST)
    for i in range(n):
        j = nxt[i]
        if j >= 0:
            key = tok[i] * vmax + tok[j]
            if key in counts:
                counts[key] += 1
                where[key].append(i)
            else:
                counts[key] = 1
                lst = List.empty_list(types.int64)
                lst.append(i)
                where[key] = lst
    heap = [(-np.int64(1), np.int64(0))]
    heap.pop()
    for key, c in counts.items():
        heap.append((-c, key))
    heapq.heapify(heap)
    left = np.zeros(n_merges, np.int64)
    right = np.zeros(n_merges, np.int64)
    freq = np.zeros(n_merges, np.int64)
    done = 0
    while done < n_merges and len(heap) > 0:
        negc, key = heapq.heappop(heap)
        cur = counts.get(key, 0)
        if -negc != cur:                       # stale entry: re-queue with the current count
            if cur > 0:
                heapq.heappush(heap, (-cur, key))
            continue
        if cur < min_count:
            break
        a = key // vmax
        b = key % vmax
        c = np.int64(n_items + 1 + done)
        left[done], right[done], freq[done] = a, b, cur
        occ = where.pop(key)
        positions = np.empty(len(occ), np.int64)
        for i in range(len(occ)):
            positions[i] = occ[i]
        positions.sort()
        for p in positions:
            if not alive[p] or tok[p] != a:
                continue
            q = nxt[p]
            if q < 0 or tok[q] != b:
                continue
            l = prv[p]
            r = nxt[q]
            if l >= 0:
                k_old = tok[l] * vmax + a
                counts[k_old] = counts.get(k_old, 0) - 1
                k_new = tok[l] * vmax + c
                counts[k_new] = counts.get(k_new, 0) + 1
                if k_new not in where:
                    where[k_new] = List.empty_list(types.int64)
                where[k_new].append(l)
                heapq.heappush(heap, (-counts[k_new], k_new))
            if r >= 0:
                k_old = b * vmax + tok[r]
                counts[k_old] = counts.get(k_old, 0) - 1
                k_new = c * vmax + tok[r]
                counts[k_new] = counts.get(k_new, 0) + 1
                if k_new not in where:
                    where[k_new] = List.empty_list(types.int64)
                where[k_new].append(p)
                heapq.heappush(heap, (-counts[k_new], k_new))
            counts[key] = counts[key] - 1
            tok[p] = c
            alive[q] = False
            nxt[p] = r
            if r >= 0:
                prv[r] = p
        counts.pop(key)
        done += 1
    return left[:done], right[:done], freq[:done], alive


@numba.njit(cache=True)
def _encode(items, indptr, rank_keys, rank_vals, vmax, n_items, out, out_ptr):   # pragma: no cover - compiled
    rank = Dict.empty(key_type=types.int64, value_type=types.int64)
    for i in range(rank_keys.shape[0]):
        rank[rank_keys[i]] = rank_vals[i]
    big = np.int64(1) << 62
    for s in range(indptr.shape[0] - 1):
        buf = items[indptr[s]:indptr[s + 1]].astype(np.int64).copy()
        m = buf.shape[0]
        while m > 1:
            best, at = big, -1
            for i in range(m - 1):             # the lowest-rank pair, leftmost among equals
                r = rank.get(buf[i] * vmax + buf[i + 1], big)
                if r < best:
                    best, at = r, i
            if at < 0:
                break
            a, b = buf[at], buf[at + 1]
            w = 0
            i = 0
            while i < m:                        # merge every (a, b) of that rank, left to right
                if i < m - 1 and buf[i] == a and buf[i + 1] == b:
                    buf[w] = n_items + 1 + best
                    i += 2
                else:
                    buf[w] = buf[i]
                    i += 1
                w += 1
            m = w
        out[out_ptr[s]:out_ptr[s] + m] = buf[:m]
        out_ptr[s + 1] = out_ptr[s] + m


@dataclass(frozen=True, eq=False)
class PairMerges:
    """Learned merges: merge r joins tokens ``left[r]`` and ``right[r]`` into token n_items + 1 + r,
    seen ``count[r]`` times when it was learned."""

    n_items: int
    left: np.ndarray
    right: np.ndarray
    count: np.ndarray

    @property
    def vocab_size(self) -> int:
        """Items plus composite tokens (padding not counted)."""
        return self.n_items + len(self.left)

    def expand(self, token: int) -> tuple[int, ...]:
        """The items a token covers, oldest first."""
        if not 0 < token <= self.vocab_size:
            raise ParameterError(f"token {token} is outside 1..{self.vocab_size}")
        return tuple(int(t) for t in self.expansion_table[1][token])

    @cached_property
    def expansion_table(self) -> tuple[np.ndarray, list[np.ndarray]]:
        """(first item, items) per token id 0..vocab_size; entry 0 (padding) is empty. Built once."""
        seqs: list[np.ndarray] = [np.zeros(0, np.int64)] + [np.array([i], np.int64) for i in range(1, self.n_items + 1)]
        for a, b in zip(self.left, self.right):
            seqs.append(np.concatenate([seqs[a], seqs[b]]))
        first = np.array([s[0] if len(s) else 0 for s in seqs], dtype=np.int64)
        return first, seqs

    def first_items(self) -> np.ndarray:
        """Per token id, the first (oldest) item it covers: the next item when the token is predicted next."""
        return self.expansion_table[0]

    def encode(self, seqs: Sequences) -> Sequences:
        """Segment sequences of items into tokens with the learned merges (lowest rank first)."""
        if len(seqs.items) and (seqs.items.min() < 1 or seqs.items.max() > self.n_items):
            raise ParameterError(f"sequences hold ids outside the item range 1..{self.n_items}")
        vmax = np.int64(self.n_items + 1 + len(self.left))
        keys = self.left.astype(np.int64) * vmax + self.right.astype(np.int64)
        out = np.zeros(len(seqs.items), np.int64)
        ptr = np.zeros(len(seqs.indptr), np.int64)
        _encode(seqs.items, seqs.indptr.astype(np.int64), keys, np.arange(len(keys), dtype=np.int64), vmax,
                np.int64(self.n_items), out, ptr)
        return Sequences(ptr, out[:ptr[-1]].astype(np.int32))


def learn_merges(seqs: Sequences, n_items: int, vocab_size: int, min_count: int = 2) -> PairMerges:
    """Learn merges on ``seqs`` (items 1..n_items) until the vocabulary holds ``vocab_size`` tokens
    or no adjacent pair occurs ``min_count`` times (then fewer merges are returned)."""
    if vocab_size < n_items:
        raise ParameterError(f"vocab_size {vocab_size} is smaller than the {n_items} items it must contain; "
                             f"use vocab_size >= {n_items} (= n_items: no merges)")
    if min_count < 2:
        raise ParameterError(f"min_count must be >= 2 (a pair seen once is not a pattern), got {min_count}")
    items = np.asarray(seqs.items, dtype=np.int64)
    if len(items) and (items.min() < 1 or items.max() > n_items):
        raise ParameterError(f"sequences hold ids outside the item range 1..{n_items}")
    seq_end = np.zeros(len(items), dtype=np.bool_)
    ends = seqs.indptr[1:][seqs.lengths > 0] - 1
    seq_end[ends] = True
    n_merges = vocab_size - n_items
    if n_merges == 0 or len(items) < 2:
        empty = np.zeros(0, np.int64)
        return PairMerges(n_items, empty, empty, empty)
    left, right, freq, _ = _learn(items.copy(), seq_end, np.int64(n_items), np.int64(n_merges), np.int64(min_count))
    return PairMerges(n_items, left, right, freq)
