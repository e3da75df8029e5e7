"""Randomised-response pipeline: one perturbation per user, refusal outside Thm 3.1, release round
trip, and a tiny end-to-end run of the Fig. 1 grid (synthetic data; the real run is `reproduce rr`)."""

import json
from dataclasses import replace

import numpy as np
import pytest

from privrec.data.sequences import Sequences
from privrec.data.splits import leave_one_out
from privrec.errors import ParameterError
from privrec.privacy.alternatives import random_map
from privrec.privacy.rr import keep_probabilities
from privrec.release.histories import perturb_histories, publish_histories, read_histories
from privrec.training.tasks import private_inputs


def _hist(lengths, n_items=30, seed=0) -> Sequences:
    rng = np.random.default_rng(seed)
    return Sequences.from_rows([[]] + [rng.integers(1, n_items + 1, n).tolist() for n in lengths])


def test_random_map_is_a_derangement_and_a_bijection():
    a = random_map(50, np.random.default_rng(3)).alt
    assert a[0] == 0 and sorted(a[1:]) == list(range(1, 51)) and not (a[1:] == np.arange(1, 51)).any()
    with pytest.raises(ParameterError, match="n_items"):
        random_map(1, np.random.default_rng(0))


def test_short_histories_are_refused_by_default_and_published_as_the_paper_on_request():
    eps = 1e-3                      # keep < 1/2 exactly for n <= 9 (log2(1001) = 9.97)
    hist = _hist([5, 9, 10, 40])
    assert (keep_probabilities(np.array([9, 10]), eps) < 0.5).tolist() == [True, False]
    alt = random_map(30, np.random.default_rng(0))
    out, published, g = perturb_histories(hist, alt, eps, np.random.default_rng(1))
    assert published.tolist() == [False, False, False, True, True]
    assert out.lengths.tolist() == [0, 0, 0, 10, 40] and g.valid and g.epsilon == pytest.approx(eps)
    changed = out.items != hist.items[hist.indptr[3]:]
    assert (out.items[changed] == alt.alt[hist.items[hist.indptr[3]:]][changed]).all()   # replaced = alternative
    out, published, g = perturb_histories(hist, alt, eps, np.random.default_rng(1), short="paper")
    assert published[1:].all() and not g.valid and g.epsilon > eps       # the true odds, above the claimed ε
    with pytest.raises(ParameterError, match="no user"):
        perturb_histories(_hist([3, 4]), alt, eps, np.random.default_rng(1))
    with pytest.raises(ParameterError, match="short"):
        perturb_histories(hist, alt, eps, np.random.default_rng(1), short="clip")


def test_release_round_trip_and_the_model_inputs_are_prefixes_of_one_perturbation(tmp_path):
    from privrec.data.interactions import IdMap

    rows = [[]] + [np.random.default_rng(u).integers(1, 31, 14 + u).tolist() for u in range(1, 6)]
    split = leave_one_out(Sequences.from_rows(rows))
    hist = split.history("test")
    users, _ = IdMap.factorize([f"u{u}" for u in range(1, 6)])
    items, _ = IdMap.factorize([f"i{i}" for i in range(1, 31)])
    alt = random_map(30, np.random.default_rng(0))
    _, g = publish_histories(tmp_path / "rel", hist, users, items, alt, 0.01, 5, record_seed=True, source="toy",
                             alternatives="random")
    cert = json.loads((tmp_path / "rel" / "certificate.json").read_text())
    assert cert["input"]["published_users"] == 5 and "labels" in cert["input"]["not_protected"]
    assert "once" in cert["input"]["perturbed"] and cert["randomness"]["seed"] == 5
    perturbed, published = read_histories(tmp_path / "rel", users, items, hist)
    again, _, _ = perturb_histories(hist, alt, 0.01, np.random.default_rng(5))
    assert published[1:].all() and np.array_equal(perturbed.items, again.items)   # what was written is read back
    private = private_inputs(split, perturbed, published)
    for u in range(1, 6):
        n = split.train.lengths[u]
        assert np.array_equal(private.train.row(u), perturbed.row(u)[:n])
        assert np.array_equal(private.history["valid"].row(u), perturbed.row(u)[:n])
        assert np.array_equal(private.history["test"].row(u), perturbed.row(u))
    other = leave_one_out(Sequences.from_rows([[]] + [r + [1] for r in rows[1:]]))
    with pytest.raises(ParameterError, match="not a release of this split"):
        read_histories(tmp_path / "rel", users, items, other.history("test"))
    # a consumer whose longest history is longer than any written row (here a sixth user, absent from
    # the release): rows read at its width would sit left of their place; refused, not misaligned
    longer = leave_one_out(Sequences.from_rows(rows + [list(range(1, 31))]))
    users6, _ = IdMap.factorize([f"u{u}" for u in range(1, 7)])
    with pytest.raises(ParameterError, match="does not end at position 29"):
        read_histories(tmp_path / "rel", users6, items, longer.history("test"))


def test_reproduce_rr_runs_the_grid_on_one_release_per_cell_and_resumes(tmp_path):
    from conftest import make_frame

    from privrec.data.atomic import write_atomic
    from privrec.experiments import rr as R
    from privrec.training.trainer import TrainConfig

    source = tmp_path / "toy.inter"               # 150 items: room for 100 sampled negatives
    write_atomic(make_frame(n_users=30, n_items=150, per_user=14), source,
                 {"user_id": "token", "item_id": "token", "rating": "float", "timestamp": "float"})
    cfg = R.RRConfig(dataset=str(source), max_len=8, epsilons=(0.1, 0.001), seeds=(0,),
                     alternatives="random", ablation_methods=("RR-BERT4Rec (unidirectional)",),
                     alternatives_ablation=(), positions=(0.0,), positional_epsilon=0.3, vocab_ratio=1.5,
                     train=TrainConfig(epochs=1, batch_size=16, patience=1, select_metric="ndcg@5", progress=False))
    logs = []
    res = R.reproduce(cfg, tmp_path / "out", log=logs.append)
    keys = {r["key"] for r in res["runs"]}
    assert len(keys) == 3 + 3 * 2 + 1 + 1
    releases = sorted(p.name for p in (tmp_path / "out.published").iterdir() if p.is_dir())
    assert releases == ["eps0.001-random-seed0", "eps0.1-random-seed0", "eps0.3-random-pos0.0-seed0"]
    assert set(res["certificates"]) == set(releases)
    rr_run = next(r for r in res["runs"] if r["labels"]["method"] == "RR-BERT4Rec" and r["labels"]["epsilon"] == 0.1)
    assert 150 < rr_run["extra"]["vocab_size"] <= 225 and rr_run["extra"]["published_users"] == 30
    pos_run = next(r for r in res["runs"] if r["labels"]["position"] == 0.0)
    n_window = pos_run["extra"]["window_users"]                  # Fig. 2's subset, with its own means
    assert 0 <= n_window <= pos_run["extra"]["published_users"]
    assert set(pos_run["metrics"]) == {"sampled", "full", "sampled, window users", "full, window users"}
    assert "| hr@1 (window users) | ndcg@5 (window users) |" in (tmp_path / "out" / "results.md").read_text()
    md = (tmp_path / "out" / "results.md").read_text()
    assert ("Adam lr 0.001, lr warmed up linearly over the first 200 steps for BERT4Rec, RR-BERT4Rec, "
            "RR-BERT4Rec (unidirectional)") in md
    assert res["config"]["train_overrides"] == {m: {"warmup_steps": 200} for m in (
        "BERT4Rec", "RR-BERT4Rec", "RR-BERT4Rec (unidirectional)")}
    assert "Fig. 1 analog" in md and "Claim verdict" in md and "Fig. 2 analog" in md and "eps0.1-random-seed0" in md
    assert "**Model private: no.**" in md
    for png in ("fig1_privacy_utility.png", "fig2_window_position.png"):
        assert (tmp_path / "out" / png).stat().st_size > 1000 and f"]({png})" in md
    logs.clear()
    again = R.reproduce(cfg, tmp_path / "out", log=logs.append)      # everything finished: nothing retrained
    assert not any("published" in m for m in logs) and again["summary"] == res["summary"]
    _certificates_travel_with_the_records(cfg, tmp_path, releases, R)
    from privrec.experiments.rr_release import check_release  # a reused release must match the settings
    pos = {"p_outside": cfg.p_outside, "window_fraction": cfg.window_fraction, "window_position": 0.0}
    folder = tmp_path / "out.published" / "eps0.3-random-pos0.0-seed0"
    check_release(folder, 0.3, alternatives="random", positional=pos, source=str(source))
    with pytest.raises(ParameterError, match=r"p_outside = 0.1 \(wanted 0.05\).*Delete the folder"):
        check_release(folder, 0.3, alternatives="random", positional={**pos, "p_outside": 0.05}, source=str(source))
    with pytest.raises(ParameterError, match="mechanism = 'rr' .*epsilon = 0.1 "):
        check_release(tmp_path / "out.published" / "eps0.1-random-seed0", 0.01, alternatives="random",
                      positional=pos, source=str(source))
    with pytest.raises(ParameterError, match="methods"):
        replace(cfg, methods=("SASRec",))
    with pytest.raises(ParameterError, match="epsilon"):
        replace(cfg, epsilons=(0.0,))
    for bad, match in (({"p_outside": 0.5}, "p_outside"), ({"window_fraction": 1.0}, "window_fraction"),
                       ({"positions": (0.0, 1.5)}, "positions")):
        with pytest.raises(ParameterError, match=match):
            replace(cfg, **bad)
    with pytest.raises(ParameterError, match="window_fraction=0.01 is too small for the shortest history"):
        R.reproduce(replace(cfg, window_fraction=0.01), tmp_path / "short", log=logs.append)


def test_window_users_are_those_the_certificate_does_not_count_as_uniform_fallback():
    from privrec.privacy import rr

    lengths = np.array([0, 5, 20, 40, 80, 160, 320])
    alt = random_map(30, np.random.default_rng(0))
    for eps in (1e-1, 1e-3, 1e-5):
        got = rr.has_window(lengths, eps, p_outside=0.05, window_fraction=0.2)
        assert not got[0]
        g = rr.positional_guarantee(eps, alt, p_outside=0.05, window_fraction=0.2, infeasible="uniform",
                                    lengths=lengths[1:], allow_invalid=True)
        assert g.parameters["uniform_fallback_users"] == int((~got[1:]).sum())


def test_subset_metrics_are_the_means_over_those_users():
    from privrec.evaluation.evaluator import EvalConfig, EvalResult

    res = EvalResult("test", {}, 3, EvalConfig(), per_user={"hr@1": np.array([1.0, 0.0, 1.0])},
                     users=np.array([1, 2, 4]))
    rows = np.array([False, True, True, False, False])
    assert res.subset(rows) == {"hr@1": 0.5}
    assert np.isnan(res.subset(np.zeros(5, bool))["hr@1"])


def test_methods_train_at_their_own_settings_and_only_their_runs_change_fingerprint(tmp_path):
    """The transformers' warmup is a per-method setting: it changes only their fingerprint, so GRU4Rec's
    finished runs (trained at the grid's own settings) stay reusable."""
    from types import SimpleNamespace

    from privrec.experiments import rr as R
    from privrec.experiments.runner import RunSpec

    inter = SimpleNamespace(summary=lambda: {"users": 3, "items": 5, "interactions": 9})
    split = SimpleNamespace(history=lambda stage: SimpleNamespace(lengths=np.array([0, 20, 30])))
    exp = R.RRExperiment(R.RRConfig(), inter, split, tmp_path / "p")
    spec = {m: RunSpec(R.run_key(m, None, None, None, 0), 0, {"method": m, "epsilon": None, "alternatives": None,
                                                               "position": None})
            for m in ("GRU4Rec", "BERT4Rec", "RR-BERT4Rec")}
    assert exp.train_config("GRU4Rec").lr == 3e-3 and exp.train_config("BERT4Rec").lr == 3e-3
    assert exp.train_config("GRU4Rec").warmup_steps == 0
    assert exp.train_config("BERT4Rec").warmup_steps == exp.train_config("RR-BERT4Rec").warmup_steps == 200
    fp = {m: exp.fingerprint_of(s) for m, s in spec.items()}
    assert fp["BERT4Rec"] == fp["RR-BERT4Rec"] != fp["GRU4Rec"] == exp.fingerprint()
    assert exp.train_config("GRU4Rec") == R.RRConfig().train and R.RRConfig().train.patience is None


def _certificates_travel_with_the_records(cfg, tmp_path, releases, R):
    """N releases -> N certificates on a fresh clone (no release folders, no earlier report): each private
    run's record carries its release's certificate; runs recorded before records did get it once, by
    re-publishing the same release from its seed."""
    import json
    import shutil

    from privrec.experiments.report import RECORDED_RELEASE

    out, published = tmp_path / "out", tmp_path / "out.published"
    progress = tmp_path / "out.progress.jsonl"
    lines = [json.loads(x) for x in progress.read_text().splitlines()]
    private = [x for x in lines if x["run"]["labels"]["epsilon"] is not None]
    assert private and all(x["run"]["extra"]["certificate"]["release"] in releases for x in private)
    before = {n: json.loads((published / n / "certificate.json").read_text())["guarantee"] for n in releases}
    shutil.rmtree(published)
    shutil.rmtree(out)                                                   # a fresh clone: records only
    res = R.reproduce(cfg, out, log=lambda m: None, train_missing=False)
    assert set(res["certificates"]) == set(releases) and not published.exists()
    assert all(c["folder"] == RECORDED_RELEASE for c in res["certificates"].values())
    assert {n: c["guarantee"] for n, c in res["certificates"].items()} == before
    assert "‡ 3 release folder(s) not on the machine" in (out / "results.md").read_text()
    for x in lines:                                                      # records written before certificates
        x["run"]["extra"].pop("certificate", None)
    progress.write_text("".join(json.dumps(x) + "\n" for x in lines))
    logs: list[str] = []
    res = R.reproduce(cfg, out, log=logs.append, train_missing=False)
    assert any(f"certificate of {len(private)} finished run(s)" in m for m in logs)
    assert {n: c["guarantee"] for n, c in res["certificates"].items()} == before     # republished, same seed
    assert sorted(p.name for p in published.iterdir() if p.is_dir()) == releases
    logs.clear()
    R.reproduce(cfg, out, log=logs.append, train_missing=False)                      # recorded once
    assert not any("certificate of" in m for m in logs)


def test_validity_says_what_share_of_history_items_is_published_unchanged_and_the_per_item_ldp():
    """Known answer at ε = 1 (target ε/(1+ε) = 1/2): n = 1 keeps with 1/2, n = 3 with 2^(-1/3); the expected
    unchanged share weighs users by their items; per-item LDP ln(k/(1-k)) runs from 0 to ln(k3/(1-k3))."""
    import math

    import numpy as np

    from privrec.experiments.rr_report import validity

    (v,) = validity(np.array([0, 1, 3]), [1.0])
    k3 = 2 ** (-1 / 3)
    assert v["items_kept"] == pytest.approx((0.5 + 3 * k3) / 4)
    assert v["item_ldp"] == pytest.approx([0.0, math.log(k3 / (1 - k3))])
    assert v["users"] == 2 and v["outside_validity"] == 0.0
