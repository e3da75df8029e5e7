"""Every mechanism's audit case by name, and one function that runs an audit.

An audit samples a mechanism on two neighbouring inputs and turns Clopper–Pearson bounds
on a distinguishing event into a lower bound on epsilon (:mod:`privrec.privacy.audit`). A
correct mechanism's bound stays below its true epsilon; a mis-calibrated one is flagged.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from privrec.errors import ParameterError
from privrec.privacy.audit import AuditResult, audit_discrete, audit_threshold


def _cases() -> dict[str, Callable[..., dict]]:
    from privrec.privacy import features, fedcodec, graph, jlt, rr, sdp

    return {
        "sdp": lambda eps: sdp.audit_case(eps if eps is not None else 1.0),
        "rr": lambda eps: rr.audit_case(eps if eps is not None else 1.0),
        "jlt": lambda eps: jlt.audit_case("jlt", eps if eps is not None else 1.0),
        "sjlt": lambda eps: jlt.audit_case("sjlt", eps if eps is not None else 1.0),
        "piecewise": lambda eps: features.audit_case(eps if eps is not None else 1.0, "piecewise"),
        "oue": lambda eps: features.audit_case(eps if eps is not None else 1.0, "oue"),
        "features": lambda eps: features.audit_case(eps if eps is not None else 1.0, "features"),
        "graph": lambda eps: graph.audit_case(),
        "graph-sigma2-bug": lambda eps: graph.audit_case(reference_bug=True),
        "pfcr-paper": lambda eps: fedcodec.audit_case("paper", eps if eps is not None else 0.5),
        "pfcr-calibrated": lambda eps: fedcodec.audit_case("calibrated", eps if eps is not None else 0.5),
    }


AUDITS = ("sdp", "rr", "jlt", "sjlt", "piecewise", "oue", "features", "graph", "graph-sigma2-bug", "pfcr-paper",
          "pfcr-calibrated")


def audit_case(name: str, epsilon: float | None = None) -> dict:
    cases = _cases()
    if name not in cases:
        raise ParameterError(f"unknown mechanism {name!r} to audit; choose one of {', '.join(AUDITS)}")
    return cases[name](epsilon)


def run_audit(name: str, epsilon: float | None = None, samples: int = 50_000, seed: int = 0,
              alpha: float = 0.05) -> tuple[AuditResult, dict]:
    """Audit mechanism ``name``; returns the result and the case (with its claimed/true epsilon)."""
    if samples < 100:
        raise ParameterError(f"samples must be >= 100 for a meaningful audit, got {samples}")
    case = audit_case(name, epsilon)
    rng = np.random.default_rng(seed)
    run = audit_discrete if case["kind"] == "discrete" else audit_threshold
    result = run(case["name"], case["claimed_epsilon"], case["sample_a"], case["sample_b"], case["key_or_statistic"],
                 samples, rng, delta=case.get("delta", 0.0), alpha=alpha)
    return result, case
