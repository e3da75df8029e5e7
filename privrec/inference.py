"""Use a trained model: ``TrainedModel.load(path).recommend(user_ids, k)``.

Recommendations are raw item ids, best first, excluding items the user has already
interacted with unless ``exclude_seen=False``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import torch

from privrec.data.interactions import IdMap
from privrec.data.sequences import Sequences, pad_left
from privrec.errors import ParameterError
from privrec.models import Recommender
from privrec.training.checkpoint import model_from_checkpoint, read_checkpoint


@dataclass
class TrainedModel:
    model: Recommender
    users: IdMap
    items: IdMap
    history: Sequences
    max_len: int
    meta: dict

    @classmethod
    def load(cls, path: str | os.PathLike) -> TrainedModel:
        payload = read_checkpoint(path)
        return cls(
            model=model_from_checkpoint(payload),
            users=IdMap(np.array(payload["users"], dtype=object), "user"),
            items=IdMap(np.array(payload["items"], dtype=object), "item"),
            history=Sequences(payload["history_indptr"].numpy(), payload["history_items"].numpy()),
            max_len=int(payload["max_len"]),
            meta=payload.get("meta", {}),
        )

    @cached_property
    def _reads(self) -> Sequences:
        return self.model.read(self.history)

    @torch.no_grad()
    def recommend(self, user_ids, k: int = 10, exclude_seen: bool = True) -> dict[str, list[str]]:
        """Top-``k`` raw item ids for each raw user id (unknown ids raise a clear error)."""
        if k < 1:
            raise ParameterError(f"k must be >= 1, got {k}")
        if isinstance(user_ids, (str, int)):
            user_ids = [user_ids]
        raw = [str(u) for u in user_ids]
        codes = self.users.encode(raw)
        k = min(k, len(self.items))
        reads = self._reads
        seq = pad_left(reads.indptr, reads.items, self.max_len, codes).astype(np.int64)
        scores = self.model.score({"seq": torch.from_numpy(seq), "user": torch.from_numpy(codes.astype(np.int64))})
        scores = scores.float()
        scores[:, 0] = -torch.inf
        if exclude_seen:
            for row, u in enumerate(codes):
                seen = torch.from_numpy(self.history.row(int(u)).astype(np.int64))
                scores[row, seen] = -torch.inf
        top = torch.topk(scores, k, dim=1)
        out = {}
        for row, user in enumerate(raw):
            idx = top.indices[row][torch.isfinite(top.values[row])].numpy()
            out[user] = [str(t) for t in self.items.decode(idx)]
        return out
