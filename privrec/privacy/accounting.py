"""Thin, typed helpers over Google's ``dp-accounting`` (RDP and PLD accountants).

Numbers come from the accountants, never hand-typed: ``epsilon(event, delta)`` takes the
tighter of RDP and PLD. A noise multiplier is the noise standard deviation divided by the
L2 sensitivity under the stated neighbouring relation.
"""

from __future__ import annotations

import math
from typing import Literal

import dp_accounting
from dp_accounting import pld, rdp

from privrec.errors import ParameterError

Relation = Literal["add_or_remove_one", "replace_one"]
_RELATIONS = {
    "add_or_remove_one": dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE,
    "replace_one": dp_accounting.NeighboringRelation.REPLACE_ONE,
}


def _relation(name: Relation):
    try:
        return _RELATIONS[name]
    except KeyError:
        raise ParameterError(f"neighbouring relation must be one of {list(_RELATIONS)}, got {name!r}") from None


def pure_dp_event(epsilon: float) -> dp_accounting.DpEvent:
    """A dominating pair for any epsilon-DP mechanism: binary randomised response with
    log-likelihood ratio epsilon (Kairouz, Oh, Viswanath 2015). Use with ``replace_one``."""
    if epsilon == math.inf:
        return dp_accounting.NonPrivateDpEvent()
    return dp_accounting.RandomizedResponseDpEvent(noise_parameter=2.0 * math.exp(-epsilon) / (1.0 + math.exp(-epsilon)), num_buckets=2)


def gaussian_event(noise_multiplier: float, count: int = 1) -> dp_accounting.DpEvent:
    if noise_multiplier < 0:
        raise ParameterError(f"noise multiplier must be >= 0, got {noise_multiplier}")
    event = dp_accounting.GaussianDpEvent(noise_multiplier)
    return event if count == 1 else dp_accounting.SelfComposedDpEvent(event, int(count))


_MAX_PLD_EXPANSION = 4096
PLD_SKIP_ABOVE = 64.0     # above this RDP epsilon, PLD (minutes at large epsilon) is not tried


def _contains_rr(event: dp_accounting.DpEvent) -> bool:
    if isinstance(event, dp_accounting.RandomizedResponseDpEvent):
        return True
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        return _contains_rr(event.event)
    if isinstance(event, dp_accounting.ComposedDpEvent):
        return any(_contains_rr(e) for e in event.events)
    return False


def _for_pld(event: dp_accounting.DpEvent) -> dp_accounting.DpEvent | None:
    """Work around dp-accounting 0.6: its PLD accountant ignores the count of a
    ``SelfComposedDpEvent`` wrapping randomised response (it composes it once). Expand such
    events into explicit compositions; return None (skip PLD) when that would be too large."""
    if isinstance(event, dp_accounting.SelfComposedDpEvent) and _contains_rr(event.event):
        if event.count > _MAX_PLD_EXPANSION:
            return None
        inner = _for_pld(event.event)
        return None if inner is None else dp_accounting.ComposedDpEvent([inner] * event.count)
    if isinstance(event, dp_accounting.ComposedDpEvent):
        parts = [_for_pld(e) for e in event.events]
        return None if any(p is None for p in parts) else dp_accounting.ComposedDpEvent(parts)
    return event


def _accountants(relation: Relation):
    rel = _relation(relation)
    yield "RDP", lambda: rdp.RdpAccountant(neighboring_relation=rel), lambda e: e
    yield "PLD", lambda: pld.PLDAccountant(neighboring_relation=rel), _for_pld


def epsilon(event: dp_accounting.DpEvent, delta: float, relation: Relation = "add_or_remove_one") -> tuple[float, str]:
    """Smallest epsilon at ``delta`` over the RDP and PLD accountants, and which one gave it."""
    best, how = math.inf, "none (unsupported event)"
    for name, make, adapt in _accountants(relation):
        if name == "PLD" and PLD_SKIP_ABOVE < best < math.inf:
            break                       # PLD's discretisation grows with epsilon; RDP is tight enough here
        acc, ev = make(), adapt(event)
        if ev is None or not acc.supports(ev):
            continue
        acc.compose(ev)
        eps = float(acc.get_epsilon(delta))
        if eps < best:
            best, how = eps, f"dp-accounting {name}"
        elif how.startswith("none"):
            how = f"dp-accounting {name}"
    return best, how


def delta(event: dp_accounting.DpEvent, eps: float, relation: Relation = "add_or_remove_one") -> float:
    """Smallest delta at ``eps`` over the RDP and PLD accountants."""
    best = 1.0
    for _, make, adapt in _accountants(relation):
        acc, ev = make(), adapt(event)
        if ev is not None and acc.supports(ev):
            acc.compose(ev)
            best = min(best, float(acc.get_delta(eps)))
    return best


def calibrate_gaussian(target_epsilon: float, target_delta: float, count: int = 1,
                       relation: Relation = "add_or_remove_one") -> float:
    """Smallest noise multiplier such that ``count`` Gaussian releases meet (epsilon, delta).

    Calibrated with the PLD accountant (the tighter one for Gaussians), so the epsilon that
    :func:`epsilon` reports for the result is at most ``target_epsilon``.
    """
    from dp_accounting.mechanism_calibration import (
        ExplicitBracketInterval,
        LowerEndpointAndGuess,
        calibrate_dp_mechanism,
    )

    rel = _relation(relation)
    # RDP is looser, so its multiplier bounds the PLD one from above; search PLD below it
    z_rdp = float(calibrate_dp_mechanism(
        lambda: rdp.RdpAccountant(neighboring_relation=rel), lambda z: gaussian_event(z, count),
        target_epsilon, target_delta, bracket_interval=LowerEndpointAndGuess(1e-3, 1.0), tol=1e-6))
    return float(calibrate_dp_mechanism(
        lambda: pld.PLDAccountant(neighboring_relation=rel), lambda z: gaussian_event(z, count),
        target_epsilon, target_delta, bracket_interval=ExplicitBracketInterval(z_rdp / 2.0, z_rdp), tol=1e-5))


# ------------------------------------------------------------------ composed Gaussians, exactly
def _gaussian_profile(eps: float, mu: float) -> float:
    """delta(eps) of a mu-GDP mechanism (Balle & Wang 2018, Thm 8; Dong, Roth & Su 2022, Cor. 2.13):
    Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu), in log space so large eps does not overflow."""
    from scipy.special import log_ndtr

    return math.exp(log_ndtr(mu / 2 - eps / mu)) - math.exp(eps + log_ndtr(-mu / 2 - eps / mu))


def gaussian_epsilon(noise_multiplier: float, count: int, delta: float) -> float:
    """The exact (tightest) epsilon at ``delta`` of ``count`` adaptively composed Gaussian releases of
    sensitivity 1 and noise multiplier z: their composition is mu-GDP with mu = sqrt(count) / z
    (Dong, Roth & Su 2022, Cor. 3.3), whose privacy profile is the analytic Gaussian's. What the
    PLD accountant approximates (up to its discretisation) in O(1) time, at any epsilon."""
    from scipy.optimize import brentq

    if not noise_multiplier > 0:
        return math.inf
    mu = math.sqrt(count) / noise_multiplier
    if _gaussian_profile(0.0, mu) <= delta:
        return 0.0
    hi = max(1.0, mu * mu)
    while _gaussian_profile(hi, mu) > delta:
        hi *= 2.0
    return float(brentq(lambda e: _gaussian_profile(e, mu) - delta, 0.0, hi, xtol=1e-12, rtol=1e-12))


def calibrate_gaussian_exact(target_epsilon: float, target_delta: float, count: int = 1) -> float:
    """The smallest noise multiplier z such that ``count`` composed Gaussian releases meet
    (epsilon, delta) exactly (:func:`gaussian_epsilon`): solved for mu = sqrt(count) / z."""
    from scipy.optimize import brentq

    lo, hi = 1e-6, 1.0
    while _gaussian_profile(target_epsilon, hi) <= target_delta:
        hi *= 2.0
    mu = brentq(lambda m: _gaussian_profile(target_epsilon, m) - target_delta, lo, hi, xtol=1e-14, rtol=1e-13)
    return math.sqrt(count) / float(mu) * (1 + 1e-12)        # the tiny margin keeps epsilon <= target
