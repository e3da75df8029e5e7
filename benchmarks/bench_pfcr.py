"""PFCR's costs on the real two-platform ML-1M split (action / drama): encoding every item title with
MiniLM, faiss PQ training, one local epoch per client (code encoder, hidden 300, 32 x 256 codes) and
one prompt-tuning epoch per strategy, the bytes one client uploads per round under each codec, and
(``--federation``) one federated round end to end on Flower's simulation engine and on the deployment
runtime (SuperLink + 2 SuperNodes).

    python benchmarks/bench_pfcr.py [--threads 1] [--hidden 300] [--batch-size 1024] [--federation]
"""

from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np
import torch


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--hidden", type=int, default=300)
    ap.add_argument("--batch-size", type=int, default=1024)
    ap.add_argument("--federation", action="store_true", help="also one round on each Flower runtime")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    from privrec.experiments import pfcr as P
    from privrec.flower.client import pack
    from privrec.training.federated import CodecConfig, encode
    from privrec.training.trainer import TrainConfig

    cfg = P.PFCRConfig(hidden=args.hidden, train=TrainConfig(batch_size=args.batch_size, progress=False))
    rows = []
    t = time.perf_counter()
    data, emb = P.load_data(cfg)
    rows.append(("load two platforms + MiniLM over every item text", f"{time.perf_counter() - t:.1f} s",
                 f"{len(emb):,} texts"))
    t = time.perf_counter()
    codes = P.PFCRExperiment(cfg, data, emb).codes(0)
    rows.append(("faiss PQ 32 x 256 on every item", f"{time.perf_counter() - t:.2f} s", ""))
    from privrec.models import build
    from privrec.training.tasks import SequenceTask
    from privrec.training.trainer import Trainer

    for d, c in zip(data.domains, codes):
        torch.manual_seed(0)
        model = build("code-sasrec", n_items=d.n_items, max_len=cfg.max_len, **cfg.model)
        model.set_codes(torch.from_numpy(c))
        trainer = Trainer(model, SequenceTask(d.split, n_items=d.n_items, max_len=cfg.max_len), cfg.train)
        t = time.perf_counter()
        trainer.train_epochs(1)
        rows.append((f"one local epoch, {d.name} ({d.sequences.n_rows - 1:,} users)", f"{time.perf_counter() - t:.1f} s",
                     f"{trainer.task.n_train_batches(cfg.train.batch_size)} batches"))
        for strategy in ("light", "full"):                  # Sec. 3.5 from the encoder just trained
            prompted = build("pfcr-prompt", n_items=d.n_items, max_len=cfg.max_len, strategy=strategy,
                             context_words=cfg.context_words, **cfg.model)
            prompted.set_codes(torch.from_numpy(c))
            prompted.load_pretrained(model.state_dict())
            tuner = Trainer(prompted, SequenceTask(d.split, n_items=d.n_items, max_len=cfg.max_len), cfg.train)
            t = time.perf_counter()
            tuner.train_epochs(1)
            rows.append((f"one prompt-tuning epoch ({strategy}), {d.name}", f"{time.perf_counter() - t:.1f} s",
                         f"{cfg.context_words} context words"))
    shape = (cfg.n_codebooks * cfg.n_centroids, cfg.hidden)
    delta = np.random.default_rng(0).normal(0, 0.01, size=shape)
    for mode in ("none", "paper", "calibrated"):
        codec = CodecConfig(mode=mode, epsilon=0.5, buckets=64, clip=0.05)
        t = time.perf_counter()
        wire = pack(encode(delta, codec, np.random.default_rng(0)))
        rows.append((f"encode + pack one upload, codec {mode}", f"{time.perf_counter() - t:.2f} s",
                     f"{sum(a.nbytes for a in wire.values()) / 2**20:.2f} MiB per client per round"))
    if args.federation:
        from dataclasses import replace

        from privrec.flower.bundle import FederationConfig, write_bundle
        from privrec.flower.run import deploy, simulate

        fed = FederationConfig(rounds=1, codec=CodecConfig(mode="paper"), model=cfg.model,
                               train=replace(cfg.train, progress=False))
        for run in (simulate, deploy):
            with tempfile.TemporaryDirectory() as tmp:
                write_bundle(tmp, [(d.name, d.sequences, c) for d, c in zip(data.domains, codes)], fed)
                t = time.perf_counter()
                run(tmp, log=lambda m: None)
                rows.append((f"one federated round end to end ({run.__name__})", f"{time.perf_counter() - t:.1f} s",
                             "2 clients in parallel, start-up included"))
    width = max(len(r[0]) for r in rows)
    for name, value, note in rows:
        print(f"{name:<{width}}  {value:>10}  {note}")


if __name__ == "__main__":
    main()
