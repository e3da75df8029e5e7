"""Probe: one run of ``privrec reproduce rr``'s grid with another lr warmup and epoch cap, its validation curve
printed (nothing is written to the grid's progress file or states).

    python tools/probe_rr_warmup.py WARMUP_STEPS EPOCHS [SEED] [METHOD] [--epsilon E] [--published DIR]

It reads the grid's releases (``results/rr-ml-1m.published`` by default; only the non-private run needs none)
and builds the model from the seed exactly as the grid does, so its curve pairs with the grid's run of that
seed. docs/rr.md: RR-BERT4Rec, seed 1, non-private, ``200 12`` (validation NDCG@5 0.243 at epoch 10 against
0.068 without warmup).
"""
from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

from privrec.experiments import rr


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("warmup_steps", type=int)
    ap.add_argument("epochs", type=int)
    ap.add_argument("seed", type=int, nargs="?", default=1)
    ap.add_argument("method", nargs="?", default="RR-BERT4Rec", choices=list(rr.METHODS))
    ap.add_argument("--epsilon", type=float, default=None, help="a grid ε (default: the non-private run)")
    ap.add_argument("--published", default="results/rr-ml-1m.published")
    a = ap.parse_args()
    cfg = rr.RRConfig()
    inter, split = rr.load_data(cfg)
    exp = rr.RRExperiment(cfg, inter, split, Path(a.published))
    alt = None if a.epsilon is None else cfg.alternatives
    spec = next(s for s in exp.runs() if s.key == rr.run_key(a.method, a.epsilon, alt, None, a.seed))
    train = replace(exp.train_config(a.method), warmup_steps=a.warmup_steps, epochs=a.epochs, progress=False)
    exp.train_config = lambda method: train
    t0 = time.perf_counter()
    rec = exp.train(spec, None, lambda m: print(m, flush=True))
    print(f"{time.perf_counter() - t0:.0f} s; test (sampled): {rec.metrics['sampled']}")


if __name__ == "__main__":
    main()
