"""PFCR federated gradient codec: exact output laws of paper mode (Eqs. 11-13, enumerated
literally) and of the calibrated codec, the likelihood-ratio formula and the LDP inequality over
all input pairs, sampler goodness of fit, decoder (un)biasedness, quantisation, FedAvg,
guarantees and composition, audit, validation, reproducibility."""

import itertools
import math

import dp_accounting
import numpy as np
import pytest
from scipy import stats

from privrec.errors import ParameterError
from privrec.privacy import accounting
from privrec.privacy import fedcodec as F
from privrec.privacy.audit import audit_discrete

ALPHA = 1e-6


# ------------------------------------------------------------------ literal references (paper text)
def paper_literal_distribution(q, eps, b):
    """Eqs. 11-13 enumerated literally: noise in {0..b-1} w.p. 1/b, c ~ Bernoulli(p) with
    p = (e^eps+1)/(e^eps+2); r = (q + noise) % b; r = (r - c noise) % b."""
    p = (math.exp(eps) + 1) / (math.exp(eps) + 2)
    dist = np.zeros(b)
    for noise in range(b):
        for c, pc in ((0, 1 - p), (1, p)):
            r = (q + noise) % b
            r = (r - c * noise) % b
            dist[r] += pc / b
    return dist


def paper_literal_decode(rs, ws, eps, b, tau):
    """Eqs. 15-18 one element at a time: E^c = p - q, g = sum_i r_i E^c w_i, g s - tau."""
    p = (math.exp(eps) + 1) / (math.exp(eps) + 2)
    q = 1 / (math.exp(eps) + 2)
    w = [m / sum(ws) for m in ws]
    s = 2 * tau / b
    out = []
    for j in range(len(rs[0])):
        g = sum(rs[i][j] * (p - q) * w[i] for i in range(len(rs)))
        out.append(g * s - tau)
    return np.array(out)


def chi2_pvalue(counts, probs):
    """Chi-square GOF, pooling cells with expected count < 5 into one."""
    counts, probs = np.asarray(counts, float), np.asarray(probs, float)
    exp = probs * counts.sum()
    small = exp < 5
    if small.any():
        counts = np.append(counts[~small], counts[small].sum())
        exp = np.append(exp[~small], exp[small].sum())
        keep = exp > 0
        counts, exp = counts[keep], exp[keep]
    return stats.chisquare(counts, exp).pvalue


def max_log_ratio(dists):
    worst = 0.0
    for da, db in itertools.permutations(dists, 2):
        worst = max(worst, float(np.max(np.log(da / db))))
    return worst


# ------------------------------------------------------------------ paper mode: exact law and true epsilon
@pytest.mark.parametrize("eps,b", [(0.1, 2), (0.5, 4), (0.5, 8), (0.9, 16), (2.0, 64)])
def test_paper_distribution_matches_literal_enumeration(eps, b):
    dists = []
    for q in range(b):
        lit = paper_literal_distribution(q, eps, b)
        np.testing.assert_allclose(F.paper_output_distribution(q, eps, b), lit, rtol=1e-12, atol=0)
        assert math.isclose(lit.sum(), 1.0, rel_tol=1e-12)
        dists.append(lit)
    # the true per-coordinate epsilon: max likelihood ratio over all input pairs and outputs
    true_eps = max_log_ratio(dists)
    assert math.isclose(true_eps, math.log(1 + b * (math.exp(eps) + 1)), rel_tol=1e-12)
    assert math.isclose(F.paper_true_epsilon(eps, b), true_eps, rel_tol=1e-12)
    assert true_eps > eps                                   # the paper's claim never holds


def test_paper_true_epsilon_pinned_numbers():
    assert F.paper_true_epsilon(0.5, 64) == pytest.approx(5.138841809, abs=1e-8)
    assert F.paper_true_epsilon(0.5, 1024) == pytest.approx(7.905917414, abs=1e-8)
    assert F.paper_true_epsilon(0.1, 64) == pytest.approx(math.log(1 + 64 * (math.exp(0.1) + 1)), rel=1e-14)
    # overflow-free for large epsilon: ~ eps + ln b
    assert F.paper_true_epsilon(800.0, 64) == pytest.approx(800 + math.log(64), rel=1e-12)


def test_paper_literal_eqs_match_encoder_draws():
    """encode_paper applies Eqs. 11-13 to the noise and flips it draws (same stream, same result)."""
    eps, b, tau = 0.7, 16, 1.0
    g = np.linspace(-1.3, 1.3, 101)
    r = F.encode_paper(g, eps, b, tau, np.random.default_rng(5))
    rng = np.random.default_rng(5)
    noise = rng.integers(0, b, size=g.shape)
    c = rng.random(g.shape) < (math.exp(eps) + 1) / (math.exp(eps) + 2)
    q = F.quantize(g, tau, b)
    expect = [((qi + n) % b - ci * n) % b for qi, n, ci in zip(q, noise, c.astype(int))]
    np.testing.assert_array_equal(r, expect)


@pytest.mark.parametrize("eps,b,q", [(0.5, 8, 3), (0.5, 64, 0), (0.9, 16, 15)])
def test_paper_sampler_goodness_of_fit(eps, b, q):
    n = 200_000
    tau = 1.0
    x = F.dequantize(q, tau, b)                               # a value whose bucket is q
    assert int(F.quantize(x, tau, b)) == q
    r = F.encode_paper(np.full(n, float(x)), eps, b, tau, np.random.default_rng(11 + q))
    counts = np.bincount(r, minlength=b)
    assert chi2_pvalue(counts, F.paper_output_distribution(q, eps, b)) > ALPHA


def test_paper_continuous_noise_reveals_kept_coordinates():
    eps, b, tau, n = 0.5, 64, 1.0, 20_000
    with pytest.raises(ParameterError, match="continuous"):
        F.encode_paper(np.zeros(n), eps, b, tau, np.random.default_rng(0), noise="continuous")
    r = F.encode_paper(np.full(n, 0.3), eps, b, tau, np.random.default_rng(0), noise="continuous",
                       allow_invalid=True)
    q = int(F.quantize(0.3, tau, b))
    near_int = np.abs(r - np.round(r)) < 1e-9
    assert np.all(np.round(r[near_int]) % b == q)             # every integer output is the true bucket
    p = (math.exp(eps) + 1) / (math.exp(eps) + 2)
    assert abs(near_int.mean() - p) < 6 * math.sqrt(p * (1 - p) / n)
    g = F.paper_guarantee(eps, b, noise="continuous")
    assert g.epsilon == math.inf and not g.valid and not g.is_private


# ------------------------------------------------------------------ paper decoder: literal and biased
def test_paper_decoder_matches_literal_eqs():
    rng = np.random.default_rng(3)
    eps, b, tau = 0.5, 64, 0.1
    rs = [rng.integers(0, b, size=7) for _ in range(3)]
    ws = [10, 30, 60]
    np.testing.assert_allclose(F.decode_paper(rs, eps, b, tau, weights=ws),
                               paper_literal_decode(rs, ws, eps, b, tau), rtol=1e-12, atol=1e-15)
    # one client: weights default to 1
    np.testing.assert_allclose(F.decode_paper(rs[0], eps, b, tau), paper_literal_decode(rs[:1], [1], eps, b, tau),
                               rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("eps,b", [(0.5, 64), (0.9, 1024), (0.1, 8)])
def test_paper_decoder_is_biased_exactly(eps, b):
    tau = 1.0
    for q in (0, b // 3, b - 1):
        dist = F.paper_output_distribution(q, eps, b)
        exact = float(dist @ F.decode_paper(np.arange(b), eps, b, tau))   # E over the exact law (decode is affine)
        assert math.isclose(exact, float(F.paper_decoder_expectation(q, eps, b, tau)), rel_tol=1e-10, abs_tol=1e-12)
        truth = float(F.dequantize(q, tau, b))
        assert abs(exact - truth) > 0.05 * tau                  # biased, by far more than a bucket width


def test_paper_decoder_bias_statistical():
    eps, b, tau, n = 0.5, 64, 1.0, 200_000
    x = 0.75
    q = int(F.quantize(x, tau, b))
    r = F.encode_paper(np.full(n, x), eps, b, tau, np.random.default_rng(8))
    dec = F.decode_paper(r, eps, b, tau)
    se = dec.std(ddof=1) / math.sqrt(n)
    expect = float(F.paper_decoder_expectation(q, eps, b, tau))
    assert abs(dec.mean() - expect) < 6 * se
    assert abs(dec.mean() - x) > 100 * se                      # nowhere near the true gradient


# ------------------------------------------------------------------ calibrated mode: exact law, LDP, unbiased
@pytest.mark.parametrize("eps,b", [(0.5, 2), (1.0, 3), (0.3, 5)])
def test_calibrated_exact_distribution_and_ldp(eps, b):
    tau = 2.0
    lv = F.levels(tau, b)
    assert math.isclose(lv.sum(), 0.0, abs_tol=1e-12) and lv[0] == -tau and math.isclose(lv[-1], tau)
    ea = math.exp(eps)
    xs = np.concatenate([lv, np.linspace(-tau * 1.2, tau * 1.2, 23)])
    dists = []
    for x in xs:
        d = F.calibrated_output_distribution(x, eps, b, tau)
        # literal: P(bucket) by stochastic rounding, then keep e^eps/(e^eps+b-1) else uniform over the others
        xc = min(max(x, -tau), tau)
        pin = np.array([max(0.0, 1 - abs(xc - lj) / (lv[1] - lv[0])) for lj in lv])
        lit = np.array([sum(pin[i] * (ea if i == j else 1) / (ea + b - 1) for i in range(b)) for j in range(b)])
        np.testing.assert_allclose(d, lit, rtol=1e-10, atol=1e-14)
        # unbiased decoder, exactly over the law: E[levels[out]/(a - beta)] = clamp(x)
        a, beta = F.calibrated_probabilities(eps, b)
        assert math.isclose(float(d @ (lv / (a - beta))), xc, rel_tol=1e-9, abs_tol=1e-9)
        np.testing.assert_allclose(d @ F.decode_calibrated(np.arange(b), eps, b, tau), xc, rtol=1e-9, atol=1e-9)
        dists.append(d)
    worst = max_log_ratio(dists)
    assert worst <= eps + 1e-12                                 # eps-LDP over all input pairs
    assert worst == pytest.approx(eps, abs=1e-12)               # attained (the two clip ends)


@pytest.mark.parametrize("eps,b,x", [(0.5, 4, 0.37), (1.0, 2, -0.8), (2.0, 8, 1.0)])
def test_calibrated_sampler_goodness_of_fit(eps, b, x):
    n, tau = 200_000, 1.0
    rep = F.encode_calibrated(np.full(n, x), eps, b, tau, np.random.default_rng(21), epsilon_per="coordinate")
    counts = np.bincount(rep.buckets, minlength=b)
    assert chi2_pvalue(counts, F.calibrated_output_distribution(x, eps, b, tau)) > ALPHA


def test_calibrated_decoder_unbiased_statistical():
    n, tau, eps, b = 200_000, 1.0, 1.0, 4
    for x in (-1.0, 0.123, 0.9):
        rep = F.encode_calibrated(np.full(n, x), eps, b, tau, np.random.default_rng(31), epsilon_per="coordinate")
        dec = F.decode_calibrated(rep)
        se = dec.std(ddof=1) / math.sqrt(n)
        assert abs(dec.mean() - x) < 6 * se


def test_coordinate_sampling_exact_unbiasedness_by_enumeration():
    """Over all k-subsets (each w.p. 1/C(d,k)) and the exact per-coordinate law, E[decode] = clamp(g)."""
    eps, b, tau, k = 1.0, 3, 1.0, 2
    g = np.array([-1.4, 0.2, 0.55, 1.0])
    d = g.size
    eps_c = eps / k
    a, beta = F.calibrated_probabilities(eps_c, b)
    lv = F.levels(tau, b)
    subsets = list(itertools.combinations(range(d), k))
    mean = np.zeros(d)
    for S in subsets:
        for j in S:
            law = F.calibrated_output_distribution(g[j], eps_c, b, tau)
            mean[j] += (law @ (lv / (a - beta))) * (d / k) / len(subsets)
    np.testing.assert_allclose(mean, np.clip(g, -tau, tau), rtol=1e-9, atol=1e-9)
    # the decoder computes exactly that estimator
    rep = F.encode_calibrated(g, eps, b, tau, np.random.default_rng(0), k=k)
    dec = F.decode_calibrated(rep)
    assert rep.k == k and rep.indices.shape == (k,) and rep.epsilon_coordinate == pytest.approx(eps_c)
    np.testing.assert_allclose(dec[rep.indices], lv[rep.buckets] / (a - beta) * d / k, atol=1e-12)
    assert np.count_nonzero(np.delete(dec, rep.indices)) == 0


def test_coordinate_sampling_subsets_uniform_and_statistically_unbiased():
    d, k, reps = 5, 2, 5_000
    rng = np.random.default_rng(41)
    counts = {}
    for _ in range(reps):
        rep = F.encode_calibrated(np.zeros(d), 1.0, 2, 1.0, rng, k=k)
        counts[tuple(rep.indices.tolist())] = counts.get(tuple(rep.indices.tolist()), 0) + 1
    subsets = list(itertools.combinations(range(d), k))
    assert set(counts) <= set(subsets)
    obs = [counts.get(S, 0) for S in subsets]
    assert chi2_pvalue(obs, np.full(len(subsets), 1 / len(subsets))) > ALPHA
    # a long constant gradient: the coordinate mean of the sampled estimate is unbiased
    n, x, eps = 400_000, 0.4, 2.0
    rep = F.encode_calibrated(np.full(n, x), eps * 1000, 4, 1.0, np.random.default_rng(42), k=1000)
    est = F.decode_calibrated(rep)
    per = est[rep.indices] * rep.k / n                         # the k reported values, unscaled
    se = per.std(ddof=1) / math.sqrt(rep.k)
    assert abs(per.mean() - x) < 6 * se
    assert est.mean() == pytest.approx(per.mean(), rel=1e-9)


# ------------------------------------------------------------------ quantisation
def test_quantize_round_trip_and_range():
    tau = 0.5
    for b in (2, 7, 64, 1024):
        q = np.arange(b)
        np.testing.assert_array_equal(F.quantize(F.dequantize(q, tau, b), tau, b), q)
        g = np.linspace(-2 * tau, 2 * tau, 10_001)
        qq = F.quantize(g, tau, b)
        assert qq.dtype == np.int64 and qq.min() == 0 and qq.max() == b - 1
        err = np.abs(F.dequantize(qq, tau, b) - F.clip(g, tau))
        s = 2 * tau / b
        assert err.max() <= s + 1e-12                           # s/2, except the clamped top bucket: s
        assert err[np.abs(g) <= tau - s].max() <= s / 2 + 1e-12
        # stochastic grid: exact on levels, unbiased elsewhere (checked exactly above)
        lv = F.levels(tau, b)
        np.testing.assert_array_equal(F.quantize_stochastic(lv, tau, b, np.random.default_rng(0)), q)
        np.testing.assert_allclose(F.dequantize_levels(q, tau, b), lv, atol=1e-12)
    # Eq. 10 would give q = b at g = tau (outside the stated range); we clamp to b - 1
    assert int(F.quantize(0.5, 0.5, 8)) == 7
    np.testing.assert_array_equal(F.clip([-3.0, 0.2, 3.0], 1.0), [-1.0, 0.2, 1.0])


def test_stochastic_rounding_statistics():
    tau, b, n = 1.0, 5, 100_000
    for x in (-0.99, -0.1, 0.3333, 0.5):
        q = F.quantize_stochastic(np.full(n, x), tau, b, np.random.default_rng(9))
        v = F.dequantize_levels(q, tau, b)
        assert np.unique(q).size <= 2
        se = max(v.std(ddof=1), 1e-12) / math.sqrt(n)
        assert abs(v.mean() - x) < 6 * se + 1e-12


# ------------------------------------------------------------------ FedAvg
def test_fedavg_weights():
    a, b = np.array([1.0, 2.0]), np.array([3.0, -2.0])
    np.testing.assert_allclose(F.fedavg([a, b], [1, 3]), 0.25 * a + 0.75 * b, atol=1e-12)
    np.testing.assert_allclose(F.fedavg([a, b]), (a + b) / 2, atol=1e-12)
    with pytest.raises(ParameterError, match="weights"):
        F.fedavg([a, b], [1, -1])
    with pytest.raises(ParameterError, match="weights"):
        F.fedavg([a, b], [1])
    with pytest.raises(ParameterError, match="shape"):
        F.fedavg([a, np.zeros(3)])
    with pytest.raises(ParameterError, match="empty"):
        F.fedavg([])


# ------------------------------------------------------------------ guarantees and composition
def test_paper_guarantee_numbers():
    g = F.guarantee("pfcr-paper", 0.5, 64)
    assert g.epsilon == pytest.approx(5.138841809, abs=1e-8) and g.delta == 0.0
    assert g.claimed.epsilon == 0.5 and g.valid and "1 + b(e^eps+1)" in g.claimed.reason
    g2 = F.paper_guarantee(0.5, 64, n_coords=100, rounds=10)
    assert g2.epsilon == pytest.approx(1000 * F.paper_true_epsilon(0.5, 64), rel=1e-12)
    assert g2.related[0].epsilon == pytest.approx(5.138841809, abs=1e-8)
    assert g2.related[1].epsilon == pytest.approx(100 * 5.138841809, rel=1e-9)
    assert g2.parameters["accountant_epsilon"] == pytest.approx(g2.epsilon, rel=1e-3)   # no gain: pure reported
    assert F.paper_guarantee(0.9, 1024).epsilon > F.paper_guarantee(0.9, 64).epsilon   # grows with b


def test_calibrated_guarantee_numbers():
    g = F.guarantee("calibrated", 1.0, 2, n_coords=1)
    assert g.epsilon == pytest.approx(1.0) and g.delta == 0.0 and g.claimed is None
    g = F.calibrated_guarantee(1.0, 2, n_coords=1000, rounds=1, k=10)
    assert g.parameters["epsilon_per_coordinate"] == pytest.approx(0.1)
    assert g.related[1].epsilon == pytest.approx(1.0)
    # many small reports: the accountant's (eps, delta) beats basic composition, and equals accounting.epsilon
    g = F.calibrated_guarantee(1.0, 2, n_coords=1000, rounds=20, k=10, delta=1e-6)
    assert g.delta == 1e-6 and g.epsilon < 20.0
    ev = accounting.pure_dp_event(0.1)
    direct, _ = accounting.epsilon(dp_accounting.SelfComposedDpEvent(ev, 200), 1e-6, "replace_one")
    assert g.epsilon <= direct + 1e-12
    # pure only when delta = 0 / None
    g0 = F.calibrated_guarantee(1.0, 2, n_coords=1000, rounds=20, k=10, delta=None)
    assert g0.epsilon == pytest.approx(20.0) and g0.delta == 0.0
    gc = F.calibrated_guarantee(0.5, 2, n_coords=100, k=4, epsilon_per="coordinate", delta=0)
    assert gc.epsilon == pytest.approx(2.0)


@pytest.mark.parametrize("mode", ["paper", "calibrated"])
def test_composition_monotone_in_rounds(mode):
    kw = {} if mode == "paper" else {"k": 5}
    for delta in (0.0, 1e-6):
        eps = [F.guarantee(mode, 0.5, 8, n_coords=20, rounds=T, delta=delta, **kw).epsilon for T in (1, 2, 4, 8, 16)]
        assert all(b > a for a, b in zip(eps, eps[1:]))


def test_guarantee_to_dict_and_summary():
    g = F.paper_guarantee(0.5, 64, n_coords=10, rounds=2)
    d = g.to_dict()
    assert d["paper_claim"]["epsilon"] == 0.5 and d["neighboring_relation"] == "replace_one"
    assert "paper claims 0.5" in g.summary()
    assert F.paper_guarantee(0.5, 64, noise="continuous").to_dict()["epsilon"] == "inf"


# ------------------------------------------------------------------ audit
def test_audit_paper_mode_far_above_claim():
    case = F.audit_case("paper", epsilon=0.5, b=64)
    assert case["kind"] == "discrete" and case["claimed_epsilon"] == 0.5
    res = audit_discrete(case["name"], case["claimed_epsilon"], case["sample_a"], case["sample_b"],
                         case["key_or_statistic"], 50_000, np.random.default_rng(2024))
    assert res.lower_bound > 3.0 and res.violates_claim
    assert res.lower_bound <= F.paper_true_epsilon(0.5, 64)


@pytest.mark.parametrize("b", [2, 64])
def test_audit_calibrated_within_epsilon(b):
    case = F.audit_case("calibrated", epsilon=0.5, b=b)
    res = audit_discrete(case["name"], case["claimed_epsilon"], case["sample_a"], case["sample_b"],
                         case["key_or_statistic"], 50_000, np.random.default_rng(2025))
    assert res.lower_bound <= 0.5 and not res.violates_claim


# ------------------------------------------------------------------ validation
def test_bad_input():
    rng = np.random.default_rng(0)
    g = np.zeros(4)
    for bad in (0, -1.0, float("nan"), float("inf"), "x"):
        with pytest.raises(ParameterError, match="epsilon"):
            F.encode_paper(g, bad, 8, 1.0, rng)
        with pytest.raises(ParameterError, match="epsilon"):
            F.encode_calibrated(g, bad, 8, 1.0, rng)
    for bad in (1, 0, 2.5, True, "8"):
        with pytest.raises(ParameterError, match="b "):
            F.encode_paper(g, 0.5, bad, 1.0, rng)
        with pytest.raises(ParameterError, match="b "):
            F.calibrated_guarantee(0.5, bad)
    for bad in (0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ParameterError, match="clip"):
            F.encode_calibrated(g, 0.5, 8, bad, rng)
        with pytest.raises(ParameterError, match="clip"):
            F.quantize(g, bad, 8)
    with pytest.raises(ParameterError, match="NaN"):
        F.encode_paper(np.array([0.0, np.nan]), 0.5, 8, 1.0, rng)
    with pytest.raises(ParameterError, match="NaN"):
        F.encode_calibrated(np.array([np.inf]), 0.5, 8, 1.0, rng)
    with pytest.raises(ParameterError, match="empty"):
        F.encode_paper(np.array([]), 0.5, 8, 1.0, rng)
    for bad in (0, -3, 1.5):
        with pytest.raises(ParameterError, match="rounds"):
            F.guarantee("paper", 0.5, 8, rounds=bad)
        with pytest.raises(ParameterError, match="n_coords"):
            F.guarantee("calibrated", 0.5, 8, n_coords=bad)
    with pytest.raises(ParameterError, match="k = 5 exceeds"):
        F.encode_calibrated(g, 0.5, 8, 1.0, rng, k=5)
    with pytest.raises(ParameterError, match="k must"):
        F.encode_calibrated(g, 0.5, 8, 1.0, rng, k=0)
    with pytest.raises(ParameterError, match="epsilon_per"):
        F.encode_calibrated(g, 0.5, 8, 1.0, rng, epsilon_per="row")
    with pytest.raises(ParameterError, match="delta"):
        F.guarantee("paper", 0.5, 8, delta=1.5)
    with pytest.raises(ParameterError, match="mode"):
        F.guarantee("laplace", 0.5, 8)
    with pytest.raises(ParameterError, match="Generator"):
        F.encode_paper(g, 0.5, 8, 1.0, np.random.RandomState(0))
    with pytest.raises(ParameterError, match="noise"):
        F.encode_paper(g, 0.5, 8, 1.0, rng, noise="gaussian")
    with pytest.raises(ParameterError, match="outside"):
        F.decode_paper(np.array([0, 8]), 0.5, 8, 1.0)
    with pytest.raises(ParameterError, match="disagrees"):
        F.decode_calibrated(F.encode_calibrated(g, 0.5, 8, 1.0, rng), b=4)
    with pytest.raises(ParameterError, match="needs"):
        F.decode_calibrated(np.array([0, 1]))
    with pytest.raises(ParameterError, match="mode"):
        F.audit_case("other")


# ------------------------------------------------------------------ reproducibility, shapes, torch
def test_reproducible_with_seed_and_shapes():
    g = np.random.default_rng(1).normal(0, 0.02, size=(6, 5))
    r1 = F.encode_paper(g, 0.5, 64, 0.05, np.random.default_rng(7))
    r2 = F.encode_paper(g, 0.5, 64, 0.05, np.random.default_rng(7))
    r3 = F.encode_paper(g, 0.5, 64, 0.05, np.random.default_rng(8))
    np.testing.assert_array_equal(r1, r2)
    assert r1.shape == g.shape and not np.array_equal(r1, r3)
    for k in (None, 7):
        c1 = F.encode_calibrated(g, 1.0, 4, 0.05, np.random.default_rng(7), k=k)
        c2 = F.encode_calibrated(g, 1.0, 4, 0.05, np.random.default_rng(7), k=k)
        np.testing.assert_array_equal(c1.buckets, c2.buckets)
        d1 = F.decode_calibrated(c1)
        assert d1.shape == g.shape
        np.testing.assert_array_equal(d1, F.decode_calibrated(c2))
    assert F.decode_paper([r1, r2], 0.5, 64, 0.05, weights=[2, 5]).shape == g.shape


def test_accepts_torch_tensors():
    torch = pytest.importorskip("torch")
    g = torch.linspace(-1, 1, 11, requires_grad=True) * 1.0
    r = F.encode_paper(g, 0.5, 8, 1.0, np.random.default_rng(0))
    np.testing.assert_array_equal(r, F.encode_paper(g.detach().numpy(), 0.5, 8, 1.0, np.random.default_rng(0)))
    rep = F.encode_calibrated(g, 0.5, 8, 1.0, np.random.default_rng(0))
    assert isinstance(F.decode_calibrated(rep), np.ndarray)
    np.testing.assert_array_equal(F.quantize(g, 1.0, 8), F.quantize(g.detach().numpy(), 1.0, 8))
