"""PFCR's sequence model (Sec. 3.2–3.3): items as the mean of their codes' embeddings, a transformer over them.

* **Code-embedding table** ``E ∈ R^{(n_codebooks · n_centroids) × d}``: item i's vector is the
  mean over codebooks k of ``E[k · n_centroids + codes[i, k]]`` (:class:`CodeEmbedding`; the
  padding item is the zero vector). This table is what PFCR federates: it holds no item id, so
  domains with disjoint items share it through their text codes.
* **Encoder**: SASRec's causal transformer (:class:`~privrec.models.sasrec.SASRec`; the paper:
  4 heads, hidden 300) over those vectors, scored against every item of the domain (the same
  code-based vectors), next-item cross-entropy.

The codes come from :func:`privrec.data.codes.product_codes` and are set with
:meth:`CodeSASRec.set_codes` (a buffer, saved with the weights).
"""

from __future__ import annotations

import torch
from torch import nn

from privrec.models.sasrec import SASRec


class CodeEmbedding(nn.Module):
    """An ``nn.Embedding`` look-alike (``forward(ids)`` and ``weight``) whose rows are mean-pooled code embeddings."""

    def __init__(self, n_items: int, n_codebooks: int, n_centroids: int, hidden: int):
        super().__init__()
        self.n_codebooks, self.n_centroids = n_codebooks, n_centroids
        self.table = nn.Embedding(n_codebooks * n_centroids, hidden)                 # E
        self.register_buffer("codes", torch.zeros(n_items + 1, n_codebooks, dtype=torch.long))
        self.register_buffer("offsets", torch.arange(n_codebooks) * n_centroids, persistent=False)

    def set_codes(self, codes: torch.Tensor) -> None:
        """(n_items + 1, n_codebooks) integer codes; row 0 (padding) is ignored."""
        codes = torch.as_tensor(codes)
        if tuple(codes.shape) != tuple(self.codes.shape):
            raise ValueError(f"codes must have shape {tuple(self.codes.shape)}, got {tuple(codes.shape)}")
        body = codes[1:]
        if body.numel() and (int(body.min()) < 0 or int(body.max()) >= self.n_centroids):
            raise ValueError(f"codes must lie in 0..{self.n_centroids - 1}")
        self.codes.copy_(codes.clamp_min(0))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        if ids.numel() >= self.codes.shape[0]:
            # pool every item once, then index: B · L ids would otherwise gather and average
            # B · L · n_codebooks rows (3x the work of a batch of 128 windows on ML-1M's platforms)
            return self.weight[ids]
        vectors = self.table(self.codes[ids] + self.offsets).mean(-2)
        return vectors * (ids > 0).unsqueeze(-1)

    @property
    def weight(self) -> torch.Tensor:
        """Every item's vector (n_items + 1, d), row 0 zero: what the output layer scores against."""
        vectors = self.table(self.codes + self.offsets).mean(-2)
        return vectors.index_fill(0, torch.zeros(1, dtype=torch.long, device=vectors.device), 0.0)


class CodeSASRec(SASRec):
    name = "code-sasrec"
    needs_codes = True                  # the experiment sets the items' codes

    def __init__(self, n_items: int, max_len: int = 50, hidden: int = 300, layers: int = 2, heads: int = 4,
                 inner: int = 256, dropout: float = 0.2, attn_dropout: float = 0.2, layer_norm_eps: float = 1e-12,
                 init_std: float = 0.02, n_codebooks: int = 32, n_centroids: int = 256):
        super().__init__(n_items, max_len, hidden, layers, heads, inner, dropout, attn_dropout, layer_norm_eps,
                         init_std)
        self._config.update(n_codebooks=n_codebooks, n_centroids=n_centroids)
        self.item_embedding = CodeEmbedding(n_items, n_codebooks, n_centroids, hidden)
        nn.init.normal_(self.item_embedding.table.weight, 0.0, init_std)

    def set_codes(self, codes) -> None:
        self.item_embedding.set_codes(torch.as_tensor(codes))
