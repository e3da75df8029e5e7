"""Perturbing every ML-1M history with randomised response (Mu & Lim Alg. 1) and learning the merges
the paper's method reads: wall time per step on this machine.

    python benchmarks/bench_rr_release.py
"""

from __future__ import annotations

import time

import numpy as np

from privrec.data.pair_merging import learn_merges
from privrec.data.sequences import to_sequences
from privrec.data.splits import leave_one_out
from privrec.data.tables import load
from privrec.experiments.report import text_table
from privrec.privacy.alternatives import random_map
from privrec.release.histories import perturb_histories


def main() -> None:
    inter = load("ml-1m")
    hist = leave_one_out(to_sequences(inter)).history("test")
    alt = random_map(inter.n_items, np.random.default_rng(0))      # the map's cost is the embedding's, not this
    rows = []
    for eps in (0.1, 0.0001):
        t = time.perf_counter()
        out, published, g = perturb_histories(hist, alt, eps, np.random.default_rng(0))
        t_perturb = time.perf_counter() - t
        t = time.perf_counter()
        merges = learn_merges(out, inter.n_items, int(1.5 * inter.n_items))
        t_merge = time.perf_counter() - t
        changed = float((out.items != hist.items).mean())
        rows.append([f"{eps:g}", f"{int(hist.lengths.sum()):,}", f"{changed:.1%}", f"{t_perturb:.2f}",
                     f"{len(merges.left):,}", f"{t_merge:.2f}"])
    print(text_table(["epsilon", "positions", "replaced", "perturb + guarantee (s)", "merges", "learn merges (s)"],
                     rows))


if __name__ == "__main__":
    main()
