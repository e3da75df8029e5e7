"""The training hot path of the sequence models on CPU, each change against what it replaced, on ML-1M's
shapes (3,124 items, hidden 64, max length 50), forward + backward + Adam step, ms:

* dropout masks: ``torch.nn.functional.dropout`` (``bernoulli_``) vs :func:`privrec.models.layers.dropout`
  (``torch.rand``, same distribution), on hidden states 205 x 50 x 64 and attention weights 205 x 2 x 50 x 50,
  and one SASRec ``--stride 10`` step with torch's dropout modules and SDPA's dropout vs privrec's;
* the last block computing only the rows the loss reads (``encode(seq, last=k)``) vs every row, SASRec
  ``--stride 10`` step (batch 205, targets in the last 10 positions);
* the next-item loss on the items' own scores vs writing -inf into the padding column of the
  (targets x items) logits, GRU4Rec windows step (batch 256 x 50, every position a target);
* ``--precision bf16`` (``torch.autocast`` mixed precision) vs fp32, SASRec ``--stride 1`` (batch 2,048, RecBole's
  prefixes) and ``--stride 10`` steps and a GRU4Rec windows step ("before" = fp32). The gain needs a CPU with
  AMX-BF16 (``amx_bf16`` in ``lscpu``'s flags); without it bf16 products are emulated and slower.

    python benchmarks/bench_training_step.py [--threads 1] [--repeat 30]
"""

from __future__ import annotations

import argparse
from pathlib import Path
from unittest.mock import patch

import torch
import torch.nn.functional as F
from _timing import timed

import privrec.models.sasrec as S
from privrec.models import layers
from privrec.models.gru4rec import GRU4Rec
from privrec.models.sasrec import SASRec

N_ITEMS = 3124


def fwd_bwd(fn, shape):
    x = torch.randn(*shape, requires_grad=True)

    def step():
        fn(x).sum().backward()
    return step


def _sdpa(q, k, v, mask, p=0.0, training=False):
    """torch's own attention with its own dropout (what SASRec used before privrec.models.layers)."""
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p if training else 0.0)


def all_rows_loss(model, batch):
    """The loss with every row of every block computed (before ``encode(seq, last=k)``)."""
    target = batch["target"]
    states = model.encode(batch["seq"])
    return F.cross_entropy(model.item_logits(states[target > 0]), target[target > 0] - 1)


def padded_logits_loss(model, batch):
    """The loss over the ids 0..n with -inf written into the padding column (before the items' own scores)."""
    target = batch["target"]
    out = model.encode(batch["seq"])[target > 0] @ model.item_embedding.weight.T
    out[..., 0] = -torch.inf
    return F.cross_entropy(out, target[target > 0])


def training_step(model, batch: int, targets: int, loss=None, precision: str = "fp32"):
    """One Adam step of ``model`` on a random batch whose last ``targets`` positions carry a target, its forward
    pass in ``precision`` (as :class:`privrec.training.trainer.Trainer` runs it)."""
    opt = torch.optim.Adam(model.parameters())
    seq = torch.randint(1, N_ITEMS + 1, (batch, 50))
    target = torch.zeros(batch, 50, dtype=torch.long)
    target[:, -targets:] = torch.randint(1, N_ITEMS + 1, (batch, targets))
    loss = loss or (lambda m, b: m.loss(b))

    def step():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
            value = loss(model, {"seq": seq, "target": target})
        opt.zero_grad()
        value.backward()
        opt.step()
    return step


def sasrec(torch_dropout: bool = False) -> SASRec:
    torch.manual_seed(0)
    model = SASRec(N_ITEMS, max_len=50)
    if torch_dropout:                             # the same model with torch's Dropout modules
        for module in [model, *model.blocks]:
            module.drop = torch.nn.Dropout(module.drop.p)
    return model


def row(name: str, before: float, after: float) -> None:
    print(f"{name:52s} {before:8.1f} {after:8.1f} {before / after:6.2f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=30)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    steps = max(3, a.repeat // 3)
    print(f"torch {torch.__version__}, {a.threads} thread(s), median of {a.repeat} (steps: {steps}), ms")
    print(f"{'case':52s} {'before':>8s} {'privrec':>8s} {'ratio':>6s}")
    for name, shape in (("dropout p 0.2, hidden states 205x50x64", (205, 50, 64)),
                        ("dropout p 0.2, attention weights 205x2x50x50", (205, 2, 50, 50))):
        row(name, timed(fwd_bwd(lambda x: F.dropout(x, 0.2, True), shape), a.repeat)[0] * 1e3,
            timed(fwd_bwd(lambda x: layers.dropout(x, 0.2, True), shape), a.repeat)[0] * 1e3)
    with patch.object(S, "attention", _sdpa):
        torch_drop = timed(training_step(sasrec(torch_dropout=True), 205, 10), steps)[0] * 1e3
    row("SASRec stride-10 step: torch's dropout", torch_drop,
        timed(training_step(sasrec(), 205, 10), steps)[0] * 1e3)
    row("SASRec stride-10 step: every row of the last block",
        timed(training_step(sasrec(), 205, 10, all_rows_loss), steps)[0] * 1e3,
        timed(training_step(sasrec(), 205, 10), steps)[0] * 1e3)
    torch.manual_seed(0)
    gru = GRU4Rec(N_ITEMS, max_len=50)
    row("GRU4Rec windows step: -inf written into the logits",
        timed(training_step(gru, 256, 50, padded_logits_loss), steps)[0] * 1e3,
        timed(training_step(gru, 256, 50), steps)[0] * 1e3)
    amx = "amx_bf16" in Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else False
    print(f"--precision bf16 vs fp32 (this CPU {'has' if amx else 'lacks'} AMX-BF16):")
    for name, make, batch, targets in (("SASRec stride-1 step (batch 2,048)", sasrec, 2048, 1),
                                       ("SASRec stride-10 step (batch 205)", sasrec, 205, 10),
                                       ("GRU4Rec windows step (batch 256)", lambda: GRU4Rec(N_ITEMS, max_len=50), 256, 50)):
        n = max(3, steps // 3) if batch > 1000 else steps
        row(f"{name}: bf16", timed(training_step(make(), batch, targets), n)[0] * 1e3,
            timed(training_step(make(), batch, targets, precision="bf16"), n)[0] * 1e3)


if __name__ == "__main__":
    main()
