"""BERT4Rec (Sun et al., CIKM 2019) as configured by RecBole: learned positions, post-LN transformer
blocks with *bidirectional* self-attention, an output projection (linear -> GELU -> LayerNorm), and
logits against the tied item embeddings plus a per-item bias.

``causal=True`` restricts attention to earlier positions (the "bidirectional off" ablation of
Mu & Lim: the masked item is then predicted from its past only, Eq. 3 instead of Eq. 5).
:class:`MergedBERT4Rec` is the same network over a vocabulary of merged item pairs.

Vocabulary: 0 = padding, 1..n_items = items, ``n_items + 1`` = the [mask] token
(:attr:`BERT4Rec.mask_token`). Training is cloze: the task
(:class:`~privrec.training.tasks.ClozeTask`) hides random positions behind [mask] and the loss is
cross-entropy at those positions only (``target`` > 0 there; the inherited
:meth:`NextItemModel.loss`). :meth:`BERT4Rec.score` takes a plain history like every model's and
appends [mask] after its last ``max_len - 1`` items (RecBole's ``reconstruct_test_data``): the
next item is the cloze question at the last position.
"""

from __future__ import annotations

import torch
from torch import nn

from privrec.models.base import NextItemModel
from privrec.models.layers import Dropout
from privrec.models.sasrec import SelfAttentionBlock, _init, run_blocks


class BERT4Rec(NextItemModel):
    name = "bert4rec"
    task = "cloze"          # trained by ClozeTask (privrec.training.tasks.task_for)

    def __init__(self, n_items: int, max_len: int = 200, hidden: int = 64, layers: int = 2, heads: int = 2,
                 inner: int = 256, dropout: float = 0.2, attn_dropout: float = 0.2, mask_prob: float = 0.2,
                 causal: bool = False, layer_norm_eps: float = 1e-12, init_std: float = 0.02):
        super().__init__()
        self._config = dict(n_items=n_items, max_len=max_len, hidden=hidden, layers=layers, heads=heads, inner=inner,
                            dropout=dropout, attn_dropout=attn_dropout, mask_prob=mask_prob, causal=causal,
                            layer_norm_eps=layer_norm_eps, init_std=init_std)
        self.causal = causal                # True: a position attends to itself and earlier ones only (ablation)
        self.n_items = n_items
        self.max_len = max_len
        self.mask_prob = mask_prob          # read by the cloze task (privrec.training.tasks.ClozeTask)
        self.mask_token = n_items + 1
        self.item_embedding = nn.Embedding(n_items + 2, hidden, padding_idx=0)
        self.position_embedding = nn.Embedding(max_len, hidden)
        self.norm = nn.LayerNorm(hidden, eps=layer_norm_eps)
        self.drop = Dropout(dropout)
        self.blocks = nn.ModuleList(
            SelfAttentionBlock(hidden, heads, inner, dropout, attn_dropout, layer_norm_eps) for _ in range(layers))
        self.output = nn.Sequential(nn.Linear(hidden, hidden), nn.GELU(), nn.LayerNorm(hidden, eps=layer_norm_eps))
        self.output_bias = nn.Parameter(torch.zeros(n_items + 1))
        self.apply(lambda m: _init(m, init_std))

    def config(self) -> dict:
        return dict(self._config)

    def encode(self, seq: torch.Tensor, last: int | None = None) -> torch.Tensor:
        if seq.shape[1] > self.max_len:
            seq = seq[:, -self.max_len:]
        length = seq.shape[1]
        pos = torch.arange(self.max_len - length, self.max_len, device=seq.device)   # from the right, as SASRec's
        x = self.drop(self.norm(self.item_embedding(seq) + self.position_embedding(pos)[None]))
        # every position sees every non-padding position; the diagonal stays open so padding rows
        # attend to themselves (no empty softmax)
        eye = torch.eye(length, dtype=torch.bool, device=seq.device)
        mask = (seq > 0)[:, None, None, :] | eye
        if self.causal:                     # unidirectional cloze: Eq. 3 instead of Eq. 5 of Mu & Lim
            mask = mask & torch.tril(torch.ones(length, length, dtype=torch.bool, device=seq.device))
        return self.output(run_blocks(self.blocks, x, mask, last))

    def score(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        seq = batch["seq"][:, -(self.max_len - 1):]
        masked = torch.cat([seq, torch.full((seq.shape[0], 1), self.mask_token, dtype=seq.dtype, device=seq.device)], 1)
        return self.logits(self.encode(masked, last=1)[:, -1, :])

    def item_logits(self, states: torch.Tensor) -> torch.Tensor:
        """Scores of the items 1..n_items (the [mask] token is never a candidate)."""
        return states @ self.item_embedding.weight[1: self.n_items + 1].T + self.output_bias[1:]


class MergedBERT4Rec(BERT4Rec):
    """BERT4Rec over items plus merged item pairs (Mu & Lim §3.2; see
    :mod:`privrec.training.tasks.merged` for inputs and labels).

    Token ids: 0 padding, 1..n_items items, n_items + 1 + r the r-th merge (``merges_left[r]``
    followed by ``merges_right[r]``), ``vocab_size + 1`` [mask]. :meth:`score` returns per-item
    scores like every model: the score of item v is log sum over tokens t starting with v of
    exp(logit t), the log of the probability (up to the shared normaliser) that the next item is
    v. Merges are data: learn them first (:meth:`learn`), they are saved with the model.
    """

    name = "rr-bert4rec"
    task = "merged_cloze"

    def __init__(self, n_items: int, merges_left: list[int] | tuple[int, ...] = (),
                 merges_right: list[int] | tuple[int, ...] = (), max_len: int = 50, hidden: int = 64, layers: int = 2,
                 heads: int = 2, inner: int = 256, dropout: float = 0.2, attn_dropout: float = 0.2,
                 mask_prob: float = 0.2, causal: bool = False, layer_norm_eps: float = 1e-12, init_std: float = 0.02):
        import numpy as np

        from privrec.data.pair_merging import PairMerges

        left, right = np.asarray(merges_left, dtype=np.int64), np.asarray(merges_right, dtype=np.int64)
        self_merges = PairMerges(n_items, left, right, np.zeros(len(left), np.int64))
        super().__init__(self_merges.vocab_size, max_len, hidden, layers, heads, inner, dropout, attn_dropout,
                         mask_prob, causal, layer_norm_eps, init_std)
        self.merges = self_merges
        self.n_items = n_items               # ranked items; the token count is merges.vocab_size
        self._config.update(n_items=n_items, merges_left=left.tolist(), merges_right=right.tolist())
        self.register_buffer("first_item", torch.as_tensor(self_merges.first_items(), dtype=torch.long),
                             persistent=False)

    @classmethod
    def learn(cls, train_inputs, n_items: int, vocab_ratio: float = 1.5, min_count: int = 2,
              vocab_size: int | None = None, **config) -> MergedBERT4Rec:
        """Learn merges on ``train_inputs`` (the sequences the model will read: the published ones)
        up to ``vocab_size`` tokens (default ``vocab_ratio`` × items, the paper's Steam ratio 1.5)
        and build the model over them."""
        from privrec.data.pair_merging import learn_merges
        from privrec.errors import ParameterError

        if vocab_size is None:
            if not vocab_ratio >= 1:
                raise ParameterError(f"vocab_ratio must be >= 1 (the vocabulary holds every item), got {vocab_ratio}")
            vocab_size = int(round(vocab_ratio * n_items))
        m = learn_merges(train_inputs, n_items, vocab_size, min_count)
        return cls(n_items, m.left.tolist(), m.right.tolist(), **config)

    def read(self, seqs):
        """Histories encoded with the merges (longest first, left to right)."""
        return self.merges.encode(seqs)

    def item_logits(self, states: torch.Tensor) -> torch.Tensor:
        """Token logits 1..vocab_size: what the cloze loss is computed on (``logits`` adds the padding column)."""
        return states @ self.item_embedding.weight[1: self.merges.vocab_size + 1].T + self.output_bias[1:]

    def score(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        tokens = super().score(batch)                                   # (B, vocab + 1), read after a final [mask]
        idx = self.first_item.expand(tokens.shape[0], -1)
        top = torch.full((tokens.shape[0], self.n_items + 1), -torch.inf, device=tokens.device, dtype=tokens.dtype)
        top = top.scatter_reduce(1, idx, tokens, "amax", include_self=True)
        total = torch.zeros_like(top).scatter_add(1, idx, torch.exp(tokens - top.gather(1, idx)))
        out = top + torch.log(total)
        out[:, 0] = -torch.inf
        return out
