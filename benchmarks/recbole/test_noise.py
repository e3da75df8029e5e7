"""How precisely one run's test NDCG@10 is known on ML-1M under ``--protocol recbole``: 6,033 users, one
held-out item each, so a run's test score is a mean of 6,033 per-user values and carries a sampling error
of its own, apart from training noise. Prints each checkpoint's test NDCG@10 / HR@10 with its per-user
standard error, and for every pair of checkpoints the paired difference (same users) with its standard
error — the scale against which a gap to one published single run (a RecBole leaderboard row) is read.

    .venv/bin/python benchmarks/recbole/test_noise.py results/gru4rec-ml-1m-recbole-l2/gru4rec-seed0.pt \\
        results/gru4rec-ml-1m-recbole-l2-s10/gru4rec-seed0.pt

Each score is also split by the length of the history the test item is predicted from: users with fewer
than max_len = 50 items (where SASRec's two position conventions differ, ``--set positions=oldest``) and the
rest (where they agree). ``--context 30,40,50`` scores each checkpoint again reading only the last N items of
every test history (the protocol's max_len is 50): how much of the context a trained model uses. For a
SASRec that counts positions from the newest item the cut history keeps its positions; one trained with
``positions=oldest`` reads the cut history from position 0, as a user with N items (context and positions change
together).
"""

from __future__ import annotations

import argparse
import itertools

import numpy as np
import torch

from privrec.evaluation.evaluator import EvalConfig, evaluate
from privrec.experiments.sequential import PROTOCOLS, prepare
from privrec.training.checkpoint import model_from_checkpoint, read_checkpoint
from privrec.training.tasks import task_for


def per_user(path: str, split, n_items: int, max_len: int) -> dict[str, np.ndarray]:
    """Per-user test NDCG@10 and HR@10 of one checkpoint, unmasked full ranking (RecBole's protocol)."""
    model = model_from_checkpoint(read_checkpoint(path))
    task = task_for(model, split, n_items, max_len)
    res = evaluate(model, task, "test", EvalConfig(mask_history=False, ks=(10,)), keep_per_user=True)
    out = {k: np.asarray(res.per_user[k], dtype=float) for k in ("ndcg@10", "hr@10")}
    out["history"] = split.history("test").lengths[res.users]      # items the test item is predicted from
    return out


def main(paths: list[str], context: list[int]) -> None:
    torch.set_num_threads(1)
    p = PROTOCOLS["recbole"]
    inter, split = prepare("ml-1m", p["preprocessing"], p["split"], p["time_precision"])
    runs = {path: per_user(path, split, inter.n_items, p["max_len"]) for path in paths}
    for path in paths:
        for n in context:
            m = per_user(path, split, inter.n_items, n)
            long = m["history"] >= p["max_len"]
            print(f"{path}, last {n} items read: test NDCG@10 {m['ndcg@10'].mean():.4f} (history >= {p['max_len']}: "
                  f"{m['ndcg@10'][long].mean():.4f}, shorter: {m['ndcg@10'][~long].mean():.4f})")
    for path, m in runs.items():
        n = len(m["ndcg@10"])
        print(f"{path}: {n} users; test NDCG@10 {m['ndcg@10'].mean():.4f} ± {m['ndcg@10'].std(ddof=1) / n ** .5:.4f}, "
              f"HR@10 {m['hr@10'].mean():.4f} ± {m['hr@10'].std(ddof=1) / n ** .5:.4f} (± one per-user standard error)")
        for name, grp in _groups(m["history"], p["max_len"]).items():
            print(f"    {name} ({grp.sum()} users): NDCG@10 {m['ndcg@10'][grp].mean():.4f}, HR@10 {m['hr@10'][grp].mean():.4f}")
    for a, b in itertools.combinations(runs, 2):
        d = runs[b]["ndcg@10"] - runs[a]["ndcg@10"]
        print(f"{b} - {a}: NDCG@10 {d.mean():+.4f} ± {d.std(ddof=1) / len(d) ** .5:.4f} (paired over users)")
        for name, grp in _groups(runs[a]["history"], p["max_len"]).items():
            print(f"    {name}: {d[grp].mean():+.4f} ± {d[grp].std(ddof=1) / grp.sum() ** .5:.4f}")


def _groups(history: np.ndarray, max_len: int) -> dict[str, np.ndarray]:
    return {f"history < {max_len}": history < max_len, f"history >= {max_len}": history >= max_len}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoints", nargs="+")
    ap.add_argument("--context", default="", help="comma-separated history lengths to score each checkpoint at")
    args = ap.parse_args()
    main(args.checkpoints, [int(x) for x in args.context.split(",") if x])
