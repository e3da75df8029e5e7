"""Train RecBole 1.2.1's SASRec or GRU4Rec on privrec's ml-1m under the leaderboard protocol and print the
validation NDCG@10 of every epoch (and test every 5), to set beside ``privrec train ... --protocol recbole``.

    /tmp/rbv/bin/python benchmarks/recbole/train.py SASRec 30 [threads]            # batch 2,048, lr 1e-3, seed 0
    /tmp/rbv/bin/python benchmarks/recbole/train.py SASRec 500 1 --lr 5e-4 --batch 4096 --seed 1 --layers 2

The second form is a leaderboard row's own setting (SASRec: lr 5e-4; GRU4Rec: lr 5e-3, ``--layers 2``;
batch 4,096, up to 500 epochs, early stop after 10 epochs without validation gain) on another seed: what
RecBole's own seed-to-seed spread is. Set-up: ``_recbole.py``. Each epoch's validation is printed; the test
of the best epoch is printed at the end."""

from __future__ import annotations

import argparse
import time

import _recbole  # first: compatibility shims for RecBole 1.2.1
import torch
from recbole.data import create_dataset, data_preparation
from recbole.utils import get_model, get_trainer, init_seed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("model", choices=["SASRec", "GRU4Rec"])
    ap.add_argument("epochs", type=int)
    ap.add_argument("threads", type=int, nargs="?", default=1)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--batch", type=int, default=2048)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--layers", type=int, default=None, help="GRU4Rec num_layers / SASRec n_layers")
    ap.add_argument("--patience", type=int, default=10)
    a = ap.parse_args()
    extra = {} if a.layers is None else {"num_layers" if a.model == "GRU4Rec" else "n_layers": a.layers}
    config = _recbole.leaderboard_config(a.model, epochs=a.epochs, stopping_step=a.patience, seed=a.seed,
                                         reproducibility=True, train_batch_size=a.batch, eval_batch_size=4096,
                                         learning_rate=a.lr, **extra)
    init_seed(config["seed"], config["reproducibility"])
    torch.set_num_threads(a.threads)
    ds = create_dataset(config)
    train, valid, test = data_preparation(config, ds)
    model = get_model(config["model"])(config, train.dataset).to(config["device"])
    trainer = get_trainer(config["MODEL_TYPE"], config["model"])(config, model)
    best, best_epoch, best_state = -1.0, 0, None
    for epoch in range(a.epochs):
        t0 = time.time()
        loss = trainer._train_epoch(train, epoch, show_progress=False)
        t1 = time.time()
        score, res = trainer._valid_epoch(valid, show_progress=False)
        print(f"epoch {epoch + 1} loss {float(loss):.4f} train {t1 - t0:.0f}s valid {dict(res)}", flush=True)
        if score >= best:                                  # RecBole: a tie counts as progress
            best, best_epoch = score, epoch + 1
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        elif epoch + 1 - best_epoch > a.patience:        # RecBole stops when cur_step > stopping_step
            break
        if (epoch + 1) % 5 == 0:
            print(f"  test after epoch {epoch + 1}: {dict(trainer.evaluate(test, load_best_model=False))}", flush=True)
    model.load_state_dict(best_state)
    print(f"best epoch {best_epoch} (valid {best:.4f}); test: {dict(trainer.evaluate(test, load_best_model=False))}",
          flush=True)


if __name__ == "__main__":
    main()
