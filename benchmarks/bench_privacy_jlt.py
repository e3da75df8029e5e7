"""Benchmark: PriCDR JLT / SJLT rating publishing, fast paths vs the literal dense algorithm.

Source matrix: real MovieLens-1M restricted to the 2,000 most-rated movies (6,040 users x 2,000
items, ratings 1-5, unit = one rating changed by at most 5, i.e. also added or removed), n' = 500,
epsilon = 1, delta = 1/#users, the paper's calibration of w.

  fast JLT    privrec.privacy.jlt.publish_jlt (lift="full": R_c M_a^T + w G, sparse/BLAS)
  fast SJLT   privrec.privacy.jlt.publish_sjlt (FWHT + P^T, lift="full")
  literal     privrec.privacy._reference_jlt: Alg. 1 as printed (dense thin SVD lift, dense M,
              dense N x N Hadamard, dense D and P), and the dense full lift [R_c, w I] @ M^T.

Times are wall-clock seconds: the median of ``--repeat`` runs of the whole publish call for the
fast paths (drawing M / P / D / G and computing the guarantee included), one run for the literal
ones (random matrices drawn beforehand, not timed). Run:

    PRIVREC_CACHE=/tmp/pc python benchmarks/bench_privacy_jlt.py
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import scipy.sparse as sp
from _timing import timed


def ml1m_matrix(n_items: int) -> sp.csr_matrix:
    from privrec.data.tables import load_dataset

    inter = load_dataset("ml-1m")
    users = inter.user.astype(np.int64) - 1            # codes start at 1 (0 = padding)
    items = inter.item.astype(np.int64) - 1
    counts = np.bincount(items)
    top = np.argsort(-counts, kind="stable")[:n_items]
    remap = np.full(counts.shape[0], -1)
    remap[top] = np.arange(top.shape[0])
    keep = remap[items] >= 0
    return sp.csr_matrix((inter.rating[keep].astype(np.float64), (users[keep], remap[items[keep]])),
                         shape=(int(users.max()) + 1, n_items))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--items", type=int, default=2000)
    ap.add_argument("--n-prime", type=int, default=500)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--q", type=float, nargs="+", default=[0.5, 0.01])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-literal", action="store_true", help="time the fast paths only")
    ap.add_argument("--skip-svd", action="store_true", help="skip the literal rows that need a dense SVD")
    args = ap.parse_args()

    from privrec.privacy import jlt
    from privrec.privacy.fwht import next_pow2
    from reference import jlt as ref

    r = ml1m_matrix(args.items)
    m, n1 = r.shape
    k, eps, delta, s = args.n_prime, args.epsilon, 1.0 / r.shape[0], 5.0
    print(f"ML-1M source matrix: {m} users x {n1} items, {r.nnz} ratings (density {r.nnz / (m * n1):.3f}); "
          f"n'={k}, epsilon={eps}, delta=1/{m}, max_change={s:g}, padded N={next_pow2(n1)}\n")
    jlt.publish_jlt(r[:50, :60], eps, np.random.default_rng(0), n_prime=4)       # compile numba, warm caches
    jlt.publish_sjlt(r[:50, :60], eps, np.random.default_rng(0), n_prime=4, q=0.5)

    rows = []
    t_fast, (out, g) = timed(lambda: jlt.publish_jlt(r, eps, np.random.default_rng(1), n_prime=k, max_change=s),
                             args.repeat)
    w_abs = g.parameters["w"] * s
    rows.append(("JLT fast (full lift)", t_fast, g))
    if not args.skip_literal:
        rng = np.random.default_rng(1)
        if not args.skip_svd:
            t0 = time.perf_counter()
            ref.literal_jlt(r, w_abs, rng.standard_normal((k, n1)), lift="svd")
            rows.append(("JLT literal: Alg. 1 (dense thin-SVD lift, dense M)", time.perf_counter() - t0, None))
        m_full = rng.standard_normal((k, n1 + m))
        t0 = time.perf_counter()
        ref.literal_jlt(r, w_abs, m_full, lift="full")
        rows.append(("JLT literal: dense [R_c, wI] @ M^T (no SVD)", time.perf_counter() - t0, None))
    for q in args.q:
        t_s, (out_s, gs) = timed(lambda: jlt.publish_sjlt(r, eps, np.random.default_rng(2), n_prime=k, q=q,
                                                          max_change=s), args.repeat)
        rows.append((f"SJLT fast (q={q:g}, lifted)", t_s, gs))
        if not args.skip_literal:
            rng = np.random.default_rng(2)
            signs, p = jlt.draw_sjlt(rng, next_pow2(n1), k, q)
            noise = rng.standard_normal((m, k))
            if not args.skip_svd:
                t0 = time.perf_counter()
                ref.literal_sjlt(r, w_abs, signs, p, None, lift="svd")
                rows.append((f"SJLT literal: Alg. 1 (q={q:g}, dense thin-SVD lift, dense H, D, P)",
                             time.perf_counter() - t0, None))
            t0 = time.perf_counter()
            ref.literal_sjlt(r, w_abs, signs, p, noise, lift="full")
            rows.append((f"SJLT literal: lifted, dense H, D, P (q={q:g}, no SVD)", time.perf_counter() - t0, None))

    print("| path | seconds | vs fast | true epsilon | paper's claim |")
    print("|---|---:|---:|---:|---:|")
    fast = None
    for name, t, gg in rows:
        if "fast" in name:
            fast = t
        ratio = "1" if "fast" in name else f"{t / fast:.1f}x"
        eps_true = f"{gg.epsilon:.4g}" if gg is not None else ""
        claim = f"{gg.claimed.epsilon:.4g}" if gg is not None and gg.claimed else ""
        print(f"| {name} | {t:.3f} | {ratio} | {eps_true} | {claim} |")
    print()
    print(f"w (paper calibration, units of max_change): {g.parameters['w']:.1f}; exact-calibrated w for the same "
          f"(eps, delta): {jlt.calibrate_w(eps, delta, k, 'tight', n_items=n1):.1f}; Blocki's: "
          f"{jlt.blocki_w(eps, delta, k):.1f}")
    blocki = next(x for x in g.related if x.definition.startswith("(epsilon, delta)-DP by Blocki"))
    print(f"JLT guarantee: {g.summary()}\n  Blocki route for this w: eps={blocki.epsilon:.4g}; "
          f"output {out.shape} {out.dtype}, finite={bool(np.isfinite(out).all())}")
    lit = jlt.guarantee(method="jlt", w=g.parameters["w"], delta=delta, n_prime=k, n_users=m, n_items=n1,
                        epsilon=eps, lift="svd")
    print(f"literal thin-SVD lift with {m} users > {n1} items: epsilon = {lit.epsilon} ({lit.validity})")


if __name__ == "__main__":
    main()
