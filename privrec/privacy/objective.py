"""Objective perturbation for matrix factorisation (Hua, Xia & Zhong, IJCAI'15: "DPMF"), the DIPSGNN
paper's [25] baseline, as privrec reads it.

The recommender minimises ``Σ_(u,i) loss(p_u, q_i) + λ Σ_i ||q_i||² + Σ_i η_i · q_i`` over the item
profiles q, with one noise vector per item drawn once, density ∝ exp(−ε ||η|| / Δ) (the norm is
Gamma(d, Δ/ε), the direction uniform), Δ the L2 bound on how much one interaction moves the
gradient of the data term with respect to the item profiles, and user profiles kept in the unit
ball (||p_u|| ≤ 1):

* **explicit** (squared error on ratings with |r − p·q| ≤ Δr): one rating changes one item's
  gradient by ≤ 2·Δr·||p_u|| — Δ = 2 Δr;
* **implicit** (BPR, the paper's DPMF_imp): one (user, positive) pair with its sampled negative moves
  two items' gradients by ≤ ||p_u|| each — Δ = 2.

What is guaranteed, honestly: [25]'s theorem (after Chaudhuri et al.'s objective perturbation)
makes the *exact minimiser* of that objective ε-DP when the loss is convex and smooth in q, the
user profiles are fixed, and λ is large enough. Trained as here — SGD on a non-convex joint
objective whose user profiles are learned from the same interactions and then used to
recommend — none of those premises holds, so privrec states the claim and **no** guarantee:
ε = ∞ with the reason. The mechanism itself is exact (tested: the norm's law).
"""

from __future__ import annotations

import math

import numpy as np

from privrec.errors import ParameterError
from privrec.privacy.guarantee import Claim, Guarantee
from privrec.privacy.validate import check_epsilon, check_positive_int


def sensitivity(feedback: str, rating_range: float | None = None) -> float:
    """Δ of the linear noise term for ``feedback`` "implicit" (BPR) or "explicit" (ratings spanning ``rating_range``)."""
    if feedback == "implicit":
        return 2.0
    if feedback == "explicit":
        if rating_range is None or not math.isfinite(rating_range) or rating_range <= 0:
            raise ParameterError(f"explicit DPMF needs the rating range (max - min > 0), got {rating_range!r}")
        return 2.0 * float(rating_range)
    raise ParameterError(f"feedback must be 'implicit' or 'explicit', got {feedback!r}")


def guarantee(epsilon: float, feedback: str = "implicit", rating_range: float | None = None) -> Guarantee:
    """What DPMF's noise buys as privrec trains it: no proven guarantee, the paper's ε as the claim."""
    eps = check_epsilon(epsilon)
    delta_s = sensitivity(feedback, rating_range)
    return Guarantee(
        mechanism="dpmf-objective", definition="none proven for the trained model (claim: epsilon-DP item profiles)",
        epsilon=math.inf, delta=0.0, unit="one interaction (explicit: one rating) of one user",
        parameters={"epsilon": eps, "sensitivity": delta_s, "feedback": feedback, "rating_range": rating_range},
        valid=False,
        validity=("[25]'s theorem needs the exact minimiser of a convex objective in the item profiles with the "
                  "user profiles fixed; SGD on the joint non-convex objective, with user profiles learned from the "
                  "same data and used to recommend, meets none of it"),
        claimed=Claim(eps, 0.0, "Hua, Xia & Zhong, IJCAI'15 (DPMF)",
                      "objective perturbation of the item profiles: noise density exp(-eps ||eta|| / Delta)"),
        accounting="none (no theorem applies)",
        notes=("The noise is drawn once per item and fixed for the whole run (it perturbs the objective, not "
               "the updates), so epochs do not compose; the missing guarantee is about the premises, not "
               "composition.",))


def objective_noise(n_rows: int, dim: int, epsilon: float, rng: np.random.Generator, feedback: str = "implicit",
                    rating_range: float | None = None) -> tuple[np.ndarray, Guarantee]:
    """One noise vector per item profile (n_rows, dim): density ∝ exp(−ε ||η|| / Δ), i.e. ||η|| ~
    Gamma(dim, Δ/ε) and a uniform direction. Row 0 (padding) is zero. Returns (η, guarantee)."""
    n, d = check_positive_int(n_rows, "n_rows"), check_positive_int(dim, "dim")
    eps = check_epsilon(epsilon)
    if not isinstance(rng, np.random.Generator):
        raise ParameterError("rng must be a numpy.random.Generator (np.random.default_rng(seed))")
    scale = sensitivity(feedback, rating_range) / eps
    direction = rng.standard_normal((n, d))
    direction /= np.maximum(np.linalg.norm(direction, axis=1, keepdims=True), 1e-300)
    eta = direction * rng.gamma(d, scale, size=(n, 1))
    eta[0] = 0.0
    return eta, guarantee(eps, feedback, rating_range)
