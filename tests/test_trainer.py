"""The shared trainer: a killed and restarted run continues exactly where it stopped."""

import numpy as np
import pytest
import torch

from privrec.data.sequences import Sequences
from privrec.data.splits import leave_one_out
from privrec.errors import CheckpointError
from privrec.evaluation.evaluator import EvalConfig
from privrec.models import build
from privrec.training.tasks import SequenceTask
from privrec.training.trainer import TrainConfig, Trainer


class Killed(Exception):
    pass


class KillAt:
    """A task wrapper that dies when epoch ``at`` starts (as a killed process would)."""

    def __init__(self, task, at: int):
        self.task, self.at, self.calls = task, at, 0

    def __getattr__(self, name):
        return getattr(self.task, name)

    def train_batches(self, batch_size, rng):
        self.calls += 1
        if self.calls == self.at:
            raise Killed
        return self.task.train_batches(batch_size, rng)


@pytest.fixture
def task():
    rng = np.random.default_rng(0)
    rows = [[]] + [list(rng.choice(np.arange(1, 31), 9, replace=False)) for _ in range(40)]
    return SequenceTask(leave_one_out(Sequences.from_rows(rows)), n_items=30, max_len=6)


def _trainer(task, **kw):
    torch.manual_seed(0)
    model = build("sasrec", n_items=30, max_len=6, dropout=0.3, hidden=16)
    cfg = TrainConfig(epochs=kw.pop("epochs", 8), batch_size=8, lr=1e-2, patience=kw.pop("patience", 10),
                      progress=False, seed=3, device="cpu")
    return Trainer(model, task, cfg, EvalConfig(mode="sampled", n_negatives=10, ks=(10,), seed=3))


def _same(a, b):
    assert a.best_epoch == b.best_epoch and a.epochs_run == b.epochs_run
    assert a.history == b.history
    assert a.best_valid.metrics == b.best_valid.metrics


@pytest.mark.parametrize("patience,kill_at", [(10, 4), (1, 3)])   # runs to the cap / stops early at epoch 3
def test_a_killed_run_resumes_to_the_uninterrupted_result(task, tmp_path, patience, kill_at):
    whole = _trainer(task, patience=patience)
    expected = whole.fit()
    state = tmp_path / "run.state"
    with pytest.raises(Killed):
        _trainer(KillAt(task, kill_at), patience=patience).fit(state)
    assert state.exists()
    resumed = _trainer(task, patience=patience)
    got = resumed.fit(state)
    _same(got, expected)
    assert got.epochs_run == (8 if patience == 10 else 3)
    for (k, v), w in zip(resumed.model.state_dict().items(), whole.model.state_dict().values()):
        assert torch.equal(v, w), k
    again = _trainer(task, patience=patience).fit(state)  # a finished state file: nothing retrained
    _same(again, expected)


def test_state_from_another_configuration_is_refused(task, tmp_path):
    state = tmp_path / "run.state"
    _trainer(task, epochs=2).fit(state)
    t = _trainer(task)
    t.cfg = TrainConfig(**{**t.cfg.to_dict(), "lr": 0.5})
    with pytest.raises(CheckpointError, match="different training configuration"):
        t.fit(state)
    state.write_bytes(b"not a state")
    with pytest.raises(CheckpointError, match="delete it"):
        _trainer(task).fit(state)


def test_sequential_resume_state_is_named_by_config_and_data():
    from privrec.experiments.sequential import SequentialConfig, _run_hash

    rows = [[]] + [[1 + (u + j) % 30 for j in range(6)] for u in range(12)]
    a = leave_one_out(Sequences.from_rows(rows))
    rows[3] = rows[3][:-1] + [29 if rows[3][-1] != 29 else 28]           # one test item edited
    b = leave_one_out(Sequences.from_rows(rows))
    cfg = SequentialConfig(dataset="x.inter")
    assert _run_hash(cfg, a) == _run_hash(SequentialConfig(dataset="x.inter", seeds=(4,)), a)
    assert _run_hash(cfg, a) != _run_hash(cfg, b)
    assert _run_hash(cfg, a) != _run_hash(SequentialConfig(dataset="x.inter", max_len=20), a)
