import numpy as np
import pytest
import torch

from privrec.data.sequences import Sequences
from privrec.models import build
from privrec.training.tasks import next_item_windows


def test_windows_cover_every_target_once_without_prefix_augmentation():
    rows = [[]] + [list(range(10 * u + 1, 10 * u + 1 + n)) for u, n in enumerate([1, 2, 7, 12], start=1)]
    seqs = Sequences.from_rows(rows)
    inputs, targets, users = next_item_windows(seqs, max_len=5)
    # every (input -> target) consecutive pair appears exactly once
    pairs = sorted((int(a), int(b)) for a, b in zip(inputs.ravel(), targets.ravel()) if b > 0)
    expected = sorted((r[i], r[i + 1]) for r in rows for i in range(len(r) - 1))
    assert pairs == expected
    assert (inputs[targets == 0] == 0).all()            # padding aligned
    last_only = next_item_windows(seqs, max_len=5, mode="last")
    assert len(last_only[0]) == 3                        # one window per user with >= 2 items


@pytest.mark.parametrize("stride", [1, 2, 3, 5])
def test_strided_windows_give_every_target_once_with_at_least_max_len_minus_stride_context(stride):
    rows = [[]] + [list(range(100 * u + 1, 100 * u + 1 + n)) for u, n in enumerate([1, 2, 7, 12, 30], start=1)]
    seqs = Sequences.from_rows(rows)
    inputs, targets, users = next_item_windows(seqs, max_len=5, stride=stride)
    seen = []
    for x, t, u in zip(inputs, targets, users):
        row = rows[u]
        for j in np.flatnonzero(t):
            p = row.index(int(t[j]))                             # absolute position of the target
            context = [int(v) for v in x[:j + 1] if v]
            assert context == row[p - len(context):p]             # the items right before it, in order
            assert len(context) >= min(p, 5 - stride + 1)          # > L - stride items (or all there are)
            seen.append((u, p))
    assert sorted(seen) == sorted((u, p) for u, r in enumerate(rows) for p in range(1, len(r)))   # each target once
    if stride == 1:                                              # RecBole's prefixes: one window per target
        assert len(inputs) == sum(max(len(r) - 1, 0) for r in rows) and ((targets > 0).sum(1) == 1).all()
    if stride == 5:                                              # = the default, non-overlapping windows
        default = next_item_windows(seqs, max_len=5)
        assert all(np.array_equal(a, b) for a, b in zip(default, (inputs, targets, users)))


def test_stride_is_validated():
    from privrec.errors import ParameterError

    seqs = Sequences.from_rows([[], [1, 2, 3]])
    for bad in (0, 6):
        with pytest.raises(ParameterError, match="stride"):
            next_item_windows(seqs, max_len=5, stride=bad)


@pytest.mark.parametrize("name", ["sasrec", "gru4rec"])
def test_models_are_causal_and_shapes(name):
    torch.manual_seed(0)
    model = build(name, n_items=30, max_len=6).eval()
    seq = torch.tensor([[0, 0, 3, 4, 5, 6]])
    changed = seq.clone()
    changed[0, -1] = 9
    with torch.no_grad():
        a, b = model.encode(seq), model.encode(changed)
    assert a.shape[:2] == (1, 6)
    torch.testing.assert_close(a[:, :-1], b[:, :-1])      # the future never leaks into the past
    scores = model.score({"seq": seq, "user": torch.tensor([1])})
    assert scores.shape == (1, 31) and scores[0, 0] == -torch.inf


@pytest.mark.parametrize("name", ["sasrec", "gru4rec"])
def test_models_learn_a_deterministic_successor_rule(name):
    torch.manual_seed(0)
    n = 20
    seqs = torch.tensor([[(s + j) % n + 1 for j in range(7)] for s in range(n)])
    batch = {"seq": seqs[:, :-1], "target": seqs[:, 1:], "user": torch.arange(n)}
    model = build(name, n_items=n, max_len=6, dropout=0.0)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    first = float(model.loss(batch).detach())
    for _ in range(150):
        opt.zero_grad()
        loss = model.loss(batch)
        loss.backward()
        opt.step()
    assert float(loss.detach()) < 0.25 * first
