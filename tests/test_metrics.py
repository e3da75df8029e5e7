import math

import numpy as np
import pytest

from privrec.evaluation import metrics as M


def test_single_target_known_answers():
    pos = np.array([[0], [1], [4], [10], [-1]])
    n = np.array([1, 1, 1, 1, 0])
    np.testing.assert_allclose(M.hit_rate(pos, 5), [1, 1, 1, 0, 0])
    np.testing.assert_allclose(M.ndcg(pos, n, 5), [1, 1 / math.log2(3), 1 / math.log2(6), 0, 0])
    np.testing.assert_allclose(M.mrr(pos, 5), [1, 0.5, 0.2, 0, 0])
    np.testing.assert_allclose(M.recall(pos, n, 5), [1, 1, 1, 0, 0])


def test_multi_target_known_answers():
    # user 0: targets at ranks 0 and 2 of 3 relevant; K=3
    pos = np.array([[0, 2, 7]])
    n = np.array([3])
    assert M.hit_rate(pos, 3)[0] == 1
    assert M.recall(pos, n, 3)[0] == pytest.approx(2 / 3)
    dcg = 1 + 1 / math.log2(4)
    idcg = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert M.ndcg(pos, n, 3)[0] == pytest.approx(dcg / idcg)
    assert M.mrr(pos, 3)[0] == 1.0


def test_ideal_dcg_is_capped_at_k():
    pos = np.array([[0, 1, -1]])
    assert M.ndcg(pos, np.array([5]), 2)[0] == pytest.approx(1.0)


def test_compute_names_and_bad_k():
    out = M.compute(np.array([[0]]), np.array([1]), ks=(1, 10))
    assert set(out) == {f"{m}@{k}" for m in M.METRICS for k in (1, 10)}
    with pytest.raises(ValueError):
        M.hit_rate(np.array([[0]]), 0)
