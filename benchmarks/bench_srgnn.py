"""SR-GNN / DIPSGNN training cost on ML-1M prefixes: seconds per batch forward + backward + Adam
step, per prefix, and the extrapolated epoch, next to RecBole's published 655.6 s/epoch for SR-GNN
(a GPU figure). ``--protocol recbole``: rating >= 3, 10-core, leave-one-out, max length 50, every
prefix a sample; ``--protocol dipsgnn``: the DIPSGNN paper's (rating >= 4, last 100 items, 80/20),
batches in random order (``--no-bucket``) or bucketed by prefix length (the default of training).

    python benchmarks/bench_srgnn.py [--batches 30] [--batch-size 512] [--threads 1]
    python benchmarks/bench_srgnn.py --protocol dipsgnn --model dipsgnn --hidden 100 [--no-bucket]
    python benchmarks/bench_srgnn.py --protocol dipsgnn --model sasrec|gru4rec   (Table 2's sequential baselines)
"""

from __future__ import annotations

import argparse
import resource

import numpy as np
import torch
from _timing import step_seconds


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, default=30)
    ap.add_argument("--batch-size", type=int, default=512)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--protocol", choices=["recbole", "dipsgnn"], default="recbole")
    ap.add_argument("--model", choices=["srgnn", "dipsgnn", "sasrec", "gru4rec"], default="srgnn")
    ap.add_argument("--bucket", action=argparse.BooleanOptionalAction, default=True)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    from privrec.experiments import sequential as seq
    from privrec.models import build
    from privrec.training.tasks import task_for

    preset = seq.PROTOCOLS[args.protocol]
    inter, split = seq.prepare("ml-1m", preset["preprocessing"], preset["split"])
    max_len = preset["max_len"]
    kw = dict(n_users=inter.n_users + 1, n_features=30, user_dim=50) if args.model == "dipsgnn" else {}
    kw.update(dict(embedding=args.hidden, hidden=2 * args.hidden) if args.model == "gru4rec" else dict(hidden=args.hidden))
    model = build(args.model, n_items=inter.n_items, max_len=max_len, **kw)
    if args.protocol == "dipsgnn":
        task = seq.prefix_task(split, inter.n_items, max_len, bucket=args.bucket)
        n = task.n_train_samples
    else:
        task = task_for(model, split, inter.n_items, max_len)
        n = task.n_train_windows
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    per_batch = step_seconds(task.train_batches(args.batch_size, np.random.default_rng(0)), model.loss, opt,
                             args.batches)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    order = "bucketed" if args.bucket and args.protocol == "dipsgnn" else "random order"
    print(f"| {args.model} (h={args.hidden}{', T=1' if 'gnn' in args.model else ''}) ML-1M prefixes ({args.protocol} protocol, {order}), "
          f"{args.threads} thread(s), batch {args.batch_size} "
          f"| {per_batch:.3f} s/batch, {1e6 * per_batch / args.batch_size:.0f} µs/prefix "
          f"| epoch ({n:,} prefixes) ≈ {per_batch * n / args.batch_size / 60:.1f} min "
          f"| RecBole (GPU, published) 655.6 s | peak RSS {peak:,.0f} MB |")


if __name__ == "__main__":
    main()
