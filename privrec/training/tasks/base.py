"""What the evaluator reads from every task built on a :class:`~privrec.data.splits.Split`."""

from __future__ import annotations

import numpy as np
import torch

from privrec.data.sequences import Sequences, pad_left
from privrec.data.splits import Split


def trim_padding(inputs: np.ndarray) -> np.ndarray:
    """Front-padded rows without the columns that are padding in every row (at least one column).

    Prefix batches always, window batches where asked (``SequenceTask.trim_padding``). A batch of prefixes is padded to ``max_len`` (100 under the DIPSGNN protocol) while its longest
    prefix is often far shorter (bucketed batches: lengths 1..79 on ML-1M); the padding is read by no
    model (masked keys, bias-free GRU from a zero state, graphs of the nonzero items, positions
    counted from the right) but was computed by all of them: an exact 1.4x (SR-GNN family) to ~4-5x
    (SASRec, GRU4Rec) per step."""
    width = max(1, int((inputs > 0).sum(1).max())) if len(inputs) else inputs.shape[1]
    return inputs[:, inputs.shape[1] - width:]


class SplitEvaluation:
    """What the evaluator reads from a task with a ``split`` and per-stage ``_history``."""

    split: Split
    _history: dict[str, Sequences]

    def stage_targets(self, stage: str) -> Sequences:
        return self.split.targets(stage)

    def stage_history(self, stage: str) -> Sequences:
        return self._history[stage]

    def train_items(self) -> Sequences:
        return self.split.train


class HistoryBatches(SplitEvaluation):
    """Evaluation batches of a single-domain task: the last ``max_len`` entries of what the model
    reads at ``stage`` (``_read``: the true history, a published one, or its tokens)."""

    max_len: int
    _read: dict[str, Sequences]

    def eval_batch(self, stage: str, users: np.ndarray) -> dict[str, torch.Tensor]:
        hist = self._read[stage]
        users = np.asarray(users, dtype=np.int64)
        seq = pad_left(hist.indptr, hist.items, self.max_len, users).astype(np.int64)
        return {"seq": torch.from_numpy(seq), "user": torch.from_numpy(users)}
