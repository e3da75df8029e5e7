"""DIPSGNN's privacy accounting (Hu & Fang, Sec. 4.3, Thm 4.2): the joint L2 sensitivity of one
noisy aggregation step, Thm 4.2's closed form and its inversion, the honest (epsilon, delta) of a
whole training run and the sigma that meets a budget. The aggregation itself (Eqs. 4, 6-7) and
EdgeRand are in privrec.privacy.graph.

Units: sigma is the noise *standard deviation* of every aggregation (Eq. 7); C the L2 norm every
node row is rescaled to (Eq. 6); T propagation steps per forward pass; ``passes`` = epochs x forward
passes per epoch whose graphs contain the protected unit; ``unit`` "edge" (one transition count,
the paper's) or "interaction" (one interaction of a sequence).

Sensitivity (checked by brute force in tests/privacy/test_graph.py)
------------------------------------------------------------------
*Edge level* (the paper's unit): A_out differs by 1 in one entry (p, q). Then A_out H changes in
row p by H_q and A_in H in row q by H_p: each release moves by C, the *pair* released at every
step by sqrt(2) C. (The proof of Thm 4.2 analyses one matrix, writes H_p for H_q - harmless - and
composes T releases of sensitivity C, i.e. it drops the second release of each step.)

*Interaction level*: deleting the k-th interaction b of ... a b c ... does **not** change one
count, as the proof says: it removes a->b and b->c and adds a->c (three counts). With unit rows,
Delta(A_out H) has row a = H_b - H_c and row b = H_c; Delta(A_in H) has row b = H_a and row
c = H_b - H_a. With H_a = H_c = -H_b both reach norm^2 = 4C^2 + C^2, so the step's joint
sensitivity is sqrt(10) C (not sqrt(3)*sqrt(2) C = sqrt(6) C: the changed counts share rows and
the difference H_b - H_c can have norm 2C). Coinciding items (a = c, a = b, b = c) never exceed
it; deleting the first or last interaction changes one count (sqrt(2) C). The tests enumerate all
sequences over a 3-letter alphabet up to length 6 and prove the maximum 10 C^2 is exact (a
sign-vector H attains it; the Gram relaxation sum |M_jk| bounds it from above). The count view
keeps the node set fixed: deleting the only occurrence of an item also deletes its node, which
changes the *shape* of the release and is not protected at all.

Honest guarantee (what :func:`guarantee` reports)
-------------------------------------------------
One forward pass releases 2 T Gaussians (T steps x {out, in}); a step is one Gaussian of L2
sensitivity s = sqrt(2) C (edge) or sqrt(10) C (interaction) at noise sigma, adaptively composed
(H at step t depends on earlier noisy outputs only). Training re-noises at *every* forward pass
that touches the user's graph: ``passes`` = epochs x graphs built from the user's sequence per
epoch (the paper trains 10 epochs on every prefix of the sequence, and an early transition occurs
in every prefix graph). The total is the dp-accounting composition of T x passes Gaussians with
noise multiplier sigma / s - equivalently one Gaussian with multiplier sigma / (s sqrt(T passes)).
Thm 4.2 (``claimed``) composes only the T steps of one pass at sensitivity C.

What this covers - and what DIPSGNN assumes
-------------------------------------------
The guarantee is for the aggregates *released inside training*, as DP with respect to the
adjacency matrices with everything else held fixed (node set, alias positions, labels, user
features). DIPSGNN argues that the rest of the model is post-processing. It is not: the readout
(Eq. 10-11) reads the raw sequence (z_l is the embedding of the *last* item, z_g attends over the
sequence positions), the loss uses the raw next-item labels, and the node set is the user's raw
item set. None of these is noised, so the trained weights and the recommendations are **not**
(eps, delta)-DP with respect to a user's interactions; only the noisy aggregates are. At
interaction level this also means H at later passes depends on the raw change (through the
gradients), so the interaction-level number bounds the aggregate releases for given H only.
"""

from __future__ import annotations

import functools
import math
from typing import Literal, NamedTuple

from privrec.errors import ParameterError
from privrec.privacy import accounting
from privrec.privacy.guarantee import Claim, Guarantee
from privrec.privacy.validate import check_delta, check_epsilon, check_positive_int

Unit = Literal["edge", "interaction"]

EDGE_FACTOR = math.sqrt(2.0)          # joint L2 sensitivity of (A_out H, A_in H) per unit C, one count
INTERACTION_FACTOR = math.sqrt(10.0)  # ... one interaction deleted/inserted (three counts, see module doc)

_UNITS = {
    "edge": ("one transition count of one user's behaviour graph (A_out[p, q] +/- 1, A_in = A_out^T); "
             "node set, positions and labels held fixed"),
    "interaction": ("one interaction deleted from / inserted into one user's sequence (up to three "
                    "transition counts: a->b, b->c removed, a->c added); node set held fixed"),
}


# ----------------------------------------------------------------------------- checks shared with the aggregation
def _check_C(C: float) -> float:
    try:
        c = float(C)
    except (TypeError, ValueError):
        raise ParameterError(f"C (embedding norm) must be a number, got {C!r}") from None
    if not math.isfinite(c) or c <= 0:
        raise ParameterError(f"C (embedding norm) must be a positive finite number, got {C!r}; the paper uses 0.1-1")
    return c


def _check_sigma(sigma: float) -> float:
    try:
        s = float(sigma)
    except (TypeError, ValueError):
        raise ParameterError(f"sigma (noise standard deviation) must be a number, got {sigma!r}") from None
    if not math.isfinite(s) or s < 0:
        raise ParameterError(f"sigma (noise standard deviation) must be a finite number >= 0, got {sigma!r}; "
                             "use calibrate_sigma(epsilon, delta, ...) to pick it")
    return s


# ----------------------------------------------------------------------------- Thm 4.2 and the honest account
def sensitivity(C: float, unit: Unit = "edge") -> float:
    """Joint L2 sensitivity of one step (both A_out H and A_in H) with rows of norm C."""
    c = _check_C(C)
    if unit == "edge":
        return EDGE_FACTOR * c
    if unit == "interaction":
        return INTERACTION_FACTOR * c
    raise ParameterError(f"unit must be 'edge' or 'interaction', got {unit!r}")


class PaperEpsilon(NamedTuple):
    closed_form: float    # Thm 4.2: T C^2/(2 sigma^2) + C sqrt(2 T log(1/delta)) / sigma
    accountant: float     # dp-accounting for the same premise: T Gaussians of sensitivity C
    accounting: str


@functools.lru_cache(maxsize=512)
def _gaussian_epsilon(z: float, count: int, delta: float) -> tuple[float, str]:
    """accounting.epsilon of ``count`` composed Gaussians at noise multiplier z (memoised: the
    PLD accountant takes seconds when epsilon is large, and guarantees are recomputed often)."""
    if z == 0.0:
        return math.inf, "no noise"
    return accounting.gaussian_epsilon(z, count, delta), "exact: composed Gaussians are sqrt(count)/z-GDP"


@functools.lru_cache(maxsize=512)
def _calibrate(epsilon: float, delta: float, count: int) -> float:
    return accounting.calibrate_gaussian_exact(epsilon, delta, count)


def _check_T(T) -> int:
    return check_positive_int(T, "T (propagation steps)")


def paper_closed_form(sigma: float, C: float, T: int, delta: float) -> float:
    """Thm 4.2's formula, eps_2 = T C^2 / (2 sigma^2) + C sqrt(2 T log(1/delta)) / sigma (pure arithmetic)."""
    s, c, t, d = _check_sigma(sigma), _check_C(C), _check_T(T), check_delta(delta)
    if s == 0.0:
        return math.inf
    return t * c * c / (2 * s * s) + c * math.sqrt(2 * t * math.log(1 / d)) / s


def paper_sigma(epsilon: float, C: float, T: int, delta: float) -> float:
    """The sigma at which Thm 4.2's formula equals ``epsilon`` (what the paper would use for its eps2):
    with x = C / sigma, eps = T x^2 / 2 + sqrt(2 T log(1/delta)) x, so
    x = (sqrt(b^2 + 2 T eps) - b) / T with b = sqrt(2 T log(1/delta))."""
    e, c, t, d = check_epsilon(epsilon), _check_C(C), _check_T(T), check_delta(delta)
    b = math.sqrt(2 * t * math.log(1 / d))
    return c * t / (math.sqrt(b * b + 2 * t * e) - b)


def paper_epsilon(sigma: float, C: float, T: int, delta: float) -> PaperEpsilon:
    """What Thm 4.2 claims for one forward pass: T releases of sensitivity C (its premise).

    ``closed_form`` is the theorem's formula (RDP of T Gaussians, converted with the
    log(1/delta)/(alpha-1) term and optimised over alpha); ``accountant`` is dp-accounting's
    (tighter) epsilon for exactly the same T releases.
    """
    s, c, t, d = _check_sigma(sigma), _check_C(C), _check_T(T), check_delta(delta)
    if s == 0.0:
        return PaperEpsilon(math.inf, math.inf, "no noise")
    closed = paper_closed_form(s, c, t, d)
    eps, how = _gaussian_epsilon(s / c, t, d)
    return PaperEpsilon(closed, eps, how)


def _guarantee_one(s: float, c: float, t: int, p: int, d: float, unit: str) -> Guarantee:
    sens = sensitivity(c, unit)                 # type: ignore[arg-type]
    z = s / sens
    event = accounting.gaussian_event(z, t * p)
    eps, how = _gaussian_epsilon(z, t * p, d)
    claim = paper_closed_form(s, c, t, d)
    notes = [
        f"Per step: one Gaussian of joint L2 sensitivity {sens / c:.4g} C over (A_out H, A_in H); "
        f"T x passes = {t * p} adaptively composed steps ({2 * t * p} matrix releases), noise multiplier {z:.4g}.",
        "The claim is Thm 4.2's closed form for one pass (T releases of sensitivity C); paper_epsilon() also "
        "gives dp-accounting's tighter value for that premise.",
        "Covers only the aggregates released inside training, as DP w.r.t. the adjacency counts with the node "
        "set, alias positions, labels and user features held fixed. The readout (last item, attention over "
        "positions), the labels and the node set use the raw sequence without noise, so trained weights and "
        "recommendations are not (epsilon, delta)-DP w.r.t. a user's interactions.",
    ]
    if s == 0:
        notes.insert(0, "sigma = 0: no noise is added, so nothing is private (epsilon = infinity): no guarantee.")
    if unit == "interaction":
        notes.append("Deleting the only occurrence of an item removes its node (changes the release's shape): "
                     "not covered. Later passes' H depends on the raw change through gradients, so this bounds "
                     "the aggregate releases for given H only.")
    return Guarantee(
        mechanism="dipsgnn-noisy-aggregation",
        definition="(epsilon, delta)-DP of the noisy aggregates over all noisy passes (training, validation, "
                   "testing and any inference since)",
        epsilon=eps, delta=d, unit=_UNITS[unit],
        parameters={"sigma": s, "C": c, "T": t, "passes": p, "delta": d, "sensitivity": sens,
                    "noise_multiplier": z, "steps_composed": t * p, "unit": unit},
        valid=s > 0,
        validity="" if s > 0 else "sigma = 0: no noise, no guarantee",
        claimed=Claim(claim, d, "DIPSGNN Theorem 4.2",
                      "Thm 4.2 composes the T steps of one forward pass at sensitivity C; each step releases "
                      "both A_out H and A_in H (sqrt 2 C), and training re-noises every pass"),
        accounting=how, event=event, relation="add_or_remove_one", notes=tuple(notes))


def _check_passes(passes) -> int:
    return check_positive_int(passes, "passes (epochs x forward passes per epoch that use the user's graph)")


def guarantee(sigma: float, C: float, T: int, passes: int, delta: float, unit: Unit = "edge", *,
              related: bool = True) -> Guarantee:
    """Honest (epsilon, delta) of DIPSGNN's noisy aggregation over a whole training run.

    passes = epochs x number of forward passes per epoch whose graphs contain the protected
    unit (with the paper's prefix subsequences, up to len(sequence) - 1 per epoch).
    ``related`` (default) adds the same run under the other unit as ``Guarantee.related``.
    """
    s, c, t, p, d = _check_sigma(sigma), _check_C(C), _check_T(T), _check_passes(passes), check_delta(delta)
    if unit not in _UNITS:
        raise ParameterError(f"unit must be 'edge' or 'interaction', got {unit!r}")
    main = _guarantee_one(s, c, t, p, d, unit)
    if not related:
        return main
    return main.with_related(_guarantee_one(s, c, t, p, d, "interaction" if unit == "edge" else "edge"))


def calibrate_sigma(epsilon: float, delta: float, C: float, T: int, passes: int, unit: Unit = "edge") -> float:
    """Smallest noise std sigma such that :func:`guarantee` meets (epsilon, delta) (PLD calibration)."""
    e, d, t, p = check_epsilon(epsilon), check_delta(delta), _check_T(T), _check_passes(passes)
    sens = sensitivity(C, unit)
    return _calibrate(e, d, t * p) * sens
