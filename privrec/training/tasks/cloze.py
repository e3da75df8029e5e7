"""Masked-item (cloze) training, BERT4Rec's protocol, with optional privacy-filtered inputs."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

from privrec.data.sequences import Sequences
from privrec.data.splits import Split
from privrec.errors import ParameterError
from privrec.training.tasks.base import HistoryBatches
from privrec.training.tasks.private import PrivateInputs


def cloze_chunks(labels: Sequences, inputs: Sequences, max_len: int, min_items: int = 2
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cut every user's sequence into consecutive chunks of ``max_len`` positions from its newest
    item backwards (the oldest chunk may be shorter) and keep chunks with >= ``min_items`` items.

    ``labels`` and ``inputs`` must have the same row lengths (``inputs`` = ``labels`` or a
    position-aligned perturbation of it). Returns front-padded (n_chunks, max_len) int32 matrices
    of inputs and labels and the user of each chunk. Every train item lies in exactly one chunk.
    """
    if not np.array_equal(labels.lengths, inputs.lengths):
        bad = int(np.flatnonzero(labels.lengths != inputs.lengths)[0])
        raise ParameterError(f"inputs must be position-aligned with the train sequences (same length per user); "
                             f"user code {bad} has {inputs.lengths[bad]} input items and {labels.lengths[bad]} labels")
    n = labels.lengths
    n_chunks = -(-n // max_len)
    users = np.repeat(np.arange(labels.n_rows), n_chunks)
    k = np.arange(n_chunks.sum()) - np.repeat(np.cumsum(n_chunks) - n_chunks, n_chunks)   # 0 = newest chunk
    start = labels.indptr[users]
    end = labels.indptr[users + 1] - k * max_len
    pos = end[:, None] - max_len + np.arange(max_len)[None, :]
    ok = pos >= start[:, None]
    safe = np.clip(pos, 0, max(len(labels.items) - 1, 0))
    lab = np.where(ok, labels.items[safe] if len(labels.items) else 0, 0).astype(np.int32)
    inp = np.where(ok, inputs.items[safe] if len(inputs.items) else 0, 0).astype(np.int32)
    keep = ok.sum(1) >= min_items
    return inp[keep], lab[keep], users[keep].astype(np.int64)


@dataclass
class ClozeTask(HistoryBatches):
    """Masked-item prediction (BERT4Rec; the bidirectional conditioning of Mu & Lim, Eq. 5).

    Scenario: each user's train items are cut into chunks of ``max_len`` (:func:`cloze_chunks`).
    Every epoch each item of a chunk is hidden behind the [mask] token (id ``n_items + 1``) with
    probability ``mask_prob``, at least one per chunk, and the model predicts the hidden items from
    both sides; fresh masks are drawn every epoch. At evaluation the model reads the last
    ``max_len - 1`` items of the stage history (train for validation, train + validation for test)
    followed by [mask], and the held-out item is scored there.

    Privacy-filtered training (Mu & Lim §3.2): with ``private``
    (:class:`~privrec.training.tasks.private.PrivateInputs`) the model *reads* each user's
    published (perturbed) history, in training and at evaluation, while the labels stay the true
    train items ("we do not apply randomised response to labels"); users who did not publish
    give no training chunk and are evaluated from an empty history. The evaluator's history
    masking and negative sampling still use the true history.
    """

    split: Split
    n_items: int
    max_len: int = 200
    mask_prob: float = 0.2
    private: PrivateInputs | None = None

    def __post_init__(self) -> None:
        if self.max_len < 2:
            raise ParameterError(f"max_len must be >= 2 (history + [mask]), got {self.max_len}")
        if not 0 < self.mask_prob < 1:
            raise ParameterError(f"mask_prob must lie in (0, 1), got {self.mask_prob}")
        self._history = {"valid": self.split.history("valid"), "test": self.split.history("test")}
        self._read = self._history if self.private is None else self.private.history
        labels, inputs = self.split.train, self.split.train
        if self.private is not None:
            labels, inputs = self.private.labels(self.split.train), self.private.train
        self._inputs, self._labels, self._users = self._chunks(labels, inputs)

    def _chunks(self, labels: Sequences, inputs: Sequences) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return cloze_chunks(labels, inputs, self.max_len)

    @property
    def mask_token(self) -> int:
        return self.n_items + 1

    @property
    def n_train_targets(self) -> int:
        """Train items that can be masked (one epoch masks about ``mask_prob`` of them)."""
        return int((self._labels > 0).sum())

    def describe(self) -> str:
        filtered = ("true inputs" if self.private is None else
                    f"privacy-filtered inputs of {self.private.n_published:,} publishing users, true labels")
        return (f"{self.n_train_targets:,} maskable items in {len(self._inputs):,} chunks of <= {self.max_len} "
                f"(mask probability {self.mask_prob}; {filtered})")

    # ---- training
    def mask(self, inputs: np.ndarray, labels: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Hide each item with probability ``mask_prob`` (at least one per row): returns the model
        input (hidden positions = [mask]) and the target (true item where hidden, 0 elsewhere)."""
        real = labels > 0
        u = rng.random(labels.shape)
        hide = real & (u < self.mask_prob)
        none = ~hide.any(1) & real.any(1)
        if none.any():                                  # the real position with the smallest draw
            hide[np.flatnonzero(none), np.where(real[none], u[none], 2.0).argmin(1)] = True
        return np.where(hide, self.mask_token, inputs), np.where(hide, labels, 0)

    def train_batches(self, batch_size: int, rng: np.random.Generator) -> Iterator[dict[str, torch.Tensor]]:
        order = rng.permutation(len(self._inputs))
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            seq, target = self.mask(self._inputs[idx], self._labels[idx], rng)
            yield {"seq": torch.from_numpy(seq.astype(np.int64)), "target": torch.from_numpy(target.astype(np.int64)),
                   "user": torch.from_numpy(self._users[idx])}

    def n_train_batches(self, batch_size: int) -> int:
        return -(-len(self._inputs) // batch_size)
