"""BERT4Rec and RR-BERT4Rec (BERT4Rec over items + merged pairs, 1.5x vocabulary) on ML-1M: one
training epoch and one full-ranking validation, seconds and peak resident memory, at max length 50
and 200. Protocol recbole (rating >= 3, 10-core) or raw (every rating, as Mu & Lim), leave-one-out.

    python benchmarks/bench_bert4rec.py [--models bert4rec rr-bert4rec] [--max-len 50 200] [--protocol raw]
                                        [--threads 2]

Each configuration runs in a fresh process so its peak memory is its own."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = r"""
import json, resource, sys, time
import numpy as np, torch
from privrec.experiments.sequential import PROTOCOLS, prepare
from privrec.evaluation.evaluator import EvalConfig, evaluate
from privrec.models import build_on
from privrec.training.tasks import task_for
from privrec.training.trainer import TrainConfig, Trainer
name, max_len, threads, protocol = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
torch.set_num_threads(threads)
p = PROTOCOLS[protocol]
inter, split = prepare("ml-1m", p["preprocessing"], p["split"])
torch.manual_seed(0)
t0 = time.perf_counter()
model = build_on(name, split.train, n_items=inter.n_items, max_len=max_len)
task = task_for(model, split, inter.n_items, max_len)
prep_s = time.perf_counter() - t0
trainer = Trainer(model, task, TrainConfig(batch_size=256, progress=False, device="cpu"), EvalConfig(mask_history=False))
t0 = time.perf_counter(); loss = trainer.train_epochs(1)[0]; train_s = time.perf_counter() - t0
t0 = time.perf_counter(); res = trainer.validate(); valid_s = time.perf_counter() - t0
print(json.dumps({"model": name, "prep_s": round(prep_s, 1), "max_len": max_len, "chunks": len(task._inputs), "maskable": task.n_train_targets,
                  "epoch_s": round(train_s, 1), "valid_s": round(valid_s, 1), "loss": round(loss, 3),
                  "peak_rss_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--models", nargs="+", default=["bert4rec", "rr-bert4rec"])
    ap.add_argument("--max-len", type=int, nargs="+", default=[50, 200])
    ap.add_argument("--protocol", choices=["recbole", "raw"], default="recbole")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    print(f"ML-1M, protocol {args.protocol}, {args.threads} thread(s)")
    print(f"{'model':>12} {'max_len':>7} {'merges+task s':>13} {'chunks':>7} {'maskable':>9} {'epoch s':>8} "
          f"{'valid s':>8} {'peak GiB':>9}")
    for name in args.models:
        for length in args.max_len:
            out = subprocess.run([sys.executable, "-c", CHILD, name, str(length), str(args.threads), args.protocol],
                                 check=True, capture_output=True, text=True).stdout
            r = json.loads(out.strip().splitlines()[-1])
            print(f"{r['model']:>12} {r['max_len']:>7} {r['prep_s']:>13} {r['chunks']:>7,} {r['maskable']:>9,} "
                  f"{r['epoch_s']:>8} {r['valid_s']:>8} {r['peak_rss_gib']:>9}", flush=True)


if __name__ == "__main__":
    main()
