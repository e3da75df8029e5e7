"""Leakage-free splits. Validation selects models; the test split is read once, at the end.

A :class:`Split` holds three CSR parts per user. The model input for a stage is every
item *before* that stage's targets: ``train`` for validation, ``train+valid`` for test.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from privrec.data.sequences import Sequences
from privrec.errors import ParameterError

STAGES = ("valid", "test")


@dataclass(frozen=True, eq=False)
class Split:
    train: Sequences
    valid: Sequences
    test: Sequences
    kind: str
    params: dict

    def history(self, stage: str) -> Sequences:
        """Items a model may see when predicting ``stage`` targets."""
        if stage == "valid":
            return self.train
        if stage == "test":
            return self.train.concat(self.valid)
        raise ParameterError(f"unknown stage {stage!r}; use one of {STAGES}")

    def targets(self, stage: str) -> Sequences:
        if stage not in STAGES:
            raise ParameterError(f"unknown stage {stage!r}; use one of {STAGES}")
        return getattr(self, stage)

    def eval_users(self, stage: str) -> np.ndarray:
        """Users with at least one target in ``stage``."""
        return np.flatnonzero(self.targets(stage).lengths > 0).astype(np.int64)

    def full_history(self) -> Sequences:
        return self.train.concat(self.valid).concat(self.test)

    def digest(self, users, items) -> str:
        """SHA-256 of exactly what a model trained and is tested on: the raw user and item ids (``IdMap``
        tokens) and the train/valid/test sequences. A checkpoint stores it; evaluating on data with another
        digest (a dataset file edited since: other ids, other order, other times) is refused."""
        import hashlib

        h = hashlib.sha256()
        for tokens in (users.tokens, items.tokens):
            h.update("\x1f".join(map(str, tokens)).encode())
            h.update(b"\x1e")
        for part in (self.train, self.valid, self.test):
            h.update(np.ascontiguousarray(part.indptr, dtype=np.int64).tobytes())
            h.update(np.ascontiguousarray(part.items, dtype=np.int64).tobytes())
        return h.hexdigest()


def leave_one_out(seqs: Sequences, min_len: int = 3) -> Split:
    """Last item -> test, second last -> valid, rest -> train, for users with >= ``min_len`` items.

    Shorter users keep everything in train and are not evaluated (no target leaks into training).
    """
    if min_len < 3:
        raise ParameterError("leave-one-out needs min_len >= 3 (one train, one valid, one test item)")
    n = seqs.lengths
    ok = n >= min_len
    zero = np.zeros_like(n)
    train = seqs.take_slices(zero, np.where(ok, n - 2, n))
    valid = seqs.take_slices(np.where(ok, n - 2, n), np.where(ok, n - 1, n))
    test = seqs.take_slices(np.where(ok, n - 1, n), n)
    return Split(train, valid, test, "leave_one_out", {"min_len": min_len})


def temporal_fraction(seqs: Sequences, test_frac: float = 0.2, valid_frac: float = 0.1) -> Split:
    """Per user: the last ``test_frac`` of items -> test (DIPSGNN's 80/20 split); of the first
    part, the last ``valid_frac`` (at least one item) -> valid; the rest -> train.

    Counts are rounded down for test and up to one for valid; users with < 3 items stay in train.
    """
    if not (0 < test_frac < 1) or not (0 <= valid_frac < 1):
        raise ParameterError(f"fractions must lie in (0, 1): test_frac={test_frac}, valid_frac={valid_frac}")
    n = seqs.lengths
    ok = n >= 3
    n_test = np.where(ok, np.maximum(1, np.floor(n * test_frac).astype(np.int64)), 0)
    n_first = n - n_test
    n_valid = np.where(ok, np.maximum(1 if valid_frac > 0 else 0, np.floor(n_first * valid_frac).astype(np.int64)), 0)
    n_valid = np.minimum(n_valid, np.maximum(n_first - 1, 0))
    zero = np.zeros_like(n)
    train = seqs.take_slices(zero, n_first - n_valid)
    valid = seqs.take_slices(n_first - n_valid, n_first)
    test = seqs.take_slices(n_first, n)
    return Split(train, valid, test, "temporal_fraction", {"test_frac": test_frac, "valid_frac": valid_frac})


def random_holdout(seqs: Sequences, seed: int, min_len: int = 3) -> Split:
    """Per user, two distinct items drawn uniformly at random -> valid and test; the rest -> train
    (in their original order). NCF's / PriCDR's protocol ("we randomly reserve two items for each
    user"): random, not temporal. Users with fewer than ``min_len`` items keep everything in train
    and are not evaluated, so no held-out item is ever trained on. Seeded: same seed, same split."""
    if min_len < 3:
        raise ParameterError("a random hold-out needs min_len >= 3 (one train, one valid, one test item)")
    n = seqs.lengths
    rows = seqs.row_ids()
    key = np.random.default_rng([seed, 31]).random(len(seqs.items))
    order = np.lexsort((key, rows))                 # per row, positions in random order
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order)) - np.repeat(seqs.indptr[:-1], n)
    held = (rank < 2) & (n[rows] >= min_len)
    part = np.where(held, rank, 2)                  # 0 valid, 1 test, 2 train

    def take(k: int) -> Sequences:
        keep = part == k
        counts = np.bincount(rows[keep], minlength=seqs.n_rows)
        return Sequences(np.concatenate([[0], np.cumsum(counts)]), seqs.items[keep])

    return Split(take(2), take(0), take(1), "random_holdout", {"min_len": min_len, "seed": seed})
