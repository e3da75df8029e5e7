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
    return dp_accounting.RandomizedResponseDpEvent(noise_parameter=2.0 / (1.0 + math.exp(epsilon)), num_buckets=2)


def gaussian_event(noise_multiplier: float, count: int = 1) -> dp_accounting.DpEvent:
    if noise_multiplier < 0:
        raise ParameterError(f"noise multiplier must be >= 0, got {noise_multiplier}")
    event = dp_accounting.GaussianDpEvent(noise_multiplier)
    return event if count == 1 else dp_accounting.SelfComposedDpEvent(event, int(count))


def _accountants(relation: Relation):
    rel = _relation(relation)
    yield "RDP", lambda: rdp.RdpAccountant(neighboring_relation=rel)
    yield "PLD", lambda: pld.PLDAccountant(neighboring_relation=rel)


def epsilon(event: dp_accounting.DpEvent, delta: float, relation: Relation = "add_or_remove_one") -> tuple[float, str]:
    """Smallest epsilon at ``delta`` over the RDP and PLD accountants, and which one gave it."""
    best, how = math.inf, "none (unsupported event)"
    for name, make in _accountants(relation):
        acc = make()
        if not acc.supports(event):
            continue
        acc.compose(event)
        eps = float(acc.get_epsilon(delta))
        if eps < best:
            best, how = eps, f"dp-accounting {name}"
        elif how.startswith("none"):
            how = f"dp-accounting {name}"
    return best, how


def delta(event: dp_accounting.DpEvent, eps: float, relation: Relation = "add_or_remove_one") -> float:
    """Smallest delta at ``eps`` over the RDP and PLD accountants."""
    best = 1.0
    for _, make in _accountants(relation):
        acc = make()
        if acc.supports(event):
            acc.compose(event)
            best = min(best, float(acc.get_delta(eps)))
    return best


def calibrate_gaussian(target_epsilon: float, target_delta: float, count: int = 1,
                       relation: Relation = "add_or_remove_one") -> float:
    """Smallest noise multiplier such that ``count`` Gaussian releases meet (epsilon, delta).

    Calibrated with the PLD accountant (the tighter one for Gaussians), so the epsilon that
    :func:`epsilon` reports for the result is at most ``target_epsilon``.
    """
    from dp_accounting.mechanism_calibration import (ExplicitBracketInterval, LowerEndpointAndGuess,
                                                     calibrate_dp_mechanism)

    rel = _relation(relation)
    # RDP is looser, so its multiplier bounds the PLD one from above; search PLD below it
    z_rdp = float(calibrate_dp_mechanism(
        lambda: rdp.RdpAccountant(neighboring_relation=rel), lambda z: gaussian_event(z, count),
        target_epsilon, target_delta, bracket_interval=LowerEndpointAndGuess(1e-3, 1.0), tol=1e-6))
    return float(calibrate_dp_mechanism(
        lambda: pld.PLDAccountant(neighboring_relation=rel), lambda z: gaussian_event(z, count),
        target_epsilon, target_delta, bracket_interval=ExplicitBracketInterval(z_rdp / 2.0, z_rdp), tol=1e-5))
