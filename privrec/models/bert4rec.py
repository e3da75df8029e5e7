"""BERT4Rec (Sun et al., CIKM 2019) as configured by RecBole: learned positions, post-LN transformer
blocks with *bidirectional* self-attention, an output projection (linear -> GELU -> LayerNorm), and
logits against the tied item embeddings plus a per-item bias.

Vocabulary: 0 = padding, 1..n_items = items, ``n_items + 1`` = the [mask] token
(:attr:`BERT4Rec.mask_token`). Training is cloze: the task
(:class:`~privrec.training.tasks.ClozeTask`) hides random positions behind [mask] and the loss is
cross-entropy at those positions only (``target`` > 0 there; the inherited
:meth:`NextItemModel.loss`). :meth:`BERT4Rec.score` takes a plain history like every model's and
appends [mask] after its last ``max_len - 1`` items (RecBole's ``reconstruct_test_data``): the
next item is the cloze question at the last position.
"""

from __future__ import annotations

import torch
from torch import nn

from privrec.models.base import NextItemModel
from privrec.models.sasrec import SelfAttentionBlock, _init


class BERT4Rec(NextItemModel):
    name = "bert4rec"
    task = "cloze"          # trained by ClozeTask (privrec.training.tasks.task_for)

    def __init__(self, n_items: int, max_len: int = 200, hidden: int = 64, layers: int = 2, heads: int = 2,
                 inner: int = 256, dropout: float = 0.2, attn_dropout: float = 0.2, mask_prob: float = 0.2,
                 layer_norm_eps: float = 1e-12, init_std: float = 0.02):
        super().__init__()
        self._config = dict(n_items=n_items, max_len=max_len, hidden=hidden, layers=layers, heads=heads, inner=inner,
                            dropout=dropout, attn_dropout=attn_dropout, mask_prob=mask_prob,
                            layer_norm_eps=layer_norm_eps, init_std=init_std)
        self.n_items = n_items
        self.max_len = max_len
        self.mask_prob = mask_prob          # read by the cloze task (privrec.training.tasks.ClozeTask)
        self.mask_token = n_items + 1
        self.item_embedding = nn.Embedding(n_items + 2, hidden, padding_idx=0)
        self.position_embedding = nn.Embedding(max_len, hidden)
        self.norm = nn.LayerNorm(hidden, eps=layer_norm_eps)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(
            SelfAttentionBlock(hidden, heads, inner, dropout, attn_dropout, layer_norm_eps) for _ in range(layers))
        self.output = nn.Sequential(nn.Linear(hidden, hidden), nn.GELU(), nn.LayerNorm(hidden, eps=layer_norm_eps))
        self.output_bias = nn.Parameter(torch.zeros(n_items + 1))
        self.apply(lambda m: _init(m, init_std))

    def config(self) -> dict:
        return dict(self._config)

    def encode(self, seq: torch.Tensor) -> torch.Tensor:
        if seq.shape[1] > self.max_len:
            seq = seq[:, -self.max_len:]
        length = seq.shape[1]
        pos = torch.arange(length, device=seq.device)
        x = self.drop(self.norm(self.item_embedding(seq) + self.position_embedding(pos)[None]))
        # every position sees every non-padding position; the diagonal stays open so padding rows
        # attend to themselves (no empty softmax)
        eye = torch.eye(length, dtype=torch.bool, device=seq.device)
        mask = (seq > 0)[:, None, None, :] | eye
        for block in self.blocks:
            x = block(x, mask)
        return self.output(x)

    def score(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        seq = batch["seq"][:, -(self.max_len - 1):]
        masked = torch.cat([seq, torch.full((seq.shape[0], 1), self.mask_token, dtype=seq.dtype, device=seq.device)], 1)
        return self.logits(self.encode(masked)[:, -1, :])

    def logits(self, states: torch.Tensor) -> torch.Tensor:
        """Scores for ids 0..n_items (padding column -inf; the [mask] token is never a candidate)."""
        out = states @ self.item_embedding.weight[: self.n_items + 1].T + self.output_bias
        out[..., 0] = -torch.inf
        return out
