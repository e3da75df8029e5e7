"""N domains with their own users and items (PFCR's setting).

Scenario: every domain is a separate platform — a federated client in PFCR. Domains share
neither users nor items: a user code or item code means something only inside its domain, and
nothing links two domains except what the items' text says. Each domain is filtered on its own
(de-duplication, then the ``min_user``/``min_item`` core), turned into chronological per-user
sequences and split leave-one-out; validation and test items are each user's last two.

Contrast :mod:`privrec.data.crossdomain`: two domains over the *same* users (PriCDSR, DASL).

Data whose domains do share user tokens (ML-1M cut by genre: every user rates movies of many
genres) is made disjoint by :func:`assign_users`: a user present in several domains is kept in
exactly one, drawn uniformly (seeded) among the domains where the user has at least ``min_user``
interactions, so each platform has its own clientele and no user's history is split across
clients. ``params["user_overlap"]`` records how many users this removed from each domain.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from privrec.data.interactions import IdMap, Interactions, UserItemCounts
from privrec.data.preprocess import drop_duplicates, k_core
from privrec.data.sequences import Sequences, to_sequences
from privrec.data.splits import Split, leave_one_out
from privrec.errors import ParameterError

# A four-platform cut of ML-1M by first listed genre, for federated runs on MovieLens.
ML1M_FOUR_DOMAINS: dict[str, tuple[str, ...]] = {
    "action": ("Action", "Adventure", "Sci-Fi", "Fantasy", "War", "Western"),
    "comedy": ("Animation", "Children's", "Comedy", "Musical"),
    "drama": ("Documentary", "Drama", "Romance"),
    "thriller": ("Crime", "Film-Noir", "Horror", "Mystery", "Thriller"),
}


@dataclass(frozen=True, eq=False)
class Domain(UserItemCounts):
    """One platform: its own user and item codes (1-based, 0 = padding), per-user sequences and split."""

    name: str
    users: IdMap
    items: IdMap
    sequences: Sequences            # row = user code; row 0 is empty
    split: Split
    item_features: pd.DataFrame | None = None   # indexed by item code (titles, genres: the text PFCR encodes)


@dataclass(frozen=True, eq=False)
class MultiDomainData:
    domains: tuple[Domain, ...]
    params: dict

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.domains)

    def domain(self, name: str) -> Domain:
        for d in self.domains:
            if d.name == name:
                return d
        raise ParameterError(f"no domain named {name!r}; domains are {self.names}")

    def statistics(self) -> list[dict]:
        """Per-domain users, items, interactions, mean sequence length and density."""
        out = []
        for d in self.domains:
            lengths = d.sequences.lengths[1:]
            n = int(lengths.sum())
            out.append({"domain": d.name, "users": d.sequences.n_rows - 1, "items": d.n_items, "interactions": n,
                        "avg_seq_len": float(lengths.mean()), "density": n / max(d.n_users * d.n_items, 1)})
        return out


def assign_users(tables: Sequence[Interactions], min_user: int, seed: int) -> tuple[list[Interactions], list[int]]:
    """Make the domains' users disjoint: each user token present in several tables keeps its rows in
    one table only, drawn uniformly among the tables where it has >= ``min_user`` rows (among all
    its tables when none has). Returns the tables and, per table, how many users it lost."""
    tokens = [pd.Index(t.users.tokens[1:].astype(str)) for t in tables]
    every = tokens[0]
    for idx in tokens[1:]:
        every = every.union(idx)
    counts = np.zeros((len(every), len(tables)), dtype=np.int64)
    for k, t in enumerate(tables):
        per_user = np.bincount(t.user, minlength=len(t.users.tokens))[1:]
        counts[every.get_indexer(tokens[k]), k] = per_user
    eligible = counts >= min_user
    eligible[~eligible.any(1)] = counts[~eligible.any(1)] > 0
    keys = np.random.default_rng([seed, 7]).random(counts.shape)
    keys[~eligible] = -1.0
    owner = keys.argmax(1)
    out, lost = [], []
    for k, t in enumerate(tables):
        mine = owner[every.get_indexer(tokens[k])] == k                 # per user code 1..n of table k
        keep_user = np.concatenate([[False], mine])
        out.append(t.take(keep_user[t.user]))
        lost.append(int((~mine & (counts[every.get_indexer(tokens[k]), k] > 0)).sum()))
    return out, lost


def build_disjoint(tables: Sequence[Interactions], *, min_user: int = 5, min_item: int = 5,
                   disjoint_users: bool = True, seed: int = 0) -> MultiDomainData:
    """One :class:`Domain` per table (its ``name`` names the domain), each de-duplicated, filtered to
    its own ``min_user``/``min_item`` core and split leave-one-out. With ``disjoint_users`` the
    users are first made disjoint by :func:`assign_users`; without, user tokens shared by two
    tables are simply unrelated codes in each (the domains cannot tell)."""
    if len(tables) < 2:
        raise ParameterError(f"multi-domain data needs at least two domains, got {len(tables)}")
    names = [t.name for t in tables]
    if len(set(names)) != len(names):
        raise ParameterError(f"domain names must differ, got {names}; rename the tables (Interactions.name)")
    if min_user < 3:
        raise ParameterError("min_user must be >= 3 so every user has train, validation and test items")
    tables = [drop_duplicates(t) for t in tables]
    lost = [0] * len(tables)
    if disjoint_users:
        tables, lost = assign_users(tables, min_user, seed)
    domains = []
    for t in tables:
        part = k_core(t, min_user, min_item).compact()
        seqs = to_sequences(part)
        domains.append(Domain(t.name, part.users, part.items, seqs, leave_one_out(seqs), part.item_features))
    return MultiDomainData(tuple(domains), {"min_user": min_user, "min_item": min_item,
                                            "disjoint_users": disjoint_users, "seed": seed,
                                            "user_overlap": dict(zip(names, lost))})


def ml1m_multidomain(inter: Interactions, groups: Mapping[str, Sequence[str]] = ML1M_FOUR_DOMAINS, *,
                     min_user: int = 5, min_item: int = 5, seed: int = 0) -> MultiDomainData:
    """ML-1M cut into one platform per genre group (a movie goes to its first listed genre's group),
    users made disjoint by :func:`assign_users`."""
    from privrec.data.crossdomain import genre_domains

    return build_disjoint(genre_domains(inter, groups), min_user=min_user, min_item=min_item, seed=seed)
