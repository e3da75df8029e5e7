import numpy as np
import pytest
import torch

from privrec.data.sequences import Sequences
from privrec.data.splits import leave_one_out
from privrec.evaluation.evaluator import EvalConfig, _positions, evaluate
from privrec.evaluation.negatives import popularity, sample_negatives
from privrec.training.tasks import SequenceTask


class Oracle(torch.nn.Module):
    """Scores the true next item highest (it peeks at a lookup table)."""

    def __init__(self, n_items, answer):
        super().__init__()
        self.n_items, self.answer = n_items, answer

    def score(self, batch):
        out = torch.zeros(len(batch["user"]), self.n_items + 1)
        out[torch.arange(len(batch["user"])), self.answer[batch["user"]]] = 1.0
        return out


class Constant(torch.nn.Module):
    def __init__(self, n_items):
        super().__init__()
        self.n_items = n_items

    def score(self, batch):
        return torch.zeros(len(batch["user"]), self.n_items + 1)


@pytest.fixture
def task():
    rng = np.random.default_rng(0)
    rows = [[]] + [list(rng.choice(np.arange(1, 51), 8, replace=False)) for _ in range(20)]
    return SequenceTask(leave_one_out(Sequences.from_rows(rows)), n_items=50, max_len=5)


def test_oracle_scores_perfectly_and_constant_gets_no_credit(task):
    answer = torch.zeros(21, dtype=torch.long)
    answer[1:] = torch.as_tensor(task.split.test.items, dtype=torch.long)
    full = evaluate(Oracle(50, answer), task, "test", EvalConfig())
    assert full.metrics["hr@1"] if "hr@1" in full.metrics else full.metrics["hr@5"] == 1.0
    assert full.metrics["ndcg@10"] == 1.0
    const = evaluate(Constant(50), task, "test", EvalConfig())
    assert const.metrics["hr@20"] == 0.0          # ties are counted against the target
    sampled = evaluate(Oracle(50, answer), task, "test", EvalConfig(mode="sampled", n_negatives=10))
    assert sampled.metrics["ndcg@5"] == 1.0
    assert "sampled ranking (10 popularity negatives)" == sampled.config.label


def test_positions_pessimistic_ties():
    scores = torch.tensor([[-torch.inf, 0.5, 0.9, 0.5, 0.1]])
    pos = _positions(scores, torch.tensor([[1, 2]]), torch.tensor([[True, True]]))
    assert pos.tolist() == [[2, 0]]               # 0.5 ties with another 0.5 -> ranked after it


def test_history_masking_changes_the_ranking(task):
    # a model that always scores the user's own history highest
    hist = task.stage_history("test")

    class Hist(torch.nn.Module):
        def score(self, batch):
            out = torch.zeros(len(batch["user"]), 51)
            for r, u in enumerate(batch["user"].tolist()):
                out[r, torch.as_tensor(hist.row(u), dtype=torch.long)] = 5.0
            return out

    masked = evaluate(Hist(), task, "test", EvalConfig(mask_history=True))
    unmasked = evaluate(Hist(), task, "test", EvalConfig(mask_history=False))
    assert unmasked.metrics["hr@5"] == 0.0
    assert masked.metrics["hr@20"] >= 0.0          # history no longer occupies the top


def test_negatives_are_distinct_and_exclude_history():
    rng = np.random.default_rng(1)
    excl = Sequences.from_rows([[], [1, 2, 3], [4, 5]])
    neg = sample_negatives(rng, np.array([1, 2]), excl, n_items=20, n=10)
    assert neg.shape == (2, 10)
    for row, u in zip(neg, [1, 2]):
        assert len(set(row)) == 10 and not set(row) & set(excl.row(u)) and 0 not in row


def test_popularity_sampler_follows_weights():
    # chi-square goodness of fit at alpha = 1e-6 (fixed seed: not flaky)
    from scipy import stats

    rng = np.random.default_rng(7)
    counts = np.array([0, 1, 2, 3, 4, 10], dtype=float)
    excl = Sequences.from_rows([[], []])
    draws = sample_negatives(rng, np.ones(20000, dtype=np.int64), excl, n_items=5, n=1, weights=counts)
    observed = np.bincount(draws.ravel(), minlength=6)[1:]
    expected = counts[1:] / counts.sum() * 20000
    assert stats.chisquare(observed, expected).pvalue > 1e-6


def test_popularity_counts():
    assert popularity(Sequences.from_rows([[], [1, 1, 3]]), 3).tolist() == [0, 2, 0, 1]
