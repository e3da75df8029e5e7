"""Randomised response with alternatives (Mu & Lim): exact output laws and posteriors by
enumeration on tiny domains, Theorem 3.1 and where it fails, the RQ2 variant, sampler
goodness of fit, validation, reproducibility, audit."""

import itertools
import math
from collections import Counter

import numpy as np
import pytest
from scipy import stats

from privrec.errors import ParameterError
from privrec.privacy import rr
from privrec.privacy.audit import audit_discrete

CYCLE4 = np.array([0, 2, 3, 4, 1])          # bijection 1->2->3->4->1, no fixed point, no 2-cycle
PAIRS4 = np.array([0, 2, 1, 4, 3])          # involution (1 2)(3 4)
NN4 = np.array([0, 2, 1, 2, 2])             # nearest-neighbour-like: 3 and 4 are nobody's alternative


# ------------------------------------------------------------------ literal reference (Alg. 1, Eq. 6)
def exact_output_law(seq, alt, keeps):
    """All 2^n keep/replace patterns of Alg. 1 lines 11-18 for one history."""
    law = Counter()
    for pattern in itertools.product((True, False), repeat=len(seq)):
        p, out = 1.0, []
        for v, k, keep in zip(seq, keeps, pattern):
            p *= k if keep else 1.0 - k
            out.append(v if keep else int(alt[v]))
        law[tuple(out)] += p
    return dict(law)


def likelihood(out, seq, alt, keeps):
    p = 1.0
    for w, v, k in zip(out, seq, keeps):
        p *= (k if w == v else 0.0) + ((1.0 - k) if w == alt[v] else 0.0)
    return p


def max_posterior_odds(outputs, alt, keeps, m, distinct=False):
    """max over outputs of max_guess P(guess | out) / (1 - P(guess | out)), uniform prior on V^n
    (or on histories without repeated items when ``distinct``)."""
    n = len(keeps)
    domain = [s for s in itertools.product(range(1, m + 1), repeat=n) if not distinct or len(set(s)) == n]
    worst = 0.0
    for out in outputs:
        lik = np.array([likelihood(out, s, alt, keeps) for s in domain])
        post = lik.max() / lik.sum()
        worst = max(worst, math.inf if post >= 1.0 else post / (1.0 - post))
    return worst


def all_outputs(m, n):
    return list(itertools.product(range(1, m + 1), repeat=n))


# ------------------------------------------------------------------ keep probabilities
def test_keep_probability_formula_and_pinned_values():
    k = rr.keep_probabilities([1, 2, 4, 10, 0], 1.0)
    np.testing.assert_allclose(k[:4], [0.5, 0.5 ** 0.5, 0.5 ** 0.25, 0.5 ** 0.1], rtol=1e-15)
    assert k[4] == 1.0
    # the paper's example: n = 4, "kept with probability 0.54", odds at most 1 in 10
    assert rr.keep_probabilities([4], 0.1)[0] == pytest.approx(0.5491, abs=1e-4)
    assert rr.guarantee(0.1, CYCLE4, lengths=[4]).epsilon == pytest.approx(0.1, rel=1e-12)
    # the counterexample regime (README, mechanisms table): n = 10, eps = 1e-4 gives keep 0.398 < 1/2
    assert rr.keep_probabilities([10], 1e-4)[0] == pytest.approx(0.398, abs=1e-3)
    # replacement probabilities without cancellation
    q = rr.replace_probabilities([1, 1000], 1e12)
    np.testing.assert_allclose(q, [1e-12 / (1 + 1e-12), 1e-15 * (1 - 0.5e-12 - 0.5e-15)], rtol=1e-9)   # series
    assert (q > 0).all()
    for n in (1, 3, 50):
        assert np.prod(np.full(n, rr.keep_probabilities([n], 0.3)[0])) == pytest.approx(0.3 / 1.3, rel=1e-12)


# ------------------------------------------------------------------ exact laws and Theorem 3.1
@pytest.mark.parametrize("alt", [CYCLE4, PAIRS4])
def test_output_law_is_the_product_formula_and_the_sampler_matches_it(alt):
    seq, eps = (1, 3, 4), 0.7
    keeps = [rr.keep_probabilities([3], eps)[0]] * 3
    law = exact_output_law(seq, alt, keeps)
    assert sum(law.values()) == pytest.approx(1.0)
    k = keeps[0]
    for out, p in law.items():
        kept = sum(o == v for o, v in zip(out, seq))
        assert p == pytest.approx(k ** kept * (1 - k) ** (3 - kept))
    n = 60_000
    rows = np.tile(np.array([0, 0, *seq]), (n, 1))                # front padding stays padding
    out = rr.perturb(rows, alt, eps, np.random.default_rng(5))
    assert (out[:, :2] == 0).all()
    counts = Counter(map(tuple, out[:, 2:].tolist()))
    assert set(counts) <= set(law)
    keys = sorted(law)
    res = stats.chisquare([counts.get(o, 0) for o in keys], [law[o] * n for o in keys])
    assert res.pvalue > 1e-6


def test_rows_of_different_lengths_use_their_own_keep_probability():
    n = 40_000
    base = np.array([[0, 0, 0, 1], [1, 2, 3, 4]])
    out = rr.perturb(np.repeat(base, n, axis=0), CYCLE4, 1.0, np.random.default_rng(8))
    short, long_ = out[:n], out[n:]
    for block, n_items in ((short[:, 3:], 1), (long_, 4)):
        kept = int((block == base[1 if n_items == 4 else 0][-n_items:]).sum())
        total = block.size
        k = rr.keep_probabilities([n_items], 1.0)[0]
        assert stats.binomtest(kept, total, k).pvalue > 1e-6


@pytest.mark.parametrize("alt", [CYCLE4, PAIRS4])
@pytest.mark.parametrize("eps", [0.3, 1.0, 4.0])
def test_posterior_odds_never_exceed_the_bound_and_reach_it(alt, eps):
    n, m = 3, 4
    keeps = [rr.keep_probabilities([n], eps)[0]] * n
    assert keeps[0] >= 0.5
    exact = max_posterior_odds(all_outputs(m, n), alt, keeps, m)
    g = rr.guarantee(eps, alt, lengths=[n])
    assert g.valid and g.claimed is None
    assert exact <= g.epsilon * (1 + 1e-9)
    assert exact == pytest.approx(eps, rel=1e-9) and g.epsilon == pytest.approx(eps, rel=1e-12)


def test_counterexample_keep_below_half_breaks_the_paper_bound():
    """n = 3, eps = 0.05: keep 0.362 < 1/2; guessing 'all replaced' has odds 0.350 > 0.05."""
    n, m, eps = 3, 4, 0.05
    k = rr.keep_probabilities([n], eps)[0]
    assert k < 0.5
    exact = max_posterior_odds(all_outputs(m, n), CYCLE4, [k] * n, m)
    assert exact == pytest.approx((1 - k) ** 3 / (1 - (1 - k) ** 3))
    assert exact > 6.9 * eps
    with pytest.raises(ParameterError, match="keep probability is 0.36"):
        rr.guarantee(eps, CYCLE4, lengths=[n])
    g = rr.guarantee(eps, CYCLE4, lengths=[n], allow_invalid=True)
    assert not g.valid and "< 1/2" in g.validity
    assert g.epsilon == pytest.approx(exact, rel=1e-12)
    assert g.claimed.epsilon == eps and "Theorem 3.1" in g.claimed.source
    with pytest.raises(ParameterError, match="outside Theorem 3.1"):
        rr.perturb(np.array([[1, 2, 3]]), CYCLE4, eps, np.random.default_rng(0))
    rr.perturb(np.array([[1, 2, 3]]), CYCLE4, eps, np.random.default_rng(0), allow_invalid=True)


def test_data_free_worst_case_over_lengths_is_the_shortest_history_when_invalid():
    eps = 0.5                                     # n = 1: keep 1/3; the best guess "replaced" has odds 2
    with pytest.raises(ParameterError):
        rr.guarantee(eps, CYCLE4, max_len=20)
    g = rr.guarantee(eps, CYCLE4, max_len=20, allow_invalid=True)
    assert g.epsilon == pytest.approx(2.0) and g.parameters["worst_case_length"] == 1
    ok = rr.guarantee(eps, CYCLE4, max_len=20, min_len=2)       # keep >= 1/2 from n = 2 on
    assert ok.valid and ok.epsilon == pytest.approx(eps)


def test_non_injective_map_exact_worst_case_over_the_data():
    """NN-like map: 3 and 4 are nobody's alternative, so keeping them reveals them."""
    m, eps = 4, 1.0
    data = np.array([[0, 1, 2], [3, 1, 2], [2, 4, 3]])
    with pytest.raises(ParameterError, match="not injective"):
        rr.guarantee(eps, NN4, sequences=data)
    with pytest.raises(ParameterError, match="not injective"):
        rr.perturb(data, NN4, eps, np.random.default_rng(0))
    g = rr.guarantee(eps, NN4, sequences=data, allow_invalid=True)
    worst = 0.0
    for row in data:
        seq = [int(v) for v in row if v]
        keeps = [rr.keep_probabilities([len(seq)], eps)[0]] * len(seq)
        outs = exact_output_law(seq, NN4, keeps)
        worst = max(worst, max_posterior_odds(list(outs), NN4, keeps, m))
    assert g.epsilon == pytest.approx(worst, rel=1e-12)
    assert g.epsilon > eps and not g.valid and "not injective" in g.validity
    # the row [2, 4, 3]: outputs keeping 4 and 3 decode them with certainty
    assert rr.guarantee(eps, NN4, sequences=data[2:], allow_invalid=True).epsilon == pytest.approx(
        max_posterior_odds(list(exact_output_law([2, 4, 3], NN4, [0.5 ** (1 / 3)] * 3)), NN4, [0.5 ** (1 / 3)] * 3, m))
    # data-free: an output made of items outside the image is decoded exactly
    assert rr.guarantee(eps, NN4, max_len=3, allow_invalid=True).epsilon == math.inf
    assert max_posterior_odds([(3, 4, 3)], NN4, [0.8] * 3, m) == math.inf


@pytest.mark.parametrize("seed", range(6))
def test_reported_odds_equal_enumeration_for_random_maps_data_and_epsilons(seed):
    """Any map without fixed points (injective or not), keep above or below 1/2, both variants."""
    rng = np.random.default_rng(seed)
    m = 4
    alt = np.zeros(m + 1, dtype=np.int64)
    for v in range(1, m + 1):
        alt[v] = rng.choice([w for w in range(1, m + 1) if w != v])
    eps = float(rng.choice([0.05, 0.4, 1.0, 3.0]))
    data = np.zeros((3, 3), dtype=np.int64)
    for r in range(3):
        n = int(rng.integers(1, 4))
        data[r, 3 - n:] = rng.integers(1, m + 1, size=n)
    worst = 0.0
    for row in data:
        seq = [int(v) for v in row if v]
        keeps = [rr.keep_probabilities([len(seq)], eps)[0]] * len(seq)
        worst = max(worst, max_posterior_odds(list(exact_output_law(seq, alt, keeps)), alt, keeps, m))
    g = rr.guarantee(eps, alt, sequences=data, allow_invalid=True)
    assert g.epsilon == pytest.approx(worst, rel=1e-9)
    assert g.valid == (bool((np.bincount(alt[1:], minlength=m + 1)[1:] == 1).all())
                       and rr.keep_probabilities(rr.sequence_lengths(data), eps).min() >= 0.5)
    keep = rr.positional_keep_matrix(data, eps, p_outside=0.001, window_fraction=0.34, infeasible="uniform")
    worst = 0.0
    for row, krow in zip(data, keep):
        seq = [int(v) for v in row if v]
        keeps = [float(k) for v, k in zip(row, krow) if v]
        worst = max(worst, max_posterior_odds(list(exact_output_law(seq, alt, keeps)), alt, keeps, m))
    gp = rr.positional_guarantee(eps, alt, p_outside=0.001, window_fraction=0.34, infeasible="uniform",
                                 sequences=data, allow_invalid=True)
    assert gp.epsilon == pytest.approx(worst, rel=1e-9)


def test_distinct_item_prior_breaks_the_bound_even_for_an_injective_map():
    """Thm 3.1 is about the uniform prior on V^n; knowing items do not repeat is enough to beat it."""
    k = rr.keep_probabilities([2], 1.0)[0]
    odds = max_posterior_odds([(1, 2)], PAIRS4, [k, k], 4, distinct=True)
    assert odds == pytest.approx(k ** 2 / (1 - k) ** 2) and odds == pytest.approx(5.83, abs=0.01)
    assert max_posterior_odds([(1, 2)], CYCLE4, [k, k], 4, distinct=True) > 1.7
    assert max_posterior_odds(all_outputs(4, 2), PAIRS4, [k, k], 4) == pytest.approx(1.0)   # uniform prior: holds


# ------------------------------------------------------------------ per-item LDP
def test_per_item_ldp_is_finite_only_for_an_involution():
    n, eps = 10, 1.0
    k = rr.keep_probabilities([n], eps)[0]
    true_item = math.log(k / (1 - k))
    # enumeration: worst log ratio between inputs v and a(v) over outputs
    for alt, finite in ((PAIRS4, True), (CYCLE4, False)):
        worst = 0.0
        for v in range(1, 5):
            pa = exact_output_law([v], alt, [k])
            pb = exact_output_law([int(alt[v])], alt, [k])
            for o, p in pa.items():
                q = pb.get(o, 0.0)
                worst = max(worst, math.inf if q == 0 else math.log(p / q))
        assert (worst == pytest.approx(true_item)) if finite else worst == math.inf
    g = rr.guarantee(eps, PAIRS4, lengths=[n])
    item, user = g.related
    assert item.epsilon == pytest.approx(true_item, abs=2e-4) and item.epsilon >= true_item - 1e-12
    assert user.epsilon == pytest.approx(n * true_item, abs=1e-2)
    assert item.event is not None and item.relation == "replace_one"
    assert rr.guarantee(eps, CYCLE4, lengths=[n]).related[0].epsilon == math.inf


# ------------------------------------------------------------------ RQ2 variant
@pytest.mark.parametrize("n,eps,p1,dn", [(10, 1.0, 0.02, 2), (50, 10.0, 0.001, 10), (5, 0.5, 0.05, 1)])
def test_positional_keep_solves_the_papers_equation(n, eps, p1, dn):
    k_out, k_in = rr.positional_keep(n, eps, dn, p1)
    assert k_out == pytest.approx(1 - p1)
    p2 = 1 - k_in
    assert (1 - p1) ** (n - dn) == pytest.approx(eps * (1 - p2) ** (-dn) / (1 + eps), rel=1e-12)
    assert k_out ** (n - dn) * k_in ** dn == pytest.approx(eps / (1 + eps), rel=1e-12)
    assert p1 < p2


def test_positional_infeasible_parameters_are_refused_with_the_limit():
    # the paper's p1 = 0.1 at n = 145, eps = 0.1: p1 must be < 0.0164
    with pytest.raises(ParameterError, match=r"p_outside must be < .*0\.0164"):
        rr.positional_keep(145, 0.1, 29, 0.1)
    assert rr.positional_keep(145, 0.1, 145, 0.1)[1] == pytest.approx(rr.keep_probabilities([145], 0.1)[0])


def test_positional_matrix_windows_and_products():
    seqs = np.array([[0, 0, 0, 0, 0, 1, 2, 3, 4, 1],
                     [1, 2, 3, 4, 1, 2, 3, 4, 1, 2],
                     [0, 0, 0, 0, 0, 0, 0, 0, 0, 3]])
    eps = 1.0
    for pos, where in ((0.0, slice(5, 6)), (1.0, slice(9, 10))):
        keep = rr.positional_keep_matrix(seqs, eps, p_outside=0.01, window_fraction=0.2, window_position=pos)
        assert (keep[seqs == 0] == 1.0).all()
        for r in range(3):
            assert np.prod(keep[r][seqs[r] != 0]) == pytest.approx(eps / (1 + eps), rel=1e-12)
        k_out, k_in = rr.positional_keep(5, eps, 1, 0.01)
        np.testing.assert_allclose(keep[0, where], k_in)
        assert np.isclose(keep[0, 5:], k_out).sum() == 4
        row1 = np.isclose(keep[1], rr.positional_keep(10, eps, 2, 0.01)[1])
        assert row1.sum() == 2 and (np.flatnonzero(row1) == ([0, 1] if pos == 0 else [8, 9])).all()
        assert keep[2, 9] == pytest.approx(eps / (1 + eps))           # n = 1: window is the whole history
    with pytest.raises(ParameterError, match="infeasible='uniform'"):
        rr.positional_keep_matrix(seqs, eps, p_outside=0.2)
    keep = rr.positional_keep_matrix(seqs, eps, p_outside=0.2, infeasible="uniform")
    np.testing.assert_allclose(keep[1], rr.keep_probabilities([10], eps)[0])


def test_positional_sampler_and_guarantee():
    seq = np.array([0, 1, 2, 3, 4, 1])          # n = 5, dn = 1, window at the most recent item
    eps, p1 = 1.0, 0.05
    keep = rr.positional_keep_matrix(seq[None], eps, p_outside=p1, window_position=1.0)[0]
    law = exact_output_law(list(seq[1:]), CYCLE4, list(keep[1:]))
    n = 60_000
    out = rr.perturb_positional(np.tile(seq, (n, 1)), CYCLE4, eps, np.random.default_rng(21), p_outside=p1,
                                window_position=1.0)
    counts = Counter(map(tuple, out[:, 1:].tolist()))
    big = [o for o in law if law[o] * n >= 20]
    obs = [counts.get(o, 0) for o in big] + [n - sum(counts.get(o, 0) for o in big)]
    exp = [law[o] * n for o in big] + [n * (1 - sum(law[o] for o in big))]
    assert stats.chisquare(obs, exp).pvalue > 1e-6
    g = rr.positional_guarantee(eps, CYCLE4, p_outside=p1, window_position=1.0, sequences=seq[None])
    assert g.valid and g.epsilon == pytest.approx(eps, rel=1e-9)
    assert max_posterior_odds(list(law), CYCLE4, list(keep[1:]), 4) == pytest.approx(eps, rel=1e-9)
    gl = rr.positional_guarantee(eps, CYCLE4, p_outside=p1, max_len=40, min_len=2, infeasible="uniform")
    assert gl.epsilon == pytest.approx(eps, rel=1e-9) and gl.parameters["uniform_fallback_users"] > 0


def test_positional_window_probability_above_half_is_refused():
    # n = 6, eps = 0.3, dn = 1, p1 = 0.01: p2 = 1 - (0.3/1.3)/0.99^5 = 0.757 > 1/2
    with pytest.raises(ParameterError, match="< 1/2"):
        rr.perturb_positional(np.array([[1, 2, 3, 4, 1, 2]]), CYCLE4, 0.3, np.random.default_rng(0),
                              p_outside=0.01, window_fraction=0.1)
    g = rr.positional_guarantee(0.3, CYCLE4, p_outside=0.01, window_fraction=0.1,
                                sequences=np.array([[1, 2, 3, 4, 1, 2]]), allow_invalid=True)
    k_out, k_in = rr.positional_keep(6, 0.3, 1, 0.01)
    m_best = k_out ** 5 * (1 - k_in)
    assert g.epsilon == pytest.approx(m_best / (1 - m_best)) and g.epsilon > 0.3


# ------------------------------------------------------------------ behaviour of the sampler
def test_seeded_runs_repeat_and_shape_dtype_padding_are_kept():
    rng = np.random.default_rng(1)
    seqs = rng.integers(1, 5, size=(300, 12)).astype(np.int32)
    seqs[:, :4] = 0
    a = rr.perturb(seqs, CYCLE4, 2.0, np.random.default_rng(7))
    b = rr.perturb(seqs, CYCLE4, 2.0, np.random.default_rng(7))
    np.testing.assert_array_equal(a, b)
    assert a.dtype == np.int32 and a.shape == seqs.shape
    assert ((a == 0) == (seqs == 0)).all()
    assert ((a == seqs) | (a == CYCLE4[seqs])).all()
    assert not np.array_equal(a, rr.perturb(seqs, CYCLE4, 2.0, np.random.default_rng(8)))
    np.testing.assert_array_equal(seqs[:, :4], 0)                  # input untouched


def test_huge_epsilon_keeps_everything():
    seqs = np.array([[0, 3, 1], [2, 4, 1]])
    np.testing.assert_array_equal(rr.perturb(seqs, CYCLE4, 1e15, np.random.default_rng(0)), seqs)


@pytest.mark.parametrize("kwargs,needle", [
    ({"epsilon": 0.0}, "epsilon must be a positive"),
    ({"epsilon": -1.0}, "epsilon must be a positive"),
    ({"epsilon": float("nan")}, "epsilon must be a positive"),
    ({"sequences": np.array([[0, 1, 5]])}, "covers item codes 1..4 only"),
    ({"sequences": np.array([[0, -1, 2]])}, "outside [0, 4]"),
    ({"sequences": np.array([1, 2, 3])}, "2-D"),
    ({"sequences": np.zeros((0, 3), dtype=int)}, "empty"),
    ({"sequences": np.array([[0.5, 1, 2]])}, "integer item ids"),
    ({"alt_map": np.array([0, 2, 3, 1]), "sequences": np.array([[0, 1, 4]])}, "covers item codes 1..3 only"),
    ({"alt_map": np.array([0, 2, 3, 3, 1])}, "maps item 3 to itself"),
    ({"alt_map": np.array([1, 2, 3, 4, 1])}, "[0] must be 0"),
    ({"alt_map": np.array([0, 2, 3, 4, 9])}, "not an item code in 1..4"),
    ({"alt_map": np.array([[0, 2], [1, 0]])}, "1-D"),
    ({"alt_map": np.array([0, 1])}, "length m + 1 >= 3"),
    ({"alt_map": np.array([0, 2.5, 1, 4, 3])}, "integer item codes"),
    ({"rng": 3}, "numpy.random.Generator"),
])
def test_bad_input_is_rejected(kwargs, needle):
    args = {"sequences": np.array([[0, 1, 2]]), "alt_map": CYCLE4, "epsilon": 1.0, "rng": np.random.default_rng(0)}
    args.update(kwargs)
    with pytest.raises(ParameterError, match=needle.replace("[", r"\[").replace("]", r"\]").replace("+", r"\+")):
        rr.perturb(**args)


@pytest.mark.parametrize("call,needle", [
    (lambda: rr.guarantee(1.0, CYCLE4), "exactly one of"),
    (lambda: rr.guarantee(1.0, CYCLE4, lengths=[2], max_len=3), "exactly one of"),
    (lambda: rr.guarantee(1.0, CYCLE4, lengths=[0, 0]), "all 0"),
    (lambda: rr.guarantee(1.0, CYCLE4, lengths=[-1]), ">= 0"),
    (lambda: rr.guarantee(1.0, CYCLE4, max_len=3, min_len=5), "exceeds"),
    (lambda: rr.guarantee(1.0, CYCLE4, sequences=np.zeros((2, 3), dtype=int)), "no item"),
    (lambda: rr.keep_probabilities([1.5], 1.0), "integers"),
    (lambda: rr.positional_keep(5, 1.0, 6, 0.01), "exceeds"),
    (lambda: rr.positional_keep(5, 1.0, 1, 1.0), "p_outside"),
    (lambda: rr.positional_keep_matrix(np.array([[1, 2]]), 1.0, window_fraction=0.0), "window_fraction"),
    (lambda: rr.positional_keep_matrix(np.array([[1, 2]]), 1.0, window_position=1.5), "window_position"),
    (lambda: rr.positional_keep_matrix(np.array([[1, 2]]), 1.0, infeasible="skip"), "infeasible"),
    (lambda: rr.audit_case(0.0), "epsilon"),
])
def test_bad_parameters_are_rejected(call, needle):
    with pytest.raises(ParameterError, match=needle):
        call()


def test_guarantee_reports_related_units_and_notes():
    g = rr.guarantee(1.0, PAIRS4, sequences=np.array([[0, 1, 2, 3], [1, 2, 3, 4]]))
    d = g.to_dict()
    assert d["definition"] == "Bayesian posterior-odds bound (uniform prior)"
    assert d["valid"] and d["parameters"]["map_injective"] and d["parameters"]["max_len"] == 4
    assert len(d["related"]) == 2 and "paper_claim" not in d
    assert any("{w} U a^-1(w)" in note for note in d["notes"])
    assert any("not a differential-privacy epsilon" in note for note in d["notes"])


# ------------------------------------------------------------------ audit
def test_audit_lower_bound_stays_below_the_per_item_epsilon():
    case = rr.audit_case(1.0, 10)
    assert {"name", "claimed_epsilon", "delta", "sample_a", "sample_b", "kind", "key_or_statistic"} <= set(case)
    k = rr.keep_probabilities([10], 1.0)[0]
    true_eps = math.log(k / (1 - k))
    assert case["claimed_epsilon"] == pytest.approx(true_eps, abs=2e-4)
    res = audit_discrete(case["name"], case["claimed_epsilon"], case["sample_a"], case["sample_b"],
                         case["key_or_statistic"], n=40_000, rng=np.random.default_rng(2024))
    assert not res.violates_claim and res.lower_bound <= true_eps
    assert res.lower_bound > 0.8 * true_eps


def test_keep_one_half_is_a_no_op_per_item():
    """n = 1, eps = 1: keep = 1/2, the output is independent of the input (was an accountant crash)."""
    item, user = rr.guarantee(1.0, PAIRS4, lengths=[1]).related
    assert item.epsilon == 0.0 and user.epsilon == 0.0


def test_positional_window_needing_p2_above_half_falls_back_to_uniform():
    # n = 42, eps = 1e-4, p1 = 0.1, dn = round(0.2 n) = 8: the equation gives p2 = 0.505 > 1/2, outside
    # RQ2's 0 < p1 < p2 < 1/2 and Thm 3.1; n = 43 (dn = 9) gives p2 = 0.465 and keeps its window.
    eps = 1e-4
    k_out, k_in = rr.positional_keep(42, eps, 8, 0.1)
    assert 1 - k_in > 0.5
    seqs = np.vstack([np.r_[0, np.arange(42) % 4 + 1], np.arange(43) % 4 + 1])
    assert rr.positional_keep_matrix(seqs, eps, p_outside=0.1, window_fraction=0.2)[0].min() < 0.5   # "error"
    keep = rr.positional_keep_matrix(seqs, eps, p_outside=0.1, window_fraction=0.2, infeasible="uniform")
    np.testing.assert_allclose(keep[0, 1:], rr.keep_probabilities([42], eps)[0])
    assert keep[1].min() >= 0.5 and np.isclose(keep[1], 0.9).sum() == 43 - 9
    assert rr.has_window([42, 43], eps, p_outside=0.1, window_fraction=0.2).tolist() == [False, True]
    g = rr.positional_guarantee(eps, CYCLE4, p_outside=0.1, window_fraction=0.2, infeasible="uniform", sequences=seqs)
    assert g.valid and g.parameters["uniform_fallback_users"] == 1
