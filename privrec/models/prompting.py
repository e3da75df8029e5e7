"""PFCR's prompt tuning (Sec. 3.5): a pre-trained code-based encoder adapted to one domain with soft prompts.

* **Domain prompt** (Eqs. 20–21): ``d_W`` learnable context words ``P_domain ∈ R^{d_W × d}``, read by
  multi-head attention whose *queries* are the pre-trained sequence states ``h_S`` (keys and values:
  the context words), shared by every user of the domain.
* **User prompt** (Eq. 22): the sequence of the domain's own item *ids* (not shared across domains)
  through a small causal transformer (UPE).
* **Full prompting** (Eq. 23): ``h = W_C [P_domain ⊕ P_user ⊕ h_S] + b_C``; the prompts *and* the
  pre-trained encoder are tuned. **Light prompting** (Eq. 24): ``h = P_domain + h_S``; only the domain
  prompt (context words and its attention) is tuned, the encoder and code table stay frozen.
* Scores: ``h · V`` with V the code-based item vectors (Eq. 25, cross-entropy over the domain's items).

Prompts are applied at every position (each position's query reads the context words, the user
prompt is causal), so the model trains on the same windows as its pre-trained encoder. Load the
pre-trained weights with :meth:`PromptedCodeSASRec.load_pretrained`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from privrec.errors import ParameterError
from privrec.models.code_encoder import CodeSASRec
from privrec.models.sasrec import SelfAttentionBlock

STRATEGIES = ("full", "light")


class PromptedCodeSASRec(CodeSASRec):
    name = "pfcr-prompt"

    def __init__(self, n_items: int, max_len: int = 50, hidden: int = 300, layers: int = 2, heads: int = 4,
                 inner: int = 256, dropout: float = 0.2, attn_dropout: float = 0.2, layer_norm_eps: float = 1e-12,
                 init_std: float = 0.02, n_codebooks: int = 32, n_centroids: int = 256, strategy: str = "full",
                 context_words: int = 1024):
        if strategy not in STRATEGIES:
            raise ParameterError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
        super().__init__(n_items, max_len, hidden, layers, heads, inner, dropout, attn_dropout, layer_norm_eps,
                         init_std, n_codebooks, n_centroids)
        self._config.update(strategy=strategy, context_words=context_words)
        self.strategy = strategy
        self.domain_words = nn.Parameter(torch.randn(context_words, hidden) * init_std)      # P_domain
        self.domain_attention = nn.MultiheadAttention(hidden, heads, batch_first=True)      # MA, Eqs. 20-21
        if strategy == "full":
            self.id_embedding = nn.Embedding(n_items + 1, hidden, padding_idx=0)          # the domain's own ids
            nn.init.normal_(self.id_embedding.weight, 0.0, init_std)
            self.user_encoder = SelfAttentionBlock(hidden, heads, inner, dropout, attn_dropout, layer_norm_eps)
            self.combine = nn.Linear(3 * hidden, hidden)                                    # W_C, b_C (Eq. 23)

    def load_pretrained(self, state_dict: dict) -> None:
        """The pre-trained code encoder's weights (codes, table, transformer); prompts keep their init."""
        missing, unexpected = self.load_state_dict(state_dict, strict=False)
        if unexpected:
            raise ValueError(f"not a code-sasrec state: unexpected keys {unexpected[:5]}")
        encoder_missing = [k for k in missing if not k.startswith(("domain_", "id_embedding", "user_encoder",
                                                                     "combine"))]
        if encoder_missing:
            raise ValueError(f"the pre-trained state lacks {encoder_missing[:5]}")
        if self.strategy == "light":                  # only the domain prompt is tuned
            for name, p in self.named_parameters():
                p.requires_grad_(name.startswith("domain_"))

    def _domain_prompt(self, h: torch.Tensor) -> torch.Tensor:
        """``MA(h_S, P_domain, P_domain)`` (Eqs. 20–21) with ``domain_attention``'s weights. Every query
        reads the same context words, so their keys and values are projected once (W · d, not B · W · d
        as ``nn.MultiheadAttention`` over words expanded to the batch would) and all B · L queries
        attend as one batch: the same numbers, ~3x less work on a batch of 128 windows."""
        att, (b, length, d) = self.domain_attention, h.shape
        heads = att.num_heads
        w_q, w_k, w_v = att.in_proj_weight.chunk(3)
        b_q, b_k, b_v = att.in_proj_bias.chunk(3)

        def split(x: torch.Tensor) -> torch.Tensor:                       # (N, d) -> (1, heads, N, d / heads)
            return x.reshape(1, -1, heads, d // heads).transpose(1, 2)

        q = split(F.linear(h.reshape(-1, d), w_q, b_q))
        k, v = split(F.linear(self.domain_words, w_k, b_k)), split(F.linear(self.domain_words, w_v, b_v))
        out = F.scaled_dot_product_attention(q, k, v, dropout_p=att.dropout if self.training else 0.0)
        return att.out_proj(out.transpose(1, 2).reshape(b, length, d))

    def _user_prompt(self, seq: torch.Tensor) -> torch.Tensor:
        length = seq.shape[1]
        causal = torch.ones(length, length, dtype=torch.bool, device=seq.device).tril()
        eye = torch.eye(length, dtype=torch.bool, device=seq.device)
        mask = (causal[None, None] & (seq > 0)[:, None, None, :]) | eye
        return self.user_encoder(self.id_embedding(seq), mask)                               # UPE, Eq. 22

    def encode(self, seq: torch.Tensor, last: int | None = None) -> torch.Tensor:
        """The prompted states of every position (``last``: accepted for the interface; the user prompt
        reads every position, so all are computed and the last ``last`` returned)."""
        if seq.shape[1] > self.max_len:
            seq = seq[:, -self.max_len:]
        if last is not None:
            return self.encode(seq)[:, -last:]
        h = super().encode(seq)                                                              # h_S, (B, L, d)
        domain = self._domain_prompt(h)                                                      # (B, L, d)
        if self.strategy == "light":
            return domain + h                                                                # Eq. 24
        return self.combine(torch.cat([domain, self._user_prompt(seq), h], -1))              # Eq. 23
