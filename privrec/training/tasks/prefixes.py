"""DIPSGNN's protocol (Hu & Fang, Sec. 5.1, after SR-GNN / APGNN): every prefix is a sample, in
training *and* in evaluation.

Per user the first 80% of the sequence trains and the last 20% tests (``temporal_fraction`` with
no validation part). Each training item after the first is the label of the prefix before it;
a random ``valid_frac`` of those training samples (seeded, the paper's "random 10% subset of the
training set" — random, not temporal) is held out for model selection and never trained on. Each
test item is the label of everything before it (training items and earlier test items; our
reading of "similarly, we can generate subsequences for the test set"), so the model sees the
earlier test items as context but is never trained on them. Inputs keep the last ``max_len``
items.

The evaluator ranks per *sample* here (a sample is a row of the stage's targets with exactly one
item), so HR@K is the paper's Recall@K and MRR@K its MRR@K; history is not masked (SR-GNN's
protocol).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import torch

from privrec.data.sequences import Sequences
from privrec.data.splits import temporal_fraction
from privrec.errors import ParameterError
from privrec.training.tasks.base import trim_padding


def prefix_samples(seqs: Sequences, max_len: int, first: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(inputs (N, max_len) front-padded, targets (N,), users (N,)): one sample per position p >= first[u]
    (>= 1) of each row u, the label ``row(u)[p]`` and the up to ``max_len`` items before it."""
    start = np.maximum(np.asarray(first, dtype=np.int64), 1)
    count = np.maximum(seqs.lengths - start, 0)
    users = np.repeat(np.arange(seqs.n_rows), count)
    offset = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
    pos = seqs.indptr[users] + start[users] + offset                    # absolute label positions
    ctx = pos[:, None] - max_len + np.arange(max_len)[None, :]
    ok = ctx >= seqs.indptr[users][:, None]
    inputs = np.where(ok, seqs.items[np.clip(ctx, 0, None)], 0).astype(np.int32)
    return inputs, seqs.items[pos].astype(np.int64), users


def _rows(inputs: np.ndarray) -> Sequences:
    """Sample i as row i + 1 of a CSR (row 0 empty, like the padding user)."""
    lengths = np.concatenate([[0], (inputs > 0).sum(1)])
    return Sequences(np.concatenate([[0], np.cumsum(lengths)]), inputs[inputs > 0].astype(np.int32))


BUCKET_POOL = 32                  # batches per length-sorted pool (train_batches with bucket=True)


class PrefixTask:
    """Training and evaluation on prefix samples of ``seqs`` (see module doc)."""

    def __init__(self, seqs: Sequences, n_items: int, max_len: int = 100, test_frac: float = 0.2,
                 valid_frac: float = 0.1, seed: int = 0, keep_last: int | None = None, bucket: bool = True):
        """``keep_last``: each user's sequence is first cut to its last ``keep_last`` items (the paper's
        "maximum length for user behavior sequences"; on ML-1M with rating >= 4 and 10-core this gives
        exactly its Table 1's 2,810 items and 365,535 interactions). ``bucket``: training batches of
        similar prefix length (see :meth:`train_batches`)."""
        if max_len < 1:
            raise ParameterError(f"max_len must be positive, got {max_len}")
        if not 0 < valid_frac < 1:
            raise ParameterError(f"valid_frac must lie in (0, 1), got {valid_frac}")
        if keep_last is not None:
            if keep_last < 3:
                raise ParameterError(f"keep_last must be >= 3 (train, validation and test need items), got {keep_last}")
            seqs = seqs.take_slices(np.maximum(seqs.lengths - keep_last, 0), seqs.lengths)
        self.n_items, self.max_len, self.bucket = n_items, max_len, bucket
        self.n_interactions = len(seqs.items)
        self.split = temporal_fraction(seqs, test_frac, 0.0)
        inputs, targets, users = prefix_samples(self.split.train, max_len, np.ones(seqs.n_rows, np.int64))
        held = np.random.default_rng([seed, 17]).random(len(targets)) < valid_frac
        self._train = (inputs[~held], targets[~held], users[~held])
        full = self.sequences = self.split.train.concat(self.split.test)     # each user's cut sequence
        self._eval = {"valid": (inputs[held], targets[held], users[held]),
                      "test": prefix_samples(full, max_len, self.split.train.lengths)}
        self._targets = {s: Sequences(np.concatenate([[0], np.arange(len(t) + 1)]), t.astype(np.int32))
                         for s, (_, t, _) in self._eval.items()}
        self._history = {s: _rows(x) for s, (x, _, _) in self._eval.items()}

    # ---- training (the batch format of SequenceTask with stride 1: label at the last position)
    @property
    def n_train_samples(self) -> int:
        return len(self._train[1])

    @property
    def train_sample_users(self) -> np.ndarray:
        """Whose each training sample is (user rows; user-level DP-SGD groups by it)."""
        return self._train[2]

    def train_batch(self, idx: np.ndarray) -> dict[str, torch.Tensor]:
        inputs, targets, users = (a[idx] for a in self._train)
        inputs = trim_padding(inputs)
        target = np.zeros(inputs.shape, dtype=np.int64)
        target[:, -1] = targets
        return {"seq": torch.from_numpy(inputs.astype(np.int64)), "target": torch.from_numpy(target),
                "user": torch.from_numpy(users.astype(np.int64))}

    def train_batches(self, batch_size: int, rng: np.random.Generator) -> Iterator[dict[str, torch.Tensor]]:
        """Every training sample once, in random batches. With ``bucket`` (default) the shuffled
        samples are cut into pools of ``BUCKET_POOL`` batches, each pool sorted by prefix length and
        cut into batches, and the batches shuffled: a graph batch is padded to its longest prefix, so
        similar lengths halve the padded work on ML-1M (prefix lengths 1..79) — same samples per epoch,
        batches homogeneous in length."""
        order = rng.permutation(self.n_train_samples)
        if not self.bucket:
            for start in range(0, len(order), batch_size):
                yield self.train_batch(order[start:start + batch_size])
            return
        lengths, pool = (self._train[0] > 0).sum(1), batch_size * BUCKET_POOL
        batches = []
        for start in range(0, len(order), pool):
            part = order[start:start + pool]
            part = part[np.argsort(lengths[part], kind="stable")]
            batches += [part[i:i + batch_size] for i in range(0, len(part), batch_size)]
        for j in rng.permutation(len(batches)):
            yield self.train_batch(batches[j])

    def n_train_batches(self, batch_size: int) -> int:
        return -(-self.n_train_samples // batch_size)

    def describe(self) -> str:
        return (f"{self.n_interactions:,} interactions: {self.n_train_samples:,} training prefixes, "
                f"{len(self._eval['valid'][1]):,} held out for validation (random), {len(self._eval['test'][1]):,} test "
                "prefixes (last 20% of each user)" + ("; batches bucketed by length" if self.bucket else ""))

    # ---- evaluation: one row per sample
    def stage_targets(self, stage: str) -> Sequences:
        return self._targets[stage]

    def stage_users(self, stage: str) -> np.ndarray:
        """Whose each ``stage`` ("valid" or "test") prefix is (user rows)."""
        return self._eval[stage][2]

    def stage_history(self, stage: str) -> Sequences:
        return self._history[stage]

    def train_items(self) -> Sequences:
        return self.split.train

    def eval_batch(self, stage: str, rows: np.ndarray) -> dict[str, torch.Tensor]:
        inputs, _, users = self._eval[stage]
        idx = np.asarray(rows, dtype=np.int64) - 1
        return {"seq": torch.from_numpy(trim_padding(inputs[idx]).astype(np.int64)),
                "user": torch.from_numpy(users[idx].astype(np.int64))}
