"""Benchmark: DIPSGNN behaviour graphs (Eq. 4) + one noisy aggregation step (Eqs. 6-7) and EdgeRand,
on an ML-1M-sized batch (6,040 sequences x L = 50, d = 64). Prints a Markdown table.

    python benchmarks/bench_privacy_graph.py [--users 6040] [--max-len 50] [--dim 64] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from privrec.privacy import graph as G


def timed(fn, repeats):
    out, times = None, []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return out, statistics.median(times), min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--users", type=int, default=6040)
    ap.add_argument("--items", type=int, default=3706)
    ap.add_argument("--max-len", type=int, default=50)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--repeat-prob", type=float, default=0.1,
                    help="probability that a position repeats an earlier item of the row (0 = ML-1M style)")
    args = ap.parse_args()

    rng = np.random.default_rng(0)
    B, L, d = args.users, args.max_len, args.dim
    seqs = rng.integers(1, args.items + 1, size=(B, L))
    rep = rng.random((B, L)) < args.repeat_prob                 # some repeated items -> fewer nodes
    src = rng.integers(0, np.arange(L) + 1, size=(B, L))
    seqs = np.where(rep, seqs[np.arange(B)[:, None], src], seqs)
    lengths = rng.integers(2, L + 1, size=B)
    seqs[np.arange(L)[None, :] < (L - lengths)[:, None]] = 0

    rows = []
    graphs, med, best = timed(lambda: G.session_graphs(seqs), args.repeats)
    n = graphs.a_out.shape[1]
    rows.append(("session_graphs (NumPy, Eq. 4)", f"{B} x {L} -> n = {n}", med, best))
    (a_in, a_out), med, best = timed(lambda: graphs.tensors(torch.float32), args.repeats)
    rows.append(("SessionGraphs.tensors (float32)", f"2 x {B} x {n} x {n}", med, best))

    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    for dev in devices:
        h = torch.randn(B, n, d, generator=torch.Generator().manual_seed(1)).to(dev)
        ai, ao = a_in.to(dev), a_out.to(dev)
        gen = torch.Generator(device=dev).manual_seed(2)
        _, med, best = timed(lambda: G.dipsgnn_step(ai, ao, h, 0.2, 1.0, gen), args.repeats)
        rows.append((f"dipsgnn_step, normalise + 2 noisy bmm ({dev})", f"{B} x {n} x {d}", med, best))
        hg = h.clone().requires_grad_(True)
        w = torch.randn(B, n, d, generator=torch.Generator().manual_seed(3)).to(dev)   # dense upstream grad

        def fwd_bwd():
            h_in, h_out = G.dipsgnn_step(ai, ao, hg, 0.2, 1.0, gen)
            ((h_in * w).sum() + (h_out * w).sum()).backward()
        _, med, best = timed(fwd_bwd, args.repeats)
        rows.append((f"dipsgnn_step forward + backward ({dev})", f"{B} x {n} x {d}", med, best))

    a_np = graphs.a_out
    G.edge_rand(a_np[:1], 5.0, 1e-5, np.random.default_rng(0))      # calibration is memoised: time the noise
    _, med, best = timed(lambda: G.edge_rand(a_np, 5.0, 1e-5, np.random.default_rng(0), n_nodes=graphs.n_nodes),
                         args.repeats)
    rows.append(("edge_rand (NumPy, float64)", f"{B} x {n} x {n}", med, best))
    G._gaussian_epsilon.cache_clear()
    _, med, best = timed(lambda: G.guarantee(G.calibrate_sigma(5.0, 1e-5, 0.2, 1, 10), 0.2, 1, 10, 1e-5), 1)
    rows.append(("calibrate_sigma + guarantee (eps 5, 10 passes)", "dp-accounting PLD", med, best))

    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, "
          f"cuda {torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no'}\n")
    print("| step | shape | median s | best s |")
    print("|---|---|---:|---:|")
    for name, shape, m, b in rows:
        print(f"| {name} | {shape} | {m:.4f} | {b:.4f} |")


if __name__ == "__main__":
    main()
