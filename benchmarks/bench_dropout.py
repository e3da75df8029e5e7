"""Dropout on CPU: ``torch.nn.functional.dropout`` (``bernoulli_`` mask) against privrec's
:func:`privrec.models.layers.dropout` (``torch.rand`` mask, same distribution), forward + backward,
on the shapes SASRec trains on ML-1M (batch 205 windows x 50 positions x 64 hidden, and the
attention weights 205 x 2 heads x 50 x 50), and one SASRec training step with each.

    python benchmarks/bench_dropout.py [--threads 1] [--repeat 30]
"""

from __future__ import annotations

import argparse
from unittest.mock import patch

import torch
import torch.nn.functional as F
from _timing import timed

import privrec.models.sasrec as S
from privrec.models import layers
from privrec.models.sasrec import SASRec


def fwd_bwd(fn, shape):
    x = torch.randn(*shape, requires_grad=True)

    def step():
        fn(x).sum().backward()
    return step


def _sdpa(q, k, v, mask, p=0.0, training=False):
    """torch's own attention with its own dropout (what SASRec used before privrec.models.layers)."""
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p if training else 0.0)


def sasrec_step(torch_dropout: bool, batch: int = 205, length: int = 50, n_items: int = 3124):
    """One training step of SASRec (loss on each window's last 10 positions, as stride 10 trains)."""
    torch.manual_seed(0)
    model = SASRec(n_items, max_len=length)
    if torch_dropout:                             # the same model with torch's Dropout modules
        for module in [model, *model.blocks]:
            module.drop = torch.nn.Dropout(module.drop.p)
    opt = torch.optim.Adam(model.parameters())
    seq = torch.randint(1, n_items + 1, (batch, length))
    target = torch.zeros(batch, length, dtype=torch.long)
    target[:, -10:] = torch.randint(1, n_items + 1, (batch, 10))

    def step():
        loss = model.loss({"seq": seq, "target": target})
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=30)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    print(f"torch {torch.__version__}, {a.threads} thread(s), median of {a.repeat}, forward + backward, ms")
    print(f"{'case':38s} {'torch':>8s} {'privrec':>8s} {'ratio':>6s}")
    for name, shape, p in (("hidden states 205x50x64, p 0.2", (205, 50, 64), 0.2),
                           ("attention weights 205x2x50x50, p 0.2", (205, 2, 50, 50), 0.2)):
        t_torch = timed(fwd_bwd(lambda x: F.dropout(x, p, True), shape), a.repeat)[0] * 1e3
        t_ours = timed(fwd_bwd(lambda x: layers.dropout(x, p, True), shape), a.repeat)[0] * 1e3
        print(f"{name:38s} {t_torch:8.2f} {t_ours:8.2f} {t_torch / t_ours:6.2f}")
    steps = {}
    for torch_dropout in (True, False):
        with patch.object(S, "attention", _sdpa if torch_dropout else layers.attention):
            steps[torch_dropout] = timed(sasrec_step(torch_dropout), max(3, a.repeat // 3))[0] * 1e3
    print(f"{'SASRec step, batch 205 x 50, 3,124 items':38s} {steps[True]:8.1f} {steps[False]:8.1f} "
          f"{steps[True] / steps[False]:6.2f}")


if __name__ == "__main__":
    main()
