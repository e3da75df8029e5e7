"""What the PFCR server does with one round's uploads, as a pure function over a :class:`Bundle`.

The Flower ``ServerApp`` (:mod:`privrec.flower.apps`) calls :func:`aggregate` from its strategy's
``aggregate_train``; tests call it from a plain loop. Per strategy:

* FedAvg / FedProx — decode every upload and add their FedAvg (weights: sample counts) to E;
* PopCode — the same, but only E's popular rows change (the others are never downloaded);
* SCAFFOLD — also each client's control variate ``c_i⁺ = c_i − c + (x − y_i)/(K η)`` from its decoded
  upload and reported step count K, and the server's ``c`` = the mean of the ``c_i`` (every client
  takes part in every round). The client computes its own ``c_i`` the same way, so nothing but the
  encoded ΔE crosses the wire (:mod:`privrec.training.fl_strategies`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from privrec.flower.bundle import Bundle
from privrec.flower.client import decoded
from privrec.training.federated import server_aggregate
from privrec.training.fl_strategies import scaffold_control


@dataclass
class ServerState:
    """The global table E (float64) and, under SCAFFOLD, every client's control variate c_i."""

    table: np.ndarray
    controls: dict[int, np.ndarray] = field(default_factory=dict)

    @property
    def control(self) -> np.ndarray | None:
        """SCAFFOLD's server control c sent with the next round (None before the first aggregation)."""
        if not self.controls:
            return None
        return np.mean([self.controls[k] for k in sorted(self.controls)], axis=0)


def aggregate(b: Bundle, state: ServerState, uploads: list, weights: list[float], steps: list[int]) -> ServerState:
    """The next :class:`ServerState` from clients ``0..n-1``'s ``uploads`` (decodable by the bundle's
    codec), FedAvg ``weights`` and local step counts ``steps`` (SCAFFOLD's K)."""
    cfg = b.config
    new = server_aggregate(state.table, uploads, weights, cfg.codec)
    rows = b.popular
    if rows is not None:
        new[~rows] = state.table[~rows]
    controls = dict(state.controls)
    if cfg.strategy == "scaffold":
        c = state.control
        for k, (u, n_steps) in enumerate(zip(uploads, steps)):
            controls[k] = scaffold_control(controls.get(k), c, decoded(u, cfg.codec, state.table.shape), int(n_steps),
                                           cfg.train.lr)
    return ServerState(new, controls)
