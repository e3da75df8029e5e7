"""Guarantees as data, and the JSON privacy certificate written next to every release.

A :class:`Guarantee` states exactly what a mechanism run gives: the definition, epsilon,
delta, the unit of privacy (what two neighbouring inputs differ in), the parameters,
whether they are inside the theorem's validity, and - where the paper claims something
else - the paper's claim next to the true value with a one-line reason.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field, replace
from typing import Any

from privrec.utils.repro import SeedInfo, environment

LIMITATIONS = (
    "Randomness comes from NumPy's PCG64 generator seeded as recorded here: it is reproducible but not a "
    "cryptographically secure generator, so anyone who learns the seed can undo the noise.",
    "Floating-point sampling (Gaussian, uniform) is not hardened against Mironov-style attacks on the "
    "least-significant bits of the output; the stated epsilon assumes ideal real-valued sampling.",
    "Guarantees cover only the unit of privacy stated; correlated records (e.g. all of one user's "
    "interactions) are protected only to the extent the group-level numbers say.",
)


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


def certificate(guarantee: Guarantee, seed: SeedInfo, *, input_desc: dict | None = None,
                output_desc: dict | None = None, extra: dict | None = None) -> dict:
    """The privacy certificate: guarantee + randomness + data description + provenance + limitations."""
    cert = {
        "format": "privrec-privacy-certificate/1",
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "guarantee": guarantee.to_dict(),
        "summary": guarantee.summary(),
        "randomness": {
            **seed.to_dict(),
            "generator": "numpy.random.PCG64",
            "note": "seed given by the user: reproducible" if seed.source == "user"
                    else "seed drawn from the OS CSPRNG (secrets) for this run; keep this file private",
        },
        "input": input_desc or {},
        "output": output_desc or {},
        "environment": environment(),
        "limitations": list(LIMITATIONS),
    }
    if extra:
        cert.update(extra)
    return cert
