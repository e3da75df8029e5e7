"""Empirical privacy audit: a statistical *lower bound* on epsilon.

For neighbouring inputs D, D', sample M(D) and M(D') many times. Half of the samples pick a
distinguishing event E (the output key, or threshold on a statistic, with the largest
empirical likelihood ratio); the other half estimate P[E | D] and P[E | D'] with one-sided
Clopper-Pearson bounds. Then, with confidence 1 - alpha,

    epsilon >= log((p_D_lower - delta) / p_D'_upper).

A correct mechanism's audited bound never exceeds its true epsilon (up to alpha); a
mis-calibrated one is flagged when the bound exceeds the claim.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats

Sampler = Callable[[np.random.Generator, int], Sequence]


def clopper_pearson(k: int, n: int, alpha: float) -> tuple[float, float]:
    """Two one-sided (1 - alpha) bounds on a binomial proportion (exact)."""
    lo = 0.0 if k == 0 else float(stats.beta.ppf(alpha, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(1 - alpha, k + 1, n - k))
    return lo, hi


def epsilon_lower_bound(k_a: int, n_a: int, k_b: int, n_b: int, delta: float = 0.0, alpha: float = 0.05) -> float:
    """Lower confidence bound on epsilon from event counts k_a/n_a under D and k_b/n_b under D'."""
    lo_a, _ = clopper_pearson(k_a, n_a, alpha / 2)
    _, hi_b = clopper_pearson(k_b, n_b, alpha / 2)
    if lo_a - delta <= 0:
        return 0.0
    return max(0.0, math.log((lo_a - delta) / hi_b))


@dataclass
class AuditResult:
    mechanism: str
    claimed_epsilon: float
    lower_bound: float
    event: str
    hits_a: int
    hits_b: int
    samples: int
    alpha: float
    delta: float

    @property
    def violates_claim(self) -> bool:
        return self.lower_bound > self.claimed_epsilon + 1e-12

    def to_dict(self) -> dict:
        return {**asdict(self), "violates_claim": self.violates_claim}

    def summary(self) -> str:
        verdict = "CLAIM VIOLATED" if self.violates_claim else "consistent with the claim"
        return (f"{self.mechanism}: audited epsilon >= {self.lower_bound:.3f} at {1 - self.alpha:.0%} confidence "
                f"(claim {self.claimed_epsilon:.3f}; event {self.event}; {self.hits_a}/{self.samples} vs "
                f"{self.hits_b}/{self.samples}) -> {verdict}")


def audit_discrete(name: str, claimed: float, sample_a: Sampler, sample_b: Sampler,
                   key: Callable[[object], Hashable], n: int, rng: np.random.Generator,
                   delta: float = 0.0, alpha: float = 0.05) -> AuditResult:
    """Event = {key(output) == o*}, o* chosen on a first half to maximise the smoothed ratio."""
    half = n // 2
    sel_a = Counter(key(x) for x in sample_a(rng, half))
    sel_b = Counter(key(x) for x in sample_b(rng, half))
    best = max(sel_a, key=lambda o: (sel_a[o] + 1) / (sel_b.get(o, 0) + 1))
    k_a = sum(key(x) == best for x in sample_a(rng, n))
    k_b = sum(key(x) == best for x in sample_b(rng, n))
    lb = epsilon_lower_bound(k_a, n, k_b, n, delta, alpha)
    return AuditResult(name, claimed, lb, f"output == {best!r}", int(k_a), int(k_b), n, alpha, delta)


def audit_threshold(name: str, claimed: float, sample_a: Sampler, sample_b: Sampler,
                    statistic: Callable[[np.ndarray], np.ndarray], n: int, rng: np.random.Generator,
                    delta: float = 0.0, alpha: float = 0.05) -> AuditResult:
    """Event = {statistic(output) >= t} (or <= t), t and the side chosen on a first half."""
    half = n // 2
    sa = np.asarray(statistic(np.asarray(sample_a(rng, half))), dtype=np.float64)
    sb = np.asarray(statistic(np.asarray(sample_b(rng, half))), dtype=np.float64)
    cands = np.unique(np.quantile(np.concatenate([sa, sb]), np.linspace(0.001, 0.999, 199)))
    best, best_t, best_side = -math.inf, 0.0, 1
    for t in cands:
        for side in (1, -1):
            pa = ((side * sa >= side * t).sum() + 1) / (half + 2)
            pb = ((side * sb >= side * t).sum() + 1) / (half + 2)
            score = math.log(pa / pb) - 2.0 / math.sqrt(max(pa * half, 1.0))   # prefer well-populated events
            if score > best:
                best, best_t, best_side = score, float(t), side
    fa = np.asarray(statistic(np.asarray(sample_a(rng, n))), dtype=np.float64)
    fb = np.asarray(statistic(np.asarray(sample_b(rng, n))), dtype=np.float64)
    k_a = int((best_side * fa >= best_side * best_t).sum())
    k_b = int((best_side * fb >= best_side * best_t).sum())
    lb = epsilon_lower_bound(k_a, n, k_b, n, delta, alpha)
    op = ">=" if best_side > 0 else "<="
    return AuditResult(name, claimed, lb, f"statistic {op} {best_t:.4g}", k_a, k_b, n, alpha, delta)
