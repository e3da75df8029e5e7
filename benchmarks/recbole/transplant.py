"""privrec's SASRec and GRU4Rec compute RecBole's: copy a RecBole 1.2.1 model's (random) weights into privrec's
and compare eval-mode scores on one test batch.

SASRec: users with a full 50-item history under privrec's default positions (counted from the newest item;
RecBole counts from the oldest, so shorter histories differ by design), every user with ``oldest``
(``SASRec(positions="oldest")``, RecBole's convention). GRU4Rec: every user. RecBole pads histories at the end and
reads the state at the last real item; privrec pads at the front and reads the final state, which is the
same because a bias-free GRU keeps a zero state through zero (padding) embeddings.
Run: ``/tmp/rbv/bin/python benchmarks/recbole/transplant.py [SASRec|GRU4Rec] [newest|oldest]`` (set-up:
``_recbole.py``)."""

from __future__ import annotations

import sys

import _recbole  # first: compatibility shims for RecBole 1.2.1
import torch
from recbole.data import create_dataset, data_preparation
from recbole.model.sequential_recommender.gru4rec import GRU4Rec as RecBoleGRU4Rec
from recbole.model.sequential_recommender.sasrec import SASRec as RecBoleSASRec

from privrec.models.gru4rec import GRU4Rec
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


def transplant_gru(sd: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """RecBole's GRU4Rec state dict in privrec's names."""
    names = {"item_embedding.": "item_embedding.", "gru_layers.": "gru.", "dense.": "proj."}
    return {next(mine + k[len(theirs):] for theirs, mine in names.items() if k.startswith(theirs)): v
            for k, v in sd.items()}


def front_padded(seq: torch.Tensor, length: torch.Tensor) -> torch.Tensor:
    """RecBole's end-padded histories moved to privrec's front padding."""
    width = seq.shape[1]
    index = (torch.arange(width) + length[:, None]) % width          # rotate each row right by width - length
    return torch.gather(seq, 1, index)


def main(model: str = "SASRec", positions: str = "newest") -> None:
    torch.set_num_threads(1)
    layers = 2
    config = _recbole.leaderboard_config(model, num_layers=layers) if model == "GRU4Rec" else \
        _recbole.leaderboard_config(model)
    ds = create_dataset(config)
    train, _, test = data_preparation(config, ds)
    torch.manual_seed(1)
    if model == "GRU4Rec":
        theirs = RecBoleGRU4Rec(config, train.dataset).eval()
        mine = GRU4Rec(ds.item_num - 1, max_len=50, embedding=64, hidden=128, layers=layers).eval()
    else:
        theirs = RecBoleSASRec(config, train.dataset).eval()
        mine = SASRec(ds.item_num - 1, max_len=50, hidden=64, layers=2, heads=2, inner=256, positions=positions).eval()
    for p in theirs.parameters():
        p.data.normal_(0, 0.1)
    theirs.item_embedding.weight.data[0] = 0    # the padding item's row, zero as both models initialise it
    mine.load_state_dict(transplant_gru(theirs.state_dict()) if model == "GRU4Rec"
                         else transplant(theirs.state_dict(), 2), strict=True)
    batch = next(iter(test))[0]
    length = batch["item_length"]
    every = model == "GRU4Rec" or positions == "oldest"
    keep = torch.ones_like(length, dtype=torch.bool) if every else length == 50
    with torch.no_grad():
        ref = theirs.full_sort_predict(batch)[keep]
        got = mine.score({"seq": front_padded(batch["item_id_list"], length)[keep]})
    got[:, 0] = ref[:, 0]                       # privrec scores padding -inf
    what = f"{int(keep.sum())} users ({int(length.min())}-{int(length.max())} items)" if every \
        else f"{int(keep.sum())} users with 50 items"
    print(f"{model}: {what}: max |score difference| {float((ref - got).abs().max()):.1e} "
          f"(scores up to {float(ref.abs().max()):.2f})")


if __name__ == "__main__":
    main(*sys.argv[1:])
