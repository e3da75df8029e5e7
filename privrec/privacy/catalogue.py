"""Run an audit by name (the cases are listed in :mod:`privrec.privacy.registry`).

An audit samples a mechanism on two neighbouring inputs and turns Clopper–Pearson bounds
on a distinguishing event into a lower bound on epsilon (:mod:`privrec.privacy.audit`). A
correct mechanism's bound stays below its true epsilon; a mis-calibrated one is flagged.
"""

from __future__ import annotations

import numpy as np

from privrec.errors import ParameterError
from privrec.privacy.audit import AuditResult, audit_discrete, audit_threshold
from privrec.privacy.registry import AUDITS, audit_cases


def audit_case(name: str, epsilon: float | None = None) -> dict:
    cases = audit_cases()
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
