"""The privacy ledger that the noise itself charges (issue 75): every noisy DIPSGNN step charges the user graphs
it reads when it draws the noise, in training, validation, both test maskings, ``evaluate`` and ``recommend``;
the certificate composes the most-charged graph's passes; a checkpoint carries the ledger; ``--budget`` refuses a
call before it runs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from privrec.cli import main
from privrec.privacy.ledger import Charges
from tests.test_bad_input import _inter


def test_charges_count_every_unit_each_time_it_is_read_and_round_trip():
    c = Charges.new(5, "m", "user")
    c.charge(np.array([1, 1, 3]))
    c.charge(torch.tensor([3, 4]))
    assert c.counts.tolist() == [0, 2, 0, 2, 1] and c.worst() == 2
    assert c.summary() == {"mechanism": "m", "unit": "user", "charges": 5, "units_charged": 3, "worst_unit_charges": 2}
    d = Charges.new(5, "m", "user")
    d.load(c.state())
    assert d.counts.tolist() == c.counts.tolist()
    with pytest.raises(ValueError, match=r"\[0, 5\)"):
        c.charge([5])
    with pytest.raises(ValueError, match="non-negative"):
        d.load(torch.tensor([0, -1, 0, 0, 0]))


@pytest.fixture
def counted(tmp_path, monkeypatch):
    """A featured log in the DIPSGNN format, and the noise sampler instrumented: every row of noise drawn is
    recorded against the user of its graph."""
    monkeypatch.chdir(tmp_path)
    frame = pd.DataFrame([(f"u{u}", f"i{(u + t) % 30}", 5.0, float(100 * u + t)) for u in range(1, 41)
                          for t in range(14)], columns=["user_id", "item_id", "rating", "timestamp"])
    _inter(frame, Path("feat.inter"))
    rng = np.random.default_rng(0)
    users = sorted(frame.user_id.unique())
    pd.DataFrame({"user_id:token": users, "age:float": rng.choice([1, 18, 25], len(users)).astype(float),
                  "gender:token": rng.choice(["F", "M"], len(users)),
                  "occupation:float": rng.integers(0, 21, len(users)).astype(float)}).to_csv(
        "feat.user", sep="\t", index=False)
    from privrec.models import dipsgnn as D

    draws: list[np.ndarray] = []
    real_step, real_joint = D.dipsgnn_step, D.APGNN.joint
    seen: dict[str, torch.Tensor] = {}

    def joint(self, h, batch):                    # remember whose graphs the next noisy step reads
        seen["user"] = batch["user"]
        return real_joint(self, h, batch)

    def step(a_in, a_out, h, clip, sigma, generator):
        draws.append(seen["user"].numpy().copy())   # one noise draw per graph row of this step
        return real_step(a_in, a_out, h, clip, sigma, generator)

    monkeypatch.setattr(D.APGNN, "joint", joint)
    monkeypatch.setattr(D, "dipsgnn_step", step)
    return draws


def _drawn(draws, n_users: int) -> np.ndarray:
    return np.bincount(np.concatenate(draws), minlength=n_users) if draws else np.zeros(n_users, np.int64)


def test_ledger_counts_every_noise_draw_of_train_evaluate_and_recommend(counted):
    from privrec.inference import TrainedModel

    argv = ["train", "dipsgnn", "--dataset", "feat.inter", "--protocol", "dipsgnn", "--epochs", "1", "--out", "run",
            "--set", "hidden=8", "--set", "user_dim=4", "--quiet"]
    assert main(argv) == 0
    ckpt = Path("run/dipsgnn-seed0.pt")
    trained = TrainedModel.load(ckpt)
    n = len(trained.model.ledger.counts)
    assert np.array_equal(trained.model.ledger.counts, _drawn(counted, n))     # train, validation, both maskings
    g0 = trained.guarantee()
    assert g0.parameters["passes"] == trained.model.ledger.worst() == _drawn(counted, n).max()
    assert trained.meta["privacy_ledger"]["guarantee"]["epsilon"] == pytest.approx(g0.epsilon)
    import json

    report = json.loads(Path("run/results.json").read_text())
    assert report["runs"][0]["graph_guarantee"]["parameters"]["passes"] == g0.parameters["passes"]

    assert main(["evaluate", str(ckpt)]) == 0                                    # charges, writes back
    after_eval = TrainedModel.load(ckpt)
    assert np.array_equal(after_eval.model.ledger.counts, _drawn(counted, n))
    g1 = after_eval.guarantee()
    assert g1.epsilon > g0.epsilon and after_eval.meta["privacy_ledger"]["guarantee"]["epsilon"] == g1.epsilon

    assert main(["recommend", str(ckpt), "--user", "u3", "--user", "u3", "-k", "3"]) == 0
    after_rec = TrainedModel.load(ckpt)
    assert np.array_equal(after_rec.model.ledger.counts, _drawn(counted, n))
    row = int(after_rec.user_rows(["u3"])[0])
    assert after_rec.model.ledger.counts[row] - after_eval.model.ledger.counts[row] == 2   # asked twice: two passes

    calls = len(counted)                       # a budget below what the call would reach: refused, nothing drawn
    assert main(["recommend", str(ckpt), "--user", "u3", "--budget", str(g1.epsilon)]) != 0
    assert main(["evaluate", str(ckpt), "--budget", str(g1.epsilon)]) != 0
    assert len(counted) == calls and np.array_equal(TrainedModel.load(ckpt).model.ledger.counts,
                                                    after_rec.model.ledger.counts)
    assert main(["recommend", str(ckpt), "--user", "u3", "--budget", "1e9"]) == 0    # within it: runs


def test_restoring_the_best_weights_keeps_the_ledger_and_an_old_state_is_flagged():
    from privrec.models.dipsgnn import DIPSGNN
    from privrec.training.model_state import learned_state, load_learned_state

    torch.manual_seed(0)
    m = DIPSGNN(n_items=5, n_users=3, n_features=2, max_len=4, hidden=4, user_dim=2)
    best = {k: v.clone() for k, v in learned_state(m).items()}
    m.ledger.charge([1, 2, 2])
    load_learned_state(m, best, "best weights", keep_streams=True)          # the end of training
    assert m.ledger.counts.tolist() == [0, 1, 2]
    load_learned_state(m, best, "state")                                     # a resume rewinds both, consistently
    assert m.ledger.counts.tolist() == [0, 0, 0] and m.ledger_complete
    old = m.noise.get_state()                                                # a state written before the ledger
    m.set_extra_state(old)
    assert not m.ledger_complete
    g = m.guarantee(1e-6, plan=7)
    assert g.parameters["passes"] == 7 and "predates the ledger" in g.notes[-1]


def test_guarantee_prints_a_checkpoints_ledger(counted, capsys):
    argv = ["train", "dipsgnn", "--dataset", "feat.inter", "--protocol", "dipsgnn", "--epochs", "1", "--out", "run",
            "--set", "hidden=8", "--set", "user_dim=4", "--quiet"]
    assert main(argv) == 0
    capsys.readouterr()
    assert main(["guarantee", "--checkpoint", "run/dipsgnn-seed0.pt"]) == 0
    out = capsys.readouterr().out
    assert "ledger: dipsgnn-aggregation-step" in out and "the most-charged unit" in out and "epsilon=" in out
    assert main(["guarantee"]) != 0                                       # neither a mechanism nor a checkpoint
    assert main(["train", "sasrec", "--dataset", "feat.inter", "--protocol", "raw", "--epochs", "1", "--out", "s",
                 "--set", "hidden=8", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["guarantee", "--checkpoint", "s/sasrec-seed0.pt"]) == 0
    assert "carries no privacy ledger" in capsys.readouterr().out


def test_honest_calibration_plans_both_test_maskings_so_the_ledger_stays_within_epsilon2(counted):
    """``privrec train`` tests under both history maskings: the plan that calibrates sigma counts the second
    test pass, so the ledger's certificate of the whole run meets the epsilon2 asked for."""
    import json

    frame = pd.DataFrame([(f"u{u}", f"i{(u + t) % 40}", 5.0, float(100 * u + t)) for u in range(1, 41)
                          for t in range(30)], columns=["user_id", "item_id", "rating", "timestamp"])
    _inter(frame, Path("feat.inter"))     # 30 items a user: one epoch re-reads 24 training and 2 x 6 test prefixes,
    argv = ["train", "dipsgnn", "--dataset", "feat.inter", "--protocol", "dipsgnn", "--epochs", "1", "--out", "h",
            "--epsilon2", "5", "--accounting", "honest", "--set", "hidden=8", "--set", "user_dim=4", "--quiet"]
    assert main(argv) == 0
    g = json.loads(Path("h/results.json").read_text())["runs"][0]["graph_guarantee"]
    ledger = g["parameters"]["ledger"]["worst_unit_charges"]
    assert ledger == _drawn(counted, 41).max() == 35 and g["epsilon"] <= 5.0 + 1e-6   # one test pass planned: 31


def test_dpsgd_certifies_the_noisy_steps_its_optimizer_drew(counted, monkeypatch):
    """DP-SGD's certificate composes the steps that drew noise, counted by the optimizer (resumable), not a plan."""
    import json

    from opacus.optimizers import DPOptimizer

    calls = []
    real = DPOptimizer.add_noise

    def add_noise(self):
        calls.append(1)
        return real(self)

    monkeypatch.setattr(DPOptimizer, "add_noise", add_noise)
    argv = ["train", "dpsgd-srgnn", "--dataset", "feat.inter", "--protocol", "dipsgnn", "--epsilon2", "5",
            "--epochs", "1", "--out", "d", "--set", "hidden=8", "--batch-size", "64", "--quiet"]
    assert main(argv) == 0
    g = json.loads(Path("d/results.json").read_text())["runs"][0]["dpsgd_guarantee"]
    assert g["parameters"]["steps"] == len(calls) > 0 and "counted by the optimizer" in " ".join(g["notes"])


def test_edgerand_publishes_each_user_graph_once_and_its_inference_draws_nothing(counted, monkeypatch):
    """EdgeRand's certificate is one release per user graph: the noise is drawn once per graph (instrumented),
    never again in training, evaluate or recommend, so the one release is everything that ran."""
    from privrec.inference import TrainedModel
    from privrec.privacy import graph as G

    graphs_noised: list[int] = []
    real = G.edge_rand

    def edge_rand(a, *args, **kwargs):
        graphs_noised.append(len(a))
        return real(a, *args, **kwargs)

    monkeypatch.setattr(G, "edge_rand", edge_rand)
    argv = ["train", "edgerand", "--dataset", "feat.inter", "--protocol", "dipsgnn", "--epsilon1", "20", "--epsilon2",
            "5", "--epochs", "1", "--out", "e", "--set", "hidden=8", "--quiet"]
    assert main(argv) == 0
    assert sum(graphs_noised) == 41 and not counted          # every user row's graph once; no aggregation noise
    assert main(["evaluate", "e/edgerand-seed0.pt"]) == 0
    assert main(["recommend", "e/edgerand-seed0.pt", "--user", "u3"]) == 0
    assert sum(graphs_noised) == 41 and not counted and not TrainedModel.load("e/edgerand-seed0.pt").charged


@pytest.mark.filterwarnings("ignore:Full backward hook is firing")
def test_a_private_dipsgnn_model_has_one_certificate_that_evaluate_and_recommend_raise(counted, capsys):
    """DIPSGNN whose *model* is private: user-level DP-SGD on top of the noisy aggregates. Its one certificate
    (per transition count) composes the weights with every aggregate pass the ledger counted; evaluate and
    recommend charge the aggregates, the composed epsilon grows and --budget refuses on it."""
    import json

    from opacus.optimizers import DPOptimizer

    from privrec.inference import TrainedModel
    from privrec.models import dipsgnn as D

    steps, outside_training = [], []
    real, joint = DPOptimizer.add_noise, D.APGNN.joint             # (the fixture's instrumented joint)

    def add_noise(self):
        steps.append(1)
        return real(self)

    def joint_outside(self, h, batch):
        if not self.training:
            outside_training.append(batch["user"].numpy().copy())
        return joint(self, h, batch)

    import unittest.mock as mock

    with mock.patch.object(DPOptimizer, "add_noise", add_noise), mock.patch.object(D.APGNN, "joint", joint_outside):
        argv = ["train", "dipsgnn", "--dataset", "feat.inter", "--protocol", "dipsgnn", "--epochs", "1", "--out", "p",
                "--epsilon2", "2.5", "--accounting", "honest", "--dpsgd-epsilon", "2.5", "--dpsgd-unit", "user",
                "--batch-size", "256", "--set", "hidden=8", "--set", "user_dim=4", "--quiet"]
        assert main(argv) == 0
    run = json.loads(Path("p/results.json").read_text())["runs"][0]
    weights, graph, model = run["dpsgd_guarantee"], run["graph_guarantee"], run["model_guarantee"]
    assert weights["parameters"]["steps"] == len(steps) > 0 and weights["neighboring_relation"] == "replace_one"
    assert weights["epsilon"] <= 2.5 + 1e-6 and 2.45 < graph["epsilon"] <= 2.5 + 1e-6   # sigma planned on the
    # passes outside training (validation + both test maskings), exactly what the ledger charged
    assert model["epsilon"] == pytest.approx(weights["epsilon"] + graph["epsilon"]) and model["epsilon"] <= 5 + 1e-6
    assert model["unit_of_privacy"] == graph["unit_of_privacy"]

    ckpt = Path("p/dipsgnn-seed0.pt")
    trained = TrainedModel.load(ckpt)                  # training passes: DP-SGD's; the rest: the ledger's
    assert len(counted) > len(outside_training) > 0
    assert np.array_equal(trained.model.ledger.counts, _drawn(outside_training, len(trained.model.ledger.counts)))
    g0 = trained.guarantee()
    assert g0.epsilon == pytest.approx(model["epsilon"]) and g0.parameters["weights_epsilon"] == weights["epsilon"]
    assert main(["evaluate", str(ckpt)]) == 0
    g1 = TrainedModel.load(ckpt).guarantee()
    assert g1.epsilon > g0.epsilon and g1.parameters["weights_epsilon"] == weights["epsilon"]
    assert g1.epsilon == pytest.approx(g1.parameters["aggregates_epsilon"] + weights["epsilon"])
    after = TrainedModel.load(ckpt)
    most_read = str(after.users.tokens[int(after.model.ledger.counts.argmax())])   # one more pass raises the worst
    assert main(["recommend", str(ckpt), "--user", most_read, "--budget", str(g1.epsilon)]) != 0
    assert main(["recommend", str(ckpt), "--user", most_read, "--budget", "1e9"]) == 0
    assert TrainedModel.load(ckpt).guarantee().epsilon > g1.epsilon
    capsys.readouterr()
    assert main(["guarantee", "--checkpoint", str(ckpt)]) == 0
    out = capsys.readouterr().out
    assert "released model" in out and "user-level DP-SGD" in out and "ledger: dipsgnn-aggregation-step" in out


@pytest.mark.filterwarnings("ignore:Full backward hook is firing")
def test_every_seed_of_a_private_dipsgnn_meets_its_plan_and_sample_level_dpsgd_keeps_its_own_certificate(counted):
    """The uncharged training passes hold for every seed's model (not the first only); DIPSGNN with sample-level
    DP-SGD keeps the aggregates' certificate alone in its checkpoint (no composition in unlike units)."""
    import json

    from privrec.inference import TrainedModel

    argv = ["train", "dipsgnn", "--dataset", "feat.inter", "--protocol", "dipsgnn", "--epochs", "1", "--out", "two",
            "--epsilon2", "2.5", "--accounting", "honest", "--dpsgd-epsilon", "2.5", "--dpsgd-unit", "user",
            "--batch-size", "256", "--seeds", "0,1", "--set", "hidden=8", "--set", "user_dim=4", "--quiet"]
    assert main(argv) == 0
    runs = json.loads(Path("two/results.json").read_text())["runs"]
    assert [2.45 < r["graph_guarantee"]["epsilon"] <= 2.5 + 1e-6 for r in runs] == [True, True]
    argv = ["train", "dipsgnn", "--dataset", "feat.inter", "--protocol", "dipsgnn", "--epochs", "1", "--out", "smp",
            "--epsilon2", "5", "--dpsgd-epsilon", "5", "--batch-size", "64", "--set", "hidden=8", "--set",
            "user_dim=4", "--quiet"]
    assert main(argv) == 0
    run = json.loads(Path("smp/results.json").read_text())["runs"][0]
    assert "model_guarantee" not in run and run["dpsgd_guarantee"]["neighboring_relation"] == "add_or_remove_one"
    g = TrainedModel.load("smp/dipsgnn-seed0.pt").guarantee()
    assert g.mechanism == "dipsgnn-noisy-aggregation"
