"""PriCDR JLT / SJLT publishing: FWHT vs dense Hadamard, fast paths vs the literal dense Alg. 1
(same draws: equal to rounding; different draws: same Gaussian law), the degenerate thin-SVD
lift, the paper's and Blocki et al.'s w, the exact privacy profile (against scipy quad,
dp-accounting, Monte Carlo on the worst-case pair), samplers, audit, validation, reproducibility."""

import math

import numpy as np
import pytest
import scipy.linalg
import scipy.sparse as sp
from scipy import stats

from privrec.errors import ParameterError
from privrec.privacy import accounting, jlt
from privrec.privacy.audit import audit_discrete, audit_threshold
from privrec.privacy.fwht import fwht, next_pow2, pad_to_pow2
from reference import jlt as ref

ALPHA = 1e-6


def ratings(m, n, density=0.5, seed=0):
    r = sp.random(m, n, density=density, random_state=seed, format="csr")
    r.data = np.ceil(r.data * 5)                      # 1..5 stars
    return r


def cov_lr_pvalue(y: np.ndarray, sigma0: np.ndarray) -> float:
    """Likelihood-ratio test of H0: rows of y ~ N(0, sigma0) (known zero mean), chi^2 with p(p+1)/2 df."""
    n, p = y.shape
    a = np.linalg.solve(sigma0, y.T @ y / n)
    stat = n * (np.trace(a) - np.linalg.slogdet(a)[1] - p)
    return float(stats.chi2.sf(stat, p * (p + 1) / 2))


# ---------------------------------------------------------------------------------------------- FWHT

@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 13, 64, 100, 256])
def test_fwht_matches_dense_hadamard_with_padding(n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal((5, n))
    big_n = next_pow2(n)
    h = scipy.linalg.hadamard(big_n) / math.sqrt(big_n)
    xp = pad_to_pow2(x)
    assert xp.shape == (5, big_n) and np.array_equal(xp[:, :n], x) and not xp[:, n:].any()
    np.testing.assert_allclose(fwht(xp), xp @ h, atol=1e-12)
    np.testing.assert_allclose(fwht(xp), x @ h[:n, :], atol=1e-12)         # padding = first n rows of H
    np.testing.assert_allclose(fwht(fwht(xp)), xp, atol=1e-12)             # H H = I
    np.testing.assert_allclose(fwht(xp, normalize=False), xp @ scipy.linalg.hadamard(big_n), atol=1e-9)


def test_fwht_dtypes_inplace_sparse_padding_and_errors():
    x = np.arange(8, dtype=np.float32)
    y = fwht(x)
    assert y.dtype == np.float32 and np.array_equal(x, np.arange(8, dtype=np.float32))
    np.testing.assert_allclose(y, x @ (scipy.linalg.hadamard(8) / math.sqrt(8)), rtol=1e-6, atol=1e-6)  # float32: exact zeros vs ±2e-16
    z = np.arange(16, dtype=np.float64).reshape(2, 8)
    assert fwht(z, inplace=True) is z
    np.testing.assert_allclose(fwht(np.arange(4)), fwht(np.arange(4.0)), atol=1e-12)            # ints -> float64
    s = sp.csr_matrix(np.array([[0, 2.0, 0], [1.0, 0, 3.0]]))
    np.testing.assert_array_equal(pad_to_pow2(s), [[0, 2, 0, 0], [1, 0, 3, 0]])
    with pytest.raises(ParameterError, match="power-of-two"):
        fwht(np.ones((2, 6)))
    with pytest.raises(ParameterError, match="1-D or 2-D"):
        fwht(np.ones((2, 2, 2)))


# --------------------------------------------------------------------------- fast path == literal algorithm

@pytest.mark.parametrize("center", [True, False])
@pytest.mark.parametrize("dense_input", [True, False])
def test_jlt_fast_path_equals_literal_full_lift_with_the_same_draws(center, dense_input):
    r = ratings(9, 6, seed=1)                                 # users > items
    inp = r.toarray() if dense_input else r
    out, g = jlt.publish_jlt(inp, 2.0, np.random.default_rng(5), n_prime=4, calibration="tight",
                             center=center, max_change=5.0, delta=1e-3)
    w_abs = g.parameters["w"] * 5.0
    m_full = np.random.default_rng(5).standard_normal((4, 6 + 9))      # the one draw publish_jlt makes
    lit = ref.literal_jlt(r, w_abs, m_full, lift="full", center=center)
    assert out.shape == (9, 4) and out.dtype == np.float32
    np.testing.assert_allclose(out, lit, rtol=2e-6, atol=2e-6 * np.abs(lit).max())


@pytest.mark.parametrize("center", [True, False])
@pytest.mark.parametrize("q", [0.3, 1.0])
def test_sjlt_fast_path_equals_literal_dense_h_with_the_same_p_and_d(center, q):
    r = ratings(7, 11, seed=2)                                # item axis padded 11 -> 16
    out, g = jlt.publish_sjlt(r, 3.0, np.random.default_rng(9), n_prime=5, q=q, calibration="tight",
                              center=center, delta=1e-3)
    rng = np.random.default_rng(9)
    signs, p = jlt.draw_sjlt(rng, 16, 5, q)
    noise = rng.standard_normal((7, 5))
    lit = ref.literal_sjlt(r, g.parameters["w"], signs, p, noise, lift="full", center=center)
    np.testing.assert_allclose(out, lit, rtol=2e-6, atol=2e-6 * np.abs(lit).max())
    # the paper's SJLT (thin-SVD lift, no Gaussian term), reproduced only on request
    out_svd, g_svd = jlt.publish_sjlt(r, 3.0, np.random.default_rng(9), n_prime=5, q=q, center=center,
                                      delta=1e-3, lift="svd", allow_invalid=True)
    lit_svd = ref.literal_sjlt(r, g_svd.parameters["w"], signs, p, None, lift="svd", center=center)
    np.testing.assert_allclose(out_svd, lit_svd, rtol=1e-5, atol=1e-5 * np.abs(lit_svd).max())
    assert (g_svd.epsilon == math.inf) == (q < 1.0)            # q = 1 and users <= items: P H D is Gaussian


def test_sjlt_transform_matches_dense_p_h_d_for_sparse_and_dense_products():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((6, 32))
    for q in (0.02, 0.5):
        signs, p = jlt.draw_sjlt(rng, 32, 9, q)
        np.testing.assert_allclose(jlt.sjlt_transform(x.copy(), signs, p), x @ ref.dense_sjlt_matrix(signs, p).T,
                                   atol=1e-12)


# ------------------------------------------------------------------------------- lifts and their laws

def test_full_lift_gram_and_thin_svd_lift_gram():
    x = ref.centred(ratings(6, 4, seed=3))
    w = 1.7
    np.testing.assert_allclose(ref.full_lift(x, w) @ ref.full_lift(x, w).T, x @ x.T + w ** 2 * np.eye(6), atol=1e-12)
    thin = ref.svd_lift(x, w)                                    # users > items: rank-deficient
    assert np.linalg.matrix_rank(thin @ thin.T) == 4
    y = ref.centred(ratings(3, 5, seed=3))                       # users <= items: the two lifts agree
    np.testing.assert_allclose(ref.svd_lift(y, w) @ ref.svd_lift(y, w).T, y @ y.T + w ** 2 * np.eye(3), atol=1e-10)


def test_fast_jlt_has_the_law_of_the_literal_lifted_algorithm():
    """Columns are i.i.d. N(0, (R_c R_c^T + w^2 I)/n'); one call with many columns gives a sample."""
    w, k = 0.8, 20000
    r = ratings(3, 2, density=0.9, seed=6)                     # users > items: full lift needed
    x = ref.centred(r)
    sigma0 = x @ x.T + w ** 2 * np.eye(3)
    fast = jlt.jlt_project(r, np.random.default_rng(1).standard_normal((k, 5)), w, True) * math.sqrt(k)
    assert cov_lr_pvalue(fast.T, sigma0) > ALPHA
    lit = ref.literal_jlt(r, w, np.random.default_rng(2).standard_normal((k, 5)), lift="full") * math.sqrt(k)
    assert cov_lr_pvalue(lit.T, sigma0) > ALPHA
    # the literal thin-SVD lift does not have this law here (the test has power) ...
    thin = ref.literal_jlt(r, w, np.random.default_rng(3).standard_normal((k, 2)), lift="svd") * math.sqrt(k)
    assert cov_lr_pvalue(thin.T + 1e-9 * np.random.default_rng(0).standard_normal(thin.T.shape), sigma0) < ALPHA
    # ... but with users <= items it does
    r2 = ratings(3, 5, density=0.6, seed=7)
    x2 = ref.centred(r2)
    sigma2 = x2 @ x2.T + w ** 2 * np.eye(3)
    thin2 = ref.literal_jlt(r2, w, np.random.default_rng(4).standard_normal((k, 5)), lift="svd") * math.sqrt(k)
    assert cov_lr_pvalue(thin2.T, sigma2) > ALPHA
    fast2 = jlt.jlt_project(r2, np.random.default_rng(5).standard_normal((k, 8)), w, True) * math.sqrt(k)
    assert cov_lr_pvalue(fast2.T, sigma2) > ALPHA


def test_literal_svd_lift_outputs_lie_in_the_data_dependent_column_space():
    """Users > items: every output of Alg. 1 as printed lies in col(R_c); a neighbour's does not."""
    r = ratings(6, 3, density=0.7, seed=8)
    r2 = r.tolil()
    r2[4, 1] = r2[4, 1] + 0.5                                  # one rating changed by 0.5 < 1 (Def. 3.2)
    r2 = r2.tocsr()
    basis = np.linalg.svd(ref.centred(r), full_matrices=False)[0]
    resid = lambda y: np.linalg.norm(y - basis @ (basis.T @ y)) / np.linalg.norm(y)
    m_draw = np.random.default_rng(0).standard_normal((50, 3))
    assert resid(ref.literal_jlt(r, 2.0, m_draw, lift="svd")) < 1e-12
    assert resid(ref.literal_jlt(r2, 2.0, m_draw, lift="svd")) > 1e-3
    g = jlt.guarantee(method="jlt", w=2.0, delta=1e-3, n_prime=50, n_users=6, n_items=3, lift="svd")
    assert g.epsilon == math.inf and not g.valid and "column space" in g.validity
    with pytest.raises(ParameterError, match="non-private"):
        jlt.publish_jlt(r, 1.0, np.random.default_rng(0), n_prime=5, lift="svd")
    out, g2 = jlt.publish_jlt(r, 1.0, np.random.default_rng(0), n_prime=5, lift="svd", allow_invalid=True)
    assert g2.epsilon == math.inf
    y = out.astype(np.float64)
    assert resid(y) < 1e-5                                     # float32 output, still in col(R_c)
    # users <= items: the thin-SVD lift is private with the same guarantee as the full lift
    g3 = jlt.guarantee(method="jlt", w=2.0, delta=1e-3, n_prime=50, n_users=3, n_items=6, lift="svd")
    g4 = jlt.guarantee(method="jlt", w=2.0, delta=1e-3, n_prime=50, n_users=3, n_items=6, lift="full")
    assert g3.valid and g3.epsilon == g4.epsilon < math.inf


# --------------------------------------------------------------------------------- calibration formulas

def test_paper_and_blocki_w_formulas():
    n, d = 500, 1 / 6040
    assert jlt.paper_w(1.0, d, n) == pytest.approx(6323.879882847, rel=1e-9)
    assert jlt.blocki_w(1.0, d, n) == pytest.approx(19407.17, rel=1e-5)
    eps0, d0 = jlt.per_column_budget(1.0, d, n)
    assert eps0 == pytest.approx(1 / math.sqrt(4 * n * math.log(2 / d))) and d0 == pytest.approx(d / (2 * n))
    assert jlt.paper_w(1.0, d, n) == pytest.approx(2 * math.sqrt(2) * math.log(2 / d0) / eps0)
    assert jlt.blocki_w(1.0, d, n) == pytest.approx(8 * math.log(8 / d0) / eps0)
    assert jlt.blocki_w(1, d, n) / jlt.paper_w(1, d, n) == pytest.approx(3.0689, abs=1e-4)
    assert jlt.blocki_epsilon_for_w(jlt.paper_w(1.0, d, n), d, n) == pytest.approx(3.0689, abs=1e-4)
    assert jlt.paper_epsilon_for_w(jlt.paper_w(2.5, d, n), d, n) == pytest.approx(2.5)
    assert jlt.n_prime_from(0.1, 0.5) == 96 == math.ceil(8 * math.log(20) / 0.25)
    assert jlt.resolve_n_prime(n_prime=7) == 7 and jlt.resolve_n_prime(mu=0.1, eta=0.5) == 96
    # Thm B.1 with the paper's split: fine at eps = 1, fails at the paper's eps = 32
    for eps, ok in ((1.0, True), (32.0, False)):
        e0, dd0 = jlt.per_column_budget(eps, d, n)
        total, dtot = jlt.advanced_composition(e0, dd0, n, d / 2)
        assert (total <= eps) is ok and dtot == pytest.approx(d)


# -------------------------------------------------------------------------------- the exact profile

@pytest.mark.parametrize("z,n,eps", [(1.0, 1, 0.0), (1.0, 1, 2.0), (5.0, 8, 0.3), (40.0, 500, 0.05),
                                     (300.0, 500, 0.01), (3.0, 2000, 1.0)])
def test_profile_quadrature_matches_adaptive_quad(z, n, eps):
    assert jlt.jlt_delta(eps, z, n) == pytest.approx(jlt.jlt_delta_quad(eps, z, n), rel=1e-7, abs=1e-15)


@pytest.mark.parametrize("z,eps", [(0.8, 0.5), (2.0, 1.0), (5.0, 0.2)])
def test_analytic_gaussian_profile_matches_dp_accounting(z, eps):
    exact = jlt.gaussian_delta(eps, 1.0 / z)
    acc = accounting.delta(accounting.gaussian_event(z), eps)
    assert exact <= acc + 1e-9 and acc == pytest.approx(exact, rel=5e-3)


@pytest.mark.parametrize("z,n", [(3.0, 1), (10.0, 50), (80.0, 500), (6323.9, 500)])
def test_exact_epsilon_is_below_rdp_and_accountant_tail_split(z, n):
    d = 1e-4
    exact = jlt.jlt_epsilon(z, d, n)
    assert exact <= jlt.jlt_epsilon_rdp(z, d, n) + 1e-9
    # tail split: S <= chi2.isf(d/2) w.p. 1 - d/2, then one Gaussian of multiplier z/sqrt(s) at delta d/2
    s = stats.chi2.isf(d / 2, n)
    split, _ = accounting.epsilon(accounting.gaussian_event(z / math.sqrt(s)), d / 2)
    assert exact <= split + 1e-6
    assert jlt.jlt_delta(exact, z, n) == pytest.approx(d, rel=1e-6) or exact == 0.0


def test_exact_profile_is_attained_by_the_worst_case_pair():
    """R = [[A,0],[0,0]] vs R' = [[A,0],[1,0]] (no centring): outputs are exactly Gaussian with known
    covariances; Monte Carlo of E_P[(1 - e^(eps - L))_+] approaches the formula as A grows, never above."""
    w, k, eps, n_mc = 1.5, 4, 0.4, 200_000
    rng = np.random.default_rng(123)
    formula = jlt.jlt_delta(eps, w, k)
    for amp, tight in ((1e4, True), (2.0, False), (0.0, False)):
        s_a = np.array([[amp ** 2 + w ** 2, 0.0], [0.0, w ** 2]])
        s_b = np.array([[amp ** 2 + w ** 2, amp], [amp, 1.0 + w ** 2]])
        for s_from, s_to in ((s_a, s_b), (s_b, s_a)):
            y = rng.standard_normal((n_mc, k, 2)) @ np.linalg.cholesky(s_from).T
            def logpdf(s):
                return -0.5 * np.einsum("nki,ij,nkj->n", y, np.linalg.inv(s), y) - 0.5 * k * np.linalg.slogdet(s)[1]
            loss = logpdf(s_from) - logpdf(s_to)
            vals = np.maximum(0.0, 1.0 - np.exp(eps - loss))
            est, se = vals.mean(), vals.std() / math.sqrt(n_mc)
            assert est <= formula + 5 * se
            if tight:
                assert est == pytest.approx(formula, abs=5 * se)
            else:
                assert est < 0.8 * formula


def test_tight_calibration_meets_the_target_and_needs_far_less_noise():
    d, n = 1 / 6040, 500
    w = jlt.calibrate_w(1.0, d, n, "tight", n_items=2000)
    kappa = math.sqrt(1 - 1 / 2000)
    assert jlt.jlt_epsilon(w / kappa, d, n) == pytest.approx(1.0, rel=1e-6)
    assert jlt.jlt_epsilon(0.97 * w / kappa, d, n) > 1.0
    assert 60 < jlt.paper_w(1.0, d, n) / w < 120
    ws = jlt.calibrate_w(1.0, d, 50, "tight", method="sjlt", q=0.25, n_total=256, coherence=1.3)
    assert jlt.sjlt_epsilon(ws / math.sqrt(1.3), d, 50, 0.25, 256) <= 1.0 + 1e-6


def test_sjlt_rdp_reduces_to_jlt_at_q_one_and_coherence():
    orders = np.array([1.5, 2.0, 8.0, 64.0])
    np.testing.assert_allclose(jlt.sjlt_rdp(orders, 30.0, 20, 1.0, 64), jlt.jlt_rdp(orders, 30.0, 20))
    assert jlt.sjlt_epsilon(30.0, 1e-5, 20, 0.05, 64) > jlt.sjlt_epsilon(30.0, 1e-5, 20, 1.0, 64)
    # coherence with centring equals the brute-force max over items j and coordinates i
    rng = np.random.default_rng(3)
    n1, big_n = 11, 16
    signs = rng.integers(0, 2, big_n) * 2.0 - 1.0
    h = scipy.linalg.hadamard(big_n) / math.sqrt(big_n)
    worst = 0.0
    for j in range(n1):
        c = np.zeros(big_n)
        c[:n1] = -1.0 / n1
        c[j] += 1.0
        worst = max(worst, big_n * float(np.max((h @ (signs * c)) ** 2)))
    zeta = jlt.sjlt_coherence(signs, n1, True)
    assert worst <= zeta + 1e-12 and 1.0 <= zeta <= 4.0
    assert jlt.sjlt_coherence(signs, n1, False) == 1.0


# ---------------------------------------------------------------------------------------- samplers

def test_sjlt_draw_goodness_of_fit():
    n_total, k, q = 256, 400, 0.2
    signs, p = jlt.draw_sjlt(np.random.default_rng(77), n_total, k, q)
    assert set(np.unique(signs)) == {-1.0, 1.0}
    assert stats.binomtest(int((signs > 0).sum()), n_total, 0.5).pvalue > ALPHA
    assert stats.binomtest(p.nnz, n_total * k, q).pvalue > ALPHA
    assert stats.kstest(p.data * math.sqrt(q), "norm").pvalue > ALPHA
    per_row = np.diff(p.indptr)                                  # |S_k| ~ Bin(N, q)
    counts = np.bincount(per_row, minlength=n_total + 1)
    expect = stats.binom.pmf(np.arange(n_total + 1), n_total, q) * k
    lo, hi = int(stats.binom.ppf(0.01, n_total, q)), int(stats.binom.ppf(0.99, n_total, q))
    obs = [counts[:lo].sum(), *counts[lo:hi + 1], counts[hi + 1:].sum()]
    exp = [expect[:lo].sum(), *expect[lo:hi + 1], expect[hi + 1:].sum()]
    merged_o, merged_e, acc_o, acc_e = [], [], 0.0, 0.0
    for o, e in zip(obs, exp):                                   # pool cells to >= 5 expected
        acc_o, acc_e = acc_o + o, acc_e + e
        if acc_e >= 5:
            merged_o.append(acc_o), merged_e.append(acc_e)
            acc_o = acc_e = 0.0
    merged_o[-1] += acc_o
    merged_e[-1] += acc_e
    merged_e = np.array(merged_e) * sum(merged_o) / sum(merged_e)
    assert stats.chisquare(merged_o, merged_e).pvalue > ALPHA


def test_gaussian_draws_of_the_fast_jlt_are_standard_normal():
    """With R = 0 and no centring the output is w G / sqrt(n'): check G ~ N(0, 1) (KS) and independence (LR)."""
    k = 3000
    out = jlt.jlt_project(sp.csr_matrix((4, 3)), np.random.default_rng(8).standard_normal((k, 7)), 2.0, False)
    g = out * math.sqrt(k) / 2.0
    assert stats.kstest(g.ravel(), "norm").pvalue > ALPHA
    assert cov_lr_pvalue(g.T, np.eye(4)) > ALPHA


# -------------------------------------------------------------------------------- guarantees, audit

def test_guarantee_on_ml1m_shape_reports_claim_and_routes():
    d, n = 1 / 6040, 500
    g = jlt.guarantee(method="jlt", w=jlt.paper_w(1.0, d, n), delta=d, n_prime=n, n_users=6040, n_items=2000,
                      epsilon=1.0)
    assert g.valid and g.epsilon == pytest.approx(0.0045558, rel=1e-3)
    assert g.claimed.epsilon == pytest.approx(1.0) and "3.07x below Blocki" in g.claimed.reason
    rel = {r.definition: r for r in g.related}
    blocki = rel["(epsilon, delta)-DP by Blocki et al.'s theorem (their w inverted)"]
    assert blocki.epsilon == pytest.approx(3.0689 * math.sqrt(1 - 1 / 2000), rel=1e-4) and blocki.valid
    col = rel["(epsilon, delta)-DP of one output column (the paper's 'user-level' unit)"]
    assert col.delta == pytest.approx(d / (2 * n)) and col.epsilon < col.parameters["paper_eps0"]
    user = rel["(epsilon, delta)-DP per user row (group)"]
    assert g.epsilon < user.epsilon < 1.0
    g32 = jlt.guarantee(method="jlt", w=jlt.paper_w(32.0, d, n), delta=d, n_prime=n, n_users=6040, n_items=2000,
                        epsilon=32.0)
    assert "Thm B.1 composition" in g32.claimed.reason and g32.epsilon < 1.0
    d_json = g.to_dict()
    assert d_json["paper_claim"]["epsilon"] == 1.0 and d_json["parameters"]["n_prime"] == 500


def test_sjlt_guarantees_honest_variant_finite_paper_variant_infinite():
    r = ratings(30, 20, seed=11)
    out, g = jlt.publish_sjlt(r, 1.0, np.random.default_rng(0), n_prime=10, q=0.25, calibration="tight")
    assert out.shape == (30, 10) and out.dtype == np.float32 and g.valid and 0.9 < g.epsilon <= 1.0 + 1e-6
    assert g.parameters["n_padded"] == 32 and g.parameters["coherence"] >= 1.0
    with pytest.raises(ParameterError, match="non-private"):
        jlt.publish_sjlt(r, 1.0, np.random.default_rng(0), n_prime=10, q=0.25, lift="svd")
    gp = jlt.guarantee(method="sjlt", w=10.0, delta=1e-3, n_prime=10, n_users=5, n_items=20, lift="svd", q=0.25)
    assert gp.epsilon == math.inf and "support" in gp.validity and "same procedure" in gp.claimed.reason
    gq1 = jlt.guarantee(method="sjlt", w=10.0, delta=1e-3, n_prime=10, n_users=5, n_items=20, lift="svd", q=1.0)
    assert gq1.epsilon < math.inf                              # q = 1, users <= items: P H D is Gaussian


def test_audit_lower_bounds_stay_below_the_true_epsilon_and_flag_the_literal_lift():
    for mech in ("jlt", "sjlt"):
        case = jlt.audit_case(mech, epsilon=1.0, delta=1e-5, n_prime=8)
        res = audit_threshold(case["name"], case["claimed_epsilon"], case["sample_a"], case["sample_b"],
                              case["key_or_statistic"], n=40_000, rng=np.random.default_rng(2), delta=case["delta"])
        assert not res.violates_claim and res.lower_bound <= case["true_epsilon"]
        assert res.lower_bound > 0.1                           # the pair is distinguishing
    case = jlt.audit_case("jlt-svd", epsilon=1.0, delta=1e-5, n_prime=8)
    res = audit_discrete(case["name"], case["claimed_epsilon"], case["sample_a"], case["sample_b"],
                         case["key_or_statistic"], n=20_000, rng=np.random.default_rng(3), delta=case["delta"])
    assert case["true_epsilon"] == math.inf and res.violates_claim and res.lower_bound > 5.0


# --------------------------------------------------------------------------- reproducibility, validation

def test_same_seed_same_output_other_seed_other_output():
    r = ratings(20, 13, seed=12)
    for pub, kw in ((jlt.publish_jlt, {}), (jlt.publish_sjlt, {"q": 0.4})):
        a, ga = pub(r, 1.0, np.random.default_rng(7), n_prime=6, **kw)
        b, gb = pub(r, 1.0, np.random.default_rng(7), n_prime=6, **kw)
        c, _ = pub(r, 1.0, np.random.default_rng(8), n_prime=6, **kw)
        np.testing.assert_array_equal(a, b)
        assert ga.epsilon == gb.epsilon and not np.array_equal(a, c)
    assert ga.delta == pytest.approx(1 / 20)                   # default delta = 1/#users


def test_mu_eta_path_and_max_change_scale():
    r = ratings(10, 8, seed=13)
    out, g = jlt.publish_jlt(r, 1.0, np.random.default_rng(0), mu=0.5, eta=2.0)
    assert out.shape == (10, jlt.n_prime_from(0.5, 2.0)) == (10, 3)
    _, g5 = jlt.publish_jlt(r, 1.0, np.random.default_rng(0), n_prime=3, max_change=5.0)
    assert g5.parameters["noise_std"] == pytest.approx(5 * g5.parameters["w"]) and g5.epsilon == g.epsilon
    assert "at most 5" in g5.unit


R_OK = sp.csr_matrix(np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0], [4.0, 0.0, 5.0]]))


@pytest.mark.parametrize("kwargs,needle", [
    ({"epsilon": 0.0}, "epsilon must be a positive"),
    ({"epsilon": float("nan")}, "epsilon must be a positive"),
    ({"delta": 1.0}, "delta must lie strictly between 0 and 1"),
    ({"delta": 0.0}, "delta must lie strictly between 0 and 1"),
    ({"n_prime": 0}, "n_prime must be a positive integer"),
    ({"n_prime": 2.5}, "n_prime must be a positive integer"),
    ({"n_prime": None}, "give the output width n_prime"),
    ({"mu": 0.1, "eta": 0.5}, "either n_prime or"),
    ({"n_prime": None, "mu": 1.5, "eta": 0.5}, "mu must be a probability"),
    ({"n_prime": None, "mu": 0.1, "eta": -1.0}, "eta must be a positive"),
    ({"ratings": np.array([[1.0, np.nan], [0.0, 1.0]])}, "NaN or infinity at index (0, 1)"),
    ({"ratings": sp.csr_matrix(np.array([[1.0, np.inf], [0.0, 1.0]]))}, "NaN or infinity"),
    ({"ratings": np.zeros((0, 3))}, "empty"),
    ({"ratings": sp.csr_matrix((3, 0))}, "empty"),
    ({"ratings": np.ones(3)}, "2-D"),
    ({"ratings": np.array([["a", "b"]])}, "numeric"),
    ({"ratings": np.ones((1, 4))}, "pass delta explicitly"),
    ({"rng": 3}, "numpy.random.Generator"),
    ({"calibration": "fast"}, "calibration must be one of"),
    ({"lift": "thin"}, "lift must be one of"),
    ({"max_change": 0.0}, "max_change must be a positive"),
])
def test_bad_input_is_rejected(kwargs, needle):
    args = {"ratings": R_OK, "epsilon": 1.0, "rng": np.random.default_rng(0), "n_prime": 2}
    args.update(kwargs)
    with pytest.raises(ParameterError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        jlt.publish_jlt(**args)


@pytest.mark.parametrize("q", [0.0, -0.1, 1.5, float("nan")])
def test_bad_sparsity_is_rejected(q):
    with pytest.raises(ParameterError, match="q must be a probability"):
        jlt.publish_sjlt(R_OK, 1.0, np.random.default_rng(0), n_prime=2, q=q)


def test_negative_renyi_divergence_is_refused_on_every_call_not_only_the_first():
    """dp-accounting only logs a warning and returns eps = 0 for a negative RDP; privrec raises, and a
    second call raises again (an exception is never cached by sjlt_epsilon's lru_cache)."""
    import numpy as np

    from privrec.privacy import jlt_accounting as J

    with pytest.raises(FloatingPointError, match="negative Renyi divergence"):
        J._rdp_epsilon(np.array([1e-3, -1e-12]), 1e-6)
    z = 1e6                                         # extreme noise: the RDP cancels to tiny negatives
    for _ in range(2):
        with pytest.raises(FloatingPointError, match="negative Renyi"):
            J.sjlt_epsilon(z, 1e-300, 1, 0.05, 360)
