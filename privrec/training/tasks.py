"""Tasks turn a :class:`~privrec.data.splits.Split` into model batches.

A task owns everything about *inputs*; models own everything about *outputs*; the trainer
and the evaluator only move batches between them. Each task states its scenario — what a
training sample is, what the model may see when it is evaluated, and what is held out —
so two numbers can be compared only when their scenarios match.

========================  =====================================  ==========================================
task                      a training sample                      evaluated on
========================  =====================================  ==========================================
:class:`SequenceTask`     a window of ``max_len`` train items;   each user's held-out item (valid, then
 (SASRec, GRU4Rec)        loss at its last ``stride`` positions  test) ranked from the items before it
                          (``stride=1``: every prefix, RecBole)
:class:`CrossDomainTask`  per user, target-domain positions      target domain's held-out item from its
 (DASL, PriCDSR)          with an auxiliary row aligned to them  own history and the (published) aux row
========================  =====================================  ==========================================

Common to all: the split decides the held-out items (:mod:`privrec.data.splits`:
``leave_one_out`` — last item test, second last validation; ``temporal_fraction`` — the
last 20 % test), the validation history is the train part and the test history is
train + validation, the test split is read once after model selection on validation, and
full ranking covers every item (with or without masking the user's history: the
evaluator's protocol, not the task, decides).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from privrec.data.sequences import Sequences, pad_left
from privrec.data.splits import Split
from privrec.errors import ParameterError

if TYPE_CHECKING:
    from privrec.data.crossdomain import CrossDomainData

WINDOW_MODES = ("all", "last")


def next_item_windows(train: Sequences, max_len: int, mode: str = "all", stride: int | None = None
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
    Windows are front zero-padded: shape (n_windows, max_len); ids are int32.
    """
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
    inputs = np.where(ok, train.items[np.clip(tpos - 1, 0, last)], 0).astype(np.int32)
    ok &= col[None, :] >= max_len - stride                                       # loss on the last `stride` only
    targets = np.where(ok, train.items[np.clip(tpos, 0, last)], 0).astype(np.int32)
    return inputs, targets, users.astype(np.int64)


def mean_context(inputs: np.ndarray, targets: np.ndarray) -> float:
    """Mean number of items a target is predicted from (non-padding inputs up to its position)."""
    ctx = np.cumsum(inputs > 0, axis=1)
    mask = targets > 0
    return float(ctx[mask].mean()) if mask.any() else 0.0


class _SplitEvaluation:
    """What the evaluator reads from a task with a ``split`` and per-stage ``_history``."""

    split: Split
    _history: dict[str, Sequences]

    def stage_targets(self, stage: str) -> Sequences:
        return self.split.targets(stage)

    def stage_history(self, stage: str) -> Sequences:
        return self._history[stage]

    def train_items(self) -> Sequences:
        return self.split.train


@dataclass
class SequenceTask(_SplitEvaluation):
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

    def __post_init__(self) -> None:
        if self.max_len <= 0:
            raise ParameterError(f"max_len must be positive, got {self.max_len}")
        self._inputs, self._targets, self._users = next_item_windows(self.split.train, self.max_len, self.window_mode,
                                                                     self.stride)
        self._history = {"valid": self.split.history("valid"), "test": self.split.history("test")}

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

    # ---- training
    def train_batches(self, batch_size: int, rng: np.random.Generator) -> Iterator[dict[str, torch.Tensor]]:
        order = rng.permutation(len(self._inputs))
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            yield {"seq": torch.from_numpy(self._inputs[idx].astype(np.int64)),
                   "target": torch.from_numpy(self._targets[idx].astype(np.int64)),
                   "user": torch.from_numpy(self._users[idx])}

    def n_train_batches(self, batch_size: int) -> int:
        return -(-len(self._inputs) // batch_size)

    # ---- evaluation (RankingTask protocol; targets and history from _SplitEvaluation)
    def eval_batch(self, stage: str, users: np.ndarray) -> dict[str, torch.Tensor]:
        hist = self._history[stage]
        seq = pad_left(hist.indptr, hist.items, self.max_len, users).astype(np.int64)
        return {"seq": torch.from_numpy(seq), "user": torch.from_numpy(np.asarray(users, dtype=np.int64))}


def _selectable(rows: np.ndarray, window: int) -> np.ndarray:
    """Positions j with an item and at least one item among positions j-window..j-1."""
    nz = (rows > 0).astype(np.int32)
    csum = np.concatenate([np.zeros((rows.shape[0], 1), np.int32), np.cumsum(nz, axis=1)], axis=1)
    j = np.arange(rows.shape[1])
    before = csum[:, j] - csum[:, np.maximum(j - window, 0)]
    return (rows > 0) & (before > 0)


def _row_sequences(rows: np.ndarray) -> Sequences:
    """CSR view of a padded id matrix (row order kept, zeros dropped)."""
    mask = rows > 0
    indptr = np.concatenate([[0], np.cumsum(mask.sum(1))]).astype(np.int64)
    return Sequences(indptr, rows[mask].astype(np.int32))


@dataclass
class CrossDomainTask(_SplitEvaluation):
    """Two-domain next-item prediction for DASL-style models (PriCDSR protocol).

    Scenario: users are shared by both domains (:class:`~privrec.data.crossdomain.CrossDomainData`).
    The target domain is trained on its train split and evaluated (leave-one-out) on its
    validation and test items. The auxiliary domain enters only through ``aux_rows``: an
    (n_users + 1, L) front-padded matrix aligned with the shared user codes, which is either
    the auxiliary train split or what a mechanism published from it. The task (and the model)
    cannot tell which. Auxiliary rows are used both as cross-domain windows for the target and
    as the auxiliary domain's own training sequences. Rows are position-aligned (PriCDSR).
    """

    data: CrossDomainData
    target: str
    aux_rows: np.ndarray
    max_len: int = 50
    window: int = 10
    targets_per_user: int | None = None

    def __post_init__(self) -> None:
        if self.max_len <= 0 or self.window <= 0:
            raise ParameterError(f"max_len and window must be positive, got {self.max_len}, {self.window}")
        dom, aux = self.data.domain(self.target), self.data.other(self.target)
        self.k = self.data.names.index(self.target)
        self.split = dom.split
        self.n_items = dom.n_items
        self.n_aux_items = aux.n_items
        rows = np.asarray(self.aux_rows)
        if rows.ndim != 2 or rows.shape[0] != self.data.n_users + 1:
            raise ParameterError(f"aux_rows must have shape (n_users + 1, L) = ({self.data.n_users + 1}, L), "
                                 f"got {rows.shape}")
        if rows.min() < 0 or rows.max() > aux.n_items:
            raise ParameterError(f"aux_rows holds ids outside [0, {aux.n_items}] (the auxiliary item codes)")
        rows = rows[:, -self.max_len:] if rows.shape[1] >= self.max_len else np.pad(rows, ((0, 0), (self.max_len - rows.shape[1], 0)))
        self._aux = rows.astype(np.int64)
        self._own = self.split.train.to_padded(self.max_len).astype(np.int64)
        self._sel = {self.k: _selectable(self._own, self.window), 1 - self.k: _selectable(self._aux, self.window)}
        self._exclude = {self.k: self.split.train, 1 - self.k: _row_sequences(self._aux)}
        self._n = {self.k: self.n_items, 1 - self.k: self.n_aux_items}
        self._users = np.flatnonzero(self._sel[self.k].any(1) | self._sel[1 - self.k].any(1))
        self._history = {"valid": self.split.history("valid"), "test": self.split.history("test")}

    def _rows(self, k: int) -> np.ndarray:
        return self._own if k == self.k else self._aux

    @property
    def n_train_targets(self) -> int:
        return int(self._sel[self.k].sum())

    # ---- training
    def train_batches(self, batch_size: int, rng: np.random.Generator) -> Iterator[dict[str, torch.Tensor]]:
        from privrec.evaluation.negatives import sample_negatives

        order = rng.permutation(self._users)
        for start in range(0, len(order), batch_size):
            users = order[start:start + batch_size]
            batch = {"user": torch.from_numpy(users.astype(np.int64))}
            for k in (0, 1):
                rows = self._rows(k)[users]
                sel = self._sel[k][users].copy()
                if self.targets_per_user is not None:
                    noise = rng.random(sel.shape)
                    noise[~sel] = 2.0
                    kth = np.sort(noise, axis=1)[:, min(self.targets_per_user, sel.shape[1]) - 1][:, None]
                    sel &= noise <= kth
                neg = np.zeros_like(rows)
                r, c = np.nonzero(sel)
                if len(r):
                    neg[r, c] = sample_negatives(rng, users[r], self._exclude[k], self._n[k], 1)[:, 0]
                batch[f"seq{k}"] = torch.from_numpy(rows)
                batch[f"sel{k}"] = torch.from_numpy(sel)
                batch[f"neg{k}"] = torch.from_numpy(neg)
            yield batch

    def n_train_batches(self, batch_size: int) -> int:
        return -(-len(self._users) // batch_size)

    # ---- evaluation (RankingTask protocol; targets and history from _SplitEvaluation)
    def eval_batch(self, stage: str, users: np.ndarray) -> dict[str, torch.Tensor]:
        hist = self._history[stage]
        users = np.asarray(users, dtype=np.int64)
        own = pad_left(hist.indptr, hist.items, self.max_len, users).astype(np.int64)
        return {"user": torch.from_numpy(users), f"seq{self.k}": torch.from_numpy(own),
                f"seq{1 - self.k}": torch.from_numpy(self._aux[users])}
