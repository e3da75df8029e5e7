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
    loss_type: str = "ce"           # "ce": softmax over all items (RecBole); "bce": one sampled negative (SASRec's own)

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
        if self.loss_type == "bce":
            return self._sampled_bce(states[mask], target, mask, batch["seq"])
        return F.cross_entropy(self.item_logits(states[mask]), target[mask] - 1)

    def _sampled_bce(self, states: torch.Tensor, target: torch.Tensor, mask: torch.Tensor,
                     seq: torch.Tensor) -> torch.Tensor:
        """SASRec's own loss (Kang & McAuley, Eq. 6; S3Rec trains its baselines so): binary cross-entropy of
        each target against one item drawn uniformly from those not in the row (its window and targets),
        averaged over the targets. Negatives come from torch's generator (seeded and saved with the state)."""
        rows = torch.nonzero(mask)[:, 0]
        neg = unseen_items(torch.cat([seq, target], 1)[rows], self.item_embedding.num_embeddings - 1)
        emb = self.item_embedding
        pos_logit = (states * emb(target[mask])).sum(-1)
        neg_logit = (states * emb(neg)).sum(-1)
        return (F.softplus(-pos_logit) + F.softplus(neg_logit)).mean()   # -log s(pos) - log(1 - s(neg))

    def score(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        states = self.encode(batch["seq"], last=1)[:, -1, :]  # front padding: the last position is the newest
        return self.logits(states)


def unseen_items(seen: torch.Tensor, n_items: int, tries: int = 1000) -> torch.Tensor:
    """One item of 1..n_items per row of ``seen`` (ids, 0 = padding), uniform over the items not in that row:
    drawn uniformly and redrawn where it hit the row (rows that hold every item are refused)."""
    from privrec.errors import ParameterError

    neg = torch.randint(1, n_items + 1, (seen.shape[0],), device=seen.device)
    for _ in range(tries):
        hit = (seen == neg[:, None]).any(1)
        if not hit.any():
            return neg
        neg[hit] = torch.randint(1, n_items + 1, (int(hit.sum()),), device=seen.device)
    raise ParameterError(f"no item outside a training row after {tries} draws: a row holds (nearly) all {n_items} "
                         "items; the sampled loss needs items a user has not seen")
