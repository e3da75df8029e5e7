"""Train RecBole 1.2.1's SASRec or GRU4Rec on privrec's ml-1m under the leaderboard protocol and print the
validation NDCG@10 of every epoch (and test every 5), to set beside ``privrec train ... --protocol recbole``.
Run: ``/tmp/rbv/bin/python benchmarks/recbole/train.py SASRec 30 [threads]`` (set-up: ``_recbole.py``)."""

from __future__ import annotations

import sys
import time

import _recbole  # first: compatibility shims for RecBole 1.2.1
import torch
from recbole.data import create_dataset, data_preparation
from recbole.utils import get_model, get_trainer, init_seed


def main(model_name: str, epochs: int, threads: int = 1) -> None:
    config = _recbole.leaderboard_config(model_name, epochs=epochs, stopping_step=10, seed=0, reproducibility=True,
                                         train_batch_size=2048, eval_batch_size=4096, learning_rate=1e-3)
    init_seed(config["seed"], config["reproducibility"])
    torch.set_num_threads(threads)
    ds = create_dataset(config)
    train, valid, test = data_preparation(config, ds)
    model = get_model(config["model"])(config, train.dataset).to(config["device"])
    trainer = get_trainer(config["MODEL_TYPE"], config["model"])(config, model)
    for epoch in range(epochs):
        t0 = time.time()
        loss = trainer._train_epoch(train, epoch, show_progress=False)
        t1 = time.time()
        _, res = trainer._valid_epoch(valid, show_progress=False)
        print(f"epoch {epoch + 1} loss {float(loss):.4f} train {t1 - t0:.0f}s valid {dict(res)}", flush=True)
        if (epoch + 1) % 5 == 0:
            print(f"  test after epoch {epoch + 1}: {dict(trainer.evaluate(test, load_best_model=False))}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 1)
