"""PriCDR's parts (issue 16, first step): random hold-out, rating-matrix releases of one domain,
the interaction task, and the matrix models (BPR-MF, NeuMF, DMF, HeteroCDR and its SYM ablation)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from privrec.data.crossdomain import build, split_by_column
from privrec.data.sequences import Sequences
from privrec.data.splits import random_holdout
from privrec.errors import DataFormatError, ReleaseError
from privrec.evaluation.evaluator import EvalConfig, evaluate
from privrec.models import build as build_model
from privrec.release.crossdomain import publish_domain_matrix, publish_domain_rows, read_domain_matrix
from privrec.release.publish import project_ratings
from privrec.training.tasks import InteractionTask, task_for
from tests.conftest import fit_steps


def _clustered(n_users=48, n_items=40, per=10, clusters=4, seed=0) -> pd.DataFrame:
    """Users in clusters; each cluster rates items of its own block in both domains (a signal the
    source domain carries about the target)."""
    rng = np.random.default_rng(seed)
    block = n_items // clusters
    rows = []
    for u in range(n_users):
        c = u % clusters
        for dom in ("A", "B"):
            items = c * block + rng.choice(block, per, replace=False)
            rows += [{"user_id": f"u{u}", "item_id": f"{dom}{i}", "timestamp": float(t), "domain": dom}
                     for t, i in enumerate(items)]
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def data():
    a, b = split_by_column(_clustered(), "domain")
    return build(a, b, min_user=5, min_item=1)


def test_random_holdout_partitions_each_user_and_is_seeded():
    seqs = Sequences.from_rows([[], [1, 2, 3, 4, 5, 6], [7, 8], [9, 10, 11]])
    a, b, c = random_holdout(seqs, 0), random_holdout(seqs, 0), random_holdout(seqs, 1)
    for u in (1, 3):
        got = np.concatenate([a.train.row(u), a.valid.row(u), a.test.row(u)])
        assert sorted(got) == sorted(seqs.row(u)) and len(a.valid.row(u)) == len(a.test.row(u)) == 1
        assert list(a.train.row(u)) == [x for x in seqs.row(u) if x in a.train.row(u)]        # order kept
    assert list(a.train.row(2)) == [7, 8] and len(a.valid.row(2)) == len(a.test.row(2)) == 0  # too short: train only
    assert all(np.array_equal(getattr(a, p).items, getattr(b, p).items) for p in ("train", "valid", "test"))
    draws = {tuple(random_holdout(seqs, s).test.items) for s in range(20)}
    assert len(draws) > 5                                                                      # random, not temporal
    with pytest.raises(Exception, match="min_len >= 3"):
        random_holdout(seqs, 0, min_len=2)
    assert not np.array_equal(a.test.items, c.test.items) or not np.array_equal(a.valid.items, c.valid.items)


def test_domain_matrix_release_round_trip_and_refusals(data, tmp_path):
    m = data.matrix("A")
    assert m.shape == (data.n_users, data.domain("A").n_items) and set(np.unique(m.data)) == {1.0}
    assert m.nnz == int(data.domain("A").sequences.lengths.sum())
    rel, g = publish_domain_matrix(tmp_path / "pub", data, "A", "jlt", 2.0, 3, n_prime=16)
    got = read_domain_matrix(tmp_path / "pub", data, "A")
    expected, _ = project_ratings(m, "jlt", 2.0, np.random.default_rng(3), n_prime=16, max_change=1.0)
    assert got.shape == (data.n_users + 1, 16) and not got[0].any()
    np.testing.assert_allclose(got[1:], expected, rtol=1e-6, atol=1e-6)
    cert = json.loads((tmp_path / "pub" / "certificate.json").read_text())
    assert cert["kind"] == "rating-matrix" and cert["input"]["domain"] == "A" and cert["input"]["n_prime"] == 16
    with pytest.raises(ReleaseError, match="publishes domain 'A', expected 'B'"):
        read_domain_matrix(tmp_path / "pub", data, "B")
    with pytest.raises(DataFormatError, match="not published"):
        read_domain_matrix(tmp_path / "pub", _more_users(), "A")
    publish_domain_rows(tmp_path / "seq", data, "A", "sdp", 2.0, 5, 0)
    with pytest.raises(ReleaseError, match="not a published rating matrix"):
        read_domain_matrix(tmp_path / "seq", data)
    (tmp_path / "nocert").mkdir()
    with pytest.raises(Exception, match="certificate"):
        read_domain_matrix(tmp_path / "nocert", data)


def _more_users():
    a, b = split_by_column(_clustered(n_users=60), "domain")
    return build(a, b, min_user=5, min_item=1)


def test_publish_aux_jlt_cli(tmp_path):
    from privrec.cli import main

    src = tmp_path / "both.csv"
    _clustered().to_csv(src, index=False)
    out = tmp_path / "rel"
    assert main(["publish", "sjlt", str(src), "--domain-field", "domain", "--aux", "A", "-o", str(out),
                 "--epsilon", "4", "--seed", "1", "--n-prime", "8", "--q", "0.5"]) == 0
    cert = json.loads((out / "certificate.json").read_text())
    assert cert["input"]["mechanism"] == "sjlt" and cert["input"]["n_prime"] == 8 and (out / "rel.parquet").is_file()
    assert main(["publish", "jlt", str(src), "--domain-field", "domain", "--aux", "A", "-o", str(tmp_path / "x"),
                 "--epsilon", "0"]) == 2 and not (tmp_path / "x").exists()


def test_interaction_task_negatives_are_never_training_items(data):
    split = random_holdout(data.domain("B").sequences, 0)
    task = InteractionTask(split, data.domain("B").n_items, n_negatives=3)
    batches = list(task.train_batches(64, np.random.default_rng(0)))
    assert sum(len(b["user"]) for b in batches) == len(split.train.items) == task.n_train_targets
    for b in batches:
        assert b["item"].shape[1] == 4 and (b["label"][:, 0] == 1).all() and (b["label"][:, 1:] == 0).all()
        for u, items in zip(b["user"].tolist(), b["item"].tolist()):
            train = set(split.train.row(u).tolist())
            assert items[0] in train and not train & set(items[1:])


def _model(name, data, split, pub=None, **kw):
    n_items = data.domain("B").n_items
    args = dict(n_users=data.n_users + 1, n_items=n_items)
    if pub is not None:
        args["n_source"] = pub.shape[1]
    model = build_model(name, **args, **kw)
    if hasattr(model, "set_matrix"):
        mat = torch.zeros(data.n_users + 1, n_items + 1)
        mat[torch.from_numpy(split.train.row_ids().astype(np.int64)), torch.from_numpy(split.train.items.astype(np.int64))] = 1
        model.set_matrix(mat)
    if pub is not None:
        model.set_source(torch.from_numpy(pub).float())
    return model


@pytest.mark.parametrize("name,kw", [("bpr", {}), ("neumf", {"dim": 16}), ("dmf", {"hidden": [32, 16]}),
                                     ("heterocdr", {"hidden": [32, 16]}),
                                     ("heterocdr", {"hidden": [32, 16], "symmetric": True}),
                                     ("ddtcdr", {"dim": 32, "hidden": [32, 16]})])
def test_matrix_models_learn_the_clusters(data, name, kw):
    torch.manual_seed(0)
    split = random_holdout(data.domain("B").sequences, 0)
    pub = None
    if name in ("heterocdr", "ddtcdr"):     # the raw source (HeteroCDR-raw): on 48 users a release is all noise
        pub = np.zeros((data.n_users + 1, data.domain("A").n_items))
        pub[1:] = data.matrix("A").toarray()
    model = _model(name, data, split, pub, **kw)
    task = task_for(model, split, data.domain("B").n_items, 0)
    cfg = EvalConfig(mode="full", ks=(10,), metrics=("hr",), mask_history=True)
    before = evaluate(model.eval(), task, "test", cfg).metrics["hr@10"]
    model.train()
    fit_steps(model, task, epochs=30, lr=1e-2, batch_size=64)
    after = evaluate(model, task, "test", cfg).metrics["hr@10"]
    # each cluster owns 10 items, 8 of them seen in training: a model that learned the clusters ranks
    # the held-out item in the top 10 of the ~32 unseen; chance is 10/32
    assert after > 0.8 and after > before, (before, after)


def test_heterocdr_alignment_is_per_user_and_dmf_scores_follow_loaded_weights(data, tmp_path):
    torch.manual_seed(0)
    split = random_holdout(data.domain("B").sequences, 0)
    publish_domain_matrix(tmp_path / "pub", data, "A", "jlt", 64.0, 0, n_prime=16, allow_large_delta=True)
    pub = read_domain_matrix(tmp_path / "pub", data, "A")
    model = _model("heterocdr", data, split, pub, hidden=[32, 16])
    users = torch.tensor([1, 2, 3])
    batch = {"user": users, "item": torch.tensor([[1, 2]] * 3), "label": torch.tensor([[1.0, 0.0]] * 3)}
    got = model.losses(batch)["ali"]
    u_a, u_b = model.source_encoder(model.source[users]), model.user_tower(model.matrix[users])
    n = (model.matrix[users] > 0).sum(1).float()                        # each user's training interactions
    per_user = ((u_a - u_b) ** 2).sum(1)
    assert got.item() == pytest.approx((per_user / (2 * n)).mean().item(), rel=1e-6)   # K = 2 items a row
    broadcast = ((u_a[:, None] - u_b[None]) ** 2).sum(-1).mean()       # the reference code's loss: every pair
    assert abs(broadcast.item() - got.item()) > 1e-6
    # an epoch's rows (user i n_i times) add up to Eq. 7's sum over users, each once, over K
    every = torch.repeat_interleave(users, n.long())
    epoch = model.losses({"user": every, "item": torch.tensor([[1, 2]]).expand(len(every), 2),
                          "label": torch.tensor([[1.0, 0.0]]).expand(len(every), 2)})["ali"] * len(every)
    assert epoch.item() == pytest.approx(per_user.sum().item() / 2, rel=1e-5)
    assert model.source.std().item() == pytest.approx(1.0, rel=1e-5)     # the release rescaled to unit std
    model.eval()
    s1 = model.score({"user": users}).clone()
    other = _model("heterocdr", data, split, pub, hidden=[32, 16])
    torch.manual_seed(1)
    for p in other.parameters():
        torch.nn.init.normal_(p)
    model.load_state_dict(other.state_dict())
    s2 = model.score({"user": users})
    assert torch.isinf(s2[:, 0]).all() and not torch.allclose(s1[:, 1:], s2[:, 1:])
    torch.testing.assert_close(s2, other.eval().score({"user": users}))


@pytest.mark.parametrize("symmetric", [False, True])
def test_heterocdr_losses_equal_the_per_row_formulas(data, symmetric):
    """The source autoencoder runs once per distinct user and SYM computes only the batch's logits:
    values and gradients must equal Eq. 8 computed row by row over full decoder outputs."""
    torch.manual_seed(0)
    split = random_holdout(data.domain("B").sequences, 0)
    pub = np.random.default_rng(0).normal(size=(data.n_users + 1, 12))
    model = _model("heterocdr", data, split, pub, hidden=[32, 16], symmetric=symmetric)
    users = torch.tensor([3, 1, 3, 7, 1, 3])
    items = torch.tensor([[2, 5, 1]] * 6)
    label = torch.tensor([[1.0, 0.0, 0.0]] * 6)
    got = model.losses({"user": users, "item": items, "label": label})
    fast = torch.autograd.grad(sum(got.values()), list(model.parameters()))
    src = model.source[users]
    u_a, u_b = model.source_encoder(src), model.user_tower(model.matrix[users])
    w = model._user_weight(users, 3)
    want = {"rec": (w * (model.source_decoder(u_a) - src).pow(2).mean(-1)).mean(),
            "ali": (w * (u_a - u_b).pow(2).sum(-1)).mean()}
    if symmetric:
        want["reg"] = torch.nn.functional.binary_cross_entropy_with_logits(
            model.target_decoder(u_b).gather(1, items), label)
        torch.testing.assert_close(model.pair_logits(users, items), model.target_decoder(u_b).gather(1, items))
    else:                                                       # DMF's term (its towers: tested below)
        want["reg"] = torch.nn.functional.binary_cross_entropy(model._prob(u_b, items), label)
    for k in want:
        torch.testing.assert_close(got[k], want[k], rtol=1e-5, atol=1e-7)
    plain = torch.autograd.grad(sum(want.values()), list(model.parameters()))
    for a, b in zip(fast, plain):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-7)


def test_fast_scoring_paths_equal_the_plain_formulas():
    """DMF's towers read only the nonzeros of distinct rows/columns (embedding_bag over a cached CSR) and
    NeuMF factors its all-items score: both must give the dense formulas' numbers and gradients, and DMF
    must follow a new matrix."""
    torch.manual_seed(0)
    dmf = build_model("dmf", n_users=7, n_items=9, hidden=(6, 4))
    mat = (torch.rand(7, 10) < 0.4).float() * torch.randint(1, 6, (7, 10)).float()
    mat[:, 0] = 0
    dmf.set_matrix(mat)
    users, items = torch.tensor([0, 3, 6, 3]), torch.tensor([[1, 2], [9, 9], [0, 5], [4, 1]])
    torch.testing.assert_close(dmf.user_embedding(users), dmf.user_tower(mat[users]))
    torch.testing.assert_close(dmf.item_embedding(items), dmf.item_tower(mat[:, items.reshape(-1)].T).reshape(4, 2, -1))
    grads = []
    for emb in (lambda: (dmf.user_embedding(users), dmf.item_embedding(items)),
                lambda: (dmf.user_tower(mat[users]), dmf.item_tower(mat[:, items.reshape(-1)].T))):
        dmf.zero_grad()
        u, v = emb()
        (u.pow(2).sum() + v.sum()).backward()
        grads.append([dmf.user_tower[0].weight.grad.clone(), dmf.item_tower[0].weight.grad.clone()])
    for fast, dense in zip(*grads):
        torch.testing.assert_close(fast, dense)
    mat2 = mat.roll(1, dims=0)
    dmf.set_matrix(mat2)
    torch.testing.assert_close(dmf.user_embedding(users), dmf.user_tower(mat2[users]))
    neumf = build_model("neumf", n_users=7, n_items=9, dim=8).eval()
    all_items = torch.arange(10).expand(4, -1)
    expected = neumf.pair_logits(users, all_items)
    expected[:, 0] = -torch.inf
    torch.testing.assert_close(neumf.score({"user": users}, chunk=3), expected)


def test_matrix_release_bad_settings(data, tmp_path):
    """sd outside (0, 1] is refused with nothing written; n' above the item count is allowed (the
    guarantee does not depend on it) but warned about."""
    from privrec.errors import ParameterError

    with pytest.raises(ParameterError, match=r"\(0, 1\]"):
        publish_domain_matrix(tmp_path / "bad", data, "A", "jlt", 1.0, 0, n_prime=8, keep=0.0)
    assert not (tmp_path / "bad").exists()
    with pytest.warns(UserWarning, match="exceeds"):
        publish_domain_matrix(tmp_path / "wide", data, "A", "jlt", 1.0, 0, n_prime=data.domain("A").n_items + 5)
    _, g = publish_domain_matrix(tmp_path / "thin", data, "A", "jlt", 1.0, 0, n_prime=8, keep=0.5)
    cert = json.loads((tmp_path / "thin" / "certificate.json").read_text())
    assert cert["input"]["kept_fraction"] == 0.5
    assert cert["input"]["interactions"] < int(data.matrix("A").nnz)


def test_signal_share_bounds_the_release_energy(data, tmp_path):
    """The report's signal share nnz / (nnz + w² m) bounds E‖R_c M^T‖² / E‖Y‖² of a real release:
    ‖Y‖² of a published matrix matches ‖R_c‖² + w² m within sampling error."""
    from privrec.experiments.pricdr_report import signal_share
    from privrec.release.folder import read_release

    _, g = publish_domain_matrix(tmp_path / "rel", data, "A", "jlt", 64.0, 0, n_prime=64, calibration="tight")
    cert = read_release(tmp_path / "rel").certificate
    w, m = g.parameters["noise_std"], g.parameters["n_users"]
    r = data.matrix("A").toarray().astype(float)
    rc = r - r.mean(axis=1, keepdims=True)
    energy = read_domain_matrix(tmp_path / "rel", data, "A")[1:]
    expected = (rc ** 2).sum() + w ** 2 * m
    assert abs((energy ** 2).sum() / expected - 1) < 0.1
    share = signal_share(cert)
    assert share == pytest.approx(r.sum() / (r.sum() + w ** 2 * m)) and (rc ** 2).sum() / expected <= share


def test_ddtcdr_source_pairs_are_labelled_by_the_source_and_scores_are_the_pair_formula(data):
    """DDTCDR's source half: one of the user's own source items plus uniform items, each labelled by the raw
    source matrix; users without source items add none; X^T X = I at init; all-items score = pair logits."""
    torch.manual_seed(0)
    n_src = data.domain("A").n_items
    model = build_model("ddtcdr", n_users=data.n_users + 1, n_items=data.domain("B").n_items, n_source=n_src,
                        dim=8, hidden=[8])
    src = torch.zeros(data.n_users + 1, n_src)
    src[1:] = torch.from_numpy(data.matrix("A").toarray()).float()
    model.set_source(src)
    users = torch.tensor([0, 1, 2, 5, 5])                   # user 0 is padding: no source items
    kept, items, labels = model.source_pairs(users)
    assert kept.tolist() == [1, 2, 5, 5] and items.shape == (4, 1 + model.n_negatives)
    assert (labels[:, 0] == 1).all() and torch.equal(labels, src[kept[:, None], items])
    expected = model.pair_logits(users, torch.arange(data.domain("B").n_items + 1).expand(5, -1))
    expected[:, 0] = -torch.inf
    torch.testing.assert_close(model.score({"user": users}, chunk=2), expected)


def test_a_models_own_settings_change_only_its_runs_fingerprint(data):
    from dataclasses import replace

    from privrec.experiments.pricdr import PriCDRConfig, PriCDRExperiment
    from privrec.experiments.runner import RunSpec

    def fps(cfg):
        exp = PriCDRExperiment(cfg, data, None)
        return {m: exp.fingerprint_of(RunSpec(m, 0, exp.cell(m, "B", "A"))) for m in ("BPR", "DMF", "PriCDR-J")}

    base = PriCDRConfig(directions=(("B", "A"),), sweep_direction=None)
    a, b = fps(base), fps(replace(base, alpha=1.0))
    assert a["BPR"] == b["BPR"] and a["DMF"] == b["DMF"] and a["PriCDR-J"] != b["PriCDR-J"]
    c = fps(replace(base, dmf_output="remap"))
    assert c["BPR"] == a["BPR"] and c["DMF"] != a["DMF"] and c["PriCDR-J"] == a["PriCDR-J"]
    d = fps(replace(base, n_negatives=2))                # read by every model
    assert all(d[m] != a[m] for m in a)


def test_sweep_runs_get_the_sweep_cap_and_table_1s_setting_its_own_sweep_run(data):
    from dataclasses import replace

    from privrec.experiments.pricdr import PriCDRConfig, PriCDRExperiment

    cfg = PriCDRConfig(directions=(("B", "A"),), sweep_direction=("B", "A"), seeds=(0,), sweep_seeds=(0,),
                       sweep_epochs=5)
    exp = PriCDRExperiment(cfg, data, Path("pub"))
    runs = {s.key: s for s in exp.runs()}
    caps = {k: exp.cap_of(s)[0] for k, s in runs.items()}
    from privrec.experiments.pricdr import run_key
    table = exp.cell("PriCDR-J", "B", "A")
    assert caps[run_key(table, 0)] == cfg.train.epochs
    # Table 1's setting is also a point of Figs. 2, 3 and 5: there it is its own run under the sweep cap,
    # like the rest of each curve, on the same release as Table 1's run (the release path ignores the budget)
    shared = {**table, "budget": "sweep"}
    assert run_key(shared, 0) == run_key(table, 0)[:-2] + "|sweep|0" and caps[run_key(shared, 0)] == 5
    assert exp.release(runs[run_key(shared, 0)].labels, 0) == exp.release(table, 0)
    assert caps[run_key({**exp.cell("PriCDR-J", "B", "A", eps=64.0), "budget": "sweep"}, 0)] == 5
    assert sum(c == 5 for c in caps.values()) == len(caps) - len(cfg.methods)
    unc = PriCDRExperiment(replace(cfg, sweep_epochs=None), data, None)       # no sweep cap: one run per setting
    assert {s.key for s in unc.runs()} >= {run_key(table, 0)} and not any("sweep" in s.key for s in unc.runs())
    with pytest.raises(Exception, match="sweep_epochs"):
        PriCDRConfig(sweep_epochs=0)


def test_figures_keeps_only_the_chosen_sweeps(data):
    """``--figures 2``: Fig. 2's 16 runs (8 paper epsilons x J, S) and no other sweep; an unknown name is refused."""
    from privrec.errors import ParameterError
    from privrec.experiments.pricdr import PriCDRConfig, PriCDRExperiment, only_figures

    cfg = PriCDRConfig(directions=(("B", "A"),), sweep_direction=("B", "A"), seeds=(0,), **only_figures(["2"]))
    sweep = PriCDRExperiment(cfg, data, Path("pub")).sweep_cells()
    assert len(sweep) == 2 * len(cfg.sweep_epsilons) == 16
    assert {c["method"] for c in sweep} == {"PriCDR-J", "PriCDR-S"} and {c["sd"] for c in sweep} == {1.0}
    both = PriCDRConfig(directions=(("B", "A"),), sweep_direction=("B", "A"), **only_figures(["3", "2b"]))
    assert len(PriCDRExperiment(both, data, Path("pub")).sweep_cells()) == 8 + 5
    for bad in (["6"], []):
        with pytest.raises(ParameterError, match="figures"):
            only_figures(bad)


def test_training_states_leave_the_data_out_and_refuse_other_data(data, tmp_path):
    """HeteroCDR's matrix and published source rows are the caller's data: a training state (and the best
    weights in it) carries a digest of them, not the tensors; a resume with the same data continues to the
    uninterrupted result, one with another release is refused."""
    from privrec.errors import CheckpointError
    from privrec.training.trainer import TrainConfig, Trainer

    split = random_holdout(data.domain("B").sequences, 0)
    pub = np.zeros((data.n_users + 1, data.domain("A").n_items))
    pub[1:] = data.matrix("A").toarray()

    def trainer(source, epochs):
        torch.manual_seed(0)
        model = _model("heterocdr", data, split, source, hidden=[16, 8])
        cfg = TrainConfig(epochs=epochs, batch_size=64, lr=1e-2, patience=10, progress=False, seed=1, device="cpu")
        return Trainer(model, task_for(model, split, data.domain("B").n_items, 0), cfg,
                       EvalConfig(mode="full", ks=(10,), metrics=("hr", "ndcg"), mask_history=True))

    whole = trainer(pub, 4).fit()
    state = tmp_path / "run.state"
    trainer(pub, 2).fit(state)
    payload = torch.load(state, weights_only=True)
    for weights in (payload["model"], payload["best_state"]):
        assert "source" not in weights and "matrix" not in weights and "item_tower.0.weight" in weights
    assert len(payload["data_digest"]) == 64
    got = trainer(pub, 4).fit(state)
    assert got.history == whole.history and got.best_valid.metrics == whole.best_valid.metrics
    other = pub.copy()
    other[1, 0] = 1 - other[1, 0]
    with pytest.raises(CheckpointError, match="other input data"):
        trainer(other, 6).fit(state)
