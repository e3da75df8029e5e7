"""Privacy accounting of PFCR's gradient codec (:mod:`privrec.privacy.fedcodec`), from parameters
alone: the parameter checks shared with the codec, the randomised-response probabilities and exact
output laws of both modes, their true per-coordinate epsilon, the calibrated budget split, and the
:class:`~privrec.privacy.guarantee.Guarantee` of each mode over coordinates and rounds.

Honest guarantee of paper mode (see :func:`paper_guarantee`). One coordinate reports its own
bucket with probability p + (1-p)/b and any other bucket with (1-p)/b, so the exact maximum
likelihood ratio is

    e^eps0 = 1 + b p/(1-p) = 1 + b (e^eps + 1)     e.g. eps0 = ln(1 + 64 (e^0.5 + 1)) = 5.139,
                                                        ln(1 + 1024 (e^0.5 + 1)) = 7.906,

not eps - and it *grows* with b. A gradient of d coordinates is d independent such reports:
d eps0 per upload (pure, attained by two gradients at opposite ends of the clip range), T d eps0
over T rounds; the (eps, delta) totals come from dp-accounting on the d T-fold composition of
``pure_dp_event(eps0)``. With continuous noise (noise ~ U(0, b) real), a report is an integer iff
it was kept, so kept coordinates are revealed exactly: no finite epsilon (``valid=False``).

Calibrated mode (see :func:`calibrated_guarantee`): keep a = e^eps/(e^eps + b - 1), each other
bucket beta = 1/(e^eps + b - 1), so a/beta = e^eps: exactly eps-LDP per reported coordinate. An
upload of k coordinates is the k-fold composition of ``pure_dp_event(eps/k)`` (eps each with
``epsilon_per="coordinate"``), composed over rounds. Totals over rounds are the tighter of basic
composition and dp-accounting at ``delta``.
"""

from __future__ import annotations

import math
from typing import Literal

import dp_accounting
import numpy as np

from privrec.errors import ParameterError
from privrec.privacy import accounting
from privrec.privacy.guarantee import Claim, Guarantee
from privrec.privacy.validate import check_delta, check_epsilon, check_positive_int, check_positive_number

Noise = Literal["integer", "continuous"]
EpsilonPer = Literal["upload", "coordinate"]

_EXP_CAP = 700.0                 # exp() argument cap (e^700 ~ 1e304); probabilities saturate long before
_PURE_PREFERENCE = 0.99          # report the accountant's (eps, delta) only if it beats pure eps by > 1 %
_PAPER_SOURCE = "PFCR Sec. 3.4.2, Eqs. 11-13 (composite quantisation + randomised-response LDP)"


# ------------------------------------------------------------------ parameter checks (shared with the codec)
def _check_clip(clip_value) -> float:
    return check_positive_number(clip_value, "clip (the threshold tau of Eq. 9)", "e.g. clip=0.01 for embedding gradients")


def _check_buckets(b) -> int:
    if isinstance(b, bool) or not isinstance(b, (int, np.integer)) or b < 2:
        raise ParameterError(f"b (number of quantisation buckets) must be an integer >= 2, got {b!r}; "
                             "the paper uses b = 2^k with k = 6..10")
    return int(b)


def _check_delta_or_zero(delta) -> float:
    if delta is None or (isinstance(delta, (int, float)) and float(delta) == 0.0):
        return 0.0
    return check_delta(delta)


def _check_noise(noise: str) -> str:
    if noise not in ("integer", "continuous"):
        raise ParameterError(f"noise must be 'integer' (Uniform{{0..b-1}}) or 'continuous' (U(0, b), no finite "
                             f"epsilon), got {noise!r}")
    return noise


# ------------------------------------------------------------------ paper mode: output law (Eqs. 11-13)
def paper_probabilities(epsilon: float) -> tuple[float, float]:
    """Eq. 12: (p, q') = ((e^eps + 1)/(e^eps + 2), 1/(e^eps + 2))."""
    eps = check_epsilon(epsilon)
    e = math.exp(min(eps, _EXP_CAP))
    return (e + 1.0) / (e + 2.0), 1.0 / (e + 2.0)


def paper_output_distribution(q: int, epsilon: float, b: int) -> np.ndarray:
    """Exact law of one reported bucket r given true bucket q (Eqs. 11-13, integer noise):
    P(r = q) = p + (1-p)/b, P(r = j != q) = (1-p)/b. Length-b float64 vector."""
    b = _check_buckets(b)
    if not (0 <= int(q) < b):
        raise ParameterError(f"bucket q must lie in [0, {b - 1}], got {q!r}")
    p, qq = paper_probabilities(epsilon)
    dist = np.full(b, qq / b)
    dist[int(q)] = p + qq / b
    return dist


def paper_true_epsilon(epsilon: float, b: int) -> float:
    """True per-coordinate LDP epsilon of paper mode: ln max_{r,q,q'} P(r|q)/P(r|q')
    = ln(1 + b (e^eps + 1)) (computed in log space; exact for every eps)."""
    eps, b = check_epsilon(epsilon), _check_buckets(b)
    return float(np.logaddexp(0.0, math.log(b) + np.logaddexp(0.0, eps)))


# ------------------------------------------------------------------ calibrated mode: output law and budget
def calibrated_probabilities(epsilon: float, b: int) -> tuple[float, float]:
    """b-ary randomised response: (keep a, each other bucket beta) = (e^e, 1)/(e^e + b - 1)."""
    eps, b = check_epsilon(epsilon), _check_buckets(b)
    em1 = math.expm1(min(eps, _EXP_CAP))
    return (1.0 + em1) / (b + em1), 1.0 / (b + em1)


def calibrated_output_distribution(x: float, epsilon: float, b: int, clip: float) -> np.ndarray:
    """Exact law of the reported bucket for one clipped value x (stochastic rounding then b-ary RR)."""
    tau, b = _check_clip(clip), _check_buckets(b)
    a, beta = calibrated_probabilities(epsilon, b)
    xc = float(np.clip(float(x), -tau, tau))
    t = (xc + tau) * ((b - 1) / (2.0 * tau))
    lo = int(min(max(math.floor(t), 0), b - 2))
    frac = t - lo
    pin = np.zeros(b)
    pin[lo] += 1.0 - frac
    pin[lo + 1] += frac
    return (a - beta) * pin + beta


def _coordinate_budget(epsilon: float, n_coords: int, k: int | None, epsilon_per: str) -> tuple[int, float]:
    eps = check_epsilon(epsilon)
    if epsilon_per not in ("upload", "coordinate"):
        raise ParameterError(f"epsilon_per must be 'upload' (eps split over the reported coordinates) or "
                             f"'coordinate' (eps each), got {epsilon_per!r}")
    kk = n_coords if k is None else check_positive_int(k, "k")
    if kk > n_coords:
        raise ParameterError(f"k = {kk} exceeds the number of coordinates {n_coords}; pass k <= {n_coords} "
                             "or k=None to report every coordinate")
    return kk, (eps / kk if epsilon_per == "upload" else eps)


# ------------------------------------------------------------------ guarantees
def _composed(eps_unit: float, count: int) -> dp_accounting.DpEvent:
    ev = accounting.pure_dp_event(eps_unit)
    return ev if count == 1 else dp_accounting.SelfComposedDpEvent(ev, int(count))


def _total(eps_unit: float, per_upload: int, rounds: int, delta: float) -> tuple[float, float, str, dict]:
    """Pure basic composition of rounds*per_upload eps_unit-LDP reports, and (if delta > 0) the
    tightest dp-accounting bound over two valid dominating events (per-coordinate and per-upload)."""
    pure = rounds * per_upload * eps_unit
    info = {"basic_composition_epsilon": pure}
    if delta <= 0 or not math.isfinite(pure):
        return pure, 0.0, "basic composition of pure eps-LDP reports (exact, attained)", info
    best, how = math.inf, "none"
    for label, unit, cnt in (("per-coordinate", eps_unit, per_upload * rounds),
                             ("per-upload", per_upload * eps_unit, rounds)):
        if unit > _EXP_CAP:                                    # pure_dp_event(unit) would overflow; useless anyway
            continue
        e, h = accounting.epsilon(_composed(unit, cnt), delta, "replace_one")
        info[f"accountant_epsilon_{label}_event"] = e
        if e < best:
            best, how = e, f"{h} on the {cnt}-fold composition of pure_dp_event({unit:.6g})"
    info["accountant_epsilon"] = best
    if best < _PURE_PREFERENCE * pure:
        return best, delta, how, info
    return pure, 0.0, ("basic composition of pure eps-LDP reports (exact, attained); the accountant at "
                       f"delta={delta:g} gives {best:.6g}, not tighter by > 1 %"), info


def _unit(rounds: int, n_coords: int) -> str:
    return (f"one client's (domain's) gradient uploads of {n_coords} coordinates over {rounds} round(s), against "
            "any other gradients (local DP; covers any change of that domain's data)")


def paper_guarantee(epsilon: float, b: int, n_coords: int = 1, rounds: int = 1, *, delta: float | None = 1e-6,
                    noise: Noise = "integer") -> Guarantee:
    """True guarantee of PFCR's codec as written (Eqs. 9-13) for one client over ``rounds`` uploads
    of ``n_coords`` coordinates. Per coordinate eps0 = ln(1 + b (e^eps + 1)) (exact max likelihood
    ratio); per upload n_coords eps0 (pure, attained); over rounds the tighter of basic composition
    and dp-accounting at ``delta`` (0/None: pure only). The paper's eps is kept as the claim."""
    eps, b = check_epsilon(epsilon), _check_buckets(b)
    d, T = check_positive_int(n_coords, "n_coords"), check_positive_int(rounds, "rounds")
    dl = _check_delta_or_zero(delta)
    noise = _check_noise(noise)
    p, qq = paper_probabilities(eps)
    eps0 = paper_true_epsilon(eps, b)
    params = {"epsilon_paper": eps, "b": b, "n_coords": d, "rounds": T, "noise": noise, "keep_p": p,
              "q": qq, "p_report_true_bucket": p + qq / b, "p_report_each_other_bucket": qq / b,
              "epsilon_per_coordinate": eps0 if noise == "integer" else math.inf}
    claim_reason = ("the true bucket is reported w.p. p + (1-p)/b, any other w.p. (1-p)/b: per-coordinate ratio "
                    f"1 + b(e^eps+1) = e^{eps0:.4g}, and {d} coordinates x {T} rounds compose")
    if noise == "continuous":
        return Guarantee(
            mechanism="pfcr-paper", definition="no finite LDP epsilon", epsilon=math.inf, delta=0.0,
            unit=_unit(T, d), parameters=params, valid=False,
            validity="continuous noise U(0, b): a report is an integer iff it was kept (c = 1), so every kept "
                     "coordinate is revealed exactly",
            claimed=Claim(eps, 0.0, _PAPER_SOURCE, "kept and perturbed outputs are distinguishable outright "
                                                   "(integer vs non-integer)"),
            accounting="none: the output laws are mutually singular on the kept event",
            event=accounting.pure_dp_event(math.inf), relation="replace_one",
            notes=("Use noise='integer' (Uniform{0..b-1}): then eps0 = ln(1 + b(e^eps + 1)) per coordinate.",))
    total, dl_used, how, info = _total(eps0, d, T, dl)
    params.update(info)
    per_coord = Guarantee(
        mechanism="pfcr-paper", definition="epsilon-LDP (one coordinate, one round)", epsilon=eps0,
        unit="one coordinate of one client's gradient upload (any value vs any other)", parameters=params,
        claimed=Claim(eps, 0.0, _PAPER_SOURCE, claim_reason),
        accounting="exact maximum likelihood ratio of the output law of Eqs. 11-13 (verified by enumeration)",
        event=accounting.pure_dp_event(eps0), relation="replace_one")
    per_upload = Guarantee(
        mechanism="pfcr-paper", definition="epsilon-LDP (one upload)", epsilon=d * eps0,
        unit=_unit(1, d), parameters=params,
        accounting="basic composition over independent coordinates (pure, attained by gradients at opposite clip ends)",
        event=_composed(eps0, d), relation="replace_one")
    return Guarantee(
        mechanism="pfcr-paper",
        definition="(epsilon, delta)-LDP" if dl_used else "epsilon-LDP",
        epsilon=total, delta=dl_used, unit=_unit(T, d), parameters=params, valid=True,
        claimed=Claim(eps, 0.0, _PAPER_SOURCE, claim_reason),
        accounting=how, event=_composed(eps0, d * T), relation="replace_one",
        notes=(f"Per coordinate: eps0 = ln(1 + b(e^eps + 1)) = {eps0:.6g} for eps = {eps:g}, b = {b} "
               "(the paper's eps bounds nothing; eps0 grows with b).",
               "Eq. 10 can give q = b; it is clamped to b-1 here (the authors' code wrapped it to bucket 0 = -tau).",
               "The server decoding (Eqs. 15-18) is biased: E = (p-q) s (p q + (1-p)(b-1)/2) - tau, not q s - tau.",
               "FedAvg weights m_i (interaction counts) are sent in the clear and are not protected."),
    ).with_related(per_coord, per_upload)


def calibrated_guarantee(epsilon: float, b: int, n_coords: int = 1, rounds: int = 1, *, k: int | None = None,
                         epsilon_per: EpsilonPer = "upload", delta: float | None = 1e-6) -> Guarantee:
    """Guarantee of the calibrated codec: each reported coordinate is exactly eps_c-LDP
    (eps_c = epsilon/k or epsilon), an upload k eps_c (pure, tight), ``rounds`` uploads by the
    tighter of basic composition and dp-accounting at ``delta`` (0/None: pure only)."""
    b = _check_buckets(b)
    d, T = check_positive_int(n_coords, "n_coords"), check_positive_int(rounds, "rounds")
    kk, eps_c = _coordinate_budget(epsilon, d, k, epsilon_per)
    dl = _check_delta_or_zero(delta)
    a, beta = calibrated_probabilities(eps_c, b)
    params = {"epsilon": float(epsilon), "epsilon_per": epsilon_per, "b": b, "n_coords": d, "k": kk,
              "rounds": T, "epsilon_per_coordinate": eps_c, "epsilon_per_upload": kk * eps_c,
              "keep_a": a, "other_beta": beta, "decoder_scale": d / kk / (a - beta)}
    total, dl_used, how, info = _total(eps_c, kk, T, dl)
    params.update(info)
    per_coord = Guarantee(
        mechanism="pfcr-calibrated", definition="epsilon-LDP (one reported coordinate)", epsilon=eps_c,
        unit="one reported coordinate (any value vs any other)", parameters=params,
        accounting="exact: b-ary randomised response, a/beta = e^eps (stochastic rounding is a mixture of rows)",
        event=accounting.pure_dp_event(eps_c), relation="replace_one")
    per_upload = Guarantee(
        mechanism="pfcr-calibrated", definition="epsilon-LDP (one upload)", epsilon=kk * eps_c,
        unit=_unit(1, d), parameters=params,
        accounting="basic composition over the k reported coordinates, mixed over a data-independent index set "
                   "(pure, attained)",
        event=_composed(eps_c, kk), relation="replace_one")
    sampling = (f"{kk} of {d} coordinates sampled uniformly without replacement per upload (public indices), "
                f"scaled by d/k = {d / kk:.6g}" if kk < d else "every coordinate reported")
    return Guarantee(
        mechanism="pfcr-calibrated",
        definition="(epsilon, delta)-LDP" if dl_used else "epsilon-LDP",
        epsilon=total, delta=dl_used, unit=_unit(T, d), parameters=params, valid=True, claimed=None,
        accounting=how, event=_composed(eps_c, kk * T), relation="replace_one",
        notes=(sampling + ".",
               "Decoder unbiased for the clipped gradient: levels[out] / (a - beta) per reported coordinate.",
               "FedAvg weights m_i (interaction counts) are sent in the clear and are not protected."),
    ).with_related(per_coord, per_upload)


def guarantee(mode: str, epsilon: float, b: int, n_coords: int = 1, rounds: int = 1, k: int | None = None,
              delta: float | None = 1e-6, *, epsilon_per: EpsilonPer = "upload",
              noise: Noise = "integer") -> Guarantee:
    """Guarantee of either codec from parameters only. ``mode``: "paper"/"pfcr-paper" or
    "calibrated"/"pfcr-calibrated". ``guarantee("paper", 0.5, 64)`` answers "the true epsilon of
    paper mode at eps = 0.5, b = 64" (one coordinate, one round: 5.139)."""
    m = str(mode).removeprefix("pfcr-")
    if m == "paper":
        if k is not None:
            raise ParameterError("k (coordinate sampling) applies to mode='calibrated' only")
        return paper_guarantee(epsilon, b, n_coords, rounds, delta=delta, noise=noise)
    if m == "calibrated":
        return calibrated_guarantee(epsilon, b, n_coords, rounds, k=k, epsilon_per=epsilon_per, delta=delta)
    raise ParameterError(f"mode must be 'paper' or 'calibrated' (optionally prefixed 'pfcr-'), got {mode!r}")
