"""What a model may read when users upload privacy-filtered histories (Mu & Lim, Alg. 1 line 19).

Each user perturbs the history they would upload at test time — every item before the test item
(train + validation items under leave-one-out) — **once**, and everything the model reads is
that one release: its prefix aligned with the train items is the training input and the
validation history, the whole of it is the test history. Releasing the same items twice with
fresh randomness would compose two releases and break the per-user bound, so the prefixes are
never perturbed again.

What is *not* perturbed, as in the paper ("we do not apply randomised response to labels"):
the training labels (the true train items the cloze/next-item loss predicts) and the held-out
validation/test items. They are outside the guarantee; the certificate says so.

Users whose setting the bound does not hold for (keep probability < 1/2, see
:func:`privrec.privacy.rr.keep_probabilities`) do not publish by default: they contribute no
training sample and the model reads an empty history for them at evaluation (they are still
evaluated, so every ε is scored on the same users).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from privrec.data.sequences import Sequences
from privrec.data.splits import Split
from privrec.errors import ParameterError


@dataclass(frozen=True, eq=False)
class PrivateInputs:
    """Per-user model inputs cut from one perturbed history per user.

    ``train``: aligned with ``split.train`` for published users, empty rows otherwise;
    ``history[stage]``: what the model reads at ``stage`` (empty rows for unpublished users);
    ``published``: bool per user row."""

    train: Sequences
    history: dict[str, Sequences]
    published: np.ndarray

    @property
    def n_published(self) -> int:
        return int(self.published[1:].sum())

    def labels(self, train: Sequences) -> Sequences:
        """The true train items of published users (unpublished rows empty): what the loss predicts."""
        return train.take_slices(np.zeros(train.n_rows, np.int64), np.where(self.published, train.lengths, 0))


def private_inputs(split: Split, perturbed: Sequences, published: np.ndarray | None = None) -> PrivateInputs:
    """Cut ``perturbed`` — each user's perturbed test history (``split.history("test")``),
    position-aligned with it — into the training input and the per-stage histories.

    ``published``: bool per user row (default: every user with a non-empty perturbed row);
    an unpublished user's row in ``perturbed`` is ignored."""
    hist = split.history("test")
    if perturbed.n_rows != hist.n_rows:
        raise ParameterError(f"perturbed histories have {perturbed.n_rows} rows; the split has {hist.n_rows} users")
    published = (perturbed.lengths > 0) if published is None else np.asarray(published, dtype=bool).copy()
    if published.shape != (hist.n_rows,):
        raise ParameterError(f"published must hold one flag per user row ({hist.n_rows}), got shape {published.shape}")
    published &= hist.lengths > 0
    bad = published & (perturbed.lengths != hist.lengths)
    if bad.any():
        u = int(np.flatnonzero(bad)[0])
        raise ParameterError(f"the perturbed history of user code {u} has {perturbed.lengths[u]} items, its history "
                             f"{hist.lengths[u]}: a release must keep every position")
    zero = np.zeros(hist.n_rows, np.int64)
    n_train = np.where(published, split.train.lengths, 0)
    test = perturbed.take_slices(zero, np.where(published, hist.lengths, 0))
    train = perturbed.take_slices(zero, n_train)
    return PrivateInputs(train=train, history={"valid": train, "test": test}, published=published)
