"""The one list of privrec's mechanisms, each entry carrying its behaviour: what it is, what it
publishes and the function that publishes it, its guarantee from parameters alone, its audit cases and
the publish options it reads. ``privrec publish``, ``guarantee``, ``audit``, the audit catalogue and
:mod:`privrec.release.publish` read this list; a new mechanism is one module plus one entry here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from privrec.errors import ParameterError
from privrec.privacy.guarantee import Guarantee
from privrec.privacy.validate import numerically_safe

AuditCase = Callable[[float | None], dict]
Release = Callable[..., tuple[np.ndarray, Guarantee]]


def _e(x: float | None, default: float) -> float:
    return default if x is None else x


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


# ---------------------------------------------------------------------------------------------- releases
# release(data, epsilon, rng, **options) -> (published array, guarantee); options a mechanism does not read are
# ignored here and refused by the CLI (Mechanism.options)

def _release_sdp(rows: np.ndarray, eps: float, rng: np.random.Generator, *, n_items: int, **_):
    """PriCDSR's random mechanism on front-padded rows (users, L) of item codes 1..n_items."""
    from privrec.privacy import sdp

    g = numerically_safe("sdp", lambda: sdp.guarantee(eps, n_items, rows.shape[1]))
    return sdp.perturb(rows, n_items, eps, rng), g


def _release_rr(rows: np.ndarray, eps: float, rng: np.random.Generator, *, alt_map=None, allow_invalid=False, **_):
    """Mu & Lim's randomised response: keep each item or replace it by ``alt_map[item]``."""
    from privrec.privacy import rr

    if alt_map is None:
        raise ParameterError("rr needs an alternative map (semantic neighbours of every item)")
    g = rr.guarantee(eps, alt_map, sequences=rows, allow_invalid=allow_invalid)
    return rr.perturb(rows, alt_map, eps, rng, allow_invalid=allow_invalid), g


def _release_jlt(method: str) -> Release:
    def release(ratings, eps: float, rng: np.random.Generator, *, delta: float, n_prime: int, calibration: str,
                max_change: float, allow_invalid: bool = False, q: float = 0.1, **_):
        """PriCDR Alg. 1 on a users x items rating matrix: users x n' float32."""
        from privrec.privacy import jlt

        kw = dict(delta=delta, n_prime=int(n_prime), calibration=calibration, allow_invalid=allow_invalid,
                  max_change=max_change)
        if method == "sjlt":
            return numerically_safe("sjlt", lambda: jlt.publish_sjlt(ratings, eps, rng, q=q, **kw))
        return numerically_safe("jlt", lambda: jlt.publish_jlt(ratings, eps, rng, **kw))
    return release


# ---------------------------------------------------------------------------------------------- certificates
# how a release's reader re-checks a certificate from the parameters it records (privrec.release.verify):
# recompute(parameters) -> the guarantee they give, or, where the reader cannot recompute (a worst case over
# private data it does not hold), consistent(guarantee dict) -> the problems it can see

def _recompute_sdp(p: dict) -> Guarantee:
    from privrec.privacy import sdp

    return sdp.guarantee(p["epsilon"], p["n_items"], p["max_len"])


def _recompute_jlt(p: dict) -> Guarantee:
    from privrec.privacy.jlt_accounting import guarantee

    kw = dict(method=p["method"], w=p["w"], delta=p["delta"], n_prime=p["n_prime"], n_users=p["n_users"],
              n_items=p["n_items"], epsilon=p.get("epsilon_requested"), calibration=p.get("calibration", "paper"),
              lift=p.get("lift", "full"), center=p.get("center", True), max_change=p.get("max_change", 1.0))
    if p["method"] == "sjlt":
        kw.update(q=p["q"], coherence=p["coherence"])
    return guarantee(**kw)


def _consistent_rr(g: dict) -> list[str]:
    """Randomised response's guarantee is a worst case over the private histories, which a reader does not
    hold; what it can check: inside Thm 3.1's validity the stated epsilon is the requested one."""
    from privrec.privacy.guarantee import close

    p = g["parameters"]
    if g.get("valid", True) and not close(g.get("epsilon"), p.get("epsilon")):
        return [f"guarantee.epsilon {g.get('epsilon')} is not the epsilon {p.get('epsilon')} its parameters give "
                "(inside Thm 3.1's validity they are equal)"]
    return []


def _consistent_features(g: dict) -> list[str]:
    from privrec.privacy.features import choose_k
    from privrec.privacy.guarantee import close

    p = g["parameters"]
    k = choose_k(float(p["epsilon1"]), int(p["n_attributes"]))
    bad = []
    if int(p.get("k", -1)) != k or not close(p.get("per_attribute_epsilon"), float(p["epsilon1"]) / k):
        bad.append(f"parameters k / per_attribute_epsilon do not follow from epsilon1 = {p['epsilon1']} over "
                   f"{p['n_attributes']} attributes (k = {k})")
    if not close(g.get("epsilon"), p.get("epsilon1")):
        bad.append(f"guarantee.epsilon {g.get('epsilon')} is not epsilon1 = {p.get('epsilon1')}")
    return bad


def _audits(module: str, **cases: Callable[[object, float | None], dict]) -> Mapping[str, AuditCase]:
    """Audit case builders by name, each ``case(epsilon or None) -> dict`` (see privrec.privacy.audit)."""
    def bind(fn):
        def case(x: float | None) -> dict:
            import importlib

            return fn(importlib.import_module(module), x)
        return case
    return {name.replace("_", "-"): bind(fn) for name, fn in cases.items()}


# ---------------------------------------------------------------------------------------------- the list
@dataclass(frozen=True)
class Mechanism:
    name: str
    paper: str
    module: str
    publishes: str | None          # release kind ("sequences", "rating-matrix", "user-features"), None: in training
    default_epsilon: float
    description: str
    guarantee: Callable[..., Guarantee]                     # from parameters alone: privrec guarantee NAME
    audits: Mapping[str, AuditCase] = field(default_factory=dict)   # privrec audit CASE
    release: Release | None = None                          # publish on arrays (None: its own entry point)
    options: frozenset[str] = frozenset()    # capabilities the CLI asks about: delta (an (eps, delta) guarantee),
                                             # alt_map (semantic alternatives), aux (one domain of cross-domain data)
    certified_as: tuple[str, ...] = ()       # the guarantee names its releases' certificates carry
    recompute: Callable[[dict], Guarantee] | None = None      # certificate parameters -> the guarantee they give
    consistent: Callable[[dict], list[str]] | None = None     # else: what a reader can check (problems found)


MECHANISMS: dict[str, Mechanism] = {m.name: m for m in (
    Mechanism("sdp", "PriCDSR", "privrec.privacy.sdp", "sequences", 10.0,
              "replace/swap random mechanism on front-padded rows (epsilon-SDP)", _sdp,
              _audits("privrec.privacy.sdp", sdp=lambda M, x: M.audit_case(_e(x, 1.0))),
              _release_sdp, frozenset({"aux"}), ("pricdsr-sdp",), recompute=_recompute_sdp),
    Mechanism("rr", "randomised-response SR (Mu & Lim)", "privrec.privacy.rr", "sequences", 1.0,
              "keep each history item or replace it by its semantic alternative (Bayesian posterior-odds bound)", _rr,
              _audits("privrec.privacy.rr", rr=lambda M, x: M.audit_case(_e(x, 1.0))),
              _release_rr, frozenset({"alt_map"}), ("mu-lim-rr", "mu-lim-rr-positional"), consistent=_consistent_rr),
    Mechanism("jlt", "PriCDR", "privrec.privacy.jlt", "rating-matrix", 1.0,
              "Johnson-Lindenstrauss projection of the rating matrix with a lift (Gaussian M)", _jlt("jlt"),
              _audits("privrec.privacy.jlt", jlt=lambda M, x: M.audit_case("jlt", _e(x, 1.0))),
              _release_jlt("jlt"), frozenset({"delta", "aux"}), ("pricdr-jlt",), recompute=_recompute_jlt),
    Mechanism("sjlt", "PriCDR", "privrec.privacy.jlt", "rating-matrix", 1.0,
              "sparse-aware JLT: M = P H D with a fast Walsh-Hadamard transform", _jlt("sjlt"),
              _audits("privrec.privacy.jlt", sjlt=lambda M, x: M.audit_case("sjlt", _e(x, 1.0))),
              _release_jlt("sjlt"), frozenset({"delta", "aux"}), ("pricdr-sjlt",), recompute=_recompute_jlt),
    Mechanism("features", "DIPSGNN", "privrec.privacy.features", "user-features", 1.0,
              "epsilon1-LDP user features: piecewise mechanism (numerical) + OUE (categorical), k of n attributes",
              _features,
              _audits("privrec.privacy.features", features=lambda M, x: M.audit_case(_e(x, 1.0), "features"),
                      piecewise=lambda M, x: M.audit_case(_e(x, 1.0), "piecewise"),
                      oue=lambda M, x: M.audit_case(_e(x, 1.0), "oue")),
              certified_as=("dipsgnn-user-features",), consistent=_consistent_features),
    Mechanism("graph", "DIPSGNN", "privrec.privacy.graph", None, 1.0,
              "clipped rows + Gaussian noise in every aggregation step of the gated GNN", _graph,
              _audits("privrec.privacy.graph", graph=lambda M, x: M.audit_case(),
                      graph_sigma2_bug=lambda M, x: M.audit_case(reference_bug=True))),
    Mechanism("edgerand", "DIPSGNN (baseline)", "privrec.privacy.graph", None, 1.0,
              "Gaussian noise on the adjacency counts, once", _edgerand),
    Mechanism("dpmf", "DIPSGNN (baseline [25])", "privrec.privacy.objective", None, 5.0,
              "objective perturbation of MF item profiles (Hua et al.): claimed epsilon, none proven as trained", _dpmf),
    Mechanism("pfcr-paper", "PFCR", "privrec.privacy.fedcodec", None, 0.5,
              "the paper's gradient codec (quantise, randomise bucket); true epsilon ln(1 + b(e^eps + 1))",
              _pfcr("paper"),
              _audits("privrec.privacy.fedcodec", pfcr_paper=lambda M, x: M.audit_case("paper", _e(x, 0.5)))),
    Mechanism("pfcr-calibrated", "PFCR", "privrec.privacy.fedcodec", None, 0.5,
              "b-ary randomised response after stochastic rounding: epsilon-LDP per upload, unbiased decoder",
              _pfcr("calibrated"),
              _audits("privrec.privacy.fedcodec", pfcr_calibrated=lambda M, x: M.audit_case("calibrated", _e(x, 0.5)))),
)}

PUBLISHABLE = tuple(n for n, m in MECHANISMS.items() if m.publishes)
AUDITS = tuple(a for m in MECHANISMS.values() for a in m.audits)


def get(name: str) -> Mechanism:
    try:
        return MECHANISMS[name]
    except KeyError:
        raise ParameterError(f"unknown mechanism {name!r}; known: {', '.join(MECHANISMS)}") from None


def publishing(kind: str) -> list[str]:
    """The mechanisms that publish ``kind`` through a release function."""
    return [n for n, m in MECHANISMS.items() if m.publishes == kind and m.release is not None]


def guarantee_of(name: str, epsilon: float | None = None, *, delta: float = 1e-5, n_items: int = 3706,
                 n_users: int = 6040, max_len: int = 50, n_prime: int = 500, q: float = 0.1,
                 calibration: str = "paper", buckets: int = 64, coords: int = 1, rounds: int = 1,
                 sigma: float | None = None, clip: float = 1.0, steps: int = 1, passes: int = 100,
                 unit: str = "edge") -> Guarantee:
    """The guarantee of mechanism ``name`` at these parameters, without touching data (each
    mechanism reads the parameters it has; defaults describe ML-1M)."""
    mech = get(name)
    eps = mech.default_epsilon if epsilon is None else epsilon
    return mech.guarantee(eps=eps, delta=delta, n_items=n_items, n_users=n_users, max_len=max_len,
                             n_prime=n_prime, q=q, calibration=calibration, buckets=buckets, coords=coords,
                             rounds=rounds, sigma=sigma, clip=clip, steps=steps, passes=passes, unit=unit)


def audit_cases() -> dict[str, AuditCase]:
    """Audit case builders by name: ``case(epsilon or None) -> dict`` (see privrec.privacy.audit)."""
    return {name: case for m in MECHANISMS.values() for name, case in m.audits.items()}


def certifier(guarantee_name: str) -> Mechanism | None:
    """The entry whose releases carry certificates of ``guarantee_name`` (None: no release of privrec's)."""
    return next((m for m in MECHANISMS.values() if guarantee_name in m.certified_as), None)


def certified_names() -> list[str]:
    return sorted(n for m in MECHANISMS.values() for n in m.certified_as)
