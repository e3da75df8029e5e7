"""The one training loop: Adam, periodic validation, early stopping, best weights kept.

The test split is never touched here: :meth:`Trainer.fit` selects on validation only, and
the caller evaluates the restored best model on test exactly once.
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Iterator, Protocol

import numpy as np
import torch

from privrec.errors import ParameterError
from privrec.evaluation.evaluator import EvalConfig, EvalResult, evaluate
from privrec.models.base import Recommender
from privrec.utils.perf import tune_cpu_allocator


@dataclass(frozen=True)
class TrainConfig:
    epochs: int = 200
    batch_size: int = 256
    lr: float = 1e-3
    weight_decay: float = 0.0
    patience: int = 10              # validations without improvement before stopping
    eval_every: int = 1             # epochs between validations
    select_metric: str = "ndcg@10"
    grad_clip: float | None = 5.0
    seed: int = 0
    device: str = "auto"            # "auto" picks CUDA when present
    progress: bool = True

    def __post_init__(self) -> None:
        for name in ("epochs", "batch_size", "eval_every"):
            if getattr(self, name) < 1:
                raise ParameterError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not (self.lr > 0 and math.isfinite(self.lr)):
            raise ParameterError(f"lr must be a positive number, got {self.lr}")
        if self.patience < 1:
            raise ParameterError(f"patience must be >= 1, got {self.patience}")

    def to_dict(self) -> dict:
        return asdict(self)


class TrainableTask(Protocol):
    def train_batches(self, batch_size: int, rng: np.random.Generator) -> Iterator[dict[str, torch.Tensor]]: ...
    def n_train_batches(self, batch_size: int) -> int: ...


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


@dataclass
class FitResult:
    best_epoch: int
    best_valid: EvalResult | None
    epochs_run: int
    history: list[dict] = field(default_factory=list)
    seconds: float = 0.0
    seconds_per_epoch: float = 0.0

    def to_dict(self) -> dict:
        return {"best_epoch": self.best_epoch, "epochs_run": self.epochs_run, "seconds": round(self.seconds, 2),
                "seconds_per_epoch": round(self.seconds_per_epoch, 3),
                "best_valid": None if self.best_valid is None else self.best_valid.to_dict(), "history": self.history}


class Trainer:
    def __init__(self, model: Recommender, task, cfg: TrainConfig, eval_cfg: EvalConfig = EvalConfig(),
                 log: Callable[[str], None] | None = None):
        self.cfg = cfg
        self.eval_cfg = eval_cfg
        self.device = resolve_device(cfg.device)
        if self.device.type == "cpu":
            tune_cpu_allocator()
        self.model = model.to(self.device)
        self.task = task
        self.log = log or (lambda msg: None)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)

    def _epoch(self, rng: np.random.Generator, epoch: int) -> float:
        self.model.train()
        total, count = 0.0, 0
        batches = self.task.train_batches(self.cfg.batch_size, rng)
        if self.cfg.progress:
            from tqdm.auto import tqdm

            batches = tqdm(batches, total=self.task.n_train_batches(self.cfg.batch_size), leave=False,
                           desc=f"epoch {epoch}", unit="batch", mininterval=1.0)
        for batch in batches:
            batch = {k: v.to(self.device) for k, v in batch.items()}
            loss = self.model.loss(batch)
            if not torch.isfinite(loss):
                raise FloatingPointError(f"training loss became {loss.item()} at epoch {epoch}; lower --lr")
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if self.cfg.grad_clip:
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.grad_clip)
            self.optimizer.step()
            total += float(loss.detach())
            count += 1
        return total / max(count, 1)

    def validate(self) -> EvalResult:
        return evaluate(self.model, self.task, "valid", self.eval_cfg, self.device)

    def fit(self) -> FitResult:
        """Train with early stopping on ``select_metric`` over the validation split."""
        rng = np.random.default_rng([self.cfg.seed, 1])
        best_score, best_state, best_epoch, best_eval = -math.inf, None, 0, None
        history: list[dict] = []
        waited = 0
        start = time.perf_counter()
        train_time = 0.0
        epoch = 0
        for epoch in range(1, self.cfg.epochs + 1):
            t0 = time.perf_counter()
            loss = self._epoch(rng, epoch)
            train_time += time.perf_counter() - t0
            row = {"epoch": epoch, "loss": round(loss, 5)}
            if epoch % self.cfg.eval_every == 0 or epoch == self.cfg.epochs:
                result = self.validate()
                if self.cfg.select_metric not in result.metrics:
                    raise ParameterError(f"select_metric {self.cfg.select_metric!r} is not computed; "
                                         f"choose one of {sorted(result.metrics)}")
                score = result.metrics[self.cfg.select_metric]
                row["valid"] = {k: round(v, 5) for k, v in result.metrics.items()}
                if score > best_score:
                    best_score, best_epoch, best_eval = score, epoch, result
                    best_state = copy.deepcopy(self.model.state_dict())
                    waited = 0
                else:
                    waited += 1
                self.log(f"epoch {epoch:3d}  loss {loss:.4f}  valid {self.cfg.select_metric} {score:.4f}"
                         f"  (best {best_score:.4f} @ {best_epoch})")
                history.append(row)
                if waited >= self.cfg.patience:
                    self.log(f"early stop: no improvement in {waited} validations")
                    break
            else:
                history.append(row)
        if best_state is not None:
            self.model.load_state_dict(best_state)
        return FitResult(best_epoch, best_eval, epoch, history, time.perf_counter() - start, train_time / max(epoch, 1))

    def test(self) -> EvalResult:
        """Evaluate the (restored best) model on the test split. Call once."""
        return evaluate(self.model, self.task, "test", self.eval_cfg, self.device)
