"""PriCDR's models on ML-1M (genre domains, target drama, source action published with JLT,
eps = 1, n' = 500): one training epoch (every training interaction with 4 uniform negatives) and
one sampled validation (99 uniform negatives), seconds and peak resident memory, per model.

    python benchmarks/bench_matrix_models.py [--models bpr neumf dmf heterocdr heterocdr-sym] [--batch-size 1024] [--threads 1]

``heterocdr-sym`` is PriCDR-SYM (an autoencoder on the target side instead of DMF).

Each model runs in a fresh process so its peak memory is its own."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = r"""
import json, resource, sys, tempfile, time
import numpy as np, torch
from privrec.data.crossdomain import ml1m_cross_domain
from privrec.data.splits import random_holdout
from privrec.data.tables import load
from privrec.evaluation.evaluator import EvalConfig
from privrec.models import build
from privrec.release.crossdomain import publish_domain_matrix, read_domain_matrix
from privrec.training.tasks import task_for
from privrec.training.trainer import TrainConfig, Trainer
name, batch, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
torch.set_num_threads(threads)
data = ml1m_cross_domain(load("ml-1m"))
split = random_holdout(data.domain("drama").sequences, 0)
n_users, n_items = data.n_users + 1, data.domain("drama").n_items
kw = dict(n_users=n_users, n_items=n_items)
t0 = time.perf_counter()
name, extra = ("heterocdr", {"symmetric": True}) if name == "heterocdr-sym" else (name, {})
if name == "heterocdr":
    folder = tempfile.mkdtemp() + "/pub"
    publish_domain_matrix(folder, data, "action", "jlt", 1.0, 0, n_prime=500)
    pub = read_domain_matrix(folder, data, "action")
    kw["n_source"] = pub.shape[1]
if name == "ddtcdr":                 # the non-private CDR baseline reads the raw source rows
    raw = data.matrix("action").toarray()
    pub = np.vstack([np.zeros((1, raw.shape[1])), raw])
    kw["n_source"] = pub.shape[1]
publish_s = time.perf_counter() - t0
torch.manual_seed(0)
model = build(name, **kw, **extra)
if hasattr(model, "set_matrix"):
    mat = torch.zeros(n_users, n_items + 1)
    mat[torch.from_numpy(split.train.row_ids().astype(np.int64)), torch.from_numpy(split.train.items.astype(np.int64))] = 1
    model.set_matrix(mat)
if name in ("heterocdr", "ddtcdr"):
    model.set_source(torch.from_numpy(pub).float())
task = task_for(model, split, n_items, 0)
ev = EvalConfig(mode="sampled", n_negatives=99, sampler="uniform", ks=(5, 10), metrics=("hr", "ndcg", "mrr"))
trainer = Trainer(model, task, TrainConfig(batch_size=batch, progress=False, device="cpu"), ev)
t0 = time.perf_counter(); loss = trainer.train_epochs(1)[0]; train_s = time.perf_counter() - t0
t0 = time.perf_counter(); res = trainer.validate(); valid_s = time.perf_counter() - t0
print(json.dumps({"model": sys.argv[1], "pairs": task.n_train_targets, "epoch_s": round(train_s, 1),
                  "valid_s": round(valid_s, 1), "publish_s": round(publish_s, 1), "ndcg@10": round(res.metrics["ndcg@10"], 4),
                  "peak_rss_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--models", nargs="+", default=["bpr", "neumf", "dmf", "ddtcdr", "heterocdr"])
    ap.add_argument("--batch-size", type=int, default=1024)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    print(f"ML-1M drama <- action, batch {args.batch_size}, {args.threads} thread(s)")
    print(f"{'model':>13} {'pairs':>8} {'epoch s':>8} {'valid s':>8} {'valid NDCG@10 after 1 epoch':>28} {'peak GiB':>9}")
    for name in args.models:
        out = subprocess.run([sys.executable, "-c", CHILD, name, str(args.batch_size), str(args.threads)], check=True,
                             capture_output=True, text=True).stdout
        r = json.loads(out.strip().splitlines()[-1])
        print(f"{r['model']:>13} {r['pairs']:>8,} {r['epoch_s']:>8} {r['valid_s']:>8} {r['ndcg@10']:>28} "
              f"{r['peak_rss_gib']:>9}", flush=True)


if __name__ == "__main__":
    main()
