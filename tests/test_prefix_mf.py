"""BPR-MF and DPMF on the prefixes protocol (DIPSGNN's Table 2 baselines)."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import loss_drop
from test_edgerand import _cfg, _prefix_data

from privrec.models import build


def _batch(n_users=4, n_items=12):
    users = torch.arange(1, n_users + 1).repeat(8)
    target = torch.zeros(len(users), 5, dtype=torch.long)
    target[:, -1] = users * 2                                   # user u likes item 2u
    return {"seq": torch.zeros(len(users), 5, dtype=torch.long), "target": target, "user": users}


def test_bprmf_learns_each_users_item_and_scores_by_user():
    torch.manual_seed(0)
    model = build("bprmf", n_items=12, n_users=5, max_len=5, dim=8)
    first, last = loss_drop(model, _batch(), 300)
    assert last < 0.3 * first
    scores = model.eval().score({"user": torch.tensor([1, 2]), "seq": torch.zeros(2, 5, dtype=torch.long)})
    assert scores[:, 0].eq(-torch.inf).all() and scores[0].argmax() == 2 and scores[1].argmax() == 4


def test_dpmf_adds_the_noise_term_and_keeps_users_in_the_unit_ball():
    torch.manual_seed(0)
    model = build("dpmf", n_items=12, n_users=5, max_len=5, dim=8, reg=0.0)
    with torch.no_grad():
        model.user.weight.mul_(1000)
    assert model.user_vectors(torch.arange(5)).norm(dim=-1).max() <= 1 + 1e-6
    batch = _batch()
    torch.manual_seed(1)
    base = model.loss(batch)
    eta = torch.randn(13, 8)
    model.set_noise(eta, n_train=10)
    torch.manual_seed(1)                                          # same negatives
    with torch.no_grad():
        assert float(model.loss(batch) - base) == pytest.approx(float((eta * model.item.weight).sum() / 10), rel=1e-5)


def test_run_dpmf_records_the_claim_without_a_guarantee():
    from privrec.experiments.sequential import run

    res = run(_cfg(model="dpmf", epsilon1=None, model_config={"dim": 8}), log=lambda m: None, data=_prefix_data())
    g = res["runs"][0]["dpmf_guarantee"]
    assert g["epsilon"] == "inf" and g["paper_claim"]["epsilon"] == 5.0 and not g["valid"]
    res = run(_cfg(model="bprmf", epsilon1=None, epsilon2=None, model_config={"dim": 8}), log=lambda m: None,
              data=_prefix_data())
    assert not math.isnan(res["runs"][0]["test"]["metrics"]["hr@10"])
