"""Window batches cut to their longest row (``SequenceTask.trim_padding``) against full-width batches: SASRec
training steps on Amazon Beauty under S3Rec's protocol (one window per user, max_len 50, batch 256, 1 thread),
interleaved A B B A in one process; prints seconds per step of each side and their ratio.

    python benchmarks/bench_window_trim.py [--steps 30] [--rounds 2]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from privrec.experiments.baselines import BaselinesConfig, model_config
from privrec.experiments.sequential import PROTOCOLS, prepare
from privrec.models import build_on
from privrec.training.tasks import task_for


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(1)
    p = PROTOCOLS["s3rec"]
    inter, split = prepare("beauty", p["preprocessing"], p["split"], p["time_precision"])
    res: dict[bool, list[float]] = {False: [], True: []}
    widths: dict[bool, list[int]] = {False: [], True: []}
    for rnd in range(args.rounds):
        for trim in ((False, True) if rnd % 2 == 0 else (True, False)):
            torch.manual_seed(0)
            model = build_on("sasrec", split.train, n_items=inter.n_items, **model_config(BaselinesConfig(), "sasrec"))
            task = task_for(model, split, inter.n_items, 50, window_mode="last", trim_padding=trim)
            opt = torch.optim.Adam(model.parameters(), 1e-3)
            order = np.random.default_rng(0).permutation(task.n_train_samples)
            t = time.perf_counter()
            for s in range(0, 256 * args.steps, 256):
                b = task.train_batch(order[s:s + 256])
                widths[trim].append(b["seq"].shape[1])
                opt.zero_grad()
                model.loss(b).backward()
                opt.step()
            res[trim].append((time.perf_counter() - t) / args.steps)
    print("| batches | s per step | mean width |")
    print("|---|---|---|")
    for trim in (False, True):
        print(f"| {'trimmed' if trim else 'full width'} | {np.median(res[trim]):.4f} ({min(res[trim]):.4f}–"
              f"{max(res[trim]):.4f}) | {np.mean(widths[trim]):.1f} |")
    print(f"ratio {np.median(res[False]) / np.median(res[True]):.2f}x")


if __name__ == "__main__":
    main()
