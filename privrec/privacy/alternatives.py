"""Semantic alternatives for randomised response (Mu & Lim, CIKM'25, Algorithm 1 lines 1-10).

Every item v gets one fixed alternative a(v) != v, chosen from item embeddings h(v) in R^d:

* :func:`nearest_neighbour_map` - the paper's choice: a(v) = the nearest *other* item in
  Euclidean distance (Alg. 1 lines 1-10; ties broken by the lowest item code). This map is in
  general **not injective** (hubs are the nearest neighbour of many items, anti-hubs of none),
  while Theorem 3.1 assumes an injective a; see :mod:`privrec.privacy.rr` for what that costs.
* :func:`injective_map` - a bijection a with no fixed point that stays close in embedding
  space: a minimum-total-distance perfect matching between "sources" and "targets" over the
  k-nearest-neighbour graph (edge v -> w when w is among v's k nearest neighbours or v among
  w's), solved with SciPy's LAPJVsp (``min_weight_full_bipartite_matching``) on distances
  quantised to integers (2^-20 of the longest edge; float costs can make LAPJVsp loop). A perfect
  matching in that graph is exactly a permutation without fixed points (no self edges). If
  none exists, k doubles (up to ``max_k``); if there is still none, the documented fallback
  adds the edges of one Hamiltonian cycle through all items ordered along the first
  principal component of the embeddings (v -> next item in that order, with its true
  distance), which makes a perfect matching always exist; the matching then still
  minimises the total distance over the enlarged graph and uses cycle edges only where the
  kNN graph has none to offer (Hall's condition fails).
* :func:`paired_map` - an involution (a(a(v)) = v): items swap in pairs. Only then is the
  per-item randomised response a finite-epsilon local-DP mechanism between v and a(v)
  (under any other map the output v is impossible from the input a(v)). Built from the
  cycle cover above by splitting its cycles into pairs (approximately min-weight).

Maps are int64 arrays ``a`` of length m + 1 over item codes: ``a[v]`` is the alternative of
code v in 1..m and ``a[0] = 0`` (padding maps to padding). Embedding row i belongs to item
code i + 1. :func:`check_alternative_map` validates a user-supplied map.

Item embeddings (from text) and the exact k-NN the maps are built on live in
:mod:`privrec.privacy.embeddings`; ``load_encoder``, ``embed_texts``, ``item_texts`` and ``knn``
are re-exported here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from privrec.errors import ParameterError, PrivrecError
from privrec.privacy.embeddings import Backend, _check_embeddings, knn
from privrec.privacy.embeddings import embed_texts as embed_texts  # re-export ("X as X")
from privrec.privacy.embeddings import item_texts as item_texts  # re-export
from privrec.privacy.embeddings import load_encoder as load_encoder  # re-export
from privrec.privacy.validate import as_int_array, check_positive_int

_QUANT = float(2 ** 20)                 # matching weights: distances in units of 2^-20 * longest edge


# ----------------------------------------------------------------------------- maps
@dataclass(frozen=True)
class AlternativeMap:
    """An alternative map ``alt`` (int64, length m + 1, ``alt[0] = 0``) and how it was built."""

    alt: np.ndarray
    method: str
    distances: np.ndarray                 # (m,) Euclidean distance from item v to alt[v]
    k: int | None = None                  # k of the kNN graph the matching used
    fallback: str | None = None           # set when the documented fallback was needed
    info: dict = field(default_factory=dict)

    @property
    def n_items(self) -> int:
        return len(self.alt) - 1

    def statistics(self) -> dict:
        """Mean/median distance to the alternative, injectivity, share of items nobody maps to."""
        s = map_statistics(self.alt)
        s.update({"method": self.method, "mean_distance": float(self.distances.mean()),
                  "median_distance": float(np.median(self.distances)), "k": self.k,
                  "fallback": self.fallback, **self.info})
        return s


def check_alternative_map(alt_map, n_items: int | None = None, name: str = "alt_map") -> np.ndarray:
    """Validate an alternative map and return it as a fresh int64 array of length m + 1.

    Accepts an :class:`AlternativeMap` or a 1-D integer array ``a`` with ``a[0] = 0`` and
    ``a[v]`` in 1..m, ``a[v] != v`` for v in 1..m (Theorem 3.1: no fixed points; a fixed point
    would publish that item unchanged). Injectivity is *not* required here (the paper's
    nearest-neighbour map is not injective); callers decide what it costs.
    """
    raw = alt_map.alt if isinstance(alt_map, AlternativeMap) else alt_map
    arr = np.asarray(raw)
    if arr.ndim != 1:
        raise ParameterError(f"{name} must be a 1-D array over item codes 0..m, got shape {arr.shape}")
    arr = as_int_array(arr, name, "item codes")
    m = len(arr) - 1
    if m < 2:
        raise ParameterError(f"{name} has length {len(arr)}; it must have length m + 1 >= 3 (entry 0 for padding, "
                             "one alternative per item code 1..m)")
    if n_items is not None and m != int(n_items):
        raise ParameterError(f"{name} has length {len(arr)} but there are n_items={n_items} items; it must have "
                             f"length n_items + 1 = {int(n_items) + 1} (index 0 = padding)")
    if arr[0] != 0:
        raise ParameterError(f"{name}[0] must be 0 (padding maps to padding), got {int(arr[0])}")
    body = arr[1:]
    if body.min() < 1 or body.max() > m:
        bad = int(np.flatnonzero((body < 1) | (body > m))[0]) + 1
        raise ParameterError(f"{name}[{bad}] = {int(arr[bad])} is not an item code in 1..{m}; every item needs a "
                             "real alternative")
    fixed = np.flatnonzero(body == np.arange(1, m + 1))
    if len(fixed):
        raise ParameterError(f"{name} maps item {int(fixed[0]) + 1} to itself ({len(fixed)} fixed point(s)); "
                             "randomised response needs a(v) != v (Theorem 3.1); build the map with "
                             "nearest_neighbour_map / injective_map / paired_map")
    return arr


def preimage_counts(alt: np.ndarray) -> np.ndarray:
    """c[w] = |a^-1(w)| for w in 0..m (c[0] counts padding's own entry and is not meaningful)."""
    a = np.asarray(alt, dtype=np.int64)
    return np.bincount(a[1:], minlength=len(a)).astype(np.int64)


def is_involution(alt: np.ndarray) -> bool:
    """True when a(a(v)) = v for every item (items come in swapped pairs)."""
    a = np.asarray(alt, dtype=np.int64)
    return bool((a[a[1:]] == np.arange(1, len(a))).all())


def map_statistics(alt: np.ndarray) -> dict:
    """Structural facts of a map over codes 1..m: injective, fixed points, share outside the image,
    share of items in 2-cycles (a(a(v)) = v: only there is the per-item randomised response a
    finite-epsilon local-DP mechanism between v and a(v))."""
    a = np.asarray(alt, dtype=np.int64)
    m = len(a) - 1
    counts = preimage_counts(a)[1:]
    return {
        "n_items": m,
        "injective": bool((counts == 1).all()),
        "fixed_points": int((a[1:] == np.arange(1, m + 1)).sum()),
        "outside_image_fraction": float((counts == 0).mean()),
        "max_preimage": int(counts.max()),
        "two_cycle_fraction": float((a[a[1:]] == np.arange(1, m + 1)).mean()),
    }


def _alt_distances(x: np.ndarray, alt: np.ndarray) -> np.ndarray:
    diff = x - x[alt[1:] - 1]
    return np.sqrt(np.einsum("ij,ij->i", diff, diff))


def nearest_neighbour_map(embeddings: np.ndarray, backend: Backend = "auto") -> AlternativeMap:
    """Alg. 1 lines 1-10: a(v) = the nearest other item in Euclidean distance (ties -> lowest code).

    ``embeddings`` row i is item code i + 1. Not injective in general; the statistics report
    the fraction of items that are nobody's alternative (outside the image of a).
    """
    x = _check_embeddings(embeddings)
    idx, dist = knn(x, 1, backend)
    alt = np.zeros(x.shape[0] + 1, dtype=np.int64)
    alt[1:] = idx[:, 0] + 1
    return AlternativeMap(alt=alt, method="nearest-neighbour (Alg. 1)", distances=dist[:, 0].copy(), k=1)


def _principal_order(x: np.ndarray) -> np.ndarray:
    """Items ordered along the first principal direction (power iteration, deterministic)."""
    xc = x - x.mean(axis=0)
    v = np.ones(x.shape[1]) / math.sqrt(x.shape[1])
    for _ in range(50):
        w = xc.T @ (xc @ v)
        nrm = np.linalg.norm(w)
        if nrm == 0:
            break
        v = w / nrm
    proj = xc @ v
    return np.lexsort((np.arange(x.shape[0]), proj))


@dataclass
class _Cover:
    col: np.ndarray          # 0-based permutation without fixed points
    k: int
    fallback: str | None
    fallback_edges: int
    idx: np.ndarray          # (m, max_k) kNN indices
    max_k: int


def _cycle_cover(x: np.ndarray, k: int, max_k: int | None, backend: Backend) -> _Cover:
    """Min-total-distance fixed-point-free permutation over the symmetrised kNN graph."""
    m = x.shape[0]
    k = check_positive_int(k, "k")
    if max_k is None:
        max_k = 4 * k
    max_k = check_positive_int(max_k, "max_k")
    k = min(k, m - 1)
    max_k = max(k, min(max_k, m - 1))
    idx, dist = knn(x, max_k, backend)

    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import min_weight_full_bipartite_matching

    def solve(kk: int, extra: tuple[np.ndarray, np.ndarray, np.ndarray] | None):
        rows = np.repeat(np.arange(m), kk)
        cols = idx[:, :kk].ravel()
        w = dist[:, :kk].ravel()
        r = np.concatenate([rows, cols])
        c = np.concatenate([cols, rows])
        ww = np.concatenate([w, w])
        if extra is not None:
            r, c, ww = np.concatenate([r, extra[0]]), np.concatenate([c, extra[1]]), np.concatenate([ww, extra[2]])
        key, first = np.unique(r * m + c, return_index=True)
        r, c, ww = key // m, key % m, ww[first]
        # Integer weights: SciPy's LAPJVsp can loop forever on feasible problems when float
        # costs round (observed with SciPy 1.17 on kNN graphs); with integers its arithmetic
        # is exact. Distances are quantised to 2^-20 of the longest edge (total error at most
        # m * 2^-21 * longest edge) and shifted by +1 so that zero distances (duplicate
        # embeddings) stay edges; every perfect matching has m edges, so the shift leaves
        # the optimum unchanged.
        top = ww.max()
        q = np.rint(ww * (_QUANT / top)) if top > 0 else np.zeros_like(ww)
        graph = csr_matrix((q + 1.0, (r, c)), shape=(m, m))
        try:
            _, col = min_weight_full_bipartite_matching(graph)
        except ValueError:                       # "no full matching exists"
            return None
        return np.asarray(col, dtype=np.int64)

    kk = k
    while True:
        col = solve(kk, None)
        if col is not None:
            return _Cover(col, kk, None, 0, idx, max_k)
        if kk >= max_k:
            break
        kk = min(2 * kk, max_k)
    order = _principal_order(x)
    src, dst = order, np.roll(order, -1)
    w = np.sqrt(((x[src] - x[dst]) ** 2).sum(axis=1))
    col = solve(max_k, (src, dst, w))
    if col is None:                               # impossible: the cycle alone is a derangement
        raise PrivrecError("internal error: no perfect matching despite the cycle fallback")
    in_knn = (idx[:, :max_k] == col[:, None]).any(axis=1) | (idx[col, :max_k] == np.arange(m)[:, None]).any(axis=1)
    return _Cover(col, max_k, "kNN graph + principal-component cycle (no perfect matching in the kNN graph)",
                  int((~in_knn).sum()), idx, max_k)


def _rank_info(cover: _Cover, col: np.ndarray) -> dict:
    hit = cover.idx[:, :cover.max_k] == col[:, None]
    rank = np.where(hit.any(axis=1), hit.argmax(axis=1) + 1, cover.max_k + 1)
    return {"nearest_fraction": float((rank == 1).mean()), "mean_knn_rank": float(rank.mean()),
            "beyond_knn_fraction": float((~hit.any(axis=1)).mean()), "fallback_edges": cover.fallback_edges}


def injective_map(embeddings: np.ndarray, k: int = 10, *, max_k: int | None = None,
                  backend: Backend = "auto") -> AlternativeMap:
    """A bijection a with a(v) != v that keeps alternatives close (Theorem 3.1's assumption).

    Min-total-distance perfect matching over the symmetrised kNN graph (see the module
    docstring): k = ``k``, 2k, 4k, ... up to ``max_k`` (default 4k, capped at m - 1); if no
    perfect matching exists even then, the principal-component cycle fallback is added.
    ``info`` reports the share of items mapped to their nearest neighbour, the mean kNN rank
    of the alternative (max_k + 1 when it is not among v's max_k nearest), the share beyond
    v's own kNN list, and how many alternatives came from fallback edges.
    """
    x = _check_embeddings(embeddings)
    cover = _cycle_cover(x, k, max_k, backend)
    alt = np.zeros(x.shape[0] + 1, dtype=np.int64)
    alt[1:] = cover.col + 1
    return AlternativeMap(alt=alt, method="injective (min-weight perfect matching on kNN graph)",
                          distances=_alt_distances(x, alt), k=cover.k, fallback=cover.fallback,
                          info=_rank_info(cover, cover.col))


def _cycles(perm: np.ndarray) -> list[np.ndarray]:
    """Cycles of a 0-based permutation, each starting at its smallest element."""
    seen = np.zeros(len(perm), dtype=bool)
    out = []
    for s in range(len(perm)):
        if seen[s]:
            continue
        cyc = []
        v = s
        while not seen[v]:
            seen[v] = True
            cyc.append(v)
            v = perm[v]
        out.append(np.asarray(cyc, dtype=np.int64))
    return out


def _pairs_from_cover(x: np.ndarray, col: np.ndarray) -> tuple[list[tuple[int, int]], list[int]]:
    """Split every cycle of the cover into pairs along its own edges; one item per odd cycle is left."""
    pairs: list[tuple[int, int]] = []
    left: list[int] = []
    for cyc in _cycles(col):
        L = len(cyc)
        nxt = np.roll(cyc, -1)
        w = np.sqrt(((x[cyc] - x[nxt]) ** 2).sum(axis=1))      # w[i] = d(c_i, c_{i+1})
        if L % 2 == 0:
            start = 0 if w[0::2].sum() <= w[1::2].sum() else 1
            for i in range(start, L, 2):
                pairs.append((int(cyc[i]), int(cyc[(i + 1) % L])))
            continue
        # odd: leave out c_j and pair the path c_{j+1}, ..., c_{j-1} along edges j+1, j+3, ..., j+L-2
        h = (L - 1) // 2
        ww = np.concatenate([w, w])
        csum = [np.concatenate([[0.0], np.cumsum(ww[p::2])]) for p in (0, 1)]
        cost = np.empty(L)
        for j in range(L):
            s0 = j + 1
            c = csum[s0 % 2]
            cost[j] = c[s0 // 2 + h] - c[s0 // 2]
        j = int(np.argmin(cost))
        left.append(int(cyc[j]))
        for t in range(h):
            i = (j + 1 + 2 * t) % L
            pairs.append((int(cyc[i]), int(cyc[(i + 1) % L])))
    return pairs, left


def paired_map(embeddings: np.ndarray, k: int = 10, *, max_k: int | None = None,
               backend: Backend = "auto") -> AlternativeMap:
    """An involution a (a(a(v)) = v, a(v) != v): items are paired with a close partner.

    Only under an involution is the per-item randomised response a local-DP mechanism between
    v and a(v) (epsilon = ln(k/(1-k)) for keep probability k); under any other map, output v is
    impossible from input a(v) unless a(a(v)) = v, so the pair is distinguishable outright.

    Construction (approximately min-weight; an exact min-weight perfect matching on a general
    graph would need a blossom algorithm): take the min-weight cycle cover of
    :func:`injective_map`; split each even cycle into the cheaper of its two alternating edge
    sets; split each odd cycle into pairs along its edges, leaving out the item that makes the
    remaining pairs cheapest; pair the left-out items recursively the same way. With an odd
    number of items one triple remains and forms a 3-cycle (reported in ``info``; those three
    items are not in 2-cycles). Bijective and fixed-point free, so Theorem 3.1 applies too.
    """
    x = _check_embeddings(embeddings)
    m = x.shape[0]
    part = np.full(m, -1, dtype=np.int64)          # 0-based partner (or cycle successor)
    active = np.arange(m)
    first_cover: _Cover | None = None
    rounds = 0
    triple: list[int] = []
    while True:
        n = len(active)
        if n == 2:
            part[active[0]], part[active[1]] = active[1], active[0]
            break
        if n == 3:
            triple = [int(v) for v in active]
            break
        if n == 1:                                  # odd m: merge with the cheapest existing pair
            v = int(active[0])
            done = np.flatnonzero(part >= 0)
            p = done[part[done] > done]
            q = part[p]
            cost = (np.linalg.norm(x[p] - x[v], axis=1) + np.linalg.norm(x[q] - x[v], axis=1)
                    - np.linalg.norm(x[p] - x[q], axis=1))
            b = int(np.argmin(cost))
            triple = [v, int(p[b]), int(q[b])]
            break
        cover = _cycle_cover(x[active], k, max_k, backend)
        if first_cover is None:
            first_cover = cover
        pairs, left = _pairs_from_cover(x[active], cover.col)
        for i, j in pairs:
            part[active[i]], part[active[j]] = active[j], active[i]
        rounds += 1
        if not left:
            break
        active = active[np.asarray(left, dtype=np.int64)]
    if triple:
        a0, a1, a2 = triple
        part[a0], part[a1], part[a2] = a1, a2, a0
    alt = np.zeros(m + 1, dtype=np.int64)
    alt[1:] = part + 1
    info = {"rounds": rounds, "three_cycle": [t + 1 for t in triple] if triple else None}
    if first_cover is not None and first_cover.idx.shape[0] == m:
        info.update(_rank_info(first_cover, part))
    return AlternativeMap(alt=alt, method="paired (involution from the min-weight cycle cover)",
                          distances=_alt_distances(x, alt), k=first_cover.k if first_cover else None,
                          fallback=first_cover.fallback if first_cover else None, info=info)


def random_map(n_items: int, rng: np.random.Generator) -> AlternativeMap:
    """Alternatives with no semantics: one uniformly random cycle through all items (a bijection
    without fixed points, so Theorem 3.1 holds exactly as for :func:`injective_map`). The
    baseline of the "what do semantic alternatives buy" ablation."""
    if not isinstance(n_items, (int, np.integer)) or n_items < 2:
        raise ParameterError(f"n_items must be an integer >= 2 (an item needs another item as alternative), got {n_items!r}")
    order = rng.permutation(np.arange(1, n_items + 1))
    alt = np.zeros(n_items + 1, dtype=np.int64)
    alt[order] = np.roll(order, -1)
    return AlternativeMap(alt=alt, method="uniformly random cycle (no semantics)",
                          distances=np.full(n_items, np.nan), info={})
