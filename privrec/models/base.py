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

    def encode(self, seq: torch.Tensor, last: int | None = None) -> torch.Tensor:
        """States of every position, (B, L, d); with ``last``: of the last ``last`` positions only,
        (B, last, d), equal to ``encode(seq)[:, -last:]`` (an encoder may skip work for the others)."""
        raise NotImplementedError

    def item_logits(self, states: torch.Tensor) -> torch.Tensor:
        """Scores of the items 1..n_items (no padding column): what the training loss reads."""
        return states @ self.item_embedding.weight[1:].T

    def logits(self, states: torch.Tensor) -> torch.Tensor:
        """Scores of the ids 0..n_items with the padding column at -inf (never predicted)."""
        return F.pad(self.item_logits(states), (1, 0), value=-torch.inf)

    def loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Cross-entropy over the items at every position with a target. Computed on the items' own
        scores (the softmax of :meth:`logits` with its -inf padding column, exactly): writing -inf into
        the logits cost a copy and a fill of the whole (targets x items) gradient in backward."""
        target = batch["target"]
        cols = torch.nonzero((target > 0).any(0))   # positions with a target: the last few for strided windows
        last = target.shape[1] - int(cols[0]) if len(cols) else 1          # and prefixes, every one for windows
        target = target[:, -last:]
        states = self.encode(batch["seq"], last=last)
        mask = target > 0
        return F.cross_entropy(self.item_logits(states[mask]), target[mask] - 1)

    def score(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        states = self.encode(batch["seq"], last=1)[:, -1, :]  # front padding: the last position is the newest
        return self.logits(states)
