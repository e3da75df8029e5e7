"""User-feature local differential privacy of DIPSGNN (Hu & Fang, Sec. 4.1, Algorithms 1-3,
Theorem 4.1, Appendix A), after Wang et al.'s piecewise mechanism (PM) and Wang et al.'s
optimized unary encoding (OUE).

Algorithm 1 (PM, one number x in [-1, 1], budget eps). With t = e^(eps/2),
C = (t + 1)/(t - 1), l(x) = (C + 1)/2 * x - (C - 1)/2 and r(x) = l(x) + C - 1, the output
y in [-C, C] has the piecewise-constant density

    p          on [l(x), r(x)],      p = (e^eps - e^(eps/2)) / (2 e^(eps/2) + 2),
    p / e^eps  on [-C, l(x)) U (r(x), C],

i.e. with probability t/(t + 1) uniform on [l(x), r(x)], otherwise uniform on the rest.
Any two inputs give densities whose ratio is at most p / (p/e^eps) = e^eps: eps-LDP, tight
(inputs -1 and +1, output y >= 1). :func:`piecewise` samples it in O(n) for an array;
:func:`piecewise_density` and :func:`piecewise_cdf` are the exact law.

Algorithm 2 (OUE, one-hot x in {0,1}^m, budget eps). Each output bit is 1 with probability
1/2 where x has its 1 and with probability q = 1/(e^eps + 1) elsewhere, independently. Two
inputs differ in two positions, so the likelihood ratio is at most
(1/2)/q * (1 - q)/(1/2) = e^eps: eps-LDP, tight. :func:`oue` samples a batch,
:func:`oue_probability` is the exact law.

Algorithm 3 (a user's vector x_u = x_1 (+) ... (+) x_n of n attributes, budget eps1). Pick
k = max(1, min(n, floor(eps1 / 2.5))) attributes uniformly without replacement (Eq. 3),
perturb each with eps1/k (numerical: Alg. 1 after min-max normalisation into [-1, 1], then
multiplied by n/k, line 9; categorical: Alg. 2) and output 0 for every other attribute
(line 3 initialises the output to 0). :func:`perturb_features` draws the subset
*independently for every user*, and unselected blocks are exactly 0.

Guarantee. Theorem 4.1 is correct: for a fixed subset A the output is the product of k
independent (eps1/k)-LDP releases (the zero blocks do not depend on the data), so its
likelihood ratio is at most e^eps1 by basic composition; the subset is drawn independently
of the data, and a mixture over A of mechanisms that each satisfy a bound satisfies the same
bound. So eps1-LDP per user, unit = one user's whole feature vector; the tests check it by
exact enumeration on small schemas, where the bound is attained. The same argument in
trade-off-function form (Dong, Roth & Su: the k-fold composition is dominated by k binary
randomised responses with eps1/k each; mixing with data-independent weights keeps a convex
trade-off bound) makes ``ComposedDpEvent([pure_dp_event(eps1/k)] * k)`` a valid dominating
event, which the certificate carries so that (eps, delta) totals can be tighter than k*eps1/k.
One attribute alone costs at most eps1/k (reported as a related guarantee); the n/k scaling
is post-processing.

What the authors' code did differently (not repeated here): one subset was drawn for all
users, and unselected attributes were left raw - which releases those attributes exactly.

The schema, the encoding into [-1, 1] / one-hot blocks and ML-1M's public codes live in
:mod:`privrec.privacy.feature_schema` (re-exported here). Attribute domains must be public: a
domain read from the data (``source="data"``) is flagged in the certificate.
"""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pandas as pd
from scipy.special import expit

from privrec.errors import ParameterError
from privrec.privacy.accounting import pure_dp_event
from privrec.privacy.feature_schema import ML1M_AGE as ML1M_AGE  # re-export
from privrec.privacy.feature_schema import ML1M_GENDER as ML1M_GENDER  # re-export
from privrec.privacy.feature_schema import ML1M_OCCUPATION as ML1M_OCCUPATION  # re-export
from privrec.privacy.feature_schema import ML100K_OCCUPATION as ML100K_OCCUPATION  # re-export
from privrec.privacy.feature_schema import Attribute as Attribute  # re-export
from privrec.privacy.feature_schema import FeatureSchema, _check_encoded, categorical, encode_features
from privrec.privacy.feature_schema import Kind as Kind  # re-export
from privrec.privacy.feature_schema import as_movielens as as_movielens  # re-export
from privrec.privacy.feature_schema import movielens_schema as movielens_schema  # re-export
from privrec.privacy.feature_schema import numerical as numerical  # re-export
from privrec.privacy.feature_schema import schema_from_frame as schema_from_frame  # re-export
from privrec.privacy.guarantee import Guarantee
from privrec.privacy.validate import check_epsilon, check_positive_int

CHUNK_ROWS = 65_536        # users per random-draw block in perturb_features (fixes the stream layout)
K_DIVISOR = 2.5            # Eq. 3: k = max(1, min(n, floor(eps1 / 2.5)))


# ------------------------------------------------------------------ Algorithm 1: piecewise mechanism
def piecewise_constants(epsilon: float) -> tuple[float, float, float]:
    """(C, density inside [l, r], density outside) of Algorithm 1 for budget ``epsilon``.

    Written with expm1/expit so that it stays finite for tiny and huge epsilon:
    C = 1 + 2/(e^(eps/2) - 1); inside mass e^(eps/2)/(e^(eps/2)+1) over length C - 1;
    outside mass 1/(e^(eps/2)+1) over length C + 1. The inside density equals
    p = (e^eps - e^(eps/2))/(2 e^(eps/2) + 2) and the outside one p/e^eps (Appendix A).
    """
    eps = check_epsilon(epsilon)
    em1 = math.expm1(eps / 2) if eps < 1400 else math.inf    # e^(eps/2) - 1
    C = 1.0 + 2.0 / em1
    inside = float(expit(eps / 2)) * em1 / 2.0 if math.isfinite(em1) else math.inf
    outside = float(expit(-eps / 2)) / (C + 1.0)
    return C, inside, outside


def _pm_interval(x: np.ndarray, C: float) -> tuple[np.ndarray, np.ndarray]:
    left = (C + 1.0) / 2.0 * x - (C - 1.0) / 2.0    # l(x), Alg. 1 line 4
    return left, left + (C - 1.0)                   # r(x), line 5


def _check_unit_interval(x, name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float64)
    if arr.size == 0:
        raise ParameterError(f"{name} is empty; nothing to perturb")
    if not np.isfinite(arr).all():
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise ParameterError(f"{name} contains NaN or infinity at index {tuple(int(i) for i in bad)}; "
                             "clean or impute the input first")
    if arr.min() < -1.0 or arr.max() > 1.0:
        bad = np.argwhere((arr < -1.0) | (arr > 1.0))[0]
        raise ParameterError(f"{name} holds {float(arr[tuple(bad)])!r} at index {tuple(int(i) for i in bad)}, outside "
                             "[-1, 1]; min-max normalise it first (see encode_features)")
    return arr


def _pm_sample(x: np.ndarray, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """Algorithm 1 on validated ``x`` (any shape): two uniforms per value, O(n)."""
    C, _, _ = piecewise_constants(epsilon)
    left, right = _pm_interval(x, C)
    beta = rng.random(x.shape)                      # line 6
    u = rng.random(x.shape)
    inside = beta < expit(epsilon / 2)              # line 7: e^(eps/2)/(e^(eps/2)+1)
    y_in = left + u * (C - 1.0)                     # line 8: uniform on [l, r]
    v = u * (C + 1.0)                               # line 10: uniform on [-C, l) U (r, C], length C + 1
    y_out = np.where(v < left + C, v - C, right + (v - (left + C)))
    return np.where(inside, y_in, y_out)


def piecewise(x, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """Wang et al.'s piecewise mechanism (DIPSGNN Algorithm 1) applied to every entry of ``x``.

    ``x``: array of numbers in [-1, 1] (any shape); ``epsilon``: budget per number.
    Returns float64 values in [-C, C], C = (e^(eps/2)+1)/(e^(eps/2)-1), same shape; each
    entry is an unbiased estimate of its input. O(n) time, vectorised.
    """
    eps = check_epsilon(epsilon)
    arr = _check_unit_interval(x, "x")
    return _pm_sample(arr, eps, rng)


def piecewise_density(y, x: float, epsilon: float) -> np.ndarray:
    """Exact output density of Algorithm 1 at ``y`` for input ``x`` (pure; 0 outside [-C, C])."""
    C, d_in, d_out = piecewise_constants(epsilon)
    x = float(_check_unit_interval(x, "x"))
    left, right = _pm_interval(np.float64(x), C)
    y = np.asarray(y, dtype=np.float64)
    dens = np.where((y >= left) & (y <= right), d_in, d_out)
    return np.where((y < -C) | (y > C), 0.0, dens)


def piecewise_cdf(y, x: float, epsilon: float) -> np.ndarray:
    """Exact output CDF of Algorithm 1 at ``y`` for input ``x`` (pure)."""
    C, d_in, d_out = piecewise_constants(epsilon)
    x = float(_check_unit_interval(x, "x"))
    left, right = _pm_interval(np.float64(x), C)
    y = np.clip(np.asarray(y, dtype=np.float64), -C, C)
    below = (np.minimum(y, left) + C) * d_out
    middle = np.clip(y - left, 0.0, C - 1.0) * d_in
    above = np.maximum(y - right, 0.0) * d_out
    return np.clip(below + middle + above, 0.0, 1.0)


def piecewise_guarantee(epsilon: float) -> Guarantee:
    eps = check_epsilon(epsilon)
    C, _, _ = piecewise_constants(eps)
    return Guarantee(
        mechanism="piecewise-mechanism", definition="epsilon-LDP", epsilon=eps,
        unit="one number in [-1, 1] (any two inputs)", parameters={"epsilon": eps, "C": C},
        accounting="exact density ratio p/(p e^-eps) = e^eps (DIPSGNN App. A), checked by enumeration",
        event=pure_dp_event(eps), relation="replace_one")


# ------------------------------------------------------------------ Algorithm 2: OUE
def _check_onehot(onehot, name: str) -> np.ndarray:
    arr = np.asarray(onehot)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.size == 0:
        raise ParameterError(f"{name} must be a non-empty (n, m) batch of one-hot rows, got shape {np.shape(onehot)}")
    if arr.dtype == bool:
        arr = arr.astype(np.uint8)
    if np.issubdtype(arr.dtype, np.floating) and not np.isfinite(arr).all():
        row = int(np.argwhere(~np.isfinite(arr))[0][0])
        raise ParameterError(f"{name} row {row} contains NaN or infinity; each row must be one-hot")
    ok = ((arr == 0) | (arr == 1)).all(axis=1) & (arr.sum(axis=1) == 1)
    if not ok.all():
        row = int(np.flatnonzero(~ok)[0])
        raise ParameterError(f"{name} row {row} is not one-hot ({arr[row].tolist()[:20]}); "
                             "each row needs exactly one 1 and zeros elsewhere")
    return arr


def oue(onehot, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """Optimized unary encoding (DIPSGNN Algorithm 2) of a batch of one-hot rows.

    ``onehot``: (n, m) array (or one length-m row), exactly one 1 per row. Each output bit
    is 1 w.p. 1/2 where the input has its 1 and w.p. 1/(e^eps + 1) elsewhere. Returns a
    uint8 0/1 array of the input's shape. O(n m), vectorised.
    """
    eps = check_epsilon(epsilon)
    one_row = np.asarray(onehot).ndim == 1
    arr = _check_onehot(onehot, "onehot")
    u = rng.random(arr.shape)
    bits = np.where(arr == 1, u < 0.5, u < expit(-eps)).astype(np.uint8)
    return bits[0] if one_row else bits


def oue_probability(output, onehot, epsilon: float) -> np.ndarray:
    """Exact probability of each output row given each input row (pure; rows broadcast)."""
    eps = check_epsilon(epsilon)
    out = np.asarray(output)
    x = np.asarray(onehot)
    q = float(expit(-eps))
    p_one = np.where(x == 1, 0.5, q)
    return np.prod(np.where(out == 1, p_one, 1.0 - p_one), axis=-1)


def oue_guarantee(epsilon: float, m: int) -> Guarantee:
    eps = check_epsilon(epsilon)
    m = check_positive_int(m, "m")
    return Guarantee(
        mechanism="optimized-unary-encoding", definition="epsilon-LDP", epsilon=eps,
        unit="one one-hot value (any two categories)", parameters={"epsilon": eps, "m": m, "q": float(expit(-eps))},
        accounting="exact ratio (1/2)/q * (1-q)/(1/2) = e^eps (DIPSGNN App. A), checked by enumeration",
        event=pure_dp_event(eps), relation="replace_one")


# ------------------------------------------------------------------ Algorithm 3: multi-attribute mechanism
def choose_k(epsilon1: float, n_attributes: int) -> int:
    """Eq. 3 / Alg. 3 line 4: k = max(1, min(n, floor(eps1 / 2.5)))."""
    eps = check_epsilon(epsilon1, "epsilon1")
    n = check_positive_int(n_attributes, "n_attributes")
    return max(1, min(n, int(math.floor(eps / K_DIVISOR))))


def select_attributes(n_users: int, n_attributes: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """(n_users, n_attributes) boolean mask: for every user independently, k attributes drawn
    uniformly without replacement (Alg. 3 line 5), via a uniform random permutation per row."""
    if k >= n_attributes:
        return np.ones((n_users, n_attributes), dtype=bool)
    order = rng.permuted(np.broadcast_to(np.arange(n_attributes, dtype=np.int32), (n_users, n_attributes)), axis=1)
    mask = np.zeros((n_users, n_attributes), dtype=bool)
    np.put_along_axis(mask, order[:, :k], True, axis=1)
    return mask


def _perturb_with_selection(encoded, schema: FeatureSchema, epsilon1: float,
                            rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 3 for every user; also returns the (n_users, n_attributes) selection mask."""
    eps1 = check_epsilon(epsilon1, "epsilon1")
    if not isinstance(schema, FeatureSchema):
        raise ParameterError(f"schema must be a FeatureSchema, got {type(schema).__name__}")
    x = _check_encoded(encoded, schema)
    n_attr = schema.n_attributes
    k = choose_k(eps1, n_attr)
    eps_attr = eps1 / k
    scale = n_attr / k                                   # Alg. 3 line 9
    col_attr = schema.column_attribute()
    cat_cols, num_cols = schema.columns("categorical"), schema.columns("numerical")
    q = float(expit(-eps_attr))
    n = x.shape[0]
    out = np.zeros((n, schema.d0), dtype=np.float64)   # line 3: unselected blocks stay 0
    selection = np.zeros((n, n_attr), dtype=bool)
    for start in range(0, n, CHUNK_ROWS):
        rows = slice(start, min(n, start + CHUNK_ROWS))
        xb = x[rows]
        sel = select_attributes(xb.shape[0], n_attr, k, rng)     # line 5, per user
        selection[rows] = sel
        col_sel = sel[:, col_attr]
        if cat_cols.size:                                          # line 11: OUE with eps1/k
            u = rng.random((xb.shape[0], cat_cols.size))
            bits = np.where(xb[:, cat_cols] == 1.0, u < 0.5, u < q)
            out[rows, cat_cols] = bits & col_sel[:, cat_cols]
        if num_cols.size:                                          # lines 8-9: PM with eps1/k, times n/k
            y = _pm_sample(xb[:, num_cols], eps_attr, rng)
            out[rows, num_cols] = np.where(col_sel[:, num_cols], y * scale, 0.0)
    return out, selection


def perturb_features(encoded, schema: FeatureSchema, epsilon1: float,
                     rng: np.random.Generator) -> tuple[np.ndarray, Guarantee]:
    """DIPSGNN Algorithm 3 on an (n_users, d0) matrix from :func:`encode_features`.

    Independently per user: k = max(1, min(n, floor(eps1/2.5))) attributes drawn uniformly
    without replacement, each perturbed with eps1/k (numerical: PM, times n/k; categorical:
    OUE); every other attribute block is exactly 0. Returns the float64 (n_users, d0)
    perturbed matrix and its Guarantee (eps1-LDP per user). O(n_users d0) time.
    """
    out, _ = _perturb_with_selection(encoded, schema, epsilon1, rng)
    return out, guarantee(schema, epsilon1)


def guarantee(schema: FeatureSchema, epsilon1: float) -> Guarantee:
    """What one run of Algorithm 3 gives (see module doc): eps1-LDP per user's feature vector."""
    eps1 = check_epsilon(epsilon1, "epsilon1")
    n_attr = schema.n_attributes
    k = choose_k(eps1, n_attr)
    eps_attr = eps1 / k
    params = {"epsilon1": eps1, "k": k, "per_attribute_epsilon": eps_attr, "n_attributes": n_attr,
              "d0": schema.d0, "numerical_scale": n_attr / k, "oue_q": float(expit(-eps_attr)),
              "attributes": [f"{a.name}:{a.kind}:{a.width}" for a in schema.attributes]}
    notes = [
        "DIPSGNN Theorem 4.1 holds as stated: for each subset the release is k independent (eps1/k)-LDP "
        "perturbations (basic composition: eps1), and the subset is drawn independently of the data.",
        "The subset is drawn independently for every user and unselected attributes are output as 0; the "
        "authors' code drew one subset for all users and left unselected attributes raw (not private).",
        "Categorical OUE bits are released as is (biased, as in the paper); numerical PM values are scaled by "
        "n/k (unbiased).",
    ]
    derived = schema.data_derived()
    if derived:
        notes.append(f"The domains of {list(derived)} were read from the data itself; the guarantee covers the "
                     "perturbed features given the schema, but the schema (min/max, category lists) is not "
                     "protected - declare public domains to close this gap.")
    attribute_level = Guarantee(
        mechanism="dipsgnn-user-features", definition="epsilon-LDP (one attribute)", epsilon=eps_attr,
        unit="one attribute of one user's feature vector", parameters=params,
        accounting="mixture over subsets of (eps1/k)-LDP releases", event=pure_dp_event(eps_attr),
        relation="replace_one")
    # k-fold composition of pure (eps1/k) events; a ComposedDpEvent, not SelfComposedDpEvent: the PLD
    # accountant of dp-accounting 0.6 ignores the count of a self-composed RandomizedResponseDpEvent
    event = pure_dp_event(eps1) if k == 1 else dp_accounting.ComposedDpEvent([pure_dp_event(eps_attr)] * k)
    return Guarantee(
        mechanism="dipsgnn-user-features",
        definition="epsilon-LDP (DIPSGNN Alg. 3)",
        epsilon=eps1,
        unit="one user's whole feature vector (every attribute may differ)",
        parameters=params,
        valid=True,
        claimed=None,
        accounting="basic composition of k pure (eps1/k)-LDP releases, mixed over a data-independent subset "
                   "(exact for pure DP; checked by exhaustive enumeration); event = k-fold pure_dp_event(eps1/k)",
        event=event,
        relation="replace_one",
        notes=tuple(notes),
    ).with_related(attribute_level)


# ------------------------------------------------------------------ empirical audit
def _tiny_schema() -> FeatureSchema:
    return FeatureSchema((categorical("a", ("x", "y")), categorical("b", ("p", "q", "r"))))


def audit_case(epsilon: float = 1.0, mechanism: str = "piecewise") -> dict:
    """Two maximally distinguishing inputs for ``privrec audit``.

    mechanism: "piecewise" (inputs +1 vs -1, threshold on the output: the event y >= 1 has
    ratio exactly e^eps), "oue" (one-hot [1,0] vs [0,1], discrete outputs) or "features"
    (Algorithm 3 on a binary + a 3-category attribute, users differing in both, discrete).
    """
    eps = check_epsilon(epsilon)
    if mechanism == "piecewise":
        return {"name": f"piecewise-mechanism(eps={eps:g})", "claimed_epsilon": eps, "delta": 0.0,
                "sample_a": lambda g, n: piecewise(np.ones(n), eps, g),
                "sample_b": lambda g, n: piecewise(-np.ones(n), eps, g),
                "kind": "threshold", "key_or_statistic": lambda y: y}
    if mechanism == "oue":
        return {"name": f"oue(eps={eps:g}, m=2)", "claimed_epsilon": eps, "delta": 0.0,
                "sample_a": lambda g, n: oue(np.tile([1, 0], (n, 1)), eps, g),
                "sample_b": lambda g, n: oue(np.tile([0, 1], (n, 1)), eps, g),
                "kind": "discrete", "key_or_statistic": lambda row: tuple(np.asarray(row).tolist())}
    if mechanism == "features":
        schema = _tiny_schema()
        xa = encode_features(pd.DataFrame({"a": ["x"], "b": ["p"]}), schema)
        xb = encode_features(pd.DataFrame({"a": ["y"], "b": ["q"]}), schema)
        return {"name": f"dipsgnn-user-features(eps1={eps:g})", "claimed_epsilon": eps, "delta": 0.0,
                "sample_a": lambda g, n: perturb_features(np.repeat(xa, n, axis=0), schema, eps, g)[0],
                "sample_b": lambda g, n: perturb_features(np.repeat(xb, n, axis=0), schema, eps, g)[0],
                "kind": "discrete", "key_or_statistic": lambda row: tuple(np.asarray(row).tolist())}
    raise ParameterError(f"audit mechanism must be 'piecewise', 'oue' or 'features', got {mechanism!r}")
