"""DASL (Li et al., KDD 2021) with the PriCDSR changes (Lin, Pan, Ming; Sec. VI-A).

Two domains share their users and nothing else. Per domain k: user and item embeddings
(d), user and item biases, one GRU (input ``[e_item ; e_user]``, hidden H = 2d) that
encodes *every* sequence of domain-k items, whether it is a domain-k sample's own history
or the other domain's sample's cross-domain history (as in the reference code), and one
attention head.

* **Dual embedding.** An orthogonal map X (d x d, exactly orthogonal through
  ``torch.nn.utils.parametrizations.orthogonal``, so Xᵀ = X⁻¹ and similarities are kept)
  with the consistency loss ``1 - cos(X e_u^B, e_u^A)`` (weight ``beta``). The reference
  code used an unnormalised "cosine" and never applied its orthogonality penalty; we follow
  the paper's intent. As in the code, the mapped embedding is not used in prediction.
* **Dual attention.** For a target at step t, additive attention ``uᵀ tanh(W s + b)`` scores
  the T own-domain GRU states of the window *and* the T cross-domain states of the other
  domain's position-aligned window; one softmax over the 2T (padding masked) and the pooled
  preference ``p`` sums *both* domains' states. (The reference code sliced the softmax back to
  the own-domain T weights, so the cross domain only changed the normaliser; we follow the
  paper and note it.)
* **PriCDSR changes.** One-class feedback: binary cross-entropy with one uniformly sampled
  negative per positive, and an inner-product output
  ``logit(u, i) = <p, [e_i ; e_u]> + b_i + b_u``; dropout (rate ``dropout``, training only:
  TF1's ``dropout(x, 0.1)`` in DASL's code was a *keep* probability and also ran at test time).
* **DASL-single** (``mode="single"``): no dual embedding, attention over the own T states
  only, and only the target domain is trained (in the reference code the other domain is
  still trained but shares no parameter with the target, so the target model is the same).

Encoders: ``encoder="window"`` restarts the GRU on every T-item window, exactly as DASL's
memory window; ``encoder="stream"`` runs each GRU once over the whole padded row and pools
the T states of each window (states then also carry earlier context). ``stream`` costs
about T times less per target and is what the CPU reproduction uses; both share every other
part of the model.

Batches (built by :class:`privrec.training.crossdomain.CrossDomainTask`):
``user`` (B,), ``seq0``/``seq1`` (B, L) front-padded rows of both domains (position-aligned),
for training also ``sel0``/``sel1`` (B, L) bool (which positions are trained targets) and
``neg0``/``neg1`` (B, L) negatives. The target at position j of domain k is ``seq_k[j]``; its
window is positions j-T..j-1 of both rows. At evaluation the window is the last T positions.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils import parametrizations

from privrec.errors import ParameterError
from privrec.models.base import Recommender

MODES = ("dual", "single")
ENCODERS = ("window", "stream")


class _Attention(nn.Module):
    """HAN-style additive attention score ``uᵀ tanh(W s + b)`` (DASL's ``seq_attention``)."""

    def __init__(self, hidden: int, width: int):
        super().__init__()
        self.w = nn.Parameter(torch.randn(hidden, width) * 0.1)
        self.b = nn.Parameter(torch.randn(width) * 0.1)
        self.u = nn.Parameter(torch.randn(width) * 0.1)

    def forward(self, states: torch.Tensor) -> torch.Tensor:
        return torch.tanh(states @ self.w + self.b) @ self.u


class DASL(Recommender):
    name = "dasl"
    task = "cross_domain"     # trained by CrossDomainTask

    def __init__(self, n_users: int, n_items: tuple[int, int] | list[int], target: int = 0, mode: str = "dual",
                 embedding: int = 64, window: int = 10, attention: int = 20, dropout: float = 0.5,
                 beta: float = 1.0, encoder: str = "stream"):
        super().__init__()
        if mode not in MODES:
            raise ParameterError(f"DASL mode must be one of {MODES}, got {mode!r}")
        if encoder not in ENCODERS:
            raise ParameterError(f"DASL encoder must be one of {ENCODERS}, got {encoder!r}")
        if target not in (0, 1):
            raise ParameterError(f"target domain index must be 0 or 1, got {target}")
        if window < 1 or embedding < 1:
            raise ParameterError("window and embedding must be >= 1")
        if not 0.0 <= dropout < 1.0:
            raise ParameterError(f"dropout is a drop rate in [0, 1), got {dropout}")
        n_items = tuple(int(n) for n in n_items)
        self._config = dict(n_users=int(n_users), n_items=list(n_items), target=target, mode=mode,
                            embedding=embedding, window=window, attention=attention, dropout=dropout, beta=beta,
                            encoder=encoder)
        self.target, self.mode, self.window, self.beta, self.encoder = target, mode, window, beta, encoder
        self.n_items = n_items[target]               # what the evaluator ranks
        d, hidden = embedding, 2 * embedding
        self.user_emb = nn.ModuleList(nn.Embedding(n_users + 1, d) for _ in range(2))
        self.item_emb = nn.ModuleList(nn.Embedding(n + 1, d, padding_idx=0) for n in n_items)
        self.user_bias = nn.ModuleList(nn.Embedding(n_users + 1, 1) for _ in range(2))
        self.item_bias = nn.ModuleList(nn.Embedding(n + 1, 1, padding_idx=0) for n in n_items)
        self.gru = nn.ModuleList(nn.GRU(2 * d, hidden, batch_first=True) for _ in range(2))
        self.attn = nn.ModuleList(_Attention(hidden, attention) for _ in range(2))
        self.drop = nn.Dropout(dropout)
        for k in range(2):
            nn.init.xavier_uniform_(self.user_emb[k].weight)
            nn.init.xavier_uniform_(self.item_emb[k].weight)
            nn.init.zeros_(self.user_bias[k].weight)
            nn.init.zeros_(self.item_bias[k].weight)
            with torch.no_grad():
                self.item_emb[k].weight[0].zero_()
        if mode == "dual":
            self.mapping = parametrizations.orthogonal(nn.Linear(d, d, bias=False))

    def config(self) -> dict:
        return dict(self._config)

    # ------------------------------------------------------------------ encoders
    def _inputs(self, k: int, ids: torch.Tensor, user_vec: torch.Tensor) -> torch.Tensor:
        """GRU input ``[e_item ; e_user]`` for domain-k ids; ``user_vec`` (B, d) is the
        *sample's* domain user embedding (as in the reference code)."""
        e = self.item_emb[k](ids)
        return torch.cat([e, user_vec[:, None, :].expand(-1, ids.shape[1], -1)], dim=-1)

    def _window_states(self, k: int, rows: torch.Tensor, user_vec: torch.Tensor, pick: torch.Tensor
                       ) -> tuple[torch.Tensor, torch.Tensor]:
        """``encoder="window"``: states and padding mask of domain-k windows restarted at every
        window. rows (B, L) front-padded ids; ``pick`` (N, 2) = (row, window start j) for windows
        covering positions j-T..j-1. Returns (N, T, H) states and (N, T) bool mask of real items."""
        t = self.window
        ids = F.pad(rows, (t, 0)).unfold(1, t, 1)[pick[:, 0], pick[:, 1]]       # (N, T)
        states, _ = self.gru[k](self._inputs(k, ids, user_vec[pick[:, 0]]))
        return states, ids > 0

    def _streams(self, batch: dict[str, torch.Tensor], targets: tuple[int, ...]) -> dict:
        """``encoder="stream"``: each GRU runs once over its whole padded row, for every user
        vector it is needed with (own domain, and in dual mode the other domain's cross
        sequence), all in one batched call. Returns {(gru domain, user domain): (states
        (B, T + L, H), window mask (B, L + 1, T))}."""
        t = self.window
        need = {(k, k) for k in targets} | ({(1 - k, k) for k in targets} if self.mode == "dual" else set())
        uvec = {u: self.user_emb[u](batch["user"]) for u in {u for _, u in need}}
        out = {}
        for g in (0, 1):
            owners = sorted(u for e, u in need if e == g)
            if not owners:
                continue
            padded = F.pad(batch[f"seq{g}"], (t, 0))                                      # (B, T + L)
            full, _ = self.gru[g](torch.cat([self._inputs(g, padded, uvec[u]) for u in owners], 0))
            mask = padded.unfold(1, t, 1) > 0                                            # (B, L + 1, T)
            for u, states in zip(owners, full.split(padded.shape[0], 0)):
                out[(g, u)] = (states, mask)
        return out

    def _pool_all(self, k: int, parts: list[tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor:
        """Attention pooling of *every* window j = 0..L of each row at once: one softmax over
        the concatenated windows of ``parts`` (own, then cross). Scores are computed once per
        state and windows are strided views, so nothing of size (N, T, H) is gathered.
        Returns (B, L + 1, H). All-padding windows get finite (unused) values, not NaN."""
        t, a = self.window, self.attn[k]
        scores = torch.cat([a(s).unfold(1, t, 1).masked_fill(~m, -1e30) for s, m in parts], -1)
        w = torch.softmax(scores, -1)                                                   # (B, L + 1, nT)
        n_win = w.shape[1]
        pooled = 0
        for i, (states, _) in enumerate(parts):
            for s in range(t):
                pooled = pooled + w[..., i * t + s, None] * states[:, s:s + n_win]
        return pooled

    def preference(self, k: int, batch: dict[str, torch.Tensor], pick: torch.Tensor,
                   streams: dict | None = None) -> torch.Tensor:
        """Pooled preference p (N, H) for domain-k targets at ``pick`` (row, position)."""
        if self.encoder == "stream":
            streams = streams if streams is not None else self._streams(batch, (k,))
            parts = [streams[(k, k)]] + ([streams[(1 - k, k)]] if self.mode == "dual" else [])
            return self._pool_all(k, parts)[pick[:, 0], pick[:, 1]]
        uvec = self.user_emb[k](batch["user"])
        own, own_mask = self._window_states(k, batch[f"seq{k}"], uvec, pick)
        a = self.attn[k]
        if self.mode == "single":
            scores = a(own).masked_fill(~own_mask, -torch.inf)
            return torch.einsum("nt,nth->nh", torch.softmax(scores, 1), own)
        o = 1 - k                                # cross sequence: other domain's items, other GRU
        cross, cross_mask = self._window_states(o, batch[f"seq{o}"], uvec, pick)
        states = torch.cat([own, cross], 1)
        scores = a(states).masked_fill(~torch.cat([own_mask, cross_mask], 1), -torch.inf)
        return torch.einsum("nt,nth->nh", torch.softmax(scores, 1), states)

    def _logits(self, k: int, p: torch.Tensor, users: torch.Tensor, items: torch.Tensor) -> torch.Tensor:
        """Inner-product output <p, [e_i ; e_u]> + b_i + b_u for (N,) users and (N, c) items."""
        d = self.item_emb[k].embedding_dim
        e_u = self.user_emb[k](users)
        out = torch.einsum("nd,ncd->nc", p[:, :d], self.item_emb[k](items))
        out = out + (p[:, d:] * e_u).sum(-1, keepdim=True) + self.user_bias[k](users)
        return out + self.item_bias[k](items).squeeze(-1)

    # ------------------------------------------------------------------ training
    def domain_loss(self, k: int, batch: dict[str, torch.Tensor], streams: dict | None = None) -> torch.Tensor:
        sel = batch[f"sel{k}"]
        pick = sel.nonzero()                                                   # (N, 2) row, position
        if len(pick) == 0:    # no target of this domain in the batch (e.g. cold-start users only): zero, with a graph
            return self.item_bias[k].weight.sum() * 0.0
        p = self.drop(self.preference(k, batch, pick, streams))
        users = batch["user"][pick[:, 0]]
        items = torch.stack([batch[f"seq{k}"][pick[:, 0], pick[:, 1]], batch[f"neg{k}"][pick[:, 0], pick[:, 1]]], 1)
        logit = self._logits(k, p, users, items)
        return -(F.logsigmoid(logit[:, 0]) + F.logsigmoid(-logit[:, 1])).mean()

    def consistency_loss(self, users: torch.Tensor) -> torch.Tensor:
        """Dual embedding: 1 - cos(X e_u^1, e_u^0), averaged over the batch's users."""
        mapped = self.mapping(self.user_emb[1](users))
        return (1.0 - F.cosine_similarity(mapped, self.user_emb[0](users), dim=-1)).mean()

    def loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        if self.mode == "single":
            return self.domain_loss(self.target, batch)
        streams = self._streams(batch, (0, 1)) if self.encoder == "stream" else None
        return (self.domain_loss(0, batch, streams) + self.domain_loss(1, batch, streams)
                + self.beta * self.consistency_loss(batch["user"]))

    # ------------------------------------------------------------------ evaluation
    def score(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Scores over all target-domain items from the last T positions of both rows."""
        k = self.target
        rows = batch[f"seq{k}"]
        pick = torch.stack([torch.arange(rows.shape[0], device=rows.device),
                            torch.full((rows.shape[0],), rows.shape[1], device=rows.device)], 1)
        p = self.preference(k, batch, pick)
        d = self.item_emb[k].embedding_dim
        users = batch["user"]
        out = p[:, :d] @ self.item_emb[k].weight.T + self.item_bias[k].weight.T
        out = out + (p[:, d:] * self.user_emb[k](users)).sum(-1, keepdim=True) + self.user_bias[k](users)
        out[:, 0] = -torch.inf
        return out
