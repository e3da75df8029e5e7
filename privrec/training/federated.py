"""PFCR's federated round as pure client and server steps (Sec. 3.4), for a federation runtime to call.

Domains are clients; what they share is the code-embedding table E of
:class:`~privrec.models.code_encoder.CodeSASRec` (no item ids, so domains with disjoint items can
share it). One round:

1. **client** (:func:`client_round`): load the global E, train locally for ``local_epochs``
   (:meth:`~privrec.training.trainer.Trainer.train_epochs`; the client's own encoder stays local),
   and upload ``ΔE = E_local − E_global`` encoded by the gradient codec
   (:mod:`privrec.privacy.fedcodec`: ``"paper"`` = the paper's Eqs. 11–13, whose true per-coordinate
   ε is ln(1 + b(e^ε + 1)); ``"calibrated"`` = ε-LDP b-ary randomised response after stochastic
   rounding, unbiased), or in the clear (``"none"``);
2. **server** (:func:`server_aggregate`): decode every upload and average them with FedAvg
   weights (the clients' training sample counts), ``E_global += mean ΔE``.

Each client's guarantee (:func:`upload_guarantee`) composes its uploads over the rounds; the unit is
the client's whole dataset, as PFCR protects domains. These functions know nothing about the
transport: Flower's ``ClientApp`` / ``ServerApp`` (simulation or deployment) wrap them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch

from privrec.errors import ParameterError

MODES = ("none", "paper", "calibrated")


@dataclass(frozen=True)
class CodecConfig:
    """How uploads are encoded: ``mode``, ε per upload coordinate (paper) or per upload (calibrated),
    ``buckets`` b and the clip bound τ of Eq. 9."""

    mode: str = "calibrated"
    epsilon: float = 0.5
    buckets: int = 64
    clip: float = 0.05

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ParameterError(f"codec mode must be one of {MODES}, got {self.mode!r}")
        if self.mode != "none":
            from privrec.privacy.validate import check_epsilon

            check_epsilon(self.epsilon)
            if not (isinstance(self.buckets, int) and self.buckets >= 2):
                raise ParameterError(f"buckets must be an integer >= 2, got {self.buckets!r}")
            if not self.clip > 0:
                raise ParameterError(f"clip must be positive, got {self.clip!r}")


def shared_table(model) -> torch.nn.Parameter:
    """The federated parameter: the code-embedding table E of a code-based model."""
    table = getattr(getattr(model, "item_embedding", None), "table", None)
    if table is None:
        raise ParameterError(f"{type(model).__name__} has no code-embedding table to federate; use code-sasrec")
    return table.weight


def encode(delta: np.ndarray, codec: CodecConfig, rng: np.random.Generator):
    """One client's upload of ``delta`` under ``codec`` (the array itself when ``mode="none"``)."""
    from privrec.privacy import fedcodec

    if codec.mode == "none":
        return np.asarray(delta, dtype=np.float64).copy()
    if codec.mode == "paper":
        return fedcodec.encode_paper(delta, codec.epsilon, codec.buckets, codec.clip, rng)
    return fedcodec.encode_calibrated(delta, codec.epsilon, codec.buckets, codec.clip, rng)


def client_round(model, trainer, global_table: np.ndarray, local_epochs: int, codec: CodecConfig,
                 rng: np.random.Generator, rows: np.ndarray | None = None) -> tuple[object, int, float]:
    """Load ``global_table`` into ``model``, train ``local_epochs`` with ``trainer`` (built on ``model``),
    return (encoded ΔE, the client's training sample count for FedAvg, mean local loss). ``rows``: a
    boolean mask of the federated rows (PopCode); the others upload the constant 0, which reveals nothing."""
    table = shared_table(model)
    with torch.no_grad():
        table.copy_(torch.as_tensor(global_table, dtype=table.dtype))
    losses = trainer.train_epochs(local_epochs)
    delta = table.detach().cpu().numpy().astype(np.float64) - np.asarray(global_table, dtype=np.float64)
    if rows is not None:
        delta[~np.asarray(rows, dtype=bool)] = 0.0
    n = int(getattr(trainer.task, "n_train_samples", 0) or trainer.task.n_train_batches(1))
    return encode(delta, codec, rng), n, float(np.mean(losses))


def server_aggregate(global_table: np.ndarray, uploads, weights, codec: CodecConfig) -> np.ndarray:
    """The next global table: decode each upload, FedAvg them by ``weights`` (sample counts), add."""
    from privrec.privacy import fedcodec

    if len(uploads) == 0 or len(uploads) != len(weights):
        raise ParameterError(f"need one weight per upload, got {len(uploads)} uploads and {len(weights)} weights")
    shape = np.asarray(global_table).shape
    if codec.mode == "none":
        decoded = [np.asarray(u, dtype=np.float64).reshape(shape) for u in uploads]
        step = fedcodec.fedavg(decoded, weights)
    elif codec.mode == "paper":
        step = fedcodec.decode_paper(list(uploads), codec.epsilon, codec.buckets, codec.clip, weights=weights)
    else:
        step = fedcodec.fedavg([fedcodec.decode_calibrated(u) for u in uploads], weights)
    return np.asarray(global_table, dtype=np.float64) + np.asarray(step).reshape(shape)


def upload_guarantee(codec: CodecConfig, n_coords: int, rounds: int, delta: float = 1e-6):
    """One client's guarantee over ``rounds`` uploads of ``n_coords`` coordinates (unit: its whole
    dataset); ``mode="none"``: no privacy (ε = ∞)."""
    import math

    from privrec.privacy import fedcodec
    from privrec.privacy.guarantee import Guarantee

    if codec.mode == "none":
        g = Guarantee("federated-plain", "none: updates uploaded in the clear", math.inf, 0.0,
                      "one client's whole dataset", {"rounds": rounds, "coords": n_coords}, valid=False,
                      validity="no noise")
    else:
        g = fedcodec.guarantee(codec.mode, codec.epsilon, codec.buckets, n_coords, rounds, delta=delta)
    return replace(g, notes=(*g.notes, CLEAR_RELEASES))


CLEAR_RELEASES = ("Covers the encoded table uploads only. Each round a client also sends, in the clear: its number "
                  "of training samples and local steps (FedAvg weights, SCAFFOLD's step count), the size of its "
                  "upload, and its validation HR/NDCG@10,50 of the round's global table, on which the server picks "
                  "the best round. These are data-dependent and not covered by this guarantee.")
