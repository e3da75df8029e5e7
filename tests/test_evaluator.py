import math

import numpy as np
import pytest
import torch

from privrec.data.sequences import Sequences
from privrec.data.splits import leave_one_out
from privrec.evaluation import metrics as M
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
    assert pos.tolist() == [[2, 0]]               # 0.5 ties with a non-target 0.5 -> ranked after it


def test_tied_targets_do_not_count_against_each_other():
    # the foundation issue's case: any order of the two targets is a perfect ranking (RecBole: HR@1 = 1)
    pos = _positions(torch.tensor([[1.0, 1.0, 0.0, 0.0]]), torch.tensor([[0, 1]]), torch.tensor([[True, True]]))
    assert sorted(pos[0].tolist()) == [0, 1]
    m = M.compute(pos.numpy(), np.array([2]), ks=(1, 2))
    assert m["hr@1"] == 1.0 and m["ndcg@2"] == pytest.approx(1.0) and m["mrr@2"] == 1.0 and m["recall@2"] == 1.0
    # a non-target in the tie still counts against both targets
    pos = _positions(torch.tensor([[1.0, 1.0, 1.0, 0.0]]), torch.tensor([[0, 1]]), torch.tensor([[True, True]]))
    assert sorted(pos[0].tolist()) == [1, 2]


def _reference_metrics(scores: np.ndarray, targets: list[set], ks) -> dict[str, float]:
    """Independent implementation (plain Python): rank items by descending score with non-target
    items first among equal scores (pessimistic), then the textbook definitions per user."""
    out: dict[str, list[float]] = {}
    for row, tset in zip(scores, targets):
        order = sorted(range(1, len(row)), key=lambda i: (-row[i], i in tset))
        ranks = sorted(order.index(t) for t in tset)
        for k in ks:
            hits = [r for r in ranks if r < k]
            idcg = sum(1 / math.log2(r + 2) for r in range(min(len(tset), k)))
            out.setdefault(f"hr@{k}", []).append(float(bool(hits)))
            out.setdefault(f"recall@{k}", []).append(len(hits) / len(tset))
            out.setdefault(f"ndcg@{k}", []).append(sum(1 / math.log2(r + 2) for r in hits) / idcg)
            out.setdefault(f"mrr@{k}", []).append(1 / (hits[0] + 1) if hits else 0.0)
    return {name: float(np.mean(v)) for name, v in out.items()}


@pytest.mark.parametrize("n_targets", [1, 3, 12])          # 12 > 8 takes the sort path
def test_metrics_match_an_independent_implementation_with_ties(n_targets):
    rng = np.random.default_rng(n_targets)
    n_users, n_items, ks = 64, 40, (1, 5, 10, 20)
    scores = rng.integers(0, 4, size=(n_users, n_items + 1)).astype(np.float32)    # many ties
    scores[:, 0] = -np.inf
    lengths = rng.integers(1, n_targets + 1, size=n_users)
    targets = [set(rng.choice(np.arange(1, n_items + 1), int(n), replace=False).tolist()) for n in lengths]
    width = max(lengths)
    idx = np.zeros((n_users, width), dtype=np.int64)
    for u, t in enumerate(targets):
        idx[u, :len(t)] = sorted(t)
    valid = np.arange(width)[None, :] < lengths[:, None]
    pos = _positions(torch.as_tensor(scores), torch.as_tensor(idx), torch.as_tensor(valid)).numpy()
    ours = M.compute(pos, lengths, ks)
    ref = _reference_metrics(scores, targets, ks)
    for name, value in ref.items():
        assert ours[name] == pytest.approx(value, abs=1e-12), name


def test_duplicate_targets_count_once():
    from privrec.evaluation.evaluator import _padded_targets

    out, n = _padded_targets(Sequences.from_rows([[], [3, 5, 3], [7]]), np.array([1, 2]))
    assert n.tolist() == [2, 1] and sorted(out[0, :2].tolist()) == [3, 5] and out[1, 0] == 7


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
