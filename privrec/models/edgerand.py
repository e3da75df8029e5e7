"""EdgeRand (Hu & Fang, Sec. 5.1 baseline): APGNN reading behaviour graphs published with Gaussian noise.

The paper's EdgeRand "adds gaussian noise to the adjacency matrices of user behavior graphs" (a
Gaussian LapGraph) and protects user features as DIPSGNN does. Our reading, chosen so that the
guarantee is one Gaussian release and nothing composes:

* **the release** (:func:`privrec.privacy.graph.edge_rand`, done once before training by the
  experiment): each user's whole behaviour graph — the count adjacency ``A_out`` of their
  (training + test) sequence, nodes in first-occurrence order — plus N(0, s²) on every entry of
  the real n_u x n_u block, s calibrated (PLD) so that the release is (ε₂, δ)-DP per transition
  count; ``A_in`` is its transpose. Set with :meth:`EdgeRand.set_graphs`.
* **what the model reads**: a prefix's distinct items in first-occurrence order are the first k
  distinct items of the user's sequence, so its graph is the k x k top-left block of the user's
  graph. For sequences without repeated items (ML-1M: a user rates a film once) the block of the
  noiseless graph *is* the prefix's graph, so the model reads exactly the prefix graph plus the
  release's noise — no future transition, no label. (The experiment refuses sequences with
  repeats, where the block would also hold later transitions.) Training epochs, validation and
  test all read the same release: post-processing, ε₂ is the whole run's edge-level ε.
* **the model**: APGNN with DIPSGNN's count adjacency (noisy counts can be negative, so no degree
  normalisation) and no clipping or aggregation noise.
"""

from __future__ import annotations

import torch

from privrec.models.dipsgnn import APGNN
from privrec.models.srgnn import graphs


class EdgeRand(APGNN):
    name = "edgerand"
    normalise_graph = False
    needs_graphs = True                 # the experiment publishes the noisy user graphs and sets them
    data_buffers = ("features", "published")

    def __init__(self, n_items: int, n_users: int, n_features: int, max_len: int = 50, hidden: int = 100,
                 user_dim: int = 50, steps: int = 1, user_ids: bool = False):
        super().__init__(n_items, n_users, n_features, max_len, hidden, user_dim, steps, weighted=True,
                         user_ids=user_ids)
        del self._config["weighted"]
        # the published release (half precision: 6k users x 100 x 100 is 120 MB; the noise std is ~1)
        self.register_buffer("published", torch.zeros(n_users, max_len, max_len, dtype=torch.float16))

    def set_graphs(self, a_out: torch.Tensor) -> None:
        """Each user's published noisy ``A_out`` (n_users, max_len, max_len), row 0 for padding."""
        if tuple(a_out.shape) != tuple(self.published.shape):
            raise ValueError(f"graphs must have shape {tuple(self.published.shape)}, got {tuple(a_out.shape)}")
        if not bool(torch.isfinite(a_out).all()):
            raise ValueError("graphs contain NaN or infinity")
        self.published.copy_(a_out)

    def adjacency(self, seq: torch.Tensor, batch: dict | None = None) -> tuple[torch.Tensor, ...]:
        """Nodes and alias from the prefix, adjacency from the user's published graph (its k x k block)."""
        if batch is None or "user" not in batch:
            raise ValueError("EdgeRand needs the batch's user ids (batch['user'])")
        nodes, alias, _, _ = graphs(seq, self.weighted, normalise=False)
        n = nodes.shape[1]
        if n > self.published.shape[1]:
            raise ValueError(f"a prefix has {n} distinct items, more than the published graphs' "
                             f"{self.published.shape[1]}")
        real = torch.arange(n, device=seq.device)[None, :] < (nodes > 0).sum(1, keepdim=True)
        a_out = self.published[batch["user"], :n, :n].float() * (real[:, :, None] & real[:, None, :])
        return nodes, alias, a_out.transpose(1, 2).contiguous(), a_out
