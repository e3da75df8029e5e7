"""DIPSGNN noisy aggregation and EdgeRand: Eq. 4 graphs against a literal reference, Eq. 6 norms,
Eq. 7 noise goodness of fit and reproducibility, brute-force sensitivities for both units,
accounting against the closed-form Gaussian oracle, calibration, the paper's claim, audit, bad input."""

import itertools
import math

import numpy as np
import pytest
import torch
from scipy import optimize, stats

from privrec.errors import ParameterError
from privrec.privacy import accounting
from privrec.privacy import graph as G
from privrec.privacy.audit import audit_threshold

ALPHA = 1e-6


# ------------------------------------------------------------------ literal references
def literal_graph(seq):
    """Eq. 4 with Python loops: unique items in first-occurrence order, alias, count matrix."""
    items = [x for x in seq if x != 0]
    nodes = []
    for x in items:
        if x not in nodes:
            nodes.append(x)
    alias = [-1 if x == 0 else nodes.index(x) for x in seq]
    a = np.zeros((len(nodes), len(nodes)), dtype=np.int64)
    for u, v in zip(items[:-1], items[1:]):
        a[nodes.index(u), nodes.index(v)] += 1
    return nodes, alias, a


def counts_by_item(seq, m):
    """A_out indexed by item id (node set fixed to {1..m}): the count view of the sensitivity analysis."""
    a = np.zeros((m + 1, m + 1), dtype=np.int64)
    items = [x for x in seq if x != 0]
    for u, v in zip(items[:-1], items[1:]):
        a[u, v] += 1
    return a[1:, 1:]


def quad_form(d_out):
    """M with ||dA_out H||_F^2 + ||dA_in H||_F^2 = sum_jk M_jk <H_j, H_k>, dA_in = dA_out^T."""
    d = d_out.astype(np.float64)
    return d.T @ d + d @ d.T


def worst_case_bounds(m):
    """Exact max over unit-norm rows H is between max_s s^T M s (s in {+-1}^n: a valid H) and
    sum |M_jk| (|<H_j, H_k>| <= 1). Returns both, maximised over the differences."""
    signs = np.array(list(itertools.product([-1.0, 1.0], repeat=m.shape[0])))
    return float(np.einsum("si,ij,sj->s", signs, m, signs).max()), float(np.abs(m).sum())


def analytic_gaussian_eps(mu, delta):
    """Balle & Wang (2018): exact epsilon of a Gaussian with sensitivity/std = mu at delta."""
    def f(e):
        return stats.norm.cdf(-e / mu + mu / 2) - math.exp(e) * stats.norm.cdf(-e / mu - mu / 2) - delta
    return optimize.brentq(f, 0.0, 500.0, xtol=1e-12)


# ------------------------------------------------------------------ Eq. 4 behaviour graphs
def test_eq4_known_answer():
    g = G.session_graphs(np.array([[1, 2, 3, 2, 4]]))
    assert g.nodes.tolist() == [[1, 2, 3, 4]] and g.n_nodes.tolist() == [4]
    assert g.alias.tolist() == [[0, 1, 2, 1, 3]]
    expected = np.zeros((4, 4), dtype=int)
    expected[0, 1] = expected[1, 2] = expected[2, 1] = expected[1, 3] = 1     # 1->2, 2->3, 3->2, 2->4
    np.testing.assert_array_equal(g.a_out[0], expected)
    np.testing.assert_array_equal(g.a_in[0], expected.T)
    a_in, a_out = g.tensors()
    assert torch.equal(a_in[0], torch.tensor(expected.T, dtype=torch.float32))
    assert torch.equal(a_out[0], torch.tensor(expected, dtype=torch.float32))


def test_counts_not_normalised_with_repeats_and_self_loops():
    g = G.session_graphs(np.array([[5, 5, 6, 5, 6]]))
    assert g.nodes.tolist() == [[5, 6]]
    np.testing.assert_array_equal(g.a_out[0], [[1, 2], [1, 0]])     # 5->5 once, 5->6 twice, 6->5 once


def test_padding_empty_rows_and_pad_to():
    g = G.session_graphs(np.array([[0, 0, 1, 2], [0, 0, 0, 0], [0, 0, 0, 7]]), pad_to=4)
    assert g.nodes.tolist() == [[1, 2, 0, 0], [0, 0, 0, 0], [7, 0, 0, 0]]
    assert g.n_nodes.tolist() == [2, 0, 1]
    assert g.alias.tolist() == [[-1, -1, 0, 1], [-1, -1, -1, -1], [-1, -1, -1, 0]]
    assert g.a_out.shape == (3, 4, 4) and g.a_out.sum() == 1 and g.a_out[0, 0, 1] == 1
    with pytest.raises(ParameterError, match="front-padded"):
        G.session_graphs(np.array([[1, 0, 2]]))
    with pytest.raises(ParameterError, match="pad_to"):
        G.session_graphs(np.array([[1, 2, 3]]), pad_to=2)
    with pytest.raises(ParameterError):
        G.session_graphs(np.array([[1, -2, 3]]))
    with pytest.raises(ParameterError):
        G.session_graphs(np.array([[1.5, 2.0]]))
    with pytest.raises(ParameterError):
        G.session_graphs(np.array([1, 2, 3]))


def test_matches_literal_reference_on_random_batches():
    rng = np.random.default_rng(3)
    B, L = 300, 9
    seqs = rng.integers(1, 6, size=(B, L))
    lengths = rng.integers(0, L + 1, size=B)
    seqs[np.arange(L)[None, :] < (L - lengths)[:, None]] = 0
    g = G.session_graphs(seqs)
    for b in range(B):
        nodes, alias, a = literal_graph(seqs[b].tolist())
        k = len(nodes)
        assert g.n_nodes[b] == k and g.nodes[b, :k].tolist() == nodes and not g.nodes[b, k:].any()
        assert g.alias[b].tolist() == alias
        np.testing.assert_array_equal(g.a_out[b, :k, :k], a)
        assert g.a_out[b].sum() == a.sum()


# ------------------------------------------------------------------ Eq. 6 and Eq. 7
def test_normalize_rows_norms_zero_rows_and_gradient():
    h = torch.tensor([[3.0, 4.0], [0.0, 0.0], [1e-3, 0.0]], requires_grad=True)
    out = G.normalize_rows(h, 0.5)
    norms = torch.linalg.vector_norm(out, dim=-1)
    assert torch.allclose(norms[[0, 2]], torch.tensor([0.5, 0.5])) and norms[1] == 0
    out.sum().backward()
    assert torch.isfinite(h.grad).all()
    big = torch.randn(4, 7, 16, generator=torch.Generator().manual_seed(0)) * 100
    assert torch.allclose(torch.linalg.vector_norm(G.normalize_rows(big, 0.2), dim=-1), torch.full((4, 7), 0.2))
    with pytest.raises(ParameterError, match="NaN"):
        G.normalize_rows(torch.tensor([[float("nan"), 1.0]]), 1.0)
    for bad in (0.0, -1.0, float("inf"), float("nan")):
        with pytest.raises(ParameterError, match="C"):
            G.normalize_rows(h.detach(), bad)


def _agg_inputs():
    g = torch.Generator().manual_seed(1)
    A = torch.randint(0, 3, (400, 5, 5), generator=g).double()
    h = torch.randn(400, 5, 6, generator=g, dtype=torch.float64)
    return A, h


def test_noisy_aggregate_noise_is_gaussian_with_std_sigma():
    A, h = _agg_inputs()
    sigma = 0.5
    resid = (G.noisy_aggregate(A, h, sigma, torch.Generator().manual_seed(7)) - torch.bmm(A, h)).flatten().numpy()
    assert stats.kstest(resid, "norm", args=(0, sigma)).pvalue > ALPHA
    n = resid.size
    chi = float((resid ** 2).sum() / sigma ** 2)                      # ~ chi^2_n
    assert min(stats.chi2.cdf(chi, n), stats.chi2.sf(chi, n)) > ALPHA / 2
    assert abs(resid.mean()) < 5 * sigma / math.sqrt(n)
    # the reference code's std sigma**2 is rejected by the same test
    buggy = G.noisy_aggregate(A, h, sigma ** 2, torch.Generator().manual_seed(7)) - torch.bmm(A, h)
    assert stats.kstest(buggy.flatten().numpy(), "norm", args=(0, sigma)).pvalue < ALPHA


def test_noisy_aggregate_reproducible_and_differentiable():
    A, h = _agg_inputs()
    a1 = G.noisy_aggregate(A, h, 1.0, torch.Generator().manual_seed(5))
    a2 = G.noisy_aggregate(A, h, 1.0, torch.Generator().manual_seed(5))
    a3 = G.noisy_aggregate(A, h, 1.0, torch.Generator().manual_seed(6))
    assert torch.equal(a1, a2) and not torch.equal(a1, a3)
    assert torch.equal(G.noisy_aggregate(A, h, 0.0, torch.Generator()), torch.bmm(A, h))
    hs = h[:2, :3, :2].clone().requires_grad_(True)
    As = A[:2, :3, :3]
    assert torch.autograd.gradcheck(lambda x: G.noisy_aggregate(As, x, 0.3, torch.Generator().manual_seed(0)), (hs,))
    hg = h.clone().requires_grad_(True)
    G.noisy_aggregate(A, hg, 0.3, torch.Generator().manual_seed(0)).sum().backward()
    assert torch.allclose(hg.grad, A.transpose(1, 2).sum(-1, keepdim=True).expand_as(h))
    # a full step: Alg. 4 lines 6-9
    gen1, gen2 = torch.Generator().manual_seed(9), torch.Generator().manual_seed(9)
    h_in, h_out = G.dipsgnn_step(A.transpose(1, 2), A, h, 0.2, 0.1, gen1)
    hn = G.normalize_rows(h, 0.2)
    assert torch.equal(h_out, G.noisy_aggregate(A, hn, 0.1, gen2))
    assert torch.equal(h_in, G.noisy_aggregate(A.transpose(1, 2), hn, 0.1, gen2))


def test_noisy_aggregate_bad_input():
    A, h = _agg_inputs()
    gen = torch.Generator()
    for bad in (-0.1, float("nan"), float("inf")):
        with pytest.raises(ParameterError, match="sigma"):
            G.noisy_aggregate(A, h, bad, gen)
    with pytest.raises(ParameterError, match="NaN"):
        G.noisy_aggregate(A, h.clone().fill_(float("nan")), 1.0, gen)
    with pytest.raises(ParameterError, match="shape|must be"):
        G.noisy_aggregate(A[:, :4, :4], h, 1.0, gen)
    with pytest.raises(ParameterError, match="Generator"):
        G.noisy_aggregate(A, h, 1.0, 0)


# ------------------------------------------------------------------ sensitivity by brute force
def test_edge_level_sensitivity_is_sqrt2_C():
    n = 3
    worst_lo = worst_hi = 0.0
    for p, q in itertools.product(range(n), repeat=2):
        d = np.zeros((n, n), dtype=int)
        d[p, q] = 1
        lo, hi = worst_case_bounds(quad_form(d))
        worst_lo, worst_hi = max(worst_lo, lo), max(worst_hi, hi)
    assert worst_lo == worst_hi == 2.0              # (sqrt 2 C)^2 with C = 1; Thm 4.2 analyses one matrix: C
    assert G.sensitivity(0.3, "edge") == pytest.approx(math.sqrt(2) * 0.3)


def test_interaction_level_sensitivity_is_sqrt10_C_by_enumeration():
    m = 3
    worst_lo = worst_hi = 0.0
    worst_frob = 0
    for length in range(2, 7):
        for seq in itertools.product(range(1, m + 1), repeat=length):
            a = counts_by_item(seq, m)
            for k in range(length):
                d = a - counts_by_item(seq[:k] + seq[k + 1:], m)
                worst_frob = max(worst_frob, int((d ** 2).sum()))
                lo, hi = worst_case_bounds(quad_form(d))
                worst_lo, worst_hi = max(worst_lo, lo), max(worst_hi, hi)
                if k in (0, length - 1):                                  # end deletions: one count
                    assert int(np.abs(d).sum()) == 1
    assert worst_lo == worst_hi == 10.0             # sqrt(10) C, attained; sqrt(6) C (3 independent counts) is wrong
    assert worst_frob == 3                          # EdgeRand: ||Delta A||_F <= sqrt 3
    assert G.sensitivity(1.0, "interaction") == pytest.approx(math.sqrt(10))


def test_interaction_worst_case_realised_through_the_implementation():
    """[1,2,3,2] minus its 2nd interaction: a->b, b->c removed, a->c added, node set unchanged."""
    C = 0.7
    seq, nbr = [1, 2, 3, 2], [1, 3, 2]

    def aggregates(s):
        g = G.session_graphs(np.array([s]))
        perm = np.argsort(g.nodes[0])                          # rows ordered by item id 1, 2, 3
        a_out = torch.tensor(g.a_out[0][np.ix_(perm, perm)], dtype=torch.float64)[None]
        h = torch.tensor([[-1.0, 0.0], [1.0, 0.0], [-1.0, 0.0]], dtype=torch.float64)[None]   # H_a = H_c = -H_b
        h_in, h_out = G.dipsgnn_step(a_out.transpose(1, 2), a_out, h, C, 0.0, torch.Generator())
        return torch.cat([h_out, h_in], dim=1)

    diff = aggregates(seq) - aggregates(nbr)
    assert float(diff.norm()) == pytest.approx(math.sqrt(10) * C)


# ------------------------------------------------------------------ accounting
def test_guarantee_equals_one_gaussian_closed_form():
    sigma, C, T, passes, delta = 3.0, 1.0, 2, 3, 1e-5
    k = T * passes
    g = G.guarantee(sigma, C, T, passes, delta)
    inter = g.related[0]
    assert "interaction" in inter.parameters["unit"] and g.parameters["steps_composed"] == k
    for gu, sens in ((g, math.sqrt(2) * C), (inter, math.sqrt(10) * C)):
        oracle = analytic_gaussian_eps(sens * math.sqrt(k) / sigma, delta)
        assert gu.epsilon == pytest.approx(oracle, rel=1e-2) and gu.epsilon >= oracle * (1 - 1e-3)
        assert gu.event == accounting.gaussian_event(sigma / sens, k)
    single, _ = accounting.epsilon(accounting.gaussian_event(sigma / (math.sqrt(2) * C) / math.sqrt(k)), delta)
    assert g.epsilon == pytest.approx(single, rel=1e-2)
    assert inter.epsilon > g.epsilon


def test_paper_claim_is_below_the_honest_total():
    # Thm 4.2 solved for sigma at eps2 = 2 (T = 1, C = 0.2): with x = C / sigma, T x^2 / 2 + x sqrt(2 T L) = 2
    C, T, delta, target = 0.2, 1, 1e-5, 2.0
    L = math.log(1 / delta)
    x = (-math.sqrt(2 * T * L) + math.sqrt(2 * T * L + 2 * T * target)) / T
    sigma = C / x
    assert G.paper_closed_form(sigma, C, T, delta) == pytest.approx(target)
    paper = G.paper_epsilon(sigma, C, T, delta)
    assert paper.closed_form == pytest.approx(target) and paper.accountant <= paper.closed_form
    one = G.guarantee(sigma, C, T, passes=1, delta=delta, related=False)
    assert one.claimed.epsilon == pytest.approx(target) and one.claimed.source == "DIPSGNN Theorem 4.2"
    assert one.epsilon > paper.accountant                          # the second release (sqrt 2) alone
    ten = G.guarantee(sigma, C, T, passes=10, delta=delta, related=False)   # 10 epochs, graph used once each
    assert ten.epsilon > 2 * ten.claimed.epsilon and ten.related == ()


def test_calibrate_sigma_round_trip():
    target, delta, C, T, passes = 2.0, 1e-5, 0.5, 2, 4
    sigma = G.calibrate_sigma(target, delta, C, T, passes, "edge")
    g = G.guarantee(sigma, C, T, passes, delta, "edge")
    assert target * 0.97 <= g.epsilon <= target + 1e-9
    assert g.related[0].epsilon > target                            # the same sigma, interaction level
    sigma_i = G.calibrate_sigma(target, delta, C, T, passes, "interaction")
    assert sigma_i == pytest.approx(math.sqrt(5) * sigma, rel=1e-12)  # sqrt(10) C / (sqrt(2) C)
    assert g.related[0].parameters["sensitivity"] * sigma == pytest.approx(G.sensitivity(C, "interaction") * sigma)


def test_accounting_bad_input():
    ok = dict(sigma=1.0, C=1.0, T=1, passes=1, delta=1e-5)
    for key, bad in [("sigma", -1.0), ("C", 0.0), ("C", -2.0), ("T", 0), ("T", 1.5), ("passes", 0),
                     ("delta", 0.0), ("delta", 1.0), ("delta", 2.0)]:
        with pytest.raises(ParameterError):
            G.guarantee(**{**ok, key: bad})
    with pytest.raises(ParameterError, match="unit"):
        G.guarantee(**ok, unit="user")
    with pytest.raises(ParameterError):
        G.calibrate_sigma(0.0, 1e-5, 1.0, 1, 1)
    with pytest.raises(ParameterError):
        G.paper_epsilon(1.0, 1.0, 0, 1e-5)
    assert G.guarantee(**{**ok, "sigma": 0.0}).epsilon == math.inf


# ------------------------------------------------------------------ audit
def test_audit_below_true_epsilon_and_flags_the_sigma_squared_bug():
    good = G.audit_case(sigma=0.1, C=0.01, delta=1e-5)
    res = audit_threshold(good["name"], good["claimed_epsilon"], good["sample_a"], good["sample_b"],
                          good["key_or_statistic"], 30000, np.random.default_rng(0), delta=good["delta"])
    assert not res.violates_claim and res.lower_bound <= good["claimed_epsilon"]
    bug = G.audit_case(sigma=0.1, C=0.01, delta=1e-5, reference_bug=True)
    assert bug["claimed_epsilon"] == good["claimed_epsilon"]
    res = audit_threshold(bug["name"], bug["claimed_epsilon"], bug["sample_a"], bug["sample_b"],
                          bug["key_or_statistic"], 30000, np.random.default_rng(0), delta=bug["delta"])
    assert res.violates_claim


# ------------------------------------------------------------------ EdgeRand
def test_edge_rand_calibration_noise_and_transpose():
    eps, delta = 2.0, 1e-5
    A = G.session_graphs(np.array([[1, 2, 3, 2, 4], [0, 0, 5, 5, 6]])).a_out
    A = np.repeat(A, 200, axis=0)
    n_nodes = np.tile([4, 2], 200)
    noisy_out, noisy_in, g = G.edge_rand(A, eps, delta, np.random.default_rng(0), n_nodes=n_nodes)
    std = g.parameters["noise_std"]
    assert g.event == accounting.gaussian_event(std, 1)                     # sensitivity 1 per count
    assert eps * 0.97 <= g.epsilon <= eps + 1e-9 and g.parameters["sensitivity"] == 1.0
    assert g.related[0].parameters["sensitivity"] == pytest.approx(math.sqrt(3)) and g.related[0].epsilon > eps
    np.testing.assert_array_equal(noisy_in, np.swapaxes(noisy_out, 1, 2))
    resid = noisy_out - A
    assert not resid[1::2, 2:, :].any() and not resid[1::2, :, 2:].any()       # padding block untouched
    real = np.concatenate([resid[0::2].ravel(), resid[1::2, :2, :2].ravel()])
    assert stats.kstest(real, "norm", args=(0, std)).pvalue > ALPHA
    again, _, _ = G.edge_rand(A, eps, delta, np.random.default_rng(0), n_nodes=n_nodes)
    np.testing.assert_array_equal(again, noisy_out)
    _, _, g4 = G.edge_rand(A[:2], eps, delta, np.random.default_rng(0), graphs_per_user=4)
    assert g4.parameters["noise_std"] > std and g4.epsilon <= eps + 1e-9
    with pytest.raises(ParameterError):
        G.edge_rand(A, -1.0, delta, np.random.default_rng(0))
    with pytest.raises(ParameterError):
        G.edge_rand(A, eps, 1.5, np.random.default_rng(0))
    with pytest.raises(ParameterError):
        G.edge_rand(np.full((2, 2), np.nan), eps, delta, np.random.default_rng(0))
    with pytest.raises(ParameterError):
        G.edge_rand(A[:, :, :3], eps, delta, np.random.default_rng(0))


def test_paper_sigma_inverts_thm_4_2():
    from privrec.privacy import graph as G

    for eps, c, t, d in [(5.0, 0.2, 1, 1e-6), (3.0, 0.6, 3, 1e-5), (0.5, 1.0, 5, 1e-3)]:
        s = G.paper_sigma(eps, c, t, d)
        assert G.paper_closed_form(s, c, t, d) == pytest.approx(eps, rel=1e-10)
    assert G.paper_sigma(5.0, 0.2, 1, 1e-6) == pytest.approx(0.228, abs=0.002)     # the paper's setting
