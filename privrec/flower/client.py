"""What one PFCR client (a domain) does in a round, as plain functions over a :class:`Bundle`.

The Flower ``ClientApp`` (:mod:`privrec.flower.apps`) only moves arrays in and out of messages and
calls these; they can be tested, and re-run, without Flower.

* :func:`train_round` — restore the client's round t-1 checkpoint (or build it fresh at round 1),
  load the received global table E, train ``local_epochs`` (FedProx: plus μ/2‖E − E_global‖²),
  encode ΔE with the codec (:func:`privrec.training.federated.client_round`), checkpoint round t;
* :func:`evaluate_round` — the client's model after round t (its local encoder, the global E after
  aggregation) on its validation users: the quantity early stopping reads;
* :func:`pack` / :func:`unpack` — an encoded upload as named arrays (what crosses the wire) and back.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import torch

from privrec.flower.bundle import EVAL, Bundle
from privrec.training.federated import CodecConfig
from privrec.training.trainer import Hook


class Proximal(Hook):
    """FedProx's local objective (Li et al. 2020): loss + μ/2 ‖E − E_global‖² on the federated table."""

    def __init__(self, mu: float):
        self.mu = float(mu)
        self.anchor: torch.Tensor | None = None

    def penalty(self, trainer):
        if self.anchor is None or self.mu == 0:
            return None
        table = trainer.model.item_embedding.table.weight
        return 0.5 * self.mu * (table - self.anchor).pow(2).sum()


@lru_cache(maxsize=8)
def _task(path: str, k: int, version: int):
    """Domain ``k``'s task and codes, cached per process; ``version`` (the file's mtime) drops a rewritten bundle's."""
    from privrec.data.splits import leave_one_out
    from privrec.training.tasks import SequenceTask

    b = _bundle(path)
    seqs, codes = b.domain(k)
    return SequenceTask(leave_one_out(seqs), n_items=b.n_items[k], max_len=b.config.max_len), codes


def _bundle(path: str) -> Bundle:
    from privrec.flower.bundle import load_bundle

    return load_bundle(path)


def client(b: Bundle, k: int, round_: int):
    """Client ``k``'s (model, trainer, proximal hook) as they stood after round ``round_`` (0: fresh, seeded)."""
    from dataclasses import replace

    from privrec.models import build
    from privrec.training.trainer import Trainer

    f = b.path / f"domain{k}.npz"
    task, codes = _task(str(b.path), k, f.stat().st_mtime_ns if f.exists() else 0)   # 0: b.domain names the error
    cfg = b.config
    torch.manual_seed(cfg.seed * 1000 + k)
    model = build("code-sasrec", n_items=b.n_items[k], max_len=cfg.max_len, **cfg.model)
    model.set_codes(torch.from_numpy(codes))
    prox = Proximal(cfg.proximal_mu)
    trainer = Trainer(model, task, replace(cfg.train, seed=cfg.seed * 1000 + k), EVAL,
                      hooks=[prox] if cfg.strategy == "fedprox" else [])
    if round_ > 0:
        trainer.load_checkpoint(b.client_state(k, round_))
    return model, trainer, prox


def train_round(b: Bundle, k: int, round_: int, global_table: np.ndarray) -> tuple[object, int, float]:
    """Client ``k``'s round ``round_`` (1-based): (encoded upload, training sample count, mean loss)."""
    from privrec.training.federated import client_round

    torch.set_num_threads(1)
    model, trainer, prox = client(b, k, round_ - 1)
    prox.anchor = torch.as_tensor(np.asarray(global_table), dtype=torch.float32)
    rng = np.random.default_rng([b.config.seed, k, round_, 5])
    upload, n, loss = client_round(model, trainer, global_table, b.config.local_epochs, b.config.codec, rng)
    trainer.save_checkpoint(b.client_state(k, round_))
    return upload, n, loss


def evaluate_round(b: Bundle, k: int, round_: int, global_table: np.ndarray, stage: str = "valid") -> tuple[dict, int]:
    """Client ``k``'s model after round ``round_`` with ``global_table``: (metrics on ``stage``, users evaluated)."""
    from privrec.evaluation.evaluator import evaluate

    torch.set_num_threads(1)
    model, trainer, _ = client(b, k, round_)
    with torch.no_grad():
        model.item_embedding.table.weight.copy_(torch.as_tensor(np.asarray(global_table), dtype=torch.float32))
    res = evaluate(model, trainer.task, stage, EVAL)
    return dict(res.metrics), int(res.n_users)


def pack(upload) -> dict[str, np.ndarray]:
    """An encoded upload as named arrays: ``{"upload": ...}`` (+ ``"indices"`` for sampled coordinates)."""
    from privrec.privacy.fedcodec import CalibratedReport

    if isinstance(upload, CalibratedReport):
        out = {"upload": upload.buckets.astype(np.uint16 if upload.b <= 65536 else np.int64),
               "epsilon_coordinate": np.array([upload.epsilon_coordinate])}
        if upload.indices is not None:
            out["indices"] = upload.indices
        return out
    arr = np.asarray(upload)
    if arr.dtype.kind in "iu":                                   # paper mode: buckets 0..b-1
        return {"upload": arr.astype(np.uint16 if int(arr.max(initial=0)) < 65536 else np.int64)}
    return {"upload": arr.astype(np.float32)}                   # plain: the table change itself


def unpack(arrays: dict[str, np.ndarray], codec: CodecConfig, shape: tuple[int, ...]):
    """Inverse of :func:`pack` given the federation's codec and the table's shape."""
    from privrec.privacy.fedcodec import CalibratedReport

    up = np.asarray(arrays["upload"])
    if codec.mode == "none":
        return up.astype(np.float64).reshape(shape)
    if codec.mode == "paper":
        return up.astype(np.int64).reshape(shape)
    idx = arrays.get("indices")
    return CalibratedReport(up.astype(np.int64).reshape(-1), None if idx is None else np.asarray(idx, np.int64),
                            tuple(shape), float(np.asarray(arrays["epsilon_coordinate"])[0]), codec.buckets,
                            codec.clip)
