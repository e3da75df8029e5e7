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
