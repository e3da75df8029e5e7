"""APGNN and DIPSGNN (Hu & Fang, Sec. 4.2–4.4): SR-GNN whose node updates read the user too.

* **User embedding** (Eq. 5): ``e_u = x_u E_U``, ``x_u`` the user's encoded features (a buffer set
  with :meth:`APGNN.set_features`: the true features for APGNN, their ε₁-LDP release —
  :func:`privrec.privacy.features.perturb_features` — for DIPSGNN; all-zero rows give the "-U"
  ablations), ``E_U`` a (d₀ × d′) matrix.
* **Joint node rows** (Alg. 4 line 5): ``h_i = e_i ⊕ e_u`` (d + d′), aggregated over the graph,
  then ``a_i = (Ĥ_in W_in)_i + b_in ⊕ (Ĥ_out W_out)_i + b_out`` with ``W ∈ R^{(d+d′)×d}`` and a
  GRU update of ``e_i`` (Eqs. 8–9); ``e_u`` itself is not updated (the paper: "implicitly").
* **DIPSGNN's aggregation** (Eqs. 6–7): rows of the joint matrix rescaled to norm C, *count*
  adjacency (no degree normalisation, Sec. 4.2), and N(0, σ² I) added to both aggregates at every
  step of every forward pass — in training and in evaluation, since recommendations are what
  an attacker sees (:func:`privrec.privacy.graph.dipsgnn_step`; noise from the model's own
  generator, saved with its weights). APGNN: degree-normalised adjacency, no clipping, no noise.
* **Readout** (Eqs. 10–11): ``z_u = W3 (z_g ⊕ z_l ⊕ e_u)``, scores ``z_u · e_j`` (Eq. 12).

What it spends is counted where the noise is drawn: every noisy step charges the model's ledger
(:class:`privrec.privacy.ledger.Charges`) with the users whose graphs it read; the certificate composes
the most-charged user's steps (:func:`privrec.experiments.model_inputs.graph_guarantee`, via
:func:`privrec.privacy.graph.guarantee`), whatever ran them — training, validation, both test maskings,
``privrec evaluate`` or ``recommend`` on a checkpoint.
"""

from __future__ import annotations

import torch
from torch import nn

from privrec.models.srgnn import SRGNN
from privrec.privacy.graph import dipsgnn_step
from privrec.privacy.ledger import Charges

LEDGER_MECHANISM = "dipsgnn-aggregation-step"
LEDGER_UNIT = "user graph (every transition in it)"
_LEDGER_TAG = torch.tensor(list(b"privrec-ledger/1"), dtype=torch.uint8)


class APGNN(SRGNN):
    name = "apgnn"
    needs_features = True               # the trainer sets its feature buffer (true or epsilon1-LDP features)
    data_buffers = ("features",)        # the caller's data, not learned: see privrec.training.model_state

    def __init__(self, n_items: int, n_users: int, n_features: int, max_len: int = 50, hidden: int = 100,
                 user_dim: int = 50, steps: int = 1, weighted: bool = True, user_ids: bool = False):
        """``user_ids``: the paper's "-U" ablations (Sec. 5.5, Fig. 7): no user features; the user
        embedding is a learned row per user id instead of E_U applied to the user's feature row."""
        super().__init__(n_items, max_len, hidden, steps, weighted)
        self._config.update(n_users=n_users, n_features=n_features, user_dim=user_dim)
        if user_ids:                        # only when set: the configs (and states) of feature models stay as they were
            self._config["user_ids"] = True
        self.user_ids = bool(user_ids)
        self.register_buffer("features", torch.zeros(n_users, n_features))
        self.user_table = (nn.Embedding(n_users, user_dim) if user_ids                  # E_U by user id
                           else nn.Linear(n_features, user_dim, bias=False))          # E_U on the features
        self.edge_in, self.edge_out = nn.Linear(hidden + user_dim, hidden), nn.Linear(hidden + user_dim, hidden)
        self.w3 = nn.Linear(2 * hidden + user_dim, hidden, bias=False)
        std = 1.0 / hidden ** 0.5
        for module in (self.user_table, self.edge_in, self.edge_out, self.w3):
            for p in module.parameters():
                nn.init.uniform_(p, -std, std)

    def set_features(self, features: torch.Tensor) -> None:
        """Each user's encoded feature row (n_users, d₀), row 0 for padding; true or LDP-released."""
        if tuple(features.shape) != tuple(self.features.shape):
            raise ValueError(f"features must have shape {tuple(self.features.shape)}, got {tuple(features.shape)}")
        if not bool(torch.isfinite(features).all()):
            raise ValueError("features contain NaN or infinity")
        self.features.copy_(features)

    def user_vector(self, batch: dict | None) -> torch.Tensor:
        if batch is None or "user" not in batch:
            raise ValueError(f"{type(self).__name__} needs the batch's user ids (batch['user'])")
        users = batch["user"]
        return self.user_table(users) if self.user_ids else self.user_table(self.features[users])

    def joint(self, h: torch.Tensor, batch: dict | None) -> torch.Tensor:
        """``h_i ⊕ e_u`` for every node of every row, (B, n, d + d′)."""
        user = self.user_vector(batch)
        return torch.cat([h, user[:, None, :].expand(-1, h.shape[1], -1)], -1)

    def aggregate(self, a_in, a_out, h, batch=None):
        hj = self.joint(h, batch)
        return torch.cat([self.edge_in(torch.bmm(a_in, hj)), self.edge_out(torch.bmm(a_out, hj))], -1)


class DIPSGNN(APGNN):
    name = "dipsgnn"
    normalise_graph = False             # Sec. 4.2: count adjacency, so one transition moves one entry

    def __init__(self, n_items: int, n_users: int, n_features: int, max_len: int = 50, hidden: int = 100,
                 user_dim: int = 50, steps: int = 1, clip: float = 0.2, sigma: float = 0.228, user_ids: bool = False):
        super().__init__(n_items, n_users, n_features, max_len, hidden, user_dim, steps, weighted=True,
                         user_ids=user_ids)
        self._config.update(clip=clip, sigma=sigma)
        del self._config["weighted"]
        self.clip, self.sigma = float(clip), float(sigma)
        # the aggregation noise has its own generator, seeded from torch's (so by the training seed) and saved
        # with the weights (get_extra_state): a resumed run replays exactly the noise it would have drawn
        self.noise = torch.Generator().manual_seed(int(torch.randint(2 ** 62, (1,))))
        # the privacy ledger: every noisy step charges the user graphs it read, when it draws the noise
        # (training, validation, testing, evaluate, recommend); it travels with the noise state, and
        # restoring the best weights leaves both where they are (privrec.training.model_state)
        self.ledger = Charges.new(n_users, LEDGER_MECHANISM, LEDGER_UNIT)
        self.ledger_complete = True         # False for a state saved before models carried their ledger
        # False when the weights train under user-level DP-SGD: what a training pass computes from a user's graph
        # reaches the released weights only through that user's clipped, noised gradient, which DP-SGD's
        # guarantee covers; validation, test and inference passes are still charged (their outputs are read)
        self.charge_training = True

    def get_extra_state(self) -> torch.Tensor:
        """The noise generator's state, then the ledger's counts (int64 bytes): one uint8 tensor, so training
        states and checkpoints carry (and hash) it like a weight, and restoring the best weights leaves it."""
        counts = self.ledger.state().view(torch.uint8)
        return torch.cat([self.noise.get_state(), _LEDGER_TAG, counts])

    def set_extra_state(self, state: torch.Tensor) -> None:
        n = len(self.noise.get_state())
        self.noise.set_state(state[:n].clone())
        if len(state) == n:                            # written before the ledger: its passes are unknown
            self.ledger_complete = False
            return
        if not torch.equal(state[n:n + len(_LEDGER_TAG)], _LEDGER_TAG):
            raise ValueError("DIPSGNN extra state: not a noise state followed by a privacy ledger")
        self.ledger.load(state[n + len(_LEDGER_TAG):].clone().view(torch.int64))
        self.ledger_complete = True

    def aggregate(self, a_in, a_out, h, batch=None):
        """Alg. 4 lines 5–11: joint rows clipped to norm C, noisy in- and out-sums, linear maps."""
        h_in, h_out = dipsgnn_step(a_in, a_out, self.joint(h, batch), self.clip, self.sigma, self.noise)
        if self.draws_noise and (self.charge_training or not self.training):
            self.ledger.charge(batch["user"])          # one noisy step read each row's user graph
        return torch.cat([self.edge_in(h_in), self.edge_out(h_out)], -1)

    def noisy_passes(self, ledger: Charges | None = None) -> int:
        """Forward passes (T noisy steps each) that read the most-read user graph, from the ledger (or ``ledger``)."""
        return -(-(ledger or self.ledger).worst() // self.steps)

    @property
    def draws_noise(self) -> bool:
        """Whether its forward passes draw noise (and so charge the ledger): sigma > 0."""
        return self.sigma > 0

    def guarantee(self, delta: float, plan: int | None = None, ledger: Charges | None = None):
        """The honest (epsilon, delta) of every noisy aggregate this model has released (its ledger's most-read
        user graph; ``ledger`` instead, e.g. a copy charged with what a call is about to run). A state that
        predates the ledger is certified on the larger of the ledger and ``plan`` (passes counted in advance)."""
        from dataclasses import replace

        from privrec.privacy.graph import guarantee

        ledger = ledger or self.ledger
        counted = self.noisy_passes(ledger)
        used = counted if self.ledger_complete else max(counted, plan or 0)
        g = guarantee(self.sigma, self.clip, self.steps, max(used, 1), delta)
        note = (f"passes counted by the model's privacy ledger as the noise was drawn: {counted} for the most-read "
                "user graph (training passes unless the weights train under user-level DP-SGD, validation and every "
                "test or inference pass" +
                (f"; the plan that calibrated sigma counted {plan})" if plan is not None else ")")
                if self.ledger_complete else
                f"passes: the larger of the ledger's {counted} and the plan's {plan} (the model's state predates the "
                "ledger, so the passes before it are not counted)")
        return replace(g, notes=(*g.notes, note), parameters={**g.parameters, "ledger": ledger.summary(),
                                                              "ledger_complete": self.ledger_complete})
