"""RecBole 1.2.1's SR-GNN training step on this machine, to set beside privrec's (``benchmarks/bench_srgnn.py``,
same protocol, batch, hidden size and threads): seconds per batch (forward + backward + Adam step, RecBole's own
``calculate_loss``, its per-session graph building included), per prefix, and the extrapolated epoch.

Run: ``/tmp/rbv/bin/python benchmarks/recbole/srgnn_speed.py [batches] [batch_size] [threads]`` (set-up:
``_recbole.py``), then ``.venv/bin/python benchmarks/bench_srgnn.py --batches N --batch-size B --threads T``.
"""

from __future__ import annotations

import resource
import sys

import _recbole  # first: compatibility shims for RecBole 1.2.1 (and the repository root on the path)
import torch
from recbole.data import create_dataset, data_preparation
from recbole.utils import get_model, init_seed

sys.path.insert(0, _recbole.ROOT + "/benchmarks")
from _timing import step_seconds  # the benchmarks' shared timing loop


def main(batches: int = 30, batch_size: int = 512, threads: int = 1) -> None:
    config = _recbole.leaderboard_config("SRGNN", seed=0, reproducibility=True, train_batch_size=batch_size,
                                         eval_batch_size=4096, learning_rate=5e-3, embedding_size=64, step=1)
    init_seed(config["seed"], config["reproducibility"])
    torch.set_num_threads(threads)
    train, _, _ = data_preparation(config, create_dataset(config))
    model = get_model(config["model"])(config, train.dataset)
    opt = torch.optim.Adam(model.parameters(), lr=config["learning_rate"])
    per_batch = step_seconds(train, model.calculate_loss, opt, batches)
    n = len(train.dataset)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"| RecBole 1.2.1 SR-GNN (h=64, T=1) ML-1M prefixes (recbole protocol, random order), {threads} thread(s), "
          f"batch {batch_size} | {per_batch:.3f} s/batch, {1e6 * per_batch / batch_size:.0f} µs/prefix "
          f"| epoch ({n:,} prefixes) ≈ {per_batch * n / batch_size / 60:.1f} min | peak RSS {peak:,.0f} MB |")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:4]))
