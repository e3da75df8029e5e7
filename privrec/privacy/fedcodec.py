"""PFCR's federated gradient codec (PFCR, Sec. 3.4.2-3.4.3, Eqs. 9-18), and a calibrated
replacement with an exact epsilon-LDP guarantee and an unbiased decoder.

Setting. Each client (one *domain*) uploads the gradient g of the code-embedding table once per
federated round; the server decodes, FedAvg-aggregates and broadcasts (Eq. 19). Unit of privacy
here: one client's whole gradient upload, against *any* other gradient (local DP). Since every
change of the domain's data can only change the clipped gradient, this also protects the whole
domain dataset (post-processing).

Paper mode (faithful; ``encode_paper`` / ``decode_paper``), per coordinate, threshold tau, b buckets:

    Eq. 9   g <- clamp(g, -tau, tau)                      (per coordinate, not an L2 clip)
    Eq. 10  q = round((g + tau)/s),  s = 2 tau / b         (stated range q in {0..b-1})
    Eq. 11  r = (q + noise) % b,     noise ~ Uniform{0..b-1} (integer; see ``noise=``)
    Eq. 12  c ~ Bernoulli(p),        p = (e^eps + 1)/(e^eps + 2),  q' = 1 - p = 1/(e^eps + 2)
    Eq. 13  r = (r - c noise) % b

So with probability p (c = 1) the true bucket is sent, otherwise (c = 0) a uniform bucket among
all b. Eq. 10 literally gives q = b for g > tau - s/2, outside the stated range {0..b-1}, and
Eq. 11's modulo would then wrap the largest positive gradients to bucket 0 = -tau (the authors'
code bug); we clamp q to b - 1, the range the paper states. Server side (Eqs. 15-18), with FedAvg
weights w_i = m_i / sum m (Eq. 16, m_i = interactions of domain i):

    Eq. 17  g = sum_i r_i (p - q') w_i ;   Eq. 18  g = g s - tau.

The honest guarantees of both modes (paper mode: e^eps0 = 1 + b (e^eps + 1) per coordinate, not
e^eps, growing with b) are computed in :mod:`privrec.privacy.fedcodec_accounting` and re-exported
here. The paper decoder is biased: E[decode | bucket q] = (p - q') s (p q + (1-p)(b-1)/2) - tau, a
shrink by (p - q') p <= 1 towards a constant offset, never the dequantised gradient (q s - tau).

Calibrated mode (``encode_calibrated`` / ``decode_calibrated``). Levels l_j = -tau + j 2tau/(b-1),
j = 0..b-1 (both clip ends included); *stochastic rounding* x -> bucket j or j+1 so that
E[l(bucket)] = x exactly; then b-ary randomised response: keep with probability
a = e^eps/(e^eps + b - 1), else uniform over the other b - 1 buckets (beta = 1/(e^eps + b - 1) each).
Ratio a/beta = e^eps: exactly eps-LDP per coordinate (stochastic rounding is a mixture of channel
rows, which keeps the bound). Since E[l(out)] = (a - beta) l(in) + beta sum_j l_j and
sum_j l_j = 0, the estimator l(out)/(a - beta) is unbiased for the clipped coordinate.
Budget per upload: either every coordinate with eps/d (``k=None``), or *coordinate sampling*:
k coordinates drawn uniformly without replacement (independently of the data), each reported
with eps/k and scaled by d/k at the server (unbiased; the index set is public). Either way the
upload is eps-LDP (basic composition, tight; the data-independent index draw is a mixture), and
the dp-accounting event is the k-fold composition of ``pure_dp_event(eps/k)``, composed over
rounds. ``epsilon_per="coordinate"`` instead gives every reported coordinate eps (upload k eps).

Costs: every encoder/decoder is vectorised NumPy, O(d) time and memory (O(k) for sampled
reports plus O(d) for the dense decoded vector); random draws come in a fixed order from the
Generator passed in, so the same seed gives the same output. Torch tensors are accepted and
converted to NumPy (outputs are NumPy).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from privrec.errors import ParameterError
from privrec.privacy.fedcodec_accounting import (
    EpsilonPer,
    Noise,
    _check_buckets,
    _check_clip,
    _check_noise,
    _coordinate_budget,
    calibrated_probabilities,
    paper_probabilities,
)
from privrec.privacy.fedcodec_accounting import calibrated_guarantee as calibrated_guarantee  # re-export ("X as X")
from privrec.privacy.fedcodec_accounting import calibrated_output_distribution as calibrated_output_distribution
from privrec.privacy.fedcodec_accounting import guarantee as guarantee
from privrec.privacy.fedcodec_accounting import paper_guarantee as paper_guarantee
from privrec.privacy.fedcodec_accounting import paper_output_distribution as paper_output_distribution
from privrec.privacy.fedcodec_accounting import paper_true_epsilon as paper_true_epsilon
from privrec.privacy.validate import check_epsilon, check_finite_array


# ------------------------------------------------------------------ validation helpers
def _to_numpy(g, name: str = "gradient") -> np.ndarray:
    """NumPy float64 copy of an array-like or a torch tensor (detached, on CPU)."""
    if hasattr(g, "detach") and hasattr(g, "cpu"):           # torch.Tensor without importing torch
        g = g.detach().cpu().numpy()
    arr = np.asarray(g)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise ParameterError(f"{name} must be a numeric array, got dtype {arr.dtype}")
    arr = check_finite_array(arr.astype(np.float64, copy=False), name)
    return arr


def _check_rng(rng) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise ParameterError(f"rng must be a numpy.random.Generator (e.g. np.random.default_rng(seed)), got "
                             f"{type(rng).__name__}")
    return rng


# ------------------------------------------------------------------ Eqs. 9-10: clipping and quantisation
def clip(g, clip_value: float) -> np.ndarray:
    """Eq. 9: clamp every coordinate to [-tau, tau] (a per-coordinate clamp, not an L2 clip)."""
    tau = _check_clip(clip_value)
    return np.clip(_to_numpy(g), -tau, tau)


def _step(tau: float, b: int) -> float:
    return 2.0 * tau / b                                       # s of Eq. 10


def quantize(g, clip_value: float, b: int) -> np.ndarray:
    """Eqs. 9-10: bucket q = round((clamp(g) + tau)/s), s = 2 tau/b, as int64 in [0, b-1].

    Eq. 10 gives q = b for g > tau - s/2, outside the paper's stated range {0..b-1}; we clamp to
    b - 1 (the authors' code let Eq. 11's modulo wrap it to 0, i.e. to -tau). Round half to even.
    """
    tau, b = _check_clip(clip_value), _check_buckets(b)
    x = np.clip(_to_numpy(g), -tau, tau)
    q = np.rint((x + tau) / _step(tau, b))
    return np.clip(q, 0, b - 1).astype(np.int64)


def dequantize(q, clip_value: float, b: int) -> np.ndarray:
    """Inverse of Eq. 10 (the map of Eq. 18 without aggregation): q s - tau, s = 2 tau/b."""
    tau, b = _check_clip(clip_value), _check_buckets(b)
    arr = _to_numpy(q, "buckets")
    return arr * _step(tau, b) - tau


def levels(clip_value: float, b: int) -> np.ndarray:
    """Calibrated-mode grid: b levels -tau + j 2tau/(b-1), j = 0..b-1 (both clip ends; sum 0)."""
    tau, b = _check_clip(clip_value), _check_buckets(b)
    return -tau + np.arange(b) * (2.0 * tau / (b - 1))


def quantize_stochastic(g, clip_value: float, b: int, rng: np.random.Generator) -> np.ndarray:
    """Unbiased stochastic rounding of clamp(g) onto :func:`levels`: bucket j+1 with probability
    frac, j otherwise, so E[levels[bucket]] = clamp(g) exactly. int64 buckets, same shape. O(d)."""
    tau, b = _check_clip(clip_value), _check_buckets(b)
    x = np.clip(_to_numpy(g), -tau, tau)
    return _stochastic_round(x, tau, b, _check_rng(rng).random(x.shape))


def _stochastic_round(x: np.ndarray, tau: float, b: int, u: np.ndarray) -> np.ndarray:
    t = (x + tau) * ((b - 1) / (2.0 * tau))                    # position on the grid, in [0, b-1]
    lo = np.clip(np.floor(t), 0, b - 2)
    frac = t - lo                                              # in [0, 1]; t = b-1 gives lo = b-2, frac = 1
    return (lo + (u < frac)).astype(np.int64)


def dequantize_levels(q, clip_value: float, b: int) -> np.ndarray:
    """levels[q] for calibrated-mode buckets."""
    tau, b = _check_clip(clip_value), _check_buckets(b)
    return -tau + _to_numpy(q, "buckets") * (2.0 * tau / (b - 1))


# ------------------------------------------------------------------ paper mode (Eqs. 11-18)
def encode_paper(g, epsilon: float, b: int, clip: float, rng: np.random.Generator, *,
                 noise: Noise = "integer", allow_invalid: bool = False) -> np.ndarray:
    """PFCR client encoder, Eqs. 9-13 literally, vectorised over all coordinates.

    Draw order: noise (shape of g; integers in [0, b) or uniforms in [0, b)), then the
    Bernoulli(p) flips c (one uniform per coordinate). Returns r with g's shape: int64 buckets
    for ``noise="integer"``; float64 for ``noise="continuous"``, which has no finite epsilon and is
    refused unless ``allow_invalid=True``. The honest guarantee is :func:`paper_guarantee`. O(d).
    """
    eps, b, tau = check_epsilon(epsilon), _check_buckets(b), _check_clip(clip)
    noise = _check_noise(noise)
    if noise == "continuous" and not allow_invalid:
        raise ParameterError("noise='continuous' reveals every kept coordinate exactly (a report is an integer iff it "
                             "was kept): no finite epsilon. Use noise='integer', or pass allow_invalid=True to "
                             "reproduce the literal mechanism")
    rng = _check_rng(rng)
    q = quantize(g, tau, b)                                    # Eqs. 9-10
    p, _ = paper_probabilities(eps)
    if noise == "integer":
        nz = rng.integers(0, b, size=q.shape, dtype=np.int64)
        c = (rng.random(q.shape) < p).astype(np.int64)          # Eq. 12
        r = (q + nz) % b                                        # Eq. 11
        return (r - c * nz) % b                                 # Eq. 13
    nzf = rng.uniform(0.0, float(b), size=q.shape)
    cf = (rng.random(q.shape) < p).astype(np.float64)
    r = np.mod(q + nzf, b)
    return np.mod(r - cf * nzf, b)


def _fedavg_weights(weights, n: int) -> np.ndarray:
    if weights is None:
        return np.full(n, 1.0 / n)
    w = np.asarray(weights, dtype=np.float64).reshape(-1)
    if w.shape[0] != n:
        raise ParameterError(f"weights has {w.shape[0]} entries for {n} clients; pass one weight (number of "
                             "interactions m_i) per client")
    if not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
        raise ParameterError(f"weights must be finite, non-negative and not all zero (Eq. 16: m_i = interactions "
                             f"of client i), got {w.tolist()}")
    return w / w.sum()                                         # Eq. 16


def decode_paper(reports, epsilon: float, b: int, clip: float, weights=None) -> np.ndarray:
    """PFCR server decoding, Eqs. 15-18 as written: g = (sum_i r_i (p - q') w_i) s - tau.

    ``reports``: one client's r (an array, or a flat list of buckets), or a sequence of arrays r_i
    of equal shape (one per client); ``weights``:
    m_i per client (Eq. 16, normalised here), default equal. BIASED: see the module docstring
    (E[g | q] = (p - q') s (p q + (1-p)(b-1)/2) - tau per client). O(n_clients d).
    """
    eps, b, tau = check_epsilon(epsilon), _check_buckets(b), _check_clip(clip)
    single = isinstance(reports, np.ndarray) or hasattr(reports, "detach")
    rs = [reports] if single else list(reports)
    if rs and not single and all(np.ndim(r) == 0 for r in rs):   # a flat list of buckets: one client
        rs = [np.asarray(rs)]
    if not rs:
        raise ParameterError("reports is empty; pass one report array per client")
    arrs = [_to_numpy(r, f"reports[{i}]") for i, r in enumerate(rs)]
    if any(a.shape != arrs[0].shape for a in arrs):
        raise ParameterError(f"all clients' reports must have one shape, got {[a.shape for a in arrs]}")
    for i, a in enumerate(arrs):
        if a.min() < 0 or a.max() >= b:
            raise ParameterError(f"reports[{i}] holds values outside [0, {b}) (b = {b}); pass the b used to encode")
    w = _fedavg_weights(weights, len(arrs))
    p, qq = paper_probabilities(eps)
    g = np.zeros(arrs[0].shape)
    for r, wi in zip(arrs, w):
        g += r * (p - qq) * wi                                 # Eqs. 15 and 17
    return g * _step(tau, b) - tau                             # Eq. 18


def paper_decoder_expectation(q, epsilon: float, b: int, clip: float) -> np.ndarray:
    """Exact E[decode_paper(r)] for one client whose true buckets are q (integer noise):
    (p - q') s (p q + (1-p)(b-1)/2) - tau. Compare with dequantize(q) to see the bias."""
    eps, b, tau = check_epsilon(epsilon), _check_buckets(b), _check_clip(clip)
    p, qq = paper_probabilities(eps)
    qa = _to_numpy(q, "buckets")
    return (p - qq) * _step(tau, b) * (p * qa + qq * (b - 1) / 2.0) - tau


# ------------------------------------------------------------------ calibrated mode
@dataclass(frozen=True)
class CalibratedReport:
    """One calibrated upload. ``buckets[i]`` is the RR report of coordinate ``indices[i]`` of the
    flattened gradient (``indices`` None: all coordinates, in order). Every field is public:
    the indices are drawn independently of the data."""

    buckets: np.ndarray
    indices: np.ndarray | None
    shape: tuple[int, ...]
    epsilon_coordinate: float
    b: int
    clip: float

    @property
    def n_coords(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1

    @property
    def k(self) -> int:
        return int(self.buckets.shape[0])

    @property
    def epsilon_upload(self) -> float:
        return self.k * self.epsilon_coordinate


def encode_calibrated(g, epsilon: float, b: int, clip: float, rng: np.random.Generator, *,
                      k: int | None = None, epsilon_per: EpsilonPer = "upload") -> CalibratedReport:
    """Calibrated client encoder: clamp (Eq. 9), optional coordinate sampling, stochastic rounding
    onto :func:`levels`, b-ary randomised response.

    ``k=None``: report every coordinate; ``k``: report k coordinates drawn uniformly without
    replacement (sorted). ``epsilon_per="upload"`` (default): ``epsilon`` is the whole upload's
    budget, each reported coordinate gets epsilon/k; ``"coordinate"``: each gets epsilon.
    Draw order: indices (if k < d), rounding uniforms, keep uniforms, replacement integers.
    O(d) time (O(k) after sampling).
    """
    b, tau = _check_buckets(b), _check_clip(clip)
    rng = _check_rng(rng)
    x = _to_numpy(g)
    d = int(x.size)
    kk, eps_c = _coordinate_budget(epsilon, d, k, epsilon_per)
    flat = x.reshape(-1)
    if kk < d:
        idx = np.sort(rng.choice(d, size=kk, replace=False)).astype(np.int64)
        vals = flat[idx]
    else:
        idx, vals = None, flat
    vals = np.clip(vals, -tau, tau)
    bucket = _stochastic_round(vals, tau, b, rng.random(vals.shape))
    a, _ = calibrated_probabilities(eps_c, b)
    keep = rng.random(vals.shape) < a
    other = rng.integers(0, b - 1, size=vals.shape, dtype=np.int64)
    other += other >= bucket                                   # uniform over the b-1 other buckets
    out = np.where(keep, bucket, other)
    return CalibratedReport(out, idx, tuple(x.shape), eps_c, b, tau)


def decode_calibrated(report, epsilon: float | None = None, b: int | None = None,
                      clip: float | None = None) -> np.ndarray:
    """Unbiased server estimate of the clipped gradient from one calibrated upload.

    Per reported coordinate: (d/k) (levels[out] - beta sum_j levels_j)/(a - beta) with
    sum_j levels_j = 0; unreported coordinates are 0. E[result] = clamp(g) exactly.
    ``report``: a :class:`CalibratedReport` (parameters taken from it; ``epsilon``/``b``/``clip``, if
    given, must match), or a plain array of buckets for every coordinate, then ``epsilon`` (per
    coordinate), ``b`` and ``clip`` are required. Returns float64 of the gradient's shape. O(d).
    """
    if isinstance(report, CalibratedReport):
        for name, given, have in (("epsilon", epsilon, report.epsilon_coordinate), ("b", b, report.b),
                                  ("clip", clip, report.clip)):
            if given is not None and not math.isclose(float(given), float(have), rel_tol=1e-12):
                raise ParameterError(f"{name}={given!r} disagrees with the report's {name}={have!r}; omit it")
        rep = report
    else:
        if epsilon is None or b is None or clip is None:
            raise ParameterError("decoding a plain bucket array needs epsilon (per coordinate), b and clip")
        bb = _check_buckets(b)
        arr = _to_numpy(report, "report")
        if not np.all(arr == np.round(arr)) or arr.min() < 0 or arr.max() > bb - 1:
            raise ParameterError(f"report must hold integer buckets in [0, {bb - 1}]")
        rep = CalibratedReport(arr.reshape(-1).astype(np.int64), None, tuple(arr.shape), check_epsilon(epsilon),
                               bb, _check_clip(clip))
    a, beta = calibrated_probabilities(rep.epsilon_coordinate, rep.b)
    est = (-rep.clip + rep.buckets * (2.0 * rep.clip / (rep.b - 1))) / (a - beta)   # sum_j levels_j = 0
    d = rep.n_coords
    if rep.indices is None:
        return est.reshape(rep.shape)
    out = np.zeros(d)
    out[rep.indices] = est * (d / rep.k)
    return out.reshape(rep.shape)


# ------------------------------------------------------------------ Eqs. 16-18: FedAvg
def fedavg(decoded_list: Sequence, weights=None) -> np.ndarray:
    """FedAvg (Eqs. 16-17): sum_i w_i g_i with w_i = m_i / sum_j m_j, m_i = number of interactions
    (training items) of client/domain i; default equal weights. The m_i must be public (they are
    not protected by the codec)."""
    arrs = [_to_numpy(g, f"decoded_list[{i}]") for i, g in enumerate(decoded_list)]
    if not arrs:
        raise ParameterError("decoded_list is empty; pass one decoded gradient per client")
    if any(a.shape != arrs[0].shape for a in arrs):
        raise ParameterError(f"all decoded gradients must have one shape, got {[a.shape for a in arrs]}")
    w = _fedavg_weights(weights, len(arrs))
    out = np.zeros(arrs[0].shape)
    for a, wi in zip(arrs, w):
        out += wi * a
    return out

# ------------------------------------------------------------------ empirical audit
def audit_case(mode: str = "paper", epsilon: float = 0.5, b: int = 64, clip: float = 1.0) -> dict:
    """Two neighbouring single-coordinate gradients at opposite clip ends (-clip vs +clip), discrete
    audit on the reported bucket. Paper mode: claimed = the paper's eps, true eps0 = ln(1+b(e^eps+1));
    calibrated: claimed = eps (one coordinate, whole budget)."""
    eps, bb, tau = check_epsilon(epsilon), _check_buckets(b), _check_clip(clip)
    m = str(mode).removeprefix("pfcr-")
    if m == "paper":
        def sample(x):
            return lambda g, n: encode_paper(np.full(n, x), eps, bb, tau, g)
        name = f"pfcr-paper(eps={eps:g}, b={bb})"
    elif m == "calibrated":
        def sample(x):   # n independent one-coordinate uploads, each with the whole budget eps
            return lambda g, n: encode_calibrated(np.full(n, x), eps, bb, tau, g, epsilon_per="coordinate").buckets
        name = f"pfcr-calibrated(eps={eps:g}, b={bb})"
    else:
        raise ParameterError(f"audit mode must be 'paper' or 'calibrated', got {mode!r}")
    return {"name": name, "claimed_epsilon": eps, "delta": 0.0, "sample_a": sample(-tau), "sample_b": sample(tau),
            "kind": "discrete", "key_or_statistic": int}
