"""privrec's SASRec computes RecBole's SASRec: copy a RecBole 1.2.1 SASRec's (random) weights into privrec's
and compare eval-mode scores for users with a full 50-item history. Shorter histories differ by design:
RecBole counts positions from the oldest item, privrec from the newest.
Run: ``/tmp/rbv/bin/python benchmarks/recbole/transplant.py`` (set-up: ``_recbole.py``)."""

from __future__ import annotations

import _recbole  # first: compatibility shims for RecBole 1.2.1
import torch
from recbole.data import create_dataset, data_preparation
from recbole.model.sequential_recommender.sasrec import SASRec as RecBoleSASRec

from privrec.models.sasrec import SASRec


def transplant(sd: dict[str, torch.Tensor], layers: int) -> dict[str, torch.Tensor]:
    """RecBole's SASRec state dict in privrec's names (q, k, v stacked into one projection)."""
    new = {"item_embedding.weight": sd["item_embedding.weight"],
           "position_embedding.weight": sd["position_embedding.weight"],
           "norm.weight": sd["LayerNorm.weight"], "norm.bias": sd["LayerNorm.bias"]}
    for i in range(layers):
        a, f, b = (f"trm_encoder.layer.{i}.multi_head_attention.", f"trm_encoder.layer.{i}.feed_forward.",
                   f"blocks.{i}.")
        for kind in ("weight", "bias"):
            new[f"{b}qkv.{kind}"] = torch.cat([sd[f"{a}{n}.{kind}"] for n in ("query", "key", "value")])
            for mine, theirs in (("out", a + "dense"), ("norm1", a + "LayerNorm"), ("ff.0", f + "dense_1"),
                                 ("ff.2", f + "dense_2"), ("norm2", f + "LayerNorm")):
                new[f"{b}{mine}.{kind}"] = sd[f"{theirs}.{kind}"]
    return new


def main() -> None:
    torch.set_num_threads(1)
    config = _recbole.leaderboard_config("SASRec")
    ds = create_dataset(config)
    train, _, test = data_preparation(config, ds)
    torch.manual_seed(1)
    theirs = RecBoleSASRec(config, train.dataset).eval()
    for p in theirs.parameters():
        p.data.normal_(0, 0.1)
    mine = SASRec(ds.item_num - 1, max_len=50, hidden=64, layers=2, heads=2, inner=256).eval()
    mine.load_state_dict(transplant(theirs.state_dict(), 2), strict=True)
    batch = next(iter(test))[0]
    full = batch["item_length"] == 50
    with torch.no_grad():
        ref = theirs.full_sort_predict(batch)[full]
        got = mine.score({"seq": batch["item_id_list"][full]})
    got[:, 0] = ref[:, 0]                       # privrec scores padding -inf
    print(f"{int(full.sum())} users with 50 items: max |score difference| {float((ref - got).abs().max()):.1e} "
          f"(scores up to {float(ref.abs().max()):.2f})")


if __name__ == "__main__":
    main()
