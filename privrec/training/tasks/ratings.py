"""Training on (user, item) interactions as a set, not a sequence: the task of matrix models
(BPR-MF, NeuMF, DMF, HeteroCDR).

Scenario (NCF's protocol, used by PriCDR): per user two items held out at random (validation,
test; :func:`privrec.data.splits.random_holdout`); every training interaction is a positive,
paired with ``n_negatives`` items drawn uniformly from those the user has not interacted with in
training (fresh every epoch). Batches: ``user`` (B,), ``item`` (B, 1 + n_negatives) with the
positive first, ``label`` (B, 1 + n_negatives) 1/0 — a pointwise model reads all columns, a
pairwise one (BPR) compares column 0 with the others. Evaluation ranks the held-out item of each
user (the evaluator's sampled or full protocol); the model scores from the user id alone, since
everything it knows about a user (its rows, its published source row) it holds itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

from privrec.data.splits import Split
from privrec.errors import ParameterError
from privrec.evaluation.negatives import sample_negatives
from privrec.training.tasks.base import SplitEvaluation


@dataclass
class InteractionTask(SplitEvaluation):
    split: Split
    n_items: int
    n_negatives: int = 4

    def __post_init__(self) -> None:
        if self.n_negatives < 1:
            raise ParameterError(f"n_negatives must be >= 1, got {self.n_negatives}")
        self._history = {"valid": self.split.history("valid"), "test": self.split.history("test")}
        train = self.split.train
        self._users = train.row_ids().astype(np.int64)
        self._items = train.items.astype(np.int64)
        if not len(self._items):
            raise ParameterError("no training interactions")

    @property
    def n_train_targets(self) -> int:
        return len(self._items)

    def n_train_batches(self, batch_size: int) -> int:
        return -(-len(self._items) // batch_size)

    def train_batches(self, batch_size: int, rng: np.random.Generator) -> Iterator[dict[str, torch.Tensor]]:
        order = rng.permutation(len(self._items))
        k = self.n_negatives
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            users = self._users[idx]
            neg = sample_negatives(rng, users, self.split.train, self.n_items, k)
            items = np.concatenate([self._items[idx, None], neg], axis=1)
            label = np.zeros(items.shape, np.float32)
            label[:, 0] = 1.0
            yield {"user": torch.from_numpy(users), "item": torch.from_numpy(items.astype(np.int64)),
                   "label": torch.from_numpy(label)}

    def eval_batch(self, stage: str, users: np.ndarray) -> dict[str, torch.Tensor]:
        return {"user": torch.from_numpy(np.asarray(users, dtype=np.int64))}

    def describe(self) -> str:
        n_eval = len(self.split.eval_users("test"))
        return (f"{len(self._items):,} training interactions x (1 positive + {self.n_negatives} uniform negatives), "
                f"{n_eval:,} users with a held-out validation and test item ({self.split.kind})")
