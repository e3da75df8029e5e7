"""GRU4Rec (Hidasi et al., ICLR 2016) as configured by RecBole: item embedding -> dropout ->
GRU -> linear to the embedding size; inner-product output, cross-entropy over all items."""

from __future__ import annotations

import torch
from torch import nn

from privrec.models.base import NextItemModel
from privrec.models.layers import Dropout


class GRU4Rec(NextItemModel):
    name = "gru4rec"

    def __init__(self, n_items: int, max_len: int = 50, embedding: int = 64, hidden: int = 128, layers: int = 1,
                 dropout: float = 0.3):
        super().__init__()
        self._config = dict(n_items=n_items, max_len=max_len, embedding=embedding, hidden=hidden, layers=layers,
                            dropout=dropout)
        self.max_len = max_len
        self.item_embedding = nn.Embedding(n_items + 1, embedding, padding_idx=0)
        self.drop = Dropout(dropout)
        self.gru = nn.GRU(embedding, hidden, num_layers=layers, batch_first=True, bias=False)
        self.proj = nn.Linear(hidden, embedding)
        nn.init.xavier_normal_(self.item_embedding.weight)
        with torch.no_grad():
            self.item_embedding.weight[0].zero_()
        for name, p in self.gru.named_parameters():
            if "weight" in name:
                nn.init.xavier_uniform_(p)

    def config(self) -> dict:
        return dict(self._config)

    def encode(self, seq: torch.Tensor, last: int | None = None) -> torch.Tensor:
        if seq.shape[1] > self.max_len:
            seq = seq[:, -self.max_len:]
        out, _ = self.gru(self.drop(self.item_embedding(seq)))
        return self.proj(out if last is None else out[:, -last:])
