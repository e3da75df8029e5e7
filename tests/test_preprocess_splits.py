import numpy as np
import pandas as pd
import pytest

from privrec.data.interactions import Interactions
from privrec.data.preprocess import Preprocessing, drop_duplicates, k_core, preprocess, time_precision
from privrec.data.sequences import Sequences, pad_left, to_sequences
from privrec.data.splits import leave_one_out, temporal_fraction
from privrec.errors import EmptyDataError, ParameterError


def frame(rows):
    return Interactions.from_frame(pd.DataFrame(rows, columns=["user_id", "item_id", "rating", "timestamp"]))


def test_k_core_is_iterated_to_a_fixed_point():
    # u3 has 1 item; removing u3 leaves item c with one interaction, which must then go too,
    # which leaves u2 with one item, which must then go too.
    inter = frame([("u1", "a", 5, 1), ("u1", "b", 5, 2), ("u2", "a", 5, 1), ("u2", "c", 5, 2),
                   ("u3", "c", 5, 3), ("u4", "a", 5, 1), ("u4", "b", 5, 2)])
    core = k_core(inter, user_k=2, item_k=2).compact()
    assert sorted(core.users.tokens[1:]) == ["u1", "u4"]
    assert sorted(core.items.tokens[1:]) == ["a", "b"]


def test_k_core_that_empties_the_data_says_so():
    inter = frame([("u1", "a", 5, 1), ("u2", "b", 5, 1)])
    with pytest.raises(EmptyDataError, match="lower the k-core"):
        k_core(inter, 5, 5)


def test_duplicates_keep_first_in_time_and_ties_keep_input_order():
    inter = frame([("u1", "a", 1, 5), ("u1", "a", 2, 3), ("u1", "b", 3, 3), ("u1", "c", 4, 3)])
    dedup = drop_duplicates(inter)
    assert dedup.rating.tolist() == [2, 3, 4]          # the later "a" (t=5) is dropped
    seq = to_sequences(dedup.compact())
    assert dedup.compact().items.decode(seq.row(1)).tolist() == ["a", "b", "c"]  # ties at t=3: input order


def test_rating_threshold_and_order_of_operations():
    inter = frame([("u1", "a", 2, 1), ("u1", "b", 4, 2), ("u1", "c", 3, 3)])
    out = preprocess(inter, Preprocessing(min_rating=3))
    assert sorted(out.items.tokens[1:]) == ["b", "c"]


def test_pad_left_truncates_to_last_and_front_pads():
    seqs = Sequences.from_rows([[], [1, 2, 3, 4, 5], [7]])
    out = pad_left(seqs.indptr, seqs.items, 3)
    assert out.tolist() == [[0, 0, 0], [3, 4, 5], [0, 0, 7]]
    with pytest.raises(ParameterError):
        pad_left(seqs.indptr, seqs.items, 0)


def test_concat_and_slices():
    a = Sequences.from_rows([[1], [2, 3], []])
    b = Sequences.from_rows([[4, 5], [], [6]])
    c = a.concat(b)
    assert [c.row(i).tolist() for i in range(3)] == [[1, 4, 5], [2, 3], [6]]
    s = c.take_slices(np.array([1, 0, 0]), np.array([3, 1, 0]))
    assert [s.row(i).tolist() for i in range(3)] == [[4, 5], [2], []]


def test_leave_one_out_has_no_leakage():
    seqs = Sequences.from_rows([[], [1, 2, 3, 4], [5, 6], [7, 8, 9]])
    split = leave_one_out(seqs)
    assert split.train.row(1).tolist() == [1, 2] and split.valid.row(1).tolist() == [3]
    assert split.test.row(1).tolist() == [4]
    assert split.train.row(2).tolist() == [5, 6] and split.test.row(2).tolist() == []   # too short: not evaluated
    assert split.history("test").row(1).tolist() == [1, 2, 3]
    assert split.eval_users("test").tolist() == [1, 3]


def test_temporal_fraction_respects_time_and_fraction():
    seqs = Sequences.from_rows([[], list(range(1, 11))])
    split = temporal_fraction(seqs, test_frac=0.2, valid_frac=0.1)
    assert split.test.row(1).tolist() == [9, 10]
    assert split.valid.row(1).tolist() == [8]
    assert split.train.row(1).tolist() == list(range(1, 8))


def test_float32_time_precision_orders_as_recbole():
    # RecBole holds timestamp:float in float32: 978824291 and 978824351 both become 978824320 (64-s grid),
    # so the later-rated "p" (first in the file) sorts before "h"; exact times keep "h" first
    inter = frame([("u1", "p", 5, 978824351), ("u1", "a", 5, 978824268), ("u1", "h", 4, 978824291)])
    exact = to_sequences(inter)
    rounded = to_sequences(time_precision(inter, "float32"))
    assert inter.items.decode(exact.row(1)).tolist() == ["a", "h", "p"]
    assert inter.items.decode(rounded.row(1)).tolist() == ["a", "p", "h"]
    assert time_precision(inter, "exact") is inter
    assert time_precision(inter, "float32").timestamp.dtype == np.float64
    with pytest.raises(ParameterError, match="time precision must be one of"):
        time_precision(inter, "float16")
