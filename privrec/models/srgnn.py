"""SR-GNN (Wu et al., AAAI'19), the base of DIPSGNN (Sec. 4 of the DIPSGNN paper): each sample's
prefix becomes a directed item-transition graph, a gated GNN updates the item nodes, and an
attention readout turns them into the sample's representation, scored against every item.

* **Graph** (DIPSGNN Eq. 4): nodes are the distinct items of the prefix; ``A_out[i, j]`` is the
  number of transitions i -> j divided by i's out-degree, ``A_in[i, j]`` the number of j -> i
  divided by i's in-degree (``weighted=False``: 0/1 edges as in SR-GNN's reference code).
  Built for the whole batch at once: a per-row sort finds the distinct items, one
  ``scatter_add`` counts the transitions into a (B, L, L) tensor — no loop over users or edges.
* **Gated GNN** (SR-GNN Eqs. 1–5): ``a = [A_in (H W_in + b_in), A_out (H W_out + b_out)]``, then a
  GRU-style update of each node from ``a``; ``steps`` times (T, default 1). :meth:`aggregate` is
  the step DIPSGNN perturbs (clip rows, add Gaussian noise), a hook for its subclass.
* **Readout** (SR-GNN Eq. 6–8): local s_l = the last item's node, global s_g = attention over the
  prefix's positions, ``s_h = W3 [s_l; s_g]``; scores ``s_h . v_j`` for every item j.

Trained on every prefix (``task = "prefixes"``: one sample per target, loss at the last position,
as SR-GNN and DIPSGNN train), cross-entropy over all items.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from privrec.models.base import NextItemModel


def session_graphs(seq: torch.Tensor, weighted: bool = True) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor,
                                                                        torch.Tensor]:
    """Graphs of a batch of front-padded prefixes ``seq`` (B, L), 0 = padding.

    Returns ``nodes`` (B, L): the distinct items of each row in ascending order, 0 after them;
    ``alias`` (B, L): the node index of each position (0 at padding — mask with ``seq > 0``);
    ``a_in``, ``a_out`` (B, L, L): row-normalised in-/out-adjacency over the nodes (Eq. 4)."""
    b, length = seq.shape
    ordered, order = torch.sort(seq, dim=1)
    real = ordered > 0
    new = real.clone()
    new[:, 1:] &= ordered[:, 1:] != ordered[:, :-1]            # first occurrence of each distinct item
    node_of_sorted = torch.cumsum(new.long(), 1) - 1            # node index along the sorted row
    node_of_sorted = node_of_sorted.clamp_min(0)
    alias = torch.zeros_like(seq)
    alias.scatter_(1, order, node_of_sorted)
    alias = alias * (seq > 0)
    nodes = torch.zeros(b, length + 1, dtype=seq.dtype, device=seq.device)     # column L: a dump slot
    nodes.scatter_(1, torch.where(new, node_of_sorted, length), torch.where(new, ordered, 0))
    nodes = nodes[:, :length]
    edge = (seq[:, :-1] > 0) & (seq[:, 1:] > 0)                 # consecutive real items: a transition
    src, dst = alias[:, :-1], alias[:, 1:]
    flat = (torch.arange(b, device=seq.device)[:, None] * length + src) * length + dst
    counts = torch.zeros(b * length * length, device=seq.device)
    counts.scatter_add_(0, flat[edge], torch.ones(int(edge.sum()), device=seq.device))
    counts = counts.view(b, length, length)
    if not weighted:
        counts = (counts > 0).float()
    a_out = counts / counts.sum(2, keepdim=True).clamp_min(1)
    a_in = counts.transpose(1, 2) / counts.sum(1).unsqueeze(2).clamp_min(1)
    return nodes, alias, a_in, a_out


class SRGNN(NextItemModel):
    name = "srgnn"
    task = "prefixes"

    def __init__(self, n_items: int, max_len: int = 50, hidden: int = 100, steps: int = 1, weighted: bool = True):
        super().__init__()
        self._config = dict(n_items=n_items, max_len=max_len, hidden=hidden, steps=steps, weighted=weighted)
        self.max_len, self.steps, self.weighted = max_len, steps, weighted
        self.item_embedding = nn.Embedding(n_items + 1, hidden, padding_idx=0)
        self.edge_in, self.edge_out = nn.Linear(hidden, hidden), nn.Linear(hidden, hidden)
        self.cell = nn.GRUCell(2 * hidden, hidden)               # SR-GNN's gates: W_z, W_r, W_o over [a; h]
        self.w1, self.w2 = nn.Linear(hidden, hidden), nn.Linear(hidden, hidden, bias=False)
        self.q = nn.Linear(hidden, 1, bias=False)
        self.w3 = nn.Linear(2 * hidden, hidden, bias=False)
        std = 1.0 / math.sqrt(hidden)                             # SR-GNN's initialisation
        for p in self.parameters():
            nn.init.uniform_(p, -std, std)

    def config(self) -> dict:
        return dict(self._config)

    def aggregate(self, a_in: torch.Tensor, a_out: torch.Tensor, h: torch.Tensor, batch: dict | None = None
                  ) -> torch.Tensor:
        """Eq. 1: each node's messages from its in- and out-neighbours, (B, N, 2h)."""
        return torch.cat([a_in @ self.edge_in(h), a_out @ self.edge_out(h)], -1)

    def node_states(self, seq: torch.Tensor, batch: dict | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Node states after ``steps`` gated-GNN steps (B, N, h), and the alias of each position."""
        nodes, alias, a_in, a_out = session_graphs(seq, self.weighted)
        h = self.item_embedding(nodes)
        b, n, d = h.shape
        for _ in range(self.steps):
            a = self.aggregate(a_in, a_out, h, batch)
            h = self.cell(a.reshape(b * n, -1), h.reshape(b * n, d)).view(b, n, d)
        return h, alias

    def session(self, seq: torch.Tensor, batch: dict | None = None) -> torch.Tensor:
        """s_h of each prefix (B, h): the readout of Eqs. 6–8 over its positions' node states."""
        if seq.shape[1] > self.max_len:
            seq = seq[:, -self.max_len:]
        h, alias = self.node_states(seq, batch)
        states = torch.gather(h, 1, alias.unsqueeze(-1).expand(-1, -1, h.shape[-1]))    # (B, L, h)
        mask = (seq > 0).unsqueeze(-1)
        last = states[:, -1]                                      # front padding: the newest item is last
        alpha = self.q(torch.sigmoid(self.w1(last).unsqueeze(1) + self.w2(states)))
        glob = (alpha * states * mask).sum(1)
        return self.w3(torch.cat([last, glob], -1))

    def loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Cross-entropy of each sample's next item (its last position's target) over all items."""
        keep = batch["target"][:, -1] > 0
        rows = {k: v[keep] for k, v in batch.items() if torch.is_tensor(v) and len(v) == len(keep)}
        return F.cross_entropy(self.logits(self.session(rows["seq"], rows)), rows["target"][:, -1])

    def score(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return self.logits(self.session(batch["seq"], batch))
