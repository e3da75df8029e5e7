"""DIPSGNN's prefix protocol: 80/20 per user, random validation prefixes, per-sample evaluation."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from privrec.data.sequences import Sequences
from privrec.evaluation.evaluator import EvalConfig, evaluate
from privrec.models import build
from privrec.training.tasks.prefixes import PrefixTask, prefix_samples


def test_prefix_samples_known_answer():
    seqs = Sequences.from_rows([[], [5, 6, 7, 8], [9, 10]])
    inputs, targets, users = prefix_samples(seqs, 2, np.array([0, 2, 1]))
    assert targets.tolist() == [7, 8, 10] and users.tolist() == [1, 1, 2]
    assert inputs.tolist() == [[5, 6], [6, 7], [0, 9]]


def test_every_item_is_a_label_once_and_test_labels_see_earlier_test_items():
    rows = [[]] + [list(range(100 * u + 1, 100 * u + 1 + n)) for u, n in enumerate([3, 5, 10, 21], start=1)]
    task = PrefixTask(Sequences.from_rows(rows), 3000, max_len=4, valid_frac=0.3, seed=0)
    train, valid, test = task._train[1], task._eval["valid"][1], task._eval["test"][1]
    n_test = [max(1, int(len(r) * 0.2)) for r in rows[1:]]
    assert len(test) == sum(n_test)
    assert sorted(np.concatenate([train, valid]).tolist()) == sorted(
        i for r, k in zip(rows[1:], n_test) for i in r[1:len(r) - k])       # each train item after the first
    assert not set(valid) & set(train) and len(valid) > 0
    inputs, targets, _ = task._eval["test"]
    last = targets.tolist().index(421)                                        # user 4's last item
    assert inputs[last].tolist() == [417, 418, 419, 420]                      # includes earlier test items
    again = PrefixTask(Sequences.from_rows(rows), 3000, max_len=4, valid_frac=0.3, seed=0)
    assert np.array_equal(again._eval["valid"][1], valid)


def test_evaluator_ranks_per_sample():
    torch.manual_seed(0)
    rows = [[]] + [[(u + j) % 12 + 1 for j in range(10)] for u in range(20)]
    task = PrefixTask(Sequences.from_rows(rows), 12, max_len=5, seed=0)
    model = build("srgnn", n_items=12, max_len=5, hidden=8)
    res = evaluate(model, task, "test", EvalConfig(mode="full", ks=(5,), metrics=("hr", "mrr"), mask_history=False))
    assert res.n_users == len(task._eval["test"][1]) == 20 * 2
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    for _ in range(30):
        for batch in task.train_batches(64, np.random.default_rng(0)):
            opt.zero_grad()
            model.loss(batch).backward()
            opt.step()
    after = evaluate(model, task, "test", EvalConfig(mode="full", ks=(5,), metrics=("hr", "mrr"), mask_history=False))
    assert after.metrics["hr@5"] > 0.9 > res.metrics["hr@5"]               # the successor rule is learned


def test_the_dipsgnn_protocol_runs_through_the_sequential_pipeline():
    from conftest import make_frame

    from privrec.data.interactions import Interactions
    from privrec.data.sequences import to_sequences
    from privrec.evaluation.evaluator import EvalConfig
    from privrec.experiments.sequential import SequentialConfig, make_split, run
    from privrec.training.trainer import TrainConfig

    inter = Interactions.from_frame(make_frame(n_users=24, n_items=30, per_user=10))
    cfg = SequentialConfig(dataset="tiny", model="srgnn", split="prefixes", max_len=5, model_config={"hidden": 8},
                           train=TrainConfig(epochs=1, batch_size=64, progress=False, select_metric="hr@10"),
                           eval=EvalConfig(mode="full", ks=(5, 10), metrics=("hr", "mrr"), mask_history=False))
    res = run(cfg, log=lambda m: None, data=(inter, make_split(to_sequences(inter), "prefixes")))
    assert res["runs"][0]["test"]["n_users"] == 24                      # last 5 items kept: 1 test prefix each


def test_keep_last_cuts_each_sequence_before_the_split():
    rows = [[]] + [list(range(100 * u + 1, 100 * u + 1 + n)) for u, n in enumerate([4, 30], start=1)]
    task = PrefixTask(Sequences.from_rows(rows), 3000, max_len=5, keep_last=10)
    assert task.n_interactions == 4 + 10
    assert task.split.train.row(2).tolist() == list(range(221, 229))      # the last 10 items, first 8 train
    import pytest

    from privrec.errors import ParameterError
    with pytest.raises(ParameterError, match="keep_last"):
        PrefixTask(Sequences.from_rows(rows), 3000, keep_last=2)


def test_bucketed_batches_hold_every_sample_once_and_similar_lengths():
    rng = np.random.default_rng(0)
    rows = [[]] + [rng.choice(np.arange(1, 500), n, replace=False).tolist() for n in rng.integers(5, 60, 40)]
    plain = PrefixTask(Sequences.from_rows(rows), 500, max_len=50, bucket=False)
    task = PrefixTask(Sequences.from_rows(rows), 500, max_len=50)
    batches = list(task.train_batches(16, np.random.default_rng(1)))
    assert len(batches) == task.n_train_batches(16)              # pools are whole batches: one short batch at most
    seen = sorted(t for b in batches for t in b["target"][:, -1].tolist())
    assert seen == sorted(task._train[1].tolist())              # every training sample exactly once
    spread = lambda bs: np.mean([int((b["seq"] > 0).sum(1).max() - (b["seq"] > 0).sum(1).min()) for b in bs])
    assert spread(batches) < 0.5 * spread(list(plain.train_batches(16, np.random.default_rng(1))))
    again = list(task.train_batches(16, np.random.default_rng(1)))
    assert all(torch.equal(a["seq"], b["seq"]) for a, b in zip(batches, again))   # seeded


@pytest.mark.parametrize("name,kw", [("srgnn", {}), ("apgnn", {"n_users": 21, "n_features": 3, "user_dim": 4}),
                                     ("dipsgnn", {"n_users": 21, "n_features": 3, "user_dim": 4, "sigma": 0.0}),
                                     ("bert4rec", {}),
                                     ("sasrec", {}), ("gru4rec", {})])
def test_batches_cut_to_their_longest_prefix_give_the_full_width_numbers(name, kw):
    """Batches drop the columns that are padding in every row: each model must give the numbers (loss,
    gradients, scores) it gives on the same batch padded to max_len. (DIPSGNN with noise draws one
    N(0, sigma^2) row per graph node, and a full-width batch has one more node, padding, so its noisy
    numbers are equal in distribution, not draw for draw: checked here at sigma = 0.)"""
    from privrec.training.tasks.prefixes import trim_padding

    torch.manual_seed(0)
    rows = [[]] + [[(3 * u + j) % 30 + 1 for j in range(4 + u % 5)] for u in range(20)]
    task = PrefixTask(Sequences.from_rows(rows), 30, max_len=12, seed=0)
    model = build(name, n_items=30, max_len=12, **kw).eval()
    if hasattr(model, "set_features"):
        model.set_features(torch.rand(21, 3))
    batch = task.train_batch(np.arange(task.n_train_samples))
    assert batch["seq"].shape[1] < 12 and (batch["seq"][:, 0] > 0).any()     # cut, but no longer
    full = {**batch, "seq": torch.nn.functional.pad(batch["seq"], (12 - batch["seq"].shape[1], 0)),
            "target": torch.nn.functional.pad(batch["target"], (12 - batch["target"].shape[1], 0))}
    grads = []
    for b in (batch, full):
        model.zero_grad()
        loss = model.loss(b)
        loss.backward()
        grads.append((loss.detach(), [p.grad.clone() for p in model.parameters() if p.grad is not None]))
    torch.testing.assert_close(grads[0][0], grads[1][0], rtol=1e-5, atol=1e-6)
    for a, b in zip(grads[0][1], grads[1][1]):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)
    ev = task.eval_batch("test", np.arange(1, 11))
    with torch.no_grad():
        wide = {**ev, "seq": torch.nn.functional.pad(ev["seq"], (12 - ev["seq"].shape[1], 0))}
        torch.testing.assert_close(model.score(ev), model.score(wide), rtol=1e-5, atol=1e-5)
    assert trim_padding(np.zeros((2, 5), np.int64)).shape == (2, 1)
