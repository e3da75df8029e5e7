"""Does the trainer's gradient clipping (norm 5, privrec's default) act on the recbole-protocol runs?
RecBole 1.2.1 does not clip (``clip_grad_norm: ~``). Prints the median and largest gradient norm of
25 training batches (``--stride`` windows, the run's batch size) at initialisation and, given a
training state (``results/<run>.state/*.pt``), at its weights.

    .venv/bin/python benchmarks/recbole/grad_norms.py sasrec --stride 10 --batch-size 205 [--state S.pt]
    .venv/bin/python benchmarks/recbole/grad_norms.py gru4rec --layers 2 --stride 10 --batch-size 205 --state S.pt
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import torch

from privrec.experiments.sequential import PROTOCOLS, prepare
from privrec.models import build_on
from privrec.training.tasks import task_for


def norms(model, task, batch_size: int, n: int = 25) -> np.ndarray:
    """Gradient norms of the training loss on the first ``n`` batches of an epoch (no step taken)."""
    model.train()
    out = []
    for i, batch in enumerate(task.train_batches(batch_size, np.random.default_rng(1))):
        if i >= n:
            break
        model.zero_grad()
        model.loss(batch).backward()
        out.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), float("inf"))))
    return np.array(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("model", choices=["sasrec", "gru4rec"])
    ap.add_argument("--layers", type=int, default=None)
    ap.add_argument("--stride", type=int, default=None)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--state", default=None, help="a training state (results/<run>.state/*.pt) whose weights to load")
    a = ap.parse_args()
    torch.set_num_threads(1)
    p = PROTOCOLS["recbole"]
    inter, split = prepare("ml-1m", p["preprocessing"], p["split"], p["time_precision"])
    torch.manual_seed(0)
    state = None if a.state is None else torch.load(a.state, weights_only=False, map_location="cpu")
    # the model as the state's run built it (layers, SASRec's position convention), else the protocol's
    settings = ({k: v for k, v in json.loads(state["config"])["model_config"].items() if k not in ("n_items", "max_len")}
                if state is not None else dict(p.get("model_config", {}).get(a.model, {})))
    if a.layers is not None:
        settings["layers"] = a.layers
    model = build_on(a.model, split.train, n_items=inter.n_items, max_len=p["max_len"], **settings)
    task = task_for(model, split, inter.n_items, p["max_len"], stride=a.stride)
    stages = [("initialisation", None)] + ([] if a.state is None else [(a.state, a.state)])
    for name, path in stages:
        if path is not None:
            model.load_state_dict(state["model"])
        g = norms(model, task, a.batch_size)
        print(f"{a.model} at {name}: median {np.median(g):.3f}, max {g.max():.3f}, share above 5: {(g > 5).mean():.0%}")


if __name__ == "__main__":
    main()
