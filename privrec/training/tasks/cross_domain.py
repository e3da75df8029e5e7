"""Two-domain next-item prediction over shared users (DASL, PriCDSR)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from privrec.data.sequences import Sequences, pad_left
from privrec.errors import ParameterError
from privrec.training.tasks.base import SplitEvaluation

if TYPE_CHECKING:
    from privrec.data.crossdomain import CrossDomainData


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
class CrossDomainTask(SplitEvaluation):
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

    # ---- evaluation (RankingTask protocol; targets and history from SplitEvaluation)
    def eval_batch(self, stage: str, users: np.ndarray) -> dict[str, torch.Tensor]:
        hist = self._history[stage]
        users = np.asarray(users, dtype=np.int64)
        own = pad_left(hist.indptr, hist.items, self.max_len, users).astype(np.int64)
        return {"user": torch.from_numpy(users), f"seq{self.k}": torch.from_numpy(own),
                f"seq{1 - self.k}": torch.from_numpy(self._aux[users])}
