"""SR-GNN training cost on ML-1M prefixes (RecBole protocol: rating >= 3, 10-core, leave-one-out,
max length 50, every prefix a sample): seconds per batch forward + backward + Adam step, per
prefix, and the extrapolated epoch, next to RecBole's published 655.6 s/epoch (a GPU figure).

    python benchmarks/bench_srgnn.py [--batches 30] [--batch-size 512] [--threads 1]
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np
import torch


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, default=30)
    ap.add_argument("--batch-size", type=int, default=512)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--hidden", type=int, default=64)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    from privrec.experiments import sequential as seq
    from privrec.models import build
    from privrec.training.tasks import task_for

    preset = seq.PROTOCOLS["recbole"]
    inter, split = seq.prepare("ml-1m", preset["preprocessing"], preset["split"])
    model = build("srgnn", n_items=inter.n_items, max_len=50, hidden=args.hidden)
    task = task_for(model, split, inter.n_items, 50)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    batches = task.train_batches(args.batch_size, np.random.default_rng(0))
    times = []
    for i, batch in enumerate(batches):
        if i > args.batches:
            break
        t0 = time.perf_counter()
        opt.zero_grad()
        model.loss(batch).backward()
        opt.step()
        if i:                                   # the first batch warms up
            times.append(time.perf_counter() - t0)
    per_batch = float(np.median(times))
    n = task.n_train_windows
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"| SR-GNN (h={args.hidden}, T=1) ML-1M prefixes, {args.threads} thread(s), batch {args.batch_size} "
          f"| {per_batch:.3f} s/batch, {1e6 * per_batch / args.batch_size:.0f} µs/prefix "
          f"| epoch ({n:,} prefixes) ≈ {per_batch * n / args.batch_size / 60:.1f} min "
          f"| RecBole (GPU, published) 655.6 s | peak RSS {peak:,.0f} MB |")


if __name__ == "__main__":
    main()
