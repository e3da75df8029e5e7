"""SR-GNN: per-prefix item-transition graphs (DIPSGNN Eq. 4) built for a batch at once, and the model."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import loss_drop

from privrec.models import build
from privrec.models.srgnn import graphs


def _reference_graph(row: list[int], n: int, weighted: bool = True):
    """The obvious loop: distinct items in first-occurrence order, transition counts, row-normalised."""
    items = [i for i in row if i > 0]
    nodes = list(dict.fromkeys(items))
    idx = {v: k for k, v in enumerate(nodes)}
    counts = np.zeros((n, n))
    for a, b in zip(items[:-1], items[1:]):
        counts[idx[a], idx[b]] += 1
    if not weighted:
        counts = (counts > 0).astype(float)
    out = counts / np.maximum(counts.sum(1, keepdims=True), 1)
    inn = counts.T / np.maximum(counts.T.sum(1, keepdims=True), 1)
    alias = [idx[i] if i > 0 else 0 for i in row]
    return nodes + [0] * (n - len(nodes)), alias, inn, out


def test_known_graph():
    nodes, alias, a_in, a_out = graphs(torch.tensor([[0, 0, 5, 2, 5, 7, 5]]))
    assert nodes[0].tolist() == [5, 2, 7]
    assert alias[0].tolist() == [0, 0, 0, 1, 0, 2, 0]
    # transitions 5->2, 2->5, 5->7, 7->5: node 5 goes to 2 and 7, half each; 2 and 7 go to 5
    torch.testing.assert_close(a_out[0], torch.tensor([[0, .5, .5], [1, 0, 0], [1, 0, 0]]))
    torch.testing.assert_close(a_in[0], torch.tensor([[0, .5, .5], [1, 0, 0], [1, 0, 0]]))
    counts = graphs(torch.tensor([[0, 0, 5, 2, 5, 7, 5]]), normalise=False)[3]     # DIPSGNN: raw counts
    torch.testing.assert_close(counts[0], torch.tensor([[0., 1, 1], [1, 0, 0], [1, 0, 0]]))


@pytest.mark.parametrize("weighted", [True, False])
def test_batched_graphs_equal_the_loop(weighted):
    rng = np.random.default_rng(0)
    rows = []
    for _ in range(40):
        length = int(rng.integers(0, 9))
        rows.append([0] * (8 - length) + rng.integers(1, 6, size=length).tolist())   # repeats and self-loops
    nodes, alias, a_in, a_out = graphs(torch.tensor(rows), weighted)
    n = nodes.shape[1]
    for b, row in enumerate(rows):
        ref_nodes, al, i, o = _reference_graph(row, n, weighted)
        assert nodes[b].tolist() == ref_nodes and alias[b].tolist() == al, row
        np.testing.assert_allclose(a_in[b].numpy(), i, atol=1e-7)
        np.testing.assert_allclose(a_out[b].numpy(), o, atol=1e-7)


def test_scores_shape_padding_and_prefix_only():
    torch.manual_seed(0)
    model = build("srgnn", n_items=30, max_len=6, hidden=16).eval()
    seq = torch.tensor([[0, 0, 3, 4, 5, 6], [1, 2, 3, 4, 5, 6]])
    scores = model.score({"seq": seq})
    assert scores.shape == (2, 31) and torch.isinf(scores[:, 0]).all()
    padded = torch.tensor([[0, 0, 0, 0, 3, 4, 5, 6]])              # more front padding changes nothing
    torch.testing.assert_close(model.score({"seq": padded})[0], scores[0])


def _successor_prefixes(n: int, n_users: int = 1) -> dict:
    """Every prefix (up to 5 items) of n cyclic runs i, i+1, ...: one sample each, next item as label."""
    seqs, targets, users = [], [], []
    for s in range(n):
        r = [(s + j) % n + 1 for j in range(6)]
        for k in range(1, 6):
            seqs.append([0] * (5 - k) + r[:k])
            targets.append([0] * 4 + [r[k]])
            users.append(s % n_users)
    return {"seq": torch.tensor(seqs), "target": torch.tensor(targets), "user": torch.tensor(users)}


def test_learns_a_successor_rule_on_prefixes():
    torch.manual_seed(0)
    batch = _successor_prefixes(20)
    model = build("srgnn", n_items=20, max_len=5, hidden=32)
    first, last = loss_drop(model, batch, 100)
    assert last < 0.2 * first
    hits = (model.eval().score(batch).argmax(1) == batch["target"][:, -1]).float().mean()
    assert hits > 0.9


def test_prefix_task_and_bad_stride():
    from privrec.data.sequences import Sequences
    from privrec.data.splits import leave_one_out
    from privrec.errors import ParameterError
    from privrec.training.tasks import task_for

    split = leave_one_out(Sequences.from_rows([[], [1, 2, 3, 4, 5], [2, 3, 4, 5, 6, 7]]))
    model = build("srgnn", n_items=7, max_len=4, hidden=8)
    task = task_for(model, split, 7, 4)
    assert task.stride == 1 and task.n_train_windows == task.n_train_targets == 2 + 3
    with pytest.raises(ParameterError, match="stride"):
        task_for(model, split, 7, 4, stride=2)


# ---- APGNN and DIPSGNN (user features, clipped and noisy count aggregation)

def _featured(name, **kw):
    torch.manual_seed(0)
    model = build(name, n_items=12, n_users=4, n_features=3, max_len=5, hidden=8, user_dim=4, **kw)
    model.set_features(torch.tensor([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]]))
    return model


def test_dipsgnn_aggregates_clipped_rows_over_counts_with_noise_of_std_sigma():
    from privrec.privacy.graph import normalize_rows

    model = _featured("dipsgnn", clip=0.5, sigma=0.0)
    seq, users = torch.tensor([[0, 3, 4, 3, 5]]), torch.tensor([2])
    nodes, _, a_in, a_out = graphs(seq, normalise=False)
    h = model.item_embedding(nodes)
    joint = torch.cat([h, model.user_table(model.features[users])[:, None].expand(-1, h.shape[1], -1)], -1)
    rows = normalize_rows(joint, 0.5)
    assert torch.allclose(rows.norm(dim=-1), torch.full((1, 3), 0.5))
    want = torch.cat([model.edge_in(a_in @ rows), model.edge_out(a_out @ rows)], -1)
    torch.testing.assert_close(model.aggregate(a_in, a_out, h, {"user": users}), want)
    model.sigma = 0.3                                               # noise: N(0, sigma^2) on every entry
    state = model.state_dict()                                      # the noise generator travels with the weights
    noisy = model.aggregate(a_in, a_out, h, {"user": users})
    assert not torch.allclose(noisy, model.aggregate(a_in, a_out, h, {"user": users}))   # fresh noise each pass
    model.load_state_dict(state)
    torch.testing.assert_close(model.aggregate(a_in, a_out, h, {"user": users}), noisy)   # a resume replays it
    w = model.edge_in.weight                                        # noise through the linear map: std 0.3 |w_row|
    draws = torch.stack([model.aggregate(a_in, a_out, h, {"user": users})[0, 0, :8] for _ in range(4000)])
    np.testing.assert_allclose(draws.std(0).detach().numpy(), (0.3 * w.norm(dim=1)).detach().numpy(), rtol=0.08)


def test_apgnn_reads_the_users_features_and_learns():
    model = _featured("apgnn")
    seq = torch.tensor([[0, 0, 3, 4, 5]] * 2)
    scores = model.eval().score({"seq": seq, "user": torch.tensor([1, 2])})
    assert not torch.allclose(scores[0], scores[1])                 # same history, other features
    with pytest.raises(ValueError, match="shape"):
        model.set_features(torch.zeros(3, 3))
    with pytest.raises(ValueError, match="NaN"):
        model.set_features(torch.full((4, 3), float("nan")))
    model.train()
    first, last = loss_drop(model, _successor_prefixes(12, n_users=4), 100)
    assert last < 0.2 * first


def _featured_data():
    from conftest import make_frame

    from privrec.data.interactions import Interactions
    from privrec.data.sequences import to_sequences
    from privrec.data.splits import leave_one_out

    frame = make_frame(n_users=24, n_items=30, per_user=10)
    users = sorted(frame.user_id.unique())
    rng = np.random.default_rng(0)
    feats = pd.DataFrame({"user_id": users, "age": rng.choice([1, 18, 25, 35], len(users)).astype(float),
                          "gender": rng.choice(["F", "M"], len(users)),
                          "occupation": rng.integers(0, 21, len(users)).astype(float)})
    inter = Interactions.from_frame(frame, user_features=feats)
    return inter, leave_one_out(to_sequences(inter))


@pytest.mark.parametrize("model", ["apgnn", "dipsgnn"])
def test_sequential_run_sets_features_and_states_the_guarantees(model, tmp_path):
    from privrec.experiments.sequential import SequentialConfig, run
    from privrec.training.trainer import TrainConfig

    cfg = SequentialConfig(dataset="tiny", model=model, max_len=8, model_config={"hidden": 8, "user_dim": 4},
                           train=TrainConfig(epochs=2, batch_size=64, progress=False),
                           epsilon1=20.0 if model == "dipsgnn" else None)
    res = run(cfg, out_dir=tmp_path, log=lambda m: None, data=_featured_data())
    run0 = res["runs"][0]
    from privrec.inference import TrainedModel

    loaded = TrainedModel.load(tmp_path / run0["checkpoint"])                # weights, features, noise state
    assert loaded.model.features.abs().sum() > 0 and type(loaded.model).__name__.lower() == model
    if model == "dipsgnn":
        g = run0["graph_guarantee"]
        epochs = run0["fit"]["epochs_run"]
        assert g["parameters"]["passes"] == epochs * (8 - 1) + epochs + 1    # sequences of 8 train items here
        assert g["epsilon"] > g["paper_claim"]["epsilon"] > 0                  # every pass composed
        assert res["feature_guarantee"]["epsilon"] == pytest.approx(20.0)
        from privrec.experiments.sequential_report import markdown

        assert "noisy aggregation: true epsilon" in markdown(res) and "epsilon1 = 20" in markdown(res)
    else:
        assert "graph_guarantee" not in run0 and "feature_guarantee" not in res


def test_feature_models_need_features_and_epsilon1_needs_them():
    from privrec.errors import ParameterError
    from privrec.experiments.sequential import SequentialConfig, run

    inter, split = _featured_data()
    with pytest.raises(ParameterError, match="epsilon1"):
        run(SequentialConfig(dataset="tiny", model="srgnn", epsilon1=20.0), log=lambda m: None, data=(inter, split))
    from dataclasses import replace

    bare = replace(inter, user_features=None)
    with pytest.raises(ParameterError, match="user features"):
        run(SequentialConfig(dataset="tiny", model="apgnn"), log=lambda m: None, data=(bare, split))


def test_gated_update_equals_grucell():
    from privrec.models.srgnn import GatedUpdate

    torch.manual_seed(0)
    cell, mine = torch.nn.GRUCell(6, 4), GatedUpdate(6, 4)
    with torch.no_grad():
        mine.input_map.weight.copy_(cell.weight_ih)
        mine.input_map.bias.copy_(cell.bias_ih)
        mine.hidden_map.weight.copy_(cell.weight_hh)
        mine.hidden_map.bias.copy_(cell.bias_hh)
    a, h = torch.randn(3, 5, 6), torch.randn(3, 5, 4)
    torch.testing.assert_close(mine(a, h), cell(a.reshape(15, 6), h.reshape(15, 4)).view(3, 5, 4))


@pytest.mark.filterwarnings("ignore:Full backward hook is firing")    # item ids need no gradient
def test_opacus_per_sample_gradients_of_srgnn_are_each_samples_own():
    """The DP-SGD baseline clips per-sample gradients: Opacus' hooks must see one sample per batch row."""
    opacus = pytest.importorskip("opacus")
    torch.manual_seed(0)
    model = build("srgnn", n_items=12, max_len=5, hidden=8)
    batch = _successor_prefixes(12)
    rows = [0, 3, 7]
    sub = {k: v[rows] for k, v in batch.items()}
    opacus.GradSampleModule(model, loss_reduction="mean")        # hooks on every layer, the tied table included
    model.loss(sub).backward()
    per_sample = {n: p.grad_sample.clone() for n, p in model.named_parameters()}
    assert set(per_sample) == {n for n, _ in model.named_parameters()}
    for i, r in enumerate(rows):                                  # = the gradient of that sample's own loss
        grads = torch.autograd.grad(model.loss({k: v[[r]] for k, v in batch.items()}), list(model.parameters()))
        for (n, _), g in zip(model.named_parameters(), grads):
            torch.testing.assert_close(per_sample[n][i], g, atol=1e-5, rtol=1e-4)


def test_epsilon2_sets_sigma_under_paper_or_honest_accounting():
    from privrec.errors import ParameterError
    from privrec.experiments.sequential import SequentialConfig, run
    from privrec.training.trainer import TrainConfig

    def once(**kw):
        cfg = SequentialConfig(dataset="tiny", model="dipsgnn", max_len=8, model_config={"hidden": 8, "user_dim": 4},
                               train=TrainConfig(epochs=1, batch_size=64, progress=False), epsilon2=5.0, **kw)
        return run(cfg, log=lambda m: None, data=_featured_data())["runs"][0]["graph_guarantee"]

    paper, honest = once(accounting="paper"), once(accounting="honest")
    assert paper["parameters"]["sigma"] == pytest.approx(0.228, abs=0.002)
    assert paper["epsilon"] > 5.0                                        # the paper's sigma, composed honestly
    assert honest["parameters"]["sigma"] > paper["parameters"]["sigma"]
    assert honest["epsilon"] <= 5.0 + 1e-6                               # the whole run meets epsilon2
    with pytest.raises(ParameterError, match="not both"):
        run(SequentialConfig(dataset="tiny", model="dipsgnn", model_config={"sigma": 0.3}, epsilon2=5.0),
            log=lambda m: None, data=_featured_data())
    with pytest.raises(ParameterError, match="accounting"):
        SequentialConfig(accounting="loose")
