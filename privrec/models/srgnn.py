"""SR-GNN (Wu et al., AAAI'19), the base of DIPSGNN (Sec. 4 of the DIPSGNN paper): each sample's
prefix becomes a directed item-transition graph, a gated GNN updates the item nodes, and an
attention readout turns them into the sample's representation, scored against every item.

* **Graph** (DIPSGNN Eq. 4 with SR-GNN's normalisation): nodes are the distinct items of the
  prefix; ``A_out[i, j]`` is the number of transitions i -> j divided by i's out-degree,
  ``A_in[i, j]`` the number of j -> i divided by i's in-degree (``weighted=False``: 0/1 edges as in
  SR-GNN's reference code). Built for the whole batch at once by the one graph builder
  (:func:`privrec.privacy.graph.session_graphs`: a row sort and one bincount, no loop over users
  or edges), (B, n, n) with n the batch's largest distinct-item count.
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
from privrec.privacy.graph import session_graphs


def graphs(seq: torch.Tensor, weighted: bool = True, normalise: bool = True) -> tuple[torch.Tensor, torch.Tensor,
                                                                                  torch.Tensor, torch.Tensor]:
    """The behaviour graphs of a batch of front-padded prefixes ``seq`` (B, L), 0 = padding, from the
    one graph builder (:func:`privrec.privacy.graph.session_graphs`, vectorised, O(B L log L)).

    Returns ``nodes`` (B, n): distinct items in first-occurrence order, 0 after them; ``alias``
    (B, L): each position's node (0 at padding — mask with ``seq > 0``); ``a_in``, ``a_out``
    (B, n, n): transition counts (``weighted=False``: 0/1), divided by the out-/in-degree when
    ``normalise`` (SR-GNN, APGNN; DIPSGNN keeps raw counts, Sec. 4.2)."""
    g = session_graphs(seq.detach().cpu().numpy())
    a_in, a_out = g.tensors(device=seq.device)
    if not weighted:
        a_in, a_out = (a_in > 0).float(), (a_out > 0).float()
    if normalise:
        a_in = a_in / a_in.sum(2, keepdim=True).clamp_min(1)
        a_out = a_out / a_out.sum(2, keepdim=True).clamp_min(1)
    nodes = torch.as_tensor(g.nodes, device=seq.device)
    alias = torch.as_tensor(g.alias, device=seq.device).clamp_min(0)
    return nodes, alias, a_in, a_out


class GatedUpdate(nn.Module):
    """SR-GNN's node update (Eq. 5; the GRU equations, as its reference code writes them) over
    (B, n, ·) tensors with two ``nn.Linear`` layers, so the batch stays the leading axis — what a
    per-sample-gradient engine (Opacus, for the DP-SGD baseline) needs; ``nn.GRUCell`` would see
    B x n rows. Same numbers as ``nn.GRUCell`` given its weights (tested)."""

    def __init__(self, input_size: int, hidden: int):
        super().__init__()
        self.input_map, self.hidden_map = nn.Linear(input_size, 3 * hidden), nn.Linear(hidden, 3 * hidden)

    def forward(self, a: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        i_r, i_z, i_n = self.input_map(a).chunk(3, -1)
        h_r, h_z, h_n = self.hidden_map(h).chunk(3, -1)
        reset, update = torch.sigmoid(i_r + h_r), torch.sigmoid(i_z + h_z)
        new = torch.tanh(i_n + reset * h_n)
        return new + update * (h - new)


class SRGNN(NextItemModel):
    name = "srgnn"
    task = "prefixes"
    normalise_graph = True              # divide counts by the degree (SR-GNN); DIPSGNN keeps counts

    def __init__(self, n_items: int, max_len: int = 50, hidden: int = 100, steps: int = 1, weighted: bool = True):
        super().__init__()
        self._config = dict(n_items=n_items, max_len=max_len, hidden=hidden, steps=steps, weighted=weighted)
        self.max_len, self.steps, self.weighted = max_len, steps, weighted
        self.item_embedding = nn.Embedding(n_items + 1, hidden, padding_idx=0)
        self.edge_in, self.edge_out = nn.Linear(hidden, hidden), nn.Linear(hidden, hidden)
        self.cell = GatedUpdate(2 * hidden, hidden)              # SR-GNN's gates: W_z, W_r, W_o over [a; h]
        self.w1, self.w2 = nn.Linear(hidden, hidden), nn.Linear(hidden, hidden, bias=False)
        self.q = nn.Linear(hidden, 1, bias=False)
        self.w3 = nn.Linear(2 * hidden, hidden, bias=False)
        self.output = nn.Linear(hidden, n_items + 1, bias=False)   # scores s_h . v_j: the item table, tied
        self.output.weight = self.item_embedding.weight           # (a module, so Opacus sees both uses)
        std = 1.0 / math.sqrt(hidden)                             # SR-GNN's initialisation
        for p in self.parameters():
            nn.init.uniform_(p, -std, std)

    def config(self) -> dict:
        return dict(self._config)

    def aggregate(self, a_in: torch.Tensor, a_out: torch.Tensor, h: torch.Tensor, batch: dict | None = None
                  ) -> torch.Tensor:
        """Eq. 1: each node's messages from its in- and out-neighbours, (B, N, 2h)."""
        return torch.cat([a_in @ self.edge_in(h), a_out @ self.edge_out(h)], -1)

    def adjacency(self, seq: torch.Tensor, batch: dict | None = None) -> tuple[torch.Tensor, ...]:
        """``(nodes, alias, a_in, a_out)`` of the batch's prefixes (:func:`graphs`); the hook where
        EdgeRand reads its published noisy graphs instead."""
        return graphs(seq, self.weighted, normalise=self.normalise_graph)

    def node_states(self, seq: torch.Tensor, batch: dict | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Node states after ``steps`` gated-GNN steps (B, N, h), and the alias of each position."""
        nodes, alias, a_in, a_out = self.adjacency(seq, batch)
        h = self.item_embedding(nodes)
        for _ in range(self.steps):
            h = self.cell(self.aggregate(a_in, a_out, h, batch), h)
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
        user = self.user_vector(batch)
        return self.w3(torch.cat([last, glob] + ([] if user is None else [user]), -1))

    def logits(self, states: torch.Tensor) -> torch.Tensor:
        pad = torch.zeros(1, dtype=torch.long, device=states.device)    # never predict padding (out of place:
        return self.output(states).index_fill(-1, pad, -torch.inf)    # Opacus wraps the output in a hook)

    def user_vector(self, batch: dict | None) -> torch.Tensor | None:
        """The user side of the readout (APGNN / DIPSGNN Eq. 11); SR-GNN has none."""
        return None

    def loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Cross-entropy of each sample's next item (its last position's target) over all items."""
        keep = batch["target"][:, -1] > 0
        rows = {k: v[keep] for k, v in batch.items() if torch.is_tensor(v) and len(v) == len(keep)}
        return F.cross_entropy(self.logits(self.session(rows["seq"], rows)), rows["target"][:, -1])

    def score(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return self.logits(self.session(batch["seq"], batch))
