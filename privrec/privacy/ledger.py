"""Privacy ledgers: what a pipeline released, recorded as it is released.

* :class:`Charges` — the ledger a noisy operation charges *at the moment it draws noise*: per
  protected unit (e.g. a user's graph), how many times one repeated mechanism (fixed parameters)
  read it. The certificate is the composition over the most-charged unit (an upper bound for every
  unit inside it), so passes that a plan forgot (a second test masking, ``evaluate`` or ``recommend``
  on a checkpoint) are counted because they happened, not because someone listed them. It travels
  in a model's extra state, hence in its training states and checkpoints.
* :func:`compose_model` — a DIPSGNN model trained with user-level DP-SGD: one certificate for its weights
  and every aggregate it released, in one unit.
* :class:`Ledger` — composes heterogeneous guarantees of one pipeline: entries with the same unit of
  privacy compose; when every entry of a unit carries a ``dp_accounting`` event under the same
  neighbouring relation, the total comes from the accountants (tighter of RDP and PLD); otherwise
  from basic composition (sum of epsilons and deltas), which always holds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import dp_accounting
import numpy as np
import torch

from privrec.privacy import accounting
from privrec.privacy.guarantee import Guarantee


@dataclass
class Charges:
    """Per-unit charges of one repeated noisy mechanism: ``counts[u]`` = releases that read unit ``u``.

    ``mechanism`` names the release (e.g. ``"dipsgnn-aggregation-step"``) and ``unit`` what a count
    protects (e.g. ``"user graph"``). Charging is O(units charged) (``np.add.at``)."""

    mechanism: str
    unit: str
    counts: np.ndarray

    @classmethod
    def new(cls, n_units: int, mechanism: str, unit: str) -> Charges:
        if n_units < 1:
            raise ValueError(f"a ledger needs at least one unit, got {n_units}")
        return cls(mechanism, unit, np.zeros(int(n_units), np.int64))

    def charge(self, units) -> None:
        """One release read each of ``units`` (ids in [0, n_units); a unit listed k times is charged k times)."""
        idx = units.detach().cpu().numpy() if isinstance(units, torch.Tensor) else np.asarray(units)
        idx = idx.astype(np.int64, copy=False).reshape(-1)
        if idx.size and (idx.min() < 0 or idx.max() >= len(self.counts)):
            raise ValueError(f"unit ids must lie in [0, {len(self.counts)}), got {idx.min()}..{idx.max()}")
        np.add.at(self.counts, idx, 1)

    def worst(self) -> int:
        """The most charges any one unit took (what the certificate composes)."""
        return int(self.counts.max())

    def summary(self) -> dict:
        return {"mechanism": self.mechanism, "unit": self.unit, "charges": int(self.counts.sum()),
                "units_charged": int((self.counts > 0).sum()), "worst_unit_charges": self.worst()}

    def state(self) -> torch.Tensor:
        """The counts as a tensor (so a model's extra state, training states and checkpoints carry them)."""
        return torch.from_numpy(self.counts.copy())

    def load(self, counts: torch.Tensor) -> None:
        counts = counts.detach().cpu().numpy().astype(np.int64)
        if counts.shape != self.counts.shape or (counts < 0).any():
            raise ValueError(f"ledger counts must be {self.counts.shape} non-negative integers, got {counts.shape}")
        self.counts = counts


@dataclass
class Ledger:
    entries: list[Guarantee] = field(default_factory=list)

    def add(self, guarantee: Guarantee, count: int = 1) -> Ledger:
        self.entries.extend([guarantee] * count)
        return self

    def units(self) -> list[str]:
        return sorted({g.unit for g in self.entries})

    def total(self, unit: str, delta: float | None = None) -> Guarantee:
        """The composed guarantee of all entries with ``unit`` (at ``delta`` for accountant-based totals)."""
        group = [g for g in self.entries if g.unit == unit]
        if not group:
            raise KeyError(f"no ledger entry has unit {unit!r}; units: {self.units()}")
        basic_eps = sum(g.epsilon for g in group)
        basic_delta = min(1.0, sum(g.delta for g in group))
        relations = {g.relation for g in group}
        if all(g.event is not None for g in group) and len(relations) == 1 and delta is not None:
            event = dp_accounting.ComposedDpEvent([g.event for g in group])
            eps, how = accounting.epsilon(event, delta, relations.pop())
            if eps <= basic_eps or basic_delta > delta:
                return Guarantee(mechanism="+".join(sorted({g.mechanism for g in group})),
                                 definition=f"composition of {len(group)} releases", epsilon=eps, delta=delta,
                                 unit=unit, accounting=how, event=event, relation=group[0].relation)
        return Guarantee(mechanism="+".join(sorted({g.mechanism for g in group})),
                         definition=f"basic composition of {len(group)} releases", epsilon=basic_eps,
                         delta=basic_delta, unit=unit, accounting="basic composition (sum)")

    def to_dict(self, delta: float | None = None) -> dict:
        return {"entries": [g.to_dict() for g in self.entries],
                "totals": {u: self.total(u, delta).to_dict() for u in self.units()}}


def compose_model(aggregates: Guarantee, weights: Guarantee) -> Guarantee:
    """The one certificate of a DIPSGNN model trained with user-level DP-SGD, in the aggregates' unit (one
    transition count of one user's graph): its noisy aggregates (every pass its ledger counted) composed with
    its weights (DP-SGD, replace one user — any change inside one user's history, so one transition count
    too). Basic composition (sum of epsilons and of deltas; the two accountants' relations differ), which holds
    under adaptive composition. Sample-level DP-SGD is refused: it covers a transition only as group privacy
    over the samples that contain it."""
    if weights.relation != "replace_one":
        raise ValueError("a model certificate composes user-level DP-SGD (replace one user) with the aggregates; "
                         f"these weights are certified per {weights.unit!r}: train with --dpsgd-unit user")
    def both(agg: Guarantee) -> Guarantee:
        return Ledger().add(agg).add(replace(weights, unit=agg.unit)).total(agg.unit)

    total = both(aggregates)
    # the same model per interaction (its aggregates' interaction-level figure, when they state one), first
    others = tuple(both(r) for r in aggregates.related if "interaction" in r.unit)
    return replace(
        total, mechanism="dipsgnn-noisy-aggregation+dp-sgd-user",
        definition="(epsilon, delta)-DP of the released model: its weights (user-level DP-SGD) and every noisy "
                   "aggregate whose output was read (validation, testing, evaluate, recommend)",
        parameters={**aggregates.parameters, "aggregates_epsilon": aggregates.epsilon,
                    "aggregates_delta": aggregates.delta, "weights_epsilon": weights.epsilon,
                    "weights_delta": weights.delta, "weights": dict(weights.parameters)},
        related=(*others, aggregates, weights), valid=aggregates.valid and weights.valid,
        notes=("Basic composition of the aggregates' guarantee and the weights' replace-one-user guarantee (a "
               "change of one transition count is a change inside one user's history).",
               "The weights are DP per user on their own (related guarantee): the noisy aggregates a training pass "
               "computes from a user's graph reach them only through that user's clipped, noised gradient, so the "
               "aggregates' ledger charges the passes whose outputs are read — validation, test, evaluate, "
               "recommend — and not the training passes.",
               "Not covered: the training losses logged and the epoch selected on validation items (raw labels).",
               "A recommendation to a user still reads that user's own raw history (last item, node set) beside "
               "the noisy aggregates: it is private towards others, not towards the user it is shown to."))


def is_finite(g: Guarantee) -> bool:
    return math.isfinite(g.epsilon)
