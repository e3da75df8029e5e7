"""The one training loop: Adam (optionally with a linear learning-rate warmup), periodic validation,
early stopping, best weights kept.

The test split is never touched here: :meth:`Trainer.fit` selects on validation only, and
the caller evaluates the restored best model on test exactly once.

Seams for the pipelines that need more than plain Adam:

* ``make_optimizer(model, cfg)`` builds the optimizer (Opacus' ``DPOptimizer`` for DP-SGD);
* :class:`Hook` objects see the fit start, every batch and every epoch, and their
  ``state_dict()`` is saved in the training state (e.g. a count of noisy forward passes
  for privacy accounting survives a resume);
* a model's own extra state (``nn.Module.get_extra_state``, e.g. the state of the
  ``torch.Generator`` that draws its aggregation noise) travels in ``state_dict()`` and is
  therefore saved and restored on resume like the weights, so resumed noise is replayed exactly;
  restoring the best weights after training leaves it as it is (the noise never rewinds);
* :meth:`Trainer.train_epochs` runs epochs without validation or early stopping (a
  federated client's local round), :meth:`Trainer.fit` is the early-stopping loop.
"""

from __future__ import annotations

import copy
import json
import math
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np
import torch

from privrec.errors import CheckpointError, ParameterError, TrainingError
from privrec.evaluation.evaluator import EvalConfig, EvalResult, evaluate
from privrec.models.base import Recommender
from privrec.training.model_state import data_digest, data_keys, learned_state, load_learned_state
from privrec.utils.io import atomic_path
from privrec.utils.repro import lock_digest, without_later_defaults

STATE_FORMAT = "privrec-train-state/1"
UNRECORDED_LOCK = "unrecorded"      # epochs of a state saved before states recorded their lock
# the stopping rule: it only bounds fit()'s loop, so a state continues under another (see Trainer.fit)
STOPPING_RULE = ("epochs", "patience")
PRECISIONS = ("fp32", "bf16")
# how the numbers are computed, not what: a state resumes under another device or precision (a bf16 run
# moved to a CPU without bf16 units, where its products are emulated: 6x slower on an AVX2 EPYC), and the
# fit records how many epochs ran at each precision (``epochs_by_precision``)
NUMERICS = ("progress", "device", "precision")


@dataclass(frozen=True)
class TrainConfig:
    epochs: int = 200
    batch_size: int = 256
    lr: float = 1e-3
    weight_decay: float = 0.0
    # validations without improvement before stopping; None: never stop early (a fixed budget of ``epochs``,
    # the best validated epoch kept)
    patience: int | None = 10
    eval_every: int = 1             # epochs between validations
    select_metric: str = "ndcg@10"
    grad_clip: float | None = 5.0
    # linear warmup: the learning rate of optimizer step t (0-based) is lr * min(1, (t + 1) / warmup_steps),
    # counted from the first epoch; 0 = none. BERT4Rec's recipe (Sun et al. 2019: 100 steps) against the
    # slow start of a post-LayerNorm transformer at a high lr (docs/rr.md)
    warmup_steps: int = 0
    # the training forward pass: "fp32", or "bf16" = torch.autocast mixed precision (matrix products in
    # bfloat16, weights, optimizer state, losses and LayerNorm in float32; validation and test always fp32).
    # On CPUs with AMX-BF16 (Sapphire Rapids and later) a SASRec prefix step takes about half the time
    # (benchmarks/bench_training_step.py); elsewhere it can be slower (6x on an AVX2-only EPYC), so a state
    # resumes at either precision (:data:`NUMERICS`). Accuracy parity: docs/baselines.md
    precision: str = "fp32"
    seed: int = 0
    device: str = "auto"            # "auto" picks CUDA when present
    progress: bool = True

    def __post_init__(self) -> None:
        for name in ("epochs", "batch_size", "eval_every"):
            if getattr(self, name) < 1:
                raise ParameterError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not (self.lr > 0 and math.isfinite(self.lr)):
            raise ParameterError(f"lr must be a positive number, got {self.lr}")
        if self.patience is not None and self.patience < 1:
            raise ParameterError(f"patience must be >= 1 (or None: no early stopping), got {self.patience}")
        if not (isinstance(self.warmup_steps, int) and self.warmup_steps >= 0):
            raise ParameterError(f"warmup_steps must be a whole number >= 0 (0 = no warmup), got {self.warmup_steps!r}")
        if self.precision not in PRECISIONS:
            raise ParameterError(f"precision must be one of {', '.join(PRECISIONS)}, got {self.precision!r}")

    def to_dict(self) -> dict:
        """The settings; one added later is left out at the default that reproduces the behaviour
        before it (:data:`privrec.utils.repro.LATER_DEFAULTS`), so states saved before it still match."""
        return without_later_defaults(asdict(self))


class Hook:
    """Observer of training; override what you need. ``state_dict``/``load_state_dict`` carry
    whatever must survive a resume (it is stored with ``torch.save(weights_only=True)``: plain
    Python numbers, strings, lists, dicts and tensors)."""

    def on_fit_start(self, trainer: Trainer) -> None: ...
    def on_batch_end(self, trainer: Trainer, batch: dict[str, torch.Tensor], loss: float) -> None: ...
    def on_epoch_end(self, trainer: Trainer, epoch: int, row: dict) -> None: ...
    def penalty(self, trainer: Trainer) -> torch.Tensor | None:
        """A term added to every batch's loss before the backward pass (e.g. FedProx's proximal term)."""
        return None
    def state_dict(self) -> dict:
        return {}
    def load_state_dict(self, state: dict) -> None: ...


def adam(model: torch.nn.Module, cfg: TrainConfig) -> torch.optim.Optimizer:
    """The default optimizer: Adam with ``cfg.lr`` and ``cfg.weight_decay``."""
    return torch.optim.Adam(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)


def _to_cpu(value):
    """Tensors (also inside dicts/lists of a model's extra state) detached and moved to the CPU."""
    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, dict):
        return {k: _to_cpu(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_to_cpu(v) for v in value)
    return value


class TrainableTask(Protocol):
    def train_batches(self, batch_size: int, rng: np.random.Generator) -> Iterator[dict[str, torch.Tensor]]: ...
    def n_train_batches(self, batch_size: int) -> int: ...


def resolve_device(name: str) -> torch.device:
    """``auto`` (CUDA when present, else CPU), ``cpu``, ``cuda`` or ``cuda:N``; a device this machine
    does not have is refused with the fix."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except (RuntimeError, TypeError):
        raise ParameterError(f"--device {name!r} is not a device; use auto, cpu or cuda") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ParameterError(f"--device {name}: this machine has no CUDA GPU (or torch is a CPU build); "
                             "use --device cpu or auto")
    if device.type not in ("cpu", "cuda"):
        raise ParameterError(f"--device {name}: only cpu and cuda are supported; use auto, cpu or cuda")
    return device


@dataclass
class FitResult:
    best_epoch: int
    best_valid: EvalResult | None
    epochs_run: int
    history: list[dict] = field(default_factory=list)
    seconds: float = 0.0
    seconds_per_epoch: float = 0.0
    stopped_early: bool = False     # False: the epoch cap ended training (the model may still improve)
    epochs_by_lock: dict[str, int] = field(default_factory=dict)    # a run resumed under another lock spans two
    epochs_by_precision: dict[str, int] = field(default_factory=dict)   # likewise a run resumed at another precision

    def to_dict(self) -> dict:
        return {"best_epoch": self.best_epoch, "epochs_run": self.epochs_run, "stopped_early": self.stopped_early,
                "seconds": round(self.seconds, 2),
                "seconds_per_epoch": round(self.seconds_per_epoch, 3),
                "best_valid": None if self.best_valid is None else self.best_valid.to_dict(),
                "epochs_by_lock": self.epochs_by_lock, "epochs_by_precision": self.epochs_by_precision,
                "history": self.history}


class Trainer:
    def __init__(self, model: Recommender, task, cfg: TrainConfig, eval_cfg: EvalConfig = EvalConfig(),
                 log: Callable[[str], None] | None = None, *,
                 make_optimizer: Callable[[torch.nn.Module, TrainConfig], torch.optim.Optimizer] = adam,
                 hooks: Sequence[Hook] = ()):
        self.cfg = cfg
        self.eval_cfg = eval_cfg
        self.device = resolve_device(cfg.device)
        self.model = model.to(self.device)
        self.task = task
        self.log = log or (lambda msg: None)
        self.optimizer = make_optimizer(self.model, cfg)
        self.hooks = list(hooks)
        self.rng = np.random.default_rng([cfg.seed, 1])     # batch order; its state is saved on resume
        self.epochs_trained = 0                              # by fit() and train_epochs() together
        self.epochs_by_lock: dict[str, int] = {}             # of them, how many under each lock digest
        self.epochs_by_precision: dict[str, int] = {}        # and at each precision
        self._digest: tuple = (None, None)                   # (data buffers' versions, their digest): see _data_digest

    def _epoch(self, epoch: int) -> float:
        self.model.train()
        total, count = 0.0, 0
        batches = self.task.train_batches(self.cfg.batch_size, self.rng)
        step = (epoch - 1) * self.task.n_train_batches(self.cfg.batch_size)  # optimizer steps before this epoch
        if self.cfg.progress:
            from tqdm.auto import tqdm

            batches = tqdm(batches, total=self.task.n_train_batches(self.cfg.batch_size), leave=False,
                           desc=f"epoch {epoch}", unit="batch", mininterval=1.0)
        for batch in batches:
            batch = {k: v.to(self.device) for k, v in batch.items()}
            with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.cfg.precision == "bf16"):
                loss = self.model.loss(batch)
            for hook in self.hooks:
                extra = hook.penalty(self)
                if extra is not None:
                    loss = loss + extra
            if not torch.isfinite(loss):
                raise TrainingError(f"training diverged: the loss became {loss.item()} at epoch {epoch}, batch "
                                    f"{count + 1}; lower the learning rate (now {self.cfg.lr:g}) or clip gradients "
                                    f"(grad_clip, now {self.cfg.grad_clip}); the saved state of the last good epoch "
                                    "is kept, so a rerun with other settings starts over from scratch")
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if self.cfg.warmup_steps:
                for group in self.optimizer.param_groups:
                    group["lr"] = self.cfg.lr * min(1.0, (step + 1) / self.cfg.warmup_steps)
            step += 1
            if self.cfg.grad_clip:
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.grad_clip)
            self.optimizer.step()
            value = float(loss.detach())
            total += value
            count += 1
            for hook in self.hooks:
                hook.on_batch_end(self, batch, value)
        self.epochs_trained += 1
        lock = lock_digest() or "no lock"
        self.epochs_by_lock[lock] = self.epochs_by_lock.get(lock, 0) + 1
        self.epochs_by_precision[self.cfg.precision] = self.epochs_by_precision.get(self.cfg.precision, 0) + 1
        return total / max(count, 1)

    def train_epochs(self, n: int) -> list[float]:
        """Run ``n`` training epochs (no validation, no early stopping, no best-weight restore) and
        return their mean losses. Successive calls continue the same batch-order stream, so two
        calls of one epoch equal one call of two. For loops the caller owns, e.g. a federated
        client's local round between aggregations."""
        if n < 1:
            raise ParameterError(f"n must be >= 1 epochs, got {n}")
        losses = []
        for _ in range(n):
            epoch = self.epochs_trained + 1
            losses.append(self._epoch(epoch))
            for hook in self.hooks:
                hook.on_epoch_end(self, epoch, {"epoch": epoch, "loss": losses[-1]})
        return losses

    def save_checkpoint(self, path: str | os.PathLike) -> None:
        """Write weights, optimiser, RNG states and ``epochs_trained`` to ``path`` (atomically), for a
        caller that owns the loop (:meth:`train_epochs`), e.g. a federated client between rounds."""
        self._save_state(Path(path), {"epoch": self.epochs_trained, "best_score": -math.inf, "best_state": None})

    def load_checkpoint(self, path: str | os.PathLike) -> None:
        """Continue from :meth:`save_checkpoint`'s file: the next :meth:`train_epochs` equals an
        uninterrupted run's (same training configuration required, else :class:`CheckpointError`)."""
        self._load_state(Path(path))

    def validate(self) -> EvalResult:
        return evaluate(self.model, self.task, "valid", self.eval_cfg, self.device)

    def fit(self, state_path: str | os.PathLike | None = None) -> FitResult:
        """Train with early stopping on ``select_metric`` over the validation split.

        With ``state_path`` the whole training state (weights, Adam moments, best weights so far,
        early-stopping counters, history and every RNG state) is written there atomically after
        each epoch, and a run started with an existing file continues from it: a run killed and
        restarted gives the same result as one that was never interrupted, and a run that ended at
        its epoch cap continues when restarted with a higher cap (exactly as if the cap had been
        higher from the start when every epoch is validated, ``eval_every=1``), and one that stopped
        early continues when restarted with a longer patience (or none), exactly as if that patience
        had been set from the start. A state is never rewound: resumed under a shorter patience it
        keeps the best epoch found so far (which a run with that patience from the start might
        not have reached). The cap and the patience are the settings a
        state may differ in. The caller removes the file once the result is stored elsewhere."""
        s = {"best_score": -math.inf, "best_state": None, "best_epoch": 0, "best_metrics": None,
             "best_n_users": 0, "history": [], "waited": 0, "epoch": 0, "train_time": 0.0, "elapsed": 0.0,
             "stopped": False}
        if state_path is not None and Path(state_path).exists():
            s = self._load_state(Path(state_path))
            if s["epoch"] > self.cfg.epochs:
                raise CheckpointError(f"{state_path}: saved after epoch {s['epoch']}, beyond this run's cap of "
                                      f"{self.cfg.epochs} epochs; delete it or raise the cap")
            # the stopping rule is this run's: a run stopped early by a shorter patience goes on
            s["stopped"] = self.cfg.patience is not None and s["waited"] >= self.cfg.patience
            self.log(f"resuming from {state_path} after epoch {s['epoch']}")
        for hook in self.hooks:
            hook.on_fit_start(self)
        start = time.perf_counter() - s["elapsed"]
        epoch = s["epoch"]
        for epoch in range(s["epoch"] + 1, 0 if s["stopped"] else self.cfg.epochs + 1):
            t0 = time.perf_counter()
            loss = self._epoch(epoch)
            s["train_time"] += time.perf_counter() - t0
            row = {"epoch": epoch, "loss": round(loss, 5)}
            if epoch % self.cfg.eval_every == 0 or epoch == self.cfg.epochs:
                result = self.validate()
                if self.cfg.select_metric not in result.metrics:
                    raise ParameterError(f"select_metric {self.cfg.select_metric!r} is not computed; "
                                         f"choose one of {sorted(result.metrics)}")
                score = result.metrics[self.cfg.select_metric]
                row["valid"] = {k: round(v, 5) for k, v in result.metrics.items()}
                if score > s["best_score"]:
                    s.update(best_score=score, best_epoch=epoch, best_metrics=dict(result.metrics),
                             best_n_users=result.n_users, best_state=copy.deepcopy(learned_state(self.model)), waited=0)
                else:
                    s["waited"] += 1
                self.log(f"epoch {epoch:3d}  loss {loss:.4f}  valid {self.cfg.select_metric} {score:.4f}"
                         f"  (best {s['best_score']:.4f} @ {s['best_epoch']})")
                if self.cfg.patience is not None and s["waited"] >= self.cfg.patience:
                    self.log(f"early stop: no improvement in {s['waited']} validations")
                    s["stopped"] = True
            s["history"].append(row)
            s["epoch"] = epoch
            s["elapsed"] = time.perf_counter() - start
            for hook in self.hooks:
                hook.on_epoch_end(self, epoch, row)
            if state_path is not None:
                self._save_state(Path(state_path), s)
            if s["stopped"]:
                break
        if s["best_state"] is not None:
            load_learned_state(self.model, s["best_state"], "best weights", keep_streams=True)
        best_eval = (None if s["best_metrics"] is None else
                     EvalResult("valid", s["best_metrics"], s["best_n_users"], self.eval_cfg))
        return FitResult(s["best_epoch"], best_eval, epoch, s["history"], time.perf_counter() - start,
                         s["train_time"] / max(epoch, 1), bool(s["stopped"]), dict(self.epochs_by_lock),
                         dict(self.epochs_by_precision))

    def _state_config(self) -> dict:
        d = self.cfg.to_dict()
        for k in (*NUMERICS, *STOPPING_RULE):
            d.pop(k, None)
        return {"train": d, "eval": self.eval_cfg.to_dict(), "model": type(self.model).__name__,
                "model_config": self.model.config() if hasattr(self.model, "config") else None}

    def _data_digest(self) -> str | None:
        """:func:`data_digest` of the model, recomputed only when a data buffer was written since."""
        keys = data_keys(self.model)
        key = tuple((k, v._version, v.data_ptr()) for k, v in self.model.state_dict().items() if k in keys)
        if self._digest[0] != key:
            self._digest = (key, data_digest(self.model))
        return self._digest[1]

    def _save_state(self, path: Path, s: dict) -> None:
        payload = {"format": STATE_FORMAT, "config": json.dumps(self._state_config(), sort_keys=True, default=str),
                   "model": _to_cpu(learned_state(self.model)), "data_digest": self._data_digest(),
                   "optimizer": self.optimizer.state_dict(), "numpy_rng": json.dumps(self.rng.bit_generator.state),
                   "hooks": [_to_cpu(h.state_dict()) for h in self.hooks], "epochs_trained": self.epochs_trained,
                   "epochs_by_lock": json.dumps(self.epochs_by_lock),
                   "epochs_by_precision": json.dumps(self.epochs_by_precision),
                   "torch_rng": torch.get_rng_state(),
                   "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
                   "loop": json.dumps({k: v for k, v in s.items() if k != "best_state"}),
                   "best_state": None if s["best_state"] is None else _to_cpu(s["best_state"])}
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp:
            torch.save(payload, tmp)

    def _load_state(self, path: Path) -> dict:
        try:
            payload = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as exc:  # torch raises many types for foreign or corrupt files
            raise CheckpointError(f"{path}: not a readable training state ({type(exc).__name__}: {exc}); "
                                  "delete it to train from scratch") from exc
        if not isinstance(payload, dict) or payload.get("format") != STATE_FORMAT:
            raise CheckpointError(f"{path}: not a {STATE_FORMAT} file; delete it to train from scratch")
        saved = json.loads(payload["config"])
        for k in STOPPING_RULE:
            saved["train"].pop(k, None)
        saved_precision = saved["train"].pop("precision", "fp32")   # states saved before precision was a numeric
        if saved != json.loads(json.dumps(self._state_config(), sort_keys=True, default=str)):
            raise CheckpointError(f"{path}: saved by a run with a different training configuration; "
                                  "delete it or pass another path")
        hooks = payload.get("hooks", [])
        if len(hooks) != len(self.hooks):
            raise CheckpointError(f"{path}: saved with {len(hooks)} training hook(s), this run has {len(self.hooks)}; "
                                  "delete it or pass another path")
        saved_data = payload.get("data_digest")
        if saved_data is not None and saved_data != self._data_digest():
            raise CheckpointError(f"{path}: saved by a run on other input data (the model's data buffers differ: "
                                  "another published matrix, graph or feature release); delete it or resume with "
                                  "the same data")
        load_learned_state(self.model, payload["model"], str(path))
        self.optimizer.load_state_dict(payload["optimizer"])
        for hook, state in zip(self.hooks, hooks):
            hook.load_state_dict(state)
        self.epochs_trained = int(payload.get("epochs_trained", json.loads(payload["loop"])["epoch"]))
        by_lock = payload.get("epochs_by_lock")
        self.epochs_by_lock = (json.loads(by_lock) if by_lock is not None else
                               {UNRECORDED_LOCK: self.epochs_trained} if self.epochs_trained else {})
        by_precision = payload.get("epochs_by_precision")
        self.epochs_by_precision = (json.loads(by_precision) if by_precision is not None else
                                    {saved_precision: self.epochs_trained} if self.epochs_trained else {})
        if self.epochs_trained and set(self.epochs_by_precision) != {self.cfg.precision}:
            self.log(f"{path}: its {self.epochs_trained} epochs ran at "
                     + ", ".join(f"{p} ({n})" for p, n in self.epochs_by_precision.items())
                     + f"; it goes on at {self.cfg.precision}, and the result records both")
        self.rng.bit_generator.state = json.loads(payload["numpy_rng"])
        torch.set_rng_state(payload["torch_rng"])
        if payload["cuda_rng"] and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(payload["cuda_rng"])
        s = json.loads(payload["loop"])
        s["best_score"] = float(s["best_score"])
        s["best_state"] = payload["best_state"]       # load_state_dict copies it onto the model's device
        return s

    def test(self, keep_per_user: bool = False) -> EvalResult:
        """Evaluate the (restored best) model on the test split. Call once."""
        return evaluate(self.model, self.task, "test", self.eval_cfg, self.device, keep_per_user)
