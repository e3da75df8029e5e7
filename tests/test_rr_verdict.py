"""Known-answer checks of Mu & Lim's claim verdict: relative loss (paired t), the baselines' collapse
(one-sample t against the paper's -66%), the score left at the smallest epsilon (paired t)."""

import numpy as np
from scipy import stats

from privrec.experiments.rr_report import drops, verdict
from privrec.experiments.runner import RunRecord


def _run(method, eps, seed, hr, ndcg):
    return RunRecord(key=f"{method}|{eps}|{seed}", seed=seed,
                     labels={"method": method, "epsilon": eps, "alternatives": None if eps is None else "injective",
                             "position": None},
                     fit={}, metrics={"sampled": {"hr@1": hr, "ndcg@5": ndcg}})


def _p_paired(d):
    """Two-sided paired t p-value from the differences, by hand (t = mean / (sd / sqrt n), n - 1 dof)."""
    d = np.asarray(d, dtype=float)
    t = d.mean() / (d.std(ddof=1) / np.sqrt(len(d)))
    return 2 * stats.t.sf(abs(t), len(d) - 1)


def _grid():
    # three seeds; at eps 0.1 -> 0.0001: RR loses 10/12/7% (HR), GRU4Rec 50/52/48%, BERT4Rec 70/71/72%
    runs = []
    for s, (rr, gru, bert) in enumerate(((0.90, 0.50, 0.30), (0.88, 0.48, 0.29), (0.93, 0.52, 0.28))):
        runs += [_run("RR-BERT4Rec", 0.1, s, 0.20, 0.40), _run("RR-BERT4Rec", 0.0001, s, 0.20 * rr, 0.40 * rr),
                 _run("GRU4Rec", 0.1, s, 0.40, 0.50), _run("GRU4Rec", 0.0001, s, 0.40 * gru, 0.50 * gru),
                 _run("BERT4Rec", 0.1, s, 0.30, 0.50), _run("BERT4Rec", 0.0001, s, 0.30 * bert, 0.50 * bert)]
    return runs


def test_relative_loss_is_judged_by_a_paired_t_test():
    runs = _grid()
    lines = verdict(drops(runs, [0.1, 0.0001], "injective"), runs, "injective")
    line = next(x for x in lines if x.startswith("- hr@1 (sampled): RR-BERT4Rec loses less than GRU4Rec"))
    p = _p_paired([(-0.10) - (-0.50), (-0.12) - (-0.52), (-0.07) - (-0.48)])
    assert p < 0.05
    assert "(-9.7% vs -50.0%): **holds**" in line and "n = 3 paired seeds" in line and "ahead in 3" in line
    assert f"p = {p:.2g} (paired t)" in line


def test_equal_differences_on_every_seed_count_as_significant():
    from privrec.experiments.stats import paired, significant
    from privrec.experiments.stats import verdict as v

    check = paired({0: 0.3, 1: 0.2, 2: 0.1}, {0: 0.2, 1: 0.1, 2: 0.0}).to_dict()   # +0.1 each, up to rounding
    assert check["p_value"] is None and significant(check) and v(check) == "holds"


def test_collapse_is_judged_against_the_papers_number():
    runs = _grid()
    lines = verdict(drops(runs, [0.1, 0.0001], "injective"), runs, "injective")
    gru = next(x for x in lines if x.startswith("- GRU4Rec collapses on hr@1"))
    bert = next(x for x in lines if x.startswith("- BERT4Rec collapses on hr@1"))
    p = stats.ttest_1samp([-0.50, -0.52, -0.48], -0.66).pvalue
    assert "**fails**" in gru and f"p = {p:.2g} (one-sample t)" in gru and "mean change -50.0%" in gru
    assert "**holds**" in bert and "mean change -71.0%" in bert


def test_score_left_at_the_smallest_epsilon():
    runs = _grid()
    lines = verdict(drops(runs, [0.1, 0.0001], "injective"), runs, "injective")
    vs_gru = next(x for x in lines if x.startswith("- hr@1 (sampled) at ε = 0.0001: RR-BERT4Rec") and "GRU4Rec" in x)
    ours, theirs = [0.18, 0.176, 0.186], [0.20, 0.192, 0.208]
    p = _p_paired(np.subtract(ours, theirs))
    assert "(0.1807) beats GRU4Rec (0.2000): **fails (significantly behind)**" in vs_gru
    assert f"p = {p:.2g}" in vs_gru and "ahead in 0" in vs_gru


def test_one_seed_gives_no_verdict():
    runs = [r for r in _grid() if r.seed == 0]
    lines = verdict(drops(runs, [0.1, 0.0001], "injective"), runs, "injective")
    assert lines and all("no verdict: one seed" in x for x in lines)
    assert verdict([], [], "injective") == []
