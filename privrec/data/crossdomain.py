"""Two-domain sequential data: shared users, disjoint items, per-domain chronological
sequences and leave-one-out splits.

Build it from any interaction table with a domain attribute (``split_by_item``,
``split_by_column``), from two tables sharing a user id field (``build``), or use the default
instance: ML-1M split by genre (``ml1m_genre_domains``). ``load_cross_domain`` does all three
from dataset names and files (RecBole atomic, CSV, Parquet), as the command line does. The auxiliary domain's validation and test items are never part of
what a mechanism publishes (:meth:`CrossDomainData.publishable_rows`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from privrec.data.interactions import IdMap, Interactions
from privrec.data.preprocess import drop_duplicates
from privrec.data.sequences import Sequences, to_sequences
from privrec.data.splits import Split, leave_one_out
from privrec.errors import DataFormatError, EmptyDataError, ParameterError

# ML-1M lists genres alphabetically; a movie's domain is decided by its first listed genre.
ML1M_GENRE_DOMAINS: dict[str, tuple[str, ...]] = {
    "action": ("Action", "Adventure", "Crime", "Fantasy", "Film-Noir", "Horror", "Mystery", "Sci-Fi", "Thriller",
               "War", "Western"),
    "drama": ("Animation", "Children's", "Comedy", "Documentary", "Drama", "Musical", "Romance"),
}


@dataclass(frozen=True, eq=False)
class DomainData:
    name: str
    items: IdMap
    sequences: Sequences          # row = shared user code; row 0 is empty
    split: Split                  # leave-one-out within the domain

    @property
    def n_items(self) -> int:
        return len(self.items)


@dataclass(frozen=True, eq=False)
class CrossDomainData:
    users: IdMap
    domains: tuple[DomainData, DomainData]
    params: dict

    @property
    def n_users(self) -> int:
        return len(self.users)

    @property
    def names(self) -> tuple[str, str]:
        return self.domains[0].name, self.domains[1].name

    def domain(self, name: str) -> DomainData:
        for d in self.domains:
            if d.name == name:
                return d
        raise ParameterError(f"no domain named {name!r}; domains are {self.names}")

    def other(self, name: str) -> DomainData:
        self.domain(name)
        return self.domains[1] if self.domains[0].name == name else self.domains[0]

    def publishable_rows(self, name: str) -> Sequences:
        """A domain's per-user sequences without its validation and test items."""
        return self.domain(name).split.train

    def matrix(self, name: str):
        """A domain's users x items 0/1 matrix of every interaction (PriCDR's rating matrix: each
        rating an implicit positive), scipy CSR; row r = shared user code r + 1, column c = item c + 1."""
        import scipy.sparse as sp

        seqs = self.domain(name).sequences
        rows = seqs.row_ids()[seqs.indptr[1]:] - 1
        m = sp.csr_matrix((np.ones(len(rows)), (rows, seqs.items[seqs.indptr[1]:] - 1)),
                          shape=(self.n_users, self.domain(name).n_items))
        m.sum_duplicates()
        m.data[:] = 1.0
        return m

    def statistics(self) -> list[dict]:
        """Per-domain statistics in the shape of PriCDSR's Table I."""
        out = []
        for d in self.domains:
            lengths = d.sequences.lengths[1:]
            out.append({"domain": d.name, "users": self.n_users, "items": d.n_items,
                        "interactions": int(lengths.sum()), "avg_seq_len": float(lengths.mean())})
        return out


def split_by_item(inter: Interactions, domain_of_item: np.ndarray, names: Sequence[str]) -> tuple[Interactions, ...]:
    """Split one table by a per-item domain index (0..len(names)-1, aligned with item codes) into one
    table per name; at least two of them must be non-empty."""
    dom = np.asarray(domain_of_item)
    if dom.shape[0] != len(inter.items.tokens):
        raise ParameterError("domain_of_item needs one entry per item code (index 0 = padding)")
    outside = sorted(set(np.unique(dom[inter.item]).tolist()) - set(range(len(names))))
    if outside:
        raise ParameterError(f"domain_of_item must hold 0..{len(names) - 1} for every item with interactions, found "
                             f"{outside[:5]}; map every item to one of the {len(names)} domains (interactions would "
                             "be dropped silently)")
    present = np.unique(dom[inter.item])
    if len(present) < 2:
        raise DataFormatError(f"the domain rule puts every interaction in one domain ({names[int(present[0])]}); "
                              "a cross-domain dataset needs two non-empty domains")
    rows = dom[inter.item]
    parts = []
    for k, name in enumerate(names):
        part = inter.take(rows == k)
        parts.append(part.__class__(**{**part.__dict__, "name": name}))
    return tuple(parts)


def split_by_column(frame: pd.DataFrame, domain_col: str, **kwargs) -> tuple[Interactions, Interactions]:
    """Two Interactions from a table with a domain column holding exactly two values."""
    if domain_col not in frame.columns:
        raise DataFormatError(f"domain column {domain_col!r} is missing (columns: {list(frame.columns)})")
    values = sorted(frame[domain_col].astype(str).unique())
    if len(values) != 2:
        raise DataFormatError(f"column {domain_col!r} must hold exactly two domains, found {len(values)}: {values[:5]}")
    return tuple(Interactions.from_frame(frame[frame[domain_col].astype(str) == v].reset_index(drop=True), name=v,
                                         **kwargs) for v in values)  # type: ignore[return-value]


def genre_domains(inter: Interactions, groups: Mapping[str, Sequence[str]] = ML1M_GENRE_DOMAINS
                  ) -> tuple[Interactions, ...]:
    """One table per group of genres, a movie going to the group of its first listed genre (ML-1M lists
    genres alphabetically); the default is the two PriCDSR domains of ``ML1M_GENRE_DOMAINS``."""
    if inter.item_features is None or "genre" not in inter.item_features:
        raise DataFormatError("the genre split needs an item 'genre' field (ML-1M's .item file)")
    first = inter.item_features["genre"].map(lambda g: g[0] if isinstance(g, list) and g else None)
    lookup = {g: k for k, name in enumerate(groups) for g in groups[name]}
    dom = np.zeros(len(inter.items.tokens), dtype=np.int64)
    codes = first.index.to_numpy()
    unknown = sorted({g if isinstance(g, str) else "<no genre>" for g in first if g not in lookup})
    if unknown:
        raise DataFormatError(f"genres {unknown} are not assigned to a domain; every movie needs a first genre "
                              "listed in one of the groups")
    dom[codes] = [lookup[g] for g in first]
    return split_by_item(inter, dom, tuple(groups))


def ml1m_genre_domains(inter: Interactions) -> tuple[Interactions, Interactions]:
    """ML-1M split by each movie's first listed genre into 'action' and 'drama' (see ML1M_GENRE_DOMAINS)."""
    return genre_domains(inter)  # type: ignore[return-value]


def build(a: Interactions, b: Interactions, *, min_user: int = 5, min_item: int = 5) -> CrossDomainData:
    """Shared-user two-domain data: de-duplicate, then iterate until every kept user has
    >= ``min_user`` interactions in *each* domain and every kept item >= ``min_item``."""
    if min_user < 3:
        raise ParameterError("min_user must be >= 3 so every user has train, validation and test items")
    a, b = drop_duplicates(a), drop_duplicates(b)
    shared = pd.Index(a.users.tokens[1:].astype(str)).intersection(pd.Index(b.users.tokens[1:].astype(str)))
    if len(shared) == 0:
        raise EmptyDataError(f"domains {a.name!r} and {b.name!r} share no user ids; cross-domain data needs the same "
                             "users in both (check the user id field)")
    shared = shared.sort_values()
    # per-row shared-user index (-1: user not in both domains); integer work from here on
    su_a = shared.get_indexer(a.users.tokens.astype(str))[a.user]
    su_b = shared.get_indexer(b.users.tokens.astype(str))[b.user]
    keep_a, keep_b = su_a >= 0, su_b >= 0
    n_shared = len(shared)
    while True:
        ca = np.bincount(su_a[keep_a], minlength=n_shared)
        cb = np.bincount(su_b[keep_b], minlength=n_shared)
        good = (ca >= min_user) & (cb >= min_user)
        ia = np.bincount(a.item[keep_a], minlength=len(a.items.tokens))
        ib = np.bincount(b.item[keep_b], minlength=len(b.items.tokens))
        new_a = keep_a & good[np.maximum(su_a, 0)] & (ia[a.item] >= min_item)
        new_b = keep_b & good[np.maximum(su_b, 0)] & (ib[b.item] >= min_item)
        if (new_a == keep_a).all() and (new_b == keep_b).all():
            break
        keep_a, keep_b = new_a, new_b
        if not keep_a.any() or not keep_b.any():
            raise EmptyDataError(f"no user has >= {min_user} interactions in both domains after filtering items with "
                                 f"< {min_item}; the data is too sparse (lower min_user/min_item of privrec.data.crossdomain.build)")
    raw_a = np.asarray(shared)[su_a[keep_a]]
    raw_b = np.asarray(shared)[su_b[keep_b]]
    user_ids, _ = IdMap.factorize(np.unique(raw_a), "user")
    domains = []
    for inter, raw, keep in ((a, raw_a, keep_a), (b, raw_b, keep_b)):
        part = inter.take(keep)
        items, table = part.items.subset(part.item)
        recoded = Interactions(user=user_ids.encode(raw), item=table[part.item], timestamp=part.timestamp,
                               rating=part.rating, users=user_ids, items=items, name=inter.name)
        seqs = to_sequences(recoded)
        domains.append(DomainData(inter.name, items, seqs, leave_one_out(seqs)))
    return CrossDomainData(user_ids, (domains[0], domains[1]), {"min_user": min_user, "min_item": min_item})


def ml1m_cross_domain(inter: Interactions, min_user: int = 5, min_item: int = 5) -> CrossDomainData:
    a, b = ml1m_genre_domains(inter)
    return build(a, b, min_user=min_user, min_item=min_item)


def subsample_users(data: CrossDomainData, max_users: int, seed: int) -> CrossDomainData:
    """A seeded subset of shared users (quick runs); item codes are unchanged."""
    if max_users >= data.n_users:
        return data
    keep = np.sort(np.random.default_rng(seed).choice(np.arange(1, data.n_users + 1), max_users, replace=False))
    users = IdMap(np.concatenate([data.users.tokens[:1], data.users.tokens[keep]]), "user")
    domains = []
    for d in data.domains:
        seqs = d.sequences.take_rows(np.concatenate([[0], keep]))
        domains.append(DomainData(d.name, d.items, seqs, leave_one_out(seqs)))
    return CrossDomainData(users, (domains[0], domains[1]), {**data.params, "max_users": max_users})


def load_cross_domain(sources: str | Sequence[str], domain_field: str | None = None, *, min_user: int = 5,
                      min_item: int = 5, fields: dict[str, str] | None = None) -> CrossDomainData:
    """Two-domain data from the command line's ``--data`` (and ``--domain-field``).

    * ``"ml-1m"`` without ``domain_field``: the default instance (ML-1M split by genre);
    * one file with ``domain_field``: a table whose column ``domain_field`` holds two values
      (the domains' names);
    * two files: one domain each, sharing the user id field (names: the file stems).

    ``fields`` names a file's columns by role (:func:`privrec.data.tables.canonical_columns`)."""
    from privrec.data.tables import canonical_columns, load, load_file, read_table

    sources = [sources] if isinstance(sources, str) else list(sources)
    if len(sources) == 1 and domain_field is None:
        if sources[0] != "ml-1m":
            raise ParameterError(f"{sources[0]}: say which column names each row's domain (--domain-field), or give "
                                 "two files, one per domain; only ml-1m has a built-in split (by genre)")
        return ml1m_cross_domain(load("ml-1m", fields=fields), min_user, min_item)
    if len(sources) == 1:
        from pathlib import Path

        if not Path(sources[0]).is_file():
            raise DataFormatError(f"{sources[0]}: --domain-field needs an interaction file (.inter, .csv, .parquet) "
                                  "with that column")
        frame = canonical_columns(read_table(sources[0]), fields)
        a, b = split_by_column(frame, domain_field, source=str(sources[0]))
        return build(a, b, min_user=min_user, min_item=min_item)
    if len(sources) == 2:
        if domain_field is not None:
            raise ParameterError("--domain-field splits one file; with two files each file is one domain")
        a, b = (load_file(s, fields=fields) for s in sources)
        if a.name == b.name:
            raise ParameterError(f"both files are named {a.name!r}; the file stems name the domains, rename one")
        return build(a, b, min_user=min_user, min_item=min_item)
    raise ParameterError(f"cross-domain data comes from one file with a domain column or from two files, got "
                         f"{len(sources)} sources")
