"""The paper's training method: cloze over merged item pairs (Mu & Lim §3.2), and its ablation flags."""

import numpy as np
import pytest
import torch
from conftest import fit_steps

from privrec.data.pair_merging import PairMerges
from privrec.data.sequences import Sequences
from privrec.data.splits import leave_one_out
from privrec.errors import ParameterError
from privrec.models import build
from privrec.models.bert4rec import MergedBERT4Rec
from privrec.training.tasks import MergedClozeTask, private_inputs, span_labels, task_for


def _merges() -> PairMerges:
    # items 1..5; token 6 = (1, 2), token 7 = (6, 3) = items 1 2 3
    return PairMerges(5, np.array([1, 6]), np.array([2, 3]), np.array([9, 4]))


def test_span_labels_are_the_true_span_token_or_its_first_item():
    m = _merges()
    truth = Sequences.from_rows([[], [1, 2, 3, 4], [1, 2, 4], [3, 1, 2]])
    seen = Sequences.from_rows([[], [1, 2, 5, 4], [1, 2, 3], [3, 1, 2]])    # a perturbed, position-aligned copy
    tokens = m.encode(seen)
    assert [tokens.row(u).tolist() for u in (1, 2, 3)] == [[6, 5, 4], [7], [3, 6]]
    labels = span_labels(m, tokens, truth)
    # user 1: spans [1 2] [3] [4] -> 6, 3, 4;  user 2: span [1 2 4] is no token -> its first item 1;  user 3: 3, 6
    assert [labels.row(u).tolist() for u in (1, 2, 3)] == [[6, 3, 4], [1], [3, 6]]
    with pytest.raises(ParameterError, match="cover"):
        span_labels(m, tokens, Sequences.from_rows([[], [1, 2, 3], [1, 2, 4], [3, 1, 2]]))


def test_merged_model_scores_an_item_by_the_total_probability_of_its_tokens():
    torch.manual_seed(0)
    m = _merges()
    model = MergedBERT4Rec(5, m.left.tolist(), m.right.tolist(), max_len=6).eval()
    assert model.mask_token == 8 and model.config()["merges_left"] == [1, 6]
    seq = torch.tensor([[0, 0, 3, 6, 4]])
    with torch.no_grad():
        scores = model.score({"seq": seq, "user": torch.tensor([1])})
        tokens = model.logits(model.encode(torch.tensor([[0, 0, 3, 6, 4, 8]]))[:, -1])[0]
    assert scores.shape == (1, 6) and scores[0, 0] == -torch.inf
    expected = tokens[1:6].clone()
    expected[0] = torch.logsumexp(tokens[[1, 6, 7]], 0)               # item 1 starts tokens 1, 6 and 7
    torch.testing.assert_close(scores[0, 1:], expected)
    rebuilt = build("rr-bert4rec", **model.config())
    rebuilt.load_state_dict(model.state_dict())
    with torch.no_grad():
        torch.testing.assert_close(rebuilt.eval().score({"seq": seq, "user": torch.tensor([1])}), scores)


def test_causal_flag_turns_bidirectional_attention_off():
    torch.manual_seed(0)
    for cls in ("bert4rec", "rr-bert4rec"):
        model = build(cls, n_items=30, max_len=6, causal=True).eval()
        seq = torch.tensor([[0, 0, 3, 4, 5, 6]])
        changed = seq.clone()
        changed[0, -1] = 9
        with torch.no_grad():
            a, b = model.encode(seq), model.encode(changed)
        torch.testing.assert_close(a[:, :5], b[:, :5])                 # nothing later changes an earlier state
        assert not torch.allclose(a[:, 5], b[:, 5])


def test_merged_task_trains_on_tokens_of_published_histories_and_learns_a_rule():
    torch.manual_seed(0)
    n = 20                                   # items come in pairs (2j-1, 2j); pair j is followed by pair j+1
    pairs = [(2 * j + 1, 2 * j + 2) for j in range(n // 2)]
    rows = [[]] + [[i for j in range(6) for i in pairs[(s + j) % 10]] + [pairs[(s + 6) % 10][0]] for s in range(2 * 10)]
    split = leave_one_out(Sequences.from_rows(rows))        # test item: the first item of the 7th pair
    hist = split.history("test")
    published = np.ones(hist.n_rows, bool)
    published[5] = False
    private = private_inputs(split, hist, published)       # identity "perturbation"
    learned = MergedBERT4Rec.learn(private.train, n, vocab_size=24, max_len=7)
    assert learned.merges.vocab_size == 24                   # the learner runs to the target size
    model = MergedBERT4Rec(n, [a for a, _ in pairs], [b for _, b in pairs], max_len=8, dropout=0.0,
                           attn_dropout=0.0, mask_prob=0.3)
    task = task_for(model, split, n, 8, private=private)
    assert isinstance(task, MergedClozeTask) and task.mask_token == 31 and 5 not in task._users
    assert "10 merged pairs" in task.describe()
    assert task._inputs.max() > n and task._labels.max() > n          # composite tokens are read and predicted
    assert (task.eval_batch("test", np.array([1]))["seq"].numpy() > n).sum() == 6
    fit_steps(model, task, epochs=150)
    users = np.array([u for u in range(1, 21) if u != 5])
    with torch.no_grad():
        scores = model.score(task.eval_batch("test", users))
    assert scores.shape == (len(users), n + 1)
    truth = task.stage_targets("test").items[task.stage_targets("test").indptr[users]]
    assert (scores.argmax(1).numpy() == truth).mean() > 0.5           # chance: 0.05
    with pytest.raises(ParameterError, match="merges"):
        MergedClozeTask(split, n_items=n + 1, max_len=8, merges=model.merges)
