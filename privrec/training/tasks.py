"""Tasks turn a :class:`~privrec.data.splits.Split` into model batches.

A task owns everything about *inputs*; models own everything about *outputs*; the trainer
and the evaluator only move batches between them. One task per kind of data:
:class:`SequenceTask` for single-domain next-item prediction (SASRec, GRU4Rec, ...).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np
import torch

from privrec.data.sequences import Sequences, pad_left
from privrec.data.splits import Split
from privrec.errors import ParameterError

WINDOW_MODES = ("all", "last")


def next_item_windows(train: Sequences, max_len: int, mode: str = "all") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Training windows (inputs, targets, user) for next-item prediction at every position.

    For a user with train items s_1..s_n, inputs are s_1..s_{n-1} and targets s_2..s_n.
    ``mode="all"`` cuts them, from the end, into non-overlapping windows of ``max_len`` so
    every interaction is a target exactly once per epoch (no prefix augmentation);
    ``mode="last"`` keeps only the last window (the original SASRec recipe).
    Windows are front zero-padded: shape (n_windows, max_len).
    """
    if mode not in WINDOW_MODES:
        raise ParameterError(f"window mode must be one of {WINDOW_MODES}, got {mode!r}")
    n_targets = np.maximum(train.lengths - 1, 0)
    n_win = np.where(n_targets > 0, -(-n_targets // max_len), 0) if mode == "all" else (n_targets > 0).astype(np.int64)
    users = np.repeat(np.arange(train.n_rows), n_win)
    k = np.arange(n_win.sum()) - np.repeat(np.cumsum(n_win) - n_win, n_win)    # 0 = last window
    row_start = train.indptr[users]
    end = train.indptr[users + 1] - k * max_len                                  # exclusive end of targets
    col = np.arange(max_len)
    tpos = end[:, None] - max_len + col[None, :]                                 # absolute target positions
    ok = tpos >= (row_start + 1)[:, None]
    targets = np.where(ok, train.items[np.clip(tpos, 0, len(train.items) - 1)], 0).astype(np.int64)
    inputs = np.where(ok, train.items[np.clip(tpos - 1, 0, len(train.items) - 1)], 0).astype(np.int64)
    return inputs, targets, users.astype(np.int64)


@dataclass
class SequenceTask:
    """Single-domain next-item prediction over a split."""

    split: Split
    n_items: int
    max_len: int = 50
    window_mode: str = "all"

    def __post_init__(self) -> None:
        if self.max_len <= 0:
            raise ParameterError(f"max_len must be positive, got {self.max_len}")
        self._inputs, self._targets, self._users = next_item_windows(self.split.train, self.max_len, self.window_mode)
        self._history = {"valid": self.split.history("valid"), "test": self.split.history("test")}

    @property
    def n_train_windows(self) -> int:
        return len(self._inputs)

    @property
    def n_train_targets(self) -> int:
        return int((self._targets > 0).sum())

    # ---- training
    def train_batches(self, batch_size: int, rng: np.random.Generator) -> Iterator[dict[str, torch.Tensor]]:
        order = rng.permutation(len(self._inputs))
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            yield {"seq": torch.from_numpy(self._inputs[idx]), "target": torch.from_numpy(self._targets[idx]),
                   "user": torch.from_numpy(self._users[idx])}

    def n_train_batches(self, batch_size: int) -> int:
        return -(-len(self._inputs) // batch_size)

    # ---- evaluation (RankingTask protocol)
    def stage_targets(self, stage: str) -> Sequences:
        return self.split.targets(stage)

    def stage_history(self, stage: str) -> Sequences:
        return self._history[stage]

    def train_items(self) -> Sequences:
        return self.split.train

    def eval_batch(self, stage: str, users: np.ndarray) -> dict[str, torch.Tensor]:
        hist = self._history[stage]
        seq = pad_left(hist.indptr, hist.items, self.max_len, users).astype(np.int64)
        return {"seq": torch.from_numpy(seq), "user": torch.from_numpy(np.asarray(users, dtype=np.int64))}
