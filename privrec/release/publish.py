"""Run a publishing mechanism on prepared data, refusing anything a certificate could not honestly state.

Every function takes arrays and a Generator and returns the published arrays and their
:class:`~privrec.privacy.Guarantee` (writing is :func:`~privrec.release.folder.write_release`'s
job). On top of each mechanism's own validation they refuse

* a guarantee that is no guarantee: infinite epsilon, or delta >= 1/n of the protected
  population (unless the caller explicitly allows it, e.g. to reproduce a paper's broken setting);
* accounting that ran into floating-point trouble (overflow, underflow to 0, invalid values):
  such a certificate would state a number nobody computed;
* a published array holding NaN or infinity (e.g. a lift w so large that the noise overflows).
"""

from __future__ import annotations

import math

import numpy as np

from privrec.errors import ParameterError
from privrec.privacy.guarantee import Guarantee
from privrec.privacy.registry import get, publishing
from privrec.privacy.validate import check_delta, check_epsilon, numerically_safe  # noqa: F401 (re-exported)


def check_guarantee(g: Guarantee, allow_invalid: bool = False, population: int | None = None,
                    allow_large_delta: bool = False) -> Guarantee:
    """Refuse a guarantee that protects nothing, unless explicitly allowed."""
    if not (g.epsilon >= 0) or (math.isnan(g.epsilon)):
        raise ParameterError(f"{g.mechanism}: the computed epsilon is {g.epsilon}; this is a bug, please report it")
    if math.isinf(g.epsilon) and not allow_invalid:
        raise ParameterError(f"{g.mechanism} at these settings gives epsilon = infinity (no privacy: "
                             f"{g.validity or 'the output reveals the input'}); choose a smaller epsilon, or pass "
                             "--allow-invalid to reproduce the setting anyway (the certificate will say so)")
    if population and g.delta >= 1.0 / population and not allow_large_delta:
        raise ParameterError(f"delta = {g.delta:.3g} is >= 1/n = 1/{population} of the protected population: such a "
                             "delta allows publishing some records in the clear; choose --delta below "
                             f"{1.0 / population:.3g} (e.g. {1.0 / (10 * population):.2g}), or pass --allow-large-delta")
    return g


def check_finite_output(out: np.ndarray, what: str) -> np.ndarray:
    if np.issubdtype(out.dtype, np.floating) and not np.isfinite(out).all():
        raise ParameterError(f"{what} produced NaN or infinite values at these settings (the noise overflows); "
                             "choose a larger epsilon")
    return out


def perturb_sequences(rows: np.ndarray, n_items: int, mechanism: str, epsilon: float, rng: np.random.Generator, *,
                      alt_map=None, allow_invalid: bool = False) -> tuple[np.ndarray, Guarantee]:
    """A sequence mechanism of the registry (SDP: PriCDSR; randomised response: Mu & Lim) on front-padded
    rows (users, L) of item codes."""
    eps = check_epsilon(epsilon)
    mech = get(mechanism)
    if mechanism not in publishing("sequences"):
        raise ParameterError(f"{mechanism!r} does not publish sequences; use one of {', '.join(publishing('sequences'))}")
    out, g = mech.release(rows, eps, rng, n_items=n_items, alt_map=alt_map, allow_invalid=allow_invalid)
    return out, check_guarantee(g, allow_invalid)


def default_delta(n_users: int) -> float:
    """An order of magnitude below 1/n of the protected population."""
    return 1.0 / (10.0 * n_users)


def project_ratings(ratings, mechanism: str, epsilon: float, rng: np.random.Generator, *, delta: float | None = None,
                    n_prime: int = 500, q: float = 0.1, calibration: str = "paper", max_change: float = 1.0,
                    allow_invalid: bool = False, allow_large_delta: bool = False) -> tuple[np.ndarray, Guarantee]:
    """JLT or SJLT (PriCDR Alg. 1) of a users x items rating matrix: users x n' float32."""

    eps = check_epsilon(epsilon)
    n_users, n_items = ratings.shape
    dlt = check_delta(default_delta(n_users) if delta is None else delta)
    if not isinstance(n_prime, (int, np.integer)) or n_prime < 1:
        raise ParameterError(f"--n-prime must be a positive integer, got {n_prime!r}")
    from privrec.utils.resources import check_allocation

    check_allocation(8.0 * 3 * n_prime * (n_items + n_users), f"--n-prime {n_prime} ({n_users:,} users x {n_items:,} items)",
                     f"choose a smaller --n-prime (n' <= {n_items:,} items compresses the matrix)")
    if n_prime > n_items:
        import warnings

        warnings.warn(f"n' = {n_prime} exceeds the {n_items} items: the release is wider than the matrix (no "
                      "reduction, more noise columns); the guarantee still holds as stated. Use n' <= items to "
                      "compress.", stacklevel=2)
    if mechanism not in publishing("rating-matrix"):
        raise ParameterError(f"{mechanism!r} does not publish rating matrices; use one of "
                             f"{', '.join(publishing('rating-matrix'))}")
    out, g = get(mechanism).release(ratings, eps, rng, delta=dlt, n_prime=int(n_prime), q=q, calibration=calibration,
                                    allow_invalid=allow_invalid, max_change=max_change)
    check_guarantee(g, allow_invalid, population=n_users, allow_large_delta=allow_large_delta)
    return check_finite_output(out, mechanism), g


def perturb_user_features(frame, epsilon: float, rng: np.random.Generator) -> tuple[np.ndarray, Guarantee, object]:
    """DIPSGNN's epsilon1-LDP on user features (piecewise + OUE, k of n attributes per user):
    (published matrix, guarantee, schema). ``frame``: one row per user, MovieLens columns."""
    from privrec.privacy import features as F

    eps = check_epsilon(epsilon)
    frame = F.as_movielens(frame)
    schema = F.movielens_schema(frame)
    encoded = F.encode_features(frame, schema)
    out, g = F.perturb_features(encoded, schema, eps, rng)
    return check_finite_output(out, "features"), check_guarantee(g), schema
