"""Single-domain matrix models over (user, item) interactions, the PriCDR paper's baselines, trained
with :class:`~privrec.training.tasks.ratings.InteractionTask`:

* :class:`BPRMF` — matrix factorisation with the BPR pairwise loss (Rendle et al., 2009);
* :class:`NeuMF` — GMF and MLP towers fused (He et al., WWW'17), pointwise log loss;
* :class:`DMF` — deep matrix factorisation (Xue et al., IJCAI'17): a user's interaction row and an
  item's interaction column through MLPs (ReLU after every layer), cosine similarity as the
  predicted rating, normalised cross-entropy (binary here: every rating is a positive). Its user tower is HeteroCDR's target
  side (:mod:`privrec.models.heterocdr`).

Each model scores every item for a batch of user ids (``score({"user": ...})``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from privrec.models.base import Recommender


def mlp(sizes: tuple[int, ...], last_activation: bool = True) -> nn.Sequential:
    """Linear layers ``sizes[0] -> ... -> sizes[-1]`` with ReLU between (and after the last if asked)."""
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2 or last_activation:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def csr_rows(matrix: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Row pointers and column ids of a dense 2-D tensor's nonzeros, row-major (CSR without values)."""
    rows, cols = matrix.nonzero(as_tuple=True)
    crow = torch.zeros(matrix.shape[0] + 1, dtype=torch.long, device=matrix.device)
    crow[1:] = torch.cumsum(torch.bincount(rows, minlength=matrix.shape[0]), 0)
    return crow, cols


class PairModel(Recommender):
    """A model of (user, item) pairs: ``pair_logits(users (B,), items (B, K)) -> (B, K)``."""

    task = "interactions"

    def pair_logits(self, users: torch.Tensor, items: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def config(self) -> dict:
        return dict(self._config)

    def loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Pointwise log loss over the positive and its sampled negatives."""
        return F.binary_cross_entropy_with_logits(self.pair_logits(batch["user"], batch["item"]), batch["label"])


class BPRMF(PairModel):
    name = "bpr"

    def __init__(self, n_users: int, n_items: int, dim: int = 64):
        super().__init__()
        self._config = dict(n_users=n_users, n_items=n_items, dim=dim)
        self.user = nn.Embedding(n_users, dim)
        self.item = nn.Embedding(n_items + 1, dim, padding_idx=0)
        nn.init.normal_(self.user.weight, std=0.01)
        nn.init.normal_(self.item.weight, std=0.01)

    def pair_logits(self, users, items):
        return (self.user(users)[:, None, :] * self.item(items)).sum(-1)

    def loss(self, batch):
        """BPR: -log sigmoid(score(positive) - score(negative)), each sampled negative a pair."""
        s = self.pair_logits(batch["user"], batch["item"])
        return -F.logsigmoid(s[:, :1] - s[:, 1:]).mean()

    def score(self, batch):
        out = self.user(batch["user"]) @ self.item.weight.T
        out[:, 0] = -torch.inf
        return out


class PrefixBPRMF(BPRMF):
    """BPR-MF on the prefixes protocol (DIPSGNN's Table 2 baseline): each training prefix is read as
    its (user, next item) pair — MF has no order — against one uniform negative item (BPR); a user's
    score of every item is ``p_u · q_i``, the same for all of their test prefixes."""

    name = "bprmf"
    task = "prefixes"
    needs_users = True                  # the experiment passes n_users

    def __init__(self, n_items: int, n_users: int, max_len: int = 50, dim: int = 64):
        super().__init__(n_users, n_items, dim)
        self._config.update(max_len=max_len)
        self.max_len = max_len

    def user_vectors(self, users: torch.Tensor) -> torch.Tensor:
        return self.user(users)

    def bpr(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        pos = batch["target"][:, -1]
        keep = pos > 0
        pos = pos[keep]
        neg = torch.randint(1, self.item.num_embeddings, pos.shape, device=pos.device)
        p = self.user_vectors(batch["user"][keep])
        s = (p[:, None, :] * self.item(torch.stack([pos, neg], 1))).sum(-1)
        return -F.logsigmoid(s[:, 0] - s[:, 1]).mean()

    def loss(self, batch):
        return self.bpr(batch)

    def score(self, batch):
        out = self.user_vectors(batch["user"]) @ self.item.weight.T
        out[:, 0] = -torch.inf
        return out


class DPMF(PrefixBPRMF):
    """DPMF_imp (Hua et al. [25], implicit feedback as the DIPSGNN paper adapts it): BPR-MF with user
    profiles kept in the unit ball and the objective perturbed by ``Σ_i η_i · q_i`` (noise from
    :func:`privrec.privacy.objective.objective_noise`, set with :meth:`set_noise`, fixed for the run)
    plus ``reg · Σ_i ||q_i||²``; both in the per-sample mean form of the summed objective (÷ M, the
    number of training samples), so SGD on batches follows [25]'s objective."""

    name = "dpmf"

    def __init__(self, n_items: int, n_users: int, max_len: int = 50, dim: int = 64, reg: float = 1.0):
        super().__init__(n_items, n_users, max_len, dim)
        self._config.update(reg=reg)
        self.reg = float(reg)
        self.register_buffer("eta", torch.zeros(n_items + 1, dim))
        self.register_buffer("n_train", torch.ones(()))

    def set_noise(self, eta: torch.Tensor, n_train: int) -> None:
        if tuple(eta.shape) != tuple(self.eta.shape):
            raise ValueError(f"noise must have shape {tuple(self.eta.shape)}, got {tuple(eta.shape)}")
        self.eta.copy_(eta)
        self.n_train.fill_(float(n_train))

    def user_vectors(self, users):
        x = self.user(users)
        return x / x.norm(dim=-1, keepdim=True).clamp_min(1.0)          # ||p_u|| <= 1: [25]'s premise

    def loss(self, batch):
        q = self.item.weight
        return self.bpr(batch) + ((self.eta * q).sum() + self.reg * (q * q).sum()) / self.n_train


class NeuMF(PairModel):
    name = "neumf"

    def __init__(self, n_users: int, n_items: int, dim: int = 64, dropout: float = 0.0):
        super().__init__()
        self._config = dict(n_users=n_users, n_items=n_items, dim=dim, dropout=dropout)
        self.user_gmf, self.item_gmf = nn.Embedding(n_users, dim), nn.Embedding(n_items + 1, dim)
        self.user_mlp, self.item_mlp = nn.Embedding(n_users, dim), nn.Embedding(n_items + 1, dim)
        self.tower = nn.Sequential(nn.Dropout(dropout), mlp((2 * dim, dim, dim // 2)))
        self.out = nn.Linear(dim + dim // 2, 1)
        for e in (self.user_gmf, self.item_gmf, self.user_mlp, self.item_mlp):
            nn.init.normal_(e.weight, std=0.01)

    def pair_logits(self, users, items):
        b, k = items.shape
        gmf = self.user_gmf(users)[:, None, :] * self.item_gmf(items)
        u = self.user_mlp(users)[:, None, :].expand(b, k, -1)
        deep = self.tower(torch.cat([u, self.item_mlp(items)], -1))
        return self.out(torch.cat([gmf, deep], -1)).squeeze(-1)

    def score(self, batch, chunk: int = 128):
        """Every item for each user, the same numbers as :meth:`pair_logits` but factored: the GMF
        half and the first MLP layer are per user plus per item, so only the later MLP layers run
        per (user, item) pair — in chunks of users to bound memory."""
        users = batch["user"]
        if self.training:
            items = torch.arange(self.item_gmf.num_embeddings, device=users.device).expand(len(users), -1)
            out = self.pair_logits(users, items)
        else:
            first, rest = self.tower[1][0], self.tower[1][1:]
            d = self.user_mlp.embedding_dim
            w_out = self.out.weight[0]
            gmf = (self.user_gmf(users) * w_out[:d]) @ self.item_gmf.weight.T + self.out.bias
            u = self.user_mlp(users) @ first.weight[:, :d].T + first.bias
            v = self.item_mlp.weight @ first.weight[:, d:].T
            deep = torch.cat([rest(u[i:i + chunk, None, :] + v) @ w_out[d:] for i in range(0, len(users), chunk)])
            out = gmf + deep
        out[:, 0] = -torch.inf
        return out


class DMF(PairModel):
    """Rows of the users x items training matrix (a buffer set with :meth:`set_matrix`; kept in a saved model,
    left out of training states: ``data_buffers``)
    through the user tower, its columns through the item tower; predicted rating = cosine."""

    name = "dmf"

    OUTPUTS = ("remap", "relu")
    data_buffers = ("matrix",)          # the caller's data, not learned: see privrec.training.model_state

    def __init__(self, n_users: int, n_items: int, hidden: tuple[int, ...] | list[int] = (500, 200),
                 output: str = "relu"):
        """``output``: "relu" (default) — Xue et al.'s towers, ReLU after every layer (so cos >= 0), and
        p = max(cos, 1e-6); "remap" — linear last layers and p = (1 + cos) / 2. On ML-1M drama (1,500
        users, seed 0) "relu" reached test sampled NDCG@10 0.478 against 0.400: with non-negative
        embeddings a negative item only has to be orthogonal, not opposite."""
        super().__init__()
        if output not in self.OUTPUTS:
            raise ValueError(f"output must be one of {self.OUTPUTS}, got {output!r}")
        hidden = tuple(int(h) for h in hidden)
        self._config = dict(n_users=n_users, n_items=n_items, hidden=list(hidden), output=output)
        self.output = output
        self.register_buffer("matrix", torch.zeros(n_users, n_items + 1))
        self.user_tower = mlp((n_items + 1, *hidden), last_activation=output == "relu")
        self.item_tower = mlp((n_users, *hidden), last_activation=output == "relu")
        self._items_cache: tuple[tuple, torch.Tensor] | None = None
        self._sparse_cache: tuple[tuple, list] | None = None

    def set_matrix(self, matrix: torch.Tensor) -> None:
        """The training interactions (users x (items + 1), column 0 padding); never held-out items."""
        if tuple(matrix.shape) != tuple(self.matrix.shape):
            raise ValueError(f"matrix must have shape {tuple(self.matrix.shape)}, got {tuple(matrix.shape)}")
        self.matrix.copy_(matrix)

    def _sparse(self, axis: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """The matrix's rows (axis 0) or columns (axis 1) in CSR form (row pointers, indices, values),
        rebuilt only when the matrix changes; values None when all are 1."""
        key = (self.matrix._version, self.matrix.data_ptr())
        if self._sparse_cache is None or self._sparse_cache[0] != key:
            parts = []
            for m in (self.matrix, self.matrix.T):
                crow, cols = csr_rows(m)
                vals = m[torch.repeat_interleave(torch.arange(m.shape[0], device=m.device), crow.diff()), cols]
                parts.append((crow, cols, None if bool((vals == 1).all()) else vals))   # 0/1: no weights
            self._sparse_cache = (key, parts)
        return self._sparse_cache[1][axis]

    def _tower(self, tower: nn.Sequential, axis: int, index: torch.Tensor, unit: bool = False) -> torch.Tensor:
        """``tower`` over the rows (axis 0) or columns (axis 1) ``index`` of the matrix, each distinct one
        once. The first layer reads only the nonzeros (``embedding_bag``, O(nnz x width)): a 0/1 row of
        ML-1M has ~2-4% nonzeros; a training step of DMF on ML-1M drama (batch 4,096 pairs) fell from
        1.10 s to 0.50 s, forward and backward."""
        unique, inverse = torch.unique(index.reshape(-1), return_inverse=True)
        crow, col, val = self._sparse(axis)
        starts, lengths = crow[unique], crow[unique + 1] - crow[unique]
        offsets = torch.cumsum(lengths, 0) - lengths
        pos = torch.repeat_interleave(starts - offsets, lengths) + torch.arange(int(lengths.sum()), device=crow.device)
        first = tower[0]
        hidden = F.embedding_bag(col[pos], first.weight.T.contiguous(), offsets, mode="sum",   # strided rows: 6x slower
                                 per_sample_weights=None if val is None else val[pos]) + first.bias
        out = tower[1:](hidden)
        if unit:                                # normalise the distinct ones, before the gather repeats them
            out = F.normalize(out, dim=-1)
        return out[inverse].reshape(*index.shape, -1)

    def user_embedding(self, users: torch.Tensor) -> torch.Tensor:
        return self._tower(self.user_tower, 0, users)

    def item_embedding(self, items: torch.Tensor, unit: bool = False) -> torch.Tensor:
        """Item tower outputs (``unit``: scaled to unit length), shape ``items.shape + (h,)``."""
        return self._tower(self.item_tower, 1, items, unit)

    def _prob(self, u: torch.Tensor, items: torch.Tensor) -> torch.Tensor:
        """The predicted interaction probability in (0, 1) of users' embeddings ``u`` (B, h) with ``items``
        (B, K): the cosine (see ``output``), as a batched product of unit vectors (F.cosine_similarity
        broadcast over (B, K, h): 0.50 -> 0.35 s per step). The clamp at mu = 1e-6 has zero gradient
        below it: with linear last layers (negative cosines possible) a run collapsed with every
        positive stuck there, hence ReLU towers or the (1 + cos) / 2 remap."""
        cos = torch.einsum("bh,bkh->bk", F.normalize(u, dim=-1), self.item_embedding(items, unit=True))
        return (cos if self.output == "relu" else (1 + cos) / 2).clamp(1e-6, 1 - 1e-6)

    def pair_logits(self, users, items):
        return torch.logit(self._prob(self.user_embedding(users), items))

    def loss(self, batch):
        """Normalised cross-entropy (Xue et al. Eq. 12) on the predicted probability; labels are 0/1 here."""
        return F.binary_cross_entropy(self._prob(self.user_embedding(batch["user"]), batch["item"]), batch["label"])

    def _item_key(self) -> tuple:
        """Changes whenever the item embeddings can (an optimizer step or a weight load bumps a
        tensor's in-place version counter), so the all-items table is cached only while valid."""
        return (self.training, self.matrix._version, *((id(p), p._version) for p in self.item_tower.parameters()))

    def score(self, batch):
        key = self._item_key()
        if self._items_cache is None or self._items_cache[0] != key:
            all_items = torch.arange(self.matrix.shape[1], device=self.matrix.device)
            self._items_cache = (key, self.item_embedding(all_items, unit=True).detach())
        return self._scores(batch, self._items_cache[1])

    def _scores(self, batch, items: torch.Tensor) -> torch.Tensor:
        out = F.normalize(self.user_embedding(batch["user"]), dim=-1) @ items.T
        out[:, 0] = -torch.inf
        return out
