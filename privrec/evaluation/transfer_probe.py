"""A model-free probe of whether an auxiliary domain — or a release of it — carries information
about the target domain.

Before any model is trained, rankers score every target item for every user evaluated on the
target's test split (full ranking, the user's known target items masked, ties against the target
as in :mod:`privrec.evaluation.metrics`):

* ``popularity``: how many users interacted with the item in the target's training split;
* ``own-domain``: item-item cosine co-occurrence within the target's training split, summed over
  the items the user is known to have in the target (its test-time history);
* ``through SOURCE``: user-kNN through a source representation: the cosine between two users'
  source rows (raw auxiliary rows, a release of them, noise of the release's shape), the
  ``neighbours`` most similar users' target *training* rows summed with those weights.

If the raw source does not beat ``popularity``, the auxiliary domain holds little a model could
transfer to these users, whatever the model; if it does, transfer is there to be had, and the same
ranker through a release measures how much of it the release keeps (noise of the release's shape
is the floor). Cost: one (evaluated users x users) similarity and a sparse product.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from privrec.data.sequences import Sequences


def rows_matrix(seqs: Sequences | np.ndarray, n_items: int) -> sp.csr_matrix:
    """A user x item 0/1 matrix (column 0 = padding, empty) from CSR sequences or a front-padded id matrix."""
    if isinstance(seqs, np.ndarray):
        r, c = np.nonzero(seqs > 0)
        rows, items = r, seqs[r, c]
        n_rows = seqs.shape[0]
    else:
        rows, items, n_rows = seqs.row_ids(), seqs.items, seqs.n_rows
    m = sp.csr_matrix((np.ones(len(rows), np.float32), (rows, items)), shape=(n_rows, n_items + 1))
    m.sum_duplicates()
    m.data[:] = 1.0
    return m


def _ndcg(scores: np.ndarray, targets: np.ndarray, known: sp.csr_matrix, k: int) -> np.ndarray:
    """Per-user NDCG@k of the one target (0 outside the top k)."""
    scores[:, 0] = -np.inf
    r, c = known.nonzero()
    scores[r, c] = -np.inf
    mine = scores[np.arange(len(targets)), targets]
    rank = (scores >= mine[:, None]).sum(1) - 1          # ties count against the target
    return np.where(rank < k, 1.0 / np.log2(rank + 2.0), 0.0)


def _unit_rows(x) -> np.ndarray | sp.csr_matrix:
    if sp.issparse(x):
        norms = np.sqrt(np.asarray(x.multiply(x).sum(1)).ravel())
        return sp.diags(1.0 / np.maximum(norms, 1e-12)) @ x
    x = np.asarray(x, dtype=np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def _knn_scores(users: np.ndarray, source, train: sp.csr_matrix, neighbours: int) -> np.ndarray:
    unit = _unit_rows(source)
    sim = unit[users] @ unit.T
    sim = np.asarray(sim.todense() if sp.issparse(sim) else sim, dtype=np.float32)
    sim[np.arange(len(users)), users] = 0.0              # not oneself
    sim[:, 0] = 0.0                                        # nor the padding row
    if neighbours < sim.shape[1]:
        cut = np.partition(sim, -neighbours, axis=1)[:, -neighbours][:, None]
        sim = np.where(sim >= cut, sim, 0.0)
    return (sp.csr_matrix(sim) @ train).toarray()


def probe(split, n_items: int, sources: dict[str, object], k: int = 10, neighbours: int = 100,
          pairs: tuple[tuple[str, str], ...] = ()) -> dict:
    """``{"users": n, "rankers": {name: {"hr@k", "ndcg@k"}}, "pairs": [...]}`` on ``split``'s test users
    (one test item each): popularity, own-domain item co-occurrence, and a user-kNN through each of
    ``sources`` (name -> (n_users + 1, d) rows over the same user codes: a sparse 0/1 item matrix or a
    dense array; :func:`rows_matrix` builds one from sequences). ``pairs`` of ranker names are compared
    user by user: the mean NDCG@k difference and a two-sided paired t-test over the users."""
    from scipy import stats

    users = split.eval_users("test")
    if len(users) == 0:
        return {"users": 0, "rankers": {}, "pairs": []}
    targets = np.array([split.test.row(u)[0] for u in users], dtype=np.int64)
    train = rows_matrix(split.train, n_items)
    known = rows_matrix(split.history("test"), n_items)[users]
    counts = np.asarray(train.sum(0)).ravel()
    own = (train.T @ train).toarray().astype(np.float32)
    norm = np.sqrt(counts).astype(np.float32) + 1e-9
    own = own / norm[:, None] / norm[None, :]
    np.fill_diagonal(own, 0.0)
    per_user = {"popularity": _ndcg(np.tile(np.log1p(counts).astype(np.float32), (len(users), 1)), targets, known, k),
                "own-domain": _ndcg(np.asarray(known @ own), targets, known, k)}
    for name, source in sources.items():
        per_user[f"through {name}"] = _ndcg(_knn_scores(users, source, train, neighbours), targets, known, k)
    rankers = {name: {f"hr@{k}": round(float((v > 0).mean()), 4), f"ndcg@{k}": round(float(v.mean()), 4)}
               for name, v in per_user.items()}
    compared = []
    for a, b in pairs:
        d = per_user[a] - per_user[b]
        p = None if np.ptp(d) == 0 else float(stats.ttest_rel(per_user[a], per_user[b]).pvalue)
        compared.append({"ours": a, "theirs": b, "difference": round(float(d.mean()), 4), "p_value": p})
    return {"users": int(len(users)), "rankers": rankers, "pairs": compared}
