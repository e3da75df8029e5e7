"""SASRec's own loss (one sampled negative per target, binary cross-entropy), as S3Rec trains its baselines."""

from __future__ import annotations

import math

import pytest
import torch

from privrec.errors import ParameterError
from privrec.models.base import unseen_items
from privrec.models.sasrec import SASRec


def test_negatives_are_uniform_over_the_items_a_row_has_not_seen():
    torch.manual_seed(0)
    seen = torch.tensor([[0, 1, 2, 3, 4], [5, 5, 5, 0, 0]]).repeat(3000, 1)
    neg = unseen_items(seen, 6)
    assert set(neg[0::2].tolist()) == {5, 6}                      # the first row saw 1..4
    assert set(neg[1::2].tolist()) == {1, 2, 3, 4, 6}
    share = (neg[0::2] == 5).float().mean().item()
    assert abs(share - 0.5) < 4 * math.sqrt(0.25 / 3000)           # uniform over the two unseen items
    with pytest.raises(ParameterError, match="a row holds"):
        unseen_items(torch.tensor([[1, 2, 3]]), 3, tries=5)


def test_the_bce_loss_is_the_mean_of_minus_log_sigmoid_pos_and_minus_log_one_minus_sigmoid_neg():
    torch.manual_seed(1)
    m = SASRec(n_items=20, max_len=4, hidden=8, layers=1, heads=1, inner=16, dropout=0.0, attn_dropout=0.0, loss="bce")
    assert m.config()["loss"] == "bce" and "loss" not in SASRec(n_items=20, max_len=4).config()
    batch = {"seq": torch.tensor([[0, 3, 4, 5], [1, 2, 6, 7]]), "target": torch.tensor([[0, 4, 5, 8], [2, 6, 7, 9]])}
    torch.manual_seed(2)
    loss = m.loss(batch)
    torch.manual_seed(2)
    mask = batch["target"] > 0
    states = m.encode(batch["seq"])[mask]
    neg = unseen_items(torch.cat([batch["seq"], batch["target"]], 1)[torch.nonzero(mask)[:, 0]], 20)
    pos = (states * m.item_embedding(batch["target"][mask])).sum(-1)
    negl = (states * m.item_embedding(neg)).sum(-1)
    expected = -(torch.log(torch.sigmoid(pos)) + torch.log(1 - torch.sigmoid(negl))).mean()
    assert torch.allclose(loss, expected, atol=1e-6)
    loss.backward()
    with pytest.raises(ParameterError, match="loss must be 'ce'"):
        SASRec(n_items=5, loss="bpr")


@pytest.mark.parametrize("make", [
    lambda: SASRec(n_items=30, max_len=12, hidden=8, layers=2, heads=2, inner=16, dropout=0.0, attn_dropout=0.0),
    lambda: SASRec(n_items=30, max_len=12, hidden=8, layers=2, heads=2, inner=16, dropout=0.0, attn_dropout=0.0,
                   positions="oldest"),
    lambda: SASRec(n_items=30, max_len=12, hidden=8, layers=1, heads=1, inner=16, dropout=0.0, attn_dropout=0.0,
                   loss="bce"),
    lambda: __import__("privrec.models.gru4rec", fromlist=["GRU4Rec"]).GRU4Rec(n_items=30, max_len=12, embedding=8,
                                                                                hidden=8, dropout=0.0)])
def test_window_batches_cut_to_their_longest_row_give_the_same_loss_gradients_and_scores(make):
    """Issue 81: trimming the columns that are padding in every window changes no number (dropout off; with
    dropout on, the masks are drawn over fewer columns: another draw of the same distribution)."""
    import numpy as np

    from privrec.data.sequences import Sequences
    from privrec.data.splits import leave_one_out
    from privrec.training.tasks import task_for

    rng = np.random.default_rng(0)
    lengths = rng.integers(4, 8, 20)                                # short histories, max_len 12: padding to trim
    seqs = Sequences(np.concatenate([[0, 0], np.cumsum(lengths)]), rng.integers(1, 31, int(lengths.sum())))
    split = leave_one_out(seqs)
    out = {}
    for trim in (False, True):
        torch.manual_seed(0)
        model = make()
        task = task_for(model, split, 30, 12, trim_padding=trim)
        batch = task.train_batch(np.arange(task.n_train_samples))
        torch.manual_seed(1)
        loss = model.loss(batch)
        loss.backward()
        model.eval()
        with torch.no_grad():
            scores = model.score(task.eval_batch("test", np.arange(1, 21)))
        out[trim] = (batch["seq"].shape[1], loss.detach(), [p.grad.clone() for p in model.parameters()], scores)
    assert out[True][0] < out[False][0] == 12                       # the trimmed batch is narrower
    assert torch.allclose(out[True][1], out[False][1], atol=1e-6)
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(out[True][2], out[False][2]))
    assert torch.allclose(out[True][3], out[False][3], atol=1e-5)
