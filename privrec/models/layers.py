"""Layers shared by the sequence encoders, written for speed on CPU.

``torch.nn.Dropout`` draws its mask with ``bernoulli_``, which on CPU costs about three times
``torch.rand`` on the shapes these models train (a SASRec step on ML-1M, batch 205 x 50 x 64,
spent 21% of its time in ``bernoulli_``; ``benchmarks/bench_training_step.py``). :class:`Dropout` draws
the same distribution from one uniform per element: each element is zeroed with probability
``p`` (``P(U < p) = p`` for ``U ~ U[0, 1)``, up to float32's 2^-24 grid) and the others are scaled
by ``1 / (1 - p)``; evaluation mode is the identity. The random stream differs from
``nn.Dropout``'s, so a seed gives other (equally distributed) masks than before this module.

:func:`attention` is scaled dot-product attention whose attention-weight dropout uses the same
mask; without dropout (evaluation, or ``p = 0``) it is ``F.scaled_dot_product_attention`` itself.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from privrec.errors import ParameterError


def dropout(x: torch.Tensor, p: float, training: bool = True) -> torch.Tensor:
    """Inverted dropout: zero each element of ``x`` with probability ``p``, scale the rest by 1/(1-p)."""
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return x * 0.0
    keep = (torch.rand_like(x) >= p).to(x.dtype) * (1.0 / (1.0 - p))
    return x * keep


class Dropout(nn.Module):
    """``nn.Dropout(p)``'s distribution, drawn with ``torch.rand`` (see the module docstring); no state."""

    def __init__(self, p: float = 0.5):
        super().__init__()
        if not 0.0 <= p <= 1.0 or math.isnan(p):
            raise ParameterError(f"dropout probability must lie in [0, 1], got {p}")
        self.p = float(p)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor, p: float = 0.0,
              training: bool = False) -> torch.Tensor:
    """softmax(q kᵀ / √d, keys where ``mask`` is False hidden) v, with :func:`dropout` on the weights.

    ``q, k, v``: (..., L, d); ``mask``: boolean, True = may attend, broadcast to (..., L, L); every row
    must keep at least one key (the encoders keep the diagonal open)."""
    if not training or p == 0.0:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
    weights = torch.softmax(scores.masked_fill(~mask, -torch.inf), dim=-1)
    return dropout(weights, p) @ v
