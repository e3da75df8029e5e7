"""Transfer testbeds: one cross-domain dataset cut to the regime the papers evaluate.

Scenario. The cross-domain papers (PriCDSR, PriCDR, PFCR) evaluate on Amazon / Douban /
OnlineRetail–Pantry domains with short target histories (mean 7.8–56 items, density
0.05–5.6%); ML-1M's genre domains are dense (74–96 items per user, 4.4–6.3%), and there the
non-private cross-domain models gain nothing over their single-domain counterparts, so no
privacy claim can be judged. A testbed keeps the data real and changes only *what the target
domain knows about its users*:

* **cold users**: a seeded share ``cold_share`` of the target domain's users (among those with at
  least ``k + 2`` target items) keeps only ``k + 2`` of its target interactions — by default a
  uniformly random subset, kept in time order (``keep="random"``: the target platform saw a few
  of what the user did), or the first / last ``k + 2`` — of which the first ``k`` are training
  items, the next validation, the last test. Their auxiliary-domain history is untouched (the
  information a cross-domain model can transfer). Random, not first: a user's *first* target
  items on ML-1M are its most popular ones (the sign-up page), where popularity beats any
  cross-domain ranker (``privrec.evaluation.transfer_probe``: full-ranking HR@10 of popularity
  0.22 against 0.13 for cross-domain co-occurrence, action, k = 0); on a random subset the
  auxiliary domain carries what popularity and the user's own few items do not (0.13 against 0.07
  and 0.08);
* **warm users** keep their whole target history for training, and are not evaluated (they
  teach the target's item side, as the dense users of a real platform do).

Evaluation runs on cold users only (the split has no validation or test item for warm users),
with the pipeline's own metrics and negatives. ``k = 0`` is the strict cold start (no target
item in training). The split is chronological for every pipeline (PriCDR's random hold-out
applies to the dense testbed only; its report says so).

The same code serves every cross-domain pipeline: :func:`apply_shared` for shared-user data
(PriCDSR, PriCDR: :class:`~privrec.data.crossdomain.CrossDomainData`) and
:func:`apply_platforms` for platforms with disjoint users (PFCR:
:class:`~privrec.data.multidomain.MultiDomainData`), both per *target* domain; the other
domain is left as it is. ``dense`` is the identity (today's genre split).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from privrec.errors import ParameterError

if TYPE_CHECKING:                   # imported where used: the CLI reads TESTBEDS without loading pandas
    from privrec.data.sequences import Sequences
    from privrec.data.splits import Split

KEEP = ("first", "last", "random")
COLD_SHARE = 0.8     # the registered cold testbeds' share of cold-start users in the target domain


@dataclass(frozen=True)
class Testbed:
    """``k`` None: the dense testbed (nothing cut). Otherwise ``cold_share`` of the target's users
    (seeded by ``seed``) keep their first ``k`` target items for training, the next two held out."""

    name: str
    k: int | None = None
    cold_share: float = 0.0
    seed: int = 0
    keep: str = "first"               # which k + 2 target items a cold user keeps: first, last, or random

    def __post_init__(self) -> None:
        if self.k is None:
            return
        if self.keep not in KEEP:
            raise ParameterError(f"testbed keep must be one of {KEEP}, got {self.keep!r}")
        if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 0:
            raise ParameterError(f"testbed k (target training items per cold user) must be an integer >= 0, got "
                                 f"{self.k!r}")
        if not 0 < self.cold_share < 1:
            raise ParameterError(f"testbed cold_share must lie in (0, 1) (some warm users must teach the target's "
                                 f"items), got {self.cold_share!r}")

    @property
    def dense(self) -> bool:
        return self.k is None

    def to_dict(self) -> dict:
        return asdict(self)

    def describe(self) -> str:
        if self.dense:
            return "dense: every user's whole history in both domains (leave-one-out per domain)"
        which = {"random": "a random subset (in time order) of", "first": "the first", "last": "the last"}[self.keep]
        return (f"{self.name}: {self.cold_share:.0%} of the target domain's users (seed {self.seed}) keep {which} "
                f"{self.k} + 2 of their target interactions ({self.k} for training, then validation, then test; "
                f"evaluated on them only); the other users keep their whole target history for training and are "
                f"not evaluated; the auxiliary domain is unchanged")


TESTBEDS: dict[str, Testbed] = {"dense": Testbed("dense")}
TESTBEDS.update({f"cold{k}": Testbed(f"cold{k}", k, COLD_SHARE, keep="random") for k in (0, 1, 3, 5)})


def identity(name: str) -> str | dict:
    """What a run's fingerprint records of its testbed: ``"dense"``, or the whole definition (so a changed
    share, k, seed or rule under the same name never reuses a run made under the old one)."""
    bed = get(name)
    return "dense" if bed.dense else bed.to_dict()


def get(name: str | Testbed) -> Testbed:
    """A registered testbed by name (``dense``, ``cold0``, ``cold1``, ``cold3``, ``cold5``)."""
    if isinstance(name, Testbed):
        return name
    if name not in TESTBEDS:
        raise ParameterError(f"unknown testbed {name!r}; use one of {list(TESTBEDS)}")
    return TESTBEDS[name]


def cold_users(lengths: np.ndarray, bed: Testbed) -> np.ndarray:
    """Boolean mask over rows (row 0 = padding, never cold): ``cold_share`` of the rows with at
    least ``k + 2`` items, drawn uniformly without replacement from ``bed.seed``."""
    lengths = np.asarray(lengths)
    mask = np.zeros(len(lengths), dtype=bool)
    if bed.dense:
        return mask
    eligible = np.flatnonzero(lengths >= bed.k + 2)
    eligible = eligible[eligible > 0]
    n = int(round(bed.cold_share * len(eligible)))
    mask[np.random.default_rng([bed.seed, 74]).choice(eligible, n, replace=False)] = True
    return mask


def cold_split(seqs: Sequences, cold: np.ndarray, k: int, keep: str = "first", seed: int = 0
               ) -> tuple[Sequences, Split]:
    """The target's sequences with cold rows cut to ``k + 2`` of their items (the first, the last, or a
    uniformly random subset kept in time order, seeded), and the split: cold rows ``k`` train / 1
    validation / 1 test (chronological), warm rows all train, no target."""
    from privrec.data.sequences import Sequences
    from privrec.data.splits import Split

    n = seqs.lengths
    if keep == "random":
        rows = seqs.row_ids()
        key = np.random.default_rng([seed, 75]).random(len(seqs.items))
        order = np.lexsort((key, rows))
        rank = np.empty(len(order), np.int64)
        rank[order] = np.arange(len(order)) - np.repeat(seqs.indptr[:-1], n)
        kept = ~cold[rows] | (rank < k + 2)
        counts = np.bincount(rows[kept], minlength=seqs.n_rows)
        cut = Sequences(np.concatenate([[0], np.cumsum(counts)]), seqs.items[kept])
    else:
        start = np.where(cold, n - (k + 2), 0) if keep == "last" else np.zeros_like(n)
        cut = seqs.take_slices(start, np.where(cold, start + k + 2, n))
    n = cut.lengths
    end = n
    train_end = np.where(cold, k, n)
    split = Split(cut.take_slices(np.zeros_like(n), train_end),
                  cut.take_slices(train_end, np.where(cold, k + 1, n)),
                  cut.take_slices(np.where(cold, k + 1, n), end), "cold_start", {"k": k})
    return cut, split


def _summary(bed: Testbed, target: str, cold: np.ndarray) -> dict:
    return {**bed.to_dict(), "target": target, "cold_users": int(cold.sum())}


def apply_shared(data, target: str, bed: str | Testbed):
    """Shared-user two-domain data (:class:`~privrec.data.crossdomain.CrossDomainData`) with the
    testbed applied to ``target``; the other domain, the users and the item codes are unchanged."""
    from privrec.data.crossdomain import CrossDomainData, DomainData

    bed = get(bed)
    dom = data.domain(target)
    if bed.dense:
        return data
    cold = cold_users(dom.sequences.lengths, bed)
    seqs, split = cold_split(dom.sequences, cold, bed.k, bed.keep, bed.seed)
    new = DomainData(dom.name, dom.items, seqs, split)
    domains = tuple(new if d.name == target else d for d in data.domains)
    return CrossDomainData(data.users, domains, {**data.params, "testbed": _summary(bed, target, cold)})


def apply_platforms(data, targets: Sequence[str], bed: str | Testbed):
    """Platforms with disjoint users (:class:`~privrec.data.multidomain.MultiDomainData`) with the
    testbed applied to each platform of ``targets`` on its own (each its own cold users: no user is on
    two platforms, so every platform can be a target at once); the others are unchanged."""
    from privrec.data.multidomain import MultiDomainData

    bed = get(bed)
    if bed.dense:
        return data
    domains, summary = [], []
    for d in data.domains:
        if d.name in targets:
            cold = cold_users(d.sequences.lengths, bed)
            seqs, split = cold_split(d.sequences, cold, bed.k, bed.keep, bed.seed)
            d = replace(d, sequences=seqs, split=split)
            summary.append(_summary(bed, d.name, cold))
        domains.append(d)
    missing = sorted(set(targets) - {d.name for d in data.domains})
    if missing:
        raise ParameterError(f"no platform named {missing}; platforms are {[d.name for d in data.domains]}")
    return MultiDomainData(tuple(domains), {**data.params, "testbed": summary})


def noise_partners(data, target: str, seed: int):
    """The information control of a federation: every platform but ``target`` with its sequences' items
    redrawn uniformly from its own items (same users, lengths and split positions, seeded by
    ``[seed, 7]``), so the federation keeps its shape, rounds and uploads and loses the partners'
    content. ``target`` is unchanged."""
    from privrec.data.multidomain import MultiDomainData
    from privrec.data.sequences import Sequences
    from privrec.data.splits import Split

    data.domain(target)
    rng = np.random.default_rng([seed, 7])
    domains = []
    for d in data.domains:
        if d.name != target:
            draw = lambda s: Sequences(s.indptr, rng.integers(1, d.n_items + 1, len(s.items)).astype(np.int32))
            sp = d.split
            d = replace(d, sequences=draw(d.sequences),
                        split=Split(draw(sp.train), draw(sp.valid), draw(sp.test), sp.kind, sp.params))
        domains.append(d)
    return MultiDomainData(tuple(domains), {**data.params, "noise_partners_of": target})


def domain_statistics(name: str, seqs: Sequences, n_items: int, split: Split | None = None) -> dict:
    """Users with at least one interaction, items, interactions, mean length over those users,
    density, and (with a split) the users evaluated on test — comparable with the papers' tables."""
    lengths = seqs.lengths[1:]
    users = int((lengths > 0).sum())
    n = int(lengths.sum())
    out = {"domain": name, "users": users, "items": int(n_items), "interactions": n,
           "avg_seq_len": n / max(users, 1), "density": n / max(users * n_items, 1)}
    if split is not None:
        out["eval_users"] = int((split.test.lengths > 0).sum())
        out["train_interactions"] = int(split.train.lengths.sum())
    return out


def shared_statistics(data, target: str) -> list[dict]:
    """Per-domain statistics of one direction of shared-user data (``data`` already cut by
    :func:`apply_shared`): the target with its evaluated users, then the auxiliary domain."""
    out = []
    for name in (target, *[n for n in data.names if n != target]):
        d = data.domain(name)
        out.append({**domain_statistics(name, d.sequences, d.n_items, d.split if name == target else None),
                    "role": "target" if name == target else "auxiliary"})
    return out


def platform_statistics(data, target: str) -> list[dict]:
    """The same for platforms with disjoint users (``data`` cut by :func:`apply_platforms`)."""
    out = []
    for d in (data.domain(target), *[d for d in data.domains if d.name != target]):
        out.append({**domain_statistics(d.name, d.sequences, d.n_items, d.split if d.name == target else None),
                    "role": "target" if d.name == target else "other platform"})
    return out
