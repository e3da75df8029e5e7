"""The one list of privrec's mechanisms: what each is, what it publishes, its guarantee from
parameters alone, and its audit cases. ``privrec publish``, ``guarantee``, ``audit`` and the
audit catalogue read this list; nothing else names mechanisms.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from privrec.errors import ParameterError
from privrec.privacy.guarantee import Guarantee


@dataclass(frozen=True)
class Mechanism:
    name: str
    paper: str
    module: str
    publishes: str | None          # release kind ("sequences", "rating-matrix", "user-features"), None: in training
    default_epsilon: float
    audits: tuple[str, ...]         # audit case names (privrec audit NAME)
    description: str


MECHANISMS: dict[str, Mechanism] = {m.name: m for m in (
    Mechanism("sdp", "PriCDSR", "privrec.privacy.sdp", "sequences", 10.0, ("sdp",),
              "replace/swap random mechanism on front-padded rows (epsilon-SDP)"),
    Mechanism("rr", "randomised-response SR (Mu & Lim)", "privrec.privacy.rr", "sequences", 1.0, ("rr",),
              "keep each history item or replace it by its semantic alternative (Bayesian posterior-odds bound)"),
    Mechanism("jlt", "PriCDR", "privrec.privacy.jlt", "rating-matrix", 1.0, ("jlt",),
              "Johnson-Lindenstrauss projection of the rating matrix with a lift (Gaussian M)"),
    Mechanism("sjlt", "PriCDR", "privrec.privacy.jlt", "rating-matrix", 1.0, ("sjlt",),
              "sparse-aware JLT: M = P H D with a fast Walsh-Hadamard transform"),
    Mechanism("features", "DIPSGNN", "privrec.privacy.features", "user-features", 1.0,
              ("features", "piecewise", "oue"),
              "epsilon1-LDP user features: piecewise mechanism (numerical) + OUE (categorical), k of n attributes"),
    Mechanism("graph", "DIPSGNN", "privrec.privacy.graph", None, 1.0, ("graph", "graph-sigma2-bug"),
              "clipped rows + Gaussian noise in every aggregation step of the gated GNN"),
    Mechanism("edgerand", "DIPSGNN (baseline)", "privrec.privacy.graph", None, 1.0, (),
              "Gaussian noise on the adjacency counts, once"),
    Mechanism("dpmf", "DIPSGNN (baseline [25])", "privrec.privacy.objective", None, 5.0, (),
              "objective perturbation of MF item profiles (Hua et al.): claimed epsilon, none proven as trained"),
    Mechanism("pfcr-paper", "PFCR", "privrec.privacy.fedcodec", None, 0.5, ("pfcr-paper",),
              "the paper's gradient codec (quantise, randomise bucket); true epsilon ln(1 + b(e^eps + 1))"),
    Mechanism("pfcr-calibrated", "PFCR", "privrec.privacy.fedcodec", None, 0.5, ("pfcr-calibrated",),
              "b-ary randomised response after stochastic rounding: epsilon-LDP per upload, unbiased decoder"),
)}

PUBLISHABLE = tuple(n for n, m in MECHANISMS.items() if m.publishes)
AUDITS = tuple(a for m in MECHANISMS.values() for a in m.audits)


def get(name: str) -> Mechanism:
    try:
        return MECHANISMS[name]
    except KeyError:
        raise ParameterError(f"unknown mechanism {name!r}; known: {', '.join(MECHANISMS)}") from None


def _pairing(n_items: int) -> np.ndarray:
    """An injective alternative map over codes 1..m: pairs (1 2)(3 4)...; a 3-cycle closes odd m."""
    if n_items < 2:
        raise ParameterError("rr needs at least 2 items (--n-items)")
    alt = np.zeros(n_items + 1, dtype=np.int64)
    codes = np.arange(1, n_items + 1)
    alt[1:] = np.where(codes % 2 == 1, codes + 1, codes - 1)
    if n_items % 2:
        alt[n_items - 2], alt[n_items - 1], alt[n_items] = n_items - 1, n_items, n_items - 2
    return alt


def _jlt(method: str) -> Callable[..., Guarantee]:
    def build(eps, delta, n_items, n_users, n_prime, q, calibration, **_) -> Guarantee:
        from privrec.privacy import jlt
        from privrec.privacy.fwht import next_pow2

        kw: dict = {"method": method, "n_items": n_items, "center": True}
        if method == "sjlt":
            # the coherence of a centred SJLT depends on the random signs D; without a draw use its bound
            # zeta <= (1 + 1)^2 = 4 (|(H D 1)_i| <= n1 / sqrt(N)); a publish run uses its draw's exact value
            kw.update(q=q, n_total=next_pow2(n_items), coherence=4.0)
        w = jlt.calibrate_w(eps, delta, n_prime, calibration, **kw)
        kw.pop("n_total", None)
        return jlt.guarantee(w=w, delta=delta, n_prime=n_prime, n_users=n_users, epsilon=eps,
                             calibration=calibration, **kw)
    return build


def _sdp(eps, n_items, max_len, **_) -> Guarantee:
    from privrec.privacy import sdp

    return sdp.guarantee(eps, n_items, max_len)


def _rr(eps, n_items, max_len, **_) -> Guarantee:
    from privrec.privacy import rr

    return rr.guarantee(eps, _pairing(n_items), max_len=max_len, allow_invalid=True)


def _features(eps, **_) -> Guarantee:
    from privrec.privacy import features as F

    return F.guarantee(F.movielens_schema(), eps)


def _graph(eps, delta, sigma, clip, steps, passes, unit, **_) -> Guarantee:
    from privrec.privacy import graph as G

    s = sigma if sigma is not None else G.calibrate_sigma(eps, delta, clip, steps, passes, unit)
    return G.guarantee(s, clip, steps, passes, delta, unit)


def _edgerand(eps, delta, **_) -> Guarantee:
    from privrec.privacy import graph as G

    return G.edge_rand(np.zeros((1, 2, 2)), eps, delta, np.random.default_rng(0))[2]    # parameters only


def _dpmf(eps, **_) -> Guarantee:
    from privrec.privacy import objective

    return objective.guarantee(eps)


def _pfcr(mode: str) -> Callable[..., Guarantee]:
    def build(eps, delta, buckets, coords, rounds, **_) -> Guarantee:
        from privrec.privacy import fedcodec

        return fedcodec.guarantee(mode, eps, buckets, coords, rounds, delta=delta)
    return build


_GUARANTEES: dict[str, Callable[..., Guarantee]] = {
    "sdp": _sdp, "rr": _rr, "jlt": _jlt("jlt"), "sjlt": _jlt("sjlt"), "features": _features, "graph": _graph,
    "edgerand": _edgerand, "dpmf": _dpmf, "pfcr-paper": _pfcr("paper"), "pfcr-calibrated": _pfcr("calibrated"),
}


def guarantee_of(name: str, epsilon: float | None = None, *, delta: float = 1e-5, n_items: int = 3706,
                 n_users: int = 6040, max_len: int = 50, n_prime: int = 500, q: float = 0.1,
                 calibration: str = "paper", buckets: int = 64, coords: int = 1, rounds: int = 1,
                 sigma: float | None = None, clip: float = 1.0, steps: int = 1, passes: int = 100,
                 unit: str = "edge") -> Guarantee:
    """The guarantee of mechanism ``name`` at these parameters, without touching data (each
    mechanism reads the parameters it has; defaults describe ML-1M)."""
    mech = get(name)
    eps = mech.default_epsilon if epsilon is None else epsilon
    return _GUARANTEES[name](eps=eps, delta=delta, n_items=n_items, n_users=n_users, max_len=max_len,
                             n_prime=n_prime, q=q, calibration=calibration, buckets=buckets, coords=coords,
                             rounds=rounds, sigma=sigma, clip=clip, steps=steps, passes=passes, unit=unit)


def audit_cases() -> dict[str, Callable[[float | None], dict]]:
    """Audit case builders by name: ``case(epsilon or None) -> dict`` (see privrec.privacy.audit)."""
    from privrec.privacy import features, fedcodec, graph, jlt, rr, sdp

    def e(x: float | None, default: float) -> float:
        return default if x is None else x

    return {
        "sdp": lambda x: sdp.audit_case(e(x, 1.0)),
        "rr": lambda x: rr.audit_case(e(x, 1.0)),
        "jlt": lambda x: jlt.audit_case("jlt", e(x, 1.0)),
        "sjlt": lambda x: jlt.audit_case("sjlt", e(x, 1.0)),
        "features": lambda x: features.audit_case(e(x, 1.0), "features"),
        "piecewise": lambda x: features.audit_case(e(x, 1.0), "piecewise"),
        "oue": lambda x: features.audit_case(e(x, 1.0), "oue"),
        "graph": lambda x: graph.audit_case(),
        "graph-sigma2-bug": lambda x: graph.audit_case(reference_bug=True),
        "pfcr-paper": lambda x: fedcodec.audit_case("paper", e(x, 0.5)),
        "pfcr-calibrated": lambda x: fedcodec.audit_case("calibrated", e(x, 0.5)),
    }
