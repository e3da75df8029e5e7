"""Full-ranking evaluation speed: privrec's evaluator against RecBole's, same model size, same users.

ML-1M under RecBole's protocol (rating >= 3, 10-core, leave-one-out, max length 50; 6,033 users x
3,124 item columns), an untrained SASRec (hidden 64, 2 layers: the ranking cost does not depend on
the weights), test stage, history not masked (RecBole's protocol) and masked, one torch thread.
privrec is timed twice: today's evaluator (targets ranked by counting the items that score at
least as high, no sort) and the previous one (every row sorted), so the change is measured too.

RecBole is optional: it lives in a throw-away venv set up as ``benchmarks/recbole/_recbole.py`` says
(RecBole 1.2.1 without its dependencies, over privrec's packages; its numpy-2 shims are applied), e.g.

    python benchmarks/bench_evaluation.py --recbole-python /tmp/rbv/bin/python

Prints a Markdown table with the ratio privrec / RecBole (below 1: privrec is faster).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

RECBOLE_SCRIPT = r"""
import json, sys, time, logging, torch
sys.path.insert(0, sys.argv[4])
import _recbole  # noqa: F401  (RecBole 1.2.1 under numpy 2: the shims of benchmarks/recbole/_recbole.py)
torch.set_num_threads(1)
from recbole.config import Config
from recbole.data import create_dataset, data_preparation
from recbole.model.sequential_recommender import SASRec
from recbole.trainer import Trainer
from recbole.utils import init_seed
data_path, ckpt, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3])
cfg = {"data_path": data_path, "dataset": "ml-1m", "USER_ID_FIELD": "user_id", "ITEM_ID_FIELD": "item_id",
       "RATING_FIELD": "rating", "TIME_FIELD": "timestamp",
       "load_col": {"inter": ["user_id", "item_id", "rating", "timestamp"]},
       "val_interval": {"rating": "[3,inf)"}, "user_inter_num_interval": "[10,inf)",
       "item_inter_num_interval": "[10,inf)", "MAX_ITEM_LIST_LENGTH": 50,
       "eval_args": {"split": {"LS": "valid_and_test"}, "order": "TO", "mode": "full", "group_by": "user"},
       "metrics": ["Hit", "NDCG", "MRR", "Recall"], "topk": [5, 10, 20], "valid_metric": "NDCG@10",
       "train_neg_sample_args": None, "loss_type": "CE", "device": "cpu", "use_gpu": False,
       "checkpoint_dir": ckpt, "show_progress": False, "save_dataset": False, "save_dataloaders": False,
       "hidden_size": 64, "inner_size": 256, "n_layers": 2, "n_heads": 2, "seed": 0}
config = Config(model="SASRec", config_dict=cfg)
logging.disable(logging.CRITICAL)
init_seed(0, True)
dataset = create_dataset(config)
train, valid, test = data_preparation(config, dataset)
model = SASRec(config, train.dataset).eval()
trainer = Trainer(config, model)
times = []
for _ in range(repeats):
    t0 = time.perf_counter()
    result = trainer.evaluate(test, load_best_model=False, show_progress=False)
    times.append(time.perf_counter() - t0)
print(json.dumps({"times": times, "users": int(dataset.user_num - 1), "items": int(dataset.item_num),
                  "ndcg@10": float(result["ndcg@10"])}))
"""


def privrec_times(repeats: int) -> dict:
    import numpy as np
    import torch

    from privrec.data.fetch import fetch
    from privrec.evaluation import evaluator as E
    from privrec.experiments.sequential import DEFAULT_MODEL_CONFIG, PROTOCOLS, prepare
    from privrec.models import build
    from privrec.training.tasks import SequenceTask

    torch.set_num_threads(1)
    fetch("ml-1m")
    inter, split = prepare("ml-1m", PROTOCOLS["recbole"]["preprocessing"], "leave_one_out")
    task = SequenceTask(split, inter.n_items, 50)
    torch.manual_seed(0)
    model = build("sasrec", n_items=inter.n_items, max_len=50, **DEFAULT_MODEL_CONFIG["sasrec"]).eval()

    def sorted_positions(scores, idx, valid):                  # the evaluator before this change
        ts = scores.gather(1, idx).contiguous()
        ascending = scores.sort(dim=1).values
        pos = scores.shape[1] - torch.searchsorted(ascending, ts, right=False) - 1
        return torch.where(valid, pos, torch.full_like(pos, -1))

    out = {"users": int(len(split.eval_users("test"))), "items": int(inter.n_items + 1)}
    current = E._positions
    for name, fn in (("counting", current), ("sorting", sorted_positions)):
        E._positions = fn
        for mask in (False, True):
            times, res = [], None
            for _ in range(repeats):
                t0 = time.perf_counter()
                res = E.evaluate(model, task, "test", E.EvalConfig(mask_history=mask))
                times.append(time.perf_counter() - t0)
            out[f"{name}/{'masked' if mask else 'unmasked'}"] = {"times": times, "ndcg@10": res.metrics["ndcg@10"]}
    E._positions = current
    a, b = out["counting/unmasked"]["ndcg@10"], out["sorting/unmasked"]["ndcg@10"]
    out["same_metrics"] = bool(np.isclose(a, b))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--recbole-python", default=None, help="Python of a venv with recbole==1.2.1 installed.")
    args = parser.parse_args()
    ours = privrec_times(args.repeats)
    rb = None
    if args.recbole_python:
        from privrec.data.fetch import cache_dir

        with tempfile.TemporaryDirectory() as tmp:
            env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
            proc = subprocess.run([args.recbole_python, "-c", RECBOLE_SCRIPT, str(cache_dir() / "datasets"), tmp,
                                   str(args.repeats), os.path.join(os.path.dirname(os.path.abspath(__file__)), "recbole")],
                                  capture_output=True, text=True, env=env)
            if proc.returncode != 0:
                sys.exit(f"RecBole run failed:\n{proc.stderr[-3000:]}")
            rb = json.loads(proc.stdout.strip().splitlines()[-1])
    med = statistics.median
    print(f"ML-1M, RecBole protocol: {ours['users']:,} test users x {ours['items']:,} item columns, untrained SASRec "
          f"(hidden 64, 2 layers), 1 torch thread, median of {args.repeats} passes (seconds).\n")
    print("| evaluator | history not masked (RecBole's protocol) | history masked | ratio to RecBole (not masked) |")
    print("|---|---|---|---|")
    ref = med(rb["times"]) if rb else None
    for name, label in (("counting", "privrec (rank by counting, no sort)"), ("sorting", "privrec before (sort every row)")):
        un, ma = med(ours[f"{name}/unmasked"]["times"]), med(ours[f"{name}/masked"]["times"])
        print(f"| {label} | {un:.2f} | {ma:.2f} | {'–' if ref is None else f'{un / ref:.2f}'} |")
    if rb:
        print(f"| RecBole 1.2.1 `Trainer.evaluate` ({rb['users']:,} users, {rb['items']:,} items) | {ref:.2f} | – | 1.00 |")
    print(f"\nsame metrics before and after: {ours['same_metrics']} "
          f"(the tie rule changed only for ties between two targets of one user)")


if __name__ == "__main__":
    main()
