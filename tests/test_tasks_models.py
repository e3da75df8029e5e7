import numpy as np
import pytest
import torch
from conftest import fit_steps, loss_drop

from privrec.data.sequences import Sequences
from privrec.errors import ParameterError
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


@pytest.mark.parametrize("name", ["sasrec", "gru4rec", "bert4rec", "code-sasrec"])
def test_encoding_only_the_last_positions_gives_the_full_encodings_rows(name):
    """encode(seq, last=k) skips the other rows' work in the last block; it must equal encode(seq)[:, -k:]
    (eval: no dropout), so strided/prefix training and scoring read the same states as before."""
    torch.manual_seed(0)
    model = build(name, n_items=30, max_len=8, **({"hidden": 16, "heads": 2, "n_codebooks": 3, "n_centroids": 4}
                                                 if name == "code-sasrec" else {}))
    if name == "code-sasrec":
        model.set_codes(torch.randint(0, 4, (31, 3)))
    model.eval()
    seq = torch.tensor([[0, 0, 0, 3, 4, 5, 6, 7], [1, 2, 3, 4, 5, 6, 7, 8], [0, 0, 0, 0, 0, 0, 0, 9]])
    with torch.no_grad():
        full = model.encode(seq)
        for k in (1, 3, 8, 20):
            torch.testing.assert_close(model.encode(seq, last=k), full[:, -k:], atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("name", ["sasrec", "gru4rec", "bert4rec"])
def test_training_loss_is_the_cross_entropy_of_the_scored_logits(name):
    """The loss reads the items' scores without the padding column; it equals the cross-entropy of
    ``logits`` (padding at -inf) and so do its gradients."""
    torch.manual_seed(0)
    model = build(name, n_items=30, max_len=6).eval()            # eval: no dropout, same states twice
    seq = torch.tensor([[0, 0, 3, 4, 5, 6], [1, 2, 3, 4, 5, 7]])
    target = torch.tensor([[0, 0, 4, 5, 6, 30], [2, 3, 4, 5, 7, 1]])
    loss = model.loss({"seq": seq, "target": target})
    grads = torch.autograd.grad(loss, list(model.parameters()), allow_unused=True)
    states = model.encode(seq)[target > 0]
    logits = model.logits(states)
    assert logits.shape[1] == 31 and torch.all(logits[:, 0] == -torch.inf)
    want = torch.nn.functional.cross_entropy(logits, target[target > 0])
    torch.testing.assert_close(loss, want)
    for g, w in zip(grads, torch.autograd.grad(want, list(model.parameters()), allow_unused=True)):
        if w is not None:
            torch.testing.assert_close(g, w, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("name", ["sasrec", "gru4rec"])
def test_models_learn_a_deterministic_successor_rule(name):
    torch.manual_seed(0)
    n = 20
    seqs = torch.tensor([[(s + j) % n + 1 for j in range(7)] for s in range(n)])
    batch = {"seq": seqs[:, :-1], "target": seqs[:, 1:], "user": torch.arange(n)}
    model = build(name, n_items=n, max_len=6, dropout=0.0)
    first, last = loss_drop(model, batch, 150)
    assert last < 0.25 * first


# ---- cloze (BERT4Rec)

def _cloze_split():
    from privrec.data.splits import leave_one_out

    rows = [[]] + [list(range(100 * u + 1, 100 * u + 1 + n)) for u, n in enumerate([3, 4, 9, 15, 31], start=1)]
    return rows, leave_one_out(Sequences.from_rows(rows))


def test_cloze_chunks_hold_every_train_item_once_newest_chunk_full():
    from privrec.training.tasks import cloze_chunks

    rows, split = _cloze_split()
    inp, lab, users = cloze_chunks(split.train, split.train, max_len=5)
    assert np.array_equal(inp, lab)
    for u in range(1, len(rows)):
        train = rows[u][:-2]
        mine = lab[users == u]
        items = [int(x) for chunk in mine[::-1] for x in chunk if x > 0]
        # chunks are newest first; chunks with < 2 items are dropped (only a user's oldest chunk can be short)
        expected = train if len(train) % 5 != 1 else train[1:]
        assert items == expected
        if len(train) >= 2:
            assert (mine[0] > 0).sum() == min(5, len(train))      # the newest chunk is as full as it can be
    other = Sequences.from_rows([[]] + [[1]] * (len(rows) - 1))
    with pytest.raises(ParameterError, match="position-aligned"):
        cloze_chunks(split.train, other, max_len=5)


def test_cloze_masks_at_least_one_real_item_per_chunk_at_the_stated_rate():
    from privrec.training.tasks import ClozeTask

    _, split = _cloze_split()
    task = ClozeTask(split, n_items=600, max_len=5, mask_prob=0.2)
    rng = np.random.default_rng(0)
    lab = np.tile(task._labels, (400, 1))
    seq, target = task.mask(lab, lab, rng)
    hidden = seq == task.mask_token
    assert hidden.any(1).all() and (target[hidden] == lab[hidden]).all() and (target[~hidden] == 0).all()
    assert (seq[~hidden] == lab[~hidden]).all() and not (hidden & (lab == 0)).any()
    rate = hidden.sum() / (lab > 0).sum()
    # 0.2 plus the forced item in rows that drew none: E[forced] = sum over chunks of P(no draw) = 0.8^len
    lengths = (task._labels > 0).sum(1)
    expected = (0.2 * lengths + 0.8 ** lengths).sum() / lengths.sum()
    assert abs(rate - expected) < 0.01


def test_cloze_reads_filtered_inputs_and_predicts_true_labels():
    from privrec.training.tasks import ClozeTask, private_inputs

    _, split = _cloze_split()
    hist = split.history("test")
    fake = Sequences(hist.indptr, hist.items + 1000)       # a "perturbation" of the test history: every item shifted
    published = np.ones(hist.n_rows, bool)
    published[2] = False                                   # user 2 refused to publish
    private = private_inputs(split, fake, published)
    task = ClozeTask(split, n_items=2000, max_len=5, private=private)
    batch = next(task.train_batches(64, np.random.default_rng(1)))
    seq, target = batch["seq"].numpy(), batch["target"].numpy()
    visible = (seq > 0) & (seq != task.mask_token)
    assert (seq[visible] > 1000).all() and (target[target > 0] < 1000).all()
    assert 2 not in task._users and set(task._users) == {u for u in range(1, hist.n_rows) if u != 2 and
                                                         split.train.lengths[u] >= 2}
    ev = task.eval_batch("valid", np.array([3]))["seq"].numpy()
    assert (ev[ev > 0] > 1000).all() and (ev > 0).sum() == min(5, split.train.lengths[3])   # valid: the train prefix
    ev = task.eval_batch("test", np.array([3]))["seq"].numpy()
    assert np.array_equal(ev[0][ev[0] > 0], hist.row(3)[-5:] + 1000)
    assert not task.eval_batch("test", np.array([2]))["seq"].numpy().any()       # the refusing user reads nothing
    assert "privacy-filtered" in task.describe()
    with pytest.raises(ParameterError, match="mask_prob"):
        ClozeTask(split, n_items=600, mask_prob=0.0)
    short = Sequences.from_rows([hist.row(u)[:-1] for u in range(hist.n_rows)])
    with pytest.raises(ParameterError, match="keep every position"):
        private_inputs(split, short)


def test_bert4rec_is_bidirectional_and_scores_a_final_mask():
    torch.manual_seed(0)
    model = build("bert4rec", n_items=30, max_len=6).eval()
    seq = torch.tensor([[0, 0, 3, 4, 5, 6]])
    changed = seq.clone()
    changed[0, -1] = 9
    with torch.no_grad():
        a, b = model.encode(seq), model.encode(changed)
        assert not torch.allclose(a[:, 2], b[:, 2])              # a later item changes an earlier state
        scores = model.score({"seq": seq, "user": torch.tensor([1])})
        by_hand = model.logits(model.encode(torch.tensor([[0, 3, 4, 5, 6, model.mask_token]]))[:, -1])
        padded = model.score({"seq": torch.tensor([[0, 0, 0, 0, 0, 0, 3, 4, 5, 6]]), "user": torch.tensor([1])})
    assert scores.shape == (1, 31) and scores[0, 0] == -torch.inf   # the [mask] id is never a candidate
    torch.testing.assert_close(scores, by_hand)
    torch.testing.assert_close(scores, padded)


def test_bert4rec_learns_a_deterministic_successor_rule_by_cloze():
    from privrec.data.splits import leave_one_out
    from privrec.training.tasks import ClozeTask

    torch.manual_seed(0)
    n = 20
    rows = [[]] + [[(s + j) % n + 1 for j in range(9)] for s in range(n)]
    task = ClozeTask(leave_one_out(Sequences.from_rows(rows)), n_items=n, max_len=7, mask_prob=0.3)
    model = build("bert4rec", n_items=n, max_len=7, dropout=0.0, attn_dropout=0.0)
    fit_steps(model, task, epochs=400)
    with torch.no_grad():
        scores = model.score(task.eval_batch("test", np.arange(1, n + 1)))
    truth = task.stage_targets("test").items
    assert (scores.argmax(1).numpy() == truth).mean() > 0.5          # chance: 0.05


def test_sasrec_positions_from_the_oldest_item_as_recbole_counts_them():
    """positions="oldest" (RecBole's): 0 at each history's first item. Full histories read the same positions
    either way; a short one reads positions 0..n-1, as a model of length n would, whatever its front padding."""
    torch.manual_seed(0)
    oldest = build("sasrec", n_items=20, max_len=5, hidden=8, inner=16, positions="oldest").eval()
    newest = build("sasrec", n_items=20, max_len=5, hidden=8, inner=16).eval()
    newest.load_state_dict(oldest.state_dict())
    full = torch.tensor([[3, 4, 5, 6, 7], [1, 2, 9, 8, 7]])
    assert torch.equal(oldest.score({"seq": full}), newest.score({"seq": full}))
    short = torch.tensor([[0, 0, 4, 5, 6]])
    three = build("sasrec", n_items=20, max_len=3, hidden=8, inner=16).eval()   # newest-counting, length 3: 0, 1, 2
    three.load_state_dict({k: v[:3] if k == "position_embedding.weight" else v for k, v in oldest.state_dict().items()})
    got = oldest.score({"seq": short})
    torch.testing.assert_close(got, three.score({"seq": short[:, 2:]}))
    torch.testing.assert_close(got, oldest.score({"seq": short[:, 1:]}))      # a batch cut to its longest row
    assert not torch.allclose(got, newest.score({"seq": short}))             # the conventions differ here
    assert oldest.config()["positions"] == "oldest" and "positions" not in newest.config()
    with pytest.raises(ParameterError, match="positions must be 'newest' or 'oldest'"):
        build("sasrec", n_items=20, positions="left")
