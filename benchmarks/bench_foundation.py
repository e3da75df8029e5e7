"""Foundation benchmarks on ML-1M (RecBole protocol): preprocessing, seconds per epoch,
full-ranking evaluation of all users, and peak memory. Each stage runs in a fresh process
so its peak RSS is its own. Prints a Markdown table.

    python benchmarks/bench_foundation.py            # full epochs
    python benchmarks/bench_foundation.py --quick    # 10 batches per model, extrapolated
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

STAGES = ("preprocess", "sasrec", "gru4rec", "evaluate")


def stage(name: str, quick: bool) -> dict:
    import resource

    import numpy as np
    import torch

    from privrec.data.fetch import fetch
    from privrec.experiments.sequential import PROTOCOLS, prepare
    from privrec.utils.perf import tune_cpu_allocator

    tune_cpu_allocator()
    fetch("ml-1m")
    t0 = time.perf_counter()
    inter, split = prepare("ml-1m", PROTOCOLS["recbole"]["preprocessing"], "leave_one_out")
    prep = time.perf_counter() - t0
    out = {"stage": name, "threads": torch.get_num_threads()}
    if name == "preprocess":
        out["seconds"] = prep
        out["detail"] = f"{len(inter):,} interactions, {inter.n_users:,} users, {inter.n_items:,} items"
    else:
        from privrec.evaluation.evaluator import EvalConfig, evaluate
        from privrec.experiments.sequential import DEFAULT_MODEL_CONFIG
        from privrec.models import build
        from privrec.training.tasks import SequenceTask
        from privrec.training.trainer import TrainConfig, Trainer

        task = SequenceTask(split, inter.n_items, 50, "all")
        model_name = "sasrec" if name == "evaluate" else name
        model = build(model_name, n_items=inter.n_items, max_len=50, **DEFAULT_MODEL_CONFIG[model_name])
        trainer = Trainer(model, task, TrainConfig(epochs=1, batch_size=256, progress=False))
        if name == "evaluate":
            t0 = time.perf_counter()
            res = evaluate(model, task, "test", EvalConfig())
            out["seconds"] = time.perf_counter() - t0
            out["detail"] = f"full ranking, {res.n_users:,} users x {inter.n_items:,} items"
        else:
            rng = np.random.default_rng(0)
            n_batches = task.n_train_batches(256)
            limit = 10 if quick else n_batches
            t0 = time.perf_counter()
            for i, batch in enumerate(task.train_batches(256, rng)):
                if i == limit:
                    break
                loss = trainer.model.loss(batch)
                trainer.optimizer.zero_grad()
                loss.backward()
                trainer.optimizer.step()
            took = time.perf_counter() - t0
            out["seconds"] = took * n_batches / limit
            out["detail"] = (f"1 epoch = {n_batches} batches of 256 windows x 50 ({task.n_train_targets:,} targets)"
                             + (f"; extrapolated from {limit}" if limit < n_batches else ""))
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--stage", choices=STAGES)
    args = parser.parse_args()
    if args.stage:
        print(json.dumps(stage(args.stage, args.quick)))
        return
    rows = []
    for name in STAGES:
        cmd = [sys.executable, __file__, "--stage", name] + (["--quick"] if args.quick else [])
        res = subprocess.run(cmd, capture_output=True, text=True, check=True)
        rows.append(json.loads(res.stdout.strip().splitlines()[-1]))
    label = {"preprocess": "load + preprocess + split (RecBole protocol)", "sasrec": "SASRec, one epoch",
             "gru4rec": "GRU4Rec, one epoch", "evaluate": "full-ranking evaluation, all users"}
    print("| stage | seconds | peak RSS (MB) | detail |")
    print("|---|---|---|---|")
    for r in rows:
        print(f"| {label[r['stage']]} | {r['seconds']:.2f} | {r['peak_rss_mb']:.0f} | {r['detail']} |")
    print(f"\ntorch threads: {rows[0]['threads']}")


if __name__ == "__main__":
    main()
