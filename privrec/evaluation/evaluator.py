"""The one evaluator: full ranking (default) or sampled ranking, batched over users.

A *task* provides model inputs per user batch; a *model* returns next-item scores over all
item codes. Target positions are computed pessimistically on ties (a constant model gets
no credit), history items are masked when ``mask_history`` is set, and the metrics are the
pure functions of :mod:`privrec.evaluation.metrics`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Protocol

import numpy as np
import torch

from privrec.data.sequences import Sequences
from privrec.errors import ParameterError, TrainingError
from privrec.evaluation import metrics as M
from privrec.evaluation.negatives import SAMPLERS, popularity, sample_negatives
from privrec.utils.resources import check_top_k

MODES = ("full", "sampled")


@dataclass(frozen=True)
class EvalConfig:
    mode: str = "full"
    n_negatives: int = 100
    sampler: str = "popularity"
    ks: tuple[int, ...] = (5, 10, 20)
    metrics: tuple[str, ...] = M.METRICS
    mask_history: bool = True
    batch_size: int = 1024
    seed: int = 0

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ParameterError(f"evaluation mode must be one of {MODES}, got {self.mode!r}")
        if self.sampler not in SAMPLERS:
            raise ParameterError(f"sampler must be one of {SAMPLERS}, got {self.sampler!r}")
        if self.mode == "sampled" and self.n_negatives < 1:
            raise ParameterError("sampled ranking needs n_negatives >= 1")
        if not self.ks or any(int(k) != k or k < 1 for k in self.ks):
            raise ParameterError(f"cut-offs ks must be positive integers such as 1,5,10, got {self.ks}")
        for m in self.metrics:
            if m not in M.METRICS:
                raise ParameterError(f"unknown metric {m!r}; use some of {M.METRICS}")

    @property
    def label(self) -> str:
        """How to print results: sampled results are always labelled as such."""
        if self.mode == "full":
            return "full ranking (history " + ("masked)" if self.mask_history else "not masked)")
        return f"sampled ranking ({self.n_negatives} {self.sampler} negatives)"

    def to_dict(self) -> dict:
        return {**asdict(self), "label": self.label}


class RankingTask(Protocol):
    """What the evaluator needs from a dataset wrapper."""

    n_items: int

    def stage_targets(self, stage: str) -> Sequences: ...
    def stage_history(self, stage: str) -> Sequences: ...
    def train_items(self) -> Sequences: ...
    def eval_batch(self, stage: str, users: np.ndarray) -> dict[str, torch.Tensor]: ...


@dataclass
class EvalResult:
    stage: str
    metrics: dict[str, float]
    n_users: int
    config: EvalConfig
    per_user: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    users: np.ndarray | None = field(default=None, repr=False)    # the evaluated user rows, with per_user

    def subset(self, rows: np.ndarray) -> dict[str, float]:
        """Mean metrics over the evaluated users whose row is True in the bool array ``rows`` (needs
        ``keep_per_user``); NaN where none of them was evaluated."""
        if self.users is None:
            raise ValueError("subset metrics need evaluate(..., keep_per_user=True)")
        mask = np.asarray(rows, dtype=bool)[self.users]
        return {k: float(v[mask].mean()) if mask.any() else float("nan") for k, v in self.per_user.items()}

    def to_dict(self) -> dict:
        return {"stage": self.stage, "protocol": self.config.label, "n_users": self.n_users,
                "metrics": self.metrics, "eval_config": self.config.to_dict()}


def _padded_targets(targets: Sequences, users: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(B, W) target items per user, 0-padded on the right, and the count of each row.

    Targets are a *set* (as in RecBole's positive-item matrix): an item listed twice for a user
    (possible when preprocessing keeps duplicate interactions) is one target, counted once."""
    lengths = targets.lengths[users]
    width = max(1, int(lengths.max()) if len(lengths) else 1)
    out = np.zeros((len(users), width), dtype=np.int64)
    col = np.arange(width)
    valid = col[None, :] < lengths[:, None]
    src = targets.indptr[users][:, None] + col[None, :]
    out[valid] = targets.items[src[valid]]
    if width > 1:
        big = np.iinfo(np.int64).max
        srt = np.sort(np.where(valid, out, big), axis=1)
        dup = np.zeros_like(valid)
        dup[:, 1:] = (srt[:, 1:] == srt[:, :-1]) & (srt[:, 1:] != big)
        if dup.any():
            srt[dup] = big
            srt = np.sort(srt, axis=1)
            lengths = (srt != big).sum(axis=1)
            out = np.where(srt != big, srt, 0)
    return out, lengths


def _batches(users: np.ndarray, size: int) -> Iterator[np.ndarray]:
    for start in range(0, len(users), size):
        yield users[start:start + size]


@torch.no_grad()
def evaluate(model: torch.nn.Module, task: RankingTask, stage: str, cfg: EvalConfig = EvalConfig(),
             device: torch.device | str = "cpu", keep_per_user: bool = False) -> EvalResult:
    """Rank every evaluated user's ``stage`` targets; return mean metrics."""
    check_top_k(cfg.ks, task.n_items, cfg.batch_size)
    targets_csr = task.stage_targets(stage)
    history_csr = task.stage_history(stage)
    users = np.flatnonzero(targets_csr.lengths > 0)
    if len(users) == 0:
        raise ParameterError(f"no user has a {stage} target; check the split")
    negatives = None
    if cfg.mode == "sampled":
        rng = np.random.default_rng([cfg.seed, 0 if stage == "valid" else 1])
        weights = popularity(task.train_items(), task.n_items) if cfg.sampler == "popularity" else None
        exclude = history_csr.concat(targets_csr)
        negatives = sample_negatives(rng, users, exclude, task.n_items, cfg.n_negatives, weights)
    was_training = model.training
    model.eval()
    all_pos, all_rel = [], []
    offset = 0
    for batch_users in _batches(users, cfg.batch_size):
        batch = {k: v.to(device) for k, v in task.eval_batch(stage, batch_users).items()}
        scores = model.score(batch).float()                        # (B, n_items + 1)
        if torch.isnan(scores).any():
            raise TrainingError("the model produced NaN scores (training diverged); lower the learning rate or "
                                "check the inputs")
        tgt, n_rel = _padded_targets(targets_csr, batch_users)
        tgt_t = torch.as_tensor(tgt, device=scores.device)
        valid = torch.arange(tgt.shape[1], device=scores.device)[None, :] < torch.as_tensor(n_rel, device=scores.device)[:, None]
        if cfg.mode == "full":
            scores[:, 0] = -torch.inf
            if cfg.mask_history:
                kept = scores.gather(1, tgt_t)
                _mask_rows(scores, history_csr, batch_users)
                scores.scatter_(1, tgt_t, kept)       # a target that also occurs in history is still ranked
            pos = _positions(scores, tgt_t, valid)
        else:
            neg = torch.as_tensor(negatives[offset:offset + len(batch_users)], device=scores.device, dtype=torch.int64)
            ts = scores.gather(1, tgt_t)
            candidates = torch.cat([torch.where(valid, ts, torch.full_like(ts, -torch.inf)), scores.gather(1, neg)], 1)
            pos = _positions(candidates, torch.arange(tgt.shape[1], device=scores.device).expand_as(tgt_t), valid)
        offset += len(batch_users)
        all_pos.append(pos.cpu().numpy())
        all_rel.append(n_rel)
    model.train(was_training)
    width = max(p.shape[1] for p in all_pos)
    positions = np.concatenate([np.pad(p, ((0, 0), (0, width - p.shape[1])), constant_values=-1) for p in all_pos])
    n_relevant = np.concatenate(all_rel)
    per = M.per_user(positions, n_relevant, cfg.ks, cfg.metrics)
    return EvalResult(stage, {k: float(v.mean()) for k, v in per.items()}, len(users), cfg,
                      per if keep_per_user else {}, users if keep_per_user else None)


def _mask_rows(scores: torch.Tensor, csr: Sequences, users: np.ndarray) -> None:
    lengths = csr.lengths[users]
    if lengths.sum() == 0:
        return
    rows = np.repeat(np.arange(len(users)), lengths)
    starts = csr.indptr[users]
    cols = csr.items[np.repeat(starts, lengths) + (np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths))]
    scores[torch.as_tensor(rows, device=scores.device), torch.as_tensor(cols, device=scores.device, dtype=torch.int64)] = -torch.inf


def _positions(scores: torch.Tensor, idx: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """0-based rank of each target ``scores[b, idx[b, t]]`` in row ``b`` sorted by descending score.

    The tie rule: every item scoring strictly higher counts against a target, and so does every
    *non-target* item that ties with it (pessimistic: a constant model gets no credit). Targets
    that tie with each other take consecutive ranks (in column order), because any order of
    them is an equally correct ranking: scores [1, 1, 0, 0] with targets {0, 1} rank them 0 and
    1 (HR@1 = 1, NDCG@2 = 1), as RecBole does. ``idx`` holds distinct columns per row; padded
    targets (``valid`` False) get -1.

    Cost: one comparison pass O(B·I) per target column when a row has few targets (leave-one-out:
    no sort at all), else one sort O(B·I log I); plus O(B·T²) for ties among targets."""
    ts = scores.gather(1, idx)                                           # (B, T)
    n_b, n_t = idx.shape
    if n_t <= 8:
        at_least = torch.stack([(scores >= ts[:, t:t + 1]).sum(1) for t in range(n_t)], 1)
    else:
        ascending = scores.sort(dim=1).values
        at_least = scores.shape[1] - torch.searchsorted(ascending, ts.contiguous(), right=False)
    pos = at_least.clone()
    rows = max(1, (1 << 24) // max(n_t * n_t, 1))                        # bound the (rows, T, T) block
    for a in range(0, n_b, rows):
        t, v = ts[a:a + rows], valid[a:a + rows]
        tied = (t[:, :, None] == t[:, None, :]) & v[:, None, :]          # target t ties target u
        pos[a:a + rows] -= tied.sum(-1) - torch.tril(tied, diagonal=-1).sum(-1)   # all tied (t too) - earlier
    return torch.where(valid, pos, torch.full_like(pos, -1))
