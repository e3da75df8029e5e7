"""DPMF's objective perturbation: the noise has the stated law; the guarantee claims, never certifies."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from privrec.errors import ParameterError
from privrec.privacy.objective import guarantee, objective_noise, sensitivity


def test_noise_norm_is_gamma_and_direction_uniform():
    eps, d = 2.0, 5
    eta, g = objective_noise(20_001, d, eps, np.random.default_rng(0))
    assert np.all(eta[0] == 0)
    norms = np.linalg.norm(eta[1:], axis=1)
    # density exp(-eps |eta| / Delta) in R^d: |eta| ~ Gamma(d, Delta / eps), Delta = 2 (implicit)
    assert stats.kstest(norms, stats.gamma(d, scale=2.0 / eps).cdf).pvalue > 0.01
    unit = eta[1:] / norms[:, None]
    assert np.abs(unit.mean(0)).max() < 0.03                      # no preferred direction
    again, _ = objective_noise(20_001, d, eps, np.random.default_rng(0))
    assert np.array_equal(eta, again)


def test_guarantee_states_the_claim_and_no_proof():
    g = guarantee(5.0)
    assert math.isinf(g.epsilon) and not g.valid and g.claimed.epsilon == 5.0
    assert "convex" in g.validity
    assert sensitivity("explicit", 4.0) == 8.0 and sensitivity("implicit") == 2.0
    with pytest.raises(ParameterError, match="rating range"):
        sensitivity("explicit")
    with pytest.raises(ParameterError, match="feedback"):
        sensitivity("ratings")
    with pytest.raises(ParameterError, match="epsilon"):
        objective_noise(3, 2, 0.0, np.random.default_rng(0))
    with pytest.raises(ParameterError, match="Generator"):
        objective_noise(3, 2, 1.0, 0)
