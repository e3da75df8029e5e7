"""RecBole 1.2.1 under today's numpy/pandas/torch, for side-by-side checks (not a privrec dependency).

Set up once (RecBole's own pins break modern environments, so it is installed without its
dependencies into a venv that sees privrec's packages)::

    python3 -m venv /tmp/rbv
    echo "$PWD/.venv/lib/python3.11/site-packages" > /tmp/rbv/lib/python3.11/site-packages/privrec.pth
    /tmp/rbv/bin/pip install --no-deps recbole==1.2.1 colorlog colorama texttable tabulate thop

then run a script here with ``/tmp/rbv/bin/python benchmarks/recbole/<script>.py``.
"""

from __future__ import annotations

import os
import sys
import types

import numpy as np

# RecBole 1.2.1 imports tensorboard at import time and aliases numpy names that numpy 2 removed
_tb = types.ModuleType("torch.utils.tensorboard")
_tb.SummaryWriter = type("SummaryWriter", (), {"__init__": lambda self, *a, **k: None,
                                                "add_scalar": lambda self, *a, **k: None,
                                                "add_hparams": lambda self, *a, **k: None,
                                                "close": lambda self: None})
sys.modules.setdefault("torch.utils.tensorboard", _tb)
for old, new in (("float_", np.float64), ("complex_", np.complex128), ("unicode_", np.str_)):
    if not hasattr(np, old):
        setattr(np, old, new)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)


def leaderboard_config(model: str, **extra) -> object:
    """RecBole's ML-1M sequential leaderboard setting on privrec's cached ml-1m file."""
    from recbole.config import Config

    from privrec.data.fetch import fetch

    folder = fetch("ml-1m")                                  # <cache>/datasets/ml-1m/ml-1m.inter
    cfg = {"data_path": str(folder.parent), "checkpoint_dir": os.path.join(ROOT, "runs", "recbole"),
           "load_col": {"inter": ["user_id", "item_id", "rating", "timestamp"]},
           "val_interval": {"rating": "[3,inf)"}, "unused_col": {"inter": ["rating"]},
           "user_inter_num_interval": "[10,inf)", "item_inter_num_interval": "[10,inf)",
           "MAX_ITEM_LIST_LENGTH": 50, "train_neg_sample_args": None, "loss_type": "CE",
           "eval_args": {"split": {"LS": "valid_and_test"}, "order": "TO", "mode": "full", "group_by": "user"},
           "metrics": ["Recall", "NDCG"], "topk": [10], "valid_metric": "NDCG@10", "show_progress": False,
           "use_gpu": False, "device": "cpu", "state": "ERROR", **extra}
    return Config(model=model, dataset="ml-1m", config_dict=cfg)
