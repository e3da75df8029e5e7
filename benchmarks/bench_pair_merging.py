"""Item-pair merging (Mu & Lim Eq. 8) on ML-1M train sequences (RecBole protocol): learning time for
1,000 / 10,000 merges and encoding time, against the literal recount-every-merge BPE on a slice.

    python benchmarks/bench_pair_merging.py"""

from __future__ import annotations

import _timing  # noqa: F401  (puts tests/ on the path for the reference implementation)
from _timing import timed

from privrec.data.pair_merging import learn_merges
from privrec.data.sequences import Sequences
from privrec.experiments.sequential import PROTOCOLS, prepare
from reference import bpe


def main() -> None:
    p = PROTOCOLS["recbole"]
    inter, split = prepare("ml-1m", p["preprocessing"], p["split"])
    train, n = split.train, inter.n_items
    learn_merges(Sequences.from_rows([[], [1, 2, 1, 2]]), 2, 3)          # compile outside the timings
    print(f"ML-1M train: {train.n_rows - 1:,} users, {len(train.items):,} positions, {n:,} items\n")
    print(f"{'merges asked':>12} {'learned':>8} {'learn s':>8} {'encode s':>9} {'tokens after':>13} {'last count':>11}")
    for merges in (1_000, 10_000):
        t_learn, m = timed(lambda: learn_merges(train, n, n + merges), repeat=3)
        t_enc, enc = timed(lambda: m.encode(train), repeat=3)
        print(f"{merges:>12,} {len(m.left):>8,} {t_learn:>8.2f} {t_enc:>9.2f} {len(enc.items):>13,} "
              f"{int(m.count[-1]) if len(m.count) else 0:>11,}")
    rows = [list(train.row(u)) for u in range(1, 301)]
    small = Sequences.from_rows([[]] + rows)
    t_ref, _ = timed(lambda: bpe.learn(rows, n, n + 200))
    t_fast, _ = timed(lambda: learn_merges(small, n, n + 200), repeat=3)
    print(f"\n200 merges on 300 users ({len(small.items):,} positions): literal BPE {t_ref:.2f} s, "
          f"privrec {t_fast * 1e3:.1f} ms ({t_ref / t_fast:,.0f}x)")


if __name__ == "__main__":
    main()
