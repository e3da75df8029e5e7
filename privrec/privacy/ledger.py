"""Compose the guarantees of one pipeline.

Entries with the same unit of privacy compose. When every entry of a unit carries a
``dp_accounting`` event under the same neighbouring relation, the total comes from the
accountants (tighter of RDP and PLD); otherwise from basic composition (sum of epsilons
and deltas), which always holds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import dp_accounting

from privrec.privacy import accounting
from privrec.privacy.guarantee import Guarantee


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


def is_finite(g: Guarantee) -> bool:
    return math.isfinite(g.epsilon)
