"""``reproduce dipsgnn`` end to end on a tiny synthetic log with user features (the real run is on ML-1M):
every Table 2 row and figure cell trains once, each private run carries its true ε, a rerun resumes."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from privrec.errors import ParameterError


@pytest.fixture
def toy(tmp_path):
    from conftest import make_frame

    from privrec.data.atomic import write_atomic

    frame = make_frame(n_users=40, n_items=30, per_user=14)     # 10-core survives
    frame["rating"] = 5.0                                            # the protocol keeps rating >= 4
    source = tmp_path / "toy.inter"
    write_atomic(frame, source, {"user_id": "token", "item_id": "token", "rating": "float", "timestamp": "float"})
    users = sorted(frame.user_id.unique())
    rng = np.random.default_rng(0)
    feats = pd.DataFrame({"user_id": users, "age": rng.choice([1, 18, 25, 35], len(users)).astype(float),
                          "gender": rng.choice(["F", "M"], len(users)),
                          "occupation": rng.integers(0, 21, len(users)).astype(float)})
    write_atomic(feats, tmp_path / "toy.user", {"user_id": "token", "age": "float", "gender": "token",
                                                 "occupation": "float"})
    return source


def _cfg(source, **kw):
    from privrec.experiments import dipsgnn as D
    from privrec.training.trainer import TrainConfig

    base = dict(dataset=str(source), max_len=10, hidden=8, user_dim=4, seeds=(0,), epsilon2s=(3.0,), epsilon1s=(),
                steps_grid=(2,), clips=(1.0,), methods=("BPR-MF", "SR-GNN", "APGNN", "DPMF", "DP-SGD", "EdgeRand",
                                                                 "DIPSGNN"),
                train=TrainConfig(epochs=1, batch_size=64, patience=1, select_metric="hr@20", progress=False))
    return D.DIPSGNNConfig(**{**base, **kw})


@pytest.mark.filterwarnings("ignore:Full backward hook is firing")    # DP-SGD: item ids need no gradient
def test_reproduce_dipsgnn_trains_the_grid_with_honest_epsilons_and_resumes(toy, tmp_path):
    from privrec.experiments import dipsgnn as D

    cfg = _cfg(toy)
    logs: list[str] = []
    res = D.reproduce(cfg, tmp_path / "out", log=logs.append)
    # Table 2: 7 methods + DIPSGNN honest; Fig. 3: 2; Fig. 5: 2; Fig. 6: 1; Fig. 7: Nonp, Nonp-U, Priv-U
    assert len(res["runs"]) == 8 + 2 + 2 + 1 + 3
    by = {D.run_key(r["labels"], r["seed"]): r for r in res["runs"]}
    paper = by[D.run_key(D.labels("DIPSGNN", cfg), 0)]["extra"]["graph_guarantee"]
    honest = by[D.run_key(D.labels("DIPSGNN", cfg, accounting="honest"), 0)]["extra"]["graph_guarantee"]
    assert paper["epsilon"] > 5 and paper["paper_claim"]["epsilon"] == pytest.approx(5.0, rel=0.02)
    assert honest["epsilon"] <= 5.0 + 1e-6 and honest["parameters"]["sigma"] > paper["parameters"]["sigma"]
    edge = by[D.run_key(D.labels("EdgeRand", cfg), 0)]["extra"]
    assert edge["graph_guarantee"]["mechanism"] == "edgerand" and edge["feature_guarantee"]["epsilon"] == 20
    assert by[D.run_key(D.labels("DP-SGD", cfg), 0)]["extra"]["dpsgd_guarantee"]["epsilon"] <= 5.0 + 1e-6
    assert by[D.run_key(D.labels("DPMF", cfg), 0)]["extra"]["dpmf_guarantee"]["epsilon"] == "inf"
    minus_u = by[D.run_key(D.labels("DIPSGNN", cfg, user_features=False), 0)]
    assert minus_u["labels"]["epsilon1"] is None and "feature_guarantee" not in minus_u["extra"]
    assert {c["ours"]["accounting"] for c in res["claims"]} == {"paper", "honest"}
    nonp = by[D.run_key(D.labels("DIPSGNN", cfg, epsilon1=None, epsilon2=None, accounting="none"), 0)]["extra"]
    assert nonp["graph_guarantee"]["parameters"]["sigma"] == 0 and nonp["graph_guarantee"]["epsilon"] == "inf"
    assert not nonp["graph_guarantee"]["valid"]                     # sigma = 0: stated as no guarantee
    assert [p["method"] for p in res["sweeps"]["fig7_ablation"]] == ["Nonp", "Nonp-U", "Priv", "Priv-U"]
    assert all(p["summary"] for p in res["sweeps"]["fig7_ablation"])
    md = (tmp_path / "out" / "results.md").read_text()
    assert "Table 2 analog" in md and "Claim check" in md and "none proven" in md and "Fig. 7" in md and "](figs3-7.png)" in md
    assert "| model private |" in md and "no: only the aggregates are noised" in md        # DIPSGNN's weights are not
    assert (tmp_path / "out" / "figs3-7.png").stat().st_size > 1000
    logs.clear()
    again = D.reproduce(cfg, tmp_path / "out", log=logs.append)          # all finished: nothing retrained
    assert not any("training on" in m for m in logs) and again["summary"] == res["summary"]


def test_bad_settings_name_the_parameter(toy):
    from privrec.experiments import dipsgnn as D

    cfg = _cfg(toy)
    for kw, word in ((dict(epsilon2=0.0), "epsilon"), (dict(delta=1.0), "delta"), (dict(clip=-1.0), "clip"),
                     (dict(steps_grid=(0,)), "steps"), (dict(methods=("LightGCN",)), "methods"),
                     (dict(epsilon1s=(float("nan"),)), "epsilon")):
        with pytest.raises(ParameterError, match=word):
            replace(cfg, **kw)
    assert isinstance(D.QUICK["train"].epochs, int)


def test_each_figure_point_is_read_on_the_sweep_seeds_even_where_table_2_has_more():
    from privrec.experiments import dipsgnn as D
    from privrec.experiments.dipsgnn_report import COLS, figure_points
    from privrec.experiments.runner import RunRecord

    cfg = D.DIPSGNNConfig(seeds=(0, 1, 2), sweep_seeds=(0,))
    fit = {"best_epoch": 5, "epochs_run": 10, "stopped_early": False}
    runs = [RunRecord(D.run_key(lab, s), s, lab, fit, {"test": {m: value for m in COLS.values()}})
            for lab, per_seed in ((D.labels("DIPSGNN", cfg), {0: 0.1, 1: 0.5, 2: 0.6}),      # Table 2's cell
                                  (D.labels("DIPSGNN", cfg, epsilon2=3.0), {0: 0.2}))         # a sweep-only point
            for s, value in per_seed.items()]
    pts = {p["value"]: p["summary"] for p in figure_points(cfg, runs)["fig3_epsilon2"] if p["method"] == "DIPSGNN"}
    assert pts[5.0]["seeds"] == [0] and pts[5.0]["test"]["R@20"]["mean"] == pytest.approx(10.0)
    assert pts[3.0]["seeds"] == [0] and pts[3.0]["test"]["R@20"]["mean"] == pytest.approx(20.0)


def test_figures_keeps_only_the_chosen_sweeps():
    """``--figures 3,7``: Table 2 plus the ε₂ curve and the ablation; no ε₁, T or C point; unknown names refused."""
    from privrec.experiments import dipsgnn as D

    cfg = D.DIPSGNNConfig(**D.only_figures(["3", "7"]))
    keys = {D.run_key(lab, s) for lab, seeds in D.grid(cfg) for s in seeds}
    full = {D.run_key(lab, s) for lab, seeds in D.grid(D.DIPSGNNConfig()) for s in seeds}
    sweep = {D.run_key(D.labels(m, cfg, **kw), 0) for m in ("EdgeRand", "DIPSGNN")
             for kw in (dict(epsilon2=3.0), dict(epsilon2=4.0))}
    ablation = {D.run_key(lab, 0) for _, lab in D.ablation_cells(cfg)}
    table2 = {D.run_key(lab, s) for lab, seeds in D.grid(D.DIPSGNNConfig(epsilon2s=(), epsilon1s=(), steps_grid=(),
                                                                          clips=(), ablation=False)) for s in seeds}
    assert keys == table2 | sweep | ablation and keys < full
    assert D.run_key(D.labels("DIPSGNN", cfg, steps=2), 0) not in keys
    for bad in (["8"], []):
        with pytest.raises(ParameterError, match="figures"):
            D.only_figures(bad)


@pytest.mark.filterwarnings("ignore:Full backward hook is firing")
def test_the_private_model_variant_is_one_certificate_within_epsilon2(toy, tmp_path):
    """DIPSGNN-DP (opt in): eps2 / 2 for the aggregates (honest sigma), eps2 / 2 for user-level DP-SGD; its row
    reads the composed certificate (<= eps2 per transition count) and says the model is private."""
    from privrec.experiments import dipsgnn as D

    assert "DIPSGNN-DP" not in D.DIPSGNNConfig().methods                # not in the paper: opt in
    cfg = _cfg(toy, methods=("DIPSGNN-DP",), honest=False, epsilon2s=(), steps_grid=(), clips=(), ablation=False)
    res = D.reproduce(cfg, tmp_path / "dp", log=lambda m: None)
    (run,) = res["runs"]
    model, weights, graph = (run["extra"][k] for k in ("model_guarantee", "dpsgd_guarantee", "graph_guarantee"))
    assert run["labels"]["accounting"] == "honest" and weights["neighboring_relation"] == "replace_one"
    assert model["epsilon"] == pytest.approx(weights["epsilon"] + graph["epsilon"]) and model["epsilon"] <= 5 + 1e-6
    (row,) = res["summary"]
    assert row["privacy"]["true"] == model["epsilon"] and row["privacy"]["interaction"] > model["epsilon"]
    md = (tmp_path / "dp" / "results.md").read_text()
    assert "DIPSGNN-DP (private model" in md and "yes, per transition count" in md


def test_the_claim_check_gives_n_paired_difference_p_and_verdict():
    """DIPSGNN beats EdgeRand: R@20 paired by seed (known answer from scipy's paired t on the points), and
    the relative gap against the paper's +19.99% by a one-sample t."""
    from scipy import stats

    from privrec.experiments.dipsgnn import DIPSGNNConfig, labels, run_key
    from privrec.experiments.dipsgnn_report import claim
    from privrec.experiments.runner import RunRecord

    cfg = DIPSGNNConfig()
    ours, theirs = labels("DIPSGNN", cfg, accounting="paper"), labels("EdgeRand", cfg)
    a, b = [0.20, 0.21, 0.19], [0.15, 0.17, 0.16]
    runs = [RunRecord(run_key(lab, s), s, lab, {}, {"test": {"hr@20": v}})
            for lab, vals in ((ours, a), (theirs, b)) for s, v in enumerate(vals)]
    c = claim(runs, ours, theirs)
    p = stats.ttest_rel(np.multiply(a, 100), np.multiply(b, 100)).pvalue
    assert c["check"]["p_value"] == pytest.approx(p) and c["verdict"] == "holds"
    assert c["check"]["difference"]["mean"] == pytest.approx(100 * np.mean(np.subtract(a, b)))
    gaps = np.divide(a, b) - 1
    assert c["gap_vs_paper"]["p_value"] == pytest.approx(stats.ttest_1samp(gaps, 0.1999).pvalue)
    lost = claim(runs[:1] + runs[3:4], ours, theirs)                      # one seed: no verdict
    assert lost["verdict"] == "no verdict: one seed"
