"""Next-item prediction over windows of a user's sequence (SASRec, GRU4Rec)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

from privrec.data.sequences import Sequences
from privrec.data.splits import Split
from privrec.errors import ParameterError
from privrec.training.tasks.base import HistoryBatches, trim_padding
from privrec.training.tasks.private import PrivateInputs

WINDOW_MODES = ("all", "last")


def next_item_windows(train: Sequences, max_len: int, mode: str = "all", stride: int | None = None,
                      inputs: Sequences | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Training windows (inputs, targets, user) for next-item prediction.

    For a user with train items s_1..s_n the targets are s_2..s_n, each predicted from the items
    before it. Windows of ``max_len`` positions are cut from the end of the sequence, one every
    ``stride`` targets, and each window's loss covers only its last ``stride`` positions
    (``target`` 0 elsewhere), so **every interaction is a target exactly once per epoch** and has at
    least ``max_len - stride`` items of context (fewer only near the start of a sequence):

    * ``stride = max_len`` (default): non-overlapping windows, loss at every position; mean
      context per target ≈ max_len / 2 (23.9 items on ML-1M at L = 50) — the cheapest epoch;
    * ``stride = 1``: one window per target with loss at its last position only, i.e. RecBole's
      prefix augmentation (every prefix a sample; mean context 41.7 on ML-1M) at ``max_len``
      times the encoder work per epoch;
    * in between: overlapping windows, ``max_len / stride`` times the encoder work.

    ``mode="last"`` keeps only each user's last window (the original SASRec recipe).
    Windows are front zero-padded: shape (n_windows, max_len); ids are int32. ``inputs``: what the
    model reads instead of ``train`` (a position-aligned perturbation; targets stay ``train``).
    """
    if inputs is not None and not np.array_equal(inputs.lengths, train.lengths):
        raise ParameterError("inputs must be position-aligned with the train sequences (same length per user)")
    if mode not in WINDOW_MODES:
        raise ParameterError(f"window mode must be one of {WINDOW_MODES}, got {mode!r}")
    stride = max_len if stride is None else stride
    if not 1 <= stride <= max_len:
        raise ParameterError(f"stride must lie in 1..max_len = {max_len}, got {stride}; 1 = every prefix a sample "
                             "(RecBole), max_len = non-overlapping windows")
    n_targets = np.maximum(train.lengths - 1, 0)
    n_win = np.where(n_targets > 0, -(-n_targets // stride), 0) if mode == "all" else (n_targets > 0).astype(np.int64)
    users = np.repeat(np.arange(train.n_rows), n_win)
    k = np.arange(n_win.sum()) - np.repeat(np.cumsum(n_win) - n_win, n_win)    # 0 = last window
    row_start = train.indptr[users]
    end = train.indptr[users + 1] - k * stride                                   # exclusive end of targets
    col = np.arange(max_len)
    tpos = end[:, None] - max_len + col[None, :]                                 # absolute target positions
    ok = tpos >= (row_start + 1)[:, None]
    last = len(train.items) - 1
    src = train.items if inputs is None else inputs.items
    inputs = np.where(ok, src[np.clip(tpos - 1, 0, last)], 0).astype(np.int32)
    ok &= col[None, :] >= max_len - stride                                       # loss on the last `stride` only
    targets = np.where(ok, train.items[np.clip(tpos, 0, last)], 0).astype(np.int32)
    return inputs, targets, users.astype(np.int64)


def mean_context(inputs: np.ndarray, targets: np.ndarray) -> float:
    """Mean number of items a target is predicted from (non-padding inputs up to its position)."""
    ctx = np.cumsum(inputs > 0, axis=1)
    mask = targets > 0
    return float(ctx[mask].mean()) if mask.any() else 0.0


@dataclass
class SequenceTask(HistoryBatches):
    """Single-domain next-item prediction over a split.

    Scenario: a user's train items s_1..s_n are cut into windows by :func:`next_item_windows`
    (every s_2..s_n a target exactly once per epoch, predicted from up to ``max_len`` items before
    it); ``window_mode="last"`` keeps one window per user. At evaluation the model reads the last
    ``max_len`` items of the stage history (train for validation, train + validation for test)
    and scores every item for the held-out one. Nothing after a target is ever an input for it.
    """

    split: Split
    n_items: int
    max_len: int = 50
    window_mode: str = "all"
    stride: int | None = None           # None: max_len (non-overlapping windows); 1: every prefix (RecBole)
    private: PrivateInputs | None = None   # published (perturbed) histories are read; labels stay true
    trim_padding: bool = False          # batches cut to their longest row (models that read no padding: SASRec,
                                        # GRU4Rec); off by default: it changes dropout's draws, so earlier runs'
                                        # numbers (and their reruns) stay as they were

    def __post_init__(self) -> None:
        if self.max_len <= 0:
            raise ParameterError(f"max_len must be positive, got {self.max_len}")
        labels, inputs = self.split.train, None
        if self.private is not None:
            labels, inputs = self.private.labels(self.split.train), self.private.train
        self._inputs, self._targets, self._users = next_item_windows(labels, self.max_len, self.window_mode,
                                                                     self.stride, inputs)
        self._history = {"valid": self.split.history("valid"), "test": self.split.history("test")}
        self._read = self._history if self.private is None else self.private.history

    @property
    def n_train_windows(self) -> int:
        return len(self._inputs)

    @property
    def n_train_targets(self) -> int:
        return int((self._targets > 0).sum())

    @property
    def mean_context(self) -> float:
        """Mean items of context per training target (23.9 for windows, 41.7 for prefixes on ML-1M)."""
        return mean_context(self._inputs, self._targets)

    def describe(self) -> str:
        stride = self.stride or self.max_len
        filtered = "" if self.private is None else (f"; privacy-filtered inputs of {self.private.n_published:,} "
                                                     "publishing users, true labels")
        return (f"{self.n_train_targets:,} targets in {self.n_train_windows:,} windows (stride {stride}, mean context "
                f"{self.mean_context:.1f} items{filtered})")

    # ---- training
    @property
    def n_train_samples(self) -> int:
        return len(self._inputs)

    @property
    def train_sample_users(self) -> np.ndarray:
        """Whose each training window is (user rows; user-level DP-SGD groups by it)."""
        return self._users

    def train_batch(self, idx: np.ndarray) -> dict[str, torch.Tensor]:
        """The training windows ``idx`` as one batch (cut to its longest window with ``trim_padding``: the
        same loss and gradients, ~max_len / longest less work where histories are short)."""
        inputs, targets = self._inputs[idx], self._targets[idx]
        if self.trim_padding:
            inputs = trim_padding(inputs)
            targets = targets[:, targets.shape[1] - inputs.shape[1]:]
        return {"seq": torch.from_numpy(inputs.astype(np.int64)), "target": torch.from_numpy(targets.astype(np.int64)),
                "user": torch.from_numpy(self._users[idx])}

    def eval_batch(self, stage: str, users: np.ndarray) -> dict[str, torch.Tensor]:
        batch = super().eval_batch(stage, users)
        if self.trim_padding:
            batch["seq"] = torch.from_numpy(trim_padding(batch["seq"].numpy()))
        return batch

    def train_batches(self, batch_size: int, rng: np.random.Generator) -> Iterator[dict[str, torch.Tensor]]:
        order = rng.permutation(len(self._inputs))
        for start in range(0, len(order), batch_size):
            yield self.train_batch(order[start:start + batch_size])

    def n_train_batches(self, batch_size: int) -> int:
        return -(-len(self._inputs) // batch_size)
