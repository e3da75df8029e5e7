"""Client-side pieces of the federated strategies of PFCR's Table 3, over the shared code table E.

* **FedAvg** — nothing on the client (the server averages the decoded uploads).
* **FedProx** (Li et al. 2020) — :class:`Proximal`: loss + μ/2 ‖E − E_global‖².
* **SCAFFOLD** (Karimireddy et al. 2020, option II) — :class:`ControlVariate`: after every local
  optimiser step, ``E ← E − η (c − c_i)`` (with SGD this is exactly SCAFFOLD's corrected step
  ``y ← y − η (g + c − c_i)``; with the Adam optimiser used here the correction is applied in
  parameter space, after Adam's own step). After the round, :func:`scaffold_control` sets
  ``c_i⁺ = c_i − c + (x − y_i) / (K η)`` from the client's *decoded, privatised* upload (K = local
  steps), and the server's ``c`` is the mean of the clients' ``c_i``: both are post-processing of what
  was released, so SCAFFOLD uploads nothing more than FedAvg and costs no extra privacy.
* **PopCode** (PFCR's Table 3) — :func:`popular_rows`: only the code rows used by many items (across
  all domains) are federated; a client downloads and uploads those rows, the others stay local and
  never leave the client (their upload coordinates are the constant 0, which reveals nothing, so the
  guarantee composes over the popular coordinates only).
"""

from __future__ import annotations

import numpy as np
import torch

from privrec.errors import ParameterError
from privrec.training.trainer import Hook


def _table(trainer) -> torch.nn.Parameter:
    from privrec.training.federated import shared_table

    return shared_table(trainer.model)


class Proximal(Hook):
    """FedProx's local objective (Li et al. 2020): loss + μ/2 ‖E − E_global‖² on the federated table."""

    def __init__(self, mu: float):
        self.mu = float(mu)
        self.anchor: torch.Tensor | None = None

    def penalty(self, trainer):
        if self.anchor is None or self.mu == 0:
            return None
        return 0.5 * self.mu * (_table(trainer) - self.anchor).pow(2).sum()


class ControlVariate(Hook):
    """SCAFFOLD's drift correction on E: ``E ← E − lr (c − c_i)`` after each optimiser step.

    ``client`` (c_i) is this client's control variate and survives between rounds in the trainer's
    checkpoint; ``server`` (c) arrives with each round's table; ``steps`` counts the round's local steps."""

    def __init__(self, lr: float):
        self.lr = float(lr)
        self.client: torch.Tensor | None = None
        self.server: torch.Tensor | None = None
        self.steps = 0

    def on_batch_end(self, trainer, batch, loss) -> None:
        self.steps += 1
        if self.server is None:
            return
        correction = self.server - (self.client if self.client is not None else 0.0)
        with torch.no_grad():
            _table(trainer).sub_(self.lr * correction)

    def state_dict(self) -> dict:
        return {} if self.client is None else {"client": self.client}

    def load_state_dict(self, state: dict) -> None:
        self.client = state.get("client")


def scaffold_control(client: np.ndarray | None, server: np.ndarray | None, decoded_delta: np.ndarray, steps: int,
                     lr: float) -> np.ndarray:
    """SCAFFOLD option II: ``c_i⁺ = c_i − c + (x − y_i)/(K η)`` with ``y_i − x`` = the client's decoded
    upload ``decoded_delta`` (what the server also sees), K = ``steps``, η = ``lr``."""
    if steps < 1:
        raise ParameterError(f"a SCAFFOLD round needs at least one local step, got {steps}")
    delta = np.asarray(decoded_delta, dtype=np.float64)
    c_i = np.zeros_like(delta) if client is None else np.asarray(client, dtype=np.float64)
    c = np.zeros_like(delta) if server is None else np.asarray(server, dtype=np.float64)
    return c_i - c - delta / (steps * lr)


def popular_rows(codes: list[np.ndarray], n_centroids: int, share: float) -> np.ndarray:
    """PopCode's federated rows: a boolean mask over E's ``n_codebooks · n_centroids`` rows marking the
    ``share`` of rows used by the most items, counted over every domain's items (``codes``: each domain's
    (n_items + 1, n_codebooks) codes, row 0 padding). Ties at the cut are included; unused rows never are.

    The counts describe the platforms' catalogues (item texts), not their users, and are treated as
    public here, as in the PFCR code. The PFCR code marks a code popular when at least 200 items use it; with ML-1M's ~3,300 items over
    256 centroids per codebook (~13 items a code) that would select nothing, hence a share."""
    if not 0 < share <= 1:
        raise ParameterError(f"popular_share must be in (0, 1], got {share}")
    n_codebooks = codes[0].shape[1]
    offsets = np.arange(n_codebooks) * n_centroids
    counts = np.zeros(n_codebooks * n_centroids, dtype=np.int64)
    for c in codes:
        counts += np.bincount((np.asarray(c[1:], dtype=np.int64) + offsets).ravel(), minlength=counts.size)
    n_keep = max(1, int(round(share * counts.size)))
    cut = np.sort(counts)[::-1][n_keep - 1]
    return (counts >= max(cut, 1))
