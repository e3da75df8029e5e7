"""What every model provides to the trainer and the evaluator.

``loss(batch) -> scalar`` for training and ``score(batch) -> (B, n_items + 1)`` next-item
scores for evaluation and inference (column 0 is padding and ignored). ``config()``
returns the constructor arguments so a checkpoint can rebuild the model.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class Recommender(nn.Module):
    name: str = "recommender"
    task: str = "windows"       # how it is trained: privrec.training.tasks.task_for picks the task

    def loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        raise NotImplementedError

    def score(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        raise NotImplementedError

    def config(self) -> dict:
        raise NotImplementedError

    def read(self, seqs):
        """The id sequence :meth:`score` reads for item histories ``seqs`` (``Sequences``): the items
        themselves, or tokens for a model with its own vocabulary."""
        return seqs


class NextItemModel(Recommender):
    """A sequence encoder with a shared item table: ``encode(seq) -> (B, L, d)`` states whose
    inner product with item embeddings gives next-item logits (cross-entropy over all items
    at every non-padding position)."""

    item_embedding: nn.Embedding

    def encode(self, seq: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def logits(self, states: torch.Tensor) -> torch.Tensor:
        out = states @ self.item_embedding.weight.T
        out[..., 0] = -torch.inf                     # never predict padding
        return out

    def loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        states = self.encode(batch["seq"])
        target = batch["target"]
        mask = target > 0
        logits = self.logits(states[mask])
        return F.cross_entropy(logits, target[mask])

    def score(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        states = self.encode(batch["seq"])[:, -1, :]  # front padding: the last position is the newest
        return self.logits(states)
