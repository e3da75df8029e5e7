"""SASRec (Kang & McAuley, ICDM 2018) as configured by RecBole: learned positions, post-LN
transformer blocks with causal self-attention, GELU feed-forward, inner-product output.

Positions: privrec counts them from the newest item (``positions="newest"``: the last item is always
position max_len - 1, whatever the history's length); RecBole from the oldest (``"oldest"``: 0 at the
first item of each history). The two agree on full max_len histories and differ on shorter ones."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from privrec.errors import ParameterError
from privrec.models.base import NextItemModel
from privrec.models.layers import Dropout, attention


class SelfAttentionBlock(nn.Module):
    """Post-LN transformer block; the boolean ``mask`` (True = may attend) decides causal or bidirectional."""

    def __init__(self, hidden: int, heads: int, inner: int, dropout: float, attn_dropout: float, eps: float):
        super().__init__()
        if hidden % heads:
            raise ParameterError(f"hidden size {hidden} is not divisible by {heads} heads; change hidden or heads")
        self.heads = heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, hidden)
        self.attn_dropout = attn_dropout
        self.drop = Dropout(dropout)
        self.norm1 = nn.LayerNorm(hidden, eps=eps)
        self.ff = nn.Sequential(nn.Linear(hidden, inner), nn.GELU(), nn.Linear(inner, hidden))
        self.norm2 = nn.LayerNorm(hidden, eps=eps)

    def forward(self, x: torch.Tensor, mask: torch.Tensor, last: int | None = None) -> torch.Tensor:
        """(B, L, d) -> (B, L, d); with ``last``: only the outputs of the last ``last`` positions (queries),
        still attending over all L keys (what a block computes for them, without the other rows' work)."""
        b, length, d = x.shape
        h = self.heads
        if last is None or last >= length:
            q, k, v = self.qkv(x).view(b, length, 3, h, d // h).permute(2, 0, 3, 1, 4)
        else:
            w, bias = self.qkv.weight, self.qkv.bias
            q = F.linear(x[:, -last:], w[:d], bias[:d]).view(b, last, h, d // h).transpose(1, 2)
            k, v = F.linear(x, w[d:], bias[d:]).view(b, length, 2, h, d // h).permute(2, 0, 3, 1, 4)
            x, mask, length = x[:, -last:], mask[..., -last:, :], last
        att = attention(q, k, v, mask, self.attn_dropout, self.training)
        att = att.transpose(1, 2).reshape(b, length, d)
        x = self.norm1(x + self.drop(self.out(att)))
        return self.norm2(x + self.drop(self.ff(x)))


def run_blocks(blocks: nn.ModuleList, x: torch.Tensor, mask: torch.Tensor, last: int | None = None) -> torch.Tensor:
    """``x`` through every block; with ``last``, the final block computes only the last ``last`` rows and
    (B, last, d) is returned (the same rows as without it)."""
    for i, block in enumerate(blocks):
        x = block(x, mask, last if i == len(blocks) - 1 else None)
    return x if last is None else x[:, -last:]


class SASRec(NextItemModel):
    name = "sasrec"

    def __init__(self, n_items: int, max_len: int = 50, hidden: int = 64, layers: int = 2, heads: int = 2,
                 inner: int = 256, dropout: float = 0.5, attn_dropout: float = 0.5, layer_norm_eps: float = 1e-12,
                 init_std: float = 0.02, positions: str = "newest", loss: str = "ce"):
        super().__init__()
        if positions not in ("newest", "oldest"):
            raise ParameterError(f"positions must be 'newest' or 'oldest' (RecBole's), got {positions!r}")
        if loss not in ("ce", "bce"):
            raise ParameterError(f"loss must be 'ce' (softmax over all items, RecBole's) or 'bce' (one sampled "
                                 f"negative, SASRec's and S3Rec's), got {loss!r}")
        self._config = dict(n_items=n_items, max_len=max_len, hidden=hidden, layers=layers, heads=heads, inner=inner,
                            dropout=dropout, attn_dropout=attn_dropout, layer_norm_eps=layer_norm_eps,
                            init_std=init_std)
        if positions != "newest":           # kept out of older checkpoints' configs, which all counted from the newest
            self._config["positions"] = positions
        if loss != "ce":                    # likewise: every earlier run trained by cross-entropy
            self._config["loss"] = loss
        self.loss_type = loss
        self.max_len, self.positions = max_len, positions
        self.item_embedding = nn.Embedding(n_items + 1, hidden, padding_idx=0)
        self.position_embedding = nn.Embedding(max_len, hidden)
        self.norm = nn.LayerNorm(hidden, eps=layer_norm_eps)
        self.drop = Dropout(dropout)
        self.blocks = nn.ModuleList(
            SelfAttentionBlock(hidden, heads, inner, dropout, attn_dropout, layer_norm_eps) for _ in range(layers))
        self.apply(lambda m: _init(m, init_std))

    def config(self) -> dict:
        return dict(self._config)

    def encode(self, seq: torch.Tensor, last: int | None = None) -> torch.Tensor:
        b, length = seq.shape
        if length > self.max_len:
            seq = seq[:, -self.max_len:]
            length = self.max_len
        if self.positions == "newest":
            # positions counted from the right (the newest item is always max_len - 1), so a batch cut to its
            # longest row (front padding dropped) reads the same positions as the full max_len window
            pos = self.position_embedding(torch.arange(self.max_len - length, self.max_len, device=seq.device))[None]
        else:
            # RecBole's: 0 at each row's oldest item (front padding skipped; padding rows read position 0)
            pad = (seq == 0).sum(1, keepdim=True)
            pos = self.position_embedding((torch.arange(length, device=seq.device)[None] - pad).clamp_min(0))
        x = self.drop(self.norm(self.item_embedding(seq) + pos))
        # causal, padding keys hidden; the diagonal stays open so padding rows attend to
        # themselves (no empty softmax) and real positions never see padding or the future
        causal = torch.ones(length, length, dtype=torch.bool, device=seq.device).tril()
        eye = torch.eye(length, dtype=torch.bool, device=seq.device)
        mask = (causal[None, None] & (seq > 0)[:, None, None, :]) | eye
        return run_blocks(self.blocks, x, mask, last)


def _init(module: nn.Module, std: float) -> None:
    if isinstance(module, (nn.Linear, nn.Embedding)):
        module.weight.data.normal_(0.0, std)
        if isinstance(module, nn.Linear) and module.bias is not None:
            module.bias.data.zero_()
    elif isinstance(module, nn.LayerNorm):
        module.weight.data.fill_(1.0)
        module.bias.data.zero_()
