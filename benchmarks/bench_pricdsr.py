"""DASL / DASL-single seconds per epoch on the default PriCDSR instance (ML-1M by genre,
L = 50, T = 10, batch 64 users, 1 torch thread), measured on ``--batches`` batches and
scaled to a full epoch (printed as such). Usage: python benchmarks/bench_pricdsr.py [--batches N]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from privrec.data.crossdomain import ml1m_cross_domain
from privrec.data.tables import load
from privrec.evaluation.evaluator import evaluate
from privrec.experiments.pricdsr import FULL, SAMPLED, PriCDSRConfig
from privrec.experiments.report import markdown_table
from privrec.models.dasl import DASL
from privrec.training.tasks import CrossDomainTask


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, default=15)
    args = ap.parse_args()
    torch.set_num_threads(1)
    cfg = PriCDSRConfig()
    t = time.perf_counter()
    data = ml1m_cross_domain(load("ml-1m"))
    build_s = time.perf_counter() - t
    aux = data.publishable_rows("drama").to_padded(cfg.max_len)
    rows = []
    for variant, mode, encoder in (("DASL-single", "single", "stream"), ("DASL", "dual", "stream"),
                                   ("DASL (window encoder)", "dual", "window")):
        task = CrossDomainTask(data, "action", aux, cfg.max_len, cfg.window)
        torch.manual_seed(0)
        model = DASL(data.n_users, [d.n_items for d in data.domains], 0, mode, encoder=encoder)
        opt = torch.optim.Adam(model.parameters(), 1e-3)
        batches = task.train_batches(cfg.train.batch_size, np.random.default_rng(0))
        next(batches)                                                      # warm-up
        t = time.perf_counter()
        for _ in range(args.batches):
            loss = model.loss(next(batches))
            opt.zero_grad()
            loss.backward()
            opt.step()
        per_batch = (time.perf_counter() - t) / args.batches
        epoch = per_batch * task.n_train_batches(cfg.train.batch_size)
        t = time.perf_counter()
        evaluate(model, task, "valid", SAMPLED)
        sampled_s = time.perf_counter() - t
        t = time.perf_counter()
        evaluate(model, task, "valid", FULL)
        full_s = time.perf_counter() - t
        rows.append((variant, f"{per_batch:.3f}", f"{epoch:.0f}", f"{sampled_s:.1f}", f"{full_s:.1f}"))
    print(f"ML-1M by genre: {data.n_users:,} shared users; building the two-domain data took {build_s:.1f} s\n")
    print(markdown_table(["model", "s / batch (64 users)", "s / epoch (scaled)", "sampled eval, all users (s)",
                          "full eval (s)"], rows))


if __name__ == "__main__":
    main()
