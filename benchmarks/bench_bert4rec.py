"""BERT4Rec on ML-1M (RecBole protocol: rating >= 3, 10-core, leave-one-out): one training epoch and
one full-ranking validation, seconds and peak resident memory, at max length 50 and 200.

    python benchmarks/bench_bert4rec.py [--max-len 50 200] [--threads 2]

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
from privrec.models import build
from privrec.training.tasks import task_for
from privrec.training.trainer import TrainConfig, Trainer
max_len, threads = int(sys.argv[1]), int(sys.argv[2])
torch.set_num_threads(threads)
p = PROTOCOLS["recbole"]
inter, split = prepare("ml-1m", p["preprocessing"], p["split"])
torch.manual_seed(0)
model = build("bert4rec", n_items=inter.n_items, max_len=max_len)
task = task_for(model, split, inter.n_items, max_len)
trainer = Trainer(model, task, TrainConfig(batch_size=256, progress=False, device="cpu"), EvalConfig(mask_history=False))
t0 = time.perf_counter(); loss = trainer.train_epochs(1)[0]; train_s = time.perf_counter() - t0
t0 = time.perf_counter(); res = trainer.validate(); valid_s = time.perf_counter() - t0
print(json.dumps({"max_len": max_len, "chunks": len(task._inputs), "maskable": task.n_train_targets,
                  "epoch_s": round(train_s, 1), "valid_s": round(valid_s, 1), "loss": round(loss, 3),
                  "peak_rss_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--max-len", type=int, nargs="+", default=[50, 200])
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    print(f"{'max_len':>7} {'chunks':>7} {'maskable':>9} {'epoch s':>8} {'valid s':>8} {'peak GiB':>9}")
    for length in args.max_len:
        out = subprocess.run([sys.executable, "-c", CHILD, str(length), str(args.threads)], check=True,
                             capture_output=True, text=True).stdout
        r = json.loads(out.strip().splitlines()[-1])
        print(f"{r['max_len']:>7} {r['chunks']:>7,} {r['maskable']:>9,} {r['epoch_s']:>8} {r['valid_s']:>8} "
              f"{r['peak_rss_gib']:>9}", flush=True)


if __name__ == "__main__":
    main()
