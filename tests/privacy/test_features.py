"""DIPSGNN user-feature LDP (Algs. 1-3): exact laws of PM and OUE, the LDP inequality over all
input pairs, sampler goodness of fit, per-user attribute selection, exact end-to-end LDP of
Algorithm 3 on tiny schemas, encoding, validation, reproducibility, audit."""

import itertools
import math
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from privrec.errors import ParameterError
from privrec.privacy import accounting
from privrec.privacy import features as F
from privrec.privacy.audit import audit_discrete, audit_threshold

ALPHA = 1e-6


# ------------------------------------------------------------------ literal references (paper formulas)
def pm_paper(eps):
    """Appendix A, literally: C, l(.), r(.), p, p/e^eps."""
    C = (math.exp(eps / 2) + 1) / (math.exp(eps / 2) - 1)
    p = (math.exp(eps) - math.exp(eps / 2)) / (2 * math.exp(eps / 2) + 2)
    return C, (lambda x: (C + 1) / 2 * x - (C - 1) / 2), p, p / math.exp(eps)


def oue_literal_prob(out, x, eps):
    """Algorithm 2, line 5, one bit at a time."""
    prob = 1.0
    for o, b in zip(out, x):
        p1 = 0.5 if b == 1 else 1 / (math.exp(eps) + 1)
        prob *= p1 if o == 1 else 1 - p1
    return prob


def alg3_exact(schema_widths, x_blocks, eps1):
    """Algorithm 3 on an all-categorical schema: every output (tuple of bits) with its exact
    probability = sum over the k-subsets A (each w.p. 1/C(n,k)) of prod_{i in A} OUE(eps1/k)
    probability of block i, with the blocks outside A fixed at 0."""
    n = len(schema_widths)
    k = max(1, min(n, math.floor(eps1 / 2.5)))
    subsets = list(itertools.combinations(range(n), k))
    dist = {}
    for out in itertools.product([0, 1], repeat=sum(schema_widths)):
        blocks, pos = [], 0
        for w in schema_widths:
            blocks.append(out[pos:pos + w])
            pos += w
        total = 0.0
        for A in subsets:
            if any(any(blocks[i]) for i in range(n) if i not in A):
                continue
            pr = 1.0
            for i in A:
                pr *= oue_literal_prob(blocks[i], x_blocks[i], eps1 / k)
            total += pr / len(subsets)
        dist[out] = total
    return dist


def onehots(widths):
    """All inputs of an all-categorical schema, as tuples of one-hot blocks."""
    per = [[tuple(int(j == c) for j in range(w)) for c in range(w)] for w in widths]
    return list(itertools.product(*per))


# ------------------------------------------------------------------ Algorithm 1: piecewise mechanism
@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0, 8.0])
def test_pm_density_matches_appendix_a(eps):
    C_paper, l_paper, p, p_out = pm_paper(eps)
    C, d_in, d_out = F.piecewise_constants(eps)
    assert C == pytest.approx(C_paper, rel=1e-12)
    assert d_in == pytest.approx(p, rel=1e-12) and d_out == pytest.approx(p_out, rel=1e-12)
    for x in [-1.0, -0.3, 0.0, 0.7, 1.0]:
        l, r = l_paper(x), l_paper(x) + C - 1
        h = 1e-7 * C                                   # stay off the break points (rounding)
        ys = np.array([y for y in [-C + h, (l - C) / 2, l - h, l + h, (l + r) / 2, r - h, r + h, (r + C) / 2, C - h]
                       if -C < y < C and abs(y - l) >= h / 2 and abs(y - r) >= h / 2])
        expect = [p if l <= y <= r else p_out for y in ys]
        np.testing.assert_allclose(F.piecewise_density(ys, x, eps), expect, rtol=1e-9)
        assert F.piecewise_density(np.array([-C - 0.1, C + 0.1]), x, eps).tolist() == [0.0, 0.0]
        # total mass one: (C-1) p + (C+1) p/e^eps
        assert (C - 1) * p + (C + 1) * p_out == pytest.approx(1.0, rel=1e-12)
        assert F.piecewise_cdf(C, x, eps) == pytest.approx(1.0) and F.piecewise_cdf(-C, x, eps) == 0.0
        # CDF is the integral of the density
        grid = np.linspace(-C, C, 2001)
        dens = F.piecewise_density(grid, x, eps)
        # exact integral of a piecewise-constant function on a fine grid, up to the two break cells
        assert np.allclose(np.diff(F.piecewise_cdf(grid, x, eps)), dens[:-1] * np.diff(grid), atol=2 * p * (grid[1] - grid[0]))


@pytest.mark.parametrize("eps", [0.5, 2.0, 6.0])
def test_pm_ldp_ratio_over_grid_is_exactly_e_eps(eps):
    C, _, _ = F.piecewise_constants(eps)
    xs = np.linspace(-1, 1, 21)
    ys = np.linspace(-C, C, 801)
    dens = np.stack([F.piecewise_density(ys, x, eps) for x in xs])
    ratio = dens[:, None, :] / dens[None, :, :]          # all input pairs x all outputs
    assert ratio.max() == pytest.approx(math.exp(eps), rel=1e-12)
    assert ratio.min() == pytest.approx(math.exp(-eps), rel=1e-12)
    # the extreme pair and output the audit uses: x = +1 vs -1 at y >= 1
    assert F.piecewise_density(1.5 if C > 1.5 else C, 1.0, eps) / F.piecewise_density(1.5 if C > 1.5 else C, -1.0, eps) \
        == pytest.approx(math.exp(eps), rel=1e-12)


@pytest.mark.parametrize("eps,x", [(0.5, -1.0), (1.0, 0.3), (4.0, 1.0), (4.0, -0.8), (10.0, 0.0)])
def test_pm_sampler_matches_exact_cdf(eps, x):
    y = F.piecewise(np.full(20_000, x), eps, np.random.default_rng(17))
    C, _, _ = F.piecewise_constants(eps)
    assert y.min() >= -C and y.max() <= C
    assert stats.kstest(y, lambda t: F.piecewise_cdf(t, x, eps)).pvalue > ALPHA


def test_pm_is_unbiased_and_vectorised_over_shapes():
    x = np.linspace(-1, 1, 9).reshape(3, 3)
    y = F.piecewise(np.repeat(x[None], 20_000, axis=0), 2.0, np.random.default_rng(5))
    assert y.shape == (20_000, 3, 3)
    C, _, _ = F.piecewise_constants(2.0)
    var_max = (C ** 2 + 2 * C) / 3 + 1                       # generous bound on Var[PM(x)]
    assert np.all(np.abs(y.mean(axis=0) - x) < 5.5 * math.sqrt(var_max / 20_000))


def test_pm_extreme_epsilons():
    x = np.array([-1.0, 0.25, 1.0])
    np.testing.assert_array_equal(F.piecewise(x, 5000.0, np.random.default_rng(0)), x)
    y = F.piecewise(x, 1e-6, np.random.default_rng(0))
    assert np.all(np.isfinite(y)) and np.all(np.abs(y) <= F.piecewise_constants(1e-6)[0])


# ------------------------------------------------------------------ Algorithm 2: OUE
@pytest.mark.parametrize("eps", [0.3, 1.0, 4.0])
def test_oue_exact_probabilities_and_ldp_for_m3(eps):
    m = 3
    inputs = [tuple(int(i == c) for i in range(m)) for c in range(m)]
    outputs = list(itertools.product([0, 1], repeat=m))
    table = {}
    for x in inputs:
        probs = F.oue_probability(np.array(outputs), np.array(x), eps)
        assert probs.sum() == pytest.approx(1.0, rel=1e-12)
        for o, pr in zip(outputs, probs):
            assert pr == pytest.approx(oue_literal_prob(o, x, eps), rel=1e-12)
            table[x, o] = pr
    worst = max(table[a, o] / table[b, o] for a in inputs for b in inputs for o in outputs)
    assert worst == pytest.approx(math.exp(eps), rel=1e-12)


def test_oue_sampler_matches_exact_law_and_bit_rates():
    eps, n = 1.2, 60_000
    x = np.array([0, 1, 0])
    out = F.oue(np.tile(x, (n, 1)), eps, np.random.default_rng(23))
    assert out.dtype == np.uint8 and out.shape == (n, 3)
    outputs = list(itertools.product([0, 1], repeat=3))
    counts = Counter(map(tuple, out.tolist()))
    expected = F.oue_probability(np.array(outputs), x, eps) * n
    assert stats.chisquare([counts.get(o, 0) for o in outputs], expected).pvalue > ALPHA
    # bit rates: each column binomial with p = 1/2 (hot) or q
    m = 12
    xs = np.zeros((n, m), dtype=np.uint8)
    hot = np.random.default_rng(1).integers(0, m, n)
    xs[np.arange(n), hot] = 1
    bits = F.oue(xs, eps, np.random.default_rng(29))
    q = 1 / (math.exp(eps) + 1)
    chi2 = 0.0
    for value, prob in [(1, 0.5), (0, q)]:
        mask = xs == value
        trials, ones = mask.sum(axis=0), (bits * mask).sum(axis=0)
        chi2 += (((ones - trials * prob) ** 2) / (trials * prob * (1 - prob))).sum()
    assert stats.chi2.sf(chi2, 2 * m) > ALPHA


def test_oue_single_row_and_reproducibility():
    a = F.oue(np.array([0, 0, 1, 0]), 2.0, np.random.default_rng(3))
    b = F.oue(np.array([0, 0, 1, 0]), 2.0, np.random.default_rng(3))
    assert a.shape == (4,) and np.array_equal(a, b)


# ------------------------------------------------------------------ Algorithm 3
@pytest.mark.parametrize("eps1,n,k", [(0.5, 3, 1), (2.4999, 3, 1), (2.5, 3, 1), (4.99, 3, 1), (5.0, 3, 2),
                                      (7.5, 3, 3), (20.0, 3, 3), (20.0, 10, 8), (100.0, 6, 6), (12.4, 10, 4)])
def test_k_formula(eps1, n, k):
    assert F.choose_k(eps1, n) == k


def num_schema(n):
    return F.FeatureSchema(tuple(F.numerical(f"v{i}", 0.0, 10.0) for i in range(n)))


def test_selection_is_per_user_and_uniform_over_subsets():
    schema, n_users = num_schema(4), 30_000
    x = np.random.default_rng(0).uniform(-1, 1, (n_users, 4))
    out, g = F.perturb_features(x, schema, 5.0, np.random.default_rng(41))   # k = 2
    assert g.parameters["k"] == 2
    chosen = out != 0                                # PM output is 0 with probability 0
    assert np.all(chosen.sum(axis=1) == 2)
    subsets = Counter(map(tuple, chosen.tolist()))
    assert len(subsets) == 6                         # varies across users
    assert stats.chisquare(list(subsets.values())).pvalue > ALPHA
    # per-attribute selection rate k/n
    assert stats.chisquare(chosen.sum(axis=0)).pvalue > ALPHA


def test_numerical_outputs_are_scaled_pm_with_eps1_over_k():
    schema, n_users, eps1 = num_schema(3), 20_000, 5.0        # k = 2, per-attribute 2.5, scale 3/2
    x0 = 0.4
    x = np.full((n_users, 3), x0)
    out, selection = F._perturb_with_selection(x, schema, eps1, np.random.default_rng(8))
    assert np.array_equal(selection, out != 0)
    y = out[selection] / 1.5
    assert stats.kstest(y, lambda t: F.piecewise_cdf(t, x0, 2.5)).pvalue > ALPHA


def test_unselected_blocks_are_exactly_zero_and_no_raw_value_leaks():
    schema = F.movielens_schema()
    frame = pd.DataFrame({"age": np.random.default_rng(0).choice(F.ML1M_AGE, 5000),
                          "gender": np.random.default_rng(1).choice(F.ML1M_GENDER, 5000),
                          "occupation": np.random.default_rng(2).integers(0, 21, 5000)})
    x = schema.encode(frame)
    for eps1 in [1.0, 6.0]:                              # k = 1, 2 of n = 3
        out, sel = F._perturb_with_selection(x, schema, eps1, np.random.default_rng(9))
        k = F.choose_k(eps1, 3)
        assert np.all(sel.sum(axis=1) == k)
        for i in range(3):
            block = out[:, schema.block(i)]
            assert np.all(block[~sel[:, i]] == 0.0)
            assert set(np.unique(block)) <= {0.0, 1.0}
        assert len(Counter(map(tuple, sel.tolist()))) == math.comb(3, k)


@pytest.mark.parametrize("eps1", [1.3, 4.9, 6.2])          # k = 1, 1, 2
def test_algorithm3_exact_end_to_end_ldp(eps1):
    widths = (2, 3)
    inputs = onehots(widths)
    dists = {x: alg3_exact(widths, x, eps1) for x in inputs}
    for d in dists.values():
        assert sum(d.values()) == pytest.approx(1.0, rel=1e-12)
    support = {o for o, pr in dists[inputs[0]].items() if pr > 0}
    assert all({o for o, pr in d.items() if pr > 0} == support for d in dists.values())   # same support
    worst = max(dists[a][o] / dists[b][o] for a in inputs for b in inputs for o in support)
    assert worst <= math.exp(eps1) * (1 + 1e-12)
    assert worst == pytest.approx(math.exp(eps1), rel=1e-12)          # Theorem 4.1 holds and is tight
    # one attribute changed costs at most eps1/k
    k = F.choose_k(eps1, 2)
    worst_one = max(dists[a][o] / dists[b][o] for a in inputs for b in inputs
                    if sum(ab != bb for ab, bb in zip(a, b)) == 1 for o in support)
    assert worst_one <= math.exp(eps1 / k) * (1 + 1e-12)
    assert F.guarantee(F.FeatureSchema((F.categorical("a", "xy"), F.categorical("b", "pqr"))), eps1).related[0].epsilon \
        == pytest.approx(eps1 / k)


def test_algorithm3_sampler_matches_exact_distribution():
    schema = F.FeatureSchema((F.categorical("a", ("x", "y")), F.categorical("b", ("p", "q", "r"))))
    eps1, n = 1.7, 60_000
    x_blocks = ((0, 1), (0, 0, 1))
    exact = alg3_exact((2, 3), x_blocks, eps1)
    x = np.repeat(schema.encode(pd.DataFrame({"a": ["y"], "b": ["r"]})), n, axis=0)
    out, _ = F.perturb_features(x, schema, eps1, np.random.default_rng(13))
    counts = Counter(tuple(int(v) for v in row) for row in out.tolist())
    assert set(counts) <= {o for o, p in exact.items() if p > 0}
    big = [o for o in exact if exact[o] * n >= 20]
    rest = [o for o in exact if o not in big and exact[o] > 0]
    obs = [counts.get(o, 0) for o in big] + ([sum(counts.get(o, 0) for o in rest)] if rest else [])
    exp = [exact[o] * n for o in big] + ([n * sum(exact[o] for o in rest)] if rest else [])
    assert sum(exp) == pytest.approx(n) and len(big) >= 10
    assert stats.chisquare(obs, exp).pvalue > ALPHA


def test_reproducible_and_seed_dependent():
    schema = F.FeatureSchema((F.categorical("g", ("F", "M")), F.numerical("n", -5, 5), F.categorical("c", "abcd")))
    frame = pd.DataFrame({"g": ["F", "M"] * 300, "n": np.linspace(-5, 5, 600), "c": list("abcd") * 150})
    x = schema.encode(frame)
    a, ga = F.perturb_features(x, schema, 3.0, np.random.default_rng(7))
    b, gb = F.perturb_features(x, schema, 3.0, np.random.default_rng(7))
    np.testing.assert_array_equal(a, b)
    assert ga == gb
    assert not np.array_equal(a, F.perturb_features(x, schema, 3.0, np.random.default_rng(8))[0])
    np.testing.assert_array_equal(F.piecewise(x[:, 2], 1.0, np.random.default_rng(1)),
                                  F.piecewise(x[:, 2], 1.0, np.random.default_rng(1)))


# ------------------------------------------------------------------ guarantee
def test_guarantee_fields_and_accounting():
    schema = F.movielens_schema()
    g = F.guarantee(schema, 20.0)
    assert g.epsilon == 20.0 and g.delta == 0.0 and g.valid and g.claimed is None
    assert g.parameters["k"] == 3 and g.parameters["per_attribute_epsilon"] == pytest.approx(20 / 3)
    assert g.relation == "replace_one" and "whole feature vector" in g.unit
    assert any("Theorem 4.1 holds" in n for n in g.notes)
    eps0, _ = accounting.epsilon(g.event, 0.0, "replace_one")
    assert eps0 == pytest.approx(20.0, abs=1e-3)                      # the event composes k pure events
    assert accounting.epsilon(g.event, 1e-6, "replace_one")[0] <= 20.0 + 1e-3
    d = g.to_dict()
    assert d["related"][0]["epsilon"] == pytest.approx(20 / 3)
    # many attributes: the composed event is tighter than pure eps1 at delta > 0
    wide = F.FeatureSchema(tuple(F.categorical(f"c{i}", "ab") for i in range(20)))
    gw = F.guarantee(wide, 50.0)
    assert gw.parameters["k"] == 20
    assert accounting.epsilon(gw.event, 1e-6, "replace_one")[0] < 50.0
    assert F.guarantee(F.movielens_schema(), 1.0).event == accounting.pure_dp_event(1.0)


def test_data_derived_domains_are_flagged():
    frame = pd.DataFrame({"city": ["a", "b", "a"], "income": [10.0, 50.0, 30.0], "junk": [1, 2, 3]})
    s = F.schema_from_frame(frame, categorical=["city"], numerical=["income"])
    assert s.names == ("city", "income") and s.d0 == 3
    assert s.data_derived() == ("city", "income")
    assert any("read from the data" in n for n in F.guarantee(s, 2.0).notes)
    s2 = F.schema_from_frame(frame, categorical=["city"], numerical=["income"], ranges={"income": (0, 100)},
                             categories={"city": ["a", "b", "c"]})
    assert s2.data_derived() == () and s2.d0 == 4
    np.testing.assert_allclose(s2.encode(frame), [[1, 0, 0, -0.8], [0, 1, 0, 0.0], [1, 0, 0, -0.4]], atol=1e-12)
    assert not any("read from the data" in n for n in F.guarantee(s2, 2.0).notes)


# ------------------------------------------------------------------ encoding
def test_movielens_schema_on_recbole_like_frame():
    frame = pd.DataFrame({"user_id": ["1", "2", "3"], "age": [1.0, 56.0, 25.0], "gender": ["F", "M", "M"],
                          "occupation": [10.0, 16.0, 0.0], "zip_code": ["48067", "70072", "55117"]})
    s = F.movielens_schema(frame)
    assert s.names == ("age", "gender", "occupation") and s.d0 == 30
    assert all(a.kind == "categorical" for a in s.attributes)
    x = s.encode(frame)
    assert x.shape == (3, 30) and np.all(x.sum(axis=1) == 3)
    assert x[0, 0] == 1 and x[1, 6] == 1 and x[0, 7] == 1 and x[1, 8] == 1
    assert x[0, 9 + 10] == 1 and x[2, 9] == 1
    # token (string) columns get string codes
    s_str = F.movielens_schema(frame.astype({"age": int, "occupation": int}).astype(str))
    np.testing.assert_array_equal(s_str.encode(frame.astype({"age": int, "occupation": int}).astype(str)), x)
    with pytest.raises(ParameterError, match="'occupation'"):
        F.movielens_schema(frame.drop(columns="occupation"))


def _bad(frame_kwargs=None, schema=None):
    frame = pd.DataFrame(frame_kwargs or {"g": ["F", "M"], "n": [0.0, 3.0]})
    schema = schema or F.FeatureSchema((F.categorical("g", ("F", "M")), F.numerical("n", 0, 10)))
    return F.encode_features(frame, schema)


@pytest.mark.parametrize("frame,needle", [
    ({"g": ["F", None], "n": [1.0, 2.0]}, "'g' is missing"),
    ({"g": ["F", "M"], "n": [1.0, np.nan]}, "'n' is missing"),
    ({"g": ["F", "X"], "n": [1.0, 2.0]}, "'g' has unknown category 'X'"),
    ({"g": ["F", "M"], "n": [1.0, 11.0]}, "'n' has value 11.0 .* outside its declared range"),
    ({"g": ["F", "M"], "n": [-0.5, 1.0]}, "'n' has value -0.5"),
    ({"g": ["F", "M"], "n": ["1", "abc"]}, "'n' has non-numeric"),
    ({"g": ["F", "M"]}, r"\['n'\] not among"),
    ({"g": [], "n": []}, "empty"),
])
def test_encode_rejects_bad_features(frame, needle):
    with pytest.raises(ParameterError, match=needle):
        _bad(frame)


@pytest.mark.parametrize("make,needle", [
    (lambda: F.numerical("n", 1, 1), "'n': numerical range"),
    (lambda: F.numerical("n", 0, math.inf), "'n': numerical range"),
    (lambda: F.categorical("c", []), "'c': the category list is empty"),
    (lambda: F.categorical("c", ["a", "a"]), "'c': category 'a' is listed twice"),
    (lambda: F.FeatureSchema(()), "no attributes"),
    (lambda: F.FeatureSchema((F.numerical("a", 0, 1), F.categorical("a", "xy"))), "'a' occurs twice"),
    (lambda: F.schema_from_frame(pd.DataFrame({"n": [2.0, 2.0]}), numerical=["n"]), "'n': cannot read a range"),
    (lambda: F.schema_from_frame(pd.DataFrame({"n": [2.0]}), numerical=["n"], categorical=["n"]), "both"),
])
def test_schema_rejects_bad_domains(make, needle):
    with pytest.raises(ParameterError, match=needle):
        make()


SCHEMA = F.FeatureSchema((F.categorical("g", ("F", "M")), F.numerical("n", 0, 10)))
GOOD = np.array([[1.0, 0.0, 0.2], [0.0, 1.0, -1.0]])


@pytest.mark.parametrize("kwargs,needle", [
    ({"epsilon1": 0.0}, "epsilon1 must be a positive"),
    ({"epsilon1": -2.0}, "epsilon1 must be a positive"),
    ({"epsilon1": math.nan}, "epsilon1 must be a positive"),
    ({"epsilon1": math.inf}, "epsilon1 must be a positive"),
    ({"encoded": np.array([[1.0, 0.0, np.nan]])}, "'n' is NaN"),
    ({"encoded": np.array([[np.nan, 0.0, 0.1]])}, "'g' is NaN"),
    ({"encoded": np.array([[1.0, 0.0, 1.5]])}, "'n' holds 1.5 .* outside"),
    ({"encoded": np.array([[1.0, 1.0, 0.5]])}, "'g' is not one-hot"),
    ({"encoded": np.array([[0.5, 0.5, 0.5]])}, "'g' is not one-hot"),
    ({"encoded": np.zeros((0, 3))}, "empty"),
    ({"encoded": np.zeros((2, 4))}, "d0 = 3"),
    ({"encoded": np.zeros(3)}, "2-D"),
])
def test_perturb_rejects_bad_input(kwargs, needle):
    args = {"encoded": GOOD, "schema": SCHEMA, "epsilon1": 1.0, "rng": np.random.default_rng(0)}
    args.update(kwargs)
    with pytest.raises(ParameterError, match=needle):
        F.perturb_features(**args)


@pytest.mark.parametrize("call,needle", [
    (lambda r: F.piecewise(np.array([0.0, 1.2]), 1.0, r), "outside"),
    (lambda r: F.piecewise(np.array([0.0, np.nan]), 1.0, r), "NaN"),
    (lambda r: F.piecewise(np.array([]), 1.0, r), "empty"),
    (lambda r: F.piecewise(np.array([0.0]), 0.0, r), "epsilon must be a positive"),
    (lambda r: F.oue(np.array([[1, 1, 0]]), 1.0, r), "row 0 is not one-hot"),
    (lambda r: F.oue(np.array([[0, 0, 0], [0, 1, 0]]), 1.0, r), "row 0 is not one-hot"),
    (lambda r: F.oue(np.array([[0, 2, 0]]), 1.0, r), "not one-hot"),
    (lambda r: F.oue(np.array([[0, 1]]), -1.0, r), "epsilon must be a positive"),
    (lambda r: F.oue(np.zeros((0, 3)), 1.0, r), "non-empty"),
    (lambda r: F.audit_case(1.0, "nope"), "audit mechanism"),
])
def test_primitives_reject_bad_input(call, needle):
    with pytest.raises(ParameterError, match=needle):
        call(np.random.default_rng(0))


# ------------------------------------------------------------------ audit
@pytest.mark.parametrize("mechanism,eps", [("piecewise", 1.0), ("oue", 1.5), ("features", 2.0)])
def test_audit_lower_bound_stays_below_true_epsilon(mechanism, eps):
    case = F.audit_case(eps, mechanism)
    assert {"name", "claimed_epsilon", "delta", "sample_a", "sample_b", "kind", "key_or_statistic"} <= set(case)
    audit = audit_threshold if case["kind"] == "threshold" else audit_discrete
    res = audit(case["name"], case["claimed_epsilon"], case["sample_a"], case["sample_b"], case["key_or_statistic"],
                n=40_000, rng=np.random.default_rng(2024), delta=case["delta"])
    assert not res.violates_claim and res.lower_bound <= eps
    assert res.lower_bound > 0.5 * eps                       # the chosen inputs are distinguishing
