"""PriCDSR mechanism M: exact probabilities on small domains, the epsilon-SDP inequality over
all neighbouring pairs, sampler goodness of fit, validation, reproducibility."""

import itertools
import math
from collections import Counter

import numpy as np
import pytest
from scipy import stats

from privrec.errors import ParameterError
from privrec.privacy import sdp
from reference.sdp import sdp_authors_style, sdp_exact_distribution, sdp_step_probs


def valid_rows(m, L, allow_padding=True):
    for r in itertools.product(range(m + 1), repeat=L):
        nz = [x for x in r if x]
        if len(nz) == len(set(nz)) and (allow_padding or len(nz) == L):
            yield r


def worst_log_ratio(dists, kinds):
    """max over neighbouring pairs of the given kinds of max_A log P[M(R)=A]/P[M(R')=A]."""
    worst = {k: (0.0, None) for k in kinds}
    rows = list(dists)
    for a, b in itertools.permutations(rows, 2):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        if len(diff) == 1:
            kind = "value"
        elif len(diff) == 2 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]:
            kind = "swap_items" if a[diff[0]] and a[diff[1]] else "swap_padding"
        else:
            continue
        if kind not in worst:
            continue
        for out, p in dists[a].items():
            q = dists[b].get(out, 0.0)
            lr = math.inf if q == 0 else math.log(p / q)
            if lr > worst[kind][0] + 1e-12:
                worst[kind] = (lr, (a, b, out))
    return worst


def test_eq1_probabilities_sum_to_one_and_match_the_formula():
    probs = sdp_step_probs((3, 0, 1, 2), (2,), m=5, eps=0.7)     # position 1, current 0, P={2}
    assert sum(probs.values()) == pytest.approx(1.0)
    z = math.exp(0.7) + 5 - 1
    assert probs[0] == pytest.approx(math.exp(0.7) / z)          # keep
    assert probs[4] == pytest.approx(1 / z) and 2 not in probs     # others weight 1, P excluded


@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_value_changes_meet_epsilon_and_swaps_reach_two_epsilon(eps):
    m, L = 3, 3
    dists = {r: sdp_exact_distribution(r, m, eps) for r in valid_rows(m, L)}
    assert all(sum(d.values()) == pytest.approx(1.0) for d in dists.values())
    worst = worst_log_ratio(dists, ["value", "swap_items", "swap_padding"])
    assert worst["value"][0] == pytest.approx(eps)                  # Theorem 1, Case 1: holds, tight
    assert worst["swap_items"][0] == pytest.approx(2 * eps)         # Case 2 fails: kept as a test
    assert worst["swap_padding"][0] == pytest.approx(2 * eps)
    assert sdp.guarantee(eps, m, L).epsilon == pytest.approx(2 * eps)


def test_the_counterexample_to_theorem_1():
    """Rows [0,x,y] and [0,y,x] are neighbours by a swap; output [x,0,y] has ratio e^(2 eps)."""
    eps, m = 1.0, 3
    a = sdp_exact_distribution((0, 1, 2), m, eps)
    b = sdp_exact_distribution((0, 2, 1), m, eps)
    assert math.log(a[(1, 0, 2)] / b[(1, 0, 2)]) == pytest.approx(2 * eps)


def test_swaps_without_padding_meet_epsilon():
    m, L, eps = 4, 3, 1.0
    dists = {r: sdp_exact_distribution(r, m, eps) for r in valid_rows(m, L, allow_padding=False)}
    worst = worst_log_ratio(dists, ["value", "swap_items"])
    assert worst["swap_items"][0] == pytest.approx(eps)
    assert worst["value"][0] <= eps + 1e-9


def test_sampler_matches_exact_distribution():
    row, m, eps = (0, 2, 1, 3), 4, 1.0
    exact = sdp_exact_distribution(row, m, eps)
    n = 60_000
    out = sdp.perturb(np.tile(row, (n, 1)), m, eps, np.random.default_rng(11))
    counts = Counter(map(tuple, out.tolist()))
    assert set(counts) <= set(exact)
    keys = sorted(exact, key=exact.get, reverse=True)
    big = [k for k in keys if exact[k] * n >= 20]                # pool rare cells for the chi-square
    obs = [counts.get(k, 0) for k in big] + [n - sum(counts.get(k, 0) for k in big)]
    exp = [exact[k] * n for k in big] + [n * (1 - sum(exact[k] for k in big))]
    assert stats.chisquare(obs, exp).pvalue > 1e-6


def test_authors_style_reference_has_the_same_law():
    row, m, eps = (0, 1, 2), 3, 1.5
    exact = sdp_exact_distribution(row, m, eps)
    out = sdp_authors_style(np.tile(row, (3000, 1)), m, eps, np.random.default_rng(0))
    counts = Counter(map(tuple, out.tolist()))
    big = [k for k in exact if exact[k] * 3000 >= 20]
    obs = [counts.get(k, 0) for k in big] + [3000 - sum(counts.get(k, 0) for k in big)]
    exp = [exact[k] * 3000 for k in big] + [3000 * (1 - sum(exact[k] for k in big))]
    assert stats.chisquare(obs, exp).pvalue > 1e-6


def test_output_rows_stay_valid_and_seeded_runs_repeat():
    rng = np.random.default_rng(3)
    m, L = 50, 20
    seqs = np.zeros((500, L), dtype=np.int64)
    for r in range(500):
        k = rng.integers(1, L + 1)
        seqs[r, L - k:] = rng.choice(np.arange(1, m + 1), k, replace=False)
    a = sdp.perturb(seqs, m, 2.0, np.random.default_rng(7))
    b = sdp.perturb(seqs, m, 2.0, np.random.default_rng(7))
    np.testing.assert_array_equal(a, b)
    assert a.shape == seqs.shape and a.min() >= 0 and a.max() <= m
    for row in a:
        nz = row[row > 0]
        assert len(nz) == len(set(nz.tolist()))
    assert not np.array_equal(a, sdp.perturb(seqs, m, 2.0, np.random.default_rng(8)))


def test_large_epsilon_keeps_everything():
    seqs = np.array([[0, 3, 1], [2, 4, 5]])
    np.testing.assert_array_equal(sdp.perturb(seqs, 9, 200.0, np.random.default_rng(0)), seqs)


@pytest.mark.parametrize("kwargs,needle", [
    ({"epsilon": 0.0}, "epsilon must be a positive"),
    ({"epsilon": -1.0}, "epsilon must be a positive"),
    ({"epsilon": float("nan")}, "epsilon must be a positive"),
    ({"sequences": np.array([[0, 1, 1]])}, "repeats item id 1"),
    ({"sequences": np.array([[0, 1, 12]])}, "outside [0, 9]"),
    ({"sequences": np.array([[0, -1, 2]])}, "outside [0, 9]"),
    ({"sequences": np.zeros((0, 3), dtype=int)}, "empty"),
    ({"sequences": np.array([1, 2, 3])}, "2-D"),
])
def test_bad_input_is_rejected(kwargs, needle):
    args = {"sequences": np.array([[0, 1, 2]]), "n_items": 9, "epsilon": 1.0, "rng": np.random.default_rng(0)}
    args.update(kwargs)
    with pytest.raises(ParameterError, match=needle.replace("[", r"\[").replace("]", r"\]")):
        sdp.perturb(**args)


def test_guarantee_reports_claim_and_related_units():
    g = sdp.guarantee(10.0, 3706, 50)
    d = g.to_dict()
    assert d["epsilon"] == 20.0 and d["paper_claim"]["epsilon"] == 10.0
    units = {r["definition"]: r["epsilon"] for r in d["related"]}
    assert units["epsilon-SDP (value changes only)"] == 10.0
    assert units["epsilon-DP per user row"] == 500.0


@pytest.mark.parametrize("m,L", [(4, 4), (3, 5)])
def test_longer_rows_keep_the_same_bounds(m, L):
    """Every valid row of length 4 and 5: value changes eps, swaps 2 eps, as at L = 3."""
    eps = 1.0
    dists = {r: sdp_exact_distribution(r, m, eps) for r in valid_rows(m, L)}
    worst = worst_log_ratio(dists, ["value", "swap_items", "swap_padding"])
    assert worst["value"][0] == pytest.approx(eps)
    assert worst["swap_items"][0] == pytest.approx(2 * eps) and worst["swap_padding"][0] == pytest.approx(2 * eps)


def test_any_two_rows_cost_at_most_l_epsilon():
    """The per-user unit: P[M(R) = A] is a product over positions of a weight (e^eps or 1)
    over a normaliser that depends on A alone, so any two rows differ by at most e^(L eps)."""
    m, L, eps = 3, 3, 0.8
    dists = {r: sdp_exact_distribution(r, m, eps) for r in valid_rows(m, L)}
    worst = max(math.log(p / dists[b][out]) for a, b in itertools.permutations(dists, 2)
                for out, p in dists[a].items())
    assert worst <= L * eps + 1e-9
    assert all(set(d) == set(dists[(0, 0, 0)]) for d in dists.values())    # same support for every row
    assert sdp.guarantee(eps, m, L).related[1].epsilon == pytest.approx(L * eps)
