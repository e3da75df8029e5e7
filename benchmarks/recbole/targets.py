"""Which item RecBole 1.2.1 holds out per user on privrec's ml-1m (leaderboard protocol), against privrec's.

Prints, per stage, the SHA-256 that ``tests/reference/recbole_ml1m_targets.json`` stores and the share of
users whose held-out item privrec's ``recbole`` protocol (float32 order) and exact-time order pick.
Run: ``/tmp/rbv/bin/python benchmarks/recbole/targets.py`` (set-up: ``_recbole.py``)."""

from __future__ import annotations

import hashlib

import _recbole  # first: compatibility shims for RecBole 1.2.1
from recbole.data import create_dataset, data_preparation

from privrec.experiments.sequential import PROTOCOLS, prepare


def recbole_targets() -> dict[str, dict[str, str]]:
    config = _recbole.leaderboard_config("SASRec")
    ds = create_dataset(config)
    _, valid, test = data_preparation(config, ds)
    out = {}
    for stage, loader in (("valid", valid), ("test", test)):
        f = loader.dataset.inter_feat
        out[stage] = dict(zip(ds.id2token("user_id", f["user_id"].numpy()),
                              ds.id2token("item_id", f["item_id"].numpy())))
    return out


def privrec_targets(precision: str) -> dict[str, dict[str, str]]:
    p = PROTOCOLS["recbole"]
    inter, split = prepare("ml-1m", p["preprocessing"], p["split"], precision)
    out = {}
    for stage in ("valid", "test"):
        users = split.eval_users(stage)
        t = split.targets(stage)
        out[stage] = dict(zip(inter.users.decode(users), inter.items.decode([t.row(u)[0] for u in users])))
    return out


def main() -> None:
    rb = recbole_targets()
    mine = {p: privrec_targets(p) for p in ("float32", "exact")}
    for stage, got in rb.items():
        text = "".join(f"{u}\t{got[u]}\n" for u in sorted(got))
        print(f"{stage}: RecBole holds out {len(got):,} items, sha256 {hashlib.sha256(text.encode()).hexdigest()}")
        for p, m in mine.items():
            same = sum(m[stage].get(u) == i for u, i in got.items()) / len(got)
            print(f"  privrec {p:7s} order: same item for {same:.2%} of users")


if __name__ == "__main__":
    main()
