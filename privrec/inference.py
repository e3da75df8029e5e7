"""Use a trained model: ``TrainedModel.load(path).recommend(user_ids, k)``.

Recommendations are raw item ids, best first, excluding items the user has already
interacted with unless ``exclude_seen=False``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import torch

from privrec.data.interactions import IdMap
from privrec.data.sequences import Sequences, pad_left
from privrec.errors import BudgetError, ParameterError
from privrec.models import Recommender
from privrec.training.checkpoint import model_from_checkpoint, read_checkpoint, save_checkpoint


def ledger_meta(model, delta: float, weights=None) -> dict:
    """What a checkpoint's metadata says about the model's privacy ledger ({} for a model that draws no noise):
    the certificate of what it released so far; with ``weights`` (user-level DP-SGD's guarantee, a
    :class:`~privrec.privacy.guarantee.Guarantee` or its dict) the model's one certificate composing both."""
    if not getattr(model, "draws_noise", False):
        return {}
    g = _certificate(model.guarantee(delta), weights)
    out = {"summary": g.summary(), "guarantee": g.to_dict()}
    weights_part = next((r for r in g.related if r.relation == "replace_one"), None) if weights is not None else None
    if weights_part is not None:                       # user-level DP-SGD's weights: composed into the certificate
        out["weights"] = weights_part.to_dict()
    return {"privacy_ledger": out}


def _certificate(aggregates, weights):
    """The aggregates' guarantee, composed with the weights' where they are user-level DP-SGD's."""
    from privrec.privacy.guarantee import Guarantee
    from privrec.privacy.ledger import compose_model

    if isinstance(weights, dict):
        weights = Guarantee.from_dict(weights)
    if weights is None or weights.relation != "replace_one":
        return aggregates
    return compose_model(aggregates, weights)


@dataclass
class TrainedModel:
    model: Recommender
    users: IdMap
    items: IdMap
    history: Sequences
    max_len: int
    meta: dict

    @classmethod
    def load(cls, path: str | os.PathLike) -> TrainedModel:
        payload = read_checkpoint(path)
        return cls(
            model=model_from_checkpoint(payload),
            users=IdMap(np.array(payload["users"], dtype=object), "user"),
            items=IdMap(np.array(payload["items"], dtype=object), "item"),
            history=Sequences(payload["history_indptr"].numpy(), payload["history_items"].numpy()),
            max_len=int(payload["max_len"]),
            meta=payload.get("meta", {}),
        )

    # ---- the privacy ledger of a model whose inference draws noise (DIPSGNN): every call charges it
    @property
    def charged(self) -> bool:
        """Whether this model draws noise at inference and so charges its privacy ledger."""
        return getattr(self.model, "draws_noise", False)

    def guarantee(self, planned_users=None):
        """The model's certificate from its ledger (None for a model that draws no noise); with ``planned_users``
        (the user rows a call is about to run, one entry per forward pass) what it would be after that call."""
        if not self.charged:
            return None
        ledger = self.model.ledger
        if planned_users is not None:
            from privrec.privacy.ledger import Charges

            ledger = Charges(ledger.mechanism, ledger.unit, ledger.counts.copy())
            for _ in range(self.model.steps):
                ledger.charge(np.asarray(planned_users))
        return _certificate(self.model.guarantee(self._delta, ledger=ledger), self._weights)

    @property
    def _weights(self) -> dict | None:
        """The weights' own guarantee (user-level DP-SGD), where the checkpoint's ledger carries one."""
        return self.meta.get("privacy_ledger", {}).get("weights")

    @property
    def _delta(self) -> float:
        """The delta the model was trained and certified at (its training config's)."""
        return float(self.meta.get("config", {}).get("delta", 1e-6))

    def check_budget(self, budget: float | None, planned_users) -> None:
        """Refuse (BudgetError) before a call that would take the certified epsilon past ``budget``."""
        if budget is None or not self.charged:
            return
        if not self.model.ledger_complete:
            raise BudgetError("this checkpoint predates the privacy ledger, so the noisy passes before it are "
                              "unknown and no budget can be kept; train it again with this version of privrec")
        g = self.guarantee(planned_users)
        if g.epsilon > budget:
            weights = (f"; the weights' DP-SGD {g.parameters['weights_epsilon']:.4g} of it, fixed at training"
                       if "weights_epsilon" in g.parameters else "")
            raise BudgetError(f"this call would take the model's certified epsilon to {g.epsilon:.6g} (delta "
                              f"{g.delta:.3g}, {g.parameters['passes']} noisy passes of the most-read user graph"
                              f"{weights}), past --budget {budget:g}; nothing was run. Raise --budget, or ask for "
                              "fewer users")

    def save(self, path: str | os.PathLike) -> None:
        """Write the checkpoint back atomically with the model's current state (its ledger) and certificate."""
        meta = {**self.meta, **ledger_meta(self.model, self._delta, self._weights)}
        save_checkpoint(path, self.model, users=self.users, items=self.items, history=self.history,
                        max_len=self.max_len, meta=meta)
        self.meta = meta

    @cached_property
    def _reads(self) -> Sequences:
        return self.model.read(self.history)

    def user_rows(self, user_ids) -> np.ndarray:
        """The model's rows of raw user ids (unknown ids raise a clear error)."""
        if isinstance(user_ids, (str, int)):
            user_ids = [user_ids]
        return self.users.encode([str(u) for u in user_ids])

    @torch.no_grad()
    def recommend(self, user_ids, k: int = 10, exclude_seen: bool = True) -> dict[str, list[str]]:
        """Top-``k`` raw item ids for each raw user id (unknown ids raise a clear error). A model whose inference
        draws noise (DIPSGNN) charges its ledger: :meth:`save` writes that back to the checkpoint."""
        return {u: [item for item, _ in ranked] for u, ranked in self.recommend_scored(user_ids, k, exclude_seen).items()}

    def recommend_scored(self, user_ids, k: int = 10, exclude_seen: bool = True) -> dict[str, list[tuple[str, float]]]:
        """:meth:`recommend` with each item's score (the model's raw score: higher ranks first; its scale is the
        model's own, comparable within one user's list)."""
        if k < 1:
            raise ParameterError(f"k must be >= 1, got {k}")
        if isinstance(user_ids, (str, int)):
            user_ids = [user_ids]
        raw = [str(u) for u in user_ids]
        codes = self.users.encode(raw)
        k = min(k, len(self.items))
        reads = self._reads
        seq = pad_left(reads.indptr, reads.items, self.max_len, codes).astype(np.int64)
        scores = self.model.score({"seq": torch.from_numpy(seq), "user": torch.from_numpy(codes.astype(np.int64))})
        scores = scores.float()
        scores[:, 0] = -torch.inf
        if exclude_seen:
            for row, u in enumerate(codes):
                seen = torch.from_numpy(self.history.row(int(u)).astype(np.int64))
                scores[row, seen] = -torch.inf
        top = torch.topk(scores, k, dim=1)
        out = {}
        for row, user in enumerate(raw):
            keep = torch.isfinite(top.values[row])
            idx, val = top.indices[row][keep].numpy(), top.values[row][keep].detach().numpy()
            out[user] = [(str(t), float(v)) for t, v in zip(self.items.decode(idx), val)]
        return out
