"""DP-SGD baseline: Poisson batches, calibration, and Opacus' clipped + noised step on SR-GNN."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from privrec.errors import ParameterError
from privrec.training import dpsgd as D

pytest.importorskip("opacus")


def _task():
    from privrec.data.sequences import Sequences
    from privrec.data.splits import leave_one_out
    from privrec.training.tasks import SequenceTask

    rows = [[]] + [[(u + j) % 15 + 1 for j in range(8)] for u in range(30)]
    return SequenceTask(leave_one_out(Sequences.from_rows(rows)), 15, max_len=5, stride=1)


def test_poisson_batches_have_the_expected_size_and_are_seeded():
    task = D.PoissonTask(_task(), 0.1)
    assert task.n == task.task.n_train_samples == 30 * 5 and task.steps_per_epoch == 10
    sizes = [len(b["seq"]) for _ in range(40) for b in task.train_batches(0, np.random.default_rng(_))]
    assert abs(np.mean(sizes) - 15) < 1.0                                 # q n = 15
    a = [b["seq"] for b in task.train_batches(0, np.random.default_rng(3))]
    b = [b["seq"] for b in task.train_batches(0, np.random.default_rng(3))]
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    with pytest.raises(ParameterError):
        D.PoissonTask(_task(), 0.0)


def test_calibration_meets_the_target_and_more_steps_cost_more():
    z = D.calibrate_noise(2.0, 1e-5, 0.01, 1000)
    assert D.dpsgd_epsilon(z, 0.01, 1000, 1e-5) <= 2.0 < D.dpsgd_epsilon(z * 0.97, 0.01, 1000, 1e-5)
    assert D.dpsgd_epsilon(z, 0.01, 4000, 1e-5) > 2.0
    g = D.guarantee(z, 0.01, 1000, 1e-5, 1.0)
    assert g.epsilon == pytest.approx(D.dpsgd_epsilon(z, 0.01, 1000, 1e-5)) and "group privacy" in g.unit
    for bad in (dict(), dict(noise_multiplier=1.0, epsilon=1.0), dict(noise_multiplier=-1.0),
                dict(epsilon=1.0, max_grad_norm=0.0), dict(epsilon=1.0, delta=1.5)):
        with pytest.raises(ParameterError):
            D.DPSGDConfig(**bad)


@pytest.mark.filterwarnings("ignore:Full backward hook is firing")
def test_a_private_step_adds_the_mean_of_clipped_per_sample_gradients():
    from privrec.models import build

    torch.manual_seed(0)
    model = build("srgnn", n_items=15, max_len=5, hidden=8)
    task = _task()
    batch = task.train_batch(np.arange(6))
    per_sample = []
    for i in range(6):                                                    # each sample's own gradient, clipped
        grads = torch.autograd.grad(model.loss({k: v[[i]] for k, v in batch.items()}), list(model.parameters()))
        norm = torch.sqrt(sum(g.pow(2).sum() for g in grads))
        per_sample.append([g * min(1.0, 0.05 / float(norm)) for g in grads])
    want = [sum(gs) / 6 for gs in zip(*per_sample)]
    before = [p.detach().clone() for p in model.parameters()]
    opt = D.make_private(model, torch.optim.SGD(model.parameters(), lr=1.0), noise_multiplier=0.0,
                         max_grad_norm=0.05, expected_batch_size=6)
    opt.zero_grad()
    model.loss(batch).backward()
    opt.step()
    for p, b, w in zip(model.parameters(), before, want):
        torch.testing.assert_close(b - p.detach(), w, atol=1e-6, rtol=1e-4)


@pytest.mark.filterwarnings("ignore:Full backward hook is firing")
def test_the_trainer_runs_dpsgd_with_poisson_batches():
    from privrec.evaluation.evaluator import EvalConfig
    from privrec.models import build
    from privrec.training.trainer import TrainConfig, Trainer, adam

    torch.manual_seed(0)
    model = build("srgnn", n_items=15, max_len=5, hidden=8)
    task = D.PoissonTask(_task(), 0.2)
    z = D.calibrate_noise(8.0, 1e-5, task.sample_rate, 2 * task.steps_per_epoch)
    cfg = TrainConfig(epochs=2, batch_size=30, lr=1e-2, patience=5, progress=False, select_metric="hr@10")
    trainer = Trainer(model, task, cfg, EvalConfig(mode="full", ks=(10,), metrics=("hr",)),
                      make_optimizer=lambda m, c: D.make_private(m, adam(m, c), z, 1.0, 30), log=lambda m: None)
    fit = trainer.fit(None)
    assert fit.epochs_run == 2
    g = D.guarantee(z, task.sample_rate, fit.epochs_run * task.steps_per_epoch, 1e-5, 1.0)
    assert g.epsilon <= 8.0 + 1e-9


@pytest.mark.filterwarnings("ignore:Full backward hook is firing")
def test_sequential_run_with_dpsgd_states_its_guarantee():
    from conftest import make_frame

    from privrec.data.interactions import Interactions
    from privrec.data.sequences import to_sequences
    from privrec.data.splits import leave_one_out
    from privrec.experiments.sequential import SequentialConfig, run
    from privrec.experiments.sequential_report import markdown
    from privrec.training.trainer import TrainConfig

    inter = Interactions.from_frame(make_frame(n_users=24, n_items=30, per_user=10))
    cfg = SequentialConfig(dataset="tiny", model="srgnn", max_len=6, model_config={"hidden": 8},
                           train=TrainConfig(epochs=2, batch_size=32, progress=False), dpsgd_epsilon=4.0)
    res = run(cfg, log=lambda m: None, data=(inter, leave_one_out(to_sequences(inter))))
    g = res["runs"][0]["dpsgd_guarantee"]
    assert 0 < g["epsilon"] <= 4.0 + 1e-9 and g["parameters"]["max_grad_norm"] == 1.0
    assert "DP-SGD: epsilon" in markdown(res)
    with pytest.raises(ParameterError):
        SequentialConfig(dpsgd_epsilon=-1.0)


@pytest.mark.filterwarnings("ignore:Full backward hook is firing")
def test_a_resumed_optimizer_continues_the_noise_stream_and_never_replays_it():
    """DP-SGD's accounting composes independent Gaussians: a resumed run must draw the noise the
    uninterrupted run would have drawn next, and never epoch 1's noise again (a state without the
    generator, or from another device type, gets a stream of its own)."""
    from privrec.models import build

    def fresh():
        torch.manual_seed(0)
        model = build("srgnn", n_items=15, max_len=5, hidden=8)
        return model, D.make_private(model, torch.optim.Adam(model.parameters()), 1.0, 1.0, 6, seed=3)

    model, opt = fresh()
    assert opt.generator.device == next(model.parameters()).device
    batch = D.PoissonTask(_task(), 1.0).train_batch(np.arange(6))
    for _ in range(2):
        opt.zero_grad()
        model.loss(batch).backward()
        opt.step()
    saved = opt.state_dict()
    after = torch.randn(8, generator=opt.generator)             # what the uninterrupted run draws next
    first = torch.randn(8, generator=torch.Generator().manual_seed(3))

    _, resumed = fresh()
    resumed.load_state_dict(saved)
    torch.testing.assert_close(torch.randn(8, generator=resumed.generator), after, rtol=0, atol=0)
    assert opt.noise_draws == saved["noise_draws"] == resumed.noise_draws == 2      # the ledger resumes too
    _, unknown = fresh()
    unknown.load_state_dict({k: v for k, v in saved.items() if k != "noise_draws"})
    assert unknown.noise_draws is None                       # a state from before the count: the plan is certified

    legacy = {k: v for k, v in saved.items() if k not in ("noise_generator", "noise_device")}
    _, old = fresh()
    old.load_state_dict(legacy)
    replay = torch.randn(8, generator=old.generator)
    assert not torch.equal(replay, first) and not torch.equal(replay, after)
    _, again = fresh()
    again.load_state_dict(legacy)                                # still reproducible
    torch.testing.assert_close(torch.randn(8, generator=again.generator), replay, rtol=0, atol=0)


def test_user_poisson_batches_bring_whole_users_and_refuse_too_few_users_per_step():
    task = D.UserPoissonTask(_task(), 0.6)                                # 30 users x 5 windows
    assert task.n == 30 and task.steps_per_epoch == 2
    owners = task.task.train_sample_users
    for batch in task.train_batches(0, np.random.default_rng(1)):
        users = batch["user"].numpy()
        chosen = np.unique(users)
        assert len(users) == sum((owners == u).sum() for u in chosen)     # every sample of every chosen user
        groups = task.groups.numpy()                                      # one group per user, in batch order
        assert len(groups) == len(users) and all(len(set(users[groups == g])) == 1 for g in set(groups))
        assert len(set(groups)) == len(chosen)
    a = [b["seq"] for b in task.train_batches(0, np.random.default_rng(3))]
    b = [b["seq"] for b in task.train_batches(0, np.random.default_rng(3))]
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    with pytest.raises(ParameterError, match="raise --batch-size"):      # 0.3 x 30 = 9 users a step
        D.UserPoissonTask(_task(), 0.3)


@pytest.mark.filterwarnings("ignore:Full backward hook is firing")
def test_a_user_level_step_clips_each_users_summed_gradient():
    """User-level DP-SGD: the per-sample gradients of one user are summed, the sum clipped to C, the clipped
    sums added and divided by the expected number of users per step."""
    from privrec.models import build

    torch.manual_seed(0)
    model = build("srgnn", n_items=15, max_len=5, hidden=8)
    batch = _task().train_batch(np.arange(6))
    groups = torch.tensor([0, 0, 0, 1, 1, 2])
    per_user = []
    for g in range(3):
        rows = (groups == g).nonzero().flatten()
        grads = [torch.autograd.grad(model.loss({k: v[[int(i)]] for k, v in batch.items()}),
                                     list(model.parameters())) for i in rows]
        summed = [sum(gs) for gs in zip(*grads)]
        norm = torch.sqrt(sum(x.pow(2).sum() for x in summed))
        per_user.append([x * min(1.0, 0.05 / float(norm)) for x in summed])
    want = [sum(gs) / 2.5 for gs in zip(*per_user)]
    before = [p.detach().clone() for p in model.parameters()]
    opt = D.make_private(model, torch.optim.SGD(model.parameters(), lr=1.0), noise_multiplier=0.0,
                         max_grad_norm=0.05, expected_batch_size=2.5, groups=lambda: groups)
    opt.zero_grad()
    model.loss(batch).backward()
    opt.step()
    for p, b, w in zip(model.parameters(), before, want):
        torch.testing.assert_close(b - p.detach(), w, atol=1e-6, rtol=1e-4)


def test_user_level_accounting_is_replace_one_and_calibrates():
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant

    z = D.calibrate_noise(3.0, 1e-6, 0.1, 50, unit="user")
    assert D.dpsgd_epsilon(z, 0.1, 50, 1e-6, "user") <= 3.0 < D.dpsgd_epsilon(z * 0.99, 0.1, 50, 1e-6, "user")
    g = D.guarantee(z, 0.1, 50, 1e-6, 1.0, counted=True, unit="user")
    acc = pld_privacy_accountant.PLDAccountant(dp_accounting.NeighboringRelation.REPLACE_ONE)
    acc.compose(D.dpsgd_event(z, 0.1, 50))
    assert g.epsilon == pytest.approx(acc.get_epsilon(1e-6)) and g.relation == "replace_one"
    assert g.unit == D.UNIT_USER and g.related[0].relation == "add_or_remove_one"
    assert g.related[0].epsilon < g.epsilon                        # removing a user costs less than changing one
    with pytest.raises(ParameterError, match="unit"):
        D.dpsgd_epsilon(z, 0.1, 50, 1e-6, "item")


def test_a_model_certificate_composes_aggregates_and_user_level_weights():
    from privrec.privacy.graph import guarantee as graph_guarantee
    from privrec.privacy.ledger import compose_model

    agg = graph_guarantee(1.0, 0.2, 1, 30, 1e-6)
    weights = D.guarantee(2.0, 0.1, 50, 1e-6, 1.0, unit="user")
    g = compose_model(agg, weights)
    assert g.epsilon == pytest.approx(agg.epsilon + weights.epsilon) and g.delta == pytest.approx(2e-6)
    assert g.unit == agg.unit and g.parameters["passes"] == 30 and g.related[1:] == (agg, weights)
    per_interaction = agg.related[0]                                # the aggregates per interaction, plus the weights
    assert "interaction" in g.related[0].unit
    assert g.related[0].epsilon == pytest.approx(per_interaction.epsilon + weights.epsilon)
    with pytest.raises(ValueError, match="dpsgd-unit user"):
        compose_model(agg, D.guarantee(2.0, 0.1, 50, 1e-6, 1.0))


def test_user_level_delta_counts_the_chance_of_a_skipped_empty_step():
    z, q, steps = 1.5, 0.1, 40
    plain = D.guarantee(z, q, steps, 1e-6, 1.0, unit="user")
    g = D.guarantee(z, q, steps, 1e-6, 1.0, unit="user", n_units=120)
    skip = steps * (1 - q) ** 119
    assert g.epsilon == plain.epsilon and g.delta == pytest.approx(1e-6 + (1 + np.exp(g.epsilon)) * skip)
    assert g.related[0].delta > 1e-6 and "empty Poisson draw" in " ".join(g.notes)
    with pytest.raises(ParameterError, match="at least 16"):
        D.UserPoissonTask(_task_of(10), 1.0)


def _task_of(n_users: int):
    from privrec.data.sequences import Sequences
    from privrec.data.splits import leave_one_out
    from privrec.training.tasks import SequenceTask

    rows = [[]] + [[(u + j) % 15 + 1 for j in range(8)] for u in range(n_users)]
    return SequenceTask(leave_one_out(Sequences.from_rows(rows)), 15, max_len=5, stride=1)


@pytest.mark.filterwarnings("ignore:Full backward hook is firing")
def test_a_state_whose_steps_drew_other_noise_is_not_resumed():
    """Its steps drew noise at another multiplier (another epoch cap or budget): certifying them at this run's
    multiplier would misstate epsilon, so the resume is refused."""
    from privrec.errors import CheckpointError
    from privrec.models import build

    model = build("srgnn", n_items=15, max_len=5, hidden=8)
    a = D.make_private(model, torch.optim.SGD(model.parameters(), lr=0.1), 1.0, 1.0, 4)
    state = a.state_dict()
    other = build("srgnn", n_items=15, max_len=5, hidden=8)
    b = D.make_private(other, torch.optim.SGD(other.parameters(), lr=0.1), 2.0, 1.0, 4)
    with pytest.raises(CheckpointError, match="multiplier 1"):
        b.load_state_dict(state)
    same = build("srgnn", n_items=15, max_len=5, hidden=8)
    D.make_private(same, torch.optim.SGD(same.parameters(), lr=0.1), 1.0, 1.0, 4).load_state_dict(state)
