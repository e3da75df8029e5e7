"""Item-pair merging (Mu & Lim Eq. 8): the compiled learner equals a literal BPE, encoding reproduces it."""

import numpy as np
import pytest

from privrec.data.pair_merging import learn_merges
from privrec.data.sequences import Sequences
from privrec.errors import ParameterError
from reference import bpe


def _rows(seed: int, n_items: int = 12, users: int = 30):
    rng = np.random.default_rng(seed)
    rows = [[]]
    for _ in range(users):
        n = int(rng.integers(0, 25))
        # a few recurring motifs so that merges chain (composite of composites)
        motif = [1, 2, 3, 4] if rng.random() < 0.5 else [5, 5, 6]
        row = []
        while len(row) < n:
            row += motif if rng.random() < 0.4 else [int(rng.integers(1, n_items + 1))]
        rows.append(row[:n])
    return rows


@pytest.mark.parametrize("seed", range(8))
def test_compiled_learner_equals_literal_bpe(seed):
    rows = _rows(seed)
    seqs = Sequences.from_rows(rows)
    merges = learn_merges(seqs, 12, vocab_size=40)
    expected, segmented = bpe.learn(rows[1:], 12, 40)
    assert list(zip(merges.left.tolist(), merges.right.tolist(), merges.count.tolist())) == expected
    enc = merges.encode(seqs)
    assert [list(enc.row(u)) for u in range(1, enc.n_rows)] == segmented
    # every token expands back to exactly the items it replaced
    for u in range(1, seqs.n_rows):
        assert [i for t in enc.row(u) for i in merges.expand(int(t))] == rows[u]


def test_worked_example_and_early_stop():
    seqs = Sequences.from_rows([[], [1, 2, 3, 1, 2, 3, 1, 2], [1, 1, 1, 2], [3, 1, 2]])
    m = learn_merges(seqs, 3, vocab_size=8)
    # (1,2) x5 -> 4; then (3,4) x3 -> 5; then no pair occurs twice: 2 merges, not 5
    assert m.left.tolist() == [1, 3] and m.right.tolist() == [2, 4] and m.count.tolist() == [5, 3]
    assert m.vocab_size == 5 and m.expand(5) == (3, 1, 2) and m.first_items().tolist() == [0, 1, 2, 3, 1, 3]
    assert learn_merges(seqs, 3, vocab_size=3).vocab_size == 3                # = n_items: no merges


def test_pairs_never_span_two_users():
    seqs = Sequences.from_rows([[], [1], [2], [1], [2], [1], [2]])          # "1 2" only across users
    assert learn_merges(seqs, 2, vocab_size=10).vocab_size == 2


def test_bad_parameters_are_named():
    seqs = Sequences.from_rows([[], [1, 2, 3]])
    with pytest.raises(ParameterError, match="vocab_size"):
        learn_merges(seqs, 3, vocab_size=2)
    with pytest.raises(ParameterError, match="min_count"):
        learn_merges(seqs, 3, vocab_size=5, min_count=1)
    with pytest.raises(ParameterError, match="outside the item range"):
        learn_merges(Sequences.from_rows([[], [1, 9]]), 3, vocab_size=5)
    with pytest.raises(ParameterError, match="outside"):
        learn_merges(seqs, 3, vocab_size=4).expand(9)
