"""DDTCDR (Li & Tuzhilin, WSDM'20), the non-private cross-domain baseline of PriCDR's Table 1: each
domain has its own user and item embeddings and a neural scorer; a latent orthogonal mapping X
carries a user's preferences between the domains in both directions (X one way, X^T back), and
both domains are trained together (dual transfer).

Reading used here (the paper builds user/item vectors with autoencoders over side features; ML-1M
has none for this protocol, so they are free embeddings of the ids):

* user in the target: h^T_u = (1 - alpha) E^T_u + alpha X E^S_u; in the source: h^S_u = (1 - alpha) E^S_u
  + alpha X^T E^T_u; alpha = 0.5 (not tuned);
* score of (u, i) in a domain: an MLP over [h_u; V_i] (ReLU, linear output), pointwise log loss;
* loss per batch: target pairs of the batch + as many source pairs of the same users (one of the
  user's source items and ``n_negatives`` uniform source items, each labelled by the raw source
  matrix) + ``orth`` ||X^T X - I||_F^2 (the orthogonality that lets X^T invert X).

The source side reads the *raw* source interactions: a non-private reference, not a PriCDR variant.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from privrec.models.mf import PairModel, csr_rows, mlp


class DDTCDR(PairModel):
    name = "ddtcdr"
    data_buffers = ("source",)          # the caller's data, not learned: see privrec.training.model_state

    def __init__(self, n_users: int, n_items: int, n_source: int, dim: int = 64, hidden: tuple[int, ...] | list[int] = (64, 32),
                 alpha: float = 0.5, orth: float = 1.0, n_negatives: int = 4):
        super().__init__()
        hidden = tuple(int(h) for h in hidden)
        self._config = dict(n_users=n_users, n_items=n_items, n_source=n_source, dim=dim, hidden=list(hidden),
                            alpha=alpha, orth=orth, n_negatives=n_negatives)
        self.alpha, self.orth, self.n_negatives = float(alpha), float(orth), int(n_negatives)
        self.user_t, self.user_s = nn.Embedding(n_users, dim), nn.Embedding(n_users, dim)
        self.item_t, self.item_s = nn.Embedding(n_items + 1, dim, padding_idx=0), nn.Embedding(n_source, dim)
        for e in (self.user_t, self.user_s, self.item_t, self.item_s):
            nn.init.normal_(e.weight, std=0.01)
        self.mapping = nn.Parameter(torch.eye(dim))            # X: source user space -> target user space
        self.head_t = mlp((2 * dim, *hidden, 1), last_activation=False)
        self.head_s = mlp((2 * dim, *hidden, 1), last_activation=False)
        self.register_buffer("source", torch.zeros(n_users, n_source, dtype=torch.bool))
        self._rows: tuple[tuple, tuple[torch.Tensor, torch.Tensor]] | None = None

    def set_source(self, interactions: torch.Tensor) -> None:
        """The raw source interactions, users x source items (nonzero = interacted)."""
        if tuple(interactions.shape) != tuple(self.source.shape):
            raise ValueError(f"source matrix must have shape {tuple(self.source.shape)}, got {tuple(interactions.shape)}")
        self.source.copy_(interactions != 0)

    def _source_rows(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Row pointers and item ids of the source matrix (CSR), rebuilt when it changes."""
        key = (self.source._version, self.source.data_ptr())
        if self._rows is None or self._rows[0] != key:
            self._rows = (key, csr_rows(self.source))
        return self._rows[1]

    def target_user(self, users: torch.Tensor) -> torch.Tensor:
        return (1 - self.alpha) * self.user_t(users) + self.alpha * self.user_s(users) @ self.mapping.T

    def source_user(self, users: torch.Tensor) -> torch.Tensor:
        return (1 - self.alpha) * self.user_s(users) + self.alpha * self.user_t(users) @ self.mapping

    @staticmethod
    def _logits(head: nn.Sequential, u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """head([u; v]) for u (B, d) against v (B, K, d) -> (B, K)."""
        return head(torch.cat([u[:, None, :].expand(-1, v.shape[1], -1), v], -1)).squeeze(-1)

    def pair_logits(self, users, items):
        return self._logits(self.head_t, self.target_user(users), self.item_t(items))

    def source_pairs(self, users: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """For the batch's users with any source item: (users, items (B', 1 + k), labels) — one of the
        user's source items and k uniform source items, labelled by the source matrix (torch's RNG)."""
        crow, cols = self._source_rows()
        counts = crow[users + 1] - crow[users]
        users = users[counts > 0]
        counts, starts = counts[counts > 0], crow[users]
        pos = cols[starts + (torch.rand(len(users), device=users.device) * counts).long().clamp_max(counts - 1)]
        neg = torch.randint(0, self.source.shape[1], (len(users), self.n_negatives), device=users.device)
        items = torch.cat([pos[:, None], neg], 1)
        return users, items, self.source[users[:, None], items].float()

    def loss(self, batch):
        target = F.binary_cross_entropy_with_logits(self.pair_logits(batch["user"], batch["item"]), batch["label"])
        users, items, labels = self.source_pairs(batch["user"])
        source = (F.binary_cross_entropy_with_logits(self._logits(self.head_s, self.source_user(users), self.item_s(items)),
                                                     labels) if len(users) else target.new_zeros(()))
        eye = torch.eye(self.mapping.shape[0], device=self.mapping.device)
        return target + source + self.orth * (self.mapping.T @ self.mapping - eye).pow(2).sum()

    def score(self, batch, chunk: int = 256):
        """Every target item for each user: the scorer's first layer is split into its user and item
        halves (computed once each), only the later layers run per (user, item) pair."""
        first, rest = self.head_t[0], self.head_t[1:]
        d = self.user_t.embedding_dim
        u = self.target_user(batch["user"]) @ first.weight[:, :d].T + first.bias
        v = self.item_t.weight @ first.weight[:, d:].T
        out = torch.cat([rest(u[i:i + chunk, None, :] + v).squeeze(-1) for i in range(0, len(u), chunk)])
        out[:, 0] = -torch.inf
        return out
