"""The shared trainer: a killed and restarted run continues exactly where it stopped."""

import numpy as np
import pytest
import torch

from privrec.data.sequences import Sequences
from privrec.data.splits import leave_one_out
from privrec.errors import CheckpointError, ParameterError
from privrec.evaluation.evaluator import EvalConfig
from privrec.models import build
from privrec.training.tasks import SequenceTask
from privrec.training.trainer import Hook, TrainConfig, Trainer


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
                      warmup_steps=kw.pop("warmup_steps", 0), precision=kw.pop("precision", "fp32"), progress=False,
                      seed=3, device="cpu")
    return Trainer(model, task, cfg, EvalConfig(mode="sampled", n_negatives=10, ks=(10,), seed=3), **kw)


def _same(a, b):
    assert a.best_epoch == b.best_epoch and a.epochs_run == b.epochs_run
    assert a.history == b.history
    assert a.best_valid.metrics == b.best_valid.metrics


@pytest.mark.parametrize("patience,kill_at", [(10, 4), (1, 3)])   # runs to the cap / stops early
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
    assert got.epochs_run == expected.epochs_run
    # both cases stay what they test: the cap (8 epochs) reached, or early stopping after the kill
    assert expected.epochs_run == 8 if patience == 10 else kill_at < expected.epochs_run < 8
    for (k, v), w in zip(resumed.model.state_dict().items(), whole.model.state_dict().values()):
        assert torch.equal(v, w), k
    again = _trainer(task, patience=patience).fit(state)  # a finished state file: nothing retrained
    _same(again, expected)


@pytest.mark.parametrize("longer", [3, None])         # a longer patience / no early stopping (fixed budget)
def test_a_run_stopped_early_continues_exactly_under_a_longer_patience(task, tmp_path, longer):
    state = tmp_path / "run.state"
    short = _trainer(task, patience=1).fit(state)
    assert short.stopped_early and short.epochs_run < 8
    continued = _trainer(task, patience=longer).fit(state)
    expected = _trainer(task, patience=longer).fit()
    _same(continued, expected)
    assert continued.epochs_run > short.epochs_run
    assert continued.stopped_early == expected.stopped_early == (longer is not None and expected.epochs_run < 8)
    # a state is never rewound: under a shorter patience it trains no further and keeps the best found so far
    if longer is not None:
        again = _trainer(task, patience=1).fit(state)
        assert (again.best_epoch, again.epochs_run, again.history) == (continued.best_epoch, continued.epochs_run,
                                                                         continued.history)


def test_no_early_stopping_trains_the_whole_budget_and_keeps_the_best_epoch(task):
    fit = _trainer(task, patience=None).fit()
    assert fit.epochs_run == 8 and not fit.stopped_early
    scores = [row["valid"]["ndcg@10"] for row in fit.history]
    assert fit.best_epoch == 1 + int(np.argmax(scores))
    with pytest.raises(ParameterError, match="patience must be >= 1"):
        TrainConfig(patience=0)


def test_a_run_resumed_under_another_lock_records_how_many_epochs_ran_under_each(task, tmp_path, monkeypatch):
    """A state keeps the lock digest of every epoch it trained: a run stopped, then resumed after the lock
    changed (a dependency bump) says so in its fit; a state from before states kept it counts as unrecorded."""
    import json

    import privrec.training.trainer as T

    state = tmp_path / "run.state"
    monkeypatch.setattr(T, "lock_digest", lambda: "aaaa")
    first = _trainer(task, epochs=3).fit(state)
    assert first.epochs_by_lock == {"aaaa": 3} and first.to_dict()["epochs_by_lock"] == {"aaaa": 3}
    monkeypatch.setattr(T, "lock_digest", lambda: "bbbb")
    assert _trainer(task, epochs=5).fit(state).epochs_by_lock == {"aaaa": 3, "bbbb": 2}
    old = torch.load(state, weights_only=True)                        # a state written before the field
    del old["epochs_by_lock"]
    torch.save(old, state)
    assert _trainer(task, epochs=6).fit(state).epochs_by_lock == {T.UNRECORDED_LOCK: 5, "bbbb": 1}
    assert json.loads(torch.load(state, weights_only=True)["epochs_by_lock"]) == {T.UNRECORDED_LOCK: 5, "bbbb": 1}


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
    from dataclasses import replace

    from privrec.experiments.sequential import SequentialConfig, _run_hash

    rows = [[]] + [[1 + (u + j) % 30 for j in range(6)] for u in range(12)]
    a = leave_one_out(Sequences.from_rows(rows))
    rows[3] = rows[3][:-1] + [29 if rows[3][-1] != 29 else 28]           # one test item edited
    b = leave_one_out(Sequences.from_rows(rows))
    cfg = SequentialConfig(dataset="x.inter")
    assert _run_hash(cfg, a) == _run_hash(SequentialConfig(dataset="x.inter", seeds=(4,)), a)
    assert _run_hash(cfg, a) != _run_hash(cfg, b)
    assert _run_hash(cfg, a) != _run_hash(SequentialConfig(dataset="x.inter", max_len=20), a)
    stopping = replace(cfg, train=replace(cfg.train, epochs=7, patience=None))    # only bounds the loop
    assert _run_hash(cfg, a) == _run_hash(stopping, a)
    assert _run_hash(cfg, a) != _run_hash(replace(cfg, train=replace(cfg.train, lr=0.5)), a)


class NoisyBag(torch.nn.Module):
    """A model with its own noise generator (as DIPSGNN's noisy aggregation has): the mean of the
    window's item embeddings plus N(0, 0.1²) drawn from ``self.gen``, saved as extra state."""

    def __init__(self, n_items: int = 30, d: int = 8):
        super().__init__()
        self.item_embedding = torch.nn.Embedding(n_items + 1, d, padding_idx=0)
        self.gen = torch.Generator().manual_seed(11)
        self.forwards = 0

    def get_extra_state(self):
        return {"gen": self.gen.get_state()}

    def set_extra_state(self, state):
        self.gen.set_state(state["gen"])

    def _state(self, seq):
        h = self.item_embedding(seq).sum(1) / (seq > 0).sum(1, keepdim=True).clamp(min=1)
        self.forwards += 1
        return h + 0.1 * torch.randn(h.shape, generator=self.gen)

    def loss(self, batch):
        h = self._state(batch["seq"])
        target = batch["target"][:, -1]
        keep = target > 0
        return torch.nn.functional.cross_entropy(h[keep] @ self.item_embedding.weight.T, target[keep])

    def score(self, batch):
        out = self._state(batch["seq"]) @ self.item_embedding.weight.T
        out[:, 0] = -torch.inf
        return out

    def config(self):
        return {}


class CountBatches(Hook):
    def __init__(self):
        self.batches = 0
        self.epochs = []

    def on_batch_end(self, trainer, batch, loss):
        self.batches += 1

    def on_epoch_end(self, trainer, epoch, row):
        self.epochs.append(epoch)

    def state_dict(self):
        return {"batches": self.batches, "epochs": list(self.epochs)}

    def load_state_dict(self, state):
        self.batches, self.epochs = state["batches"], list(state["epochs"])


def _noisy(task, **kw):
    torch.manual_seed(0)
    cfg = TrainConfig(epochs=6, batch_size=8, lr=1e-2, patience=10, progress=False, seed=3, device="cpu")
    hook = CountBatches()
    sgd = lambda model, cfg: torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=0.9)
    t = Trainer(NoisyBag(), task, cfg, EvalConfig(mode="sampled", n_negatives=10, ks=(10,), seed=3),
                make_optimizer=sgd, hooks=[hook], **kw)
    return t, hook


def test_resume_replays_a_models_own_noise_and_restores_hook_state(task, tmp_path):
    whole, whole_hook = _noisy(task)
    expected = whole.fit()
    assert isinstance(whole.optimizer, torch.optim.SGD)
    state = tmp_path / "run.state"
    killed, _ = _noisy(KillAt(task, 4))
    with pytest.raises(Killed):
        killed.fit(state)
    resumed, hook = _noisy(task)
    got = resumed.fit(state)
    _same(got, expected)                 # validation uses the noisy model too: equal only if noise replays
    assert hook.state_dict() == whole_hook.state_dict()
    assert hook.epochs == list(range(1, 7)) and hook.batches == 6 * task.n_train_batches(8)
    assert torch.equal(resumed.model.gen.get_state(), whole.model.gen.get_state())
    other, _ = _noisy(task)
    other.hooks.append(CountBatches())
    with pytest.raises(CheckpointError, match="hook"):
        other.fit(state)


def test_train_epochs_continues_one_stream(task):
    a, hook = _noisy(task)
    la = a.train_epochs(1) + a.train_epochs(1)
    b, _ = _noisy(task)
    lb = b.train_epochs(2)
    assert la == lb and a.epochs_trained == 2 and hook.epochs == [1, 2]
    for v, w in zip(a.model.state_dict().values(), b.model.state_dict().values()):
        assert torch.equal(v, w) if isinstance(v, torch.Tensor) else True
    with pytest.raises(ParameterError):
        a.train_epochs(0)


def test_a_diverging_loss_is_a_privrec_error_with_advice(task):
    from privrec.errors import PrivrecError, TrainingError

    trainer = _trainer(task)
    model = trainer.model
    model.loss = lambda batch: torch.tensor(float("nan"), requires_grad=True)     # a diverged loss
    with pytest.raises(TrainingError, match="lower the learning rate") as err:
        trainer.fit()
    assert isinstance(err.value, PrivrecError) and "grad_clip" in str(err.value)


class GenAtEpochEnd(Hook):
    def __init__(self):
        self.states = []

    def on_epoch_end(self, trainer, epoch, row):
        self.states.append(trainer.model.gen.get_state().clone())
        if epoch >= 2:          # from epoch 3 on every score ties (zero weights, no updates): the best epoch is <= 2
            trainer.model.item_embedding.weight.data.zero_()
            for group in trainer.optimizer.param_groups:
                group["lr"] = 0.0


def test_restoring_the_best_weights_does_not_rewind_the_models_noise(task):
    t, _ = _noisy(task)
    seen = GenAtEpochEnd()
    t.hooks.append(seen)
    fit = t.fit()
    assert fit.best_epoch <= 2 < len(seen.states) == 6    # the best weights are older than the last epoch's noise
    # the weights are the best epoch's, the noise stream goes on from where training left it: the test
    # passes draw fresh noise, not the noise of the epochs after the best one again
    assert torch.equal(t.model.gen.get_state(), seen.states[-1])
    assert not torch.equal(t.model.gen.get_state(), seen.states[fit.best_epoch - 1])


class StepLrs(Hook):
    """Records the learning rate each optimizer step used."""

    def __init__(self):
        self.lrs = []

    def on_batch_end(self, trainer, batch, loss):
        self.lrs.append(trainer.optimizer.param_groups[0]["lr"])

    def state_dict(self):
        return {"lrs": list(self.lrs)}

    def load_state_dict(self, state):
        self.lrs = list(state["lrs"])


def test_warmup_raises_the_learning_rate_linearly_then_holds_it_and_resumes_mid_warmup(task, tmp_path):
    per_epoch = task.n_train_batches(8)
    warmup = per_epoch * 2 + 3                                       # ends inside the third epoch
    hook = StepLrs()
    whole = _trainer(task, epochs=4, warmup_steps=warmup, hooks=[hook])
    expected = whole.fit()
    assert hook.lrs == pytest.approx([1e-2 * min(1.0, (t + 1) / warmup) for t in range(4 * per_epoch)])
    state = tmp_path / "run.state"
    with pytest.raises(Killed):                                     # killed at the start of epoch 2: mid-warmup
        _trainer(KillAt(task, 2), epochs=4, warmup_steps=warmup, hooks=[StepLrs()]).fit(state)
    again = StepLrs()
    _same(_trainer(task, epochs=4, warmup_steps=warmup, hooks=[again]).fit(state), expected)
    assert again.lrs == pytest.approx(hook.lrs)
    assert _trainer(task, epochs=4).fit().history != expected.history    # warmup changes training


def test_warmup_is_validated_and_left_out_of_fingerprints_at_its_default():
    from dataclasses import asdict

    from privrec.utils.repro import config_hash

    with pytest.raises(ParameterError, match="warmup_steps"):
        TrainConfig(warmup_steps=-1)
    with pytest.raises(ParameterError, match="warmup_steps"):
        TrainConfig(warmup_steps=1.5)
    before = {k: v for k, v in asdict(TrainConfig()).items() if k != "warmup_steps"}   # a config from before the setting
    assert "warmup_steps" not in TrainConfig().to_dict()
    assert config_hash({"grid": {"train": asdict(TrainConfig())}, "x": [1]}) == config_hash({"grid": {"train": before}, "x": [1]})
    assert TrainConfig(warmup_steps=100).to_dict()["warmup_steps"] == 100
    assert config_hash({"train": asdict(TrainConfig(warmup_steps=100))}) != config_hash({"train": before})
    assert config_hash({"warmup_steps": False}) != config_hash({})              # only the default itself is left out


class WeightDtypes(Hook):
    """Records the dtypes of the model's weights at every training step."""

    def __init__(self):
        self.seen = set()

    def on_batch_end(self, trainer, batch, loss):
        self.seen |= {p.dtype for p in trainer.model.parameters()}


def test_bf16_trains_in_mixed_precision_reproducibly_and_resumes(task, tmp_path):
    hook = WeightDtypes()
    bf16 = _trainer(task, epochs=3, precision="bf16", hooks=[hook])
    seen = []
    original = bf16.model.loss
    bf16.model.loss = lambda batch: seen.append(original(batch)) or seen[-1]
    got = bf16.fit()
    assert hook.seen == {torch.float32}                               # master weights stay fp32
    assert {loss.dtype for loss in seen} == {torch.float32}           # cross-entropy autocasts to fp32
    assert all(np.isfinite(h["loss"]) for h in got.history)
    _same(_trainer(task, epochs=3, precision="bf16").fit(), got)      # same seed, same run
    fp32 = _trainer(task, epochs=3).fit()
    assert fp32.history != got.history                                # the products really ran in bf16
    assert abs(fp32.history[0]["loss"] - got.history[0]["loss"]) < 0.05 * fp32.history[0]["loss"]
    state = tmp_path / "run.state"
    with pytest.raises(Killed):
        _trainer(KillAt(task, 2), epochs=3, precision="bf16").fit(state)
    _same(_trainer(task, epochs=3, precision="bf16").fit(state), got)
    assert got.epochs_by_precision == {"bf16": 3} and fp32.epochs_by_precision == {"fp32": 3}


def test_a_state_resumes_at_another_precision_and_records_the_epochs_at_each(task, tmp_path):
    """Precision, like the device, says how the products are computed, not what is trained: a bf16 run moved
    to a CPU without bf16 units (where autocast's products are emulated, several times slower) goes on in fp32, and its
    fit says how many epochs ran at each; a state saved before the field counts its epochs at its config's."""
    import json

    state = tmp_path / "run.state"
    with pytest.raises(Killed):
        _trainer(KillAt(task, 3), epochs=4, precision="bf16").fit(state)
    logged = []
    t = _trainer(task, epochs=4)
    t.log = logged.append
    mixed = t.fit(state)
    assert mixed.epochs_by_precision == {"bf16": 2, "fp32": 2} and len(mixed.history) == 4
    assert mixed.to_dict()["epochs_by_precision"] == {"bf16": 2, "fp32": 2}
    assert any("bf16 (2)" in line and "goes on at fp32" in line for line in logged)
    bf16 = _trainer(task, epochs=4, precision="bf16").fit()
    assert mixed.history[:2] == bf16.history[:2] and mixed.history[2:] != bf16.history[2:]
    old = torch.load(state, weights_only=True)        # a bf16 state written before the field: its config said bf16
    del old["epochs_by_precision"]
    config = json.loads(old["config"])
    config["train"]["precision"] = "bf16"
    old["config"] = json.dumps(config, sort_keys=True)
    torch.save(old, state)
    assert _trainer(task, epochs=5).fit(state).epochs_by_precision == {"bf16": 4, "fp32": 1}
    assert json.loads(torch.load(state, weights_only=True)["epochs_by_precision"]) == {"bf16": 4, "fp32": 1}


def test_precision_is_validated_and_left_out_of_fingerprints_at_its_default():
    from dataclasses import asdict

    from privrec.utils.repro import config_hash

    with pytest.raises(ParameterError, match="precision must be one of fp32, bf16"):
        TrainConfig(precision="fp16")
    before = {k: v for k, v in asdict(TrainConfig()).items() if k != "precision"}
    assert "precision" not in TrainConfig().to_dict()
    assert config_hash({"train": asdict(TrainConfig())}) == config_hash({"train": before})
    assert TrainConfig(precision="bf16").to_dict()["precision"] == "bf16"
