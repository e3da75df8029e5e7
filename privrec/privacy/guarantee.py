"""Guarantees as data (the certificate written with every release is :mod:`privrec.release.certificate`).

A :class:`Guarantee` states exactly what a mechanism run gives: the definition, epsilon,
delta, the unit of privacy (what two neighbouring inputs differ in), the parameters,
whether they are inside the theorem's validity, and - where the paper claims something
else - the paper's claim next to the true value with a one-line reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any


@dataclass(frozen=True)
class Claim:
    """What a paper claims for the same setting, and why the true guarantee differs."""

    epsilon: float
    delta: float = 0.0
    source: str = ""
    reason: str = ""

    def to_dict(self) -> dict:
        return {"epsilon": _num(self.epsilon), "delta": self.delta, "source": self.source, "reason": self.reason}


@dataclass(frozen=True)
class Guarantee:
    mechanism: str
    definition: str
    epsilon: float
    delta: float = 0.0
    unit: str = ""
    parameters: dict = field(default_factory=dict)
    valid: bool = True
    validity: str = ""
    claimed: Claim | None = None
    accounting: str = "closed form"
    event: Any = None                       # dp_accounting DpEvent when the cost fits its model
    relation: str | None = None             # dp_accounting neighbouring relation of `event`
    related: tuple[Guarantee, ...] = ()   # the same run under other units (e.g. user level)
    notes: tuple[str, ...] = ()

    @property
    def is_private(self) -> bool:
        return math.isfinite(self.epsilon) and self.delta < 1.0

    def with_related(self, *others: Guarantee) -> Guarantee:
        return replace(self, related=self.related + tuple(others))

    @classmethod
    def from_dict(cls, d: dict) -> Guarantee:
        """A guarantee read back from :meth:`to_dict` (the dp_accounting event is not: composing read-back
        guarantees falls back to basic composition)."""
        def num(x):
            return math.inf if x == "inf" else float(x)

        return cls(mechanism=d["mechanism"], definition=d["definition"], epsilon=num(d["epsilon"]),
                   delta=float(d.get("delta", 0.0)), unit=d.get("unit_of_privacy", ""),
                   parameters=dict(d.get("parameters", {})), valid=bool(d.get("valid", True)),
                   validity=d.get("validity", ""), accounting=d.get("accounting", "closed form"),
                   relation=d.get("neighboring_relation"),
                   related=tuple(cls.from_dict(r) for r in d.get("related", ())), notes=tuple(d.get("notes", ())))

    def summary(self) -> str:
        delta = f", delta={self.delta:.3g}" if self.delta else ""
        text = f"{self.definition}: epsilon={_fmt(self.epsilon)}{delta} per {self.unit or 'record'}"
        if self.claimed is not None:
            text += f" (paper claims {_fmt(self.claimed.epsilon)}: {self.claimed.reason})"
        if not self.valid:
            text += f" [outside the theorem's validity: {self.validity}]"
        return text

    def to_dict(self) -> dict:
        out = {
            "mechanism": self.mechanism,
            "definition": self.definition,
            "epsilon": _num(self.epsilon),
            "delta": self.delta,
            "unit_of_privacy": self.unit,
            "parameters": {k: _num(v) if isinstance(v, float) else v for k, v in self.parameters.items()},
            "valid": self.valid,
            "validity": self.validity,
            "accounting": self.accounting,
        }
        if self.claimed is not None:
            out["paper_claim"] = self.claimed.to_dict()
        if self.event is not None:
            out["dp_event"] = repr(self.event)
        if self.event is not None or self.relation is not None:
            out["neighboring_relation"] = self.relation
        if self.related:
            out["related"] = [g.to_dict() for g in self.related]
        if self.notes:
            out["notes"] = list(self.notes)
        return out


def _num(x: Any) -> Any:
    """JSON has no infinity: write it as the string "inf"."""
    if isinstance(x, float) and math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def _fmt(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:.4g}"


REL_TOL = 1e-9          # stated and recomputed epsilons agree to this relative tolerance


def number(x: Any) -> float:
    """A stated epsilon or delta as a float ("inf", as JSON writes infinity, included)."""
    return math.inf if x in ("inf", math.inf) else float(x)


def close(a: Any, b: Any) -> bool:
    """Whether two stated numbers agree (relative tolerance :data:`REL_TOL`; unreadable ones never do)."""
    try:
        x, y = number(a), number(b)
    except (TypeError, ValueError):
        return False
    if math.isinf(x) or math.isinf(y):
        return x == y
    return math.isclose(x, y, rel_tol=REL_TOL, abs_tol=0.0)
