"""What one PFCR client (a domain) does in a round, as plain functions over a :class:`Bundle`.

The Flower ``ClientApp`` (:mod:`privrec.flower.apps`) only moves arrays in and out of messages and
calls these; they can be tested, and re-run, without Flower.

* :func:`train_round` — restore the client's round t-1 checkpoint (or build it fresh at round 1),
  load the received global table E (PopCode: its popular rows only), train ``local_epochs`` (FedProx:
  plus μ/2‖E − E_global‖²; SCAFFOLD: with the drift correction c − c_i), encode ΔE with the codec
  (:func:`privrec.training.federated.client_round`), update SCAFFOLD's c_i from the decoded upload,
  checkpoint round t (strategies: :mod:`privrec.training.fl_strategies`);
* :func:`evaluate_round` — the client's model after round t (its local encoder, the global E after
  aggregation, :func:`client_table`) on its validation users: the quantity early stopping reads;
* :func:`pack` / :func:`unpack` — an encoded upload as named arrays (what crosses the wire) and back.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import torch

from privrec.flower.bundle import EVAL, Bundle
from privrec.training.federated import CodecConfig
from privrec.training.fl_strategies import ControlVariate, Proximal

__all__ = ["Proximal", "client", "client_table", "evaluate_round", "pack", "train_round", "unpack"]


@lru_cache(maxsize=8)
def _task(path: str, k: int, version: int):
    """Domain ``k``'s task and codes, cached per process; ``version`` (the file's mtime) drops a rewritten bundle's."""
    from privrec.training.tasks import SequenceTask

    b = _bundle(path)
    split, codes = b.domain(k)
    return SequenceTask(split, n_items=b.n_items[k], max_len=b.config.max_len), codes


def _bundle(path: str) -> Bundle:
    from privrec.flower.bundle import load_bundle

    return load_bundle(path)


def client(b: Bundle, k: int, round_: int):
    """Client ``k``'s (model, trainer, strategy hook or None) as they stood after round ``round_`` (0: fresh,
    seeded); the hook is FedProx's :class:`Proximal` or SCAFFOLD's :class:`ControlVariate`."""
    from dataclasses import replace

    from privrec.models import build
    from privrec.training.trainer import Trainer

    f = b.path / f"domain{k}.npz"
    task, codes = _task(str(b.path), k, f.stat().st_mtime_ns if f.exists() else 0)   # 0: b.domain names the error
    cfg = b.config
    torch.manual_seed(cfg.seed * 1000 + k)
    model = build("code-sasrec", n_items=b.n_items[k], max_len=cfg.max_len, **cfg.model)
    model.set_codes(torch.from_numpy(codes))
    hook = {"fedprox": lambda: Proximal(cfg.proximal_mu), "scaffold": lambda: ControlVariate(cfg.train.lr)}.get(
        cfg.strategy, lambda: None)()
    trainer = Trainer(model, task, replace(cfg.train, seed=cfg.seed * 1000 + k), EVAL,
                      hooks=[hook] if hook is not None else [])
    if round_ > 0:
        trainer.load_checkpoint(b.client_state(k, round_))
    return model, trainer, hook


def client_table(b: Bundle, own: np.ndarray, global_table: np.ndarray) -> np.ndarray:
    """The table a client uses given its ``own`` (local) table and the ``global_table``: the global one,
    except under PopCode, where only the popular rows are global and the others the client's own."""
    rows = b.popular
    g = np.asarray(global_table, dtype=np.float32)
    return g if rows is None else np.where(rows[:, None], g, np.asarray(own, dtype=np.float32))


def decoded(upload, codec: CodecConfig, shape: tuple[int, ...]) -> np.ndarray:
    """One upload as the server reads it (the decoded ΔE, weight 1)."""
    from privrec.training.federated import server_aggregate

    return server_aggregate(np.zeros(shape), [upload], [1.0], codec)


def train_round(b: Bundle, k: int, round_: int, global_table: np.ndarray,
                control: np.ndarray | None = None) -> tuple[object, int, float, int]:
    """Client ``k``'s round ``round_`` (1-based) from ``global_table`` (and SCAFFOLD's server ``control``
    c): (encoded upload, training sample count, mean loss, local optimiser steps)."""
    from privrec.training.federated import client_round
    from privrec.training.fl_strategies import scaffold_control

    torch.set_num_threads(1)
    model, trainer, hook = client(b, k, round_ - 1)
    start = np.asarray(global_table, dtype=np.float32)
    if round_ > 1:                                    # PopCode: the unpopular rows stay the client's own
        start = client_table(b, model.item_embedding.table.weight.detach().numpy(), start)
    if isinstance(hook, Proximal):
        hook.anchor = torch.as_tensor(np.asarray(global_table), dtype=torch.float32)
    if isinstance(hook, ControlVariate):
        hook.server = None if control is None else torch.as_tensor(np.asarray(control), dtype=torch.float32)
        hook.steps = 0
    rng = np.random.default_rng([b.config.seed, k, round_, 5])
    upload, n, loss = client_round(model, trainer, start, b.config.local_epochs, b.config.codec, rng,
                                   rows=b.popular)
    steps = int(hook.steps) if isinstance(hook, ControlVariate) else trainer.task.n_train_batches(
        b.config.train.batch_size) * b.config.local_epochs
    if isinstance(hook, ControlVariate):
        c_i = None if hook.client is None else hook.client.numpy()
        new = scaffold_control(c_i, control, decoded(upload, b.config.codec, start.shape), steps, hook.lr)
        hook.client = torch.as_tensor(new, dtype=torch.float32)
    trainer.save_checkpoint(b.client_state(k, round_))
    return upload, n, loss, steps


def evaluate_round(b: Bundle, k: int, round_: int, global_table: np.ndarray, stage: str = "valid") -> tuple[dict, int]:
    """Client ``k``'s model after round ``round_`` with ``global_table``: (metrics on ``stage``, users evaluated)."""
    from privrec.evaluation.evaluator import evaluate

    torch.set_num_threads(1)
    model, trainer, _ = client(b, k, round_)
    table = model.item_embedding.table.weight
    with torch.no_grad():
        table.copy_(torch.as_tensor(client_table(b, table.detach().numpy(), global_table)))
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
