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
    """Rows of the users x items training matrix (a persistent buffer, set with :meth:`set_matrix`)
    through the user tower, its columns through the item tower; predicted rating = cosine."""

    name = "dmf"

    OUTPUTS = ("remap", "relu")

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
        self._columns_cache: tuple[tuple, torch.Tensor] | None = None

    def set_matrix(self, matrix: torch.Tensor) -> None:
        """The training interactions (users x (items + 1), column 0 padding); never held-out items."""
        if tuple(matrix.shape) != tuple(self.matrix.shape):
            raise ValueError(f"matrix must have shape {tuple(self.matrix.shape)}, got {tuple(matrix.shape)}")
        self.matrix.copy_(matrix)

    def _columns(self) -> torch.Tensor:
        """The matrix transposed and contiguous (items x users), rebuilt only when the matrix changes:
        gathering an item's column from the row-major matrix is a strided copy, several times slower
        than the item tower itself."""
        key = (self.matrix._version, self.matrix.data_ptr())
        if self._columns_cache is None or self._columns_cache[0] != key:
            self._columns_cache = (key, self.matrix.T.contiguous())
        return self._columns_cache[1]

    def user_embedding(self, users: torch.Tensor) -> torch.Tensor:
        return self.user_tower(self.matrix[users])

    def item_embedding(self, items: torch.Tensor) -> torch.Tensor:
        """Each distinct item through the tower once (a batch of pairs repeats items many times)."""
        unique, inverse = torch.unique(items.reshape(-1), return_inverse=True)
        return self.item_tower(self._columns()[unique])[inverse].reshape(*items.shape, -1)

    def _cosine(self, u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """The predicted interaction probability in (0, 1) (see ``output``). The clamp at mu = 1e-6
        has zero gradient below it: with linear last layers (negative cosines possible) a run
        collapsed with every positive stuck there, hence ReLU towers or the (1 + cos) / 2 remap."""
        cos = F.cosine_similarity(u, v, dim=-1)
        return (cos if self.output == "relu" else (1 + cos) / 2).clamp(1e-6, 1 - 1e-6)

    def pair_logits(self, users, items):
        p = self._cosine(self.user_embedding(users)[:, None, :], self.item_embedding(items))
        return torch.logit(p)

    def loss(self, batch):
        """Normalised cross-entropy (Xue et al. Eq. 12) on (1 + cos) / 2; labels are 0/1 here."""
        p = self._cosine(self.user_embedding(batch["user"])[:, None, :], self.item_embedding(batch["item"]))
        return F.binary_cross_entropy(p, batch["label"])

    def _item_key(self) -> tuple:
        """Changes whenever the item embeddings can (an optimizer step or a weight load bumps a
        tensor's in-place version counter), so the all-items table is cached only while valid."""
        return (self.training, self.matrix._version, *((id(p), p._version) for p in self.item_tower.parameters()))

    def score(self, batch):
        key = self._item_key()
        if self._items_cache is None or self._items_cache[0] != key:
            all_items = torch.arange(self.matrix.shape[1], device=self.matrix.device)
            self._items_cache = (key, F.normalize(self.item_embedding(all_items), dim=-1).detach())
        return self._scores(batch, self._items_cache[1])

    def _scores(self, batch, items: torch.Tensor) -> torch.Tensor:
        out = F.normalize(self.user_embedding(batch["user"]), dim=-1) @ items.T
        out[:, 0] = -torch.inf
        return out
