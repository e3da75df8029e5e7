"""EdgeRand: each user's behaviour graph published once with Gaussian noise; a prefix reads its block."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch
from test_srgnn import _featured_data

from privrec.errors import ParameterError
from privrec.models import build
from privrec.models.srgnn import graphs
from privrec.privacy.graph import session_graphs


def _prefix_data():
    from privrec.data.sequences import to_sequences
    from privrec.experiments.sequential import make_split

    inter, _ = _featured_data()
    return inter, make_split(to_sequences(inter), "prefixes")


def _cfg(**kw):
    from privrec.experiments.sequential import SequentialConfig
    from privrec.training.trainer import TrainConfig

    base = dict(dataset="tiny", model="edgerand", split="prefixes", max_len=10,
                model_config={"hidden": 8, "user_dim": 4}, train=TrainConfig(epochs=1, batch_size=64, progress=False),
                epsilon2=5.0, epsilon1=20.0)
    return SequentialConfig(**{**base, **kw})


def test_a_prefix_reads_the_block_of_its_users_graph():
    """Without repeated items a prefix's count graph is the top-left block of the whole sequence's."""
    full = np.array([[0, 0, 7, 3, 9, 4, 8]])
    model = build("edgerand", n_items=12, n_users=2, n_features=3, max_len=7, hidden=8, user_dim=4)
    whole = torch.zeros(2, 7, 7, dtype=torch.float16)
    whole[1] = torch.from_numpy(session_graphs(full, pad_to=7).a_out).to(torch.float16)
    model.set_graphs(whole)
    prefixes = torch.tensor([[0, 0, 0, 0, 7, 3, 9], [0, 0, 0, 7, 3, 9, 4]])
    nodes, alias, a_in, a_out = model.adjacency(prefixes, {"user": torch.tensor([1, 1])})
    want_nodes, want_alias, want_in, want_out = graphs(prefixes, normalise=False)
    assert torch.equal(nodes, want_nodes) and torch.equal(alias, want_alias)
    torch.testing.assert_close(a_out, want_out)
    torch.testing.assert_close(a_in, want_in)
    with pytest.raises(ValueError, match="shape"):
        model.set_graphs(torch.zeros(3, 7, 7))


def test_run_publishes_once_and_certifies_the_whole_run():
    from privrec.experiments.sequential import run
    from privrec.experiments.sequential_report import markdown

    res = run(_cfg(), log=lambda m: None, data=_prefix_data())
    g = res["runs"][0]["graph_guarantee"]
    assert g["mechanism"] == "edgerand" and g["epsilon"] == pytest.approx(5.0, rel=1e-3)
    assert g["parameters"]["graphs_per_user"] == 1                       # one release, read by every epoch
    assert res["feature_guarantee"]["epsilon"] == pytest.approx(20.0)
    assert "EdgeRand graphs: epsilon 5" in markdown(res)


def test_published_graphs_are_the_counts_plus_noise_of_the_stated_std():
    from privrec.experiments import model_inputs as PI
    from privrec.experiments.sequential import prefix_task

    inter, split = _prefix_data()
    task = prefix_task(split, inter.n_items, 10)
    cfg = _cfg()
    a, g = PI.edge_rand_graphs(cfg, task, inter.n_users, lambda m: None)
    again, _ = PI.edge_rand_graphs(cfg, task, inter.n_users, lambda m: None)
    assert torch.equal(a, again)                                         # seeded by release_seed
    counts = session_graphs(task.sequences.to_padded(10), pad_to=10)
    noise = a.double().numpy() - counts.a_out
    real = np.arange(10)[None, :] < counts.n_nodes[:, None]
    block = real[:, :, None] & real[:, None, :]
    assert np.all(noise[~block] == 0)                                    # padding stays 0 (node count is public)
    assert noise[block].std() == pytest.approx(g.parameters["noise_std"], rel=0.05)


def test_bad_settings_are_refused():
    from privrec.experiments.sequential import run

    data = _prefix_data()
    with pytest.raises(ParameterError, match="epsilon2"):
        run(_cfg(epsilon2=None), log=lambda m: None, data=data)
    with pytest.raises(ParameterError, match="protocol dipsgnn"):
        run(_cfg(split="leave_one_out"), log=lambda m: None, data=_featured_data())
    with pytest.raises(ParameterError, match="epsilon2"):
        run(_cfg(model="srgnn", epsilon1=None), log=lambda m: None, data=data)
    inter, split = data
    seqs = split.test
    repeated = replace(split, test=replace(seqs, items=np.where(np.arange(len(seqs.items)) % 2 == 0, seqs.items,
                                                                  np.roll(seqs.items, 1))))
    with pytest.raises(ParameterError, match="repeated"):
        run(_cfg(), log=lambda m: None, data=(inter, repeated))


def test_no_user_features_is_the_minus_u_ablation(tmp_path):
    from privrec.experiments.sequential import run

    res = run(_cfg(model="dipsgnn", epsilon1=None, user_features=False), log=lambda m: None, data=_prefix_data(),
              out_dir=tmp_path)
    assert "feature_guarantee" not in res
    ckpt = torch.load(tmp_path / "dipsgnn-seed0.pt", map_location="cpu", weights_only=False)
    assert "user_ids" in str(ckpt)                                  # the paper: "initialized by user id"
    from privrec.models import build

    model = build("dipsgnn", n_items=10, n_users=5, n_features=1, user_ids=True, hidden=8, user_dim=3)
    emb = model.user_vector({"user": torch.tensor([1, 3, 1])})
    assert emb.shape == (3, 3) and torch.equal(emb[0], emb[2]) and not torch.equal(emb[0], emb[1])
    assert "user_ids" not in build("apgnn", n_items=10, n_users=5, n_features=2).config()   # unchanged configs
    with pytest.raises(ParameterError, match="give one"):
        run(_cfg(model="dipsgnn", user_features=False), log=lambda m: None, data=_prefix_data())


def test_dipsgnn_without_noise_is_certified_as_no_guarantee_and_reported(tmp_path):
    from privrec.experiments.sequential import run
    from privrec.experiments.sequential_report import markdown

    res = run(_cfg(model="dipsgnn", epsilon1=None, epsilon2=None, model_config={"hidden": 8, "user_dim": 4, "sigma": 0.0}),
              log=lambda m: None, data=_prefix_data())
    g = res["runs"][0]["graph_guarantee"]
    assert g["epsilon"] == "inf" and not g["valid"] and "no guarantee" in g["validity"]
    assert "true epsilon ∞" in markdown(res) and "no noise, no guarantee" in markdown(res)


def test_cloze_models_are_refused_under_the_prefixes_protocol():
    from privrec.experiments.sequential import run

    with pytest.raises(ParameterError, match="cloze"):
        run(_cfg(model="bert4rec", epsilon1=None, epsilon2=None, model_config={"hidden": 8}), log=lambda m: None,
            data=_prefix_data())
